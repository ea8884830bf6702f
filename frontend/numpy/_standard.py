"""The array API standard's names (2024.12) that NumPy spells otherwise or lacks:
acos/pow/concat/permute_dims/..., astype, can_cast, isdtype, nextafter,
cumulative_sum/prod, unstack, from_dlpack and the namespace-info object.
(nonzero, searchsorted and the unique family are in _sets.)"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import ShapeError
from ..prims import bitcast as bc
from ..prims import elementwise as ew
from ._util import as_value, bind1, canonical_axis, convert, promote_dtypes, shape_of
from .creation import _check_device, _wrap_public, asarray
from . import manipulation as mp
from . import ufuncs as uf
from ._products import vecdot  # noqa: F401  (also jx.numpy.linalg.vecdot)

# the standard's spellings of NumPy's functions (the same objects, as in JAX)
acos, asin, atan = uf.arccos, uf.arcsin, uf.arctan
acosh, asinh, atanh = uf.arccosh, uf.arcsinh, uf.arctanh
atan2, pow = uf.arctan2, uf.power
bitwise_invert = uf.invert
bitwise_left_shift, bitwise_right_shift = uf.left_shift, uf.right_shift


def astype(x, dtype, /, *, copy=False, device=None):
    """x converted to dtype (dtype None keeps x's); copy=False returns x itself
    when nothing changes, as JAX does."""
    _check_device(device, "astype")
    x = asarray(x)
    if dtype is None:
        return asarray(x, copy=copy)
    return asarray(x, dtypes.canonicalize(dtype, "astype"), copy=copy)


def concat(arrays, /, *, axis=0):
    """concatenate; axis=None flattens every array first."""
    if axis is None:
        return mp.concatenate([mp.ravel(a) for a in arrays], 0)
    return mp.concatenate(arrays, axis)


def permute_dims(a, /, axes):
    return mp.transpose(a, axes)


def matrix_transpose(x, /):
    if len(shape_of(x)) < 2:
        raise ShapeError(f"matrix_transpose: needs at least 2 dims, got shape {shape_of(x)}")
    return mp.swapaxes(x, -1, -2)


def unstack(x, /, *, axis=0):
    """The slices of x along axis, as a tuple."""
    x = asarray(x)
    nd = len(shape_of(x))
    if nd == 0:
        raise ShapeError("unstack: needs an array of at least 1 dim")
    ax = canonical_axis(axis, nd)
    return tuple(mp.squeeze(mp.slice_axis(x, ax, i, i + 1), ax)
                 for i in range(shape_of(x)[ax]))


def _as_dtype(x):
    """A dtype from a dtype-like, an array or a scalar type."""
    if hasattr(x, "dtype") and not isinstance(x, type):
        return np.dtype(x.dtype)
    return np.dtype(getattr(x, "dtype", x))


def can_cast(from_, to, casting="safe"):
    """NumPy's can_cast on the dtypes (an array stands for its dtype), as JAX's."""
    return bool(np.can_cast(_as_dtype(from_), _as_dtype(to), casting))


_KINDS = {
    "bool": lambda d: d.kind == "b",
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: d.kind == "f" or d == dtypes.bfloat16,
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iufc" or d == dtypes.bfloat16,
}


def isdtype(dtype, kind):
    """Whether dtype is of kind: a name of the standard's kinds ('real floating',
    'integral', ...), a dtype, or a tuple of these."""
    dt = _as_dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str) and k in _KINDS:
            if _KINDS[k](dt):
                return True
        elif isinstance(k, str) and k not in ("bool_",) and not _is_dtype_name(k):
            raise ValueError(f"isdtype: unknown kind {k!r}; use one of {sorted(_KINDS)} "
                             "or a dtype")
        elif _as_dtype(k) == dt:
            return True
    return False


def _is_dtype_name(s):
    try:
        np.dtype(s)
        return True
    except TypeError:
        return False


def nextafter(x1, x2, /):
    """The next representable float after x1 towards x2, elementwise, by stepping
    the bit pattern: away from zero adds one ulp, towards zero takes one away."""
    x, y = promote_dtypes(x1, x2, to_float=True)
    if dtypes.is_complex(x.dtype):
        raise TypeError("nextafter does not support complex-valued inputs (no order); "
                        "step the real and imaginary parts separately")
    x, y = mp.broadcast_arrays(x, y)
    dt = x.dtype
    ut = np.dtype(f"uint{dt.itemsize * 8}")
    bits = bind1(bc.bitcast_convert_type, x, new_dtype=ut)
    away = uf.equal(uf.greater(y, x), uf.greater(x, 0))
    one = convert(1, ut)
    stepped = uf.where(away, uf.add(bits, one), uf.subtract(bits, one))
    # from zero: the smallest subnormal, with y's sign
    sign = uf.bitwise_and(bind1(bc.bitcast_convert_type, y, new_dtype=ut),
                          convert(1 << (dt.itemsize * 8 - 1), ut))
    from_zero = uf.bitwise_or(sign, one)
    stepped = uf.where(uf.equal(x, 0), from_zero, stepped)
    out = bind1(bc.bitcast_convert_type, stepped, new_dtype=dt)
    out = uf.where(uf.equal(x, y), y, out)
    return uf.where(uf.logical_or(uf.isnan(x), uf.isnan(y)), convert(np.nan, dt), out)


def _cumulative(name, reducer, identity):
    def fn(x, /, *, axis=None, dtype=None, include_initial=False):
        from .reductions import _accumulator, _strong
        x = _strong(as_value(asarray(x)))
        nd = len(shape_of(x))
        if axis is None:
            if nd > 1:
                raise ValueError(f"{name}: axis must be given for a {nd}-d input")
            if nd == 0:
                x, nd = mp.reshape(x, (1,)), 1
            axis = 0
        ax = canonical_axis(axis, nd)
        x = _accumulator(x, dtype, name)
        out = reducer(x, ax)
        if include_initial:
            s = list(shape_of(x))
            s[ax] = 1
            from .creation import full
            out = mp.concatenate([full(tuple(s), identity, out.dtype), out], ax)
        return out
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The array API's {name}: along axis (needed past 1-d), accumulating "
                  "as sum/prod do, with the identity first when include_initial.")
    return fn


def _cumsum(x, ax):
    from .reductions import cumsum
    return cumsum(x, ax)


def _cumprod(x, ax):
    from .reductions import cumprod
    return cumprod(x, ax)


cumulative_sum = _cumulative("cumulative_sum", _cumsum, 0)
cumulative_prod = _cumulative("cumulative_prod", _cumprod, 1)


def copy(a, order=None):
    """A copy of a, as a jx array."""
    return asarray(a, order=order, copy=True)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (NumPy's rules)."""
    from ._util import broadcast_shapes as bs
    return bs(*(tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in shapes))


