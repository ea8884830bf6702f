"""jx.scipy.stats.cauchy: the Cauchy distribution, as jax.scipy.stats.cauchy."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return -(jnp.log(np.pi * scale) + jnp.log1p(z * z))


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return 0.5 + jnp.arctan((x - loc) / scale) / np.pi


def logcdf(x, loc=0, scale=1):
    return jnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote_inexact(q, loc, scale)
    return jnp.tan(np.pi * q - np.pi / 2) * scale + loc


def isf(q, loc=0, scale=1):
    q, loc, scale = promote_inexact(q, loc, scale)
    return jnp.tan(np.pi / 2 - np.pi * q) * scale + loc
