"""Shape manipulation: reshape, transpose, axes moves, joins and splits, flips, pads."""
from __future__ import annotations

import math

import numpy as np

from ..core import Tracer
from ..dims import Dim, InconclusiveDimensionError, exact_quotient, where
from ..errors import ShapeError
from ..prims import structural as st
from .creation import _wrap_public
from ._util import as_value, bind1, broadcast_to as _broadcast_to, canonical_axes, \
    canonical_axis, convert, promote_dtypes, shape_of, stack_arrays


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """a with a new shape (one -1 is inferred). newshape= is NumPy's older
    name for shape (removed from JAX; accepted here, with a DeprecationWarning)."""
    if newshape is not None:
        import warnings
        warnings.warn("jx.numpy.reshape: newshape= is deprecated (JAX has removed it); "
                      "use shape=", DeprecationWarning, stacklevel=3)
        if shape is not None:
            raise TypeError("reshape: pass shape or newshape, not both")
        shape = newshape
    if shape is None:
        raise TypeError("reshape() missing the required argument 'shape'")
    newshape = shape
    x = as_value(a)
    if copy:
        from .creation import asarray
        x = asarray(x, copy=True)
    if order != "C":
        raise NotImplementedError("jx.numpy.reshape supports order='C' only")
    shape = (newshape,) if isinstance(newshape, int) else tuple(newshape)
    size = math.prod(shape_of(x))
    if shape.count(-1) > 1:
        raise ShapeError(f"reshape: only one -1 allowed in {shape}")
    if -1 in shape:
        known = math.prod(s for s in shape if not _minus_one(s))
        rest = exact_quotient(size, known)            # None where known does not divide
        if rest is None and isinstance(size, Dim) and isinstance(known, int) and known:
            raise InconclusiveDimensionError(
                f"reshape: cannot tell whether {known} divides {size}{where()} for every "
                f"size its symbols may take; declare it, e.g. "
                f"jx.dims.dim('{min(size.symbols())}', multiple_of={known})")
        if rest is None:
            raise ShapeError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(rest if _minus_one(s) else s for s in shape)
    if shape == shape_of(x):
        return x
    return bind1(st.reshape, x, new_sizes=shape)


def _minus_one(s) -> bool:
    return not isinstance(s, Dim) and s == -1


def ravel(a):
    return reshape(a, (-1,))


def transpose(a, axes=None):
    x = as_value(a)
    nd = len(shape_of(x))
    perm = tuple(range(nd))[::-1] if axes is None else tuple(canonical_axis(i, nd) for i in axes)
    if perm == tuple(range(nd)):
        return x
    return bind1(st.transpose, x, permutation=perm)


def swapaxes(a, axis1, axis2):
    nd = len(shape_of(a))
    perm = list(range(nd))
    i, j = canonical_axis(axis1, nd), canonical_axis(axis2, nd)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a, source, destination):
    nd = len(shape_of(a))
    src = canonical_axes(source, nd)
    dst = canonical_axes(destination, nd)
    if len(src) != len(dst):
        raise ShapeError("moveaxis: source and destination need the same number of axes")
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


def expand_dims(a, axis):
    x = as_value(a)
    nd = len(shape_of(x)) + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    return bind1(st.expand_dims, x, dimensions=tuple(sorted(canonical_axes(axis, nd))))


def squeeze(a, axis=None):
    x = as_value(a)
    shape = shape_of(x)
    if axis is None:
        dims = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        dims = tuple(sorted(canonical_axes(axis, len(shape))))
    return bind1(st.squeeze, x, dimensions=dims) if dims else x


def atleast_1d(a):
    x = as_value(a)
    return reshape(x, (1,)) if shape_of(x) == () else x


def atleast_2d(a):
    x = atleast_1d(a)
    return expand_dims(x, 0) if len(shape_of(x)) == 1 else x


def concatenate(arrays, axis=0):
    xs = promote_dtypes(*arrays)
    if axis is None:
        xs, axis = [ravel(x) for x in xs], 0
    if len(xs) == 1:
        return xs[0]
    nd = len(shape_of(xs[0]))
    if nd == 0:
        raise ShapeError("zero-dimensional arrays cannot be concatenated")
    return bind1(st.concatenate, *xs, dimension=canonical_axis(axis, nd))


