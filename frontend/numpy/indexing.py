"""NumPy indexing over jx primitives: x[idx], x.at[idx].set/add/..., take,
take_along_axis.

Indexing is resolved into primitives, on concrete arrays as on traced ones (no
NumPy shortcut: the same results, JAX's). Static ints and slices become slice/rev/
squeeze/expand_dims; a traced scalar index becomes dynamic_slice; integer
arrays (traced or constant) and constant boolean masks become one gather whose
index tensor is built here. Updates use dynamic_update_slice when every index
is static and contiguous, otherwise one scatter with the same index tensor.

Out of bounds (JAX's choices, since a compiled program cannot raise): reads
clamp (gather mode "promise_in_bounds", whose gradient drops what out-of-bounds
indices read, as JAX's does; .get(mode="clip") credits the clamped element,
.get(mode="fill") fills), updates are dropped (mode "drop"; or "clip"). Static
Python ints follow the same rules, as in JAX (x[10] of 5 elements is x[4]); bool
scalars add an axis of size 1 (True) or 0 (False); only an int or traced scalar
into a size-0 axis raises IndexError, since no element can stand in for it.
Negative indices wrap like NumPy (once: -n - 1 is out of bounds), traced ones
included.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes
from ..array import Array
from ..core import Tracer
from ..dims import Dim, InconclusiveDimensionError, where
from ..errors import JxError, ShapeError
from ..prims import elementwise as ew
from ..prims import indexing as ix
from ..prims import structural as st
from .creation import _materialize, _wrap_public
from ._util import as_value, bind1, broadcast_shapes, broadcast_to, canonical_axis, convert, \
    dtype_weak, has_tracer, is_scalar_const, shape_of

_ADV = ("int", "dyn", "array")


@dataclass
class _Entry:
    """One operand dim's index (or a None): kind is none/slice/int/dyn/array."""
    kind: str
    pos: int                 # position in the user's index tuple: NumPy's adjacency rule
    dim: int = -1            # operand dim it consumes (-1 for None)
    start: int = 0           # slices: normalised start, step and element count
    step: int = 1
    count: int = 0
    value: Any = None        # int, traced scalar, or index array (NumPy or traced)
    stop: Any = None         # slices of a symbolic size: the normalised stop


def _classify(i):
    """(kind, value, number of operand dims consumed) of one index item."""
    if i is None:
        return "none", None, 0
    if i is Ellipsis:
        return "ellipsis", None, 0
    if isinstance(i, slice):
        if any(isinstance(v, Tracer) for v in (i.start, i.stop, i.step)):
            raise IndexError("slice bounds must be static ints; for a traced start use "
                             "jx.lax.dynamic_slice or jx.lax.dynamic_slice_in_dim")
        return "slice", i, 1
    if isinstance(i, (bool, np.bool_)):
        raise IndexError("a boolean scalar index is not supported together with array "
                         "indices; use jx.numpy.where or jx.numpy.expand_dims")
    if isinstance(i, (int, np.integer)):
        return "int", int(i), 1
    if isinstance(i, Tracer) and i.ndim == 0 and dtypes.is_int(i.dtype):
        return "dyn", i, 1
    if isinstance(i, (list, tuple)) and not has_tracer(i) and np.size(i) == 0:
        i = np.zeros(np.shape(i), np.int32)                  # x[[]] is an int index
    a = as_value(i)
    dt = a.dtype
    if dt == dtypes.bool_:
        if isinstance(a, Tracer):
            raise IndexError(f"a traced boolean mask {a.aval} has a data-dependent result "
                             "shape, which a compiled program cannot have; use "
                             "jx.numpy.where(mask, x, fill) instead")
        if a.ndim == 0:
            raise IndexError("a boolean scalar index is not supported; use jx.numpy.where")
        return "mask", a, a.ndim
    if not dtypes.is_int(dt):
        raise IndexError(f"arrays used as indices must be of integer or boolean type, got {dt}")
    if not isinstance(a, Tracer) and a.ndim == 0:
        return "int", int(a), 1      # a concrete 0-d index: an int (clamped on reads)
    return "array", a, 1


