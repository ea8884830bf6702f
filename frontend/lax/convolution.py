"""jax.lax's convolutions over the one primitive, conv_general_dilated, with JAX's
signatures, padding strings, dimension-number forms and errors."""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from .. import dtypes
from ..numpy._util import as_value, bind1, shape_of
from ..prims import convolution as cv
from ..prims import structural as st
from .ops import _precision


class ConvDimensionNumbers(NamedTuple):
    """Positions of (batch, feature, spatial...) in lhs and out, and of (out feature,
    in feature, spatial...) in rhs."""
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


ConvGeneralDilatedDimensionNumbers = object      # (a typing alias in JAX)


def conv_general_permutations(dimension_numbers):
    """The (lhs, rhs, out) permutations to canonical order of string dimension numbers
    such as ("NHWC", "HWIO", "NHWC"); spatial dims follow their order in rhs_spec."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(pairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {spec}.")
        if len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec}.")
    spatial = [set(s) - set(p) for s, p in zip(dimension_numbers, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise TypeError(f"convolution dimension_numbers elements must each have the same set "
                        f"of spatial characters, got {dimension_numbers}.")

    def perm(spec, pair):
        sp = [i for i, ch in enumerate(spec) if ch not in pair]
        if spec is not rhs_spec:
            sp.sort(key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(sp)

    return tuple(perm(s, p) for s, p in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """dimension_numbers (None, three strings, or ConvDimensionNumbers) as
    ConvDimensionNumbers; None is ("NCHW", "OIHW", "NCHW") for any number of dims."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError(f"convolution dimension_numbers must be tuple/list or None, got "
                        f"{type(dimension_numbers)}.")
    if len(dimension_numbers) != 3:
        raise TypeError(f"convolution dimension_numbers list/tuple must be length 3, got "
                        f"{len(dimension_numbers)}.")
    if all(isinstance(s, (tuple, list)) for s in dimension_numbers):     # (already indices)
        return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(f"convolution dimension_numbers elements must be strings, got "
                        f"{tuple(map(type, dimension_numbers))}.")
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                            f"ndim of lhs and rhs, got {len(s)} for lhs and rhs shapes "
                            f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """'VALID', 'SAME' or 'SAME_LOWER' as (low, high) pairs per dim: SAME gives
    ceil(in / stride) outputs, the odd pad at the end (SAME) or start (SAME_LOWER)."""
    kind = padding.upper() if isinstance(padding, str) else getattr(padding, "name", padding)
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        if isinstance(padding, str):
            raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or "
                               f"'SAME_LOWER', got {padding}.")
        raise TypeError(f"Unknown padding type: {padding}.")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = max((-(-int(n) // int(s)) - 1) * int(s) + int(k) - int(n), 0)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if kind == "SAME" else (large, small))
    return pads


def _ints(v, n, name):
    if v is None:
        return (1,) * n
    try:
        out = tuple(operator.index(x) for x in v)
    except TypeError:
        raise TypeError(f"conv_general_dilated {name} must be a sequence of ints, "
                        f"got {v!r}") from None
    if len(out) != n:
        raise ValueError(f"conv_general_dilated {name} needs {n} entries (one per spatial "
                         f"dim), got {v!r}")
    return out


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         *, out_sharding=None):
    """General n-d convolution with strides, padding, lhs (transposed) and rhs
    (atrous) dilation, feature groups (depthwise) and batch groups, as lax's."""
    _precision(precision, "conv_general_dilated")
    lhs, rhs = as_value(lhs), as_value(rhs)
    ls, rs = shape_of(lhs), shape_of(rhs)
    dn = conv_dimension_numbers(ls, rs, dimension_numbers)
    nsp = len(ls) - 2
    strides = _ints(window_strides, nsp, "window_strides")
    ld = _ints(lhs_dilation, nsp, "lhs_dilation")
    rd = _ints(rhs_dilation, nsp, "rhs_dilation")
    if isinstance(padding, str):
        if lhs_dilation is not None and any(d != 1 for d in ld):
            raise ValueError("String padding is not implemented for transposed convolution "
                             "using this op. Please either exactly specify the required "
                             "padding or use conv_transpose.")
        window = [cv.dilate(rs[d], r) for d, r in zip(dn.rhs_spec[2:], rd)]
        pads = padtype_to_pads([ls[d] for d in dn.lhs_spec[2:]], window, strides, padding)
    else:
        try:
            pads = [(operator.index(lo), operator.index(hi)) for lo, hi in padding]
        except (ValueError, TypeError):
            raise ValueError("padding argument to conv_general_dilated should be a string or "
                             f"a sequence of (low, high) pairs, got {padding}") from None
    pet = None if preferred_element_type is None else \
        dtypes.canonicalize(preferred_element_type, "conv_general_dilated")
    return bind1(cv.conv_general_dilated, lhs, rhs, window_strides=strides,
                 padding=tuple(tuple(p) for p in pads), lhs_dilation=ld, rhs_dilation=rd,
                 dimension_numbers=tuple(tuple(s) for s in dn),
                 feature_group_count=operator.index(feature_group_count),
                 batch_group_count=operator.index(batch_group_count),
                 preferred_element_type=pet)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """conv_general_dilated in (N, C, spatial...) x (O, I, spatial...) layout, no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """conv_general_dilated in (N, C, spatial...) x (O, I, spatial...) layout."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_padding(k, s, padding):
    """Padding of the dilated input of a transposed convolution, from the padding
    ('SAME', 'VALID' or a (low, high) pair) of the forward convolution it transposes."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    elif isinstance(padding, tuple):
        lo, hi = k - padding[0] - 1, k - padding[1] - 1
        total = lo + hi
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return lo, total - lo


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """The transposed ("fractionally strided") convolution: the input dilated by the
    strides. 'SAME'/'VALID' (and, with use_consistent_padding, pairs) name the
    forward convolution's padding; transpose_kernel flips the kernel spatially and
    swaps its I and O (Keras' Conv2DTranspose, the gradient of a convolution)."""
    ls, rs = shape_of(as_value(lhs)), shape_of(as_value(rhs))
    nsp = len(ls) - 2
    if dimension_numbers is None:
        if nsp > 3 or nsp < 0:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = (("NC", "IO", "NC"), ("NHC", "HIO", "NHC"),
                             ("NHWC", "HWIO", "NHWC"), ("NHWDC", "HWDIO", "NHWDC"))[nsp]
    dn = conv_dimension_numbers(ls, rs, dimension_numbers)
    rd = _ints(rhs_dilation, nsp, "rhs_dilation")
    window = [cv.dilate(rs[d], r) for d, r in zip(dn.rhs_spec[2:], rd)]
    strides = _ints(strides, nsp, "strides")
    if use_consistent_padding or padding in ("SAME", "VALID"):
        each = [padding] * nsp if isinstance(padding, str) else \
            [tuple(int(v) for v in p) for p in padding]
        pads = [_transpose_padding(w, s, p) for w, s, p in zip(window, strides, each)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = bind1(st.rev, as_value(rhs), dimensions=tuple(dn.rhs_spec[2:]))
        spec = list(dn.rhs_spec)
        spec[0], spec[1] = spec[1], spec[0]
        dn = ConvDimensionNumbers(dn.lhs_spec, tuple(spec), dn.out_spec)
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, lhs_dilation=strides,
                                rhs_dilation=rd, dimension_numbers=dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The output shape of a convolution in canonical (N, C, spatial...) order."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    space = []
    for n, k, s, (lo, hi) in zip(lhs_shape[2:], rhs_shape[2:], strides, pads):
        if n + lo + hi < 0:
            raise ValueError(f"Negative padding is larger than the size of the corresponding "
                             f"dimension: got padding={pads} for lhs_shape[2:]="
                             f"{tuple(lhs_shape[2:])}")
        space.append(cv.out_size(n, lo, hi, 1, k, 1, s))
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + tuple(space)


def _in_canonical(shapes, dimension_numbers):
    perms = conv_general_permutations(dimension_numbers)
    return perms, [tuple(np.take(s, p)) for s, p in zip(shapes, perms[:2])]


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of conv_general_dilated with string dimension numbers."""
    perms, (lt, rt) = _in_canonical((lhs_shape, rhs_shape), dimension_numbers)
    out = conv_shape_tuple(lt, rt, window_strides, padding)
    return tuple(int(x) for x in np.take(out, np.argsort(perms[2])))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """The output shape of conv_transpose with string dimension numbers."""
    perms, (lt, rt) = _in_canonical((lhs_shape, rhs_shape), dimension_numbers)
    if isinstance(padding, str):
        padding = [_transpose_padding(k, s, padding) for k, s in zip(rt[2:], window_strides)]
    padding = [(0, sum(p)) for p in padding]
    space = [(i - 1) * s - k + 2 + lo + hi
             for i, k, s, (lo, hi) in zip(lt[2:], rt[2:], window_strides, padding)]
    out = (lt[0], rt[0]) + tuple(space)
    return tuple(int(x) for x in np.take(out, np.argsort(perms[2])))


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches a convolution with filter_shape would read, as output features
    (feature c * prod(filter_shape) + flat window index), by a convolution with a
    one-hot kernel (exact: each output is one input element times 1)."""
    lhs = as_value(lhs)
    ls = shape_of(lhs)
    dn = conv_dimension_numbers(ls, ls, dimension_numbers)
    c = ls[dn.lhs_spec[1]]
    size = int(np.prod(filter_shape))
    eye = np.eye(size, dtype=dtypes.canonicalize(lhs.dtype if hasattr(lhs, "dtype") else
                                                 np.asarray(lhs).dtype, "patches"))
    kernel = np.tile(eye.reshape((size, 1) + tuple(filter_shape)), (c, 1) + (1,) * len(filter_shape))
    # rhs in (O, I, spatial...) with O = c * size, one group per input feature
    out_dn = ConvDimensionNumbers(dn.lhs_spec, tuple(range(len(ls))), dn.out_spec)
    return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation,
                                rhs_dilation, out_dn, feature_group_count=c,
                                precision=precision, preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """A locally connected ("unshared") convolution: each output position has its own
    filter. rhs holds, in rhs_spec's layout, the output's spatial dims and an in-feature
    dim of size in_features * prod(filter_shape) (the patches' feature order)."""
    from .ops import dot_general
    from ..numpy.manipulation import moveaxis
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers,
                                           precision)
    lspec, rspec, ospec = conv_dimension_numbers(shape_of(as_value(lhs)),
                                                 (1, 1) + tuple(filter_shape), dimension_numbers)
    pos_l = list(ospec[2:])
    pos_r = [rspec[2:][i] for i in sorted(range(len(pos_l)), key=lambda k: pos_l[k])]
    out = dot_general(patches, rhs, (((ospec[1],), (rspec[1],)), (tuple(sorted(pos_l)),
                                                                    tuple(pos_r))))
    return moveaxis(out, (-2, -1), (ospec[0], ospec[1]))


__all__ = ["ConvDimensionNumbers", "conv_general_dilated_local", "ConvGeneralDilatedDimensionNumbers",
           "conv_general_permutations", "conv_dimension_numbers", "padtype_to_pads",
           "conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose",
           "conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
           "conv_general_dilated_patches"]
