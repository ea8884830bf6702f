"""lax-style indexing: dynamic slices, gather and scatter with XLA dimension
numbers. Negative start indices of the dynamic slices wrap once (as in JAX);
then starts are clamped so the window stays inside the operand."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer
from ..errors import JxError, ShapeError
from ..numpy.creation import _wrap_public
from ..numpy._util import as_value, bind1, canonical_axis, convert, is_scalar_const, shape_of
from ..prims import indexing as ix
from ..prims import structural as st
from ..prims.indexing import GatherDimensionNumbers, ScatterDimensionNumbers

# JAX (0.10) reads with promise_in_bounds when no mode is given: XLA clamps
_GATHER_MODES = {None: "promise_in_bounds", "fill": "fill", "clip": "clip",
                 "promise_in_bounds": "promise_in_bounds"}
# XLA skips out-of-bounds scatter windows: what a promise broken gives on JAX
_SCATTER_MODES = {None: "drop", "drop": "drop", "fill": "drop", "clip": "clip",
                  "promise_in_bounds": "drop"}


def _mode(mode, table, what):
    key = getattr(mode, "name", mode)                  # enum-like modes by name
    key = key.lower() if isinstance(key, str) else key
    if key == "fill_or_drop":
        key = "fill"
    if key not in table:
        raise JxError(f"{what} mode must be one of {sorted(k for k in table if k)}, got {mode!r}")
    return table[key]


def _starts(operand, start_indices) -> list:
    """Start indices as integer scalars of one dtype, negatives wrapped."""
    shape = shape_of(operand)
    if not isinstance(start_indices, (list, tuple)):       # an array, traced or concrete
        if len(shape_of(start_indices)) != 1:
            raise ShapeError(f"start_indices must be a sequence of scalars or a 1-D array, "
                             f"got shape {shape_of(start_indices)}")
        from ..numpy.indexing import getitem
        items = [getitem(start_indices, i) for i in range(shape_of(start_indices)[0])]
    else:
        items = list(start_indices)
    if len(items) != len(shape):
        raise ShapeError(f"need one start index per dim of the operand (shape {shape}), "
                         f"got {len(items)}")
    vals = [as_value(i) for i in items]
    for v in vals:
        if shape_of(v) != () or not dtypes.is_int(_dtype(v)):
            raise ShapeError(f"start indices must be integer scalars, got {v!r}")
    wide = any(not is_scalar_const(v) and np.dtype(v.dtype).itemsize == 8 for v in vals)
    dt = dtypes.int64 if wide or any(d >= 2**31 for d in shape) else dtypes.int32
    out = []
    for v, d in zip(vals, shape):
        if isinstance(v, Tracer):
            from ..numpy.indexing import _wrap
            out.append(convert(_wrap(v, d), dt))
        else:
            v = int(v)
            out.append(np.asarray(v + d if v < 0 else v, dt))
    return out


def _dtype(v):
    if isinstance(v, int) and not isinstance(v, bool):
        return dtypes.index_dtype(v)
    return dtypes.python_scalar_dtype(v) if is_scalar_const(v) else v.dtype


def dynamic_slice(operand, start_indices, slice_sizes):
    x = as_value(operand)
    return bind1(ix.dynamic_slice, x, *_starts(x, start_indices),
                 slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_update_slice(operand, update, start_indices):
    x = as_value(operand)
    u = as_value(update)
    if is_scalar_const(u):
        u = convert(u, x.dtype)
    return bind1(ix.dynamic_update_slice, x, u, *_starts(x, start_indices))


def dynamic_slice_in_dim(operand, start_index, slice_size=1, axis=0):
    x = as_value(operand)
    shape = shape_of(x)
    axis = canonical_axis(axis, len(shape))
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(x, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    x = as_value(operand)
    axis = canonical_axis(axis, len(shape_of(x)))
    out = dynamic_slice_in_dim(x, index, 1, axis)
    return out if keepdims else bind1(st.squeeze, out, dimensions=(axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    x = as_value(operand)
    shape = shape_of(x)
    axis = canonical_axis(axis, len(shape))
    starts = [0] * len(shape)
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    x, u = as_value(operand), as_value(update)
    axis = canonical_axis(axis, len(shape_of(x)))
    if len(shape_of(u)) == len(shape_of(x)) - 1:
        u = bind1(st.expand_dims, u, dimensions=(axis,))
    return dynamic_update_slice_in_dim(x, u, index, axis)


def _dn(dn, cls):
    if isinstance(dn, cls):
        return dn
    if isinstance(dn, dict):
        return cls(**dn)
    return cls(*dn)


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, mode=None,
           fill_value=None, indices_are_sorted=False, unique_indices=False):
    """XLA gather. mode None is 'promise_in_bounds' (JAX's default): out-of-bounds
    starts clamp, as XLA does; 'fill' fills those slices with fill_value."""
    m = _mode(mode, _GATHER_MODES, "gather")
    return bind1(ix.gather, as_value(operand), as_value(start_indices),
                 dimension_numbers=_dn(dimension_numbers, GatherDimensionNumbers),
                 slice_sizes=tuple(int(s) for s in slice_sizes), mode=m,
                 fill_value=fill_value if m == "fill" else None)


def _scatter(prim):
    def fn(operand, scatter_indices, updates, dimension_numbers, *, mode=None,
           indices_are_sorted=False, unique_indices=False):
        x = as_value(operand)
        u = as_value(updates)
        if is_scalar_const(u):
            u = convert(u, x.dtype)
        return bind1(prim, x, as_value(scatter_indices), u,
                     dimension_numbers=_dn(dimension_numbers, ScatterDimensionNumbers),
                     mode=_mode(mode, _SCATTER_MODES, prim.name))
    fn.__name__ = prim.name
    fn.__doc__ = (f"XLA {prim.name}; mode None is 'drop': out-of-bounds update windows "
                  "are skipped.")
    return fn


scatter = _scatter(ix.scatter)
scatter_add = _scatter(ix.scatter_add)
scatter_mul = _scatter(ix.scatter_mul)
scatter_min = _scatter(ix.scatter_min)
scatter_max = _scatter(ix.scatter_max)

__all__ = ["dynamic_slice", "dynamic_update_slice", "dynamic_slice_in_dim",
           "dynamic_index_in_dim", "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
           "gather", "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max",
           "GatherDimensionNumbers", "ScatterDimensionNumbers"]
_wrap_public(globals(), __all__)
