"""jx.numpy.linalg: the array API's linear-algebra extension, as jax.numpy.linalg.

The products and norms are built on _products (dot_general) and jx.numpy
reductions; the decompositions and solvers on jx.lax.linalg's primitives
(cholesky, triangular_solve, lu, qr, eigh, svd), so they trace, differentiate
through those primitives' rules and compile. Everything acts on the last two
axes with any leading batch axes; integers promote to the default float (float32,
float64 with x64), as in JAX. The decompositions take real matrices; eig/eigvals
(a non-symmetric eigensolver, complex results) are not implemented yet.
"""
from __future__ import annotations

import operator as _operator
from typing import NamedTuple as _NamedTuple

from .. import dtypes as _dtypes
from ..errors import ShapeError as _ShapeError
from . import _factorizations as _fz  # the primitives with lax's signatures
from . import _products
from ._util import canonical_axis as _canonical_axis, canonical_axes as _canonical_axes, \
    promote_dtypes as _promote_dtypes, shape_of as _shape_of
from .creation import _wrap_public


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    return _products.matmul(x1, x2, precision=precision,
                            preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    return _products.tensordot(x1, x2, axes, precision=precision,
                               preferred_element_type=preferred_element_type)


def outer(x1, x2, /):
    if len(_shape_of(x1)) != 1 or len(_shape_of(x2)) != 1:
        raise _ShapeError(f"linalg.outer: operands must be 1-d, got shapes "
                         f"{_shape_of(x1)} and {_shape_of(x2)} (jx.numpy.outer flattens)")
    return _products.outer(x1, x2)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Dot products of the vectors along axis (after broadcasting the rest)."""
    return _products.vecdot(x1, x2, axis=axis, precision=precision,
                            preferred_element_type=preferred_element_type)


def matrix_transpose(x, /):
    from .manipulation import swapaxes
    if len(_shape_of(x)) < 2:
        raise _ShapeError(f"matrix_transpose: needs at least 2 dims, got shape {_shape_of(x)}")
    return swapaxes(x, -1, -2)


def trace(x, /, *, offset=0, dtype=None):
    """Traces of the matrices in the last two axes."""
    return _products.trace(x, offset, -2, -1, dtype)


def diagonal(x, /, *, offset=0):
    from .manipulation import diagonal as diag
    return diag(x, offset, -2, -1)


def cross(x1, x2, /, *, axis=-1):
    s1, s2 = _shape_of(x1), _shape_of(x2)
    if not s1 or not s2 or s1[axis] != 3 or s2[axis] != 3:
        raise _ShapeError(f"linalg.cross: axis {axis} must have size 3 in both operands, "
                         f"got shapes {s1} and {s2} (jx.numpy.cross takes 2-vectors)")
    return _products.cross(x1, x2, axis=axis)


def matrix_power(a, n):
    """a @ a @ ... (n times) by repeated squaring; n = 0 gives identities."""
    from .creation import eye
    from .manipulation import broadcast_to as bcast
    (x,) = _promote_dtypes(a)
    s = _shape_of(x)
    if len(s) < 2 or s[-1] != s[-2]:
        raise _ShapeError(f"matrix_power: needs square matrices in the last two axes, "
                         f"got shape {s}")
    try:
        n = _operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}") from None
    if n == 0:
        return bcast(eye(s[-1], dtype=x.dtype), s)
    if n < 0:
        x, n = inv(x), -n
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else _products.matmul(result, base)
        n >>= 1
        if n:
            base = _products.matmul(base, base)
    return result


def multi_dot(arrays, *, precision=None):
    """dot of a chain of matrices, left to right (the first and last may be 1-d)."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: needs at least 2 arrays, got {len(arrays)}")
    for i, a in enumerate(arrays):
        nd = len(_shape_of(a))
        if nd != 2 and not (nd == 1 and i in (0, len(arrays) - 1)):
            raise _ShapeError(f"multi_dot: array {i} has shape {_shape_of(a)}; only the "
                             f"first and last may be 1-d, the others must be 2-d")
    out = arrays[0]
    for a in arrays[1:]:
        out = _products.dot(out, a)
    return out


