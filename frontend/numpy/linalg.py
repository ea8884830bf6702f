"""jx.numpy.linalg: the array API's linear-algebra extension, as jax.numpy.linalg.

The functions that need no matrix decomposition are here, built on the
products in _products (dot_general) and on jx.numpy reductions. The
decompositions (cholesky, qr, svd, eigh, inv, solve, ...) come with the
linear-algebra issue: until then each raises a NotImplementedError naming itself.
"""
from __future__ import annotations

import operator as _operator

from ..errors import ShapeError as _ShapeError
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
    if n < 0:
        raise NotImplementedError("jx.numpy.linalg.matrix_power: negative powers need inv, "
                                  "which comes with the linear-algebra issue")
    if n == 0:
        return bcast(eye(s[-1], dtype=x.dtype), s)
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
        raise NotImplementedError(f"matrix norm ord={ord!r} needs the SVD, which comes "
                                  "with the linear-algebra issue")
    raise ValueError(f"matrix norm: unknown ord {ord!r} (use 'fro', 'nuc', +-1, +-2, +-inf)")


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


def _pending(name):
    raise NotImplementedError(f"jx.numpy.linalg.{name} needs a matrix decomposition, "
                              "which comes with the linear-algebra issue")


# The decompositions, with JAX's signatures, each raising until it is written.
def cholesky(a, *, upper=False, symmetrize_input=True):
    _pending("cholesky")


def cond(x, p=None):
    _pending("cond")


def det(a):
    _pending("det")


def eig(a):
    _pending("eig")


def eigh(a, UPLO=None, symmetrize_input=True):
    _pending("eigh")


def eigvals(a):
    _pending("eigvals")


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
    _pending("eigvalsh")


def inv(a):
    _pending("inv")


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    _pending("lstsq")


def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):
    _pending("matrix_rank")


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    _pending("pinv")


def qr(a, mode="reduced"):
    _pending("qr")


def slogdet(a, *, method=None):
    _pending("slogdet")


def solve(a, b):
    _pending("solve")


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    _pending("svd")


def svdvals(x, /):
    _pending("svdvals")


def tensorinv(a, ind=2):
    _pending("tensorinv")


def tensorsolve(a, b, axes=None):
    _pending("tensorsolve")


_DECOMPOSITIONS = ("cholesky", "cond", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv",
                   "lstsq", "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd",
                   "svdvals", "tensorinv", "tensorsolve")

__all__ = ["matmul", "tensordot", "outer", "vecdot", "matrix_transpose", "trace", "diagonal",
           "cross", "matrix_power", "multi_dot", "vector_norm", "matrix_norm", "norm",
           *_DECOMPOSITIONS]
_wrap_public(globals(), [n for n in __all__ if n not in _DECOMPOSITIONS])
del annotations
