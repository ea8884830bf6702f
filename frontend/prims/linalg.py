"""dot_general: contraction over named dims with batch dims (lax semantics).

Output dims: batch dims, then lhs free dims, then rhs free dims.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import declare
from ..errors import ShapeError
from ..ir import ShapedArray


def _free(ndim, *used):
    taken = set().union(*map(set, used))
    return [d for d in range(ndim) if d not in taken]


def _dot_rule(lhs, rhs, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if lhs.dtype != rhs.dtype:
        raise ShapeError(f"operands must share one dtype, got {lhs} and {rhs}")
    if lhs.dtype == dtypes.bool_:
        raise ShapeError("dot_general does not take bool operands")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise ShapeError(f"contracting/batch dims {dimension_numbers} do not pair up")
    for dims, x in ((lc, lhs), (lb, lhs), (rc, rhs), (rb, rhs)):
        if any(not 0 <= d < x.ndim for d in dims) or len(set(dims)) != len(dims):
            raise ShapeError(f"dims {dims} are invalid for {x}")
    if set(lc) & set(lb) or set(rc) & set(rb):
        raise ShapeError("a dim cannot be both batch and contracting")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if lhs.shape[a] != rhs.shape[b]:
            raise ShapeError(f"dim {a} of {lhs} ({lhs.shape[a]}) does not match dim {b} "
                             f"of {rhs} ({rhs.shape[b]})")
    shape = ([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in _free(lhs.ndim, lc, lb)]
             + [rhs.shape[d] for d in _free(rhs.ndim, rc, rb)])
    return ShapedArray(shape, preferred_result(lhs, preferred_element_type))


def _kind_rank(dt) -> int:
    return 2 if dtypes.is_complex(dt) else 1 if dtypes.is_float(dt) else 0


def preferred_result(lhs, preferred_element_type):
    """The result dtype of a product of lhs's dtype accumulated in preferred_element_type
    (None: lhs's own). As in JAX: ints may accumulate into floats, reals into complex;
    never narrower, never float -> int nor complex -> real."""
    if preferred_element_type is None:
        return lhs.dtype
    out = dtypes.check_supported(preferred_element_type)
    rank_in, rank_out = _kind_rank(lhs.dtype), _kind_rank(out)
    if out == dtypes.bool_ or rank_out < rank_in \
            or (rank_out == rank_in and out.itemsize < lhs.dtype.itemsize):
        raise ShapeError(f"preferred_element_type {out} does not fit operands {lhs}: "
                         "use a type of the same kind at least as wide (or a float "
                         "for integer operands, a complex type for real ones)")
    return out


def _dot(lhs, rhs, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if preferred_element_type is not None:  # accumulate in the wider type (f16 -> f32)
        lhs, rhs = lhs.astype(preferred_element_type), rhs.astype(preferred_element_type)
    lf, rf = _free(lhs.ndim, lc, lb), _free(rhs.ndim, rc, rb)
    # move to (batch, free, contract) and (batch, contract, free), then matmul
    a = np.transpose(lhs, list(lb) + lf + list(lc))
    b = np.transpose(rhs, list(rb) + list(rc) + rf)
    nb = len(lb)
    bshape = a.shape[:nb]
    m = int(np.prod(a.shape[nb:nb + len(lf)], dtype=np.int64))
    k = int(np.prod(a.shape[nb + len(lf):], dtype=np.int64))
    n = int(np.prod(b.shape[nb + len(rc):], dtype=np.int64))
    out = np.matmul(a.reshape(bshape + (m, k)), b.reshape(bshape + (k, n)))
    shape = bshape + a.shape[nb:nb + len(lf)] + b.shape[nb + len(rc):]
    dt = lhs.dtype if preferred_element_type is None else preferred_element_type
    return out.reshape(shape).astype(dt)


dot_general = declare("dot_general", _dot_rule, _dot)