def _abs_float(x):
    from .ufuncs import abs as absolute
    (x,) = _promote_dtypes(x, to_float=True)
    return absolute(x)


def _vector_norm(x, axes, keepdims, ord):
    from .reductions import max, min, sum
    from .ufuncs import not_equal, power, sqrt, square
    from ._util import convert
    a = _abs_float(x)
    if ord is None or ord == 2:
        return sqrt(sum(square(a), axes, keepdims=keepdims))
    if ord == float("inf"):
        return max(a, axes, keepdims=keepdims)
    if ord == -float("inf"):
        return min(a, axes, keepdims=keepdims)
    if ord == 0:
        return sum(convert(not_equal(a, 0), a.dtype), axes, keepdims=keepdims)
    if ord == 1:
        return sum(a, axes, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"vector norm: unknown ord {ord!r} (use a number or +-inf)")
    return power(sum(power(a, ord), axes, keepdims=keepdims), 1.0 / ord)


def _matrix_norm(x, axes, keepdims, ord):
    from .reductions import max, min, sum
    from .ufuncs import sqrt, square
    from ._util import canonical_axis as ca
    nd = len(_shape_of(x))
    r, c = ca(axes[0], nd), ca(axes[1], nd)
    if r == c:
        raise ValueError(f"matrix norm: the two axes must differ, got {axes}")
    a = _abs_float(x)

    def reduce(inner_axis, outer_axis, red):   # red over outer of sums over inner
        s = sum(a, inner_axis, keepdims=True)
        out = red(s, outer_axis, keepdims=True)
        return out if keepdims else _squeeze2(out, r, c)
    if ord in (None, "fro"):
        return sqrt(sum(square(a), (r, c), keepdims=keepdims))
    if ord == 1:
        return reduce(r, c, max)
    if ord == -1:
        return reduce(r, c, min)
    if ord == float("inf"):
        return reduce(c, r, max)
    if ord == -float("inf"):
        return reduce(c, r, min)
    if ord in ("nuc", 2, -2):
        return _singular_value_norm(x, r, c, keepdims, ord)
    raise ValueError(f"matrix norm: unknown ord {ord!r} (use 'fro', 'nuc', +-1, +-2, +-inf)")


def _singular_value_norm(x, r, c, keepdims, ord):
    """The 2-norm (largest singular value), -2 (smallest) or nuclear norm (their sum)
    of the matrices in axes r and c."""
    from .manipulation import expand_dims, moveaxis
    from .reductions import max, min, sum
    (x,) = _promote_dtypes(x, to_float=True)
    s = svd(moveaxis(x, (r, c), (-2, -1)), compute_uv=False)
    if ord == 2:
        y = max(s, -1, initial=0)               # 0 for empty matrices, as in JAX
    elif ord == -2:
        y = min(s, -1)
    else:
        y = sum(s, -1)
    return expand_dims(y, (r, c)) if keepdims else y


def _squeeze2(x, r, c):
    from .manipulation import squeeze
    return squeeze(x, (r, c))


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    nd = len(_shape_of(x))
    axes = _canonical_axes(axis, nd)
    return _vector_norm(x, axes, keepdims, ord)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    if len(_shape_of(x)) < 2:
        raise _ShapeError(f"matrix_norm: needs at least 2 dims, got shape {_shape_of(x)}")
    return _matrix_norm(x, (-2, -1), keepdims, ord)


def norm(x, ord=None, axis=None, keepdims=False):
    """jnp.linalg.norm: a vector norm over one axis, a matrix norm over two;
    axis=None is the 2-norm of everything when ord is None, else the vector or
    matrix norm of a 1-d or 2-d input."""
    nd = len(_shape_of(x))
    if axis is None:
        if ord is None:
            return _vector_norm(x, tuple(range(nd)), keepdims, None)
        if nd not in (1, 2):
            raise ValueError(f"norm: ord={ord!r} with axis=None needs a 1-d or 2-d input, "
                             f"got {nd}-d (pass axis)")
        axis = tuple(range(nd))
    if isinstance(axis, int):
        axis = (axis,)
    axis = tuple(axis)
    if len(axis) == 1:
        return _vector_norm(x, (_canonical_axis(axis[0], nd),), keepdims, ord)
    if len(axis) == 2:
        return _matrix_norm(x, axis, keepdims, ord)
    raise ValueError(f"norm: axis must name 1 or 2 axes, got {axis}")