def _parse(shape: tuple, idx) -> list:
    """The user's index as a list of entries, one per operand dim (plus Nones)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    items = [_classify(i) for i in idx]
    if sum(k == "ellipsis" for k, _, _ in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(n for _, _, n in items)
    if used > len(shape):
        raise IndexError(f"too many indices for an array of shape {shape}: {used} given")
    entries, d = [], 0

    def full(pos):
        nonlocal d
        entries.append(_Entry("slice", pos, d, 0, 1, shape[d]))
        d += 1

    for pos, (kind, v, n) in enumerate(items):
        if kind == "none":
            entries.append(_Entry("none", pos))
        elif kind == "ellipsis":
            for _ in range(len(shape) - used):
                full(pos)
        elif kind == "slice":
            start, stop, step = _slice_indices(v, shape[d])
            if isinstance(shape[d], Dim):       # (the slice rule's form: equal sizes print alike)
                length = -(-(stop - start) // step) if step > 0 else -(-(start - stop) // -step)
            else:
                length = len(range(start, stop, step))
            entries.append(_Entry("slice", pos, d, start, step, length, stop=stop))
            d += 1
        elif kind == "int":
            if shape[d] == 0:
                raise IndexError(f"index {v} is out of bounds for axis {d} with size 0 "
                                 f"(array of shape {shape}): no element to read or write")
            # may stay out of range: reads clamp it, updates drop it (as JAX)
            entries.append(_Entry("int", pos, d, value=v + shape[d] if v < 0 else v))
            d += 1
        elif kind == "mask":
            if v.shape != shape[d:d + v.ndim]:
                raise IndexError(f"boolean index of shape {v.shape} does not match the indexed "
                                 f"dims {shape[d:d + v.ndim]} of an array of shape {shape}")
            for k, nz in enumerate(np.nonzero(np.asarray(v))):
                entries.append(_Entry("array", pos, d + k, value=nz))
            d += v.ndim
        else:
            entries.append(_Entry(kind, pos, d, value=v))
            d += 1
    while d < len(shape):
        full(len(items) + d)
    return entries


def _slice_indices(s: slice, size) -> tuple:
    """slice.indices, also for a symbolic size: each clamp is decided for every size
    the symbols may take, or InconclusiveDimensionError says it cannot be."""
    if not isinstance(size, Dim):
        return s.indices(size)
    step = 1 if s.step is None else operator.index(s.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    lo, hi = (0, size) if step > 0 else (-1, size - 1)     # where start and stop clamp

    def bound(v, default):
        if v is None:
            return default
        v = operator.index(v)
        return min(max(size + v, lo), hi) if v < 0 else min(v, hi)
    if step > 0:
        start = bound(s.start, 0)
        return start, max(bound(s.stop, size), start), step
    start = bound(s.start, size - 1)
    return start, min(bound(s.stop, -1), start), step


# ---------------------------------------------------------------- helpers

def _where(c, a, b):
    from .ufuncs import where
    return where(c, a, b)


def _wrap(i, n: int):
    """Negative indices count from the end, as in NumPy. An index dtype too narrow
    to hold n (int8 on 200 elements, int32 past 2**31) is widened first: i + n
    must not overflow."""
    if i.dtype.kind == "i" and n > np.iinfo(i.dtype).max:
        wide = dtypes.index_dtype(n)
        i = i.astype(wide) if isinstance(i, np.ndarray) else convert(i, wide)
    if isinstance(i, np.ndarray):
        return np.where(i < 0, i + n, i)
    if i.dtype.kind == "u":
        return i
    from .ufuncs import add, less
    # n as a jx Array of i's dtype: a NumPy int64 would narrow with x64 off
    return _where(less(i, 0), add(i, Array(np.asarray(n, i.dtype))), i)


def _clamp(i: int, n: int) -> int:
    return min(max(i, 0), n - 1)


def _index_dtype(values, shape) -> np.dtype:
    """int32 unless a dim, a constant index or a traced index's dtype needs int64."""
    def wide(v):
        if isinstance(v, Tracer):
            return dtypes.is_wide(v.dtype) or v.dtype == np.uint32
        v = np.asarray(v)
        return v.size > 0 and (v.min() < -2**31 or v.max() >= 2**31)
    big = any(s >= 2**31 for s in shape) or any(wide(v) for v in values)
    return dtypes.int64 if big else dtypes.int32


