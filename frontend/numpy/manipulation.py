"""Shape manipulation: reshape, transpose, axes moves, joins and splits, flips, pads."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..prims import structural as st
from ._util import as_value, bind1, broadcast_to as _broadcast_to, canonical_axes, \
    canonical_axis, promote_dtypes, shape_of


def reshape(a, newshape, order="C"):
    x = as_value(a)
    if order != "C":
        raise NotImplementedError("jx.numpy.reshape supports order='C' only")
    shape = (newshape,) if isinstance(newshape, int) else tuple(newshape)
    size = int(np.prod(shape_of(x), dtype=np.int64))
    if shape.count(-1) > 1:
        raise ShapeError(f"reshape: only one -1 allowed in {shape}")
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if shape == shape_of(x):
        return x
    return bind1(st.reshape, x, new_sizes=shape)


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
    xs = [as_value(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to stack")
    shapes = {shape_of(x) for x in xs}
    if len(shapes) > 1:
        raise ShapeError(f"all input arrays must have the same shape, got {sorted(shapes)}")
    ax = canonical_axis(axis, len(shape_of(xs[0])) + 1)
    return concatenate([expand_dims(x, ax) for x in xs], axis=ax)


def hstack(arrays):
    xs = [atleast_1d(a) for a in arrays]
    return concatenate(xs, axis=0 if len(shape_of(xs[0])) == 1 else 1)


def vstack(arrays):
    return concatenate([atleast_2d(a) for a in arrays], axis=0)


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


def pad(array, pad_width, mode="constant", constant_values=0):
    if mode != "constant":
        raise NotImplementedError(f"jx.numpy.pad supports mode='constant' only, got {mode!r}")
    x = as_value(array)
    nd = len(shape_of(x))
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64).reshape(-1, 2)
                         if np.ndim(pad_width) else np.full((1, 2), pad_width), (nd, 2))
    (xv, cv) = promote_dtypes(x, constant_values)
    config = tuple((int(lo), int(hi), 0) for lo, hi in pw)
    return bind1(st.pad, xv, cv, padding_config=config)


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
    if not isinstance(repeats, int):
        raise NotImplementedError("jx.numpy.repeat needs an integer repeat count")
    x = as_value(a)
    if axis is None:
        x, axis = ravel(x), 0
    shape = shape_of(x)
    ax = canonical_axis(axis, len(shape))
    y = expand_dims(x, ax + 1)
    tgt = shape[:ax + 1] + (repeats,) + shape[ax + 1:]
    y = _broadcast_to(y, tgt)
    return reshape(y, shape[:ax] + (shape[ax] * repeats,) + shape[ax + 1:])


def roll(a, shift, axis=None):
    x = as_value(a)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), shape_of(x))
    ax = canonical_axis(axis, len(shape_of(x)))
    n = shape_of(x)[ax]
    if n == 0:
        return x
    s = int(shift) % n
    if s == 0:
        return x
    return concatenate([slice_axis(x, ax, n - s, n), slice_axis(x, ax, 0, n - s)], axis=ax)


__all__ = [n for n, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__ and n[0] != "_"]
