"""jx.scipy.stats.poisson: the Poisson distribution, as jax.scipy.stats.poisson."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpmf(k, mu, loc=0):
    k, mu, loc = promote_inexact(k, mu, loc)
    sp = special()
    x = k - loc
    log_probs = sp.xlogy(x, mu) - sp.gammaln(x + 1) - mu
    # non-integer k has no mass (JAX tests k itself, not k - loc)
    return jnp.where((x < 0) | (jnp.round(k) != k), -np.inf, log_probs)


def pmf(k, mu, loc=0):
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    k, mu, loc = promote_inexact(k, mu, loc)
    x = k - loc
    # P(X <= k) = Q(floor(k) + 1, mu), the regularized upper incomplete gamma
    return jnp.where(x < 0, 0.0, special().gammaincc(jnp.floor(x + 1), mu))