def _index_array(i):
    """An index argument as a Tracer or NumPy array (Python ints included)."""
    i = as_value(i)
    if isinstance(i, bool) or not is_scalar_const(i):
        return np.asarray(i) if isinstance(i, bool) else i
    return np.asarray(i, dtypes.index_dtype(i) if isinstance(i, int) else
                      dtypes.python_scalar_dtype(i))


# ---------------------------------------------------------------- basic indexing

def _basic(x, entries):
    """Ints, slices, None and traced scalars: slice/rev/dynamic_slice/squeeze/expand."""
    shape = shape_of(x)
    nd = len(shape)
    starts, limits, strides = [0] * nd, list(shape), [1] * nd
    rev = []
    for e in entries:
        d = e.dim
        if e.kind == "slice" and e.count == 0:
            limits[d] = 0
        elif e.kind == "slice":
            n = shape[d]
            s, step = (e.start, e.step) if e.step > 0 else (n - 1 - e.start, -e.step)
            if e.step < 0:
                rev.append(d)       # a backward slice is a forward slice of the reversal
            limit = s + (e.count - 1) * step + 1 if not isinstance(n, Dim) else \
                (e.stop if e.step > 0 else n - 1 - e.stop)     # (the count's own form)
            starts[d], limits[d], strides[d] = s, limit, step
        elif e.kind == "int":
            i = _clamp(e.value, shape[d])
            starts[d], limits[d] = i, i + 1
    if rev:
        x = bind1(st.rev, x, dimensions=tuple(rev))
    if (starts, limits, strides) != ([0] * nd, list(shape), [1] * nd):
        x = bind1(st.slice_, x, start_indices=tuple(starts), limit_indices=tuple(limits),
                  strides=tuple(strides))
    dyn = {e.dim: e.value for e in entries if e.kind == "dyn"}
    if dyn:
        for d in dyn:
            if shape[d] == 0:
                raise IndexError(f"cannot index axis {d} of size 0 of an array of shape {shape}")
        dt = _index_dtype(list(dyn.values()), shape)
        cur = shape_of(x)
        idx = [convert(_wrap(dyn[d], cur[d]), dt) if d in dyn else np.zeros((), dt)
               for d in range(nd)]
        sizes = tuple(1 if d in dyn else cur[d] for d in range(nd))
        x = bind1(ix.dynamic_slice, x, *idx, slice_sizes=sizes)
    drop = tuple(e.dim for e in entries if e.kind in ("int", "dyn"))
    if drop:
        x = bind1(st.squeeze, x, dimensions=drop)
    new, out = [], 0
    for e in entries:
        if e.kind == "none":
            new.append(out)
        if e.kind in ("none", "slice"):
            out += 1
    if new:
        x = bind1(st.expand_dims, x, dimensions=tuple(new))
    return x


# ---------------------------------------------------------------- gather/scatter plan

@dataclass
class _Plan:
    """x[idx] as one gather (and x.at[idx] as the matching scatter)."""
    indices: Any
    offset_dims: tuple        # result dims that are windows of the operand
    collapsed: tuple          # operand dims indexed one element at a time
    index_map: tuple          # operand dim of each column of `indices`
    slice_sizes: tuple
    shape: tuple              # shape of x[idx]

    def gather_dn(self):
        return ix.GatherDimensionNumbers(self.offset_dims, self.collapsed, self.index_map)

    def scatter_dn(self):
        return ix.ScatterDimensionNumbers(self.offset_dims, self.collapsed, self.index_map)


