"""jx.scipy.stats.bernoulli: the Bernoulli distribution, as jax.scipy.stats.bernoulli."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpmf(k, p, loc=0):
    k, p, loc = promote_inexact(k, p, loc)
    sp = special()
    x = k - loc
    log_probs = sp.xlogy(x, p) + sp.xlog1py(1 - x, -p)
    return jnp.where((x < 0) | (x > 1), -np.inf, log_probs)


def pmf(k, p, loc=0):
    return jnp.exp(logpmf(k, p, loc))


def _bad(*args):
    bad = jnp.isnan(args[0])
    for a in args[1:]:
        bad = bad | jnp.isnan(a)
    return bad


def cdf(k, p):
    k, p = promote_inexact(k, p)
    out = jnp.where(k >= 1, 1.0, jnp.where(k >= 0, 1 - p, 0.0))
    return jnp.where(_bad(k, p) | (p < 0) | (p > 1), np.nan, out)


def ppf(q, p):
    q, p = promote_inexact(q, p)
    bad = _bad(q, p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return jnp.where(bad, np.nan, jnp.where(q <= 1 - p, 0.0, 1.0))
