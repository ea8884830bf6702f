"""What the eigh and svd kernels share (opaque_eigh.py, opaque_svd.py): the routine
each calls per matrix (routines.py: compiled once per host), the loop over the
batch, with scratch malloc'ed once per kernel (per chunk when the batch is split
over threads, where an allocation failure can only be reported as NaN outputs for
that chunk: the chunk body returns no status), and the work estimate by which the
batch is split (PARALLEL_OPAQUE).
"""
from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np

from . import irutil as U
from . import routines
from .eigen_ir import _Code


def _routine(module: ir.Module, kind: str, dt, args: list, emit) -> ir.Function:
    """Routine jx.linalg.<kind>.<dtype>, void(args), as module calls it; emit(fn, dt)
    fills its body where routines.define gives one to fill."""
    name = f"jx.linalg.{kind}.{np.dtype(dt).name}"
    fn = routines.define(module, name, ir.FunctionType(U.VOID, args))
    if fn is not None:
        fn.attributes.add("noinline")
        emit(fn, dt)
    return module.globals[name]


def _batch(shape):
    return math.prod(shape[:-2])         # (ints or Dims)


def _total(parts):
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


def _run_batched(ctx, kernel, words, counts, call) -> None:
    """call(c, ptrs, scratch) for every matrix of the batch (this chunk's, with
    ctx.outer): ptrs point at its operand and outputs (`counts` elements apart),
    scratch holds `words` 8-byte words, allocated once."""
    b = ctx.b
    c = _Code(b)
    eqn = kernel.root
    atoms = list(eqn.inputs) + list(eqn.outputs)
    nb = _batch(eqn.inputs[0].aval.shape)
    if not U.is_symbolic(nb) and nb == 0:
        return
    if ctx.outer is None:
        lo, hi, fail = c.i(0), U.i64(nb), ctx.fail_block
    else:
        lo, hi = ctx.outer
        fail = _nan_chunk(ctx, eqn.outputs, counts[len(eqn.inputs):], lo, hi)
    scratch = ctx.module.alloc(b, words * 8, fail)
    with c.loop(lo, hi, "mat") as i:
        ptrs = [c.at(ctx.ptr(x), c.mul(i, U.i64(cnt)), U.storage_type(x.aval.dtype))
                for x, cnt in zip(atoms, counts)]
        call(c, ptrs, scratch)
    ctx.module.free(b, scratch)


def _nan_chunk(ctx, outs, counts, lo, hi):
    """A block that gives matrices [lo, hi) NaN outputs and returns: a parallel
    chunk's answer to a failed allocation (its body has no status to return)."""
    b = ctx.b
    blk = b.function.append_basic_block("eigen.nomem")
    with b.goto_block(blk):
        c = _Code(b)
        for v, cnt in zip(outs, counts):
            st = U.storage_type(v.aval.dtype)
            n = U.i64(cnt)
            c.fill(ir.Constant(st, float("nan")), ctx.ptr(v), c.mul(lo, n), c.mul(hi, n), st)
        b.ret_void()
    return blk


def _extent(kernel):
    """The batch is split over threads; work ~ the flops of one matrix each."""
    shape = kernel.root.inputs[0].aval.shape
    nb = _batch(shape)
    m, n = shape[-2:]
    return [nb], nb * m * n * (m + n)
