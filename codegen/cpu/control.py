"""Lowering of the control-flow primitives cond, while and scan.

Each is one opaque kernel that runs the fused Programs of its sub-graphs
(`kernel.subprograms`) inline with `ModuleBuilder.emit_program`, on pointers
chosen here:

  cond   the branch picked by the clamped index reads the operands and writes
         the kernel's outputs directly.
  while  the carry lives in the output buffers. Each step runs the cond program
         into a scratch bool, then the body from the output buffers into scratch
         buffers, and copies those back: one sub-program run never reads and
         writes the same buffer.
  scan   the carry alternates between the output buffers and scratch buffers
         (the last step writes the outputs; the first reads the initial carry
         in place, so nothing is copied); step t (counting down when reversed)
         reads x slices at `xs + t * slice_bytes` (the scanned axis is outermost,
         so a slice is contiguous) and writes ys slices in place the same way.

Scratch memory is one malloc per kernel call, freed on every exit. A failed
allocation inside a sub-program propagates as the kernel's status.
"""
from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np

from . import irutil as U
from . import scan_tiles
from .opaque import PARALLEL_OPAQUE, opaque_rule

_ALIGN = 64


def _nbytes(atom) -> int:
    return atom.aval.size * np.dtype(atom.aval.dtype).itemsize


def _slice_bytes(atom):
    """Bytes of one leading-axis slice of atom (a scan's step through xs or ys)."""
    return math.prod(atom.aval.shape[1:]) * np.dtype(atom.aval.dtype).itemsize


def _copy(ctx, dsts, srcs, atoms) -> None:
    """Copy each atom-sized buffer srcs[k] to dsts[k]."""
    for d, s, atom in zip(dsts, srcs, atoms):
        n = _nbytes(atom)
        if U.is_symbolic(n) or n:
            ctx.module.memcpy(ctx.b, d, s, n)


class _Scratch:
    """One allocation carved into aligned pieces; `fail` frees it, then fails."""

    def __init__(self, ctx, sizes):
        b = ctx.b
        offsets, total = [], 0
        for n in sizes:
            offsets.append(total)
            total = total + U.aligned_size(n, _ALIGN)
        self.ctx = ctx
        self.base = ctx.module.alloc(b, total, ctx.fail_block)
        self.pieces = [U.aligned_pointer(b, self.base, o, _ALIGN) for o in offsets]
        self.fail = b.function.append_basic_block("scratch.fail")
        with b.goto_block(self.fail):
            ctx.module.free(b, self.base)
            b.branch(ctx.fail_block)

    def release(self) -> None:
        self.ctx.module.free(self.ctx.b, self.base)


def _stop_if_cancelled(ctx, leave) -> None:
    """At a loop's back-edge: branch to `leave` (a block that frees what the loop
    holds and returns) when the call was cancelled (the entry then returns
    STATUS_CANCELLED), so a long loop can be interrupted. One load of a flag per
    iteration."""
    b = ctx.b
    go_on = b.function.append_basic_block("loop.go_on")
    b.cbranch(ctx.module.cancelled(b), leave, go_on)
    b.position_at_end(go_on)


def _byte_offset(b, ptr, index, stride: int):
    """ptr + index * stride bytes."""
    off = b.mul(index, U.i64(stride), flags=["nuw", "nsw"])
    return b.gep(ptr, [off], source_etype=U.I8, inbounds=True)


# ---------------------------------------------------------------- cond

@opaque_rule("cond")
def _cond(ctx, kernel):
    b = ctx.b
    eqn = kernel.root
    branches = kernel.subprograms["branches"]
    index, *operands = eqn.inputs
    ins = [ctx.ptr(a) for a in operands]
    outs = [ctx.ptr(v) for v in eqn.outputs]
    n = len(branches)
    i = U.load(b, ctx.ptr(index), U.i64(0), index.aval.dtype)
    zero, last = ir.Constant(i.type, 0), ir.Constant(i.type, n - 1)
    i = b.select(b.icmp_signed("<", i, zero), zero, i)       # out-of-range indices clamp
    i = b.select(b.icmp_signed(">", i, last), last, i)
    fn = b.function
    end = fn.append_basic_block("cond.end")
    blocks = [fn.append_basic_block(f"cond.branch{k}") for k in range(n)]
    sw = b.switch(i, blocks[-1])            # the clamped index is in range: default = last
    for k, blk in enumerate(blocks[:-1]):
        sw.add_case(ir.Constant(i.type, k), blk)
    for prog, blk in zip(branches, blocks):
        b.position_at_end(blk)
        ctx.module.emit_program(b, prog, ins, outs, ctx.fail_block)
        b.branch(end)
    b.position_at_end(end)


# ---------------------------------------------------------------- while

