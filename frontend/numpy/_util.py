"""Trace-time helpers of jx.numpy: dtype promotion, broadcasting, axes.

These resolve NumPy's implicit rules into explicit primitives, so passes and
backends only ever see operands of equal shape and dtype.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes, flags
from ..array import Array
from ..core import Tracer, bind_like
from ..errors import OutOfMemoryError, ShapeError, reject_masked, user_location, warn_user
from ..ir import extent_problem
from ..prims import elementwise as ew
from ..prims import structural as st


def dtype_weak(x) -> tuple:
    """(dtype, weak) of any array-like: Python scalars are weak."""
    if type(x) is Array:
        return x._value.dtype, x._weak
    if isinstance(x, Tracer):
        return x.dtype, x.weak_type
    if is_scalar_const(x):
        return dtypes.python_scalar_dtype(x), not isinstance(x, bool)
    if isinstance(x, (np.ndarray, np.generic)):
        return dtypes.canonical(x.dtype), False
    return _from_python(x).dtype, False


def canonical_array(x: np.ndarray) -> np.ndarray:
    """NumPy data in the mode's dtypes (32-bit mode: float64 becomes float32)."""
    dt = dtypes.canonical(x.dtype)
    return x if dt == x.dtype else x.astype(dt)


def canonical_value(x):
    """A NumPy array or scalar in the mode's dtypes; anything else as it is."""
    if isinstance(x, (np.ndarray, np.generic)):
        reject_masked(x, "a value given to a jx transformation")
        return canonical_array(np.asarray(x))
    return x


def _from_python(x) -> np.ndarray:
    """Nested lists/tuples of Python numbers take jx's default dtypes."""
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"cannot make an array of {x!r}: elements must be numbers or "
                        "arrays (traced values inside a list need jx.numpy.stack)")
    if arr.dtype.kind == "i" and arr.dtype.itemsize == 8 and arr.size and not dtypes.x64():
        for extreme in (int(arr.min()), int(arr.max())):
            dtypes.python_scalar_dtype(extreme)     # JAX's OverflowError beyond int32
    return canonical_array(arr)


def is_scalar_const(x) -> bool:
    """A Python number (bool, int, float or complex), weakly typed in jx."""
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def shape_of(x) -> tuple:
    if type(x) is Array or isinstance(x, Tracer):
        return x.shape
    if is_scalar_const(x):
        return ()
    return np.shape(x)


def has_tracer(x) -> bool:
    """Whether x, a value or a (nested) list/tuple/slice of them, holds a tracer."""
    if isinstance(x, Tracer):
        return True
    if isinstance(x, (tuple, list)):
        return any(has_tracer(v) for v in x)
    if isinstance(x, slice):
        return any(isinstance(v, Tracer) for v in (x.start, x.stop, x.step))
    return False


def as_value(x):
    """Tracers, jx.Arrays and NumPy arrays pass through; lists become arrays;
    scalars stay."""
    if type(x) is Array:
        return x
    if type(x) is not np.ndarray:
        reject_masked(x, "an input of a jx.numpy function")
    if isinstance(x, Tracer) or is_scalar_const(x):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return canonical_array(np.asarray(x))
    if isinstance(x, (list, tuple)) and any(isinstance(e, Tracer) for e in _flat(x)):
        return stack_arrays([as_value(e) for e in x])
    return _from_python(x)


def _flat(x):
    for e in x:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


def convert(x, dtype, like=(), weak: bool = False):
    """x as dtype; constants are converted in Python, traced values by a primitive.
    weak: the converted value is weakly typed (JAX: int32 array * 2.0 is a weak
    float32, so both operands of the multiplication are)."""
    dtype = np.dtype(dtype)
    if is_scalar_const(x):
        if dtypes.is_int(dtype) and isinstance(x, int) and not isinstance(x, bool):
            info = np.iinfo(dtype)
            if not info.min <= x <= info.max:
                raise OverflowError(f"Python int {x} does not fit in {dtype}, the dtype of "
                                    "the array it meets; convert that array first "
                                    "(astype(int64)) or use a float")
        if isinstance(x, complex) and not dtypes.is_complex(dtype):
            raise TypeError(f"cannot convert the Python complex {x!r} to {dtype} (it would "
                            "lose its imaginary part); make the other operand complex "
                            "(astype(jx.numpy.complex64)), or pass x.real")
        return Array(np.asarray(x, dtype=dtype), True) if weak else np.asarray(x, dtype=dtype)
    x = as_value(x)
    if x.dtype == dtype:
        return x
    if weak:
        return bind_like(like, ew.convert_element_type, x, new_dtype=dtype, weak_type=True)[0]
    return bind_like(like, ew.convert_element_type, x, new_dtype=dtype)[0]


