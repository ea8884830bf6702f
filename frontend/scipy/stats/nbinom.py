"""jx.scipy.stats.nbinom: the negative binomial distribution, as jax.scipy.stats.nbinom."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote_inexact(k, n, p, loc)
    sp = special()
    y = k - loc
    log_comb = sp.gammaln(y + n) - sp.gammaln(n) - sp.gammaln(y + 1)
    log_probs = log_comb + sp.xlogy(n, p) + sp.xlogy(y, 1 - p)
    return jnp.where(k < loc, -np.inf, log_probs)


def pmf(k, n, p, loc=0):
    return jnp.exp(logpmf(k, n, p, loc))
