"""Lowering of conv_general_dilated, chosen per convolution by its shape.

    kernel      float convolutions with at least as many output positions as window
                taps (layers, their input gradients): rewritten into the canonical
                form the CPU kernels take (prims.convolution.is_canonical:
                channels-last, padding and lhs dilation applied by a `pad`, batch
                groups turned into feature groups); the kernels read the padded
                input in place (implicit im2col).
    positions   fewer output positions than taps (a weight gradient: the window is
                the whole image, the output the kernel's few taps): one dot_general
                per output position, contracting window x features, so the GEMM
                runs with K = the image, not thousands of tiny products.
    taps        the rest (integer convolutions, zero spatial dims): one dot_general
                per window tap, contracting the features, summed.

Both dot_general forms read their operands through fusible pad/transpose/slice
chains, so each operand is one copy gathered from the input. Groups become a
batch dim of the products.
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


def _canonical_order(lhs, rhs, p):
    """lhs as (N', B*C..., S...) -> (N', C', S...) with batch groups folded into
    feature groups, padded and dilated; rhs as (O, I, K...); and the group count."""
    lspec, rspec, _ = p["dimension_numbers"]
    x = jnp.transpose(lhs, lspec)                          # (N, C, S...)
    w = jnp.transpose(rhs, rspec)                          # (O, I, K...)
    B, G = p["batch_group_count"], p["feature_group_count"]
    if B > 1:       # lhs batch group b feeds out features [b O/B, (b+1) O/B): a feature group
        n, c = x.shape[:2]
        x = jnp.reshape(x, (B, n // B) + x.shape[1:])
        x = jnp.reshape(jnp.swapaxes(x, 0, 1), (n // B, B * c) + x.shape[3:])
        G = B
    config = [(0, 0, 0), (0, 0, 0)] + [(lo, hi, d - 1) for (lo, hi), d in
                                       zip(p["padding"], p["lhs_dilation"])]
    if any(c != (0, 0, 0) for c in config):
        x = _pad(x, config)
    return x, w, G


def _to_out(y, out_spec):
    """y in canonical (N, O, S...) order, transposed to out_spec's layout."""
    return jnp.transpose(y, tuple(np.argsort(out_spec)))


# ------------------------------------------------------------------ kernel form

def _kernel_form(lhs, rhs, p, dt):
    x, w, G = _canonical_order(lhs, rhs, p)
    d = x.ndim - 2
    if x.dtype != dt:
        x, w = x.astype(dt), w.astype(dt)
    x = jnp.transpose(x, (0,) + tuple(range(2, d + 2)) + (1,))        # (N, S..., C)
    w = jnp.transpose(w, tuple(range(2, d + 2)) + (1, 0))             # (K..., I, O)
    y = _one(cv.conv_general_dilated, x, w, window_strides=tuple(p["window_strides"]),
             padding=((0, 0),) * d, lhs_dilation=(1,) * d,
             rhs_dilation=tuple(p["rhs_dilation"]),
             dimension_numbers=cv.channels_last_numbers(d), feature_group_count=G,
             batch_group_count=1, preferred_element_type=None)
    y = jnp.transpose(y, (0, d + 1) + tuple(range(1, d + 1)))          # (N, O, S'...)
    return _to_out(y, p["dimension_numbers"][2])


# ------------------------------------------------------------------ dot forms

def _grouped(x, w, G):
    """x (N, C, ...) -> (N, G, I, ...); w (O, I, ...) -> (G, Og, I, ...)."""
    n, c = x.shape[:2]
    o = w.shape[0]
    return (jnp.reshape(x, (n, G, c // G) + x.shape[2:]),
            jnp.reshape(w, (G, o // G) + w.shape[1:]))


def _dot_forms(lhs, rhs, p, by_position: bool):
    x, w, G = _canonical_order(lhs, rhs, p)
    odt = p["preferred_element_type"]
    d = x.ndim - 2
    n, o = x.shape[0], w.shape[0]
    ksz = w.shape[2:]
    strides, rd = p["window_strides"], p["rhs_dilation"]
    space = [cv.out_size(s, 0, 0, 1, k, r, t) for s, k, r, t in
             zip(x.shape[2:], ksz, rd, strides)]
    rdt = np.dtype(odt) if odt is not None else np.dtype(x.dtype)
    if n == 0 or o == 0 or 0 in space or x.shape[1] == 0 or 0 in ksz:
        y = jnp.zeros((n, o) + tuple(space), rdt)
        return _to_out(y, p["dimension_numbers"][2])
    xg, wg = _grouped(x, w, G)                  # (N, G, I, S...), (G, Og, I, K...)

    def window(start, extent, step):
        lo = (0, 0, 0) + tuple(start)
        hi = xg.shape[:3] + tuple(s + (e - 1) * t + 1 for s, e, t in zip(start, extent, step))
        return _one(st.slice_, xg, start_indices=lo, limit_indices=hi,
                    strides=(1, 1, 1) + tuple(step))

    if by_position:
        # out[n, g, j, s'] = sum_{i, k} xg[n, g, i, s' stride + k rd] wg[g, j, i, k]
        spatial = tuple(range(3, 3 + d))
        parts = []
        for pos in itertools.product(*map(range, space)):
            xs = window([q * t for q, t in zip(pos, strides)], ksz, rd)     # (N, G, I, K...)
            parts.append(_one(la.dot_general, xs, wg,
                              dimension_numbers=(((2,) + spatial, (2,) + spatial), ((1,), (0,))),
                              preferred_element_type=odt))                  # (G, N, Og)
        y = jnp.stack(parts, axis=-1)                                       # (G, N, Og, P)
        y = jnp.reshape(jnp.swapaxes(y, 0, 1), (n, o) + tuple(space))
    else:
        # out = sum over taps k of xg[n, g, i, s' stride + k rd] wg[g, j, i, k]
        y = None
        for tap in itertools.product(*map(range, ksz)):
            xs = window([k * r for k, r in zip(tap, rd)], space, strides)   # (N, G, I, S'...)
            wk = wg[(slice(None),) * 3 + tap]                                # (G, Og, I)
            part = _one(la.dot_general, xs, wk, dimension_numbers=(((2,), (2,)), ((1,), (0,))),
                        preferred_element_type=odt)                         # (G, N, S'..., Og)
            y = part if y is None else y + part
        y = jnp.moveaxis(y, -1, 1)                                          # (G, Og, N, S'...)
        y = jnp.reshape(jnp.moveaxis(y, 2, 0), (n, o) + tuple(space))
    return _to_out(y, p["dimension_numbers"][2])


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
    if cv.is_canonical(eqn) and not _weight_gradient_like(eqn):
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
