"""jax.lax's array-building and shape functions: full, full_like, empty, tile, stack,
unstack, split, index_in_dim, slice_in_dim, index_take, collapse, broadcast_to_rank,
broadcast_shapes, shape_as_value. Indices and sizes are static Python ints."""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import dtypes
from ..array import Array
from ..errors import ShapeError
from ..numpy._util import as_value, broadcast_shapes as _np_broadcast_shapes, \
    canonical_axis, dtype_weak, shape_of
from ..numpy.creation import _wrap_public
from . import ops
from .extras import _value, operands


def _dim(d, what: str) -> int:
    try:
        return operator.index(d)
    except TypeError:
        raise TypeError(f"jx.lax.{what}: sizes and indices must be Python ints, got "
                        f"{d!r}") from None


def _shape(shape, what: str) -> tuple:
    return (_dim(shape, what),) if np.ndim(shape) == 0 and not isinstance(shape, (tuple, list)) \
        else tuple(_dim(d, what) for d in shape)


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of shape filled with the scalar fill_value (its dtype, weak for a
    Python scalar, unless dtype is given)."""
    from .. import numpy as jnp
    if shape_of(fill_value) != ():
        raise TypeError(f"jx.lax.full must be called with a scalar fill_value, got one of "
                        f"shape {shape_of(fill_value)} (use jx.numpy.broadcast_to)")
    return jnp.full(_shape(shape, "full"), fill_value, dtype)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """full with x's shape and dtype (and weak type, when dtype is not given)."""
    from .. import numpy as jnp
    from .extras import _reweak
    dt, weak = dtype_weak(x if _is_python_scalar(x) else as_value(x))
    out_dt = dt if dtype is None else dtypes.canonicalize(dtype, "full_like")
    out = jnp.full(shape_of(x) if shape is None else _shape(shape, "full_like"), fill_value,
                   out_dt)
    return _reweak(out, dtype is None and weak)


def _is_python_scalar(x) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def empty(shape, dtype, *, out_sharding=None):
    """An array of shape and dtype whose values are unspecified (zeros here)."""
    from .. import numpy as jnp
    return jnp.zeros(_shape(shape, "empty"), dtypes.canonicalize(dtype, "empty"))


def tile(operand, reps):
    """operand repeated reps[i] times along each dimension i (one rep per dim)."""
    x = _value(operand)
    s, reps = shape_of(x), tuple(_dim(r, "tile") for r in reps)
    if len(reps) != len(s):
        raise TypeError(f"jx.lax.tile: reps length must be equal to the ndim of x, got "
                        f"len(reps)={len(reps)} and x.ndim={len(s)}")
    inter = tuple(v for pair in zip(reps, s) for v in pair)
    y = ops.broadcast_in_dim(x, inter, tuple(range(1, 2 * len(s), 2)))
    return ops.reshape(y, tuple(r * d for r, d in zip(reps, s)))


def stack(operands_, axis: int = 0):
    """Arrays of one shape and dtype stacked along a new axis."""
    vals = operands("stack", list(operands_), ("int", "float", "bool"), broadcast=False)
    if not vals:
        raise ValueError("jx.lax.stack needs at least one operand")
    shapes = {shape_of(v) for v in vals}
    if len(shapes) > 1:
        raise ValueError(f"jx.lax.stack: all operands must have one shape, got "
                         f"{sorted(shapes)}")
    ax = canonical_axis(axis, len(shape_of(vals[0])) + 1)
    return ops.concatenate([ops.expand_dims(v, (ax,)) for v in vals], ax)


def unstack(x, axis: int = 0):
    """The slices of x along axis, as a tuple."""
    x = _value(x)
    ax = canonical_axis(axis, len(shape_of(x)))
    return tuple(index_in_dim(x, i, ax, keepdims=False) for i in range(shape_of(x)[ax]))


