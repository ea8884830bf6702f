"""jx.scipy.stats.expon: the exponential distribution, as jax.scipy.stats.expon."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return jnp.where(x < loc, -np.inf, -(x - loc) / scale - jnp.log(scale))


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return jnp.where(x < loc, 0.0, -jnp.expm1((loc - x) / scale))


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return jnp.where(x < loc, 0.0, (loc - x) / scale)


def sf(x, loc=0, scale=1):
    return jnp.exp(logsf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    return jnp.log1p(-sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote_inexact(q, loc, scale)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc - scale * jnp.log1p(-q))
