"""jx.scipy.stats.betabinom: the beta-binomial distribution, as jax.scipy.stats.betabinom."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpmf(k, n, a, b, loc=0):
    k, n, a, b, loc = promote_inexact(k, n, a, b, loc)
    betaln = special().betaln
    y = jnp.floor(k) - loc
    log_comb = -(jnp.log1p(n) + betaln(n - y + 1, y + 1))
    log_probs = log_comb + betaln(y + a, n - y + b) - betaln(a, b)
    log_probs = jnp.where((y == 0) & (n == 0), 0.0, log_probs)
    # JAX's support test, kept as it is: y < -loc (that is, floor(k) < 0) or y > n
    outside = (y < -loc) | (y > n) | (y + a <= 0)
    log_probs = jnp.where(outside, -np.inf, log_probs)
    return jnp.where((n < 0) | (a <= 0) | (b <= 0), np.nan, log_probs)


def pmf(k, n, a, b, loc=0):
    return jnp.exp(logpmf(k, n, a, b, loc))
