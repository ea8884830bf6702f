"""jvp, vjp and batching rules of the control-flow primitives cond, while, scan.

Each rule builds new sub-graphs by tracing a walk of the old ones (jvp_eval,
forward/backward, vmap_eval) and binds the same primitive on them, so the
result is again structured control flow: nothing is unrolled.

Symbolic zeros stay symbolic across the primitive boundary where the
primitive allows it: a sub-graph's tangent/cotangent inputs and outputs exist
only for the values that can be nonzero. Loops find that set by fixpoint
(a carry whose tangent is zero on entry may become nonzero in the body).
"""
from __future__ import annotations

from typing import Callable, Sequence

import jx.numpy as jnp
from jx import dtypes
from jx.core import bind, get_aval
from jx.errors import JxError
from jx.ir import Graph, ShapedArray, Var
from jx.prims import elementwise as ew
from jx.prims import structural as st
from jx.prims.control import cond_p, scan_p, while_p

from .interpreters import transform_graph
from .jvp import jvp_eval, jvp_rules
from .vjp import backward, forward, vjp_rules
from .vmap import batch_rules, move_to_front, vmap_eval
from .zeros import add_any, stage_like, zeros, zeros_like

# ---------------------------------------------------------------- helpers


def _inexact(x) -> bool:
    """Whether x carries a derivative: float or complex (integers never do)."""
    return dtypes.is_inexact(get_aval(x).dtype)


def _split(seq: Sequence, *sizes) -> list:
    """seq cut into consecutive pieces of the given sizes, plus the rest."""
    out, i = [], 0
    for n in sizes:
        out.append(list(seq[i:i + n]))
        i += n
    out.append(list(seq[i:]))
    return out


def _scatter(vals: Sequence, mask: Sequence[bool]) -> list:
    """vals spread over the True slots of mask, None elsewhere."""
    it = iter(vals)
    return [next(it) if m else None for m in mask]


def _pick(vals: Sequence, mask: Sequence[bool]) -> list:
    return [v for v, m in zip(vals, mask) if m]


def _or(a: Sequence[bool], b: Sequence[bool]) -> list:
    return [x or y for x, y in zip(a, b)]


def _union(masks: Sequence[Sequence[bool]]) -> list:
    return [any(col) for col in zip(*masks)]


def _permute(graph: Graph, ins: Sequence[int], outs: Sequence[int] | None = None) -> Graph:
    """The same graph with its inputs (and outputs) reordered."""
    outs = range(len(graph.outputs)) if outs is None else outs
    return Graph(tuple(graph.inputs[i] for i in ins), graph.eqns,
                 tuple(graph.outputs[i] for i in outs))


def _blocks(sizes: Sequence[int], order: Sequence[int]) -> list:
    """Index permutation listing consecutive blocks of `sizes` in `order`."""
    starts = [sum(sizes[:k]) for k in range(len(sizes))]
    return [starts[k] + j for k in order for j in range(sizes[k])]


def _strip(avals: Sequence, mask: Sequence[bool]) -> list:
    """The selected avals without weak typing (the types of tangents/cotangents)."""
    return [a.strip_weak() for a, m in zip(avals, mask) if m]


def _with_unused_inputs(graph: Graph, avals: Sequence) -> Graph:
    return Graph(graph.inputs + tuple(Var(a) for a in avals), graph.eqns, graph.outputs)


def _trace_partial(walk: Callable, in_avals: Sequence, out_avals: Sequence,
                   instantiate: Sequence[bool], name: str) -> tuple:
    """Trace walk(*args) -> list with None (zero) entries into a Graph whose outputs
    are the non-None entries plus zeros where `instantiate` says.
    Returns (graph, mask of the entries the graph outputs)."""
    box: list = []

    def f(*args):
        res = walk(*args)
        mask = [r is not None or i for r, i in zip(res, instantiate)]
        box.append(mask)
        return [zeros(a.strip_weak(), args) if r is None else r
                for r, a, m in zip(res, out_avals, mask) if m]

    return transform_graph(f, in_avals, name), box[0]


