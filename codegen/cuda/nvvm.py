"""NVPTX building blocks: kernel declaration, thread/block ids, grid- and
block-stride loops, barriers, warp shuffles and a shared-memory block reduction."""
from __future__ import annotations

from contextlib import contextmanager

import llvmlite.ir as ir

from jx.codegen.cpu import irutil as U

GPTR = ir.PointerType(addrspace=1)       # global memory
SHARED = 3
FULL_MASK = ir.Constant(U.I32, -1)


def declare_kernel(module: ir.Module, name: str, nparams: int, max_threads: int):
    """`void name(ptr addrspace(1) x nparams)` marked as a kernel entry point."""
    fn = ir.Function(module, ir.FunctionType(U.VOID, [GPTR] * nparams), name)
    for arg in fn.args:
        arg.add_attribute("noalias")        # buffers never overlap (see plan.py)
        arg.attributes.align = 16           # the runtime passes 16-byte aligned data
    fn.attributes.add("nounwind")
    module.add_named_metadata("nvvm.annotations", [fn, "kernel", ir.Constant(U.I32, 1)])
    module.add_named_metadata("nvvm.annotations", [fn, "maxntidx",
                                                   ir.Constant(U.I32, max_threads)])
    return fn


def _sreg(b: ir.IRBuilder, name: str) -> ir.Value:
    full = f"llvm.nvvm.read.ptx.sreg.{name}"
    fn = b.module.globals.get(full) or ir.Function(b.module, ir.FunctionType(U.I32, []), full)
    return b.zext(b.call(fn, []), U.I64)


def tid(b):
    return _sreg(b, "tid.x")


def ntid(b):
    return _sreg(b, "ntid.x")


def ctaid(b):
    return _sreg(b, "ctaid.x")


def nctaid(b):
    return _sreg(b, "nctaid.x")


def global_id(b):
    return b.add(b.mul(ctaid(b), ntid(b)), tid(b))


def global_size(b):
    return b.mul(nctaid(b), ntid(b))


def barrier(b: ir.IRBuilder) -> None:
    name = "llvm.nvvm.barrier0"
    fn = b.module.globals.get(name) or ir.Function(b.module, ir.FunctionType(U.VOID, []), name)
    b.call(fn, [])


def stride_loop(b: ir.IRBuilder, start, step, stop, name: str = "s"):
    """for (i = start; i < stop; i += step) with run-time start/step; yields i (i64)."""
    return U.for_step(b, start, stop, step, name)


@contextmanager
def if_then(b: ir.IRBuilder, cond):
    with b.if_then(cond):
        yield


# ------------------------------------------------------------------ warp shuffles

def _shfl32(b, v, lanemask: int):
    name = "llvm.nvvm.shfl.sync.bfly.i32"
    fn = b.module.globals.get(name) or ir.Function(
        b.module, ir.FunctionType(U.I32, [U.I32] * 4), name)
    return b.call(fn, [FULL_MASK, v, ir.Constant(U.I32, lanemask), ir.Constant(U.I32, 31)])


def to_bits(b, v):
    """A value as an integer of its width (i1..i64)."""
    t = v.type
    if isinstance(t, ir.IntType):
        return v
    return b.bitcast(v, ir.IntType(64 if isinstance(t, ir.DoubleType) else 32))


def from_bits(b, n, t):
    if isinstance(t, ir.IntType):
        return n
    return b.bitcast(n, t)


def shuffle_xor(b, v, lanemask: int):
    """The value of lane (lane ^ lanemask) for any scalar type up to 64 bits."""
    t = v.type
    n = to_bits(b, v)
    w = n.type.width
    if w == 64:        # two 32-bit halves, unpacked and repacked as CUDA's headers do
        v2 = ir.VectorType(U.I32, 2)
        pair = b.bitcast(n, v2)
        for k in (0, 1):
            half = _shfl32(b, b.extract_element(pair, ir.Constant(U.I32, k)), lanemask)
            pair = b.insert_element(pair, half, ir.Constant(U.I32, k))
        n = b.bitcast(pair, U.I64)
    elif w == 32:
        n = _shfl32(b, n, lanemask)
    else:
        n = b.trunc(_shfl32(b, b.zext(n, U.I32), lanemask), n.type)
    return from_bits(b, n, t)