@opaque_rule("while")
def _while(ctx, kernel):
    b = ctx.b
    eqn = kernel.root
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_prog, body_prog = kernel.subprograms["cond_graph"], kernel.subprograms["body_graph"]
    ops = [ctx.ptr(a) for a in eqn.inputs]
    cconsts, bconsts, init = ops[:nc], ops[nc:nc + nb], ops[nc + nb:]
    carry = [ctx.ptr(v) for v in eqn.outputs]
    _copy(ctx, carry, init, eqn.outputs)
    scratch = _Scratch(ctx, [1] + [_nbytes(v) for v in eqn.outputs])
    pred, nxt = scratch.pieces[0], scratch.pieces[1:]
    fn = b.function
    head = fn.append_basic_block("while.cond")
    body = fn.append_basic_block("while.body")
    end = fn.append_basic_block("while.end")
    b.branch(head)
    b.position_at_end(head)
    ctx.module.emit_program(b, cond_prog, cconsts + carry, [pred], scratch.fail)
    b.cbranch(U.load(b, pred, U.i64(0), np.bool_), body, end)
    b.position_at_end(body)
    ctx.module.emit_program(b, body_prog, bconsts + carry, nxt, scratch.fail)
    _copy(ctx, carry, nxt, eqn.outputs)
    _stop_if_cancelled(ctx, scratch.fail)
    b.branch(head)
    b.position_at_end(end)
    scratch.release()


# ---------------------------------------------------------------- scan

@opaque_rule("scan")
def _scan(ctx, kernel):
    b = ctx.b
    eqn = kernel.root
    p = eqn.params
    nk, nc, length = p["num_consts"], p["num_carry"], p["length"]
    prog = kernel.subprograms["body"]
    ops = [ctx.ptr(a) for a in eqn.inputs]
    consts, init, xs = ops[:nk], ops[nk:nk + nc], ops[nk + nc:]
    carry_vars, ys_vars = eqn.outputs[:nc], eqn.outputs[nc:]
    carry = [ctx.ptr(v) for v in carry_vars]
    ys = [ctx.ptr(v) for v in ys_vars]
    if U.is_symbolic(length):     # no step at run time: the carry is the initial one
        with b.if_then(b.icmp_signed("<=", U.i64(length), U.i64(0)), likely=False):
            _copy(ctx, carry, init, carry_vars)
    elif length == 0:
        _copy(ctx, carry, init, carry_vars)
        return
    tiles = scan_tiles.plan(eqn)
    if tiles is not None:
        _tiled_scan(ctx, eqn, tiles, consts, init, carry)
        return
    x_step = [_slice_bytes(a) for a in eqn.inputs[nk + nc:]]
    y_step = [_slice_bytes(v) for v in ys_vars]
    scratch = _Scratch(ctx, [_nbytes(v) for v in carry_vars])
    _steps(ctx, prog, p, consts, init, carry, scratch.pieces, scratch.fail, scratch.fail,
           list(zip(xs, x_step)), list(zip(ys, y_step)))
    scratch.release()


def _steps(ctx, prog, p, consts, init, carry, spare, fail, stop, xs=(), ys=(),
           step=None) -> None:
    """The scan's steps: the body program reading the carry from one buffer and
    writing the next into the other. The carry ping-pongs between `carry` (the
    outputs) and `spare`, the last step writing the outputs, and the first reads
    the initial carry where it is: no copy of a large carry (a stencil's grid) per
    step, nor before or after. `fail` is where a failed allocation leaves to,
    `stop` where a cancelled call does. `step(b, ins, outs)` emits a step in place
    of the body program's kernels."""
    b, length = ctx.b, p["length"]
    with U.for_range(b, length, "scan") as i:
        t = b.sub(U.i64(length - 1), i) if p["reverse"] else i
        x_slices = [_byte_offset(b, x, t, s) for x, s in xs]
        y_slices = [_byte_offset(b, y, t, s) for y, s in ys]
        to_scratch = b.trunc(b.sub(U.i64(length - 1), i), ir.IntType(1))
        first = b.icmp_unsigned("==", i, U.i64(0))
        dst = [b.select(to_scratch, s_, c) for s_, c in zip(spare, carry)]
        src = [b.select(first, x0, b.select(to_scratch, c, s_))
               for x0, s_, c in zip(init, spare, carry)]
        if step is None:
            ctx.module.emit_program(b, prog, consts + src + x_slices, dst + y_slices, fail)
        else:
            step(b, consts + src + x_slices, dst + y_slices)
        _stop_if_cancelled(ctx, stop)


