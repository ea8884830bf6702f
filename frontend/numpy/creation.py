"""Array creation, and the conversion of NumPy values and Python scalars into
the array type bind returns for concrete values.

Every function here goes through primitives, concrete or traced alike: on
concrete inputs bind runs them eagerly, so the results are what jx's eager
mode returns (jx arrays, with JAX's dtypes and weak types), never a NumPy
array that NumPy's own promotion or mutation would later act on. Values built
from Python scalars alone stay weak-typed, as in JAX (full(3, 2.0),
zeros_like(1.0), asarray(2))."""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import dtypes
from ..core import Tracer, bind_like
from ..dims import Dim
from ..errors import OutOfMemoryError, ShapeError, user_location
from ..ir import extent_problem
from ..prims import elementwise as ew
from ..prims import structural as st
from ._util import as_value, bind1, broadcast_shapes, broadcast_to, convert, dtype_weak, \
    has_tracer, is_scalar_const, shape_of


def _check_device(device, where):
    """jx arrays live on the host: None, "cpu" and jx's CPU devices are accepted."""
    from ..array import Device
    if device is None or device == "cpu" or isinstance(device, Device):
        return
    raise ValueError(f"{where}: device {device!r} is not available; jx arrays live on "
                     "the cpu (pass device=None or 'cpu')")


def _dtype(dtype, default, where: str):
    return default if dtype is None else dtypes.canonicalize(dtype, where)


def _is_raw(x) -> bool:
    """A NumPy array or scalar, or a Python scalar: what bind never returns."""
    return type(x) is np.ndarray or isinstance(x, np.generic) or is_scalar_const(x)


def _materialize(x):
    """A raw value as the array type of eager results (one convert_element_type
    bind: a copy, so the caller's later writes to a NumPy array do not show);
    tracers and arrays already of that type come back unchanged."""
    if isinstance(x, tuple) and hasattr(x, "_fields"):        # a NamedTuple result
        return type(x)._make(_materialize(v) for v in x)
    if isinstance(x, (list, tuple)):
        return type(x)(_materialize(v) for v in x)
    if not _is_raw(x):
        return x
    dt, weak = dtype_weak(x)
    return bind1(ew.convert_element_type, x, new_dtype=dt, weak_type=weak)


def _returns_arrays(fn):
    """fn whose results (or list/tuple of results) are never raw NumPy values:
    functions that may hand back their input unchanged (reshape to the same
    shape, a 0-d squeeze, ...) return a jx array for a NumPy input, as JAX does."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        if isinstance(out, (list, tuple)) or _is_raw(out):
            return _materialize(out)
        return out
    return wrapper


def _wrap_public(namespace: dict, names) -> None:
    """Apply _returns_arrays to the module's public functions (classes and
    custom_jvp objects are left alone)."""
    import types
    for n in names:
        fn = namespace.get(n)
        if isinstance(fn, types.FunctionType):
            namespace[n] = _returns_arrays(fn)


def _build(what: str, shape: tuple, dt, make):
    """make() (the binds that build a constant of shape and dtype dt), with jx's
    errors naming `what`, the shape and the user's line (not NumPy's or a
    primitive's): constants are built eagerly, even inside a trace."""
    dt = np.dtype(dt)

    def at():                   # the user's line, looked up only for an error
        where = user_location()
        return f" (at {where})" if where else ""
    problem = f"shape {shape} has a negative dimension" if any(d < 0 for d in shape) \
        else extent_problem(shape, dt)
    if problem:
        raise ShapeError(f"jx.numpy.{what}: {problem}{at()}")
    try:
        return make()
    except (MemoryError, OutOfMemoryError):
        nbytes = math.prod(shape) * dt.itemsize
        raise OutOfMemoryError(
            f"jx.numpy.{what}({shape}, {dt.name}){at()}: its {nbytes:.3g} bytes could not be "
            "allocated: constants are built in full, even while tracing; use smaller shapes "
            "or build the value from a traced one (e.g. jnp.broadcast_to(x, shape)), which "
            "compiled code computes without storing it") from None


