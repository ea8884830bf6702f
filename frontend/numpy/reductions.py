"""Reductions with NumPy's axis/keepdims conventions and JAX's result dtypes."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..core import bind_like
from ..dims import Dim
from ..prims import elementwise as ew
from ..prims import reductions as rd
from ..prims import structural as st
from ..prims import symbolic
from ..errors import EmptyReductionError, ShapeError, user_location
from .creation import _wrap_public
from ._util import as_value, bind1, canonical_axes, canonical_axis, convert, dtype_weak, \
    promote_dtypes, shape_of


def _restore(out, axes, keepdims):
    if not keepdims or not axes:
        return out
    return bind1(st.expand_dims, out, dimensions=tuple(sorted(axes)))


def _accumulator(x, dtype, where: str = "sum"):
    """Sums and products of bool and narrow ints accumulate in 32 bits, as in JAX:
    int32 for bool and signed, uint32 for unsigned."""
    if dtype is not None:
        return convert(x, dtypes.canonicalize(dtype, where))
    wide = dtypes.default_int().itemsize
    if x.dtype == dtypes.bool_ or (x.dtype.kind == "i" and x.dtype.itemsize < wide):
        return convert(x, dtypes.default_int())
    if x.dtype.kind == "u" and x.dtype.itemsize < wide:
        return convert(x, dtypes.default_uint())
    return x


def _strong(x):
    """x without its weak type: JAX's reductions of a weak value (a Python scalar,
    asarray(2.0)) are strongly typed."""
    from ._util import dtype_weak
    dt, weak = dtype_weak(x)
    return bind1(ew.convert_element_type, x, new_dtype=dt, weak_type=False) if weak else x


def _reducer(prim, sum_like: bool):
    def fn(a, axis=None, dtype=None, keepdims=False, initial=None, where=None):
        (x,) = promote_dtypes(a)
        x = _strong(x)
        if sum_like:
            x = _accumulator(x, dtype, fn.__name__)
        elif dtype is not None:
            x = convert(x, dtypes.canonicalize(dtype, fn.__name__))
        if where is not None:
            x = _masked(prim, x, where, 0 if prim is rd.reduce_sum else 1, initial)
        axes = canonical_axes(axis, len(shape_of(x)))
        if not sum_like and initial is None:
            _check_nonempty(prim, shape_of(x), axes)
        out = _complex_extremum(prim, x, axes) if dtypes.is_complex(x.dtype) and \
            prim in (rd.reduce_max, rd.reduce_min) else bind1(prim, x, axes=axes)
        if initial is not None:
            from .ufuncs import add, maximum, minimum, multiply
            combine = {rd.reduce_sum: add, rd.reduce_prod: multiply,
                       rd.reduce_max: maximum, rd.reduce_min: minimum}[prim]
            out = combine(out, initial)
        return _restore(out, axes, keepdims)
    fn.__name__ = prim.name.replace("reduce_", "")
    return fn


def _complex_extremum(prim, x, axes):
    """max/min of complex numbers in their lexicographic order (as JAX): the extreme
    real part, then the extreme imaginary part among the elements that have it."""
    from .ufuncs import equal, where
    re, im = bind1(ew.real, x), bind1(ew.imag, x)
    best = bind1(prim, re, axes=axes)
    tie = equal(re, _restore(best, axes, True))
    fill = -np.inf if prim is rd.reduce_max else np.inf
    return bind1(ew.complex_, best, bind1(prim, where(tie, im, fill), axes=axes))


def _masked(prim, x, where, identity, initial):
    """x with the elements where= leaves out replaced by the reduction's identity
    (initial for max/min, which have none), as JAX and NumPy do."""
    from .ufuncs import where as select
    if prim in (rd.reduce_max, rd.reduce_min):
        if initial is None:
            name = prim.name.replace("reduce_", "")
            raise EmptyReductionError(
                f"reduction operation {name} does not have an identity, so to use a where "
                f"mask one has to specify 'initial' (at {user_location()})")
        identity = initial
    return select(where, x, convert(identity, x.dtype, [x]))


def _check_nonempty(prim, shape, axes):
    """max/min have no identity: over a size-0 axis NumPy and JAX raise rather than
    return -inf/+inf, unless an initial value is given."""
    empty = [a for a in axes if shape[a] == 0]
    if empty:
        name = prim.name.replace("reduce_", "")
        where = user_location()
        raise EmptyReductionError(
            f"zero-size array to reduction operation {name} which has no identity: axis "
            f"{empty[0]} of an array of shape {tuple(shape)} has size 0"
            + (f" (at {where})" if where else "")
            + f"; pass initial= (e.g. {name}(x, axis, initial=0.0)) or reduce a non-empty "
            "axis")


sum = _reducer(rd.reduce_sum, True)
prod = _reducer(rd.reduce_prod, True)
max = _reducer(rd.reduce_max, False)
min = _reducer(rd.reduce_min, False)
amax, amin = max, min


def _count(shape, axes):
    """The number of elements the axes hold: an int, or a symbolic dimension."""
    n = math.prod(shape[a] for a in axes)
    return n if isinstance(n, Dim) else int(n)


def _count_value(n, like):
    """n as a divisor of the array `like`: a Python float, or for a symbolic n its
    size as a value (dimension_size, staged into like's trace), which the symbols'
    values give when the code runs."""
    if not isinstance(n, Dim):
        return float(n)
    (size,) = bind_like((like,), symbolic.dimension_size, dim=n,
                        dtype=dtypes.canonical(np.dtype(np.int64)))
    return convert(size, like.dtype)


def _computation(dtype):
    """16-bit floats are averaged in float32 and rounded once at the end, as JAX's
    mean and var do (rounding each partial result to 16 bits loses digits)."""
    return dtypes.float32 if dtypes.is_half(dtype) else dtype


def mean(a, axis=None, dtype=None, keepdims=False):
    from .ufuncs import divide
    (x,) = promote_dtypes(a, to_float=True)
    result = dtypes.canonicalize(dtype, "mean") if dtype is not None else x.dtype
    x = convert(x, _computation(result))
    axes = canonical_axes(axis, len(shape_of(x)))
    out = divide(sum(x, axes, keepdims=keepdims), _count_value(_count(shape_of(x), axes), x))
    return convert(out, result)


def _ddof(ddof, correction, where):
    """The array API's correction= is NumPy's ddof= by another name (JAX's rule:
    not both)."""
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"{where}: pass ddof or correction, not both")
    return correction


def var(a, axis=None, dtype=None, ddof=0, keepdims=False, *, correction=None):
    from .ufuncs import add, divide, square, subtract
    ddof = _ddof(ddof, correction, "var")
    (x,) = promote_dtypes(a, to_float=True)
    result = dtypes.canonicalize(dtype, "var") if dtype is not None else x.dtype
    x = convert(x, _computation(result))
    axes = canonical_axes(axis, len(shape_of(x)))
    centered = subtract(x, mean(x, axes, keepdims=True))
    if dtypes.is_complex(centered.dtype):       # |x - mean|^2: real, as JAX
        squares = add(square(bind1(ew.real, centered)), square(bind1(ew.imag, centered)))
        result = dtypes.real_dtype(result)
    else:
        squares = square(centered)
    n = _count(shape_of(x), axes) - ddof
    return convert(divide(sum(squares, axes, keepdims=keepdims), _count_value(n, x)), result)


def std(a, axis=None, dtype=None, ddof=0, keepdims=False, *, correction=None):
    from .ufuncs import sqrt
    return sqrt(var(a, axis, dtype, _ddof(ddof, correction, "std"), keepdims))


def _logical(prim, a, axis, keepdims):
    """any/all: on bools max/min have identities (False, True), so empty axes are fine."""
    x = convert(as_value(a), dtypes.bool_)
    axes = canonical_axes(axis, len(shape_of(x)))
    return _restore(bind1(prim, x, axes=axes), axes, keepdims)


def any(a, axis=None, keepdims=False):
    return _logical(rd.reduce_max, a, axis, keepdims)


def all(a, axis=None, keepdims=False):
    return _logical(rd.reduce_min, a, axis, keepdims)


def _arg(prim):
    def fn(a, axis=None, keepdims=False):
        x = as_value(a)
        if dtypes.is_complex(dtype_weak(x)[0]):
            raise TypeError(f"{prim.name} does not support complex-valued inputs (JAX "
                            "rejects them); compare their real parts or absolute values")
        ndim = len(shape_of(x))
        _check_arg_nonempty(prim.name, shape_of(x), axis)
        if axis is None:
            from .manipulation import ravel, reshape
            out = bind1(prim, ravel(x), axis=0, index_dtype=dtypes.default_int())
            return reshape(out, (1,) * ndim) if keepdims else out
        ax = canonical_axis(axis, ndim)
        out = bind1(prim, x, axis=ax, index_dtype=dtypes.default_int())
        return _restore(out, (ax,), keepdims)
    fn.__name__ = prim.name
    return fn


def _check_arg_nonempty(name, shape, axis):
    """An arg-reduction over no elements has no answer: ValueError, as NumPy and JAX."""
    n = (int(np.prod(shape, dtype=np.int64)) if axis is None
         else shape[canonical_axis(axis, len(shape))])
    if n == 0:
        where = user_location()
        raise EmptyReductionError(
            f"attempt to get {name} of an empty sequence: "
            + ("the array" if axis is None else f"axis {axis}")
            + f" of shape {tuple(shape)} has no elements" + (f" (at {where})" if where else "")
            + "; reduce a non-empty axis (an arg-reduction takes no initial value)")


argmax = _arg(rd.argmax)
argmin = _arg(rd.argmin)


def _cumulative(prim):
    def fn(a, axis=None, dtype=None, reverse=False):
        (x,) = promote_dtypes(a)
        x = _strong(x)
        # unlike sum and prod, JAX's running sums and products keep narrow ints
        # (int8 stays int8); only bools count in int32
        if dtype is not None or x.dtype == dtypes.bool_:
            x = _accumulator(x, dtype)
        if axis is None:
            from .manipulation import ravel
            x, axis = ravel(x), 0
        return bind1(prim, x, axis=canonical_axis(axis, len(shape_of(x))), reverse=reverse)
    fn.__name__ = prim.name
    return fn


cumsum = _cumulative(rd.cumsum)
cumprod = _cumulative(rd.cumprod)


def count_nonzero(a, axis=None, keepdims=False):
    from .ufuncs import not_equal
    return sum(not_equal(as_value(a), 0), axis, keepdims=keepdims)


def ptp(a, axis=None, keepdims=False):
    from .ufuncs import subtract
    return subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    from .ufuncs import divide, multiply
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        n = float(_count(shape_of(a), canonical_axes(axis, len(shape_of(a)))))
        return (avg, np.asarray(n, dtype=np.dtype(avg.dtype))) if returned else avg
    x, w = promote_dtypes(a, weights, to_float=True)
    sx, sw = shape_of(x), shape_of(w)
    if sw != sx:   # 1-d weights along one axis, as NumPy allows
        if axis is None or len(sw) != 1:
            raise ShapeError(f"average: weights of shape {sw} need the shape of a {sx}, "
                             "or 1-d weights with an axis")
        from .manipulation import reshape
        ax = canonical_axis(axis, len(sx))
        w = reshape(w, tuple(n if i == ax else 1 for i, n in enumerate(sx)))
    wsum = sum(multiply(w, np.ones(sx, dtype=np.dtype(x.dtype))), axis, keepdims=keepdims)
    avg = divide(sum(multiply(x, w), axis, keepdims=keepdims), wsum)
    return (avg, wsum) if returned else avg


def _nan_to(a, value):
    from .ufuncs import isnan, where
    (x,) = promote_dtypes(a)
    return where(isnan(x), value, x) if dtypes.is_inexact(x.dtype) else x


def nansum(a, axis=None, dtype=None, keepdims=False):
    return sum(_nan_to(a, 0), axis, dtype, keepdims)


def nanprod(a, axis=None, dtype=None, keepdims=False):
    return prod(_nan_to(a, 1), axis, dtype, keepdims)


def _nan_extreme(reducer, fill):
    def fn(a, axis=None, keepdims=False):
        from .ufuncs import isnan, where
        (x,) = promote_dtypes(a)
        if not dtypes.is_inexact(x.dtype):
            return reducer(x, axis, keepdims=keepdims)
        out = reducer(where(isnan(x), fill, x), axis, keepdims=keepdims)
        return where(all(isnan(x), axis, keepdims=keepdims), np.nan, out)  # all-NaN: NaN
    fn.__name__ = "nan" + reducer.__name__
    return fn


nanmax = _nan_extreme(max, -np.inf)
nanmin = _nan_extreme(min, np.inf)


def nanmean(a, axis=None, dtype=None, keepdims=False):
    from .ufuncs import divide, isnan, logical_not
    (x,) = promote_dtypes(a, to_float=True)
    if dtype is not None:
        x = convert(x, dtypes.canonicalize(dtype, "nanmean"))
    n = sum(logical_not(isnan(x)), axis, keepdims=keepdims)
    return divide(nansum(x, axis, keepdims=keepdims), convert(n, x.dtype, [x]))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    from .ufuncs import isclose
    return all(isclose(a, b, rtol, atol, equal_nan))


__all__ = [n for n, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__ and n[0] != "_"]
_wrap_public(globals(), __all__)
