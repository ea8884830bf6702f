"""conv_general_dilated: XLA's convolution (jax.lax's primitive), declared once.

    conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation,
                         rhs_dilation, dimension_numbers, feature_group_count,
                         batch_group_count, preferred_element_type)

dimension_numbers is (lhs_spec, rhs_spec, out_spec), each a tuple of dim indices:
lhs_spec = (batch, feature, spatial...), rhs_spec = (out feature, in feature,
spatial...), out_spec = (batch, feature, spatial...), as JAX's ConvDimensionNumbers.
In that canonical order (N, C, S...) x (O, I, K...) -> (N', O, S'...):

    out[n, o, s] = sum_{i, k} lhs_p[n, g(o) I + i, s * stride + k * rhs_dilation] rhs[o, i, k]

where lhs_p is lhs dilated (lhs_dilation - 1 zeros between elements, the
"transposed convolution") and padded (negative pads crop), and g(o) is o's
feature group (o // (O / feature_group_count)). With batch_group_count B the
lhs batch splits into B groups, group-major (n = b N' + n'), and out feature o
reads batch group o // (O / B). The result dtype is the operands' (one dtype,
as in lax) or preferred_element_type.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import dtypes
from ..core import declare
from ..errors import ShapeError
from ..ir import ShapedArray
from .linalg import preferred_result


def dilate(n: int, d: int) -> int:
    """Size of a dim of n elements with d - 1 holes between neighbours."""
    return 0 if n == 0 else (n - 1) * d + 1


def out_size(n: int, lo: int, hi: int, lhs_d: int, k: int, rhs_d: int, stride: int) -> int:
    """Output size along one spatial dim (0 when the window does not fit)."""
    padded = dilate(n, lhs_d) + lo + hi
    window = dilate(k, rhs_d)
    if window == 0:
        return max(0, padded // stride + 1) if padded >= 0 else 0
    return max(0, (padded - window) // stride + 1) if padded >= window else 0


def _check_spec(spec, ndim, what):
    if len(spec) != ndim or sorted(spec) != list(range(ndim)):
        raise ShapeError(f"conv_general_dilated: {what} {spec} is not a permutation of the "
                         f"{ndim} dims of the operand")


def _conv_rule(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count,
               preferred_element_type=None):
    if lhs.ndim != rhs.ndim:
        raise ShapeError(f"conv_general_dilated lhs and rhs must have the same number of dims, "
                         f"got {lhs} and {rhs}")
    if lhs.ndim < 2:
        raise ShapeError(f"conv_general_dilated needs operands of at least 2 dims (batch and "
                         f"feature), got {lhs}")
    lspec, rspec, ospec = dimension_numbers
    for spec, what in ((lspec, "lhs_spec"), (rspec, "rhs_spec"), (ospec, "out_spec")):
        _check_spec(spec, lhs.ndim, what)
    nsp = lhs.ndim - 2
    for name, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation), ("padding", padding)):
        if len(v) != nsp:
            raise ShapeError(f"conv_general_dilated {name} needs one entry per spatial dim "
                             f"({nsp}), got {v}")
    for name, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation)):
        if any(int(s) < 1 for s in v):
            raise ShapeError(f"conv_general_dilated {name} must be positive, got {v}")
    if lhs.dtype != rhs.dtype:
        raise ShapeError(f"conv_general_dilated operands must share one dtype, got {lhs} and "
                         f"{rhs}; convert one (lax does not promote)")
    if lhs.dtype == dtypes.bool_:
        raise ShapeError("conv_general_dilated does not take bool operands")
    G, B = int(feature_group_count), int(batch_group_count)
    if G < 1 or B < 1:
        raise ShapeError(f"conv_general_dilated feature_group_count and batch_group_count must "
                         f"be positive, got {G} and {B}")
    if G > 1 and B > 1:
        raise ShapeError(f"At most one of batch_group_count and feature_group_count may be > 1, "
                         f"got batch_group_count={B} and feature_group_count={G}")
    n, c = lhs.shape[lspec[0]], lhs.shape[lspec[1]]
    o, i = rhs.shape[rspec[0]], rhs.shape[rspec[1]]
    if c % G:
        raise ShapeError(f"conv_general_dilated feature_group_count must divide lhs feature "
                         f"dimension size, but {G} does not divide {c}")
    if c // G != i:
        raise ShapeError(f"conv_general_dilated lhs feature dimension size divided by "
                         f"feature_group_count must equal the rhs input feature dimension "
                         f"size, but {c} // {G} != {i}")
    if o % G:
        raise ShapeError(f"conv_general_dilated rhs output feature dimension size must be a "
                         f"multiple of feature_group_count, but {o} is not a multiple of {G}")
    if n % B:
        raise ShapeError(f"conv_general_dilated batch_group_count must divide lhs batch "
                         f"dimension size, but {B} does not divide {n}")
    if o % B:
        raise ShapeError(f"conv_general_dilated rhs output feature dimension size must be a "
                         f"multiple of batch_group_count, but {o} is not a multiple of {B}")
    space = []
    for d in range(nsp):
        size, k = lhs.shape[lspec[2 + d]], rhs.shape[rspec[2 + d]]
        lo, hi = padding[d]
        if dilate(size, lhs_dilation[d]) + lo + hi < 0:
            raise ShapeError(f"Negative padding is larger than the size of the corresponding "
                             f"dimension: got padding={tuple(padding)} for spatial dim {d} of "
                             f"size {size}")
        space.append(out_size(size, lo, hi, lhs_dilation[d], k, rhs_dilation[d],
                              window_strides[d]))
    canon = [n // B, o] + space
    shape = [0] * lhs.ndim
    for pos, size in zip(ospec, canon):
        shape[pos] = size
    return ShapedArray(shape, preferred_result(lhs, preferred_element_type))


def dilate_pad(x, dilation, padding, value=0):
    """x (N, C, S...) with its spatial dims dilated and padded (negative pads crop)."""
    inner = [dilate(s, d) for s, d in zip(x.shape[2:], dilation)]
    y = np.full(x.shape[:2] + tuple(inner), value, x.dtype)
    y[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in dilation)] = x
    y = np.pad(y, [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding],
               constant_values=value)
    return y[(slice(None), slice(None)) + tuple(
        slice(max(-lo, 0), y.shape[2 + d] - max(-hi, 0)) for d, (lo, hi) in enumerate(padding))]


def _conv(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
          feature_group_count, batch_group_count, preferred_element_type=None):
    lspec, rspec, ospec = dimension_numbers
    odt = np.dtype(preferred_element_type) if preferred_element_type is not None else lhs.dtype
    # accumulate floats in float64, integers in their own (wrapping) arithmetic
    acc = np.float64 if dtypes.is_float(odt) else odt
    x = np.transpose(lhs, lspec).astype(acc)           # (N, C, S...)
    w = np.transpose(rhs, rspec).astype(acc)           # (O, I, K...)
    x = dilate_pad(x, lhs_dilation, padding)
    G, B = feature_group_count, batch_group_count
    N, C = x.shape[:2]
    O, I = w.shape[:2]
    ksz = w.shape[2:]
    space = [out_size(s, 0, 0, 1, k, rd, st) for s, k, rd, st in
             zip(x.shape[2:], ksz, rhs_dilation, window_strides)]
    # groups: lhs (B, N', G, I, S...), rhs (B*G, O', I, K...) with one group axis of B*G
    xg = x.reshape((B, N // B, G, C // G) + x.shape[2:])
    wg = w.reshape((B, G, O // (B * G), I) + ksz)
    out = np.zeros((B, N // B, G, O // (B * G)) + tuple(space), acc)
    for tap in itertools.product(*map(range, ksz)):
        win = tuple(slice(t * rd, t * rd + (n - 1) * st + 1, st) if n else slice(0, 0)
                    for t, rd, st, n in zip(tap, rhs_dilation, window_strides, space))
        xs = xg[(slice(None),) * 4 + win]                       # (B, N', G, I, S'...)
        ws = wg[(slice(None),) * 4 + tap]                        # (B, G, O', I)
        out += np.einsum("bngi...,bgoi->bngo...", xs, ws)
    # (B, N', G, O', S') -> (N', B, G, O', S') -> (N', O, S'); o = b O/B + g O' + o'
    out = np.moveaxis(out, 0, 1).reshape((N // B, O) + tuple(space))
    return np.transpose(out, np.argsort(ospec)).astype(odt) if math.prod(out.shape) else \
        np.zeros(np.transpose(out, np.argsort(ospec)).shape, odt)


conv_general_dilated = declare("conv_general_dilated", _conv_rule, _conv)


def channels_last_numbers(d: int) -> tuple:
    """dimension_numbers of (N, S..., C) x (K..., I, O) -> (N, S'..., O), d spatial dims."""
    sp = tuple(range(1, d + 1))
    return ((0, d + 1) + sp, (d + 1, d) + tuple(range(d)), (0, d + 1) + sp)


def is_canonical(eqn) -> bool:
    """The form the expand pass leaves for the CPU kernels: channels-last numbers,
    padding >= 0 (zeros the kernels supply: no padded copy of lhs is made), no lhs
    dilation, no batch groups, float32/float64 throughout (strides, rhs dilation
    and feature groups stay)."""
    p = eqn.params
    lhs, rhs = eqn.inputs
    d = lhs.aval.ndim - 2
    dt = lhs.aval.dtype
    return (d >= 1 and tuple(map(tuple, p["dimension_numbers"])) == channels_last_numbers(d)
            and all(lo >= 0 and hi >= 0 for lo, hi in p["padding"])
            and all(x == 1 for x in p["lhs_dilation"]) and p["batch_group_count"] == 1
            and dt in (np.dtype(np.float32), np.dtype(np.float64)) and rhs.aval.dtype == dt
            and eqn.outputs[0].aval.dtype == dt)
