"""jx.scipy.stats.gamma: the gamma distribution with shape a, as jax.scipy.stats.gamma."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote_inexact(x, a, loc, scale)
    sp = special()
    ok = x >= loc
    # outside the support y is set to 1 so that no nan leaks into the gradient
    y = jnp.where(ok, (x - loc) / scale, 1.0)
    log_probs = sp.xlogy(a - 1, y) - y - sp.gammaln(a) - jnp.log(scale)
    return jnp.where(ok, log_probs, -np.inf)


def pdf(x, a, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote_inexact(x, a, loc, scale)
    return special().gammainc(a, jnp.clip((x - loc) / scale, 0, np.inf))


def logcdf(x, a, loc=0, scale=1):
    return jnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote_inexact(x, a, loc, scale)
    y = (x - loc) / scale
    return jnp.where(y < 0, 1.0, special().gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
    return jnp.log(sf(x, a, loc, scale))