def _jvp_sub(graph: Graph, nonzero: Sequence[bool], instantiate=False) -> tuple:
    """jvp of a sub-graph: inputs (primals, tangents of the `nonzero` inputs),
    outputs (primals, tangents of the outputs that can be nonzero or are to be
    instantiated). Returns (graph, tangent-output mask)."""
    n, n_out = len(graph.inputs), len(graph.outputs)
    nonzero = [nz and dtypes.is_inexact(v.aval.dtype) for nz, v in zip(nonzero, graph.inputs)]
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    instantiate = [i and dtypes.is_inexact(a.dtype) for i, a in zip(instantiate, graph.out_avals)]
    t_avals = _strip(graph.in_avals, nonzero)

    def walk(*args):
        outs, touts = jvp_eval(graph, args[:n], _scatter(args[n:], nonzero))
        return list(outs) + list(touts)

    g, mask = _trace_partial(walk, graph.in_avals + t_avals,
                             graph.out_avals + graph.out_avals,
                             [True] * n_out + instantiate, "jvp")
    return g, mask[n_out:]


def _batched(aval: ShapedArray, axis_size: int) -> ShapedArray:
    return aval.update(shape=(axis_size,) + aval.shape, weak_type=False)


def _vmap_sub(graph: Graph, batched: Sequence[bool], axis_size: int,
              force: Sequence[bool] | None = None) -> tuple:
    """graph over inputs batched at axis 0 where `batched` says; outputs batched at 0
    where they vary over the batch or `force` says, unbatched otherwise.
    Returns (graph, output batched mask)."""
    force = [False] * len(graph.outputs) if force is None else force
    in_avals = [_batched(a, axis_size) if b else a for a, b in zip(graph.in_avals, batched)]
    dims = [0 if b else None for b in batched]
    box: list = []

    def walk(*args):
        outs, odims = vmap_eval(graph, args, dims, axis_size)
        mask = [d is not None or f for d, f in zip(odims, force)]
        box.append(mask)
        return [move_to_front(stage_like(o, args), d, axis_size) if m else o
                for o, d, m in zip(outs, odims, mask)]

    return transform_graph(walk, in_avals, "vmap"), box[0]


def _front(xs: Sequence, ds: Sequence, want: Sequence[bool], axis_size: int) -> list:
    """Batch axes moved to 0; unbatched values broadcast where `want` says."""
    return [move_to_front(x, d, axis_size) if w or d is not None else x
            for x, d, w in zip(xs, ds, want)]


def _select(pred, on_true, on_false):
    """Per-lane choice: pred is bool[B], the values have the batch at axis 0."""
    shape = get_aval(on_true).shape
    if get_aval(pred).shape != shape:
        pred = bind(st.broadcast_in_dim, pred, shape=shape, broadcast_dimensions=(0,))[0]
    return bind(ew.select, pred, on_true, on_false)[0]


# ---------------------------------------------------------------- cond


def _cond_jvp(primals, tangents, branches):
    index, ops = primals[0], primals[1:]
    nz = [t is not None and _inexact(x) for x, t in zip(ops, tangents[1:])]
    # every branch must output the same tangents: the union of what each can make nonzero
    out_nz = _union([_jvp_sub(b, nz)[1] for b in branches])
    new = tuple(_jvp_sub(b, nz, out_nz)[0] for b in branches)
    outs = bind(cond_p, index, *ops, *_pick(tangents[1:], nz), branches=new)
    n = len(branches[0].outputs)
    return outs[:n], _scatter(outs[n:], out_nz)


def _cond_vjp(cts, ins, outs, branches):
    index, ops = ins[0], ins[1:]
    n = len(ops)
    ct_mask = [c is not None and dtypes.is_inexact(a.dtype)
               for c, a in zip(cts, branches[0].out_avals)]
    in_avals = branches[0].in_avals
    ct_avals = _strip(branches[0].out_avals, ct_mask)

    def backward_of(branch):
        def walk(*args):  # recompute the branch, then pull the cotangents back
            env, _ = forward(branch, args[:n])
            return backward(branch, env, _scatter(args[n:], ct_mask))
        return walk

    def make(branch, inst):
        return _trace_partial(backward_of(branch), in_avals + ct_avals, in_avals, inst,
                              "cond_vjp")

    mask = _union([make(b, [False] * n)[1] for b in branches])
    new = tuple(make(b, mask)[0] for b in branches)
    cts_in = bind(cond_p, index, *ops, *_pick(cts, ct_mask), branches=new)
    return [None] + _scatter(cts_in, mask)


