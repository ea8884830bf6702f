"""Sorting in jx.numpy: sort, argsort, lexsort over the variadic `sort` primitive.

argsort sorts the array together with an iota and keeps the iota, so it is
stable by construction and needs no gather. NaNs sort last, as in NumPy.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import bind_like
from ..errors import ShapeError
from ..prims import elementwise as ew
from ..prims import sorting as so
from ..prims import structural as st
from .creation import _wrap_public
from ._util import as_value, broadcast_shapes, broadcast_to, canonical_axis, convert, shape_of


def _check_kind(kind, order):
    if order is not None:
        raise NotImplementedError("jx.numpy sorting does not support `order` (structured "
                                  "arrays); pass the fields as keys to jx.numpy.lexsort")
    if kind not in (None, "stable", "mergesort", "quicksort", "heapsort"):
        raise ValueError(f"unknown sort kind {kind!r}")


def _flatten_if_none(x, axis):
    if axis is not None:
        return x, axis
    from .manipulation import ravel
    return ravel(x), 0


def _index_dtype(n: int) -> np.dtype:
    return dtypes.default_int() if n < 2**31 else dtypes.int64


def _iota_like(x, dtype, axis):
    """An iota along axis, staged into x's trace (no shape-sized literal)."""
    return bind_like([x], st.iota, dtype=np.dtype(dtype), shape=tuple(shape_of(x)),
                     dimension=axis)[0]


def _rev(x, axis):
    return bind_like([x], st.rev, x, dimensions=(axis,))[0]


def sort_along(operands, axis: int, num_keys: int = 1, stable: bool = True) -> list:
    """Sort operands (one shape, any dtypes) along axis by the first num_keys of them."""
    return bind_like(operands, so.sort, *operands, dimension=axis, is_stable=stable,
                     num_keys=num_keys)


def _keys(x) -> list:
    """The sort keys of x: complex numbers order by real part, then imaginary part
    (as NumPy and JAX), sorted as two real keys."""
    if not dtypes.is_complex(x.dtype):
        return [x]
    return [bind_like([x], ew.real, x)[0], bind_like([x], ew.imag, x)[0]]


def sort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Sorted copy of a along axis (flattened when axis is None); NaNs last."""
    _check_kind(kind, order)
    x, axis = _flatten_if_none(as_value(a), axis)
    if len(shape_of(x)) == 0:
        raise ShapeError("cannot sort a 0-d array along an axis; use axis=None")
    ax = canonical_axis(axis, len(shape_of(x)))
    keys = _keys(x)
    out = sort_along(keys + [x], ax, len(keys), stable)[-1] if len(keys) > 1 else \
        sort_along([x], ax, 1, stable)[0]
    return _rev(out, ax) if descending else out


def sort_complex(a):
    """a sorted along its last axis, as a complex array (as JAX)."""
    out = sort(a)
    return convert(out, dtypes.complex_dtype(out.dtype))


def argsort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Indices that sort a along axis; ties keep their order (stable)."""
    _check_kind(kind, order)
    x, axis = _flatten_if_none(as_value(a), axis)
    if len(shape_of(x)) == 0:
        raise ShapeError("cannot argsort a 0-d array along an axis; use axis=None")
    ax = canonical_axis(axis, len(shape_of(x)))
    n = shape_of(x)[ax]
    idt = _index_dtype(n)
    if descending:
        # reverse first so that reversing the result keeps ties in their original order
        x = _rev(x, ax)
    keys = _keys(x)
    idx = sort_along(keys + [_iota_like(x, idt, ax)], ax, len(keys), stable)[-1]
    if descending:
        from .ufuncs import subtract
        idx = subtract(np.asarray(n - 1, idt), _rev(idx, ax))
    return idx


def lexsort(keys, axis=-1):
    """Indices sorting by several keys; the LAST key is the primary one (as NumPy)."""
    ks = [as_value(k) for k in keys]
    if not ks:
        raise ValueError("lexsort needs at least one key")
    shape = broadcast_shapes(*[shape_of(k) for k in ks])
    if not shape:
        raise ShapeError("lexsort keys must be at least 1-d")
    ks = [broadcast_to(k, shape, ks) for k in ks]
    ax = canonical_axis(axis, len(shape))
    iota = _iota_like(ks[0], _index_dtype(shape[ax]), ax)
    primary_first = [part for k in ks[::-1] for part in _keys(k)]
    outs = sort_along(primary_first + [iota], ax, len(primary_first))
    return outs[-1]


__all__ = ["sort", "argsort", "lexsort", "sort_complex"]
_wrap_public(globals(), __all__)
