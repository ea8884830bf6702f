"""quantile, percentile, median and their nan- variants, as jax.numpy's: sort along
the reduced axes (moved last and merged), then read the q-th position, interpolated
by `method` (linear, lower, higher, midpoint, nearest)."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ._util import as_value, canonical_axes, convert, shape_of

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _prepare(a, axis, keepdims):
    """a as (kept dims..., n) with the reduced axes merged last; and the result's
    shape for one q."""
    from .manipulation import reshape, transpose
    shape = shape_of(a)
    axes = canonical_axes(axis, len(shape)) if axis is not None else tuple(range(len(shape)))
    kept = [d for d in range(len(shape)) if d not in axes]
    n = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    x = reshape(transpose(a, kept + list(axes)), tuple(shape[d] for d in kept) + (n,))
    out_shape = tuple(1 if d in axes else shape[d] for d in range(len(shape))) if keepdims \
        else tuple(shape[d] for d in kept)
    return x, n, out_shape


def _quantile(a, q, axis, method, keepdims, ignore_nan: bool, name: str):
    from . import ufuncs as uf
    from .indexing import take_along_axis
    from .manipulation import expand_dims, moveaxis, reshape
    from .reductions import any as any_, sum as sum_
    from .sorting import sort
    if method not in _METHODS:
        raise ValueError(f"jx.numpy.{name}: method={method!r} is not supported; use one of "
                         f"{', '.join(_METHODS)}")
    a = as_value(a)
    dt = dtypes.inexact(dtypes.result_type((a.dtype, False))[0]) if not isinstance(a, float) \
        else dtypes.default_float()
    a = convert(a, dt)
    q = convert(as_value(q), dt)
    x, n, out_shape = _prepare(a, axis, keepdims)
    if n == 0:
        raise ValueError(f"jx.numpy.{name} of an empty axis")
    x = sort(x, axis=-1)                             # NaNs last
    isnan = uf.isnan(x)
    count = sum_(uf.logical_not(isnan), axis=-1, keepdims=True) if ignore_nan else n
    qshape = shape_of(q)
    qf = reshape(q, (-1,) + (1,) * len(shape_of(x)))       # (nq, 1, ..., 1)
    last = uf.subtract(convert(count, dt), 1.0)
    pos = uf.multiply(qf, last)                      # (nq, kept..., 1) or (nq, 1..., 1)
    lo = uf.floor(pos)
    hi = uf.ceil(pos)
    if method == "lower":
        lo = hi = lo
    elif method == "higher":
        lo = hi
    elif method == "nearest":
        lo = hi = uf.round(pos)                      # half to even, as NumPy and JAX
    top = uf.maximum(last, 0.0)
    idx_lo = convert(uf.clip(lo, 0.0, top), dtypes.int32)
    idx_hi = convert(uf.clip(hi, 0.0, top), dtypes.int32)
    xb = expand_dims(x, 0)
    kept = shape_of(x)[:-1]
    full = (shape_of(qf)[0],) + kept + (1,)
    from .manipulation import broadcast_to
    v_lo = take_along_axis(broadcast_to(xb, (full[0],) + shape_of(x)),
                           broadcast_to(idx_lo, full), axis=-1)
    v_hi = take_along_axis(broadcast_to(xb, (full[0],) + shape_of(x)),
                           broadcast_to(idx_hi, full), axis=-1)
    if method == "linear":
        w = uf.subtract(pos, lo)
        out = uf.add(v_lo, uf.multiply(uf.subtract(v_hi, v_lo), w))
    elif method == "midpoint":
        out = uf.multiply(uf.add(v_lo, v_hi), 0.5)
    else:
        out = v_lo
    out = out[..., 0]                                # (nq, kept...)
    bad = any_(isnan, axis=-1) if not ignore_nan else uf.equal(count[..., 0], 0)
    out = uf.where(expand_dims(bad, 0), np.array(np.nan, dt), out)
    out = reshape(out, qshape + out_shape)
    return out


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, interpolation=None):
    _no_out(out, "quantile")
    return _quantile(a, q, axis, interpolation or method, keepdims, False, "quantile")


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, interpolation=None):
    _no_out(out, "nanquantile")
    return _quantile(a, q, axis, interpolation or method, keepdims, True, "nanquantile")


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, interpolation=None):
    from .ufuncs import divide
    _no_out(out, "percentile")
    return _quantile(a, divide(q, 100.0), axis, interpolation or method, keepdims, False,
                     "percentile")


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, interpolation=None):
    from .ufuncs import divide
    _no_out(out, "nanpercentile")
    return _quantile(a, divide(q, 100.0), axis, interpolation or method, keepdims, True,
                     "nanpercentile")


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _no_out(out, "median")
    return _quantile(a, 0.5, axis, "linear", keepdims, False, "median")


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _no_out(out, "nanmedian")
    return _quantile(a, 0.5, axis, "linear", keepdims, True, "nanmedian")


def _no_out(out, name: str) -> None:
    if out is not None:
        raise NotImplementedError(f"jx.numpy.{name}: out= is not supported (jx arrays are "
                                  "immutable); use the returned array")


__all__ = ["quantile", "nanquantile", "percentile", "nanpercentile", "median", "nanmedian"]