def _tiled_scan(ctx, eqn, tiles, consts, init, carry) -> None:
    """An elementwise scan tile by tile (codegen/cpu/scan_tiles.py): all steps on
    n elements of every array before the next n; the tiles split over threads
    (ctx.outer) when the kernel runs in parallel. Scalar carries (a step counter)
    come out the same from every tile; each tile steps its own copy. Its buffers
    live on the stack (a tile's carry is a fraction of L2): a worker thread has
    nothing to free, and leaves its tiles when the call is cancelled."""
    b = ctx.b
    shape, n = tiles
    total = int(np.prod(shape, dtype=np.int64))
    nk = eqn.params["num_consts"]
    carry_vars = eqn.outputs
    wide = [a.aval.shape == shape for a in eqn.inputs]
    item = [np.dtype(a.aval.dtype).itemsize for a in eqn.inputs]
    isz_c = item[nk:]
    scalar_c = [not w for w in wide[nk:]]
    sizes = [s if sc else n * s for s, sc in zip(isz_c, scalar_c)] + \
        [s for s, sc in zip(isz_c, scalar_c) if sc]
    pieces = _stack_pieces(b, sizes)
    spare, own = pieces[:len(carry_vars)], iter(pieces[len(carry_vars):])
    outs = [next(own) if sc else c for c, sc in zip(carry, scalar_c)]
    if ctx.outer is None:
        lo, hi, fail, stop = U.i64(0), U.i64(_tile_count(tiles)), ctx.fail_block, ctx.fail_block
    else:
        (lo, hi), fail, stop = ctx.outer, _trap_block(b), b.function.append_basic_block("stop")
        with b.goto_block(stop):
            b.ret_void()
    full, rest = divmod(total, n)
    prog = scan_tiles.program(eqn, n)
    with U.for_between(b, lo, b.select(b.icmp_signed("<", hi, U.i64(full)), hi, U.i64(full)),
                       "tile") as t:
        _tile_steps(ctx, eqn, prog, b.mul(t, U.i64(n)), consts, init, outs, spare, fail, stop,
                    wide, item)
    if rest:     # the last, shorter tile: its own program
        with b.if_then(b.and_(b.icmp_signed("<=", lo, U.i64(full)),
                              b.icmp_signed(">", hi, U.i64(full)))):
            _tile_steps(ctx, eqn, scan_tiles.program(eqn, rest), U.i64(full * n), consts, init,
                        outs, spare, fail, stop, wide, item)
    with b.if_then(b.icmp_signed("==", lo, U.i64(0))):       # one tile's scalars suffice
        _copy(ctx, [c for c, sc in zip(carry, scalar_c) if sc],
              [o for o, sc in zip(outs, scalar_c) if sc],
              [v for v, sc in zip(carry_vars, scalar_c) if sc])


def _tile_steps(ctx, eqn, prog, start, consts, init, outs, spare, fail, stop, wide, item):
    b, nk = ctx.b, eqn.params["num_consts"]

    def at(ptrs, flags, sizes):
        return [_byte_offset(b, ptr, start, s) if w else ptr
                for ptr, w, s in zip(ptrs, flags, sizes)]
    _steps(ctx, prog, eqn.params, at(consts, wide[:nk], item[:nk]),
           at(init, wide[nk:], item[nk:]), at(outs, wide[nk:], item[nk:]), spare, fail, stop,
           step=lambda bb, ins, outs_: scan_tiles.emit_steps_body(bb, prog, ins, outs_,
                                                                   ctx.consts))


def _tile_count(tiles) -> int:
    shape, n = tiles
    return -(-int(np.prod(shape, dtype=np.int64)) // n)


def _stack_pieces(b, sizes) -> list:
    """Aligned pieces of one stack buffer in the function's entry block."""
    offsets, total = [], 0
    for n in sizes:
        offsets.append(total)
        total += U.aligned_size(n, _ALIGN)
    with b.goto_block(b.function.entry_basic_block):
        b.position_at_start(b.function.entry_basic_block)
        base = b.alloca(ir.ArrayType(U.I8, max(total, 1)))
        base.align = _ALIGN
    # (an alloca's pointer is typed, buffer pointers are opaque: one type for select)
    base = b.inttoptr(b.ptrtoint(base, U.I64), U.PTR)
    return [U.aligned_pointer(b, base, o, _ALIGN) for o in offsets]


def _trap_block(b):
    """Where a worker thread's failed allocation goes: it cannot return a status."""
    blk = b.function.append_basic_block("trap")
    with b.goto_block(blk):
        b.call(b.module.declare_intrinsic("llvm.trap", [], ir.FunctionType(U.VOID, [])), [])
        b.unreachable()
    return blk


def _scan_extent(kernel):
    """Threads split an elementwise scan's tiles (None: the scan runs serially)."""
    tiles = scan_tiles.plan(kernel.root)
    if tiles is None:
        return None
    p = kernel.root.params
    work = int(np.prod(tiles[0], dtype=np.int64)) * p["length"] * len(p["body"].eqns)
    return (_tile_count(tiles),), work


PARALLEL_OPAQUE["scan"] = _scan_extent