def warp_reduce(b, v, combine):
    for off in (16, 8, 4, 2, 1):
        v = combine(v, shuffle_xor(b, v, off))
    return v


def _shared_slots(module: ir.Module):
    """32 i64 slots of shared memory (one per warp), shared by every reduction."""
    name = "jx.smem"
    g = module.globals.get(name)
    if g is None:
        typ = ir.ArrayType(U.I64, 32)
        g = ir.GlobalVariable(module, typ, name, addrspace=SHARED)
        g.linkage = "internal"
        g.initializer = ir.Constant(typ, ir.Undefined)
        g.align = 8
        g.type = ir.PointerType(addrspace=SHARED)     # opaque, as every other pointer here
    return g


def block_reduce(b, v, combine, init):
    """Reduce v over the block (blockDim a multiple of 32, <= 1024). The result is
    valid in thread 0. Ends with a barrier, so it can be called again at once."""
    t = v.type
    if to_bits(b, init).type.width == 64:
        return _tree_reduce(b, v, combine)
    v = warp_reduce(b, v, combine)
    slots = _shared_slots(b.module)
    t_id = tid(b)
    lane = b.and_(t_id, U.i64(31))
    warp = b.lshr(t_id, U.i64(5))

    def slot(i):
        return b.gep(slots, [i], source_etype=U.I64)

    with b.if_then(b.icmp_unsigned("==", lane, U.i64(0))):
        n = to_bits(b, v)
        b.store(n if n.type.width == 64 else b.zext(n, U.I64), slot(warp), align=8)
    barrier(b)
    nwarps = b.lshr(ntid(b), U.i64(5))
    safe = b.select(b.icmp_unsigned("<", t_id, nwarps), t_id, U.i64(0))
    raw = b.load(slot(safe), typ=U.I64, align=8)
    bits = to_bits(b, init) if not isinstance(init.type, ir.IntType) else init
    width = bits.type.width
    raw = raw if width == 64 else b.trunc(raw, ir.IntType(width))
    w = b.select(b.icmp_unsigned("<", t_id, nwarps), from_bits(b, raw, t), init)
    w = warp_reduce(b, w, combine)
    barrier(b)
    return w


def _tree_reduce(b, v, combine):
    """64-bit values: a shared-memory tree, no shuffles (split 64-bit shuffles
    gave wrong low words on an H100 with this toolchain)."""
    name = "jx.smem64"
    slots = b.module.globals.get(name)
    if slots is None:
        typ = ir.ArrayType(U.I64, 1024)
        slots = ir.GlobalVariable(b.module, typ, name, addrspace=SHARED)
        slots.linkage = "internal"
        slots.initializer = ir.Constant(typ, ir.Undefined)
        slots.align = 8
        slots.type = ir.PointerType(addrspace=SHARED)
    t = v.type
    t_id, n = tid(b), ntid(b)

    def slot(i):
        return b.gep(slots, [i], source_etype=U.I64)

    def put(i, x):
        b.store(to_bits(b, x), slot(i), align=8)

    def get(i):
        return from_bits(b, b.load(slot(i), typ=U.I64, align=8), t)

    put(t_id, v)
    barrier(b)
    s = 512
    while s >= 1:
        other = b.add(t_id, U.i64(s))
        with b.if_then(b.and_(b.icmp_unsigned("<", t_id, U.i64(s)),
                              b.icmp_unsigned("<", other, n))):
            put(t_id, combine(get(t_id), get(other)))
        barrier(b)
        s //= 2
    out = get(U.i64(0))
    barrier(b)
    return out
