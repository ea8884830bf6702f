"""jx.scipy.stats.geom: the geometric distribution (k >= 1), as jax.scipy.stats.geom."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpmf(k, p, loc=0):
    k, p, loc = promote_inexact(k, p, loc)
    x = k - loc
    log_probs = special().xlog1py(x - 1, -p) + jnp.log(p)
    return jnp.where(x <= 0, -np.inf, log_probs)


def pmf(k, p, loc=0):
    return jnp.exp(logpmf(k, p, loc))
