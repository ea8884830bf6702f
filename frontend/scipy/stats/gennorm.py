"""jx.scipy.stats.gennorm: the generalized normal distribution with shape beta, as
jax.scipy.stats.gennorm (no loc or scale, as JAX)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpdf(x, beta):
    x, beta = promote_inexact(x, beta)
    return jnp.log(0.5 * beta) - special().gammaln(1 / beta) - jnp.abs(x) ** beta


def pdf(x, beta):
    return jnp.exp(logpdf(x, beta))


def cdf(x, beta):
    x, beta = promote_inexact(x, beta)
    return 0.5 * (1 + jnp.sign(x) * special().gammainc(1 / beta, jnp.abs(x) ** beta))
