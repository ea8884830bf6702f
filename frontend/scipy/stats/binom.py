"""jx.scipy.stats.binom: the binomial distribution, as jax.scipy.stats.binom."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote_inexact(k, n, p, loc)
    sp = special()
    y = k - loc
    log_comb = sp.gammaln(n + 1) - sp.gammaln(y + 1) - sp.gammaln(n - y + 1)
    log_linear = sp.xlogy(y, p) + sp.xlog1py(n - y, -p)
    # p in {0, 1} puts all mass on one k; there log_comb is 0 too, so the sum is exact
    log_probs = jnp.where(((y == 0) & (n == 0)) | (log_linear == 0), 0.0,
                          log_comb + log_linear)
    return jnp.where((k >= loc) & (k < loc + n + 1), log_probs, -np.inf)


def pmf(k, n, p, loc=0):
    return jnp.exp(logpmf(k, n, p, loc))
