"""jvp, vjp and batching rules of conv_general_dilated.

The convolution is bilinear, so its tangent is the sum of two convolutions, and
each operand's cotangent is itself a convolution (JAX's formulas, derived here
in canonical order, lhs (N, C, S...), rhs (O, I, K...), out (N', O, S'...),
one spatial dim at a time; lhs_p is the dilated and padded lhs):

    out[n, o, t] = sum_{i, k} lhs_p[n, g(o) I + i, t stride + k rhs_dil] rhs[o, i, k]

lhs cotangent: the element s of lhs sits at lo + s lhs_dil of lhs_p, so it
collects ct[t] rhs[k] over t stride + k rhs_dil == lo + s lhs_dil: a convolution
of ct dilated by the strides (lhs_dilation = window_strides) with the kernel
reversed spatially and its in/out feature roles swapped, stepping by the lhs
dilation (window_strides = lhs_dilation), low padding (K - 1) rhs_dil - lo and
the high padding that makes the result exactly as long as lhs.

rhs cotangent: rhs[k] collects lhs_p[t stride + k rhs_dil] ct[t] over batch and
t: a convolution of lhs (its batch dim as the contracted "feature", its feature
dim as the "batch") with ct as the kernel (dilated by the strides: rhs_dilation
= window_strides), stepping by rhs_dil, low padding lo and the high padding
that leaves K taps.

Feature groups of the forward become batch groups of the rhs cotangent (and
the other way round); for the lhs cotangent, the group axis moves from the
kernel's out features to its in features (which become the transposed kernel's
outputs), and batch groups become feature groups whose outputs fold back into
the lhs batch.

Batching folds the mapped axis into the convolution: into the lhs batch (lhs
mapped), into the kernel's out features (rhs mapped, inside each group), or
into both the feature groups (both mapped), or the batch groups when the
convolution already has some.
"""
from __future__ import annotations

import numpy as np

import jx.numpy as jnp
from jx.core import bind, get_aval
from jx.prims import convolution as cv

from .jvp import jvp_rules
from .jvp_rules import bilinear
from .vjp import vjp_rules
from .vmap import batch_rules
from .zeros import zeros, zeros_like

NAME = "conv_general_dilated"


def _conv(lhs, rhs, **params):
    return bind(cv.conv_general_dilated, lhs, rhs, **params)[0]


def _shape(x):
    return tuple(get_aval(x).shape)


def _dtype(x):
    return np.dtype(get_aval(x).dtype)


def _convert(x, dt):
    return x if _dtype(x) == np.dtype(dt) else jnp.asarray(x, dtype=dt)