# --------------------------------------------------------------------------------------
# Decompositions and solvers, on jx.lax.linalg's primitives.

class EighResult(_NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(_NamedTuple):
    Q: object
    R: object


class SlogdetResult(_NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(_NamedTuple):
    U: object
    S: object
    Vh: object


def _jnp():
    """jx.numpy's functions this module uses, taken from their own modules: the
    package itself imports this module."""
    global _JNP
    if _JNP is None:
        import types
        import numpy as np
        from .. import dtypes
        from . import _products, creation, indexing, manipulation, reductions, sorting, ufuncs
        uses = {ufuncs: "abs isnan log sign square where",
                creation: "arange asarray eye zeros",
                manipulation: "broadcast_to concatenate diagonal flip moveaxis tril",
                reductions: "any count_nonzero max prod sum",
                sorting: "argsort", indexing: "take_along_axis", _products: "matmul"}
        names = {n: getattr(mod, n) for mod, ns in uses.items() for n in ns.split()}
        names.update(inf=np.inf, int32=np.int32, finfo=lambda dt: dtypes.finfo(np.dtype(dt)))
        _JNP = types.SimpleNamespace(**names)
    return _JNP


_JNP = None


def _real_only(what: str, *xs):
    """The decompositions (lu, qr, cholesky, eigh, svd) are real: a complex operand
    gets a clear refusal rather than a dtype error from a primitive."""
    if any(_dtypes.is_complex(x.dtype) for x in xs):
        raise NotImplementedError(
            f"jx.numpy.linalg.{what}: complex matrices are not supported yet (jx's "
            "decompositions are real); products, norms and det of up to 3x3 matrices take "
            "complex operands")


def _float_matrix(a, what: str, square: bool = True, complex_ok: bool = False):
    """a promoted to a float dtype, checked to be a (square) matrix in its last two axes;
    complex only where complex_ok."""
    (a,) = _promote_dtypes(a, to_float=True)
    if not complex_ok:
        _real_only(what, a)
    s = _shape_of(a)
    if len(s) < 2 or (square and s[-1] != s[-2]):
        kind = "a square matrix, shape [..., n, n]" if square else "a matrix, shape [..., m, n]"
        raise ValueError(f"jx.numpy.linalg.{what}: the argument must be {kind}; got shape {s}")
    return a


def _mT(x):
    from .manipulation import swapaxes
    return swapaxes(x, -1, -2)


def _permute_rows(b, perm):
    """b[..., perm, :] for a batch of permutations (the batch axes already equal)."""
    return _jnp().take_along_axis(b, perm[..., :, None], axis=-2)


def _broadcast_batch(*xs, cores):
    """xs broadcast to one batch shape; cores[i] is the number of trailing core axes of xs[i]."""
    from ._util import broadcast_shapes
    jnp = _jnp()
    shapes = [_shape_of(x) for x in xs]
    try:
        batch = broadcast_shapes(*[s[:len(s) - k] for s, k in zip(shapes, cores)])
    except _ShapeError:
        raise ValueError(f"the batch axes of shapes {', '.join(map(str, shapes))} (all but "
                         f"the last {', '.join(map(str, cores))} axes) cannot be broadcast "
                         "together") from None
    return [jnp.broadcast_to(x, batch + s[len(s) - k:]) for x, s, k in zip(xs, shapes, cores)]


def _lu_solve(lu, perm, b, trans: int = 0):
    """x with a x = b (trans 0) or a^T x = b (trans 1, 2), from lu's factors of a: a's
    rows `perm` are L U. b is a batch of matrices; batch axes broadcast."""
    lu, perm, b = _broadcast_batch(lu, perm, b, cores=(2, 1, 2))
    if trans == 0:
        x = _permute_rows(b, perm)
        x = _fz.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
        return _fz.triangular_solve(lu, x, left_side=True, lower=False)
    # a^T = U^T L^T P: solve U^T, then L^T, then undo the row permutation
    x = _fz.triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True)
    x = _fz.triangular_solve(lu, x, left_side=True, lower=True, transpose_a=True,
                             unit_diagonal=True)
    return _permute_rows(x, _jnp().argsort(perm, axis=-1))


def _solve_shapes(sa, sb, what: str) -> bool:
    """JAX's rule for solve(a, b): b is a vector when 1-d, else a (batch of) matrices
    whose batch axes broadcast against a's. Returns whether b is a vector."""
    if len(sa) < 2:
        raise ValueError(f"{what}: the left-hand array must be at least 2-d, got shape {sa}")
    if sa[-1] != sa[-2]:
        raise ValueError(f"{what}: a must be square, shape [..., m, m]; got shape {sa}")
    if len(sb) < 1:
        raise ValueError(f"{what}: b must be at least 1-d, got shape {sb}")
    if len(sb) > 1 and len(sa) == len(sb) + 1 and sa[-1] == sb[-1] != sb[-2]:
        raise ValueError(f"{what}: invalid shapes a {sa}, b {sb}: a batch of vectors b is no "
                         "longer a batched 1-d solve (JAX >= 0.5); use solve(a, b[..., None])"
                         "[..., 0]")
    vector = len(sb) == 1
    if (sb[0] if vector else sb[-2]) != sa[-1]:
        raise ValueError(f"{what}: a of shape {sa} needs b of shape ({sa[-1]},) or "
                         f"[..., {sa[-1]}, k]; got shape {sb}")
    return vector


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """L with a = L L^T (or U = L^T with upper); NaNs where a is not positive definite."""
    a = _float_matrix(a, "cholesky")
    factor = _fz.cholesky(a, symmetrize_input=symmetrize_input)
    return _mT(factor) if upper else factor


def qr(a, mode: str = "reduced"):
    """QRResult(Q, R) with a = Q R; mode 'r' gives R alone and 'raw' LAPACK's (h, tau)."""
    a = _float_matrix(a, "qr", square=False)
    if mode == "raw":
        return QRResult(*_qr_raw(a))
    if mode in ("reduced", "r", "full"):
        full_matrices = False
    elif mode == "complete":
        full_matrices = True
    else:
        raise ValueError(f"jx.numpy.linalg.qr: unsupported mode {mode!r} (use 'reduced', "
                         "'complete', 'r' or 'raw')")
    q, r = _fz.qr(a, full_matrices=full_matrices)
    return r if mode == "r" else QRResult(q, r)


def _qr_raw(a):
    """geqrf's compact form (h, tau), transposed as numpy's mode='raw': the Householder
    panel kernel's packed QR of the first min(m, n) columns (tau on its t's diagonal);
    a wide matrix's remaining columns are R's, Q^T a = (I - V t^T V^T) a."""
    jnp = _jnp()
    s = _shape_of(a)
    m, n = s[-2:]
    k = min(m, n)
    if k == 0:
        return _mT(jnp.zeros(s, a.dtype)), jnp.zeros(s[:-2] + (0,), a.dtype)
    packed, t = _fz.householder_panel(a[..., :, :k])
    tau = jnp.diagonal(t, axis1=-2, axis2=-1)
    if n > k:
        v = jnp.tril(packed, -1) + jnp.eye(m, k, dtype=a.dtype)
        rest = a[..., :, k:]
        rest = rest - jnp.matmul(v, jnp.matmul(_mT(t), jnp.matmul(_mT(v), rest)))
        packed = jnp.concatenate([packed, rest], -1)
    return _mT(packed), tau


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """EighResult(eigenvalues ascending, eigenvectors as columns) of symmetric matrices."""
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"jx.numpy.linalg.eigh: UPLO must be None, 'L' or 'U', got {UPLO!r}")
    a = _float_matrix(a, "eigh")
    v, w = _fz.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):
    """The eigenvalues (ascending) of symmetric matrices."""
    return eigh(a, UPLO, symmetrize_input=symmetrize_input)[0]


