"""Lowering of conv_general_dilated, chosen per convolution by its shape.

    kernel      float convolutions with at least as many output positions as window
                taps (layers, their input gradients): rewritten into the canonical
                form the CPU kernels take (prims.convolution.is_canonical:
                channels-last, batch groups turned into feature groups, lhs
                dilation and negative pads applied by a `pad`); the kernels read
                lhs in place (implicit im2col) and supply non-negative padding.
    positions   fewer output positions than taps (a weight gradient: the window is
                the whole image, the output the kernel's few taps): the windows,
                one per output position, gathered into an im2col beside lhs's batch
                dim and contracted with the cotangent in one dot_general (K = the
                image); past PATCHES_BYTES, one product per position.
    taps        the rest (integer convolutions, zero spatial dims): one dot_general
                per window tap, contracting the features, summed.

The dot_general forms read lhs in its own layout (their dimension numbers name
its dims; no transposing copies) through fusible pad/slice chains. Feature
groups become a batch dim of the products.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

import jx.numpy as jnp
from jx import dtypes
from jx.core import bind
from jx.prims import convolution as cv
from jx.prims import linalg as la
from jx.prims import structural as st


def _one(prim, *args, **params):
    return bind(prim, *args, **params)[0]


def _pad(x, config):
    zero = np.zeros((), x.dtype)
    return _one(st.pad, x, zero, padding_config=tuple(config))


def _pad_in_layout(lhs, p):
    """lhs padded and dilated along its spatial dims, in its own layout."""
    lspec = p["dimension_numbers"][0]
    config = [(0, 0, 0)] * lhs.ndim
    for d, (lo, hi), ld in zip(lspec[2:], p["padding"], p["lhs_dilation"]):
        config[d] = (lo, hi, ld - 1)
    return _pad(lhs, config) if any(c != (0, 0, 0) for c in config) else lhs


def _canonical_order(lhs, rhs, p):
    """lhs as (N', B*C..., S...) -> (N', C', S...) with batch groups folded into
    feature groups, padded and dilated; rhs as (O, I, K...); and the group count.
    (Padded before it is transposed: a pad read through transposes on both sides
    is a gather, not a copy of rows.)"""
    lspec, rspec, _ = p["dimension_numbers"]
    x = jnp.transpose(_pad_in_layout(lhs, p), lspec)       # (N, C, S...)
    w = jnp.transpose(rhs, rspec)                          # (O, I, K...)
    B, G = p["batch_group_count"], p["feature_group_count"]
    if B > 1:       # lhs batch group b feeds out features [b O/B, (b+1) O/B): a feature group
        n, c = x.shape[:2]
        x = jnp.reshape(x, (B, n // B) + x.shape[1:])
        x = jnp.reshape(jnp.swapaxes(x, 0, 1), (n // B, B * c) + x.shape[3:])
        G = B
    return x, w, G


def _to_out(y, out_spec):
    """y in canonical (N, O, S...) order, transposed to out_spec's layout."""
    return jnp.transpose(y, tuple(np.argsort(out_spec)))


# ------------------------------------------------------------------ kernel form

# The CPU kernels supply the zeros of non-negative padding themselves (so
# lhs reaches them unpadded: a padded copy costs as much as a depthwise layer).
KERNEL_PADS = True


def _phase(n: int, dil: int, lo: int, k: int, r: int, size: int, ph: int):
    """Along one dim of a convolution of a dilated lhs (stride 1): the outputs at
    ph, ph + dil, ... (count q) read only the taps k0, k0 + step, ... (count kt) of
    the kernel, at lhs (undilated) index q + base + m * r / g. Returns (q, k0, step,
    kt, rhs dilation, (lo, hi) padding of the undilated lhs), kt 0 when no tap
    lands on an element (the outputs are zeros)."""
    q = max(0, -(-(size - ph) // dil))
    g = math.gcd(r, dil)
    step = dil // g
    k0 = next((t for t in range(min(k, step)) if (ph + t * r - lo) % dil == 0), None)
    if k0 is None or q == 0:
        return q, 0, step, 0, 1, (0, 0)
    kt = len(range(k0, k, step))
    base = (ph + k0 * r - lo) // dil
    rr = r // g
    lo2 = -base
    return q, k0, step, kt, rr, (lo2, q + (kt - 1) * rr - n - lo2)


def _subpixel(lhs, rhs, p, dt):
    """A stride-1 convolution of a dilated lhs (a strided convolution's input
    gradient, conv_transpose) as dil^d convolutions of the undilated lhs, one per
    output phase, each with the kernel taps that land on elements (the zeros between
    them were 1 - 1/dil^d of the work), interleaved back by interior padding."""
    lspec, rspec, ospec = p["dimension_numbers"]
    d = len(lspec) - 2
    sizes = [lhs.shape[i] for i in lspec[2:]]
    ks = [rhs.shape[i] for i in rspec[2:]]
    outs = _out_sizes(lhs, rhs, p)
    out = None
    for phase in itertools.product(*[range(dl) for dl in p["lhs_dilation"]]):
        dims = [_phase(n, dl, lo, k, r, o, ph) for n, dl, (lo, _), k, r, o, ph in
                zip(sizes, p["lhs_dilation"], p["padding"], ks, p["rhs_dilation"], outs, phase)]
        if any(q == 0 for q, *_ in dims):
            continue
        if any(kt == 0 for _, _, _, kt, _, _ in dims):
            continue                             # no tap lands: these outputs are zeros
        index = [slice(None)] * rhs.ndim
        for j, (q, k0, step, kt, rr, _) in enumerate(dims):
            index[rspec[2 + j]] = slice(k0, k0 + (kt - 1) * step + 1, step)
        sub = dict(p, padding=tuple(pd for *_, pd in dims), lhs_dilation=(1,) * d,
                   rhs_dilation=tuple(rr for *_, rr, _ in dims))
        y = _kernel_form(lhs, rhs[tuple(index)], sub, dt)
        config = [(0, 0, 0)] * y.ndim        # its outputs to their places: ph, ph + dil, ...
        for j, ((q, *_), dl, ph, o) in enumerate(zip(dims, p["lhs_dilation"], phase, outs)):
            config[ospec[2 + j]] = (ph, o - ph - ((q - 1) * dl + 1), dl - 1)
        y = _pad(y, config)
        out = y if out is None else out + y
    if out is None:
        shape = [0] * lhs.ndim
        nb = lhs.shape[lspec[0]] // p["batch_group_count"]
        for pos, v in zip(ospec, [nb, rhs.shape[rspec[0]]] + outs):
            shape[pos] = v
        out = jnp.zeros(tuple(shape), dt)
    return out


def _out_sizes(lhs, rhs, p):
    lspec, rspec, _ = p["dimension_numbers"]
    return [cv.out_size(lhs.shape[a], lo, hi, dl, rhs.shape[b], r, s) for a, b, (lo, hi), dl, r, s
            in zip(lspec[2:], rspec[2:], p["padding"], p["lhs_dilation"], p["rhs_dilation"],
                   p["window_strides"])]


def _kernel_form(lhs, rhs, p, dt):
    if KERNEL_PADS and any(dl > 1 for dl in p["lhs_dilation"]) and \
            all(s == 1 for s in p["window_strides"]) and p["batch_group_count"] == 1:
        return _subpixel(lhs, rhs, p, dt)
    pads = tuple(tuple(x) for x in p["padding"])
    inner = KERNEL_PADS and all(lo >= 0 and hi >= 0 for lo, hi in pads) and \
        all(d == 1 for d in p["lhs_dilation"])
    if inner:                                  # the kernel pads; _canonical_order must not
        p = dict(p, padding=((0, 0),) * len(pads))
    x, w, G = _canonical_order(lhs, rhs, p)
    d = x.ndim - 2
    if x.dtype != dt:
        x, w = x.astype(dt), w.astype(dt)
    x = jnp.transpose(x, (0,) + tuple(range(2, d + 2)) + (1,))        # (N, S..., C)
    w = jnp.transpose(w, tuple(range(2, d + 2)) + (1, 0))             # (K..., I, O)
    y = _one(cv.conv_general_dilated, x, w, window_strides=tuple(p["window_strides"]),
             padding=pads if inner else ((0, 0),) * d, lhs_dilation=(1,) * d,
             rhs_dilation=tuple(p["rhs_dilation"]),
             dimension_numbers=cv.channels_last_numbers(d), feature_group_count=G,
             batch_group_count=1, preferred_element_type=None)
    y = jnp.transpose(y, (0, d + 1) + tuple(range(1, d + 1)))          # (N, O, S'...)
    return _to_out(y, p["dimension_numbers"][2])


# ------------------------------------------------------------------ dot forms

# Up to this many bytes of windows, a weight gradient gathers them all (an im2col)
# for one product; beyond, one product per position reads one window copy at a time
# (less memory). Measured on Zen 5: LeNet's 5x5 gradients 15.6 -> 1.9 and 2.4 -> 0.7
# ms, the 3x3 64 -> 64 layer at batch 32 (231 MB of windows) 113 -> 86 ms.
PATCHES_BYTES = 256 << 20


def _nbytes(x) -> int:
    return math.prod(x.shape) * np.dtype(x.dtype).itemsize


def _split_dim(x, dim: int, parts: int):
    """x with dim split into (parts, size // parts), in place."""
    shape = x.shape
    return jnp.reshape(x, shape[:dim] + (parts, shape[dim] // parts) + shape[dim + 1:])


def _in_layout(lhs, rhs, p):
    """(x, w, lhs_spec, rhs_spec, G): the operands in their own layouts (no transposes:
    a product reads them through its dimension numbers), x padded and dilated. Batch
    groups are first folded into feature groups, in canonical order."""
    if p["batch_group_count"] > 1:
        x, w, G = _canonical_order(lhs, rhs, p)
        iota = tuple(range(x.ndim))
        return x, w, iota, iota, G
    lspec, rspec, _ = p["dimension_numbers"]
    return _pad_in_layout(lhs, p), rhs, tuple(lspec), tuple(rspec), p["feature_group_count"]


def _dot_forms(lhs, rhs, p, by_position: bool):
    x, w, lspec, rspec, G = _in_layout(lhs, rhs, p)
    odt = p["preferred_element_type"]
    ospec = p["dimension_numbers"][2]
    n, o = x.shape[lspec[0]], w.shape[rspec[0]]
    size = [x.shape[i] for i in lspec[2:]]
    ksz = [w.shape[i] for i in rspec[2:]]
    strides, rd = p["window_strides"], p["rhs_dilation"]
    space = [cv.out_size(s, 0, 0, 1, k, r, t) for s, k, r, t in zip(size, ksz, rd, strides)]
    rdt = np.dtype(odt) if odt is not None else np.dtype(x.dtype)
    if n == 0 or o == 0 or 0 in space or x.shape[lspec[1]] == 0 or 0 in ksz:
        return _to_out(jnp.zeros((n, o) + tuple(space), rdt), ospec)

    def shift(spec, at):             # dim indices after a split at `at`
        return tuple(i + 1 if i > at else i for i in spec)
    if G > 1:                        # features -> (G, I) and out features -> (G, Og)
        x, w = _split_dim(x, lspec[1], G), _split_dim(w, rspec[0], G)
        xg, wg = lspec[1], rspec[0]
        lspec = (shift(lspec, xg)[0], xg + 1) + shift(lspec, xg)[2:]
        rspec = (wg + 1,) + shift(rspec, wg)[1:]
        batch = ((xg,), (wg,))
    else:
        batch = ((), ())

    def window(start, extent, step):
        lo, hi, by = [0] * x.ndim, list(x.shape), [1] * x.ndim
        for j, dim in enumerate(lspec[2:]):
            lo[dim], hi[dim], by[dim] = start[j], start[j] + (extent[j] - 1) * step[j] + 1, \
                step[j]
        return _one(st.slice_, x, start_indices=tuple(lo), limit_indices=tuple(hi),
                    strides=tuple(by))

    if by_position:
        # out[n, o, s'] = sum_{i, k} x[n, i, s' stride + k rd] w[o, i, k]: per position a
        # product contracting features and window (the window is the image: K is large)
        dims = ((lspec[1],) + lspec[2:], (rspec[1],) + rspec[2:])
        windows = [window([q * t for q, t in zip(pos, strides)], ksz, rd)
                   for pos in itertools.product(*map(range, space))]
        if G == 1 and len(windows) * _nbytes(windows[0]) <= PATCHES_BYTES:
            # small: the windows stacked beside lhs's batch dim (an im2col, one fused
            # copy) and one product whose free dims (P, N) merge: a LeNet gradient's 25
            # positions were 25 copies and 25 products of a few thousand flops each
            at = lspec[0]
            patches = jnp.stack(windows, axis=at)
            moved = tuple(i + 1 if i >= at else i for i in dims[0])
            y = _one(la.dot_general, patches, w, dimension_numbers=((moved, dims[1]), batch),
                     preferred_element_type=odt)                       # (P, N, O)
            return _to_out(jnp.reshape(jnp.moveaxis(y, 0, -1), (n, o) + tuple(space)), ospec)
        parts = [_one(la.dot_general, xs, w, dimension_numbers=(dims, batch),
                      preferred_element_type=odt) for xs in windows]   # ([G,] N, O or Og)
        y = jnp.stack(parts, axis=-1)
        if G > 1:
            y = jnp.swapaxes(y, 0, 1)                                 # (N, G, Og, P)
        return _to_out(jnp.reshape(y, (n, o) + tuple(space)), ospec)
    # out = sum over taps k of x[n, i, s' stride + k rd] w[o, i, k]: per tap a product
    # contracting the features
    y = None
    for tap in itertools.product(*map(range, ksz)):
        index = [slice(None)] * w.ndim
        for j, dim in enumerate(rspec[2:]):
            index[dim] = tap[j]
        wk = w[tuple(index)]                          # the spatial dims dropped
        kept = [i for i in range(w.ndim) if i not in rspec[2:]]
        part = _one(la.dot_general, window([k * r for k, r in zip(tap, rd)], space, strides),
                    wk, dimension_numbers=(((lspec[1],), (kept.index(rspec[1]),)),
                                           (batch[0], tuple(kept.index(b) for b in batch[1]))),
                    preferred_element_type=odt)
        y = part if y is None else y + part
    # y: ([G,] x's free dims in x's order, Og or O) -> (N, [G,] O, S'...)
    free = [i for i in range(x.ndim) if i not in (lspec[1],) + batch[0]]
    lead = len(batch[0])
    order = [lead + free.index(lspec[0])] + list(range(lead)) + [y.ndim - 1] + \
        [lead + free.index(dim) for dim in lspec[2:]]
    return _to_out(jnp.reshape(jnp.transpose(y, order), (n, o) + tuple(space)), ospec)


# ------------------------------------------------------------------ the rule

def _float_kernel_dtype(lhs_dt, p):
    """The float dtype a kernel runs in, or None when the convolution is not for the
    float kernels (integer results)."""
    pet = p["preferred_element_type"]
    out = np.dtype(pet) if pet is not None else np.dtype(lhs_dt)
    if not dtypes.is_float(out):
        return None
    # half floats run in float32 (as JAX's CPU convolutions accumulate them)
    return out if out == np.dtype(np.float64) else np.dtype(np.float32)


def conv_rule(eqn):
    """EXPANSIONS entry: None for a convolution already in the kernels' form."""
    padded = any(tuple(x) != (0, 0) for x in eqn.params["padding"])
    if cv.is_canonical(eqn) and not _weight_gradient_like(eqn) and \
            (KERNEL_PADS or not padded):
        return None
    p = dict(eqn.params)
    lhs, rhs = eqn.inputs
    d = lhs.aval.ndim - 2
    kdt = _float_kernel_dtype(lhs.aval.dtype, p)
    out_dt = eqn.outputs[0].aval.dtype
    if d >= 1 and kdt is not None and not _weight_gradient_like(eqn) and \
            eqn.outputs[0].aval.size > 0 and lhs.aval.size > 0 and rhs.aval.size > 0:
        def kernel(a, b):
            y = _kernel_form(a, b, p, kdt)
            return [y if y.dtype == out_dt else y.astype(out_dt)]
        return kernel
    by_position = d >= 1 and _weight_gradient_like(eqn)
    return lambda a, b: [_dot_forms(a, b, p, by_position)]


def _weight_gradient_like(eqn) -> bool:
    """Fewer output positions than window taps: the weight gradient's shape."""
    rhs = eqn.inputs[1]
    rspec = eqn.params["dimension_numbers"][1]
    ospec = eqn.params["dimension_numbers"][2]
    taps = math.prod(rhs.aval.shape[i] for i in rspec[2:])
    out = eqn.outputs[0].aval.shape
    positions = math.prod(out[i] for i in ospec[2:])
    return positions < taps
