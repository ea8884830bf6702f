"""Lowering of gather, the scatter family and dynamic_update_slice as opaque kernels.

Each kernel reproduces the NumPy reference in frontend/prims/indexing.py
exactly, and every address it forms lies inside its buffers: start indices
are clamped into [0, dim - window] before use, and values of out-of-bounds
windows are then selected away (gather "fill") or skipped (scatter "drop").

Scatters copy the operand to the output, then apply the updates in row-major
order of the update batch (the scatter dims outermost), which is the order of
the reference: the last of repeated `scatter` updates wins, and floating-point
sums and products accumulate in the same order, bit for bit.
"""
from __future__ import annotations

from contextlib import ExitStack

import llvmlite.ir as ir
import numpy as np

from jx.prims.indexing import default_fill_value

from . import irutil as U
from .opaque import opaque_rule
from .scalar import convert

TRUE = ir.Constant(U.I1, 1)


def open_loops(stack: ExitStack, b, shape, name: str) -> list:
    """Row-major loops over shape entered on `stack`; a dim of size 1 gets the
    constant index 0 and no loop. All dims must be > 0."""
    idx = []
    for d, n in enumerate(shape):
        idx.append(U.i64(0) if n == 1 else stack.enter_context(U.for_range(b, n, f"{name}{d}")))
    return idx


def load_index(b, ptr, off, dt) -> ir.Value:
    """An index element as i64 (the reference's astype(int64): wraps uint64)."""
    return convert(b, U.load(b, ptr, off, dt), dt, np.int64)


def clamp(b, i, upper: int) -> ir.Value:
    """i clamped into [0, upper] (upper >= 0, signed compare)."""
    if upper == 0:
        return U.i64(0)
    lo = b.select(b.icmp_signed("<", i, U.i64(0)), U.i64(0), i)
    return b.select(b.icmp_signed(">", lo, U.i64(upper)), U.i64(upper), lo)


def in_range(b, i, upper: int) -> ir.Value:
    """0 <= i <= upper, as i1: unsigned compare folds both bounds into one."""
    return b.icmp_unsigned("<=", i, U.i64(upper))


def add_index(b, start, i) -> ir.Value:
    if isinstance(start, ir.Constant) and start.constant == 0:
        return i
    if isinstance(i, ir.Constant) and i.constant == 0:
        return start
    return b.add(start, i, flags=["nsw"])


def _starts(b, shape, window, ind, ind_ptr, batch_idx, index_map, obd, ibd, check):
    """Clamped start per operand dim for the index vector at batch_idx, and (if
    `check`) whether every start was in bounds before clamping."""
    starts = [U.i64(0)] * len(shape)
    valid = TRUE
    for k, d in enumerate(index_map):
        off = U.linear(b, list(batch_idx) + [U.i64(k)], ind.aval.shape)
        s = load_index(b, ind_ptr, off, ind.aval.dtype)
        upper = shape[d] - window[d]
        if check:
            valid = b.and_(valid, in_range(b, s, upper))
        starts[d] = clamp(b, s, upper)
    for o, i in zip(obd, ibd):         # batching dims: the row's own coordinate
        starts[o] = batch_idx[i]
    return starts, valid


# ---------------------------------------------------------------- gather