def _complex_results(name: str):
    raise NotImplementedError(
        f"jx.numpy.linalg.{name}: the eigenvalues of a non-symmetric matrix are complex in "
        "general, and jx has no non-symmetric eigensolver yet; for symmetric matrices use "
        f"jx.numpy.linalg.{'eigh' if name == 'eig' else 'eigvalsh'}")


def eig(a):
    _complex_results("eig")


def eigvals(a):
    _complex_results("eigvals")


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
    """SVDResult(U, S, Vh) with a = U diag(S) Vh, S descending; S alone without compute_uv.
    hermitian: from the eigendecomposition of the symmetric a."""
    a = _float_matrix(a, "svd", square=hermitian)
    if hermitian:
        return _svd_hermitian(a, compute_uv, subset_by_index)
    out = _fz.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                     subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def _svd_hermitian(a, compute_uv: bool, subset_by_index):
    """Singular values |w| of the eigenvalues w, sorted descending (ties in reverse
    index order, as JAX's ascending stable sort then reversal); U the eigenvectors in
    that order and Vh = (U sign(w))^T."""
    jnp = _jnp()
    v, w = _fz.eigh(a, subset_by_index=subset_by_index)
    s = jnp.abs(w)
    order = jnp.flip(jnp.argsort(s, axis=-1, stable=True), axis=-1)
    s_sorted = jnp.take_along_axis(s, order, axis=-1)
    if not compute_uv:
        return s_sorted
    sign = jnp.take_along_axis(jnp.sign(w), order, axis=-1)
    u = jnp.take_along_axis(v, order[..., None, :], axis=-1)
    return SVDResult(u, s_sorted, _mT(u * sign[..., None, :]))


