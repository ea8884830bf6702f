"""What the samplers share: dtype and shape checks worded like JAX's, and draws
under one key per element (the per-element key streams gamma's rejection loop
walks, as JAX's vmapped sampler does)."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..core import bind_like
from ..numpy import _util as u
from ..prims import random_bits as rb
from ._core import _bits_to_unit, _float_bits, _scale_unit, _word_bits, erfinv


def jnp():
    from .. import numpy
    return numpy


def float_dtype(dtype, name: str) -> np.dtype:
    """dtype (None: the default float) canonicalized; JAX's ValueError when not float."""
    dt = dtypes.canonicalize(float if dtype is None else dtype)
    if not dtypes.is_float(dt):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}; "
                         "pass a floating dtype such as jx.numpy.float32")
    return dt


def int_dtype(dtype, name: str) -> np.dtype:
    dt = dtypes.canonicalize(int if dtype is None else dtype)
    if not dtypes.is_int(dt):
        raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dt}; "
                         "pass an integer dtype such as jx.numpy.int32")
    return dt


def shape_tuple(shape) -> tuple:
    if shape is None:
        return ()
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)


def check_shape(name: str, shape: tuple, *param_shapes) -> None:
    """Each parameter shape must broadcast to exactly `shape` (JAX's _check_shape)."""
    for ps in param_shapes:
        try:
            ok = u.broadcast_shapes(tuple(ps), shape) == shape
        except Exception:
            ok = False
        if not ok:
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with "
                             f"the shape argument {shape}, and broadcast to it; got a "
                             f"parameter of shape {tuple(ps)}. Pass shape=None to use the "
                             "parameters' broadcast shape")


def param_shape(name: str, shape, *params) -> tuple:
    """shape (None: the parameters' broadcast shape), checked against the parameters."""
    pshapes = [u.shape_of(u.as_value(p)) for p in params]
    if shape is None:
        return u.broadcast_shapes(*pshapes) if pshapes else ()
    shape = shape_tuple(shape)
    check_shape(name, shape, *pshapes)
    return shape


def check_safe_cast(name: str, dt, *args) -> None:
    """JAX's check that each parameter converts to dt without losing its kind or
    precision: a float64 array with dtype=float32 (x64 on), a complex parameter."""
    for a in args:
        src, weak = u.dtype_weak(a)
        if dtypes.result_type((src, weak), (dt, False))[0] != dt:
            raise dtypes.TypePromotionError(
                f"In arguments to {name}, cannot safely cast argument of type {src} to "
                f"{dt}; cast it first (x.astype({dt})) or pass dtype={src}")


def param(x, dt, shape=None):
    """A parameter as an array of dtype dt (broadcast to shape when given)."""
    v = u.convert(u.as_value(x), dt)
    return v if shape is None else jnp().broadcast_to(v, shape)


# ---------------------------------------------------------------- per-element keys

def key_words(keys):
    """uint32[..., 2] keys -> their (word0, word1) arrays of shape [...]."""
    j = jnp()
    return j.take(keys, 0, axis=-1), j.take(keys, 1, axis=-1)


def threefry_words(k0, k1, x0, x1) -> list:
    """threefry2x32 elementwise: key words and counters all of one shape."""
    return bind_like([k0, k1, x0, x1], rb.threefry2x32, k0, k1, x0, x1)


def _fill(like, value: int):
    return jnp().full(u.shape_of(like), value, dtypes.uint32)


def split_words(kw, num: int) -> list:
    """split(k, num) of every per-element key (k0, k1): num (k0, k1) pairs."""
    k0, k1 = kw
    zero = _fill(k0, 0)
    return [tuple(threefry_words(k0, k1, zero, _fill(k0, i))) for i in range(num)]


def scalar_bits(kw, width: int):
    """The bits of a shape-() draw under each per-element key: counter 0."""
    k0, k1 = kw
    zero = _fill(k0, 0)
    return _word_bits(*threefry_words(k0, k1, zero, zero), width)


def scalar_uniform(kw, dt, lo=0.0, hi=1.0):
    """uniform(k, (), dt, lo, hi) under each per-element key."""
    f = _bits_to_unit(scalar_bits(kw, _float_bits(dt)), dt)
    return _scale_unit(f, np.asarray(lo, dt), np.asarray(hi, dt))


def scalar_normal(kw, dt):
    """normal(k, (), dt) under each per-element key."""
    lo = np.nextafter(np.asarray(-1.0, dt), np.asarray(0.0, dt))
    v = scalar_uniform(kw, dt, lo, 1.0)
    return jnp().multiply(np.asarray(np.sqrt(2.0), dt), erfinv(v))


def size(shape: tuple) -> int:
    return math.prod(shape)