@opaque_rule("gather")
def _gather(ctx, kernel):
    """out[batch, offset] = operand[start(batch) + offset], looping over the output in
    row-major order; the starts are computed once the last batch dim is fixed."""
    b = ctx.b
    eqn = kernel.root
    x, ind = eqn.inputs
    (out,) = eqn.outputs
    dn, sizes, mode = eqn.params["dimension_numbers"], eqn.params["slice_sizes"], \
        eqn.params["mode"]
    if out.aval.size == 0:               # also covers an empty operand
        return
    dt = x.aval.dtype
    xs, os_ = x.aval.shape, out.aval.shape
    xp, ip, op = ctx.ptr(x), ctx.ptr(ind), ctx.ptr(out)
    batch_dims = [d for d in range(len(os_)) if d not in dn.offset_dims]
    kept = [d for d in range(len(xs))
            if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    fill = None
    if mode == "fill":
        fv = eqn.params.get("fill_value")
        fv = default_fill_value(dt) if fv is None else fv
        fill = U.const(dt, np.asarray(fv).astype(dt)[()])

    def starts_here(idx):
        return _starts(b, xs, sizes, ind, ip, [idx[d] for d in batch_dims],
                       dn.start_index_map, dn.operand_batching_dims,
                       dn.start_indices_batching_dims, fill is not None)

    with ExitStack() as stack:
        idx = []
        starts = valid = None
        if not batch_dims:
            starts, valid = starts_here(idx)
        for d, n in enumerate(os_):
            idx.extend(open_loops(stack, b, [n], f"g{d}_"))
            if batch_dims and d == batch_dims[-1]:
                starts, valid = starts_here(idx)
        src = list(starts)
        for od, xd in zip(dn.offset_dims, kept):
            src[xd] = add_index(b, starts[xd], idx[od])
        v = U.load(b, xp, U.linear(b, src, xs), dt)
        if fill is not None:
            v = b.select(valid, v, fill)
        U.store(b, v, op, U.linear(b, idx, os_), dt)


# ---------------------------------------------------------------- scatter

def extremum(b, is_max: bool, a, c, dt) -> ir.Value:
    """np.maximum / np.minimum: a NaN in either operand propagates."""
    if U.is_float(dt):
        out = b.select(b.fcmp_ordered(">" if is_max else "<", a, c), a, c)  # NaN in c: c
        return b.select(b.fcmp_unordered("uno", a, a), a, out)
    if U.compute_type(dt).width == 1:
        return b.or_(a, c) if is_max else b.and_(a, c)
    cmp = b.icmp_signed if U.is_signed(dt) else b.icmp_unsigned
    return b.select(cmp(">" if is_max else "<", a, c), a, c)


def _combine(b, name, old, new, dt):
    if name == "scatter":
        return new
    if name in ("scatter_add", "scatter_mul"):
        op = {"scatter_add": ("fadd", "add"), "scatter_mul": ("fmul", "mul")}[name]
        return getattr(b, op[0] if U.is_float(dt) else op[1])(old, new)
    return extremum(b, name == "scatter_max", old, new, dt)


def copy_buffer(ctx, dst, src, atom) -> None:
    nbytes = atom.aval.size * np.dtype(atom.aval.dtype).itemsize
    if U.is_symbolic(nbytes) or nbytes:
        ctx.module.memcpy(ctx.b, dst, src, nbytes)


@opaque_rule("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max")
def _scatter(ctx, kernel):
    b = ctx.b
    eqn = kernel.root
    name = eqn.prim.name
    x, ind, upd = eqn.inputs
    (out,) = eqn.outputs
    dn, mode = eqn.params["dimension_numbers"], eqn.params["mode"]
    dt = x.aval.dtype
    xs, us = x.aval.shape, upd.aval.shape
    xp, ip, up, op = ctx.ptr(x), ctx.ptr(ind), ctx.ptr(upd), ctx.ptr(out)
    copy_buffer(ctx, op, xp, x)
    if upd.aval.size == 0 or x.aval.size == 0:
        return
    win_u = list(dn.update_window_dims)
    scat_u = [d for d in range(len(us)) if d not in win_u]
    win_x = [d for d in range(len(xs))
             if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    window = [1] * len(xs)
    for ud, xd in zip(win_u, win_x):
        window[xd] = us[ud]
    with ExitStack() as outer:
        sidx = open_loops(outer, b, [us[d] for d in scat_u], "s")
        starts, valid = _starts(b, xs, window, ind, ip, sidx, dn.scatter_dims_to_operand_dims,
                                dn.operand_batching_dims, dn.scatter_indices_batching_dims,
                                mode == "drop")
        skip = None
        if valid is not TRUE:             # drop: skip the whole out-of-bounds window
            body = b.function.append_basic_block("window")
            skip = b.function.append_basic_block("window.end")
            b.cbranch(valid, body, skip)
            b.position_at_end(body)
        with ExitStack() as inner:
            widx = open_loops(inner, b, [us[d] for d in win_u], "w")
            uidx = [None] * len(us)
            for d, i in zip(scat_u, sidx):
                uidx[d] = i
            for d, i in zip(win_u, widx):
                uidx[d] = i
            tgt = list(starts)
            for xd, i in zip(win_x, widx):
                tgt[xd] = add_index(b, starts[xd], i)
            t_off = U.linear(b, tgt, xs)
            new = U.load(b, up, U.linear(b, uidx, us), dt)
            old = None if name == "scatter" else U.load(b, op, t_off, dt)
            U.store(b, _combine(b, name, old, new, dt), op, t_off, dt)
        if skip is not None:
            b.branch(skip)
            b.position_at_end(skip)


# ---------------------------------------------------------------- dynamic_update_slice

@opaque_rule("dynamic_update_slice")
def _dynamic_update_slice(ctx, kernel):
    """Copy the operand, then write the update at its clamped starts."""
    b = ctx.b
    eqn = kernel.root
    x, u, *starts = eqn.inputs
    (out,) = eqn.outputs
    xs, us = x.aval.shape, u.aval.shape
    op = ctx.ptr(out)
    copy_buffer(ctx, op, ctx.ptr(x), x)
    if u.aval.size == 0:
        return
    lo = [clamp(b, load_index(b, ctx.ptr(s), U.i64(0), s.aval.dtype), n - w)
          for s, n, w in zip(starts, xs, us)]
    up = ctx.ptr(u)
    with ExitStack() as stack:
        idx = open_loops(stack, b, us, "u")
        v = U.load(b, up, U.linear(b, idx, us), u.aval.dtype)
        dst = [add_index(b, s, i) for s, i in zip(lo, idx)]
        U.store(b, v, op, U.linear(b, dst, xs), u.aval.dtype)
