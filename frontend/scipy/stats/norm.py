"""jx.scipy.stats.norm: the normal distribution, as jax.scipy.stats.norm."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special

_LOG_2PI = float(np.log(2 * np.pi))


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    # written with scale**2 (as JAX), so a negative scale gives the density of |scale|
    var = scale * scale
    return -0.5 * ((x - loc) * (x - loc) / var + jnp.log(var) + _LOG_2PI)


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return special().ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return special().log_ndtr((x - loc) / scale)


def sf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return cdf(-x, -loc, scale)          # the mirror image keeps the upper tail accurate


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote_inexact(q, loc, scale)
    # JAX returns the default float dtype here (never a weak type)
    return jnp.asarray(special().ndtri(q) * scale + loc, dtype=float)


def isf(q, loc=0, scale=1):
    q, loc, scale = promote_inexact(q, loc, scale)
    return ppf(1 - q, loc, scale)
