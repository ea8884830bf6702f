"""The decomposition primitives with jax.lax.linalg's signatures, at jx.numpy's layer
(jx.lax sits above jx.numpy, and jx.numpy.linalg is built on these); jx.lax.linalg
exports them.

No promotion here (as in lax): operands are float32 or float64 matrices with any
leading batch axes.
"""
from __future__ import annotations

from ..core import bind_like
from ..prims import decompositions as dc
from ._util import as_value, shape_of


def _bind(prim, *args, **params):
    return bind_like((), prim, *args, **params)


def symmetrize(x):
    """(x + x^T) / 2 over the last two axes, as JAX's wrappers symmetrise."""
    from .manipulation import swapaxes
    return (x + swapaxes(x, -1, -2)) / 2


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor L (x = L L^T); NaNs where x is not positive definite."""
    return _bind(dc.cholesky, as_value(x), symmetrize_input=bool(symmetrize_input))[0]


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """x with op(a) x = b (left_side) or x op(a) = b, op(a) = a or a^T; only a's
    `lower` (or upper) triangle is read, its diagonal taken as ones if unit_diagonal."""
    return _bind(dc.triangular_solve, as_value(a), as_value(b), left_side=bool(left_side),
                 lower=bool(lower), transpose_a=bool(transpose_a),
                 conjugate_a=bool(conjugate_a), unit_diagonal=bool(unit_diagonal))[0]


def lu(x):
    """(lu, pivots, permutation): P x = L U with partial pivoting; L (unit diagonal,
    below) and U (on and above) share `lu`, `pivots` are LAPACK's row swaps (from
    0) and `permutation` the rows of x they amount to."""
    return tuple(_bind(dc.lu, as_value(x)))


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """(q, r) with x = q r: q orthonormal columns, r upper triangular (LAPACK's signs)."""
    if pivoting:
        raise NotImplementedError("jx.lax.linalg.qr(pivoting=True) (column-pivoted QR) is not "
                                  "implemented; use pivoting=False, or svd for rank decisions")
    return tuple(_bind(dc.qr, as_value(x), full_matrices=bool(full_matrices)))


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None, implementation=None):
    """(v, w): eigenvectors (columns of v) and ascending eigenvalues of the symmetric x,
    read from its `lower` (or upper) triangle unless symmetrize_input."""
    x = as_value(x)
    if symmetrize_input:
        x = symmetrize(x)
    v, w = _bind(dc.eigh, x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
    if subset_by_index is not None:
        lo, hi = _subset(subset_by_index, shape_of(x)[-1], "eigh")
        v, w = v[..., lo:hi], w[..., lo:hi]
    return v, w


def _subset(subset, n: int, what: str) -> tuple:
    try:
        lo, hi = (int(i) for i in subset)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: subset_by_index must be a pair (start, end) of ints, got "
                         f"{subset!r}") from None
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"{what}: subset_by_index {subset!r} must satisfy 0 <= start <= end "
                         f"<= {n}")
    return lo, hi


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
    """Singular values s (descending), and with compute_uv (u, s, vh): x = u diag(s) vh."""
    x = as_value(x)
    outs = _bind(dc.svd, x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if subset_by_index is not None:
        lo, hi = _subset(subset_by_index, min(shape_of(x)[-2:]), "svd")
        if compute_uv and full_matrices:
            raise ValueError("svd: subset_by_index needs full_matrices=False")
        outs = [outs[0][..., lo:hi]] + ([outs[1][..., :, lo:hi], outs[2][..., lo:hi, :]]
                                        if compute_uv else [])
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return u, s, vh


def householder_panel(x):
    """(packed, t): geqrf's packed Householder QR of a tall x and larft's triangle t,
    H_0 ... H_{n-1} = I - V t V^T (the expand pass's blocked QR; no derivative)."""
    return tuple(_bind(dc.householder_panel, as_value(x)))
