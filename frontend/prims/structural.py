"""Shape and layout primitives: broadcast, reshape, transpose, squeeze,
expand_dims, slice, pad, concatenate, rev, iota."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..core import declare
from ..errors import ShapeError
from ..ir import ShapedArray


# broadcast_in_dim: operand dim i becomes output dim broadcast_dimensions[i]
def _check_sizes(shape):
    if any(d < 0 for d in shape):
        raise ShapeError(f"shape {tuple(shape)} has a negative size")


def _broadcast_rule(x, shape, broadcast_dimensions):
    _check_sizes(shape)
    if len(broadcast_dimensions) != x.ndim:
        raise ShapeError(f"broadcast_dimensions {broadcast_dimensions} must name one output "
                         f"dim per operand dim of {x}")
    if list(broadcast_dimensions) != sorted(set(broadcast_dimensions)) or \
            any(not 0 <= d < len(shape) for d in broadcast_dimensions):
        raise ShapeError(f"broadcast_dimensions {broadcast_dimensions} must be increasing "
                         f"and within rank {len(shape)}")
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] not in (1, shape[d]):
            raise ShapeError(f"cannot broadcast {x} to {shape}: dim {i} has size "
                             f"{x.shape[i]}, target dim {d} has {shape[d]}")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast(x, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape).copy()


broadcast_in_dim = declare("broadcast_in_dim", _broadcast_rule, _broadcast)


def _reshape_rule(x, new_sizes):
    _check_sizes(new_sizes)
    # exact (int64 would wrap); symbolic sizes compare in canonical form
    if math.prod(new_sizes) != x.size:
        raise ShapeError(f"cannot reshape {x} ({x.size} elements) to {tuple(new_sizes)}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape = declare("reshape", _reshape_rule, lambda x, new_sizes: x.reshape(new_sizes))


def _transpose_rule(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise ShapeError(f"permutation {permutation} is not a permutation of {x.ndim} axes")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose = declare("transpose", _transpose_rule,
                    lambda x, permutation: np.transpose(x, permutation).copy())


def _squeeze_rule(x, dimensions):
    if len(set(dimensions)) != len(dimensions):
        raise ShapeError(f"squeeze dimensions {dimensions} repeat a dim")
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise ShapeError(f"cannot squeeze dim {d} of {x}: it must exist and have size 1")
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return ShapedArray(shape, x.dtype, x.weak_type)


squeeze = declare("squeeze", _squeeze_rule,
                  lambda x, dimensions: np.squeeze(x, tuple(dimensions)))


def _expand_rule(x, dimensions):
    ndim = x.ndim + len(dimensions)
    if any(not 0 <= d < ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise ShapeError(f"expand_dims dimensions {dimensions} invalid for result rank {ndim}")
    shape = list(x.shape)
    for d in sorted(dimensions):
        shape.insert(d, 1)
    return ShapedArray(shape, x.dtype, x.weak_type)


expand_dims = declare("expand_dims", _expand_rule,
                      lambda x, dimensions: np.expand_dims(x, tuple(dimensions)))


def _slice_rule(x, start_indices, limit_indices, strides):
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise ShapeError(f"slice needs start/limit/stride for each of the {x.ndim} dims of {x}")
    shape = []
    for d, (s, l, st) in enumerate(zip(start_indices, limit_indices, strides)):
        if not (0 <= s <= l <= x.shape[d]) or st < 1:
            raise ShapeError(f"slice [{s}:{l}:{st}] out of range for dim {d} of {x}")
        shape.append(-(-(l - s) // st))          # >= 0: l >= s above
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice(x, start_indices, limit_indices, strides):
    return x[tuple(slice(s, l, st) for s, l, st in
                   zip(start_indices, limit_indices, strides))].copy()


slice_ = declare("slice", _slice_rule, _slice)


def _pad_rule(x, padval, padding_config):
    if padval.shape != () or padval.dtype != x.dtype:
        raise ShapeError(f"padding value must be a scalar of {x.dtype}, got {padval}")
    if len(padding_config) != x.ndim:
        raise ShapeError(f"padding_config needs (low, high, interior) for each dim of {x}")
    shape = []
    for n, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise ShapeError("interior padding must be >= 0")
        size = lo + hi + n + (n - 1 if n >= 1 else 0) * interior   # (decides for symbols)
        if size < 0:
            raise ShapeError(f"padding {padding_config} leaves a negative size for {x}")
        shape.append(size)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _pad(x, padval, padding_config):
    # interior padding first, then edges; negative edges crop
    if x.ndim == 0:
        return x.copy()
    inner = [n + max(0, n - 1) * i for n, (_, _, i) in zip(x.shape, padding_config)]
    y = np.full(inner, padval, dtype=x.dtype)
    y[tuple(slice(None, None, i + 1) for (_, _, i) in padding_config)] = x
    pads = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in padding_config]
    y = np.pad(y, pads, constant_values=padval)
    crop = tuple(slice(max(-lo, 0), y.shape[d] - max(-hi, 0))
                 for d, (lo, hi, _) in enumerate(padding_config))
    return y[crop]


pad = declare("pad", _pad_rule, _pad)


def _concat_rule(*xs, dimension):
    if not xs:
        raise ShapeError("concatenate needs at least one operand")
    x0 = xs[0]
    if not 0 <= dimension < x0.ndim:
        raise ShapeError(f"dimension {dimension} out of range for {x0}")
    for x in xs[1:]:
        if x.dtype != x0.dtype or x.ndim != x0.ndim or any(
                a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape)) if i != dimension):
            raise ShapeError(f"cannot concatenate {x0} and {x} along dim {dimension}")
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, x0.dtype, all(x.weak_type for x in xs))


concatenate = declare("concatenate", _concat_rule,
                      lambda *xs, dimension: np.concatenate(xs, axis=dimension))


def _rev_rule(x, dimensions):
    if any(not 0 <= d < x.ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise ShapeError(f"rev dimensions {dimensions} must be distinct dims of {x}")
    return x


rev = declare("rev", _rev_rule, lambda x, dimensions: np.flip(x, tuple(dimensions)).copy())


def _iota_rule(*, dtype, shape, dimension):
    dtypes.check_supported(dtype)
    if dtype == dtypes.bool_:
        raise ShapeError("iota needs a numeric dtype, got bool")
    _check_sizes(shape)
    if not 0 <= dimension < len(shape):
        raise ShapeError(f"iota dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype)


def _iota(*, dtype, shape, dimension):
    ar = np.arange(shape[dimension], dtype=dtype)
    return _broadcast(ar, shape, (dimension,))


iota = declare("iota", _iota_rule, _iota)
