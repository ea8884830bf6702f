"""Vector and matrix samplers: multivariate_normal, dirichlet, orthogonal."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..lax.ops import stop_gradient
from ..numpy import _util as u
from . import _common as c
from ._core import _check_key, normal
from ._gamma import loggamma
from ._factor import cholesky, orthonormal_columns

_METHODS = ("svd", "eigh", "cholesky")


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """mean + factor @ z, z standard normal and factor @ factor.T == cov (a Cholesky
    factor, or U sqrt(s) / V sqrt(w) from an SVD / eigendecomposition)."""
    kk = _check_key(key, "multivariate_normal")
    j = c.jnp()
    mean, cov = u.promote_dtypes(u.as_value(mean), u.as_value(cov), to_float=True)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {{'svd', 'eigh', 'cholesky'}}, got "
                         f"{method!r}")
    dt = mean.dtype if dtype is None else c.float_dtype(dtype, "multivariate_normal")
    if not dtypes.is_float(dt):
        raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, "
                         f"got {dt}")
    ms, cs = u.shape_of(mean), u.shape_of(cov)
    if len(ms) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{len(ms)}")
    if len(cs) < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{len(cs)}")
    n = ms[-1]
    if cs[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {cs}")
    if shape is None:
        shape = u.broadcast_shapes(ms[:-1], cs[:-2])
    else:
        shape = c.shape_tuple(shape)
        c.check_shape("multivariate_normal", shape, ms[:-1], cs[:-2])
    lin = j.linalg
    try:
        if method == "svd":
            uu, s, _ = lin.svd(cov)
            factor = j.multiply(uu, j.expand_dims(j.sqrt(s), -2))
        elif method == "eigh":
            w, v = lin.eigh(cov)
            factor = j.multiply(v, j.expand_dims(j.sqrt(w), -2))
        else:
            factor = cholesky(cov)
    except NotImplementedError as e:
        raise NotImplementedError(
            f"multivariate_normal(method={method!r}) needs jx.numpy.linalg.{method}, which "
            "jx does not have yet; use method='cholesky' (cov positive definite)") from e
    z = normal(kk, shape + (n,), dt)
    return j.add(mean, j.squeeze(j.matmul(factor, j.expand_dims(z, -1)), -1))


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) over alpha's last axis: normalized gammas, drawn in log space
    (a softmax of log-gammas) so small alpha keeps its precision."""
    kk = _check_key(key, "dirichlet")
    dt = c.float_dtype(dtype, "dirichlet")
    j = c.jnp()
    av = u.as_value(alpha)
    s = u.shape_of(av)
    if len(s) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(s)}")
    if shape is None:
        shape = s[:-1]
    else:
        shape = c.shape_tuple(shape)
        c.check_shape("dirichlet", shape, s[:-1])
    lg = loggamma(kk, u.convert(av, dt), shape + s[-1:], dt)
    e = j.exp(j.subtract(lg, stop_gradient(j.max(lg, axis=-1, keepdims=True))))
    return j.divide(e, j.sum(e, axis=-1, keepdims=True))


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Haar-random n x m matrices with orthonormal columns (or rows when n < m):
    the Q of a QR of a normal matrix, its columns' signs fixed by R's diagonal."""
    kk = _check_key(key, "orthogonal")
    dt = c.float_dtype(dtype, "orthogonal")
    for name, v in (("n", n), ("m", m)):
        if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool)):
            raise TypeError(f"orthogonal's {name} must be a static Python int, got {v!r}")
    n = int(n)
    m = n if m is None else int(m)
    j = c.jnp()
    z = normal(kk, c.shape_tuple(shape) + (max(n, m), min(n, m)), dt)
    x = orthonormal_columns(z)
    return j.swapaxes(x, -1, -2) if n < m else x
