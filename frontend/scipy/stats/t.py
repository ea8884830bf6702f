"""jx.scipy.stats.t: Student's t distribution, as jax.scipy.stats.t."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special

_LOG_PI = float(np.log(np.pi))


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote_inexact(x, df, loc, scale)
    gammaln = special().gammaln
    z = (x - loc) / scale
    half = df / 2
    log_norm = (gammaln(half) - gammaln(half + 0.5)
                + 0.5 * (jnp.log(df * scale * scale) + _LOG_PI))
    return -(log_norm + (half + 0.5) * jnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    return jnp.exp(logpdf(x, df, loc, scale))