def svdvals(x, /):
    """The singular values, descending."""
    return svd(x, compute_uv=False, hermitian=False)


def solve(a, b):
    """x with a x = b. b 1-d is one vector (a may be a batch); otherwise b is a batch of
    matrices [..., m, k] whose batch axes broadcast against a's (JAX >= 0.5's rule)."""
    a, b = _promote_dtypes(a, b, to_float=True)
    _real_only("solve", a)
    vector = _solve_shapes(_shape_of(a), _shape_of(b), "jx.numpy.linalg.solve")
    if vector:
        b = b[:, None]
    lu, _, perm = _fz.lu(a)
    x = _lu_solve(lu, perm, b)
    return x[..., 0] if vector else x


def inv(a):
    """The inverses of square matrices (NaN/inf where singular, as JAX on the CPU)."""
    a = _float_matrix(a, "inv")
    jnp = _jnp()
    return solve(a, jnp.broadcast_to(jnp.eye(_shape_of(a)[-1], dtype=a.dtype), _shape_of(a)))


def _lu_sign_diag(a):
    """(sign of the row permutation, diagonal of U) from a's LU factorisation."""
    jnp = _jnp()
    lu, pivots, _ = _fz.lu(a)
    swaps = jnp.count_nonzero(pivots != jnp.arange(_shape_of(pivots)[-1], dtype=pivots.dtype),
                              axis=-1)
    sign = jnp.where(swaps % 2 == 1, -1, 1).astype(a.dtype)
    return sign, jnp.diagonal(lu, axis1=-2, axis2=-1)


def det(a):
    """Determinants: closed forms for 2x2 and 3x3 (as JAX), else from the LU factors."""
    a = _float_matrix(a, "det", complex_ok=True)
    n = _shape_of(a)[-1]
    if n == 1:
        return a[..., 0, 0]
    if n == 2:
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    if n == 3:
        e = [[a[..., i, j] for j in range(3)] for i in range(3)]
        return (e[0][0] * e[1][1] * e[2][2] + e[0][1] * e[1][2] * e[2][0]
                + e[0][2] * e[1][0] * e[2][1] - e[0][2] * e[1][1] * e[2][0]
                - e[0][0] * e[1][2] * e[2][1] - e[0][1] * e[1][0] * e[2][2])
    _real_only("det", a)
    sign, diag = _lu_sign_diag(a)
    return sign * _jnp().prod(diag, axis=-1)


