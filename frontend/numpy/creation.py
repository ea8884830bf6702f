"""Array creation. Outside tracing these return NumPy arrays; inside, constants
(which the graph records as literals) unless built from traced values."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..core import Tracer
from ..prims import structural as st
from ._util import as_value, bind1, broadcast_to, constant as _constant, convert, dtype_weak, \
    shape_of


def _dtype(dtype, default):
    return default if dtype is None else dtypes.canonicalize(dtype)


def asarray(a, dtype=None, copy=None):
    a = as_value(a)
    if dtype is None:
        if isinstance(a, Tracer) or isinstance(a, np.ndarray):
            return a
        return np.asarray(a, dtype=dtype_weak(a)[0])
    return convert(a, dtypes.canonicalize(dtype))


def array(a, dtype=None, copy=True):
    out = asarray(a, dtype)
    return out.copy() if isinstance(out, np.ndarray) and copy else out


def _shape(shape) -> tuple:
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)


def full(shape, fill_value, dtype=None):
    shape = _shape(shape)
    dt = _dtype(dtype, dtype_weak(fill_value)[0])
    v = convert(as_value(fill_value), dt)
    if isinstance(v, Tracer):
        return broadcast_to(v, shape)
    return _constant(lambda s, d: np.full(s, v, dtype=d), shape, np.dtype(dt), "full")


def zeros(shape, dtype=None):
    return _constant(np.zeros, _shape(shape), np.dtype(_dtype(dtype, dtypes.default_float)),
                     "zeros")


def ones(shape, dtype=None):
    return _constant(np.ones, _shape(shape), np.dtype(_dtype(dtype, dtypes.default_float)),
                     "ones")


def empty(shape, dtype=None):
    return zeros(shape, dtype)


def _like(a, dtype):
    return shape_of(a), (dtype_weak(as_value(a))[0] if dtype is None else dtype)


def zeros_like(a, dtype=None, shape=None):
    s, dt = _like(a, dtype)
    return zeros(s if shape is None else shape, dt)


def ones_like(a, dtype=None, shape=None):
    s, dt = _like(a, dtype)
    return ones(s if shape is None else shape, dt)


def full_like(a, fill_value, dtype=None, shape=None):
    s, dt = _like(a, dtype)
    return full(s if shape is None else shape, fill_value, dt)


empty_like = zeros_like


def arange(start, stop=None, step=1, dtype=None):
    for v in (start, stop, step):
        if isinstance(v, Tracer):
            raise TypeError("jx.numpy.arange needs static bounds (Python numbers); the "
                            "length of a compiled array cannot depend on traced values")
    if stop is None:
        start, stop = 0, start
    is_int = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    dt = _dtype(dtype, dtypes.default_int if is_int else dtypes.default_float)
    if step:                      # NumPy's own error names a zero step
        # counted exactly: NumPy's int64 count wraps (arange(2**63) came back empty)
        n = -((int(start) - int(stop)) // int(step)) if is_int else \
            math.ceil((stop - start) / step)
        return _constant(lambda s, d: np.arange(start, stop, step).astype(d),
                         (max(n, 0),), np.dtype(dt), "arange")
    return np.arange(start, stop, step).astype(dt)


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    """Integer dtypes round towards -inf, as NumPy 2 does."""
    dt = _dtype(dtype, dtypes.default_float)
    if isinstance(start, Tracer) or isinstance(stop, Tracer):
        from .ufuncs import add, floor, multiply, subtract, where
        div = (num - 1) if endpoint else num
        steps = np.arange(num, dtype=np.float64) / max(div, 1)
        ft = dt if dtypes.is_float(dt) else dtypes.default_float
        lo, hi = convert(as_value(start), ft), convert(as_value(stop), ft)
        out = add(lo, multiply(subtract(hi, lo), steps.astype(ft)))
        if endpoint and num > 1:  # the last point is stop exactly
            out = where(np.arange(num) == num - 1, hi, out)
        return out if dtypes.is_float(dt) else convert(floor(out), dt)
    return np.linspace(start, stop, num, endpoint=endpoint, dtype=dt)


def eye(N, M=None, k=0, dtype=None):
    shape = (int(N), int(N if M is None else M))
    return _constant(lambda s, d: np.eye(*s, k, dtype=d), shape,
                     np.dtype(_dtype(dtype, dtypes.default_float)), "eye")


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    shape = (int(N), int(N if M is None else M))
    return _constant(lambda s, d: np.tri(*s, k, dtype=d), shape,
                     np.dtype(_dtype(dtype, dtypes.default_float)), "tri")


def iota(dtype, shape, dimension=0):
    """Staged iota: inside tracing it is a primitive, outside a NumPy array."""
    return bind1(st.iota, dtype=np.dtype(dtype), shape=tuple(shape), dimension=dimension)


__all__ = [n for n, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__ and n[0] != "_"]