def array_equal(a1, a2, equal_nan=False):
    """Whether a1 and a2 have one shape and equal elements (a jx bool array)."""
    from .reductions import all as all_
    a, b = asarray(a1), asarray(a2)
    if shape_of(a) != shape_of(b):
        return asarray(False)
    eq = uf.equal(a, b)
    if equal_nan:
        eq = uf.logical_or(eq, uf.logical_and(uf.isnan(a), uf.isnan(b)))
    return all_(eq)


def real(val):
    """The real part; a real array is its own (dtype kept, as JAX)."""
    v = asarray(val)
    return bind1(ew.real, v) if dtypes.is_complex(v.dtype) else v


def imag(val):
    """The imaginary part; zeros of a real array's dtype (as JAX)."""
    v = asarray(val)
    if dtypes.is_complex(v.dtype):
        return bind1(ew.imag, v)
    from .creation import zeros_like
    return zeros_like(v)


def conjugate(x):
    """The complex conjugate; a real array is its own (dtype kept, as JAX)."""
    v = asarray(x)
    return bind1(ew.conj, v) if dtypes.is_complex(v.dtype) else v


conj = conjugate


def angle(z, deg=False):
    """The argument of z, atan2(imag, real), in radians (degrees with deg=True).
    Integers, bools and 0-d floats compute in the default float, strong (as JAX)."""
    v = asarray(z)
    re, im = real(v), imag(v)
    if not dtypes.is_inexact(re.dtype) or (dtypes.is_float(v.dtype) and shape_of(v) == ()):
        dt = dtypes.default_float()
        re, im = (bind1(ew.convert_element_type, p, new_dtype=dt) for p in (re, im))
    out = bind1(ew.atan2, im, re)
    return uf.rad2deg(out) if deg else out


def from_dlpack(x, /, *, device=None, copy=None):
    """A jx array of an object with __dlpack__ (a NumPy array, a jx array, a
    torch CPU tensor, ...), read through NumPy's from_dlpack."""
    _check_device(device, "from_dlpack")
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} has no __dlpack__ method")
    return asarray(np.from_dlpack(x))


__all__ = ["acos", "asin", "atan", "acosh", "asinh", "atanh", "atan2", "pow",
           "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift", "astype", "concat",
           "permute_dims", "matrix_transpose", "unstack", "can_cast", "isdtype", "nextafter",
           "cumulative_sum", "cumulative_prod", "from_dlpack", "vecdot", "copy",
           "broadcast_shapes", "array_equal", "real", "imag", "conjugate", "conj", "angle"]
_wrap_public(globals(), ["astype", "concat", "permute_dims", "matrix_transpose", "unstack",
                         "nextafter", "cumulative_sum", "cumulative_prod", "from_dlpack",
                         "copy", "array_equal", "real", "imag", "conjugate", "angle"])
conj = conjugate
