"""jx.scipy.stats' summary functions: mode, rankdata, sem, as jax.scipy.stats's.
Ties are found in sorted order (lax.sort_key_val), the runs of equal values measured
with cumulative maxima, so all three trace, jit and vmap (no data-dependent shapes)."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ... import dtypes
from ... import lax
from ... import numpy as jnp
from ...numpy import _util
from ._util import promote_inexact


class ModeResult(NamedTuple):
    mode: object
    count: object


def _check_nan_policy(name, nan_policy):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"{name}: nan_policy='omit' is not implemented (as in JAX)")
    if nan_policy == "raise":
        raise NotImplementedError(f"{name}: nan_policy='raise' would need to look at the "
                                  "values while tracing; check for nans before calling")


def _runs(sorted_rows):
    """For rows sorted along the last axis: (start, end) index of each element's run
    of equal values (NaNs, sorted last, form one run, as jnp.unique counts them)."""
    n = sorted_rows.shape[-1]
    idx = jnp.broadcast_to(jnp.arange(n), sorted_rows.shape)
    prev, nxt = sorted_rows[..., :-1], sorted_rows[..., 1:]
    same = (prev == nxt) | (jnp.isnan(prev) & jnp.isnan(nxt)) if jnp.issubdtype(
        sorted_rows.dtype, np.inexact) else prev == nxt
    first = jnp.concatenate([jnp.ones(same.shape[:-1] + (1,), bool), ~same], axis=-1)
    last = jnp.concatenate([~same, jnp.ones(same.shape[:-1] + (1,), bool)], axis=-1)
    start = lax.cummax(jnp.where(first, idx, 0), axis=sorted_rows.ndim - 1)
    end = (n - 1) - lax.cummax(jnp.where(last, (n - 1) - idx, 0), axis=sorted_rows.ndim - 1,
                               reverse=True)
    return start, end, first


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along axis (the smallest of equally common ones) and its
    count, as ModeResult(mode, count)."""
    _check_nan_policy("mode", nan_policy)
    x = jnp.atleast_1d(jnp.asarray(a))
    if axis is None:
        x, axis = jnp.ravel(x), 0
        out_shape = (1,) * np.ndim(a) if keepdims else ()
    else:
        axis = _util.canonical_axis(axis, x.ndim)
        out_shape = tuple(1 if i == axis else s for i, s in enumerate(x.shape)) if keepdims \
            else tuple(s for i, s in enumerate(x.shape) if i != axis)
    if x.shape[axis] == 0:
        fdt = dtypes.default_float()
        return ModeResult(jnp.full(out_shape, np.nan, fdt), jnp.zeros(out_shape, fdt))
    rows = jnp.moveaxis(x, axis, -1)
    rows = jnp.reshape(rows, (math.prod(rows.shape[:-1]), rows.shape[-1]))
    srt = lax.sort(rows, dimension=1)
    start, end, _ = _runs(srt)
    counts = end - start + 1
    best = jnp.argmax(counts, axis=1)               # the first maximum: the smallest value
    vals = jnp.take_along_axis(srt, best[:, None], axis=1)[:, 0]
    cnt = jnp.max(counts, axis=1).astype(dtypes.default_int())
    return ModeResult(jnp.reshape(vals, out_shape), jnp.reshape(cnt, out_shape))


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks from 1, ties by method ('average', 'min', 'max', 'dense', 'ordinal'), in the
    default float dtype; nan everywhere (along axis) where a holds a nan."""
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'; use 'average', 'min', 'max', 'dense' "
                         "or 'ordinal'")
    x = jnp.asarray(a)
    if axis is None:
        rows = jnp.reshape(x, (1, x.size))
    else:
        axis = _util.canonical_axis(axis, x.ndim)
        moved = jnp.moveaxis(x, axis, -1)
        rows = jnp.reshape(moved, (math.prod(moved.shape[:-1]), moved.shape[-1]))
    out_dt = dtypes.default_float()
    n = rows.shape[-1]
    order = jnp.broadcast_to(jnp.arange(n, dtype=np.int32), rows.shape)
    srt, sorter = lax.sort_key_val(rows, order, dimension=1)
    start, end, first = _runs(srt)
    if method == "ordinal":
        ranked = order + 1
    elif method == "dense":
        ranked = jnp.cumsum(first.astype(np.int32), axis=1)
    elif method == "min":
        ranked = start + 1
    elif method == "max":
        ranked = end + 1
    else:
        ranked = (start + end + 2) / 2
    ranked = ranked.astype(out_dt)
    # back to the input order: the element at sorted position p came from sorter[p]
    back = jnp.argsort(sorter, axis=1)
    ranks = jnp.take_along_axis(ranked, back, axis=1)
    if jnp.issubdtype(rows.dtype, np.inexact):
        has_nan = jnp.any(jnp.isnan(rows), axis=1, keepdims=True)
        if axis is None:
            has_nan = jnp.any(has_nan)
        ranks = jnp.where(has_nan, np.nan, ranks)
    if axis is None:
        return jnp.reshape(ranks, (x.size,))
    return jnp.moveaxis(jnp.reshape(ranks, moved.shape), -1, axis)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean: std(ddof) / sqrt(count)."""
    (b,) = promote_inexact(a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return jnp.std(b, axis=axis, ddof=ddof, keepdims=keepdims) / np.sqrt(size).astype(
            b.dtype)
    if nan_policy == "omit":
        ok = ~jnp.isnan(b)
        count = jnp.sum(ok, axis=axis, keepdims=keepdims)
        dev = jnp.where(ok, b - jnp.nanmean(b, axis=axis, keepdims=True), 0.0)
        var = jnp.sum(dev * dev, axis=axis, keepdims=keepdims) / (count - ddof)
        return jnp.sqrt(var) / jnp.sqrt(count.astype(b.dtype))
    raise ValueError(f"sem: nan_policy {nan_policy!r} is not supported; use 'propagate' "
                     "or 'omit'")
