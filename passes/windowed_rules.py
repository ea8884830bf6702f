"""jvp, vjp and batching rules of the windowed reductions (jx.prims.windowed).

reduce_window_sum is linear; its transpose spreads each cotangent over its
window: the cotangent dilated by the strides and padded so that a window sum
with the base dilation as strides lands on the operand (XLA's rule, as JAX's).
reduce_window_max/min differentiate through the element each window chooses
(the first maximum in row-major order, JAX's tie rule): forward,
select_and_gather_add picks that element's tangent; backward,
select_and_scatter_add adds the cotangent at its place. Those two are each
other's transposes (linear in the tangent / source; the operand only chooses, a
piecewise-constant dependence with a zero derivative). reduce_window_prod is
differentiated as its fold of products over the taps (the product rule, exact
where the operand has zeros, as JAX's generic reduce_window jvp).

Batching: the batch axis becomes one more window dim of size 1, stride 1, no
padding or dilation.
"""
from __future__ import annotations

from jx import dtypes
from jx.core import bind, get_aval
from jx.lax import windowed as W
from jx.prims import windowed as wp

from .jvp import jvp_function, jvp_rules
from .vjp import vjp_function, vjp_rules
from .vmap import batch_rules, move_to_front
from .zeros import zeros_like

_SELECT = {"reduce_window_max": "ge", "reduce_window_min": "le"}


def _one(prim, *args, **params):
    return bind(prim, *args, **params)[0]


# ------------------------------------------------------------------ sum

def _sum_jvp(ps, ts, **p):
    (x,), (t,) = ps, ts
    return [_one(wp.reduce_window_sum, x, **p)], [_one(wp.reduce_window_sum, t, **p)]


def sum_transpose(ct, shape, p):
    """The operand's cotangent of reduce_window_sum(x, **p), x of `shape`."""
    m = get_aval(ct).shape
    if 0 in m or 0 in shape:
        return W.full(ct, shape, 0, get_aval(ct).dtype)
    config = []
    for n, mi, w, s, (lo, hi), b, r in zip(shape, m, p["window_dimensions"],
                                           p["window_strides"], p["padding"],
                                           p["base_dilation"], p["window_dilation"]):
        low = (w - 1) * r - lo
        high = (n - 1) * b + (w - 1) * r + 1 - ((mi - 1) * s + 1) - low
        config.append((low, high, s - 1))
    nd = len(shape)
    spread = W.dilate_pad(ct, 0, [c[:2] for c in config], [c[2] + 1 for c in config])
    return _one(wp.reduce_window_sum, spread, window_dimensions=p["window_dimensions"],
                window_strides=p["base_dilation"], padding=((0, 0),) * nd,
                base_dilation=(1,) * nd, window_dilation=p["window_dilation"])


def _sum_vjp(cts, ins, outs, **p):
    return [sum_transpose(cts[0], get_aval(ins[0]).shape, p)]


# ------------------------------------------------------------------ max / min

def _chooser_jvp(prim):
    def rule(ps, ts, **p):
        (x,), (t,) = ps, ts
        return [_one(prim, x, **p)], [_one(wp.select_and_gather_add, t, x,
                                           select=_SELECT[prim.name], **p)]
    return rule


def _chooser_vjp(prim):
    def rule(cts, ins, outs, **p):
        return [_one(wp.select_and_scatter_add, cts[0], ins[0], select=_SELECT[prim.name],
                     **p)]
    return rule


# ------------------------------------------------------------------ prod

def _prod_jvp(ps, ts, **p):
    (x,), (t,) = ps, ts
    _, (ty,), _ = jvp_function(lambda v: W.fold_taps(v, "prod", p), (x,), [t])
    return [_one(wp.reduce_window_prod, x, **p)], [ty]


def _prod_vjp(cts, ins, outs, **p):
    _, _, (x,), pullback = vjp_function(lambda v: W.fold_taps(v, "prod", p), (ins[0],))
    (ct,) = pullback([cts[0]])
    return [zeros_like(x) if ct is None and dtypes.is_inexact(get_aval(x).dtype) else ct]


# ------------------------------------------------------------------ select primitives
# select_and_gather_add(t, x) and select_and_scatter_add(s, x): linear in their
# first operand, each the other's transpose; x only chooses.

def _select_jvp(prim):
    def rule(ps, ts, **p):
        (a, x), (ta, _) = ps, ts
        out = _one(prim, a, x, **p)
        return [out], [None if ta is None else _one(prim, ta, x, **p)]
    return rule


def _select_vjp(other):
    def rule(cts, ins, outs, **p):
        return [_one(other, cts[0], ins[1], **p), None]
    return rule


# ------------------------------------------------------------------ batching

def _with_unit_dim(p, at):
    """The params with a size-1, stride-1, unpadded window dim inserted at `at`."""
    def ins(t, v):
        t = tuple(t)
        return t[:at] + (v,) + t[at:]
    return dict(p, window_dimensions=ins(p["window_dimensions"], 1),
                window_strides=ins(p["window_strides"], 1),
                padding=ins(p["padding"], (0, 0)),
                base_dilation=ins(p["base_dilation"], 1),
                window_dilation=ins(p["window_dilation"], 1))


def _unary_batch(prim):
    def rule(xs, ds, axis_size, **p):
        (x,), (d,) = xs, ds
        return [_one(prim, x, **_with_unit_dim(p, d))], [d]
    return rule


def _binary_batch(prim):
    def rule(xs, ds, axis_size, **p):
        a, x = (move_to_front(v, d, axis_size) for v, d in zip(xs, ds))
        return [_one(prim, a, x, **_with_unit_dim(p, 0))], [0]
    return rule


jvp_rules["reduce_window_sum"] = _sum_jvp
vjp_rules["reduce_window_sum"] = _sum_vjp
jvp_rules["reduce_window_prod"] = _prod_jvp
vjp_rules["reduce_window_prod"] = _prod_vjp
for _p in (wp.reduce_window_max, wp.reduce_window_min):
    jvp_rules[_p.name] = _chooser_jvp(_p)
    vjp_rules[_p.name] = _chooser_vjp(_p)
for _p in (wp.reduce_window_sum, wp.reduce_window_prod, wp.reduce_window_max,
           wp.reduce_window_min):
    batch_rules[_p.name] = _unary_batch(_p)
jvp_rules["select_and_gather_add"] = _select_jvp(wp.select_and_gather_add)
jvp_rules["select_and_scatter_add"] = _select_jvp(wp.select_and_scatter_add)
vjp_rules["select_and_gather_add"] = _select_vjp(wp.select_and_scatter_add)
vjp_rules["select_and_scatter_add"] = _select_vjp(wp.select_and_gather_add)
for _p in (wp.select_and_gather_add, wp.select_and_scatter_add):
    batch_rules[_p.name] = _binary_batch(_p)

__all__ = ["sum_transpose"]
