"""Windowed reductions: reduce_window_{sum,max,min,prod} over strided, padded,
base- and window-dilated windows, and the two select primitives of max/min
pooling's derivatives, select_and_gather_add (jvp) and select_and_scatter_add
(vjp).

Window params, one entry per operand dim: window_dimensions, window_strides,
padding ((low, high) pairs; negative crops), base_dilation (the operand is
dilated first: holes between elements), window_dilation (holes between the
window's taps). Padding and holes hold the reduction's identity, so they never
change a result (the reduction skips them, as XLA's).

The select primitives choose one element per window, as XLA does with the
comparison `select` ("ge" for max, "le" for min): walking the window in
row-major order, the chosen element is kept while `chosen <select> candidate`
holds, so among equal maxima the first wins (and a NaN is passed over by the
next element, as in XLA). select_and_gather_add starts from the identity (whose
tangent is 0) and returns the tangent of the chosen element;
select_and_scatter_add starts from the window's first element (padding
included, as JAX's CPU lowering pads with the identity) and adds each source
element to the chosen element's position. The references below are NumPy over
whole arrays, one step per window tap.
"""
from __future__ import annotations

import itertools
import operator

import numpy as np

from .. import dtypes
from ..core import declare
from ..errors import ShapeError
from ..ir import ShapedArray

SELECTS = ("ge", "le")


# ------------------------------------------------------------------ shapes

def _ints(name, values, n, positive):
    if len(values) != n:
        raise ShapeError(f"{name} needs one entry per operand dim ({n}), got {tuple(values)}")
    for v in values:
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise ShapeError(f"{name} must hold integers, got {tuple(values)}")
        if positive and v < 1:
            raise ShapeError(f"{name} must be positive, got {tuple(values)}")


