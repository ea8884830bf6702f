"""jx.scipy.stats.truncnorm: the normal distribution truncated to [a, b] (in units of
scale about loc), as jax.scipy.stats.truncnorm. a >= b gives nan."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from . import norm
from ._util import promote_inexact, special


def _log_sub(x, y):
    """log(exp(x) - exp(y)) for x >= y."""
    return x + jnp.log(-jnp.expm1(y - x))


def _log_mass(a, b):
    """log(Phi(b) - Phi(a)), computed in whichever tail keeps its precision."""
    sp = special()
    a, b = jnp.broadcast_arrays(a, b)
    left, right = b <= 0, a > 0
    # both in the right tail: mirror to the left, where log_ndtr is accurate
    lo = jnp.where(right, -b, a)
    hi = jnp.where(right, -a, b)
    tail = _log_sub(sp.log_ndtr(hi), sp.log_ndtr(lo))
    central = jnp.log1p(-sp.ndtr(a) - sp.ndtr(-b))
    return jnp.where(left | right, tail, central)


def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote_inexact(x, a, b, loc, scale)
    val = norm.logpdf(x, loc, scale) - _log_mass(a, b)
    z = (x - loc) / scale
    val = jnp.where((z < a) | (z > b), -np.inf, val)
    return jnp.where(a >= b, np.nan, val)


def pdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote_inexact(x, a, b, loc, scale)
    x, a, b = jnp.broadcast_arrays(x, a, b)
    z = (x - loc) / scale
    total = _log_mass(a, b)
    log_cdf = _log_mass(a, z) - total
    log_sf = _log_mass(z, b) - total
    # near 1 the complement is the accurate one; the first matching case wins (as JAX)
    out = jnp.where(z > a, log_cdf, 0.0)
    out = jnp.where(log_cdf > -0.1, jnp.log1p(-jnp.exp(log_sf)), out)
    out = jnp.where(z <= a, -np.inf, out)
    out = jnp.where(z >= b, 0.0, out)
    return jnp.where(a >= b, np.nan, out)


def cdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote_inexact(x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
    return jnp.exp(logsf(x, a, b, loc, scale))