def _cond_batch(xs, ds, axis_size, branches):
    index, ops, dims = xs[0], xs[1:], ds[1:]
    n_out = len(branches[0].outputs)
    if ds[0] is None:  # every lane takes the same branch: batch each branch
        batched = [d is not None for d in dims]
        ops = _front(ops, dims, batched, axis_size)
        out_b = _union([_vmap_sub(b, batched, axis_size)[1] for b in branches])
        new = tuple(_vmap_sub(b, batched, axis_size, out_b)[0] for b in branches)
        outs = bind(cond_p, index, *ops, branches=new)
        return outs, [0 if b else None for b in out_b]
    # Lanes disagree on the branch: evaluate all of them and select per lane (as
    # JAX does). Clamping out-of-range indices is folded into the first and last test.
    results = []
    for b in branches:
        o, od = vmap_eval(b, ops, dims, axis_size)
        results.append([move_to_front(x, d, axis_size) for x, d in zip(o, od)])
    idx = move_to_front(index, ds[0], axis_size)
    outs = results[-1]
    for i in reversed(range(len(branches) - 1)):
        pred = jnp.less_equal(idx, 0) if i == 0 else jnp.equal(idx, i)
        outs = [_select(pred, a, b) for a, b in zip(results[i], outs)]
    return outs, [0] * n_out


jvp_rules["cond"] = _cond_jvp
vjp_rules["cond"] = _cond_vjp
batch_rules["cond"] = _cond_batch


# ---------------------------------------------------------------- while


