"""Expand the windowed reductions into fusible primitives (the expand stage).

No backend lowers reduce_window_* or the select primitives itself: each becomes
pads (the identity in the padding and the base dilation's holes), strided
slices (one per window tap) and the elementwise op, which the fusion pass turns
into one loop kernel per output: every output element reads its window's taps
from the operand, so pooling streams the operand once, at memory bandwidth.

    reduce_window (<= UNROLL taps):  acc = tap_0 op tap_1 op ... in XLA's order
    more taps:        one window dim at a time (a product window is nested 1-D
                      windows); a 1-D window of more than UNROLL taps is
                      non-overlapping blocks (stride >= window: a reshape and a
                      reduction) or van Herk / Gil-Werman (blocks of the window's
                      length, a prefix and a suffix scan in each: every window is
                      one block's suffix and the next one's prefix, O(1) per
                      output for any window length; exact for max/min, no
                      cancellation for sums)
    select_and_gather_add:   the tangent of the chosen tap, the choice folded
                             tap by tap from the identity (first maximum wins)
    select_and_scatter_add:  the chosen tap's index per window (folded the same
                             way from the window's first tap, stored once), then
                             per tap the source where it was chosen, spread back
                             onto the operand by a pad with interior padding
                             stride - 1 (one loop over the operand)
"""
from __future__ import annotations

import math

import numpy as np

from jx.core import bind, bind_like
from jx.lax import windowed as W
from jx.prims import elementwise as ew
from jx.prims import reductions as rd
from jx.prims import structural as st
from jx.prims import windowed as wp

from .expand import EXPANSIONS

# taps folded in one loop; longer windows are decomposed
UNROLL = 64
_KIND = {"reduce_window_sum": "sum", "reduce_window_prod": "prod",
         "reduce_window_max": "max", "reduce_window_min": "min"}
_CUM = {"sum": rd.cumsum, "prod": rd.cumprod, "max": rd.cummax, "min": rd.cummin}
_REDUCE = {"sum": rd.reduce_sum, "prod": rd.reduce_prod, "max": rd.reduce_max,
           "min": rd.reduce_min}
_OP = {"sum": ew.add, "prod": ew.mul, "max": ew.max_, "min": ew.min_}


def _one(prim, *args, **params):
    return bind(prim, *args, **params)[0]


def _iota(like, shape, dimension):
    """An int32 iota staged with `like` (a constant would be baked into the program)."""
    return bind_like((like,), st.iota, dtype=np.dtype(np.int32), shape=tuple(shape),
                     dimension=dimension)[0]


def _shape(x):
    return tuple(x.shape)


def _slice_axis(x, axis, start, limit, stride=1):
    nd = len(_shape(x))
    s, l, k = [0] * nd, list(_shape(x)), [1] * nd
    s[axis], l[axis], k[axis] = start, limit, stride
    return _one(st.slice_, x, start_indices=tuple(s), limit_indices=tuple(l), strides=tuple(k))


def _pad_axis(x, fill, axis, lo, hi):
    pads = [(0, 0)] * len(_shape(x))
    pads[axis] = (lo, hi)
    return W.dilate_pad(x, fill, pads, (1,) * len(pads))


