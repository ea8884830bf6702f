"""The small dense linear algebra stats needs (jx has no linalg decompositions yet):
a Cholesky factorization and a lower-triangular solve, both batched over leading
axes, written as jx.lax.fori_loop over columns with one-hot masks, so the traced
program has a fixed size whatever n is, and it differentiates and vmaps."""
from __future__ import annotations

from ... import lax
from ... import numpy as jnp
from ...numpy import _util


def cholesky(a):
    """Lower L with L @ L^T = a, for symmetric positive definite a of shape (..., n, n).
    As JAX's, a is symmetrized first (so gradients are symmetric); a matrix that is not
    positive definite gives nan."""
    a = (a + jnp.swapaxes(a, -1, -2)) / 2
    n = a.shape[-1]
    idx = jnp.arange(n)

    def column(j, low):
        e = (idx == j).astype(a.dtype)                          # one-hot column j
        a_col = jnp.sum(a * e, axis=-1)                         # a[..., :, j]
        l_row = jnp.sum(low * e[:, None], axis=-2)              # L[..., j, :] (cols < j)
        v = a_col - jnp.sum(low * l_row[..., None, :], axis=-1)  # a[:, j] - L L[j, :]^T
        d = jnp.sqrt(jnp.sum(v * e, axis=-1))[..., None]
        below = idx > j
        # rows above j get 0; the division there is masked to 1 / d, never 0 / 0
        col = jnp.where(below, v / d, 0.0) + e * d
        return low + col[..., :, None] * e
    return lax.fori_loop(0, n, column, jnp.zeros_like(a))


def solve_lower(low, b):
    """y with low @ y = b, for low (..., n, n) lower triangular and b (..., n)."""
    n = low.shape[-1]
    idx = jnp.arange(n)
    shape = _util.broadcast_shapes(low.shape[:-2], b.shape[:-1]) + (n,)

    def row(i, y):
        e = (idx == i).astype(low.dtype)
        l_row = jnp.sum(low * e[:, None], axis=-2)              # low[..., i, :]
        r = jnp.sum(b * e, axis=-1) - jnp.sum(l_row * y, axis=-1)
        return y + e * (r / jnp.sum(l_row * e, axis=-1))[..., None]
    return lax.fori_loop(0, n, row, jnp.zeros(shape, jnp.result_type(low, b)))
