"""Reductions and scans along axes: reduce_{sum,max,min,prod}, argmax/argmin, cumsum."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import declare
from ..errors import ShapeError
from ..ir import ShapedArray


def _check_axes(x, axes):
    if any(not 0 <= a < x.ndim for a in axes) or len(set(axes)) != len(axes):
        raise ShapeError(f"axes {axes} are invalid for {x}")


def _reduce_rule(name, kinds):
    def rule(x, axes):
        _check_axes(x, axes)
        if x.dtype == dtypes.bool_ and "bool" not in kinds:
            raise ShapeError(f"{name} does not take bool operands; convert first")
        if dtypes.is_complex(x.dtype) and "complex" not in kinds:
            raise ShapeError(f"{name} does not take complex operands (they have no "
                             "order); reduce their real parts or absolute values")
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type)
    return rule


def _max_impl(x, axes):
    return np.max(x, axis=tuple(axes)) if x.size or not axes else \
        np.full([s for i, s in enumerate(x.shape) if i not in axes], _lowest(x.dtype), x.dtype)


def _min_impl(x, axes):
    return np.min(x, axis=tuple(axes)) if x.size or not axes else \
        np.full([s for i, s in enumerate(x.shape) if i not in axes], _highest(x.dtype), x.dtype)


def _lowest(dt):
    dt = np.dtype(dt)
    return -np.inf if dtypes.is_float(dt) else (False if dt == dtypes.bool_ else np.iinfo(dt).min)


def _highest(dt):
    dt = np.dtype(dt)
    return np.inf if dtypes.is_float(dt) else (True if dt == dtypes.bool_ else np.iinfo(dt).max)


def _over(np_reduce):
    """A NumPy reduction as XLA's: over no dims it is the operand itself (NumPy's
    sum adds it to +0.0, which turns -0.0 into +0.0), and 16-bit floats accumulate
    in float32 and round once (NumPy's float16 product overflows part-way)."""
    def impl(x, axes):
        if not axes:
            return np.array(x, dtype=x.dtype, copy=True)
        if dtypes.is_float(x.dtype) and x.dtype.itemsize == 2:
            return np_reduce(x.astype(np.float32), axis=tuple(axes)).astype(x.dtype)
        return np_reduce(x, axis=tuple(axes), dtype=x.dtype)
    return impl


reduce_sum = declare("reduce_sum", _reduce_rule("reduce_sum", ("complex",)), _over(np.sum))
reduce_prod = declare("reduce_prod", _reduce_rule("reduce_prod", ("complex",)),
                      _over(np.prod))
reduce_max = declare("reduce_max", _reduce_rule("reduce_max", ("bool",)), _max_impl)
reduce_min = declare("reduce_min", _reduce_rule("reduce_min", ("bool",)), _min_impl)


def _arg_rule(x, axis, index_dtype):
    _check_axes(x, (axis,))
    if not dtypes.is_int(index_dtype):
        raise ShapeError(f"index_dtype must be an integer dtype, got {index_dtype}")
    if dtypes.is_complex(x.dtype):      # as lax's: complex numbers have no order here
        raise ShapeError(f"arg-reductions do not take complex operands, got {x}; reduce "
                         "their real parts or absolute values")
    if x.shape[axis] == 0:
        raise ShapeError(f"arg-reduction over an empty axis {axis} of {x}")
    shape = tuple(s for i, s in enumerate(x.shape) if i != axis)
    return ShapedArray(shape, index_dtype)


def _arg(np_fn):
    # NaN wins (as in NumPy): the first NaN's index is returned
    def impl(x, axis, index_dtype):
        return np_fn(x, axis=axis).astype(index_dtype)
    return impl


argmax = declare("argmax", _arg_rule, _arg(np.argmax))
argmin = declare("argmin", _arg_rule, _arg(np.argmin))


def _cum_rule(name):
    def rule(x, axis, reverse=False):
        _check_axes(x, (axis,))
        if x.dtype == dtypes.bool_:
            raise ShapeError(f"{name} does not take bool operands; convert first")
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    return rule


def _cum(np_fn):
    def impl(x, axis, reverse=False):
        if reverse:
            return np.flip(np_fn(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
        return np_fn(x, axis=axis, dtype=x.dtype)
    return impl


def _cummax_impl(x, axis, reverse=False):
    f = np.maximum.accumulate
    return np.flip(f(np.flip(x, axis), axis=axis), axis) if reverse else f(x, axis=axis)


def _cummin_impl(x, axis, reverse=False):
    f = np.minimum.accumulate
    return np.flip(f(np.flip(x, axis), axis=axis), axis) if reverse else f(x, axis=axis)


cumsum = declare("cumsum", _cum_rule("cumsum"), _cum(np.cumsum))
cumprod = declare("cumprod", _cum_rule("cumprod"), _cum(np.cumprod))
cummax = declare("cummax", _cum_rule("cummax"), _cummax_impl)
cummin = declare("cummin", _cum_rule("cummin"), _cummin_impl)
