"""jx.scipy.stats.wrapcauchy: the wrapped Cauchy distribution on [0, 2 pi], as JAX's.
c outside (0, 1) gives nan."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact


def logpdf(x, c):
    x, c = promote_inexact(x, c)
    density = (jnp.log(1 - c * c) - np.log(2 * np.pi)
               - jnp.log(1 + c * c - 2 * c * jnp.cos(x)))
    inside = jnp.where((x >= 0) & (x <= 2 * np.pi), density, -np.inf)
    return jnp.where((c > 0) & (c < 1), inside, np.nan)


def pdf(x, c):
    return jnp.exp(logpdf(x, c))
