"""jvp, vjp and batching rules of the indexing primitives: dynamic_slice,
dynamic_update_slice, gather and the scatter family.

Every gather has an inverse scatter with the same dimension numbers (renamed)
and vice versa, and the derivatives are built from those pairs. Out-of-bounds
behaviour must carry over: a clamped ("clip") gather or scatter pairs with a
clamped one, while a "fill" gather (whose out-of-bounds slices read nothing)
pairs with a "drop" scatter (whose out-of-bounds windows write nothing), in
both directions: the validity test on a start is the same for both.

Batching uses the batching dims of gather/scatter (which exist for this): a
batch axis on both operand and indices becomes a pair of batching dims; one on
the operand alone becomes one more full-size window dim.

Repeated scatter indices: scatter (set) keeps one update per target element;
its derivatives follow exactly that winner by scattering update ids with the
same indices (JAX's scheme), so jvp, vjp and the primal agree. scatter_min/max
average the tangents of all tied contenders (as max/min and reduce_max do).
scatter_mul's derivative in the updates assumes unique indices (as JAX does);
in the operand it is exact.
"""
from __future__ import annotations

import numpy as np

import jx.numpy as jnp
from jx.core import bind, bind_like, get_aval
from jx.prims import indexing as ix
from jx.prims import structural as st
from jx.prims.indexing import GatherDimensionNumbers, ScatterDimensionNumbers

from .jvp import jvp_rules
from .vjp import vjp_rules
from .vmap import batch_rules, move_to_front
from .zeros import add_any, stage_like, zeros

_SCATTERS = ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max")


def _one(prim, *args, **params):
    return bind(prim, *args, **params)[0]


def _zeros(x, *like):
    """zeros shaped like x, staged in the trace of x or any of `like`."""
    return zeros(get_aval(x).strip_weak(), [x, *like])


def _inst(t, x, *like):
    return _zeros(x, *like) if t is None else t


def _shift(dims, by=1) -> tuple:
    return tuple(int(d) + by for d in dims)


# ---------------------------------------------------------------- gather <-> scatter