def _check_order(order):
    if order not in (None, "K", "C", "A"):
        raise NotImplementedError(f"jx arrays are row-major: order={order!r} is not "
                                  "supported (use 'C', 'K' or None)")


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    """a as a jx array. Concrete values are copied into an immutable array when
    they are NumPy arrays or Python values (as JAX's device_put does); a jx array
    of the requested dtype comes back itself unless copy=True. copy=False never
    raises (as in JAX: a NumPy buffer is always copied). Lists convert straight
    to an explicit dtype: asarray([16777217.0], float64) does not go through
    float32."""
    _check_device(device, "asarray")
    _check_order(order)
    dt = None if dtype is None else dtypes.canonicalize(dtype, "asarray")
    if dt is not None and isinstance(a, (list, tuple)) and not has_tracer(a):
        try:
            raw = np.asarray(a, dtype=dt)
        except (TypeError, ValueError) as e:
            raise TypeError(f"cannot make a {dt} array of {a!r:.80}: {e}") from None
        return bind1(ew.convert_element_type, raw, new_dtype=dt)
    a = as_value(a)
    if isinstance(a, Tracer):
        if dt is not None and a.dtype == dt and a.weak_type:   # an explicit dtype is strong
            return bind1(ew.convert_element_type, a, new_dtype=dt, weak_type=False)
        return a if dt is None or a.dtype == dt else convert(a, dt)
    src, weak = dtype_weak(a)
    if dt is None:
        dt = src
    else:
        weak = False
    if not _is_raw(a) and src == dt and not copy and a.weak_type == weak:
        return a
    if is_scalar_const(a) and not weak:
        a = convert(a, dt)          # range-checked: asarray(300, uint8) is an OverflowError
    return bind1(ew.convert_element_type, a, new_dtype=dt, weak_type=weak)


class _ScalarMeta(type):
    """The type of jx.numpy.float32, int32, bool_, ...: as in JAX, calling one makes
    a strongly typed jx array (jnp.float32(2), jnp.int32(x) = x.astype(int32),
    traced values too), and it stands for its dtype wherever a dtype is expected:
    .dtype, np.dtype(jnp.float32), equality with and hashing as np.float32 (so
    dtype tables keyed by NumPy types find it), isinstance of NumPy scalars."""

    def __call__(cls, x):
        dt = dtypes.canonicalize(cls.dtype, "asarray")
        x = as_value(x)
        if isinstance(x, Tracer):
            same = x.dtype == dt and not x.weak_type
            return x if same else bind1(ew.convert_element_type, x, new_dtype=dt,
                                        weak_type=False)
        return asarray(x, dt)

    def __eq__(cls, other):
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other):
        return not cls == other

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'jx.numpy.{cls.__name__}'>"


def _scalar_type(np_type):
    """jx.numpy's counterpart of a NumPy scalar type (see _ScalarMeta)."""
    name = np.dtype(np_type).name if np_type is not np.bool_ else "bool_"
    return _ScalarMeta(name, (object,), {"dtype": np.dtype(np_type), "__module__": "jx.numpy",
                                         "__doc__": f"{name}(x): x as a strongly typed "
                                                    f"{np.dtype(np_type).name} jx array"})


def array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None):
    """jx.numpy.array: like asarray, but copies a jx array unless copy=False."""
    _check_device(device, "array")
    out = asarray(object, dtype, order, copy=True if copy else None)
    nd = len(shape_of(out))
    if ndmin > nd:
        out = bind1(st.reshape, out, new_sizes=(1,) * (ndmin - nd) + shape_of(out))
    return out


def _shape(shape) -> tuple:
    """A shape argument as a tuple of sizes: ints, or symbolic (jx.dims.Dim), which
    make the value part of the trace being built (core.bind_like)."""
    def size(s):
        return s if isinstance(s, Dim) else int(s)
    return (size(shape),) if isinstance(shape, Dim) or np.ndim(shape) == 0 else \
        tuple(size(s) for s in shape)


def _full(shape, value, dt, weak, what):
    """value (a scalar or an array broadcasting to shape) filled into shape, as dt."""
    v = convert(as_value(value), dt)
    if isinstance(v, Tracer):
        return broadcast_to(v, shape)
    v = bind1(ew.convert_element_type, v, new_dtype=dt, weak_type=weak)
    return _build(what, shape, dt, lambda: broadcast_to(v, shape))


def full(shape, fill_value, dtype=None, *, device=None):
    _check_device(device, "full")
    dt, weak = dtype_weak(as_value(fill_value))
    return _full(_shape(shape), fill_value, _dtype(dtype, dt, "full"), dtype is None and weak, "full")


def zeros(shape, dtype=None, *, device=None):
    _check_device(device, "zeros")
    return _full(_shape(shape), 0, _dtype(dtype, dtypes.default_float(), "zeros"), False, "zeros")