def window_shape(shape, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation) -> tuple:
    """The output shape of a windowed reduction (params checked)."""
    n = len(shape)
    _ints("window_dimensions", window_dimensions, n, True)
    _ints("window_strides", window_strides, n, True)
    _ints("base_dilation", base_dilation, n, True)
    _ints("window_dilation", window_dilation, n, True)
    if len(padding) != n or any(len(p) != 2 for p in padding):
        raise ShapeError(f"padding needs one (low, high) pair per operand dim ({n}), "
                         f"got {tuple(padding)}")
    _ints("padding", [v for p in padding for v in p], 2 * n, False)
    out = []
    for d, w, s, (lo, hi), b, r in zip(shape, window_dimensions, window_strides, padding,
                                       base_dilation, window_dilation):
        padded = (d - 1) * b + 1 + lo + hi if d > 0 else lo + hi
        span = (w - 1) * r + 1
        out.append(0 if padded < span else (padded - span) // s + 1)
    return tuple(out)


def _params(p):
    return (p["window_dimensions"], p["window_strides"], p["padding"], p["base_dilation"],
            p["window_dilation"])


def _reduce_rule(name, allow_bool):
    def rule(x, **p):
        if x.dtype == dtypes.bool_ and not allow_bool:
            raise ShapeError(f"{name} needs a numeric operand, got {x}")
        return ShapedArray(window_shape(x.shape, *_params(p)), x.dtype, x.weak_type)
    return rule


def _check_select(select):
    if select not in SELECTS:
        raise ShapeError(f"select must be one of {SELECTS}, got {select!r}")


def _gather_rule(t, x, select, **p):
    _check_select(select)
    if t.shape != x.shape or t.dtype != x.dtype:
        raise ShapeError(f"tangents {t} and operand {x} must have one shape and dtype")
    return ShapedArray(window_shape(x.shape, *_params(p)), t.dtype, t.weak_type)


def _scatter_rule(source, x, select, **p):
    _check_select(select)
    out = window_shape(x.shape, *_params(p))
    if tuple(source.shape) != out or source.dtype != x.dtype:
        raise ShapeError(f"source {source} must have the windows' shape {out} and the "
                         f"dtype of the operand {x}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


# ------------------------------------------------------------------ references

def identity(kind: str, dtype):
    """The identity of the reduction `kind` (sum, prod, max, min) in dtype."""
    dt = np.dtype(dtype)
    if kind in ("sum", "prod"):
        return np.array(0 if kind == "sum" else 1, dt)
    if dt == dtypes.bool_:
        return np.array(kind == "min", dt)
    if dtypes.is_float(dt):
        return np.array(-np.inf if kind == "max" else np.inf, dt)
    info = np.iinfo(dt)
    return np.array(info.min if kind == "max" else info.max, dt)


def _dilated_padded(x, fill, padding, base_dilation):
    """x with base_dilation - 1 holes between elements, then the edge padding
    (negative crops), every new place holding fill."""
    inner = [(n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base_dilation)]
    y = np.full(inner, fill, x.dtype)
    y[tuple(slice(None, None, b) for b in base_dilation)] = x
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    y = np.pad(y, grow, constant_values=fill)
    return y[tuple(slice(max(-lo, 0), y.shape[d] - max(-hi, 0))
                   for d, (lo, hi) in enumerate(padding))]


def _taps(xp, out, window_dimensions, window_strides, window_dilation):
    """For each window tap in row-major order, the strided view of xp holding
    that tap of every window (shape `out`)."""
    for pos in itertools.product(*[range(w) for w in window_dimensions]):
        yield xp[tuple(slice(j * r, j * r + (m - 1) * s + 1, s) if m else slice(0, 0)
                       for j, r, m, s in zip(pos, window_dilation, out, window_strides))]


def _windows(x, fill, p):
    """x's windows as one array: the output shape, then the window's dims."""
    out = window_shape(x.shape, *_params(p))
    wd = p["window_dimensions"]
    if 0 in out:
        return np.full(out + tuple(wd), fill, x.dtype)
    xp = _dilated_padded(x, fill, p["padding"], p["base_dilation"])
    span = [(w - 1) * r + 1 for w, r in zip(wd, p["window_dilation"])]
    view = np.lib.stride_tricks.sliding_window_view(xp, span)
    view = view[tuple(slice(0, (m - 1) * s + 1, s) for m, s in zip(out, p["window_strides"]))
                + tuple(slice(None, None, r) for r in p["window_dilation"])]
    return view


def _reduce_impl(kind, np_reduce):
    def impl(x, **p):
        w = _windows(x, identity(kind, x.dtype), p)
        axes = tuple(range(x.ndim, 2 * x.ndim))
        if dtypes.is_float(x.dtype) and x.dtype.itemsize == 2:
            return np_reduce(w.astype(np.float32), axis=axes).astype(x.dtype)
        return np_reduce(w, axis=axes).astype(x.dtype, copy=False)
    return impl


reduce_window_sum = declare("reduce_window_sum", _reduce_rule("reduce_window_sum", False),
                            _reduce_impl("sum", np.sum))
reduce_window_prod = declare("reduce_window_prod", _reduce_rule("reduce_window_prod", False),
                             _reduce_impl("prod", np.prod))
reduce_window_max = declare("reduce_window_max", _reduce_rule("reduce_window_max", True),
                            _reduce_impl("max", np.max))
reduce_window_min = declare("reduce_window_min", _reduce_rule("reduce_window_min", True),
                            _reduce_impl("min", np.min))


def _keeps(select):
    return operator.ge if select == "ge" else operator.le


def _select_and_gather_add(t, x, select, **p):
    out = window_shape(x.shape, *_params(p))
    ident = identity("max" if select == "ge" else "min", x.dtype)
    keep = _keeps(select)
    cur = np.full(out, ident, x.dtype)
    tan = np.zeros(out, t.dtype)
    if 0 in out:
        return tan
    xp = _dilated_padded(x, ident, p["padding"], p["base_dilation"])
    tp = _dilated_padded(t, np.zeros((), t.dtype), p["padding"], p["base_dilation"])
    args = (out, p["window_dimensions"], p["window_strides"], p["window_dilation"])
    with np.errstate(invalid="ignore"):
        for xs, ts in zip(_taps(xp, *args), _taps(tp, *args)):
            kept = keep(cur, xs)
            cur = np.where(kept, cur, xs)
            tan = np.where(kept, tan, ts)
    return tan


def _select_and_scatter_add(source, x, select, **p):
    out = window_shape(x.shape, *_params(p))
    result = np.zeros(x.shape, source.dtype)
    if 0 in out or 0 in x.shape:
        return result
    ident = identity("max" if select == "ge" else "min", x.dtype)
    keep = _keeps(select)
    xp = _dilated_padded(x, ident, p["padding"], p["base_dilation"])
    args = (out, p["window_dimensions"], p["window_strides"], p["window_dilation"])
    taps = list(_taps(xp, *args))
    cur, chosen = taps[0], np.zeros(out, np.int64)
    with np.errstate(invalid="ignore"):
        for k, xs in enumerate(taps[1:], 1):
            kept = keep(cur, xs)
            cur = np.where(kept, cur, xs)
            chosen = np.where(kept, chosen, k)
    # add each source element at its chosen tap, in the padded, dilated space
    acc = np.zeros(xp.shape, source.dtype)
    positions = itertools.product(*[range(w) for w in p["window_dimensions"]])
    for k, pos in enumerate(positions):
        at = tuple(slice(j * r, j * r + (m - 1) * s + 1, s)
                   for j, r, m, s in zip(pos, p["window_dilation"], out, p["window_strides"]))
        acc[at] += np.where(chosen == k, source, np.zeros((), source.dtype))
    # back to the operand: undo the padding (zeros where it cropped), keep every
    # base_dilation-th place
    back = [(-lo, -hi) for lo, hi in p["padding"]]
    acc = _dilated_padded(acc, np.zeros((), source.dtype), back, (1,) * x.ndim)
    return acc[tuple(slice(None, None, b) for b in p["base_dilation"])]


select_and_gather_add = declare("select_and_gather_add", _gather_rule, _select_and_gather_add)
select_and_scatter_add = declare("select_and_scatter_add", _scatter_rule,
                                 _select_and_scatter_add)
