"""Data-dependent shapes: nonzero, the unique family, and searchsorted.

nonzero and unique have output shapes that depend on the values, which a
compiled program cannot have: as in JAX, they take size= (a static length:
the result is truncated or padded with fill_value) and work without it only on
concrete values, where the size is read off the data first. The work itself
is jx primitives (a stable argsort compacts the selected positions), so with
size= they trace, vmap and compile."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import dtypes
from ..errors import ShapeError
from ._util import has_tracer, shape_of
from .creation import _wrap_public, asarray
from . import manipulation as mp
from . import ufuncs as uf

UniqueAllResult = namedtuple("UniqueAllResult", "values indices inverse_indices counts")
UniqueCountsResult = namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = namedtuple("UniqueInverseResult", "values inverse_indices")


def _static_size(name, x, count):
    """The concrete number of selected elements, or an error naming size=."""
    if has_tracer(x):
        raise TypeError(f"jx.numpy.{name}: the output size depends on the values, which are "
                        f"traced here; pass size= (a static length) as in JAX")
    return int(count())


def _index_dtype():
    return dtypes.default_int()


def _compact(mask, size):
    """Positions (in order) of the True entries of the 1-d mask, the first size of
    them, and which of the size slots are real (the rest are padding)."""
    from .creation import arange
    from .reductions import sum
    from .sorting import argsort
    n = shape_of(mask)[0]
    order = argsort(uf.logical_not(mask), stable=True)       # Trues first, in order
    if size > n:
        order = mp.pad(order, (0, size - n))
    count = sum(mask, dtype=_index_dtype())
    valid = uf.less(arange(size, dtype=_index_dtype()), count)
    return uf.where(valid, mp.slice_axis(order, 0, 0, size), 0), valid


def nonzero(a, *, size=None, fill_value=None):
    """The indices of a's nonzero entries, one array per dimension."""
    from .reductions import count_nonzero
    x = asarray(a)
    s = shape_of(x)
    if not s:
        raise ValueError("nonzero of a 0-d array is not defined (use atleast_1d first), "
                         "as in JAX and NumPy 2")
    if size is None:
        size = _static_size("nonzero", x, lambda: count_nonzero(x))
    mask = uf.not_equal(mp.ravel(x), 0)
    pos, valid = _compact(mask, size)
    pos = pos.astype(_index_dtype())
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * len(s)
    if len(fills) != len(s):
        raise ValueError(f"nonzero: fill_value has {len(fills)} entries for {len(s)} dims")
    out, rest = [], pos
    strides = [int(np.prod(s[i + 1:], dtype=np.int64)) for i in range(len(s))]
    for st, f in zip(strides, fills):
        idx = uf.floor_divide(rest, st) if st != 1 else rest
        rest = uf.remainder(rest, st) if st != 1 else rest
        out.append(uf.where(valid, idx, 0 if f is None else f).astype(_index_dtype()))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(mp.ravel(asarray(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """The indices of the nonzero entries, one row each (a 0-d input has rows of
    no columns, as in NumPy)."""
    x = asarray(a)
    if not shape_of(x):
        rows = mp.stack(nonzero(mp.atleast_1d(x), size=size, fill_value=fill_value), -1)
        return mp.slice_axis(rows, 1, 0, 0)
    return mp.stack(nonzero(x, size=size, fill_value=fill_value), axis=-1)


def _unique_parts(x, size, fill_value, equal_nan):
    """values, first indices, inverse (flat), counts, padded to size."""
    from .creation import arange, full
    from .indexing import take
    from .reductions import count_nonzero
    from .sorting import argsort
    flat = mp.ravel(asarray(x))
    n = shape_of(flat)[0]
    perm = argsort(flat, stable=True)
    srt = take(flat, perm)
    if n:
        first = mp.slice_axis(srt, 0, 1, n)
        prev = mp.slice_axis(srt, 0, 0, n - 1)
        new = uf.not_equal(first, prev)
        if equal_nan and dtypes.is_inexact(srt.dtype):
            new = uf.logical_and(new, uf.logical_not(uf.logical_and(uf.isnan(first),
                                                                    uf.isnan(prev))))
        starts = mp.concatenate([full((1,), True), new])
    else:
        starts = full((0,), True)
    if size is None:
        size = _static_size("unique", x, lambda: count_nonzero(starts))
    it = _index_dtype()
    pos, valid = _compact(starts, size)
    pos = pos.astype(it)
    # group of each sorted element, scattered back to the original order
    from .reductions import cumsum
    group = uf.subtract(cumsum(starts.astype(it)), 1)
    inverse = full((n,), 0, it).at[perm].set(group) if n else full((0,), 0, it)
    if n == 0:
        zeros = full((size,), 0, it)
        vals = full((size,), 0 if fill_value is None else fill_value, flat.dtype)
        return vals, zeros, inverse, zeros
    fill = take(srt, 0) if fill_value is None else fill_value
    values = uf.where(valid, take(srt, pos), fill).astype(flat.dtype)
    indices = take(perm, pos).astype(it)
    # a group runs from its start to the next group's start (the last, to n)
    nxt = mp.concatenate([mp.slice_axis(pos, 0, 1, size), full((1,), n, it)])
    nxt = uf.where(uf.less(arange(1, size + 1, dtype=it), _count(valid)), nxt, n)
    counts = uf.where(valid, uf.subtract(nxt, pos), 0).astype(it)
    return values, indices, inverse, counts


def _count(valid):
    from .reductions import sum
    return sum(valid, dtype=_index_dtype())


def unique_all(x, /, *, size=None, fill_value=None):
    v, i, inv, c = _unique_parts(x, size, fill_value, equal_nan=False)
    return UniqueAllResult(v, i, mp.reshape(inv, shape_of(x)), c)


def unique_counts(x, /, *, size=None, fill_value=None):
    v, _, _, c = _unique_parts(x, size, fill_value, equal_nan=False)
    return UniqueCountsResult(v, c)


def unique_inverse(x, /, *, size=None, fill_value=None):
    v, _, inv, _ = _unique_parts(x, size, fill_value, equal_nan=False)
    return UniqueInverseResult(v, mp.reshape(inv, shape_of(x)))


def unique_values(x, /, *, size=None, fill_value=None):
    return _unique_parts(x, size, fill_value, equal_nan=False)[0]


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    """NumPy's unique of the flattened array (axis=None only)."""
    if axis is not None:
        raise NotImplementedError("jx.numpy.unique supports axis=None only (unique rows "
                                  "are not implemented yet)")
    v, i, inv, c = _unique_parts(ar, size, fill_value, equal_nan)
    extra = [r for r, want in ((i, return_index), (inv, return_inverse), (c, return_counts))
             if want]
    return (v, *extra) if extra else v


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Insertion points of v into the sorted 1-d a: for each value, how many
    entries of a sort before it (NaNs last, as in the sort)."""
    from .indexing import take
    from .reductions import sum
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"searchsorted: unknown method {method!r}")
    a = asarray(a)
    if len(shape_of(a)) != 1:
        raise ShapeError(f"searchsorted: a must be 1-d, got shape {shape_of(a)}")
    if sorter is not None:
        a = take(a, sorter)
    from ._util import promote_dtypes
    a, q = promote_dtypes(a, v)
    qs = shape_of(q)
    col = mp.reshape(q, qs + (1,))
    if side == "left":     # a[i] < q in the total order with NaNs last
        before = uf.less(a, col)
        if dtypes.is_float(a.dtype):
            before = uf.logical_or(before, uf.logical_and(uf.isnan(col),
                                                          uf.logical_not(uf.isnan(a))))
    else:                  # a[i] <= q
        before = uf.less_equal(a, col)
        if dtypes.is_float(a.dtype):
            before = uf.logical_or(before, uf.isnan(col))
    # int32 in both modes (as JAX), unless a is longer than int32 counts
    n = shape_of(a)[0]
    return sum(before, axis=-1, dtype=np.int32 if n <= np.iinfo(np.int32).max else np.int64)


__all__ = ["nonzero", "flatnonzero", "argwhere", "unique", "unique_all", "unique_counts",
           "unique_inverse", "unique_values", "searchsorted"]
_wrap_public(globals(), [n for n in __all__ if n not in ("unique_all", "unique_counts",
                                                         "unique_inverse")])