def _layout(entries) -> tuple:
    """Result dims in order, and the broadcast shape of the advanced indices."""
    adv = [e for e in entries if e.kind in _ADV]
    pos = sorted({e.pos for e in adv})
    adjacent = not pos or pos == list(range(pos[0], pos[-1] + 1))
    bshape = broadcast_shapes(*[shape_of(e.value) for e in adv if e.kind == "array"])
    # NumPy: adjacent advanced indices keep their place, otherwise they go first
    dims = [] if adjacent or not adv else [("adv", None)]
    placed = bool(dims)
    for e in entries:
        if e.kind in _ADV:
            if not placed:
                dims.append(("adv", None))
                placed = True
        elif e.kind == "none":
            dims.append(("none", e))
        else:
            dims.append(("window" if e.step == 1 else "iota", e))
    return dims, bshape


def _plan(x, entries, wrap: bool = True) -> _Plan:
    shape = shape_of(x)
    dims, bshape = _layout(entries)
    out_shape, offset_dims, batch, adv_at, iota_at = [], [], [], 0, {}
    for kind, e in dims:
        if kind == "window":
            offset_dims.append(len(out_shape))
            out_shape.append(e.count)
        elif kind == "adv":
            adv_at = len(batch)
            batch += bshape
            out_shape += bshape
        else:
            if kind == "iota":
                iota_at[e.dim] = len(batch)
            batch.append(1 if kind == "none" else e.count)
            out_shape.append(batch[-1])
    batch = tuple(batch)
    dt = _index_dtype([e.value for e in entries if e.kind in ("dyn", "array")], shape)
    cols, index_map, collapsed, sizes = [], [], [], list(shape)
    for e in entries:
        if e.kind == "none" or (e.kind == "slice" and e.step == 1):
            if e.kind == "slice":
                sizes[e.dim] = e.count
                if e.start:
                    cols.append(np.full(batch + (1,), e.start, dt))
                    index_map.append(e.dim)
            continue
        sizes[e.dim] = 1
        collapsed.append(e.dim)
        index_map.append(e.dim)
        if e.kind == "slice":       # strided: an arange along its own batch dim
            at = iota_at[e.dim]
            cols.append(_place(np.arange(e.count, dtype=dt) * e.step + e.start, at, batch))
            continue
        v = e.value
        if e.kind == "int":     # out of range stays out of range (-1 or n) but fits dt
            cols.append(np.full(batch + (1,), min(max(v, -1), shape[e.dim]), dt))
            continue
        v = _wrap(v, shape[e.dim]) if wrap else v
        cols.append(_place(broadcast_to(convert(v, dt), bshape), adv_at, batch))
    return _Plan(_stack_last(cols, batch, dt), tuple(offset_dims), tuple(collapsed),
                 tuple(index_map), tuple(sizes), tuple(out_shape))


def _reshape(v, shape):
    if isinstance(v, np.ndarray):
        return v.reshape(shape)
    return v if v.shape == shape else bind1(st.reshape, v, new_sizes=shape)


def _place(v, at: int, batch: tuple):
    """v (an index array) laid along batch dims at, at+1, ... of batch + (1,)."""
    if isinstance(v, np.ndarray):
        v = v.reshape((1,) * at + v.shape + (1,) * (len(batch) - at - v.ndim))
        return np.broadcast_to(v, batch)[..., None]
    if v.shape == batch:
        return bind1(st.reshape, v, new_sizes=batch + (1,))
    return bind1(st.broadcast_in_dim, v, shape=batch + (1,),
                 broadcast_dimensions=tuple(range(at, at + v.ndim)))


def _stack_last(cols, batch, dt):
    """Columns of shape batch + (1,) side by side: the gather/scatter index tensor."""
    if not cols:
        return np.zeros(batch + (0,), dt)
    if not any(isinstance(c, Tracer) for c in cols):
        return np.concatenate(cols, axis=-1)
    return bind1(st.concatenate, *cols, dimension=len(batch)) if len(cols) > 1 else cols[0]