def _scatter_dn(g: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(g.offset_dims, g.collapsed_slice_dims, g.start_index_map,
                                   g.operand_batching_dims, g.start_indices_batching_dims)


def _gather_dn(s: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    return GatherDimensionNumbers(s.update_window_dims, s.inserted_window_dims,
                                  s.scatter_dims_to_operand_dims, s.operand_batching_dims,
                                  s.scatter_indices_batching_dims)


def _window(operand_shape, updates_shape, s: ScatterDimensionNumbers) -> tuple:
    """The operand window of each update row: the slice_sizes of the inverse gather."""
    sizes = iter(updates_shape[d] for d in s.update_window_dims)
    return tuple(1 if d in s.inserted_window_dims or d in s.operand_batching_dims
                 else next(sizes) for d in range(len(operand_shape)))


def _inverse_gather(y, idx, updates_shape, dn, mode, fill_value=0):
    """Gather, from y shaped like the scatter's operand, what each update element
    addressed. Windows a "drop" scatter skipped read `fill_value`."""
    gmode = "clip" if mode == "clip" else "fill"
    return _one(ix.gather, y, idx, dimension_numbers=_gather_dn(dn),
                slice_sizes=_window(get_aval(y).shape, updates_shape, dn), mode=gmode,
                fill_value=fill_value if gmode == "fill" else None)


def _scatter_mode(gather_mode) -> str:
    return "clip" if gather_mode == "clip" else "drop"   # promise_in_bounds: XLA drops


# ---------------------------------------------------------------- dynamic_slice

def _ds_jvp(ps, ts, slice_sizes):
    x, *starts = ps
    out = _one(ix.dynamic_slice, x, *starts, slice_sizes=slice_sizes)
    return [out], [_one(ix.dynamic_slice, ts[0], *starts, slice_sizes=slice_sizes)]


def _ds_vjp(cts, ins, outs, slice_sizes):
    (ct,), (x, *starts) = cts, ins
    # dynamic_update_slice clamps its starts exactly as dynamic_slice did
    return [_one(ix.dynamic_update_slice, _zeros(x, ct), ct, *starts)] + [None] * len(starts)


def _starts_matrix(starts, sdims, axis_size, like):
    """Per-example start vectors as a (batch, n) index matrix."""
    cols = [move_to_front(s, d, axis_size) for s, d in zip(starts, sdims)]   # each (batch,)
    return stage_like(jnp.stack(cols, axis=1), like)


def _ds_batch(xs, ds, axis_size, slice_sizes):
    (x, *starts), (dx, *sdims) = xs, ds
    nd = len(slice_sizes)
    if all(d is None for d in sdims):
        x = move_to_front(x, dx, axis_size)
        zero = np.zeros((), get_aval(starts[0]).dtype if starts else np.int32)
        return [_one(ix.dynamic_slice, x, zero, *starts,
                     slice_sizes=(axis_size,) + tuple(slice_sizes))], [0]
    # per-example starts: one clamped gather of a window per example
    idx = _starts_matrix(starts, sdims, axis_size, [x])
    dims = tuple(range(1, nd + 1))
    if dx is None:
        dn = GatherDimensionNumbers(dims, (), tuple(range(nd)))
        sizes = tuple(slice_sizes)
    else:
        x = move_to_front(x, dx, axis_size)
        dn = GatherDimensionNumbers(dims, (), dims, (0,), (0,))
        sizes = (1,) + tuple(slice_sizes)
    return [_one(ix.gather, x, idx, dimension_numbers=dn, slice_sizes=sizes, mode="clip")], [0]


jvp_rules["dynamic_slice"] = _ds_jvp
vjp_rules["dynamic_slice"] = _ds_vjp
batch_rules["dynamic_slice"] = _ds_batch


# ---------------------------------------------------------------- dynamic_update_slice

def _dus_jvp(ps, ts):
    x, u, *starts = ps
    tx, tu = _inst(ts[0], x, ts[1]), _inst(ts[1], u, ts[0])
    return [_one(ix.dynamic_update_slice, x, u, *starts)], \
        [_one(ix.dynamic_update_slice, tx, tu, *starts)]


def _dus_vjp(cts, ins, outs):
    (ct,), (_, u, *starts) = cts, ins
    ct_x = _one(ix.dynamic_update_slice, ct, _zeros(u, ct), *starts)
    ct_u = _one(ix.dynamic_slice, ct, *starts, slice_sizes=get_aval(u).shape)
    return [ct_x, ct_u] + [None] * len(starts)


def _dus_batch(xs, ds, axis_size):
    (x, u, *starts), (dx, du, *sdims) = xs, ds
    x, u = move_to_front(x, dx, axis_size), move_to_front(u, du, axis_size)
    if all(d is None for d in sdims):
        zero = np.zeros((), get_aval(starts[0]).dtype if starts else np.int32)
        return [_one(ix.dynamic_update_slice, x, u, zero, *starts)], [0]
    # per-example starts: a clamped scatter of one window per example (no repeats)
    nd = len(starts)
    idx = _starts_matrix(starts, sdims, axis_size, [x, u])
    dims = tuple(range(1, nd + 1))
    dn = ScatterDimensionNumbers(dims, (), dims, (0,), (0,))
    return [_one(ix.scatter, x, idx, u, dimension_numbers=dn, mode="clip")], [0]


jvp_rules["dynamic_update_slice"] = _dus_jvp
vjp_rules["dynamic_update_slice"] = _dus_vjp
batch_rules["dynamic_update_slice"] = _dus_batch


# ---------------------------------------------------------------- gather

def _gather_jvp(ps, ts, dimension_numbers, slice_sizes, mode, fill_value=None):
    (x, idx), (tx, _) = ps, ts
    params = dict(dimension_numbers=dimension_numbers, slice_sizes=slice_sizes, mode=mode)
    out = _one(ix.gather, x, idx, fill_value=fill_value, **params)
    # a filled slice is a constant: its tangent is zero, whatever the fill
    t = _one(ix.gather, tx, idx, fill_value=0 if mode == "fill" else None, **params)
    return [out], [t]


def _gather_vjp(cts, ins, outs, dimension_numbers, slice_sizes, mode, fill_value=None):
    (ct,), (x, idx) = cts, ins
    ct_x = _one(ix.scatter_add, _zeros(x, ct, idx), idx, ct,
                dimension_numbers=_scatter_dn(dimension_numbers), mode=_scatter_mode(mode))
    return [ct_x, None]


def _gather_batch(xs, ds, axis_size, dimension_numbers, slice_sizes, mode, fill_value=None):
    (x, idx), (dx, di) = xs, ds
    g = dimension_numbers
    if di is None:
        # batch axis on the operand only: one more offset dim, in front, taken whole
        x = move_to_front(x, dx, axis_size)
        dn = GatherDimensionNumbers((0,) + _shift(g.offset_dims), _shift(g.collapsed_slice_dims),
                                    _shift(g.start_index_map), _shift(g.operand_batching_dims),
                                    g.start_indices_batching_dims)
        sizes = (axis_size,) + tuple(slice_sizes)
    elif dx is None:
        # on the indices only: one more batch dim of indices, which lands in front
        idx = move_to_front(idx, di, axis_size)
        dn = GatherDimensionNumbers(_shift(g.offset_dims), g.collapsed_slice_dims,
                                    g.start_index_map, g.operand_batching_dims,
                                    _shift(g.start_indices_batching_dims))
        sizes = tuple(slice_sizes)
    else:
        x, idx = move_to_front(x, dx, axis_size), move_to_front(idx, di, axis_size)
        dn = GatherDimensionNumbers(_shift(g.offset_dims), _shift(g.collapsed_slice_dims),
                                    _shift(g.start_index_map),
                                    (0,) + _shift(g.operand_batching_dims),
                                    (0,) + _shift(g.start_indices_batching_dims))
        sizes = (1,) + tuple(slice_sizes)
    return [_one(ix.gather, x, idx, dimension_numbers=dn, slice_sizes=sizes, mode=mode,
                 fill_value=fill_value)], [0]


jvp_rules["gather"] = _gather_jvp
vjp_rules["gather"] = _gather_vjp
batch_rules["gather"] = _gather_batch


# ---------------------------------------------------------------- scatter family: batching

def _scatter_batch(prim):
    def rule(xs, ds, axis_size, dimension_numbers, mode):
        (x, idx, u), (dx, di, du) = xs, ds
        s = dimension_numbers
        # the output is batched: operand and updates get the batch axis in front
        x, u = move_to_front(x, dx, axis_size), move_to_front(u, du, axis_size)
        if di is None:
            # shared indices: the batch axis is one more window dim, written whole
            dn = ScatterDimensionNumbers((0,) + _shift(s.update_window_dims),
                                        _shift(s.inserted_window_dims),
                                        _shift(s.scatter_dims_to_operand_dims),
                                        _shift(s.operand_batching_dims),
                                        s.scatter_indices_batching_dims)
        else:
            idx = move_to_front(idx, di, axis_size)
            dn = ScatterDimensionNumbers(_shift(s.update_window_dims),
                                         _shift(s.inserted_window_dims),
                                         _shift(s.scatter_dims_to_operand_dims),
                                         (0,) + _shift(s.operand_batching_dims),
                                         (0,) + _shift(s.scatter_indices_batching_dims))
        return [_one(prim, x, idx, u, dimension_numbers=dn, mode=mode)], [0]
    return rule


for _name in _SCATTERS:
    batch_rules[_name] = _scatter_batch(ix.__dict__[_name])


# ---------------------------------------------------------------- scatter_add

def _scatter_add_jvp(ps, ts, dimension_numbers, mode):
    (x, idx, u), (tx, _, tu) = ps, ts
    p = dict(dimension_numbers=dimension_numbers, mode=mode)
    out = _one(ix.scatter_add, x, idx, u, **p)
    return [out], [_one(ix.scatter_add, _inst(tx, x, tu), idx, _inst(tu, u, tx), **p)]


def _scatter_add_vjp(cts, ins, outs, dimension_numbers, mode):
    (ct,), (_, idx, u) = cts, ins
    return [ct, None, _inverse_gather(ct, idx, get_aval(u).shape, dimension_numbers, mode)]


jvp_rules["scatter_add"] = _scatter_add_jvp
vjp_rules["scatter_add"] = _scatter_add_vjp


# ---------------------------------------------------------------- scatter (set)

def _update_won(x, idx, u, dn, mode):
    """Boolean, shaped like u: whether each update element is the one that landed.
    Scatters distinct ids with the same indices and reads them back."""
    n = int(np.prod(get_aval(u).shape, dtype=np.int64))
    dt = np.dtype(np.int32 if n < 2**31 - 1 else np.int64)
    shape = get_aval(u).shape
    ids = bind_like([u, idx], st.iota, dtype=dt, shape=(n,), dimension=0)[0]
    ids = jnp.add(jnp.reshape(ids, shape), np.ones((), dt))      # 0 marks "no update"
    landed = _one(ix.scatter, zeros(get_aval(x).update(dtype=dt, weak_type=False), [ids]),
                  idx, ids, dimension_numbers=dn, mode=mode)
    return jnp.equal(_inverse_gather(landed, idx, shape, dn, mode), ids)


def _scatter_jvp(ps, ts, dimension_numbers, mode):
    (x, idx, u), (tx, _, tu) = ps, ts
    p = dict(dimension_numbers=dimension_numbers, mode=mode)
    out = _one(ix.scatter, x, idx, u, **p)
    # same indices, same winners: the tangent of whatever landed lands
    return [out], [_one(ix.scatter, _inst(tx, x, tu), idx, _inst(tu, u, tx), **p)]


def _scatter_vjp(cts, ins, outs, dimension_numbers, mode):
    (ct,), (x, idx, u) = cts, ins
    dn = dimension_numbers
    ct_x = _one(ix.scatter, ct, idx, _zeros(u, ct), dimension_numbers=dn, mode=mode)
    gathered = _inverse_gather(ct, idx, get_aval(u).shape, dn, mode)
    ct_u = jnp.where(_update_won(x, idx, u, dn, mode), gathered, _zeros(u, gathered))
    return [ct_x, None, ct_u]


jvp_rules["scatter"] = _scatter_jvp
vjp_rules["scatter"] = _scatter_vjp


# ---------------------------------------------------------------- scatter_mul

def _scatter_mul_jvp(ps, ts, dimension_numbers, mode):
    (x, idx, u), (tx, _, tu) = ps, ts
    p = dict(dimension_numbers=dimension_numbers, mode=mode)
    out = _one(ix.scatter_mul, x, idx, u, **p)
    t_x = None if tx is None else _one(ix.scatter_mul, tx, idx, u, **p)
    # d/du of x * u at a target hit once (unique indices): x times the update tangent
    t_u = None if tu is None else jnp.multiply(
        x, _one(ix.scatter_add, _zeros(x, tu), idx, tu, **p))
    return [out], [add_any(t_x, t_u)]


def _scatter_mul_vjp(cts, ins, outs, dimension_numbers, mode):
    (ct,), (x, idx, u) = cts, ins
    dn = dimension_numbers
    # out = x * (product of the updates hitting it): exact in x, repeats included
    ct_x = _one(ix.scatter_mul, ct, idx, u, dimension_numbers=dn, mode=mode)
    ct_u = _inverse_gather(jnp.multiply(ct, x), idx, get_aval(u).shape, dn, mode)
    return [ct_x, None, ct_u]


jvp_rules["scatter_mul"] = _scatter_mul_jvp
vjp_rules["scatter_mul"] = _scatter_mul_vjp


# ---------------------------------------------------------------- scatter_min / scatter_max

def _extremal_weights(x, idx, u, y, dn, mode):
    """(operand weight, update weight, count): which contenders equal the result y,
    as floats, and how many of them share each target (ties split the tangent)."""
    shape = get_aval(u).shape
    # what each update competed for; a dropped window reads NaN, which equals nothing
    target = _inverse_gather(y, idx, shape, dn, mode, fill_value=None)
    w_u = jnp.equal(u, target).astype(get_aval(u).dtype)
    w_x = jnp.equal(x, y).astype(get_aval(x).dtype)
    hits = _one(ix.scatter_add, _zeros(x, w_u), idx, w_u, dimension_numbers=dn, mode=mode)
    return w_x, w_u, jnp.add(w_x, hits)


def _extremal_jvp(prim):
    def rule(ps, ts, dimension_numbers, mode):
        (x, idx, u), (tx, _, tu) = ps, ts
        dn = dimension_numbers
        y = _one(prim, x, idx, u, dimension_numbers=dn, mode=mode)
        w_x, w_u, count = _extremal_weights(x, idx, u, y, dn, mode)
        t_x = None if tx is None else jnp.multiply(tx, w_x)
        t_u = None if tu is None else _one(ix.scatter_add, _zeros(x, tu), idx,
                                           jnp.multiply(tu, w_u), dimension_numbers=dn,
                                           mode=mode)
        return [y], [jnp.divide(add_any(t_x, t_u), count)]
    return rule


def _extremal_vjp(cts, ins, outs, dimension_numbers, mode):
    (ct,), (x, idx, u), (y,) = cts, ins, outs
    dn = dimension_numbers
    w_x, w_u, count = _extremal_weights(x, idx, u, y, dn, mode)
    share = jnp.divide(ct, count)
    ct_u = jnp.multiply(_inverse_gather(share, idx, get_aval(u).shape, dn, mode), w_u)
    return [jnp.multiply(share, w_x), None, ct_u]


for _name in ("scatter_min", "scatter_max"):
    jvp_rules[_name] = _extremal_jvp(ix.__dict__[_name])
    vjp_rules[_name] = _extremal_vjp