def slogdet(a, *, method: str | None = None) -> SlogdetResult:
    """SlogdetResult(sign, log|det|); a singular matrix gives sign 0 and -inf.
    method 'lu' (default) and 'qr' both use the LU factors here."""
    if method not in (None, "lu", "qr"):
        raise ValueError(f"jx.numpy.linalg.slogdet: unknown method {method!r} (use 'lu', "
                         "None or 'qr')")
    jnp = _jnp()
    a = _float_matrix(a, "slogdet")
    n = _shape_of(a)[-1]
    if n in (1, 2):                     # closed forms, as JAX
        d = det(a)
        return SlogdetResult(jnp.sign(d), jnp.log(jnp.abs(d)))
    sign, diag = _lu_sign_diag(a)
    singular = jnp.any(diag == 0, axis=-1)
    negative = jnp.count_nonzero(diag < 0, axis=-1) % 2 == 1
    sign = jnp.where(singular, 0, jnp.where(negative, -sign, sign)).astype(a.dtype)
    logdet = jnp.where(singular, -jnp.inf, jnp.sum(jnp.log(jnp.abs(diag)), axis=-1))
    return SlogdetResult(sign, logdet.astype(a.dtype))


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverses from the SVD; singular values at or below
    rtol * the largest count as zero (default rtol: 10 * max(m, n) * eps)."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("jx.numpy.linalg.pinv: only one of rtol and rcond may be given")
        rtol = rcond
    jnp = _jnp()
    a = _float_matrix(a, "pinv", square=False)
    s = _shape_of(a)
    m, n = s[-2:]
    if m == 0 or n == 0:
        return jnp.zeros(s[:-2] + (n, m), a.dtype)
    if rtol is None:
        rtol = 10.0 * max(m, n) * float(jnp.finfo(a.dtype).eps)
    u, sv, vh = svd(a, full_matrices=False, hermitian=hermitian)
    cutoff = jnp.asarray(rtol)[..., None] * sv[..., 0:1]
    sv = jnp.where(sv > cutoff, sv, jnp.inf).astype(a.dtype)
    return jnp.matmul(_mT(vh), _mT(u) / sv[..., :, None]).astype(a.dtype)


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
    """The number of singular values above rtol (default: the largest singular value
    times max(m, n) * eps); note JAX compares with rtol itself when it is given."""
    if tol is not None:
        if rtol is not None:
            raise ValueError("jx.numpy.linalg.matrix_rank: only one of tol and rtol may "
                             "be given")
        rtol = tol
    jnp = _jnp()
    (M,) = _promote_dtypes(M, to_float=True)
    s = _shape_of(M)
    if len(s) < 2:
        return jnp.any(M != 0).astype(jnp.int32)
    sv = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        rtol = jnp.max(sv, axis=-1) * (max(s[-2:]) * float(jnp.finfo(sv.dtype).eps))
    return jnp.sum(sv > jnp.asarray(rtol)[..., None], axis=-1)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """(x, residuals, rank, singular values) minimising |a x - b|, from the SVD of the
    2-d a. Residuals are |b - a x|^2 per column, always (numpy_resid: empty where
    NumPy gives none, rank < n or m <= n, which needs concrete values)."""
    jnp = _jnp()
    a, b = _promote_dtypes(a, b, to_float=True)
    _real_only("lstsq", a)
    sa, sb = _shape_of(a), _shape_of(b)
    if not sa or not sb or sa[0] != sb[0]:
        raise ValueError(f"jx.numpy.linalg.lstsq: the leading axes of a {sa} and b {sb} "
                         "must match")
    if len(sa) != 2:
        raise TypeError(f"jx.numpy.linalg.lstsq: a must be 2-d, got shape {sa}")
    vector = len(sb) == 1
    if vector:
        b = b[:, None]
    if len(_shape_of(b)) != 2:
        raise TypeError(f"jx.numpy.linalg.lstsq: b must be 1-d or 2-d, got shape {sb}")
    m, n = sa
    if m == 0 or n == 0:
        s = jnp.zeros((0,), a.dtype)
        rank = jnp.asarray(0)
        x = jnp.zeros((n, _shape_of(b)[1]), a.dtype)
    else:
        eps = float(jnp.finfo(a.dtype).eps)
        rcond = eps * max(m, n) if rcond is None else jnp.where(jnp.asarray(rcond) < 0, eps,
                                                                rcond)
        u, s, vt = svd(a, full_matrices=False)
        mask = (s > 0) & (s >= jnp.asarray(rcond, dtype=s.dtype) * s[0])
        rank = jnp.sum(mask)
        s_inv = jnp.where(mask, 1 / jnp.where(mask, s, 1), 0)[:, None]
        x = jnp.matmul(vt.T, s_inv * jnp.matmul(u.T, b))
    if numpy_resid and (rank < n or m <= n):
        resid = jnp.zeros((0,), a.dtype)
    else:
        resid = jnp.sum(jnp.square(b - jnp.matmul(a, x)), axis=0)
    return (x.ravel() if vector else x), resid, rank, s


