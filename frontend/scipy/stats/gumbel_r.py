"""jx.scipy.stats.gumbel_r: the right-skewed Gumbel distribution, as JAX's.
A non-positive scale gives nan everywhere."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact


def _log1mexp(a):
    """log(1 - exp(-a)) for a > 0, each form where it is accurate."""
    return jnp.where(a < np.log(2.0), jnp.log(-jnp.expm1(-a)), jnp.log1p(-jnp.exp(-a)))


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -jnp.log(scale) - (z + jnp.exp(-z)), np.nan)


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return jnp.where(scale > 0, -jnp.exp(-(x - loc) / scale), np.nan)


def cdf(x, loc=0, scale=1):
    return jnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return jnp.where(scale > 0, -jnp.expm1(-jnp.exp((loc - x) / scale)), np.nan)


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return jnp.where(scale > 0, _log1mexp(jnp.exp((loc - x) / scale)), np.nan)


def ppf(p, loc=0, scale=1):
    p, loc, scale = promote_inexact(p, loc, scale)
    return jnp.where((p > 0) & (p < 1), loc - scale * jnp.log(-jnp.log(p)), np.nan)
