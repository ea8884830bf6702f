"""jx.scipy.stats.multivariate_normal, as jax.scipy.stats.multivariate_normal.
The full-covariance case factors cov with the Cholesky of ._linalg (a fori_loop)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ...numpy import _util
from . import _linalg

_LOG_2PI = float(np.log(2 * np.pi))


def logpdf(x, mean, cov, allow_singular=None):
    if allow_singular is not None:
        raise NotImplementedError("multivariate_normal.logpdf: allow_singular is not "
                                  "supported (as in JAX); leave it None")
    x, mean, cov = (jnp.asarray(a) for a in _util.promote_dtypes(x, mean, cov, to_float=True))
    if mean.ndim == 0:                       # univariate: cov is the variance
        return -0.5 * jnp.square(x - mean) / cov - 0.5 * (_LOG_2PI + jnp.log(cov))
    n = mean.shape[-1]
    y = x - mean
    if cov.ndim == 0:                        # isotropic: cov * identity
        return (-0.5 * jnp.sum(y * y, axis=-1) / cov
                - n / 2 * (_LOG_2PI + jnp.log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal.logpdf got incompatible shapes: mean has "
                         f"{n} entries on its last axis, so cov must end in ({n}, {n}); got "
                         f"cov.shape={cov.shape}")
    low = _linalg.cholesky(cov)
    z = _linalg.solve_lower(low, y)          # whitened: |z|^2 = y^T cov^-1 y
    log_det = jnp.sum(jnp.log(jnp.diagonal(low, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.sum(z * z, axis=-1) - n / 2 * _LOG_2PI - log_det


def pdf(x, mean, cov):
    return jnp.exp(logpdf(x, mean, cov))