def cond(x, p=None):
    """Condition numbers in the p-norm (None and 2: largest / smallest singular value);
    NaN becomes inf where x has no NaN (singular matrices), as in JAX."""
    jnp = _jnp()
    (x,) = _promote_dtypes(x, to_float=True)
    s = _shape_of(x)
    if len(s) < 2:
        raise ValueError(f"jx.numpy.linalg.cond: the input must be at least 2-d, got shape {s}")
    if 0 in s[-2:]:
        raise ValueError(f"jx.numpy.linalg.cond: the input must not be empty, got shape {s}")
    if p is None or p == 2:
        sv = svdvals(x)
        return sv[..., 0] / sv[..., -1]
    if p == -2:
        sv = svdvals(x)
        r = sv[..., -1] / sv[..., 0]
    else:
        if s[-1] != s[-2]:
            raise ValueError(f"jx.numpy.linalg.cond: p={p!r} needs square matrices, got "
                             f"shape {s}")
        r = norm(x, p, (-2, -1)) * norm(inv(x), p, (-2, -1))
    return jnp.where(jnp.isnan(r) & ~jnp.any(jnp.isnan(x), axis=(-2, -1)), jnp.inf, r)


def tensorinv(a, ind: int = 2):
    """The inverse of a as a linear map from its first `ind` axes to the rest."""
    import math
    a = _jnp().asarray(a)
    ind = _operator.index(ind)
    if ind <= 0:
        raise ValueError(f"jx.numpy.linalg.tensorinv: ind must be a positive integer, got {ind}")
    s = _shape_of(a)
    head, tail = s[:ind], s[ind:]
    if math.prod(head) != math.prod(tail):
        raise ValueError(f"jx.numpy.linalg.tensorinv: the first {ind} axes of shape {s} must "
                         "hold as many elements as the others")
    return inv(a.reshape(math.prod(head), math.prod(tail))).reshape(*tail, *head)


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) = b."""
    import math
    jnp = _jnp()
    a, b = jnp.asarray(a), jnp.asarray(b)
    if axes is not None:
        a = jnp.moveaxis(a, axes, len(axes) * (a.ndim - 1,))
    sa, sb = _shape_of(a), _shape_of(b)
    out_shape = sa[len(sb):]
    if sa[:len(sb)] != sb:
        raise ValueError(f"jx.numpy.linalg.tensorsolve: after moving axes, a's leading shape "
                         f"{sa[:len(sb)]} must be b's shape {sb}")
    if math.prod(sb) != math.prod(out_shape):
        raise ValueError(f"jx.numpy.linalg.tensorsolve: a of shape {sa} is not square as a "
                         f"map onto b's {math.prod(sb)} elements")
    return solve(a.reshape(math.prod(sb), math.prod(out_shape)), b.ravel()).reshape(out_shape)


_DECOMPOSITIONS = ("cholesky", "cond", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv",
                   "lstsq", "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd",
                   "svdvals", "tensorinv", "tensorsolve")

__all__ = ["matmul", "tensordot", "outer", "vecdot", "matrix_transpose", "trace", "diagonal",
           "cross", "matrix_power", "multi_dot", "vector_norm", "matrix_norm", "norm",
           *_DECOMPOSITIONS]
_wrap_public(globals(), __all__)
del annotations
