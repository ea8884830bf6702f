"""jx.scipy.stats.beta: the beta distribution, as jax.scipy.stats.beta."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote_inexact(x, a, b, loc, scale)
    sp = special()
    y = (x - loc) / scale
    log_probs = (sp.xlogy(a - 1, y) + sp.xlog1py(b - 1, -y)
                 - sp.betaln(a, b) - jnp.log(scale))
    out = jnp.where((x < loc) | (x > loc + scale), -np.inf, log_probs)
    return jnp.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, out)


def pdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote_inexact(x, a, b, loc, scale)
    return special().betainc(a, b, jnp.clip((x - loc) / scale, 0, 1))


def logcdf(x, a, b, loc=0, scale=1):
    return jnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote_inexact(x, a, b, loc, scale)
    # I_{1-y}(b, a) = 1 - I_y(a, b), without the cancellation
    return special().betainc(b, a, 1 - jnp.clip((x - loc) / scale, 0, 1))


def logsf(x, a, b, loc=0, scale=1):
    return jnp.log(sf(x, a, b, loc, scale))
