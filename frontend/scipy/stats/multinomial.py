"""jx.scipy.stats.multinomial: the multinomial distribution, as JAX's. x (counts on the
last axis) and n must be integers; p is promoted to a float."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ...numpy import _util
from ._util import promote_inexact, special


def logpmf(x, n, p):
    (p,) = promote_inexact(p)
    x, n = (jnp.asarray(a) for a in _util.promote_dtypes(x, n))
    if not jnp.issubdtype(x.dtype, np.integer):
        raise ValueError(f"multinomial.logpmf: x and n must be of integer type; got "
                         f"x.dtype={x.dtype}, n.dtype={n.dtype}")
    sp = special()
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    log_probs = sp.gammaln(n + 1) + jnp.sum(sp.xlogy(x, p) - sp.gammaln(x + 1), axis=-1)
    # as JAX: the total of all of x (not per row) must be n
    return jnp.where(jnp.sum(x) == n, log_probs, -np.inf)


def pmf(x, n, p):
    return jnp.exp(logpmf(x, n, p))
