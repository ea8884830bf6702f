"""Reductions with NumPy's axis/keepdims conventions and JAX's result dtypes."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..prims import reductions as rd
from ..prims import structural as st
from ._util import as_value, bind1, canonical_axes, canonical_axis, convert, promote_dtypes, \
    shape_of


def _restore(out, axes, keepdims):
    if not keepdims or not axes:
        return out
    return bind1(st.expand_dims, out, dimensions=tuple(sorted(axes)))


def _accumulator(x, dtype):
    """Sums and products of bool and narrow ints accumulate in 32 bits, as in JAX:
    int32 for bool and signed, uint32 for unsigned."""
    if dtype is not None:
        return convert(x, dtypes.canonicalize(dtype))
    if x.dtype == dtypes.bool_ or (x.dtype.kind == "i" and x.dtype.itemsize < 4):
        return convert(x, dtypes.default_int)
    if x.dtype.kind == "u" and x.dtype.itemsize < 4:
        return convert(x, dtypes.uint32)
    return x


def _reducer(prim, sum_like: bool):
    def fn(a, axis=None, dtype=None, keepdims=False, initial=None):
        (x,) = promote_dtypes(a)
        if sum_like:
            x = _accumulator(x, dtype)
        elif dtype is not None:
            x = convert(x, dtypes.canonicalize(dtype))
        axes = canonical_axes(axis, len(shape_of(x)))
        out = bind1(prim, x, axes=axes)
        if initial is not None:
            from .ufuncs import add, maximum, minimum, multiply
            combine = {rd.reduce_sum: add, rd.reduce_prod: multiply,
                       rd.reduce_max: maximum, rd.reduce_min: minimum}[prim]
            out = combine(out, initial)
        return _restore(out, axes, keepdims)
    fn.__name__ = prim.name.replace("reduce_", "")
    return fn


sum = _reducer(rd.reduce_sum, True)
prod = _reducer(rd.reduce_prod, True)
max = _reducer(rd.reduce_max, False)
min = _reducer(rd.reduce_min, False)
amax, amin = max, min


def _count(shape, axes) -> int:
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def mean(a, axis=None, dtype=None, keepdims=False):
    (x,) = promote_dtypes(a, to_float=True)
    if dtype is not None:
        x = convert(x, dtypes.canonicalize(dtype))
    axes = canonical_axes(axis, len(shape_of(x)))
    from .ufuncs import divide
    return divide(sum(x, axes, keepdims=keepdims), float(_count(shape_of(x), axes)))


def var(a, axis=None, dtype=None, ddof=0, keepdims=False):
    from .ufuncs import divide, square, subtract
    (x,) = promote_dtypes(a, to_float=True)
    axes = canonical_axes(axis, len(shape_of(x)))
    centered = subtract(x, mean(x, axes, keepdims=True))
    n = _count(shape_of(x), axes) - ddof
    return divide(sum(square(centered), axes, keepdims=keepdims), float(n))


def std(a, axis=None, dtype=None, ddof=0, keepdims=False):
    from .ufuncs import sqrt
    return sqrt(var(a, axis, dtype, ddof, keepdims))


def any(a, axis=None, keepdims=False):
    return max(convert(as_value(a), dtypes.bool_), axis, keepdims=keepdims)


def all(a, axis=None, keepdims=False):
    return min(convert(as_value(a), dtypes.bool_), axis, keepdims=keepdims)


def _arg(prim):
    def fn(a, axis=None, keepdims=False):
        x = as_value(a)
        ndim = len(shape_of(x))
        if axis is None:
            from .manipulation import ravel, reshape
            out = bind1(prim, ravel(x), axis=0, index_dtype=dtypes.default_int)
            return reshape(out, (1,) * ndim) if keepdims else out
        ax = canonical_axis(axis, ndim)
        out = bind1(prim, x, axis=ax, index_dtype=dtypes.default_int)
        return _restore(out, (ax,), keepdims)
    fn.__name__ = prim.name
    return fn


argmax = _arg(rd.argmax)
argmin = _arg(rd.argmin)


def _cumulative(prim):
    def fn(a, axis=None, dtype=None, reverse=False):
        (x,) = promote_dtypes(a)
        x = _accumulator(x, dtype)
        if axis is None:
            from .manipulation import ravel
            x, axis = ravel(x), 0
        return bind1(prim, x, axis=canonical_axis(axis, len(shape_of(x))), reverse=reverse)
    fn.__name__ = prim.name
    return fn


cumsum = _cumulative(rd.cumsum)
cumprod = _cumulative(rd.cumprod)


__all__ = [n for n, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__ and n[0] != "_"]