def _split_axis(x, axis, parts):
    s = _shape(x)
    return _one(st.reshape, x, new_sizes=s[:axis] + (s[axis] // parts, parts) + s[axis + 1:])


def _merge_axis(x, axis):
    s = _shape(x)
    return _one(st.reshape, x, new_sizes=s[:axis] + (s[axis] * s[axis + 1],) + s[axis + 2:])


# ------------------------------------------------------------------ reductions

def _only_dim(p, d, nd):
    """p restricted to dim d (every other dim: one tap, stride 1, no padding)."""
    def pick(key, other):
        return tuple(v if i == d else other for i, v in enumerate(p[key]))
    return dict(window_dimensions=pick("window_dimensions", 1),
                window_strides=pick("window_strides", 1), padding=pick("padding", (0, 0)),
                base_dilation=pick("base_dilation", 1), window_dilation=pick("window_dilation", 1))


def _trivial(p, d):
    return p["window_dimensions"][d] == 1 and p["window_strides"][d] == 1 and \
        tuple(p["padding"][d]) == (0, 0) and p["base_dilation"][d] == 1


def _van_herk(y, kind, axis, w):
    """op over y[i : i + w] along axis, for i in [0, len - w] (len >= w)."""
    q = _shape(y)[axis]
    n_out = q - w + 1
    ident = wp.identity(kind, y.dtype)
    blocks = -(-q // w) * w
    y = _pad_axis(y, ident, axis, 0, blocks - q)
    y = _split_axis(y, axis, w)
    prefix = _merge_axis(_one(_CUM[kind], y, axis=axis + 1), axis)
    suffix = _merge_axis(_one(_CUM[kind], y, axis=axis + 1, reverse=True), axis)
    head = _slice_axis(suffix, axis, 0, n_out)
    tail = _slice_axis(prefix, axis, w - 1, w - 1 + n_out)
    both = _one(_OP[kind], head, tail)
    if kind in ("max", "min"):            # idempotent: a block start's window is one block
        return both
    i = _iota(head, _shape(head), axis)
    start = _one(ew.eq, _one(ew.rem, i, W.full(i, _shape(i), w, np.int32)),
                 W.full(i, _shape(i), 0, np.int32))
    return _one(ew.select, start, head, both)


def _long_window(x, kind, d, p):
    """A window of more than UNROLL taps along dim d alone."""
    w, s = p["window_dimensions"][d], p["window_strides"][d]
    r = p["window_dilation"][d]
    m = W.out_shape(_shape(x), p)[d]
    ident = wp.identity(kind, x.dtype)
    xp = W.dilate_pad(x, ident, p["padding"], p["base_dilation"])
    length = _shape(xp)[d]
    if r == 1 and s >= w:                 # non-overlapping: blocks of s, the first w kept
        if length < m * s:
            xp = _pad_axis(xp, ident, d, 0, m * s - length)
        blocks = _split_axis(_slice_axis(xp, d, 0, m * s), d, s)
        blocks = _slice_axis(blocks, d + 1, 0, w)
        return _one(_REDUCE[kind], blocks, axes=(d + 1,))
    if r > 1:                             # r interleaved phases, each a dense window
        phases = -(-length // r) * r
        xp = _split_axis(_pad_axis(xp, ident, d, 0, phases - length), d, r)
        full = _merge_axis(_van_herk(xp, kind, d, w), d)
    else:
        full = _van_herk(xp, kind, d, w)
    return _slice_axis(full, d, 0, (m - 1) * s + 1, s)


def reduce_staged(x, kind, p):
    """reduce_window of `kind` on x as fusible primitives (and scans for long windows)."""
    shape = W.out_shape(_shape(x), p)
    if 0 in shape or math.prod(p["window_dimensions"]) <= UNROLL:
        return W.fold_taps(x, kind, p)
    nd = len(shape)
    for d in range(nd):
        if _trivial(p, d):
            continue
        pd = _only_dim(p, d, nd)
        if p["window_dimensions"][d] <= UNROLL or x.dtype == np.bool_:
            x = W.fold_taps(x, kind, pd)
        else:
            x = _long_window(x, kind, d, pd)
    return x


def _reduce_rule(eqn):
    kind = _KIND[eqn.prim.name]
    return lambda x: [reduce_staged(x, kind, eqn.params)]


# ------------------------------------------------------------------ select primitives

def _keeps(select):
    return ew.ge if select == "ge" else ew.le


def _tap_list(xp, shape, p):
    return [W.tap(xp, pos, shape, p["window_strides"], p["window_dilation"])
            for pos in W.tap_positions(p["window_dimensions"])]


def gather_staged(t, x, select, p):
    shape = W.out_shape(_shape(x), p)
    if 0 in shape:
        return W.full(t, shape, 0, t.dtype)
    ident = wp.identity("max" if select == "ge" else "min", x.dtype)
    xs = _tap_list(W.dilate_pad(x, ident, p["padding"], p["base_dilation"]), shape, p)
    ts = _tap_list(W.dilate_pad(t, 0, p["padding"], p["base_dilation"]), shape, p)
    cur, tan = W.full(x, shape, ident, x.dtype), W.full(t, shape, 0, t.dtype)
    for xk, tk in zip(xs, ts):
        kept = _one(_keeps(select), cur, xk)
        cur = _one(ew.select, kept, cur, xk)
        tan = _one(ew.select, kept, tan, tk)
    return tan


def scatter_staged(source, x, select, p):
    shape_x = _shape(x)
    shape = W.out_shape(shape_x, p)
    if 0 in shape or 0 in shape_x:
        return W.full(source, shape_x, 0, source.dtype)
    ident = wp.identity("max" if select == "ge" else "min", x.dtype)
    xp = W.dilate_pad(x, ident, p["padding"], p["base_dilation"])
    xs = _tap_list(xp, shape, p)
    i32 = np.dtype(np.int32)
    cur, chosen = xs[0], W.full(x, shape, 0, i32)
    for k, xk in enumerate(xs[1:], 1):
        kept = _one(_keeps(select), cur, xk)
        cur = _one(ew.select, kept, cur, xk)
        chosen = _one(ew.select, kept, chosen, W.full(x, shape, k, i32))
    padded = _shape(xp)
    acc = _scatter_taps(source, _stored(chosen), shape, padded, p)
    # the padded, dilated space back to the operand
    back = W.dilate_pad(acc, 0, [(-lo, -hi) for lo, hi in p["padding"]], (1,) * len(shape_x))
    if any(b > 1 for b in p["base_dilation"]):
        back = _one(st.slice_, back, start_indices=(0,) * len(shape_x),
                    limit_indices=_shape(back), strides=tuple(p["base_dilation"]))
    return back


def _stored(v):
    """v read through a doubling broadcast (sliced back): the fusion pass stores a
    value that an expanding broadcast reads, so the taps' fold that chose v runs
    once per window instead of once per tap that reads it."""
    s = _shape(v)
    wide = _one(st.broadcast_in_dim, v, shape=s + (2,), broadcast_dimensions=tuple(range(len(s))))
    one = _one(st.slice_, wide, start_indices=(0,) * (len(s) + 1), limit_indices=s + (1,),
               strides=(1,) * (len(s) + 1))
    return _one(st.reshape, one, new_sizes=s)


def _scatter_taps(source, chosen, shape, padded, p):
    """Each tap's chosen sources spread onto the padded operand by a pad with
    interior padding stride - 1, summed over the taps."""
    i32 = np.dtype(np.int32)
    zeros = W.full(source, shape, 0, source.dtype)
    acc = None
    for k, pos in enumerate(W.tap_positions(p["window_dimensions"])):
        mine = _one(ew.select, _one(ew.eq, chosen, W.full(chosen, shape, k, i32)), source,
                    zeros)
        config = []
        for j, r, m, s, n in zip(pos, p["window_dilation"], shape, p["window_strides"], padded):
            lo = j * r
            config.append((lo, n - lo - ((m - 1) * s + 1), s - 1))
        spread = _one(st.pad, mine, np.zeros((), source.dtype), padding_config=tuple(config))
        acc = spread if acc is None else _one(ew.add, acc, spread)
    return acc


def _gather_rule(eqn):
    p = dict(eqn.params)
    select = p.pop("select")
    return lambda t, x: [gather_staged(t, x, select, p)]


def _scatter_rule(eqn):
    p = dict(eqn.params)
    select = p.pop("select")
    return lambda s, x: [scatter_staged(s, x, select, p)]


for _name in _KIND:
    EXPANSIONS[_name] = _reduce_rule
EXPANSIONS["select_and_gather_add"] = _gather_rule
EXPANSIONS["select_and_scatter_add"] = _scatter_rule
