"""jx.scipy.stats.gumbel_l: the left-skewed Gumbel distribution, as JAX's.
A non-positive scale gives nan everywhere."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -jnp.log(scale) + (z - jnp.exp(z)), np.nan)


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, jnp.log(-jnp.expm1(-jnp.exp(z))), np.nan)


def cdf(x, loc=0, scale=1):
    return jnp.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return jnp.where(scale > 0, -jnp.exp((x - loc) / scale), np.nan)


def sf(x, loc=0, scale=1):
    return jnp.exp(logsf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    p, loc, scale = promote_inexact(p, loc, scale)
    return jnp.where((p > 0) & (p < 1), loc + scale * jnp.log(-jnp.log1p(-p)), np.nan)