def _split(x, axis: int, major: int):
    """x with dim `axis` split into (major, rest) at axis, axis + 1."""
    shape = _shape(x)
    size = shape[axis]
    return jnp.reshape(x, shape[:axis] + (major, size // major) + shape[axis + 1:])


def _merge(x, src: int, dst: int):
    """x with dim src folded into dim dst, src the major part; the result has one dim
    fewer, and dims after src move down by one."""
    at = dst - (src < dst)                   # dst's position once src is taken out
    x = jnp.moveaxis(x, src, at)             # src at `at`, dst right after it
    shape = _shape(x)
    return jnp.reshape(x, shape[:at] + (shape[at] * shape[at + 1],) + shape[at + 2:])


def _params(window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
            feature_group_count, batch_group_count, preferred_element_type=None):
    return dict(window_strides=tuple(int(s) for s in window_strides),
                padding=tuple((int(lo), int(hi)) for lo, hi in padding),
                lhs_dilation=tuple(int(d) for d in lhs_dilation),
                rhs_dilation=tuple(int(d) for d in rhs_dilation),
                dimension_numbers=tuple(tuple(int(d) for d in s) for s in dimension_numbers),
                feature_group_count=int(feature_group_count),
                batch_group_count=int(batch_group_count),
                preferred_element_type=preferred_element_type)


# ------------------------------------------------------------------ jvp
jvp_rules[NAME] = bilinear(cv.conv_general_dilated)


# ------------------------------------------------------------------ vjp
def _ct_lhs(ct, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
            dimension_numbers, feature_group_count, batch_group_count):
    lspec, rspec, ospec = dimension_numbers
    G, B = feature_group_count, batch_group_count
    lshape, rshape, cshape = _shape(lhs), _shape(rhs), _shape(ct)
    if 0 in cshape:
        return zeros_like(lhs)
    w = rhs
    groups = 1
    if G > 1 or B > 1:
        # out features o = g O' + o' of group g: the transposed kernel's outputs are
        # (g, i), group-major, and its inputs o'
        groups = max(G, B)
        w = _merge(_split(w, rspec[0], groups), rspec[0], rspec[1] + (rspec[1] > rspec[0]))
    w = jnp.flip(w, tuple(rspec[2:]))
    pads = []
    for d in range(len(lspec) - 2):
        n, k, t = lshape[lspec[2 + d]], rshape[rspec[2 + d]], cshape[ospec[2 + d]]
        window = cv.dilate(k, rhs_dilation[d])
        lo = window - 1 - padding[d][0]
        hi = (cv.dilate(n, lhs_dilation[d]) + window - 1) - cv.dilate(t, window_strides[d]) - lo
        pads.append((lo, hi))
    w = _convert(w, _dtype(ct))
    out = _conv(ct, w, **_params(lhs_dilation, pads, window_strides, rhs_dilation,
                                 (ospec, (rspec[1], rspec[0]) + tuple(rspec[2:]), lspec),
                                 groups, 1))
    if B > 1:
        # the outputs' features are (b, c), batch-group-major: b joins the batch
        out = _merge(_split(out, lspec[1], B), lspec[1], lspec[0] + (lspec[0] > lspec[1]))
    return _convert(out, _dtype(lhs))


def _ct_rhs(ct, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
            dimension_numbers, feature_group_count, batch_group_count):
    lspec, rspec, ospec = dimension_numbers
    lshape, rshape, cshape = _shape(lhs), _shape(rhs), _shape(ct)
    if 0 in cshape:
        return zeros_like(rhs)

    def swap(spec):
        return (spec[1], spec[0]) + tuple(spec[2:])

    pads = []
    for d in range(len(lspec) - 2):
        n, k, t = lshape[lspec[2 + d]], rshape[rspec[2 + d]], cshape[ospec[2 + d]]
        lo = padding[d][0]
        hi = (k - 1) * rhs_dilation[d] + cv.dilate(t, window_strides[d]) \
            - cv.dilate(n, lhs_dilation[d]) - lo
        pads.append((lo, hi))
    x = _convert(lhs, _dtype(ct))
    out = _conv(x, ct, **_params(rhs_dilation, pads, lhs_dilation, window_strides,
                                 (swap(lspec), swap(ospec), swap(rspec)),
                                 batch_group_count, feature_group_count))
    return _convert(out, _dtype(rhs))


def _conv_vjp(cts, ins, outs, **params):
    (ct,), (lhs, rhs) = cts, ins
    if ct is None:
        return [None, None]
    p = dict(params)
    p.pop("preferred_element_type", None)
    return [_ct_lhs(ct, lhs, rhs, **p), _ct_rhs(ct, lhs, rhs, **p)]


vjp_rules[NAME] = _conv_vjp


# ------------------------------------------------------------------ vmap
def _front(x, d):
    return x if d == 0 else jnp.moveaxis(x, d, 0)


def _conv_batch(xs, dims, axis_size, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count,
                preferred_element_type=None):
    (lhs, rhs), (dl, dr) = xs, dims
    lspec, rspec, ospec = (tuple(s) for s in dimension_numbers)
    G, B = feature_group_count, batch_group_count
    kw = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
              rhs_dilation=rhs_dilation, preferred_element_type=preferred_element_type)
    A = axis_size
    if A == 0:
        lhs0 = get_aval(lhs)
        rhs0 = get_aval(rhs)
        if dl is not None:
            lhs0 = lhs0.update(shape=tuple(np.delete(lhs0.shape, dl % lhs0.ndim)))
        if dr is not None:
            rhs0 = rhs0.update(shape=tuple(np.delete(rhs0.shape, dr % rhs0.ndim)))
        aval = cv._conv_rule(lhs0, rhs0, dimension_numbers=dimension_numbers,
                             feature_group_count=G, batch_group_count=B, **kw)
        return [zeros(aval.update(shape=(0,) + tuple(aval.shape)), [lhs, rhs])], [0]
    if dl is not None:
        lhs = _front(lhs, dl % (len(lspec) + 1))
    if dr is not None:
        rhs = _front(rhs, dr % (len(rspec) + 1))

    if dl is not None and dr is None:
        if B == 1:      # the mapped axis joins the batch, major
            x = _merge(lhs, 0, lspec[0] + 1)
        else:           # inside each batch group: (b, a, n')
            x = _split(lhs, lspec[0] + 1, B)                 # (A, ..., B, N', ...)
            x = _merge(x, 0, lspec[0] + 2)                    # (..., B, A N', ...)
            shape = _shape(x)
            x = jnp.reshape(x, shape[:lspec[0]] + (B * shape[lspec[0] + 1],) +
                            shape[lspec[0] + 2:])
        out = _conv(x, rhs, **_params(dimension_numbers=(lspec, rspec, ospec),
                                      feature_group_count=G, batch_group_count=B, **kw))
        return [_split(out, ospec[0], A)], [ospec[0]]

    if dr is not None and dl is None:
        # out feature o = g O' + o' (g a feature or batch group): the mapped axis joins
        # o' as its major part, and comes out of the result's features the same way
        groups = max(G, B)
        w = _split(rhs, rspec[0] + 1, groups)                 # (A, ..., grp, O', ...)
        w = _merge(w, 0, rspec[0] + 2)                        # (..., grp, A O', ...)
        shape = _shape(w)
        w = jnp.reshape(w, shape[:rspec[0]] + (groups * shape[rspec[0] + 1],) +
                        shape[rspec[0] + 2:])
        out = _conv(lhs, w, **_params(dimension_numbers=(lspec, rspec, ospec),
                                      feature_group_count=G, batch_group_count=B, **kw))
        f = ospec[1]
        shape = _shape(out)
        per = shape[f] // (groups * A)
        out = jnp.reshape(out, shape[:f] + (groups, A, per) + shape[f + 1:])
        out = jnp.moveaxis(out, f + 1, f)                     # (..., A, grp, O', ...)
        shape = _shape(out)
        out = jnp.reshape(out, shape[:f + 1] + (groups * per,) + shape[f + 3:])
        return [out], [f]

    # both mapped
    if B == 1:
        # each example its own set of feature groups: a joins the lhs features and the
        # kernel's out features as their major part
        x = _merge(lhs, 0, lspec[1] + 1)
        w = _merge(rhs, 0, rspec[0] + 1)
        out = _conv(x, w, **_params(dimension_numbers=(lspec, rspec, ospec),
                                    feature_group_count=A * G, batch_group_count=1, **kw))
        return [_split(out, ospec[1], A)], [ospec[1]]
    # batch groups (b) become (a, b) groups: a joins the lhs batch and the kernel's out
    # features as their major part
    x = _merge(lhs, 0, lspec[0] + 1)
    w = _merge(rhs, 0, rspec[0] + 1)
    out = _conv(x, w, **_params(dimension_numbers=(lspec, rspec, ospec),
                                feature_group_count=1, batch_group_count=A * B, **kw))
    return [_split(out, ospec[1], A)], [ospec[1]]


batch_rules[NAME] = _conv_batch
