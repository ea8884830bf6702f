"""jx.scipy.stats.vonmises: the von Mises distribution (no loc or scale, as JAX's);
kappa <= 0 gives nan."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpdf(x, kappa):
    x, kappa = promote_inexact(x, kappa)
    # e^{kappa cos x} / (2 pi I0(kappa)), with I0 scaled by e^{-kappa} so it cannot overflow
    val = kappa * (jnp.cos(x) - 1) - jnp.log(2 * np.pi * special().i0e(kappa))
    return jnp.where(kappa > 0, val, np.nan)


def pdf(x, kappa):
    return jnp.exp(logpdf(x, kappa))