def stack(arrays, axis=0):
    return stack_arrays(arrays, axis)


def hstack(arrays):
    xs = [atleast_1d(a) for a in arrays]
    return concatenate(xs, axis=0 if len(shape_of(xs[0])) == 1 else 1)


def vstack(arrays):
    return concatenate([atleast_2d(a) for a in arrays], axis=0)


def array_split(a, indices_or_sections, axis=0):
    """Like split, but n sections need not divide the axis: the first ones get one more."""
    if not isinstance(indices_or_sections, int):
        return split(a, indices_or_sections, axis)
    n = shape_of(a)[canonical_axis(axis, len(shape_of(a)))]
    k = indices_or_sections
    if k <= 0:
        raise ValueError("number of sections must be larger than 0")
    sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
    return split(a, list(np.cumsum(sizes)[:-1]), axis)


def split(a, indices_or_sections, axis=0):
    x = as_value(a)
    shape = shape_of(x)
    ax = canonical_axis(axis, len(shape))
    n = shape[ax]
    if isinstance(indices_or_sections, int):
        if n % indices_or_sections:
            raise ShapeError(f"array split does not result in an equal division: {n} into "
                             f"{indices_or_sections}")
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0] + [min(int(i), n) for i in indices_or_sections] + [n]
    return [slice_axis(x, ax, lo, max(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


def slice_axis(x, axis, start, stop, step=1):
    shape = shape_of(x)
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, stop, step
    return bind1(st.slice_, x, start_indices=tuple(starts), limit_indices=tuple(limits),
                 strides=tuple(strides))


def flip(a, axis=None):
    x = as_value(a)
    dims = canonical_axes(axis, len(shape_of(x)))
    return bind1(st.rev, x, dimensions=tuple(sorted(dims))) if dims else x


def broadcast_to(a, shape):
    return _broadcast_to(as_value(a), tuple(shape))


def broadcast_arrays(*args):
    from ._util import broadcast_shapes
    vals = [as_value(a) for a in args]
    shape = broadcast_shapes(*[shape_of(v) for v in vals])
    return [_broadcast_to(v, shape) for v in vals]


_PAD_MODES = ("constant", "edge", "wrap", "reflect", "symmetric")


def pad(array, pad_width, mode="constant", constant_values=0):
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"jx.numpy.pad supports modes {_PAD_MODES}, got {mode!r}")
    x = as_value(array)
    nd = len(shape_of(x))
    pw = _pad_widths(pad_width, nd)
    if mode != "constant":
        # each axis is a gather with indices known now: NumPy's own pad of arange
        for ax, (lo, hi) in enumerate(pw):
            if lo or hi:
                idx = np.pad(np.arange(shape_of(x)[ax]), (int(lo), int(hi)), mode=mode)
                x = _take_static(x, ax, idx)
        return x
    # the array keeps its dtype (as in NumPy and JAX): the constant is cast to it
    cv = convert(constant_values, x.dtype, [x])
    config = tuple((int(lo), int(hi), 0) for lo, hi in pw)
    return bind1(st.pad, x, cv, padding_config=config)


def _pad_widths(pad_width, nd: int) -> np.ndarray:
    """(nd, 2) int64 widths from NumPy's forms: n, (lo, hi), ((lo, hi),) * nd,
    ((n,),) * nd. Widths must be integers, as in JAX (NumPy would truncate 1.5),
    and fit an array extent."""
    try:
        raw = np.asarray(pad_width)
        if raw.dtype == object:                # ints too large for int64
            raise OverflowError
    except (OverflowError, ValueError):
        raise ValueError(f"jx.numpy.pad: pad_width {pad_width!r:.80} is not a list of "
                         "(before, after) integer widths an array can have") from None
    if raw.size and raw.dtype.kind not in "iu":
        raise TypeError(f"jx.numpy.pad: pad_width must be integers, got {pad_width!r:.80} "
                        f"({raw.dtype}); round the widths with int() first")
    try:
        pw = np.broadcast_to(raw.astype(np.int64), (nd, 2))
    except ValueError:
        raise ValueError(f"jx.numpy.pad: pad_width {pad_width!r:.80} does not give (before, "
                         f"after) widths for the array's {nd} dims") from None
    if (pw < 0).any():
        raise ValueError(f"pad widths must be >= 0, got {pad_width}")
    return pw


def _take_static(x, axis, idx):
    """x gathered along axis at indices known at trace time, as slices: runs of
    consecutive indices (step +1, -1 or 0) become slice, rev and broadcast."""
    idx = [int(i) for i in idx]
    n = shape_of(x)[axis]
    if idx == list(range(n)):
        return x
    if not idx:
        return slice_axis(x, axis, 0, 0)
    runs = [[idx[0]]]
    for i in idx[1:]:
        run, step = runs[-1], i - runs[-1][-1]
        if step in (-1, 0, 1) and (len(run) == 1 or run[-1] - run[-2] == step):
            run.append(i)
        else:
            runs.append([i])
    parts = []
    for run in runs:
        lo, hi = min(run), max(run)
        part = slice_axis(x, axis, lo, hi + 1)
        if len(run) > 1 and run[1] < run[0]:
            part = flip(part, axis)
        elif len(run) > 1 and run[1] == run[0]:
            shape = list(shape_of(part))
            shape[axis] = len(run)
            part = _broadcast_to(part, tuple(shape))
        parts.append(part)
    return concatenate(parts, axis=axis)


def tile(a, reps):
    x = as_value(a)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    shape = shape_of(x)
    nd = max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + tuple(shape)
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(x, shape)
    # interleave a new axis of size r before each dim, broadcast, then merge
    expanded = reshape(x, sum(((1, s) for s in shape), ()))
    out = _broadcast_to(expanded, sum(((r, s) for r, s in zip(reps, shape)), ()))
    return reshape(out, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a, repeats, axis=None):
    x = as_value(a)
    if axis is None:
        x, axis = ravel(x), 0
    shape = shape_of(x)
    ax = canonical_axis(axis, len(shape))
    if not isinstance(repeats, (int, np.integer)):
        if isinstance(repeats, Tracer):
            raise TypeError("jx.numpy.repeat needs repeat counts known at trace time: the "
                            "output length of a compiled array cannot depend on values")
        counts = np.broadcast_to(np.asarray(repeats, dtype=np.int64), (shape[ax],))
        return _take_static(x, ax, np.repeat(np.arange(shape[ax]), counts))
    repeats = int(repeats)
    y = expand_dims(x, ax + 1)
    tgt = shape[:ax + 1] + (repeats,) + shape[ax + 1:]
    y = _broadcast_to(y, tgt)
    return reshape(y, shape[:ax] + (shape[ax] * repeats,) + shape[ax + 1:])


def roll(a, shift, axis=None):
    x = as_value(a)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), shape_of(x))
    if isinstance(shift, (tuple, list)) or isinstance(axis, (tuple, list)):
        axes = axis if isinstance(axis, (tuple, list)) else (axis,) * len(shift)
        shifts = shift if isinstance(shift, (tuple, list)) else (shift,) * len(axes)
        if len(axes) != len(shifts):
            raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
        for s, ax in zip(shifts, axes):
            x = roll(x, s, ax)
        return x
    ax = canonical_axis(axis, len(shape_of(x)))
    n = shape_of(x)[ax]
    if n == 0:
        return x
    s = int(shift) % n
    if s == 0:
        return x
    return concatenate([slice_axis(x, ax, n - s, n), slice_axis(x, ax, 0, n - s)], axis=ax)