def check_rank_promotion(shapes) -> None:
    """jax_numpy_rank_promotion: 'warn' or 'raise' where operands of different
    ranks (scalars aside) broadcast implicitly, as in JAX."""
    if len({len(s) for s in shapes if len(s)}) < 2:
        return
    where = user_location()
    text = (f"operands of shapes {' '.join(str(tuple(s)) for s in shapes)} are broadcast "
            "to a common rank" + (f" (at {where})" if where else ""))
    if flags.STATE.rank_promotion == "raise":
        raise ValueError(f"Operands could not be broadcast together: {text}, with the config "
                         "option jax_numpy_rank_promotion='raise'; add the missing axes "
                         "explicitly (x[None, :], jx.numpy.expand_dims or reshape)")
    warn_user(f"Following NumPy automatic rank promotion: {text}. Set the "
              "jax_numpy_rank_promotion config option to 'allow' to disable this warning")


def broadcast_shapes(*shapes) -> tuple:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*[(1,) * (ndim - len(s)) + tuple(s) for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ShapeError(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} "
                             "cannot be broadcast together")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to(x, shape, like=()):
    shape = tuple(shape)
    xs = shape_of(x)
    if xs == shape:
        return x
    if len(xs) > len(shape):
        raise ShapeError(f"cannot broadcast shape {xs} to {shape}")
    lead = len(shape) - len(xs)
    if any(a not in (1, b) for a, b in zip(xs, shape[lead:])):
        raise ShapeError(f"cannot broadcast shape {xs} to {shape}")
    # size-1 dims that must stretch are dropped first: broadcast_in_dim maps the rest
    keep = [i for i, d in enumerate(xs) if d == shape[lead + i]]
    if len(keep) != len(xs):
        x = bind_like(like, st.reshape, x, new_sizes=tuple(xs[i] for i in keep))[0]
    dims = tuple(lead + i for i in keep)
    return bind_like(like, st.broadcast_in_dim, x, shape=shape, broadcast_dimensions=dims)[0]


def result_dtype(*args) -> tuple:
    return dtypes.result_type(*[dtype_weak(a) for a in args])


def promote_dtypes(*args, to_float: bool = False) -> list:
    """Convert to one dtype (JAX promotion with weak scalars); no broadcasting."""
    args = [as_value(a) for a in args]
    dt, weak = result_dtype(*args)
    if to_float:
        dt = dtypes.inexact(dt)
    tracers = [a for a in args if isinstance(a, Tracer)]
    return [convert(a, dt, tracers, weak) for a in args]


def promote(*args, to_float: bool = False) -> list:
    """Promote to one dtype and broadcast to one shape, as NumPy does."""
    args = promote_dtypes(*args, to_float=to_float)
    shapes = [shape_of(a) for a in args]
    if flags.STATE.rank_promotion != "allow":
        check_rank_promotion(shapes)
    shape = broadcast_shapes(*shapes)
    tracers = [a for a in args if isinstance(a, Tracer)]
    return [broadcast_to(a, shape, tracers) for a in args]


def stack_arrays(arrays, axis=0):
    """jx.numpy.stack, here (with primitives) so that as_value can stack a list of
    traced values without importing manipulation, which sits above this module."""
    xs = [as_value(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to stack")
    shapes = {shape_of(x) for x in xs}
    if len(shapes) > 1:
        raise ShapeError(f"all input arrays must have the same shape, got {sorted(shapes)}")
    ax = canonical_axis(axis, len(shape_of(xs[0])) + 1)
    xs = promote_dtypes(*[bind1(st.expand_dims, x, dimensions=(ax,)) for x in xs])
    return xs[0] if len(xs) == 1 else bind1(st.concatenate, *xs, dimension=ax)


def canonical_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ShapeError(f"axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else 0


def canonical_axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonical_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ShapeError(f"repeated axis in {axis}")
        return axes
    return (canonical_axis(axis, ndim),)


def _at() -> str:
    where = user_location()
    return f" (at {where})" if where else ""


def constant(make, shape, dt, what: str) -> Array:
    """make(shape, dt) as a jx.Array, or a jx error naming the shape and the user's
    line (not NumPy's): these constants are built eagerly, even inside a trace. The
    creation functions' common part, here so that ufuncs (below creation) builds
    its own."""
    problem = f"shape {shape} has a negative dimension" if any(d < 0 for d in shape) \
        else extent_problem(shape, dt)
    if problem:
        raise ShapeError(f"jx.numpy.{what}: {problem}{_at()}")
    try:
        return Array(np.asarray(make(shape, dt), dtype=dt))
    except MemoryError:
        nbytes = math.prod(shape) * dt.itemsize
        raise OutOfMemoryError(
            f"jx.numpy.{what}({shape}, {dt.name}){_at()}: its {nbytes:.3g} bytes could not be "
            "allocated: constants are built in full, even while tracing; use smaller shapes "
            "or build the value from a traced one (e.g. jnp.broadcast_to(x, shape)), which "
            "compiled code computes without storing it") from None


def bind1(prim, *args, **params):
    """bind a single-output primitive, staged with its traced arguments."""
    return bind_like((), prim, *args, **params)[0]