def _empty_or_bad(x, plan) -> bool:
    """True when x[idx] has no elements; IndexError when it would index a size-0 dim."""
    if int(np.prod(plan.shape, dtype=np.int64)) == 0:
        return True
    shape = shape_of(x)
    for d in plan.collapsed:
        if shape[d] == 0:
            raise IndexError(f"cannot index axis {d} of size 0 of an array of shape {shape}")
    return False


def _empty_like(x, shape, like):
    """A 0-size result, staged in the trace of x or its indices: a traced value like
    any other result (with .at, methods and jit's result type), not a NumPy constant."""
    return broadcast_to(np.zeros((), x.dtype), shape, like)


def _gather(x, plan, mode, fill_value=None):
    if _empty_or_bad(x, plan):
        return _empty_like(x, plan.shape, [x, plan.indices])
    return bind1(ix.gather, x, plan.indices, dimension_numbers=plan.gather_dn(),
                 slice_sizes=plan.slice_sizes, mode=mode, fill_value=fill_value)


# ---------------------------------------------------------------- public API

def _is_bool_scalar(i) -> bool:
    """A Python/NumPy bool or a concrete 0-d bool array (x[asarray(True)])."""
    if isinstance(i, (bool, np.bool_)):
        return True
    return (not isinstance(i, Tracer) and getattr(i, "dtype", None) == dtypes.bool_
            and getattr(i, "shape", None) == ())


def _bool_scalars(idx):
    """x[True] and x[False] (alone or with ints, slices, None and ...): a new axis
    of size 1 or 0, as NumPy and JAX. Returns the index with a None for each bool
    and the positions of the Falses (None when the index has no bool)."""
    items = idx if isinstance(idx, tuple) else (idx,)
    bools = [p for p, i in enumerate(items) if _is_bool_scalar(i)]
    if not bools:
        return idx, None
    falses = tuple(p for p in bools if not bool(items[p]))
    return tuple(None if p in bools else i for p, i in enumerate(items)), falses


def getitem(x, idx):
    """x[idx] with NumPy's indexing rules and JAX's out-of-bounds reads (clamped),
    concrete and traced alike: the same primitives either way."""
    x = as_value(x)
    plain, falses = _bool_scalars(idx)
    entries = _parse(shape_of(x), plain)
    if any(e.kind == "array" for e in entries):
        if falses is not None:
            _parse(shape_of(x), idx)        # the IndexError for a bool with array indices
        return _gather(x, _plan(x, entries), "promise_in_bounds")
    out = _basic(x, entries)
    if falses:           # x[False]: the new axis has no element
        outer = [e for e in entries if e.kind in ("none", "slice")]
        empty = {d for d, e in enumerate(outer) if e.kind == "none" and e.pos in falses}
        shape = shape_of(out)
        out = bind1(st.slice_, out, start_indices=(0,) * len(shape),
                    limit_indices=tuple(0 if d in empty else n for d, n in enumerate(shape)),
                    strides=(1,) * len(shape))
    return _materialize(out)


def _get(x, idx, mode=None, fill_value=None):
    if mode in (None, "promise_in_bounds") and fill_value is None:
        return getitem(x, idx)
    if mode == "clip" and fill_value is None:
        x = as_value(x)
        return _gather(x, _plan(x, _parse(shape_of(x), idx)), "clip")
    if mode != "fill":
        raise JxError(f"get mode must be None, 'promise_in_bounds', 'clip' or 'fill', "
                      f"got {mode!r}")
    x = as_value(x)
    return _gather(x, _plan(x, _parse(shape_of(x), idx)), "fill", fill_value)


_SCATTER = {"set": ix.scatter, "add": ix.scatter_add, "mul": ix.scatter_mul,
            "min": ix.scatter_min, "max": ix.scatter_max}
_COMBINE = {"add": ew.add, "mul": ew.mul, "min": ew.min_, "max": ew.max_}


