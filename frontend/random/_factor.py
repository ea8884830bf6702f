"""Small traced matrix factorizations for the samplers, used while
jx.numpy.linalg has no decompositions of its own (its cholesky and qr raise
NotImplementedError until then; they are preferred once they exist).

Both are fori_loops over columns: column j is picked out and written back with
one-hot products, so every shape is static and the loop traces, batches over
leading axes and differentiates like any jx.numpy code.
"""
from __future__ import annotations

from ..lax.control_flow import fori_loop
from ..numpy import _util as u
from . import _common as c


def _onehot(j, n, dt):
    jn = c.jnp()
    return u.convert(jn.equal(jn.arange(n), j), dt)


def _matvec(a, v):
    """a @ v over the leading (batch) axes."""
    jn = c.jnp()
    return jn.sum(jn.multiply(a, jn.expand_dims(v, -2)), axis=-1)


def cholesky(a):
    """Lower Cholesky factor of a symmetric positive definite a[..., n, n], from
    (a + a^T) / 2 as JAX's default symmetrize_input; NaN where a is not positive
    definite (a square root of a negative pivot), as LAPACK-backed JAX gives."""
    jn = c.jnp()
    try:
        return jn.linalg.cholesky(a)
    except NotImplementedError:
        pass
    a = jn.divide(jn.add(a, jn.swapaxes(a, -1, -2)), 2)
    n, dt = u.shape_of(a)[-1], a.dtype
    rows = jn.arange(n)

    def column(j, L):
        e = _onehot(j, n, dt)
        col = jn.subtract(_matvec(a, e), _matvec(L, _matvec(jn.swapaxes(L, -1, -2), e)))
        pivot = jn.sqrt(jn.sum(jn.multiply(col, e), axis=-1, keepdims=True))
        col = jn.where(jn.greater_equal(rows, j), jn.divide(col, pivot), jn.zeros_like(col))
        return jn.add(L, jn.multiply(jn.expand_dims(col, -1), e))
    return fori_loop(0, n, column, jn.zeros_like(a))


def orthonormal_columns(z):
    """Q of z[..., r, k] = Q R (r >= k) with R's diagonal positive: Gram-Schmidt,
    each column orthogonalized twice (CGS2) so Q stays orthonormal to rounding.
    That sign choice is the one jax.random.orthogonal normalizes to."""
    jn = c.jnp()
    try:
        q, r = jn.linalg.qr(z)
        d = jn.diagonal(r, axis1=-2, axis2=-1)
        return jn.multiply(q, jn.expand_dims(jn.sign(d), -2))
    except NotImplementedError:
        pass
    k, dt = u.shape_of(z)[-1], z.dtype
    cols = jn.arange(k)

    def column(j, Q):
        e = _onehot(j, k, dt)
        v = _matvec(z, e)
        done = u.convert(jn.less(cols, j), dt)        # the columns already in Q
        for _ in range(2):
            coef = jn.multiply(jn.sum(jn.multiply(Q, jn.expand_dims(v, -1)), axis=-2), done)
            v = jn.subtract(v, _matvec(Q, coef))
        v = jn.divide(v, jn.sqrt(jn.sum(jn.multiply(v, v), axis=-1, keepdims=True)))
        return jn.add(Q, jn.multiply(jn.expand_dims(v, -1), e))
    return fori_loop(0, k, column, jn.zeros_like(z))
