"""Matrix decompositions and triangular solves (jax.lax.linalg's primitives).

Each acts on the last two axes; leading axes are a batch. Operands are float32
or float64 (jx.numpy.linalg promotes integers first). Failures give what JAX
gives on the CPU, never an exception: a matrix that is not positive definite
has a Cholesky factor NaN on and below the diagonal (zero above, as JAX's), a
singular triangle divides by zero (inf/NaN),
and an eigen- or singular-value problem with a non-finite entry comes out NaN.

    cholesky(a, symmetrize_input)             -> L, lower, upper triangle zero; of
                                                 (a + a^T) / 2 with symmetrize_input
    triangular_solve(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal)
                                              -> x with op(a) x = b (left) or x op(a) = b
    lu(a)                                     -> (lu, pivots, permutation), partial pivoting
    qr(a, full_matrices)                      -> (q, r), Householder (LAPACK's signs)
    eigh(a, lower, sort_eigenvalues)          -> (v, w), w ascending, a's `lower` triangle
    svd(a, full_matrices, compute_uv)         -> [s] or [s, u, vt], s descending

The references use NumPy's LAPACK where NumPy has the routine, and plain NumPy
loops (vectorised over the batch) where it does not (LU, triangular solves).
"""
from __future__ import annotations

import numpy as np

from ..core import declare
from ..errors import ShapeError
from ..ir import ShapedArray


