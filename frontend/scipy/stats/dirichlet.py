"""jx.scipy.stats.dirichlet: the Dirichlet distribution, as jax.scipy.stats.dirichlet.
x holds the K coordinates on axis 0 (or K - 1 of them: the last is 1 - their sum)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpdf(x, alpha):
    x, alpha = promote_inexact(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"dirichlet.logpdf: `alpha` must be one-dimensional; got "
                         f"alpha.shape={alpha.shape}")
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise ValueError(f"dirichlet.logpdf: `x` must have either the same number of entries "
                         f"as `alpha` on axis 0 or one entry fewer; got x.shape={x.shape}, "
                         f"alpha.shape={alpha.shape}")
    if x.shape[0] == k - 1:
        x = jnp.concatenate([x, 1 - jnp.sum(x, axis=0, keepdims=True)], axis=0)
    sp = special()
    log_norm = jnp.sum(sp.gammaln(alpha)) - sp.gammaln(jnp.sum(alpha))
    a = jnp.reshape(alpha, (k,) + (1,) * (x.ndim - 1))
    log_probs = jnp.sum(sp.xlogy(a - 1, x), axis=0) - log_norm
    # JAX's simplex test: positive coordinates summing to 1 within 1e-6
    simplex = jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6)
    return jnp.where(simplex, log_probs, -np.inf)


def pdf(x, alpha):
    return jnp.exp(logpdf(x, alpha))