def atleast_3d(a):
    x = atleast_2d(a)
    shape = shape_of(x)
    if len(shape) == 2:   # NumPy puts a 1-d array in the middle: (1, n, 1)
        return reshape(x, shape + (1,))
    return x


def column_stack(arrays):
    xs = [as_value(a) for a in arrays]
    xs = [reshape(x, (-1, 1)) if len(shape_of(x)) < 2 else x for x in xs]
    return concatenate(xs, axis=1)


def dstack(arrays):
    return concatenate([atleast_3d(a) for a in arrays], axis=2)


def flipud(a):
    return flip(a, 0)


def fliplr(a):
    return flip(a, 1)


def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(arr), ravel(values)])
    return concatenate([arr, values], axis=axis)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    from .ufuncs import not_equal, subtract
    x = as_value(a)
    ax = canonical_axis(axis, len(shape_of(x)))
    parts = [x]
    for extra, at in ((prepend, 0), (append, 1)):
        if extra is not None:
            e = as_value(extra)
            if len(shape_of(e)) == 0:   # a scalar stands for a slab of width 1
                shape = list(shape_of(x))
                shape[ax] = 1
                e = broadcast_to(e, shape)
            parts.insert(len(parts) if at else 0, e)
    x = concatenate(parts, axis=ax)
    for _ in range(n):
        m = shape_of(x)[ax]
        hi, lo = slice_axis(x, ax, 1, m), slice_axis(x, ax, 0, max(m - 1, 0))
        x = not_equal(hi, lo) if np.dtype(x.dtype) == np.bool_ else subtract(hi, lo)
    return x


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal becomes the last axis (NumPy's layout), read with one strided slice
    of the flattened (n, m) pair: element (i, i + offset) sits at i * (m + 1) + offset."""
    x = as_value(a)
    nd = len(shape_of(x))
    ax1, ax2 = canonical_axis(axis1, nd), canonical_axis(axis2, nd)
    if ax1 == ax2:
        raise ShapeError("diagonal: axis1 and axis2 cannot be the same")
    x = moveaxis(x, (ax1, ax2), (-2, -1))
    *batch, n, m = shape_of(x)
    count = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    start = offset if offset >= 0 else -offset * m
    flat = reshape(x, tuple(batch) + (n * m,))
    if count == 0:
        return slice_axis(flat, len(batch), 0, 0)
    return slice_axis(flat, len(batch), start, start + (count - 1) * (m + 1) + 1, m + 1)


def diag(v, k=0):
    from .ufuncs import where
    x = as_value(v)
    shape = shape_of(x)
    if len(shape) == 2:
        return diagonal(x, k)
    if len(shape) != 1:
        raise ShapeError(f"diag needs a 1-d or 2-d array, got shape {shape}")
    size = shape[0] + abs(k)
    padded = pad(x, (0, abs(k)))
    # out[r, r + k] = v[r] for k >= 0; out[c - k, c] = v[c] for k < 0
    vals = reshape(padded, (size, 1) if k >= 0 else (1, size))
    return where(np.eye(size, k=k, dtype=bool), vals, np.zeros((), np.dtype(x.dtype)))


def _tri_mask(a, k, lower):
    from .ufuncs import where
    x = as_value(a)
    shape = shape_of(x)
    if len(shape) < 2:
        raise ShapeError(f"{'tril' if lower else 'triu'} needs at least 2 dims, got {shape}")
    n, m = shape[-2:]
    mask = np.tri(n, m, k, dtype=bool) if lower else ~np.tri(n, m, k - 1, dtype=bool)
    return where(mask, x, np.zeros((), np.dtype(x.dtype)))


def tril(m, k=0):
    return _tri_mask(m, k, True)


def triu(m, k=0):
    return _tri_mask(m, k, False)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [ravel(x) for x in xi]
    n = len(xs)
    outs = []
    for i, x in enumerate(xs):
        shape = [1] * n
        shape[i] = shape_of(x)[0]
        if indexing == "xy" and n >= 2 and i < 2:   # the first two axes swap
            shape[0], shape[1] = shape[1], shape[0]
        outs.append(reshape(x, tuple(shape)))
    if sparse:
        return outs
    from ._util import broadcast_shapes
    full = broadcast_shapes(*(shape_of(o) for o in outs))   # a 0-length input gives 0
    return [_broadcast_to(o, full) for o in outs]


__all__ = [n for n, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__ and n[0] != "_"]
_wrap_public(globals(), __all__)