def _matrix(x, what: str, square: bool = True):
    if x.ndim < 2:
        raise ShapeError(f"{what} must be a matrix (at least 2 dims), got {x}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"{what} must be square in its last two axes, got {x}")
    if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ShapeError(f"{what} must be float32 or float64, got {x}; convert with "
                         ".astype(jnp.float32) (jx.numpy.linalg promotes integers itself)")
    return x


def _each(fn, a, outs_like):
    """fn over every matrix of the batch; a matrix whose LAPACK call fails (or has a
    non-finite entry) gives NaN outputs, as JAX's CPU kernels do."""
    batch = a.shape[:-2]
    flat = a.reshape((int(np.prod(batch, dtype=np.int64)),) + a.shape[-2:])
    outs = [np.empty((flat.shape[0],) + o.shape[len(batch):], o.dtype) for o in outs_like]
    for i, m in enumerate(flat):
        try:
            if not np.all(np.isfinite(m)):
                raise np.linalg.LinAlgError
            res = fn(m)
        except np.linalg.LinAlgError:
            res = [np.full(o.shape[1:], np.nan, o.dtype) for o in outs]
        for o, r in zip(outs, res):
            o[i] = r
    return [o.reshape(ol.shape) for o, ol in zip(outs, outs_like)]


def _like(aval):
    return np.empty(aval.shape, aval.dtype)


# ------------------------------------------------------------------ cholesky

def _cholesky_rule(a, *, symmetrize_input=False):
    return ShapedArray(_matrix(a, "the operand").shape, a.dtype)


def _cholesky(a, *, symmetrize_input=False):
    # NumPy reads the lower triangle, as the primitive does. A failed factor is NaN on
    # and below the diagonal, zero above: JAX's (its wrapper takes tril of potrf's).
    # JAX's wrapper symmetrises before its primitive; here it is the primitive's
    # option, so the kernel reads (a[i, j] + a[j, i]) / 2 instead of a pass over a
    if symmetrize_input:
        a = (a + np.swapaxes(a, -1, -2)) / a.dtype.type(2)

    def one(m):
        return [np.linalg.cholesky(m)]
    out = _each(one, a, [a])[0]
    return np.where(np.tri(a.shape[-1], dtype=bool), out, np.zeros((), a.dtype))


cholesky = declare("cholesky", _cholesky_rule, _cholesky)


# ------------------------------------------------------------------ triangular solve

def _trsm_rule(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _matrix(a, "a")
    _matrix(b, "b", square=False)
    if a.dtype != b.dtype:
        raise ShapeError(f"a and b must share a dtype, got {a} and {b}")
    if a.shape[:-2] != b.shape[:-2]:
        raise ShapeError(f"batch dims of a {a} and b {b} differ; "
                         "broadcast them first")
    m = a.shape[-1]
    k = b.shape[-2] if left_side else b.shape[-1]
    if k != m:
        raise ShapeError(f"a is {a} but b's {'rows' if left_side else 'columns'}"
                         f" number {k} (left_side={left_side})")
    return ShapedArray(b.shape, b.dtype)


def solve_lower_left(a, b):
    """x with a x = b, a lower triangular (read below and on the diagonal only), by
    forward substitution vectorised over the batch and the right-hand sides."""
    x = np.zeros_like(b)
    for i in range(a.shape[-1]):
        s = b[..., i, :] - np.einsum("...j,...jk->...k", a[..., i, :i], x[..., :i, :])
        x[..., i, :] = s / a[..., i, i, None]
    return x


def _trsm(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        a = a.copy()
        idx = np.arange(a.shape[-1])
        a[..., idx, idx] = 1
    if transpose_a:                          # op(a) = a^T (conjugation is a no-op on reals)
        a, lower = np.swapaxes(a, -1, -2), not lower
    if not left_side:                        # x a = b  <=>  a^T x^T = b^T
        a, lower, b = np.swapaxes(a, -1, -2), not lower, np.swapaxes(b, -1, -2)
    if not lower:                            # reverse rows and columns: upper -> lower
        a, b = a[..., ::-1, ::-1], b[..., ::-1, :]
    with np.errstate(all="ignore"):
        x = solve_lower_left(a, b)
    if not lower:
        x = x[..., ::-1, :]
    return np.ascontiguousarray(x if left_side else np.swapaxes(x, -1, -2))


triangular_solve = declare("triangular_solve", _trsm_rule, _trsm)


# ------------------------------------------------------------------ lu

def _lu_rule(a):
    _matrix(a, "the operand", square=False)
    m, n = a.shape[-2:]
    i32 = np.dtype(np.int32)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (min(m, n),), i32),
            ShapedArray(a.shape[:-2] + (m,), i32)]


def _lu(a):
    """getrf's partial pivoting: the first largest |entry| of the column pivots; a
    zero pivot skips the column's scaling (LAPACK goes on and reports it in info)."""
    m, n = a.shape[-2:]
    lu = a.reshape((int(np.prod(a.shape[:-2], dtype=np.int64)), m, n)).copy()
    nb = lu.shape[0]
    rows = np.arange(nb)
    pivots = np.zeros((nb, min(m, n)), np.int32)
    perm = np.tile(np.arange(m, dtype=np.int32), (nb, 1))
    with np.errstate(all="ignore"):
        for j in range(min(m, n)):
            col = np.abs(lu[:, j:, j])
            p = j + np.argmax(np.where(np.isnan(col), -np.inf, col), axis=1)
            pivots[:, j] = p
            lu[rows, [j], :], lu[rows, p, :] = lu[rows, p, :], lu[rows, [j], :].copy()
            perm[rows, j], perm[rows, p] = perm[rows, p], perm[rows, j].copy()
            d = lu[:, j, j]
            scale = np.where(d != 0, d, 1)
            lu[:, j + 1:, j] /= scale[:, None]
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return [lu.reshape(a.shape), pivots.reshape(a.shape[:-2] + (min(m, n),)),
            perm.reshape(a.shape[:-2] + (m,))]


lu = declare("lu", _lu_rule, _lu, multiple_results=True)


# ------------------------------------------------------------------ qr

def _qr_rule(a, *, full_matrices):
    _matrix(a, "the operand", square=False)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    batch = a.shape[:-2]
    return [ShapedArray(batch + (m, k), a.dtype), ShapedArray(batch + (k, n), a.dtype)]


def _qr(a, *, full_matrices):
    outs = _qr_rule(ShapedArray(a.shape, a.dtype), full_matrices=full_matrices)
    mode = "complete" if full_matrices else "reduced"
    if 0 in a.shape[-2:]:                    # LAPACK is not called: Q = I, R empty
        q = np.broadcast_to(np.eye(*outs[0].shape[-2:], dtype=a.dtype), outs[0].shape).copy()
        return [q, np.zeros(outs[1].shape, a.dtype)]
    return _each(lambda m: np.linalg.qr(m, mode=mode), a, [_like(o) for o in outs])


qr = declare("qr", _qr_rule, _qr, multiple_results=True)


# ------------------------------------------------------------------ eigh

def _eigh_rule(a, *, lower, sort_eigenvalues):
    _matrix(a, "the operand")
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-1], a.dtype)]