def _while_jvp(primals, tangents, cond_graph, body_graph, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cconsts, bconsts, carry = _split(primals, nc, nb)
    _, bts, cts = _split(tangents, nc, nb)
    bnz = [t is not None and _inexact(x) for x, t in zip(bconsts, bts)]
    cnz = [t is not None and _inexact(x) for x, t in zip(carry, cts)]
    while True:  # a carry tangent is nonzero if it enters so or the body makes it so
        _, out_nz = _jvp_sub(body_graph, bnz + cnz)
        new = _or(cnz, out_nz)
        if new == cnz:
            break
        cnz = new
    body, _ = _jvp_sub(body_graph, bnz + cnz, cnz)
    # jvp layout (bconsts, carry, bconst tangents, carry tangents) -> while's layout
    # (body consts = bconsts + their tangents, carry = carry + its tangents)
    body = _permute(body, _blocks([nb, len(carry), sum(bnz), sum(cnz)], [0, 2, 1, 3]))
    cond = _with_unused_inputs(cond_graph, _strip(body_graph.in_avals[nb:], cnz))
    carry_t = [zeros_like(x) if t is None else t for x, t, m in zip(carry, cts, cnz) if m]
    outs = bind(while_p, *cconsts, *bconsts, *_pick(bts, bnz), *carry, *carry_t,
                cond_graph=cond, body_graph=body, cond_nconsts=nc,
                body_nconsts=nb + sum(bnz))
    return outs[:len(carry)], _scatter(outs[len(carry):], cnz)


def _while_vjp(cts, ins, outs, **params):
    raise JxError(
        "Reverse-mode differentiation (grad, vjp, jacrev) does not work for "
        "jx.lax.while_loop: its trip count is not known at trace time, so the loop's "
        "intermediate values cannot be stored for the backward pass. Use "
        "jx.lax.fori_loop with static (Python int) bounds, or jx.lax.scan, which have "
        "a fixed trip count; forward mode (jx.jvp, jx.jacfwd) does work on while_loop.")


def _while_batch(xs, ds, axis_size, cond_graph, body_graph, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cconsts, bconsts, carry = _split(xs, nc, nb)
    ccd, bcd, cd = _split(ds, nc, nb)
    ccb = [d is not None for d in ccd]
    bcb = [d is not None for d in bcd]
    cb = [d is not None for d in cd]
    while True:  # a carry the body makes batched must enter batched
        new = _or(cb, _vmap_sub(body_graph, bcb + cb, axis_size)[1])
        if new == cb:
            break
        cb = new
    pred_batched = _vmap_sub(cond_graph, ccb + cb, axis_size)[1][0]
    if not pred_batched:  # all lanes stop together: batch cond and body
        cond, _ = _vmap_sub(cond_graph, ccb + cb, axis_size, [False])
        body, _ = _vmap_sub(body_graph, bcb + cb, axis_size, cb)
        outs = bind(while_p, *_front(cconsts, ccd, ccb, axis_size),
                    *_front(bconsts, bcd, bcb, axis_size), *_front(carry, cd, cb, axis_size),
                    cond_graph=cond, body_graph=body, cond_nconsts=nc, body_nconsts=nb)
        return outs, [0 if b else None for b in cb]
    # Lanes stop at different iterations: loop while any lane runs and keep the
    # carry of finished lanes unchanged (lanes differ, so every carry is batched).
    cconsts = _front(cconsts, ccd, ccb, axis_size)
    bconsts = _front(bconsts, bcd, bcb, axis_size)
    carry = _front(carry, cd, [True] * len(carry), axis_size)
    cdims = [0 if b else None for b in ccb]
    bdims = [0 if b else None for b in bcb]
    full = [0] * len(carry)
    c_avals = [get_aval(c).strip_weak() for c in carry]
    cc_avals = [get_aval(c) for c in cconsts]
    bc_avals = [get_aval(c) for c in bconsts]

    def lane_pred(ccs, cs):
        p, d = vmap_eval(cond_graph, ccs + cs, cdims + full, axis_size)
        return move_to_front(p[0], d[0], axis_size)

    def cond_walk(*args):
        ccs, cs = _split(args, nc)
        return [jnp.any(lane_pred(ccs, cs))]

    def body_walk(*args):
        ccs, bcs, cs = _split(args, nc, nb)
        pred = lane_pred(ccs, cs)
        new, d = vmap_eval(body_graph, bcs + cs, bdims + full, axis_size)
        new = [move_to_front(x, dd, axis_size) for x, dd in zip(new, d)]
        return [_select(pred, a, b) for a, b in zip(new, cs)]

    cond = transform_graph(cond_walk, cc_avals + c_avals, "vmap_while_cond")
    body = transform_graph(body_walk, cc_avals + bc_avals + c_avals, "vmap_while_body")
    outs = bind(while_p, *cconsts, *cconsts, *bconsts, *carry, cond_graph=cond,
                body_graph=body, cond_nconsts=nc, body_nconsts=nc + nb)
    return outs, full


jvp_rules["while"] = _while_jvp
vjp_rules["while"] = _while_vjp
batch_rules["while"] = _while_batch


# ---------------------------------------------------------------- scan


def _scan_jvp(primals, tangents, body, num_consts, num_carry, length, reverse):
    nk, nc = num_consts, num_carry
    consts, carry, xs = _split(primals, nk, nc)
    kts, cts, xts = _split(tangents, nk, nc)
    knz = [t is not None and _inexact(x) for x, t in zip(consts, kts)]
    cnz = [t is not None and _inexact(x) for x, t in zip(carry, cts)]
    xnz = [t is not None and _inexact(x) for x, t in zip(xs, xts)]
    while True:  # fixpoint on the carries whose tangents can be nonzero
        _, out_nz = _jvp_sub(body, knz + cnz + xnz)
        new = _or(cnz, out_nz[:nc])
        if new == cnz:
            break
        cnz = new
    n_ys = len(body.outputs) - nc
    graph, out_nz = _jvp_sub(body, knz + cnz + xnz, cnz + [False] * n_ys)
    ynz = out_nz[nc:]
    # jvp layout (K, C, X, Kt, Ct, Xt) -> (C, Y, Ct, Yt) becomes scan's
    # (K, Kt, C, Ct, X, Xt) -> (C, Ct, Y, Yt)
    ins = _blocks([nk, nc, len(xs), sum(knz), sum(cnz), sum(xnz)], [0, 3, 1, 4, 2, 5])
    graph = _permute(graph, ins, _blocks([nc, n_ys, sum(cnz), sum(ynz)], [0, 2, 1, 3]))
    carry_t = [zeros_like(x) if t is None else t for x, t, m in zip(carry, cts, cnz) if m]
    outs = bind(scan_p, *consts, *_pick(kts, knz), *carry, *carry_t, *xs, *_pick(xts, xnz),
                body=graph, num_consts=nk + sum(knz), num_carry=nc + sum(cnz),
                length=length, reverse=reverse)
    c_out, ct_out, y_out, yt_out = _split(outs, nc, sum(cnz), n_ys)
    return c_out + y_out, _scatter(ct_out, cnz) + _scatter(yt_out, ynz)


def _scan_vjp(cts, ins, outs, body, num_consts, num_carry, length, reverse):
    nk, nc = num_consts, num_carry
    consts, carry, xs = _split(ins, nk, nc)
    nx, n_ys = len(xs), len(body.outputs) - nc
    ct_carry, ct_ys = _split(cts, nc)
    # 1. Forward again, also stacking the carry each iteration starts from (the
    #    body's carry inputs are extra ys), so the backward loop can recompute it.
    fwd = Graph(body.inputs, body.eqns, body.outputs + body.inputs[nk:nk + nc])
    res = bind(scan_p, *consts, *carry, *xs, body=fwd, num_consts=nk, num_carry=nc,
               length=length, reverse=reverse)
    stacked = res[nc + n_ys:]
    # 2. Run backwards over the iterations: the carry holds the const cotangents
    #    accumulated so far and the carry cotangent; xs cotangents are the ys.
    kf = [_inexact(k) for k in consts]
    cf = [_inexact(c) for c in carry]
    xf = [_inexact(x) for x in xs]
    y_avals = body.out_avals[nc:]
    ymask = [c is not None and dtypes.is_inexact(a.dtype) for c, a in zip(ct_ys, y_avals)]
    k_avals, c_avals, x_avals = _split(body.in_avals, nk, nc)
    in_avals = (k_avals + _strip(k_avals, kf) + _strip(c_avals, cf) + c_avals + x_avals
                + _strip(y_avals, ymask))

    def walk(*args):
        ks, acc, ctc, cin, xsl, cty = _split(args, nk, sum(kf), sum(cf), nc, nx)
        env, _ = forward(body, ks + cin + xsl)
        g = backward(body, env, _scatter(ctc, cf) + _scatter(cty, ymask))
        gk, gc, gx = _split(g, nk, nc)
        def inst(vals, avals):  # the loop needs every cotangent it carries or emits
            return [zeros(a, args) if v is None else v for v, a in zip(vals, avals)]
        new_acc = [add_any(a, c) for a, c in zip(acc, _pick(gk, kf))]
        return (new_acc + inst(_pick(gc, cf), _strip(c_avals, cf))
                + inst(_pick(gx, xf), _strip(x_avals, xf)))

    bwd = transform_graph(walk, in_avals, "scan_vjp")
    acc0 = [zeros_like(k) for k in _pick(consts, kf)]
    ctc0 = [zeros_like(o) if c is None else c
            for o, c in zip(_pick(outs[:nc], cf), _pick(ct_carry, cf))]
    res = bind(scan_p, *consts, *acc0, *ctc0, *stacked, *xs, *_pick(ct_ys, ymask), body=bwd,
               num_consts=nk, num_carry=sum(kf) + sum(cf), length=length,
               reverse=not reverse)
    gk, gc, gx = _split(res, sum(kf), sum(cf))
    return _scatter(gk, kf) + _scatter(gc, cf) + _scatter(gx, xf)


def _to_axis1(x, d):
    """xs keep the scan axis at 0, so their batch axis goes to 1."""
    return x if d is None or d == 1 else jnp.moveaxis(x, d, 1)


def _scan_batch(xs, ds, axis_size, body, num_consts, num_carry, length, reverse):
    nk, nc = num_consts, num_carry
    consts, carry, xs_ = _split(xs, nk, nc)
    kd, cd, xd = _split(ds, nk, nc)
    kb = [d is not None for d in kd]
    cb = [d is not None for d in cd]
    xb = [d is not None for d in xd]
    while True:  # a carry the body makes batched must enter batched
        new = _or(cb, _vmap_sub(body, kb + cb + xb, axis_size)[1][:nc])
        if new == cb:
            break
        cb = new
    n_ys = len(body.outputs) - nc
    graph, out_b = _vmap_sub(body, kb + cb + xb, axis_size, cb + [False] * n_ys)
    outs = bind(scan_p, *_front(consts, kd, kb, axis_size), *_front(carry, cd, cb, axis_size),
                *[_to_axis1(x, d) for x, d in zip(xs_, xd)], body=graph, num_consts=nk,
                num_carry=nc, length=length, reverse=reverse)
    return outs, [0 if b else None for b in cb] + [1 if b else None for b in out_b[nc:]]


jvp_rules["scan"] = _scan_jvp
vjp_rules["scan"] = _scan_vjp
batch_rules["scan"] = _scan_batch