def ones(shape, dtype=None, *, device=None):
    _check_device(device, "ones")
    return _full(_shape(shape), 1, _dtype(dtype, dtypes.default_float(), "ones"), False, "ones")


def empty(shape, dtype=None, *, device=None):
    _check_device(device, "empty")
    return zeros(shape, dtype)


def _like(a, dtype, shape, value, what):
    """The *_like functions: a's shape and dtype, weak when a is and no dtype is given."""
    a = as_value(a)
    dt, weak = dtype_weak(a)
    s = shape_of(a) if shape is None else _shape(shape)
    dt, weak = _dtype(dtype, dt, what), dtype is None and weak
    if isinstance(a, Tracer) and any(isinstance(d, Dim) for d in s):
        # a symbolic size: no constant can hold it, so the fill joins a's trace
        v = bind1(ew.convert_element_type, convert(as_value(value), dt), new_dtype=dt,
                  weak_type=weak)
        return bind_like((a,), st.broadcast_in_dim, v, shape=tuple(s),
                         broadcast_dimensions=())[0]
    return _full(s, value, dt, weak, what)


def zeros_like(a, dtype=None, shape=None, *, device=None):
    _check_device(device, "zeros_like")
    return _like(a, dtype, shape, 0, "zeros_like")


def ones_like(a, dtype=None, shape=None, *, device=None):
    _check_device(device, "ones_like")
    return _like(a, dtype, shape, 1, "ones_like")


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    _check_device(device, "full_like")
    return _like(a, dtype, shape, fill_value, "full_like")


def empty_like(a, dtype=None, shape=None, *, device=None):
    _check_device(device, "empty_like")
    return zeros_like(a, dtype, shape)


def _static_scalar(v, name):
    if isinstance(v, Tracer):
        raise TypeError("jx.numpy.arange needs static bounds (Python numbers); the "
                        "length of a compiled array cannot depend on traced values")
    if np.ndim(v) != 0:
        raise ValueError(f"jx.numpy.arange: arguments must be scalars; got {name}={v!r}")
    v = v.item() if hasattr(v, "item") and not is_scalar_const(v) else v
    return v