def _fit_update(v, shape, like):
    """v broadcast to the indexed shape (NumPy also drops leading size-1 dims)."""
    vs = shape_of(v)
    while len(vs) > len(shape) and vs[0] == 1:
        vs = vs[1:]
    if vs != shape_of(v):
        v = _reshape(v, vs)
    try:
        return broadcast_to(v, shape, like)
    except ShapeError:
        raise ShapeError(f"cannot broadcast update of shape {shape_of(v)} to the indexed "
                         f"shape {shape}") from None


def _update(x, idx, values, op, mode=None):
    """x.at[idx].<op>(values): a jx array even where nothing is updated."""
    return _materialize(_update_any(x, idx, values, op, mode))


def _update_any(x, idx, values, op, mode=None):
    x = as_value(x)
    if mode not in (None, "drop", "fill", "clip", "promise_in_bounds"):
        raise JxError(f"update mode must be None, 'drop', 'clip', 'fill' or "
                      f"'promise_in_bounds', got {mode!r}")
    # promise_in_bounds: out-of-range updates are undefined in JAX; jx drops them,
    # as JAX does on CPU and GPU
    scatter_mode = "clip" if mode == "clip" else "drop"
    if x.dtype == dtypes.bool_ and op in ("add", "mul"):
        op = "max" if op == "add" else "min"       # NumPy: bool + is or, bool * is and
    v = convert(as_value(values), x.dtype, [x])
    entries = _parse(shape_of(x), idx)
    if all(e.kind in ("none", "int") or (e.kind == "slice" and abs(e.step) == 1)
           for e in entries):
        return _update_static(x, entries, v, op, clip=mode == "clip")
    plan = _plan(x, entries)
    v = _fit_update(v, plan.shape, [x])
    if _updates_nothing(x, entries, plan):
        return x
    if op in ("min", "max") and dtypes.is_complex(x.dtype):
        raise NotImplementedError(
            f"x.at[...].{op} of a complex array at array indices is not supported yet; "
            "index with ints and slices, or combine with jx.numpy.maximum/minimum and "
            ".at[...].set")
    return bind1(_SCATTER[op], x, plan.indices, v, dimension_numbers=plan.scatter_dn(),
                 mode=scatter_mode)


def _updates_nothing(x, entries, plan) -> bool:
    """No element to update: x comes back as it is (JAX drops array indices into a
    size-0 axis), but a traced scalar into a size-0 axis is an error, like an int."""
    shape = shape_of(x)
    for e in entries:
        if e.kind == "dyn" and shape[e.dim] == 0:
            raise IndexError(f"a traced scalar index into axis {e.dim} of size 0 (array of "
                             f"shape {shape}): no element to update")
    return 0 in shape or int(np.prod(plan.shape, dtype=np.int64)) == 0


def _update_static(x, entries, v, op, clip=False):
    """Static contiguous windows: one dynamic_update_slice (and a slice to combine).
    An int out of range drops the update (mode "drop", JAX's default) or clamps."""
    shape = shape_of(x)
    out_shape, rev, starts, window = [], [], [], []
    dropped = False
    for e in entries:
        if e.kind == "none":
            out_shape.append(1)
        elif e.kind == "int":
            n = shape[e.dim]
            dropped = dropped or (not clip and not 0 <= e.value < n)
            starts.append(_clamp(e.value, n))
            window.append(1)
        else:
            if e.step < 0:
                rev.append(len(out_shape))
            out_shape.append(e.count)
            lo = e.start if e.step > 0 else e.start - e.count + 1
            starts.append(lo if e.count else 0)
            window.append(e.count)
    v = _fit_update(v, tuple(out_shape), [x])
    if dropped or 0 in window:
        return x
    if rev:
        v = bind1(st.rev, v, dimensions=tuple(rev))
    v = _reshape(v, tuple(window))
    if op != "set":
        cur = bind1(st.slice_, x, start_indices=tuple(starts),
                    limit_indices=tuple(s + w for s, w in zip(starts, window)),
                    strides=(1,) * len(shape))
        if op in ("min", "max") and dtypes.is_complex(x.dtype):   # lexicographic (JAX)
            from . import ufuncs
            v = (ufuncs.maximum if op == "max" else ufuncs.minimum)(cur, v)
        else:
            v = bind1(_COMBINE[op], cur, v)
    if tuple(window) == shape and isinstance(v, Tracer):
        return v
    return bind1(ix.dynamic_update_slice, x, v, *[np.asarray(s, np.int32) for s in starts])