def _eigh(a, *, lower, sort_eigenvalues):
    outs = _eigh_rule(ShapedArray(a.shape, a.dtype), lower=lower,
                      sort_eigenvalues=sort_eigenvalues)

    def one(m):
        w, v = np.linalg.eigh(m, UPLO="L" if lower else "U")
        return [v, w]
    return _each(one, a, [_like(o) for o in outs])


eigh = declare("eigh", _eigh_rule, _eigh, multiple_results=True)


# ------------------------------------------------------------------ svd

def _svd_rule(a, *, full_matrices, compute_uv):
    _matrix(a, "the operand", square=False)
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    s = ShapedArray(batch + (k,), a.dtype)
    if not compute_uv:
        return [s]
    um, vn = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray(batch + (m, um), a.dtype), ShapedArray(batch + (vn, n), a.dtype)]


def _svd(a, *, full_matrices, compute_uv):
    outs = _svd_rule(ShapedArray(a.shape, a.dtype), full_matrices=full_matrices,
                     compute_uv=compute_uv)
    if 0 in a.shape[-2:]:
        res = [np.zeros(outs[0].shape, a.dtype)]
        return res + [np.broadcast_to(np.eye(*o.shape[-2:], dtype=a.dtype), o.shape).copy()
                      for o in outs[1:]]

    def one(m):
        if not compute_uv:
            return [np.linalg.svd(m, compute_uv=False)]
        u, s, vt = np.linalg.svd(m, full_matrices=full_matrices)
        return [s, u, vt]
    return _each(one, a, [_like(o) for o in outs])


svd = declare("svd", _svd_rule, _svd, multiple_results=True)



# ------------------------------------------------------------------ householder panel

def _panel_rule(a):
    _matrix(a, "the operand", square=False)
    m, n = a.shape[-2:]
    if m < n:
        raise ShapeError(f"needs a tall panel (rows >= columns), got {a}")
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (n, n), a.dtype)]


def _panel(a):
    """(packed, t): geqrf's packed QR of the panel (R on and above the diagonal, the
    reflectors' vectors below it, first entries 1 implied) and larft's upper
    triangular t, so that H_0 ... H_{n-1} = I - V t V^T (the compact WY form)."""
    m, n = a.shape[-2:]
    flat = a.reshape((int(np.prod(a.shape[:-2], dtype=np.int64)), m, n)).astype(a.dtype)
    packed = flat.copy()
    ts = np.zeros((flat.shape[0], n, n), a.dtype)
    with np.errstate(all="ignore"):
        for p in range(flat.shape[0]):
            w = packed[p]
            taus = np.zeros(n, a.dtype)
            for j in range(n):
                alpha, x = w[j, j], w[j + 1:, j]
                if not np.any(x):
                    continue                      # H_j = I: tau 0, column kept
                # the norm from entries scaled by the largest (as dnrm2 and the kernel):
                # unscaled squares overflow or underflow at extreme magnitudes
                s = max(abs(alpha), np.max(np.abs(x)))
                norm = s * np.sqrt((alpha / s) ** 2 + np.dot(x / s, x / s))
                beta = -np.copysign(norm, alpha)
                taus[j] = (beta - alpha) / beta
                w[j + 1:, j] = x / (alpha - beta)
                w[j, j] = beta
                v = np.concatenate([[1], w[j + 1:, j]]).astype(a.dtype)
                w[j:, j + 1:] -= taus[j] * np.outer(v, v @ w[j:, j + 1:])
            v = np.tril(w, -1) + np.eye(m, n, dtype=a.dtype)
            t = ts[p]
            for i in range(n):
                t[i, i] = taus[i]
                t[:i, i] = -taus[i] * (t[:i, :i] @ (v[:, :i].T @ v[:, i]))
    return [packed.reshape(a.shape), ts.reshape(a.shape[:-2] + (n, n))]


# Internal to the blocked QR of the expand pass (which runs after differentiation),
# so it has no derivative; JAX's geqrf + larft.
householder_panel = declare("householder_panel", _panel_rule, _panel, multiple_results=True)
