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
from .opaque import opaque_rule

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


def _stop_if_cancelled(ctx, scratch) -> None:
    """At a loop's back-edge: leave through the scratch's failure path when the call
    was cancelled (the entry then returns STATUS_CANCELLED), so a long loop can be
    interrupted. One load of a flag per iteration."""
    b = ctx.b
    go_on = b.function.append_basic_block("loop.go_on")
    b.cbranch(ctx.module.cancelled(b), scratch.fail, go_on)
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
    _stop_if_cancelled(ctx, scratch)
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
    x_step = [_slice_bytes(a) for a in eqn.inputs[nk + nc:]]
    y_step = [_slice_bytes(v) for v in ys_vars]
    scratch = _Scratch(ctx, [_nbytes(v) for v in carry_vars])
    with U.for_range(b, length, "scan") as i:
        t = b.sub(U.i64(length - 1), i) if p["reverse"] else i
        x_slices = [_byte_offset(b, x, t, s) for x, s in zip(xs, x_step)]
        y_slices = [_byte_offset(b, y, t, s) for y, s in zip(ys, y_step)]
        # the carry ping-pongs between the outputs and the scratch, the last step
        # writing the outputs, and the first reads the initial carry where it is:
        # no copy of a large carry (a stencil's grid) per step, nor before or after
        to_scratch = b.trunc(b.sub(U.i64(length - 1), i), ir.IntType(1))
        first = b.icmp_unsigned("==", i, U.i64(0))
        dst = [b.select(to_scratch, s_, c) for s_, c in zip(scratch.pieces, carry)]
        src = [b.select(first, x0, b.select(to_scratch, c, s_))
               for x0, s_, c in zip(init, scratch.pieces, carry)]
        ctx.module.emit_program(b, prog, consts + src + x_slices, dst + y_slices,
                                scratch.fail)
        _stop_if_cancelled(ctx, scratch)
    scratch.release()
