"""jx.scipy.stats.uniform: the uniform distribution on [loc, loc + scale]."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return jnp.where(inside, -jnp.log(scale), -np.inf)


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    # strong constants of x's dtype: as JAX, the result is never weakly typed
    zero, one = jnp.asarray(0, dtype=x.dtype), jnp.asarray(1, dtype=x.dtype)
    # neither branch taken (a nan anywhere) gives 0, as JAX's select
    out = jnp.where((x >= loc) & (x <= loc + scale), (x - loc) / scale, zero)
    return jnp.where(x > loc + scale, one, out)


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote_inexact(q, loc, scale)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc + scale * q)