def _ones_like(x):
    """Ones of x's dtype and weak type (the neutral element of divide/power)."""
    dt, weak = dtype_weak(x)
    one = broadcast_to(np.ones((), dt), shape_of(x), [x])
    return bind1(ew.convert_element_type, one, new_dtype=dt, weak_type=weak)


def _update_via_product(x, idx, values, mode, combine):
    """x.at[idx].divide/power: x combined with the product of the values each element
    receives (ones elsewhere), as JAX: repeated indices multiply their values first,
    and the result has combine's dtype (an int array divided gives floats)."""
    x = as_value(x)
    return _materialize(combine(x, _update_any(_ones_like(x), idx, values, "mul", mode)))


_UNROLL_LIMIT = 64


def _apply(x, idx, func, mode, unique_indices):
    """x.at[idx].apply(func): func applied to each indexed element once per time its
    index occurs (JAX's scatter_apply), out-of-range indices dropped or clipped by
    mode. func is applied elementwise, to the whole array, then selected."""
    from .ufuncs import greater, where
    x = as_value(x)
    dt, weak = dtype_weak(x)
    counts = _update_any(broadcast_to(np.zeros((), dtypes.int32), shape_of(x), [x]), idx,
                         np.ones((), dtypes.int32), "add", mode)
    if isinstance(counts, Tracer):
        if unique_indices:
            repeats = 1
        else:     # traced indices: at most one repeat per index position, unrolled
            plan_n = _index_count(x, idx)
            if plan_n > _UNROLL_LIMIT:
                raise JxError(f"x.at[idx].apply with {plan_n} traced indices: repeated "
                              "indices would need a loop of unknown length; pass "
                              "unique_indices=True if they are unique, or apply func in a "
                              "jx.lax.fori_loop")
            repeats = plan_n
    else:
        repeats = int(np.max(np.asarray(counts), initial=0))

    def fn(v):
        out = func(v)
        if shape_of(out) != shape_of(v):
            raise ShapeError(f"x.at[idx].apply: func must be elementwise (a scalar "
                             f"function), it turned shape {shape_of(v)} into {shape_of(out)}")
        return bind1(ew.convert_element_type, as_value(out), new_dtype=dt, weak_type=weak)

    for j in range(repeats):
        x = where(greater(counts, j), fn(x), x)
    x = bind1(ew.convert_element_type, x, new_dtype=dt, weak_type=weak)
    return _materialize(x)


def _index_count(x, idx) -> int:
    """How many elements x[idx] has: a bound on how often one element is indexed."""
    return int(np.prod(_plan(x, _parse(shape_of(x), idx)).shape, dtype=np.int64))