def _size_value(d, dt):
    """A symbolic size as a scalar of dtype dt (dimension_size), in the current trace."""
    from ..prims import symbolic
    return bind1(symbolic.dimension_size, dim=d, dtype=np.dtype(dt))


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """JAX's arange: start + step * iota in the dtype (float32 for 16-bit floats),
    length ceil((stop - start) / step); the dtype from the bounds' promotion."""
    _check_device(device, "arange")
    start, stop, step = (None if v is None else _static_scalar(v, n)
                         for v, n in zip((start, stop, step), ("start", "stop", "step")))
    is_int = all(isinstance(v, (int, np.integer, Dim)) for v in (start, stop, step)
                 if v is not None)
    dt = _dtype(dtype, dtypes.default_int() if is_int else dtypes.default_float(), "arange")
    if dt == dtypes.bool_:
        raise TypeError("jx.numpy.arange: a bool range is not supported; give a numeric "
                        "dtype")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ZeroDivisionError("jx.numpy.arange: step must not be zero")
    if step is None or step == 1:
        # counted exactly (a float64 count is off past 2**53; int64 wraps)
        n = stop - start if any(isinstance(v, Dim) for v in (start, stop)) else \
            -(int(start) - int(stop)) if all(isinstance(v, (int, np.integer))
                                             for v in (start, stop)) \
            else math.ceil(stop - start)
        size = max(n, 0)

        def make():
            out = bind1(st.iota, dtype=dt, shape=(size,), dimension=0)
            if start == 0:
                return out
            lo = _size_value(start, dt) if isinstance(start, Dim) else \
                bind1(ew.convert_element_type, start, new_dtype=dt)
            return bind1(ew.add, broadcast_to(lo, (size,)), out)
        return _build("arange", (size,), dt, make)
    if any(isinstance(v, Dim) for v in (start, stop)) and isinstance(step, (int, np.integer)):
        n = -((start - stop) // int(step))
    elif all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
        n = -((int(start) - int(stop)) // int(step))
    else:
        n = math.ceil((stop - start) / step)
    size = max(n, 0)
    work = dtypes.float32 if dtypes.is_half(dt) else dt

    def make():
        iota = bind1(st.iota, dtype=work, shape=(size,), dimension=0)
        lo, dx = (_size_value(v, work) if isinstance(v, Dim) else
                  bind1(ew.convert_element_type, v, new_dtype=work) for v in (start, step))
        lo, dx = (broadcast_to(v, (size,)) for v in (lo, dx))
        out = bind1(ew.add, lo, bind1(ew.mul, dx, iota))
        return out if work == dt else bind1(ew.convert_element_type, out, new_dtype=dt)
    return _build("arange", (size,), dt, make)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """JAX's linspace: start * (1 - t) + stop * t with t = iota / div in the
    computation dtype, stop itself as the last point; integer dtypes floor."""
    _check_device(device, "linspace")
    from .ufuncs import add, divide, floor, multiply, subtract
    num = int(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    lo, hi = as_value(start), as_value(stop)
    if dtype is None:
        dt = dtypes.result_type(dtype_weak(lo), dtype_weak(hi))[0]
        dt = dtypes.inexact(dt)
    else:
        dt = dtypes.canonicalize(dtype, "linspace")
    ct = dtypes.inexact(dt)
    lo, hi = convert(lo, ct), convert(hi, ct)
    bshape = broadcast_shapes(shape_of(lo), shape_of(hi))
    like = [v for v in (lo, hi) if isinstance(v, Tracer)]
    lo, hi = broadcast_to(lo, bshape, like), broadcast_to(hi, bshape, like)
    ax = axis + len(bshape) + 1 if axis < 0 else axis
    if not 0 <= ax <= len(bshape):
        raise ValueError(f"linspace: axis {axis} is out of range for {len(bshape) + 1} dims")
    ishape = bshape[:ax] + (1,) + bshape[ax:]
    div = (num - 1) if endpoint else num

    def expand(v):
        return bind1(st.expand_dims, v, dimensions=(ax,))
    if num > 1:
        delta = divide(subtract(hi, lo), np.asarray(div, ct))
        shape1 = [1] * len(ishape)
        shape1[ax] = div
        t = bind1(st.iota, dtype=ct, shape=tuple(shape1), dimension=ax)
        t = divide(t, np.asarray(div, ct))
        one = np.asarray(1, ct)
        out = add(multiply(expand(lo), subtract(one, t)), multiply(expand(hi), t))
        if endpoint:
            out = bind1(st.concatenate, out, expand(hi), dimension=ax)
    elif num == 1:
        delta = bind1(ew.convert_element_type, np.nan if endpoint else 0.0, new_dtype=ct)
        if not endpoint:
            delta = subtract(hi, lo)
        out = expand(lo)
    else:
        delta = bind1(ew.convert_element_type, np.nan, new_dtype=ct)
        out = broadcast_to(np.zeros((), ct), bshape[:ax] + (0,) + bshape[ax:], like)
    if not dtypes.is_inexact(dt):
        out = floor(out)
    out = convert(out, dt)
    out = _materialize(out)
    return (out, delta) if retstep else out


def eye(N, M=None, k=0, dtype=None, *, device=None):
    """Ones where column - row == k: an iota comparison, so no NumPy constant."""
    _check_device(device, "eye")
    shape = (int(N), int(N if M is None else M))
    dt = np.dtype(_dtype(dtype, dtypes.default_float(), "eye"))
    return _build("eye", shape, dt, lambda: _diagonal_mask(shape, k, ew.eq, dt))


def _diagonal_mask(shape, k, cmp, dt):
    """cmp(column - row, k) as dt, from two iotas (int64: no overflow of the difference)."""
    rows = bind1(st.iota, dtype=dtypes.int64, shape=shape, dimension=0)
    cols = bind1(st.iota, dtype=dtypes.int64, shape=shape, dimension=1)
    hit = bind1(cmp, bind1(ew.sub, cols, rows),
                broadcast_to(np.asarray(int(k), np.int64), shape))
    return bind1(ew.convert_element_type, hit, new_dtype=dt)


def identity(n, dtype=None, *, device=None):
    _check_device(device, "identity")
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones where column - row <= k."""
    shape = (int(N), int(N if M is None else M))
    dt = np.dtype(_dtype(dtype, dtypes.default_float(), "tri"))
    return _build("tri", shape, dt, lambda: _diagonal_mask(shape, k, ew.le, dt))


def iota(dtype, shape, dimension=0):
    """Staged iota: a primitive, concrete or traced alike."""
    return bind1(st.iota, dtype=np.dtype(dtype), shape=tuple(shape), dimension=dimension)


__all__ = [n for n, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__ and n[0] != "_"]