def split(operand, sizes, axis: int = 0):
    """operand cut along axis into consecutive pieces of the given sizes (which must
    add up to that dimension)."""
    x = _value(operand)
    ax = canonical_axis(axis, len(shape_of(x)))
    sizes = [_dim(s, "split") for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != shape_of(x)[ax]:
        raise ValueError(f"jx.lax.split: sizes must be >= 0 and sum to the size of axis "
                         f"{ax}, {shape_of(x)[ax]}; got {sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(slice_in_dim(x, start, start + s, 1, ax))
        start += s
    return out


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """operand[..., start:limit:stride, ...] along axis; None means the ends and
    negative indices count from the end (once)."""
    x = _value(operand)
    s = shape_of(x)
    ax = canonical_axis(axis, len(s))
    n = s[ax]
    start = 0 if start_index is None else _dim(start_index, "slice_in_dim")
    limit = n if limit_index is None else _dim(limit_index, "slice_in_dim")
    start, limit = start + n if start < 0 else start, limit + n if limit < 0 else limit
    if not 0 <= start <= limit <= n or stride < 1:
        raise ShapeError(f"jx.lax.slice_in_dim: [{start_index}:{limit_index}:{stride}] is "
                         f"not a valid slice of axis {ax} (size {n})")
    starts, limits, strides = [0] * len(s), list(s), [1] * len(s)
    starts[ax], limits[ax], strides[ax] = start, limit, _dim(stride, "slice_in_dim")
    return ops.slice(x, starts, limits, strides)


def index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    """operand[..., index, ...] along axis (a static index; negative counts from the
    end); keepdims keeps the indexed axis with size 1."""
    x = _value(operand)
    s = shape_of(x)
    ax = canonical_axis(axis, len(s))
    i = _dim(index, "index_in_dim")
    j = i + s[ax] if i < 0 else i
    if not 0 <= j < s[ax]:
        raise IndexError(f"jx.lax.index_in_dim: index {i} is out of bounds for axis {ax} "
                         f"with size {s[ax]}")
    out = slice_in_dim(x, j, j + 1, 1, ax)
    return out if keepdims else ops.squeeze(out, (ax,))


def index_take(src, idxs, axes):
    """src at the index arrays idxs (one per axis in axes, of one shape (n,)),
    taken modulo each axis's size: shape (n,) + src's other dimensions."""
    from .. import numpy as jnp
    x = _value(src)
    s = shape_of(x)
    axes = tuple(canonical_axis(a, len(s)) for a in axes)
    idxs = [as_value(i) for i in idxs]
    if len(idxs) != len(axes):
        raise ShapeError(f"jx.lax.index_take: one index array per axis, got {len(idxs)} "
                         f"arrays for axes {axes}")
    wrapped = tuple(jnp.remainder(i, s[a]) for i, a in zip(idxs, axes))
    rest = [d for d in range(len(s)) if d not in axes]
    moved = ops.transpose(x, axes + tuple(rest))
    return moved[wrapped]


def collapse(operand, start_dimension: int, stop_dimension=None):
    """Dimensions [start, stop) of operand merged into one (row-major order)."""
    x = _value(operand)
    s = shape_of(x)
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(s))
    if hi < lo:
        raise ValueError(f"jx.lax.collapse: invalid dimension range {s}"
                         f"[{start_dimension}:{stop_dimension}]")
    return ops.reshape(x, s[:lo] + (math.prod(s[lo:hi]),) + s[hi:])


def broadcast_to_rank(x, rank: int):
    """x with leading dimensions of size 1 added up to rank."""
    v = _value(x)
    nd = len(shape_of(v))
    return v if rank <= nd else ops.broadcast(v, (1,) * (rank - nd))    # (JAX: x if above)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (NumPy's rules), a tuple of ints."""
    if not shapes:
        raise TypeError("jx.lax.broadcast_shapes needs at least one shape")
    return _np_broadcast_shapes(*[_shape(s, "broadcast_shapes") for s in shapes])


def shape_as_value(shape):
    """The shape as a 1-D integer array (every dimension is static in jx)."""
    return Array(np.asarray(_shape(shape, "shape_as_value"), dtypes.default_int()))


__all__ = ["full", "full_like", "empty", "tile", "stack", "unstack", "split", "slice_in_dim",
           "index_in_dim", "index_take", "collapse", "broadcast_to_rank", "broadcast_shapes",
           "shape_as_value"]
_wrap_public(globals(), [n for n in __all__ if n not in ("broadcast_shapes",
                                                          "shape_as_value")])