class _IndexUpdateRef:
    """x.at[idx]: functional updates, like JAX's `x.at[idx].set(v)`. The keywords
    indices_are_sorted and unique_indices are promises that change no value."""

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False,
            unique_indices=False):
        return _get(self.array, self.index, mode, fill_value)

    def set(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _update(self.array, self.index, values, "set", mode)

    def add(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _update(self.array, self.index, values, "add", mode)

    def subtract(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        from .ufuncs import negative
        x = as_value(self.array)     # values take x's dtype first (1.5 -> 1), then negate
        v = negative(convert(as_value(values), x.dtype, [x]))
        return _update(x, self.index, v, "add", mode)

    def multiply(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _update(self.array, self.index, values, "mul", mode)

    mul = multiply

    def divide(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        from .ufuncs import true_divide
        return _update_via_product(self.array, self.index, values, mode, true_divide)

    def power(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        from .ufuncs import power
        return _update_via_product(self.array, self.index, values, mode, power)

    def min(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _update(self.array, self.index, values, "min", mode)

    def max(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _update(self.array, self.index, values, "max", mode)

    def apply(self, func, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _apply(self.array, self.index, func, mode, unique_indices)


class IndexUpdateHelper:
    """The object behind `x.at`; `x.at[idx]` gives the update methods."""

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"IndexUpdateHelper({self.array!r})"


# ---------------------------------------------------------------- take

def _take_indices(idx, n, mode):
    """Indices and gather mode for take-style modes (NumPy's plus JAX's 'fill')."""
    if not dtypes.is_int(idx.dtype):
        raise IndexError(f"take indices must be integers, got {idx.dtype}")
    if mode in (None, "fill"):
        return _wrap(idx, n), "fill"
    if mode == "clip":      # NumPy's clip: negative indices clamp to 0, they do not wrap
        return idx, "clip"
    if mode == "wrap":
        from .ufuncs import remainder
        return remainder(idx, n), "clip"
    if mode == "raise":
        if isinstance(idx, Tracer):
            raise JxError("take(mode='raise') cannot check traced indices; use mode='fill' "
                          "(the default), 'clip' or 'wrap'")
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise IndexError(f"take index out of bounds for an axis of size {n}")
        return _wrap(idx, n), "clip"
    raise JxError(f"take mode must be None, 'fill', 'clip', 'wrap' or 'raise', got {mode!r}")


def take(a, indices, axis=None, mode=None, fill_value=None):
    """np.take; out-of-bounds indices give fill_value by default (JAX), see mode."""
    from .manipulation import ravel
    a, idx = as_value(a), _index_array(indices)
    if axis is None:
        a, axis = ravel(a), 0
    shape = shape_of(a)
    axis = canonical_axis(axis, len(shape))
    idx, gmode = _take_indices(idx, shape[axis], mode)
    entries = [_Entry("slice", d, d, 0, 1, shape[d]) for d in range(len(shape))]
    entries[axis] = _Entry("array", axis, axis, value=idx)
    return _gather(a, _plan(a, entries, wrap=False), gmode,
                   fill_value if gmode == "fill" else None)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """np.take_along_axis, as one gather with batching dims."""
    from .manipulation import ravel
    a, idx = as_value(arr), _index_array(indices)
    if axis is None:
        a, axis = ravel(a), 0
    ashape, ishape = shape_of(a), shape_of(idx)
    if len(ashape) != len(ishape):
        raise ShapeError(f"take_along_axis: indices {ishape} and array {ashape} must have "
                         "the same number of dims")
    axis = canonical_axis(axis, len(ashape))
    idx, gmode = _take_indices(idx, ashape[axis], mode)
    others = tuple(d for d in range(len(ashape)) if d != axis)
    for d in others:
        n = broadcast_shapes((ashape[d],), (ishape[d],))[0]
        ashape = ashape[:d] + (n,) + ashape[d + 1:]
        ishape = ishape[:d] + (n,) + ishape[d + 1:]
    a, idx = broadcast_to(a, ashape, [idx]), broadcast_to(idx, ishape, [a])
    if int(np.prod(ishape, dtype=np.int64)) == 0:
        return _empty_like(a, ishape, [a, idx])
    if ashape[axis] == 0:
        raise IndexError(f"take_along_axis: cannot index axis {axis} of size 0")
    dt = _index_dtype([idx], ashape)
    idx = _reshape(convert(idx, dt), ishape + (1,))
    dn = ix.GatherDimensionNumbers((), (axis,), (axis,), others, others)
    return bind1(ix.gather, a, idx, dimension_numbers=dn, slice_sizes=(1,) * len(ashape),
                 mode=gmode, fill_value=fill_value if gmode == "fill" else None)


__all__ = ["getitem", "IndexUpdateHelper", "take", "take_along_axis"]
_wrap_public(globals(), __all__)
