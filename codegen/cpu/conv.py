"""The CPU kernel of a canonical float convolution: an implicit im2col GEMM.

The expand pass leaves every float conv_general_dilated canonical (see
jx.prims.convolution.is_canonical): lhs (N, S..., C), rhs (K..., I, O), out
(N, S'..., O), no padding, no lhs dilation, feature groups G with C = G I and
O = G Og. Per group it is a GEMM with M = output pixels, K = taps x I, N = Og,
and no im2col matrix is made: for MR consecutive output pixels of one output
row and one K block (inside one tap, or one row of taps, see below) the A rows
are equally strided in the input,

    A[m, c] = X[base(row) + (w0 + m) * stride_d * C + off(tap) + g I + c],

so GEMM's in-place micro-kernel reads them where they lie (am = stride_d C,
ak = 1). With one group and no dilation along the last spatial dim, the taps
along it are contiguous too, and a K block spans a whole row of taps (K_d I).
B, the weights, is packed once per call into KC x NR micro-panels (shared
read-only by every task); C is the output, O apart per pixel. One task:

    for slab of units (a unit: an output row, or a chunk of one):
      for group g, for column block jc (all Og when B fits L2):
        for K block kb:                       (stored on kb == 0)
          for unit in slab, for MR tile of its pixels:
            for NR panel in jc: micro-kernel
      epilogue over the slab (still in cache)

A slab is one unit when all of B fits in half of L2 (an output row's C stays in
L1/L2 across the taps); otherwise it is about MC pixels, with B's blocks read
from L2 by each (GEMM's blocking). Rows whose pixels follow on in the input
(1x1 convs, stride 1) merge into one long row. A tile of fewer than MR pixels
is read in place too when its MR rows stay inside lhs (the extra rows land in
accumulators the masked store drops), else packed; rows that would crowd one
L1 set (gemm._rows_collide) are packed for every tile. Depthwise and
tiny-channel convs go to conv_direct when it takes them.
"""
from __future__ import annotations

import dataclasses
import math

import llvmlite.ir as ir
import numpy as np

from jx.errors import MissingRuleError
from jx.prims.convolution import is_canonical

from . import gemm
from . import irutil as U
from . import target, tuning
from .gemm_pieces import (Blocking, _c, _declare, _fn, _gep, _loop, _micro_fn, _min,
                          _pack_fn, _pack_rows_fn, _pad, _panel_at, _vname)
from .opaque import opaque_rule

try:
    from . import conv_direct
except ImportError:          # (written separately; the GEMM form takes every conv)
    conv_direct = None

# Tasks are taken dynamically (a busy core does fewer); where B does not fit L2,
# each task streams all of it once per slab, so fewer, longer tasks (as gemm's
# TASKS_PER_THREAD_PACKING).
TASKS_PER_THREAD = 4
TASKS_PER_THREAD_STREAMING = 2
MIN_UNITS = 64           # rows fewer than this are cut into chunks of pixels
# For tests and tuning: Blocking fields to override, A packed for every tile
# (True) or read in place (None: chosen), units per slab and pixels per unit
# (None: chosen).
OVERRIDE: dict = {}
PACK_A = None
SLAB = None
CHUNK = None
USE_DIRECT = True        # False: conv_direct never takes a conv (tests of this kernel)


@dataclasses.dataclass(frozen=True)
class ConvPlan:
    dtype: np.dtype
    blk: Blocking
    G: int
    Og: int
    O: int
    I: int
    rows: tuple           # ((size, input stride), ...): the output row dims, merged
    wo: int               # pixels per output row
    am: int               # input stride from one pixel of a row to the next
    taps: tuple           # ((size, input stride), ...): the tap dims a K block indexes
    seg: int              # K of one tap index (I, or K_d I for a row of taps)
    nks: int              # K blocks per tap index
    kcb: int              # their size (the last may be shorter)
    chunk: int            # pixels per unit
    nch: int              # units per row
    slab: int             # units per slab
    nc: int               # columns per block
    fits: bool            # all of B in half of L2
    pack_a: bool
    lhs_size: int

    @property
    def nkb(self) -> int:
        return math.prod(s for s, _ in self.taps) * self.nks

    @property
    def nrows(self) -> int:
        return math.prod(s for s, _ in self.rows)

    @property
    def units(self) -> int:
        return self.nrows * self.nch

    @property
    def npan(self) -> int:
        return -(-self.Og // self.blk.nr)

    @property
    def bstride(self) -> int:
        """Elements from one packed B block (a group's K block) to the next."""
        return self.npan * (self.kcb * self.blk.nr + _pad(U.storage_type(self.dtype)))


# A tile's fixed cost (loading and storing its C tile, the call), in rows of
# MR: short rows take the MR that wastes least of the last tile of a row.
TILE_COST = 2


def blocking(dtype, og: int, wo: int, cpu=None) -> Blocking:
    """GEMM's blocking for Og columns, with MR fitted to rows of wo pixels: as
    many rows as the registers hold, or fewer when they split wo better (a 56-pixel
    row in 4 tiles of 14, not 5 of 12; a 7-pixel row in one tile of 7); KC no more
    than an MR x KC panel of A in half of L1 (nor than GEMM's, for which NC is)."""
    blk = gemm.blocking(dtype, og, cpu)
    vbytes = target.vector_bytes(cpu or target.host_cpu())
    if "mr" not in OVERRIDE:
        regs = 32 if vbytes >= 64 else 16          # accumulators + B vectors + 1
        hi = min(blk.mr + 2, (regs - 1 - blk.nv) // blk.nv)
        mr = min(range(max(4, blk.mr // 2), hi + 1),
                 key=lambda r: (-(-wo // r) * (r + TILE_COST), -r))
        if mr != blk.mr:
            item = np.dtype(dtype).itemsize
            kc = max(8, target.cache_sizes()[1] // 2 // (mr * item) // 8 * 8)
            blk = dataclasses.replace(blk, mr=mr, kc=min(kc, blk.kc))   # (NC holds)
    return dataclasses.replace(blk, **OVERRIDE) if OVERRIDE else blk


def _row_strides(shape) -> list:
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= n
    return out[::-1]


def plan(kernel, cpu=None) -> ConvPlan:
    """The GEMM form of a canonical conv (one with pixels and K to compute)."""
    eqn = kernel.root
    lhs, rhs = eqn.inputs
    (out,) = eqn.outputs
    p = eqn.params
    dt = np.dtype(lhs.aval.dtype)
    d = lhs.aval.ndim - 2
    N, *S, C = lhs.aval.shape
    *ks, I, O = rhs.aval.shape
    sp = out.aval.shape[1:-1]
    G = int(p["feature_group_count"])
    Og = O // G
    st, rd = tuple(p["window_strides"]), tuple(p["rhs_dilation"])
    item = dt.itemsize
    instr = _row_strides(lhs.aval.shape)[1:-1]            # spatial strides of lhs
    rows = [(N, instr[0] * S[0])] + [(sp[j], st[j] * instr[j]) for j in range(d - 1)]
    wo, am = sp[-1], st[-1] * C
    while rows and (rows[-1][0] == 1 or rows[-1][1] == wo * am):
        wo *= rows.pop()[0]                               # pixels follow on: one row
    rows = [r for r in rows if r[0] != 1]
    blk = blocking(dt, Og, wo, cpu)
    if G == 1 and rd[-1] == 1:       # a row of taps is contiguous in X and in W
        taps = [(ks[j], rd[j] * instr[j]) for j in range(d - 1)]
        seg = ks[-1] * I
    else:
        taps = [(ks[j], rd[j] * instr[j]) for j in range(d)]
        seg = I
    nks = -(-seg // blk.kc)
    kcb = -(-seg // nks)
    pack_a = gemm._rows_collide(am * item, blk.mr) if PACK_A is None else PACK_A
    et = U.storage_type(dt)
    npan = -(-Og // blk.nr)
    bbytes = G * math.prod(s for s, _ in taps) * nks * npan * (kcb * blk.nr + _pad(et)) * item
    caches = target.cache_sizes()
    fits = bbytes <= caches[2] // 2
    nrows = math.prod(s for s, _ in rows)
    chunk = wo
    if not fits and wo > blk.mc:           # a slab of about MC pixels at most
        chunk = blk.mc
    if nrows * -(-wo // chunk) < MIN_UNITS:  # too few rows to share: cut them
        nch = min(-(-wo // blk.mr), -(-MIN_UNITS // nrows))
        chunk = min(chunk, max(blk.mr, wo // nch // blk.mr * blk.mr))
    if CHUNK is not None:
        chunk = CHUNK
    nch = -(-wo // chunk)
    slab = 1 if fits else max(1, blk.mc // chunk)
    if SLAB is not None:
        slab = SLAB
    nc = npan * blk.nr if fits else min(blk.nc, npan * blk.nr)
    return ConvPlan(dt, blk, G, Og, O, I, tuple(rows), wo, am, tuple(taps), seg, nks, kcb,
                    chunk, nch, slab, nc, fits, pack_a, lhs.aval.size)


def _static(kernel) -> bool:
    return not any(U.is_symbolic(s) for v in list(kernel.root.inputs) + list(kernel.root.outputs)
                   for s in v.aval.shape)


def _check(kernel) -> None:
    if not is_canonical(kernel.root) or not _static(kernel):
        raise MissingRuleError(
            "cpu backend: conv_general_dilated reached the backend in a non-canonical form "
            "(the expand pass makes every float convolution channels-last, unpadded, "
            "without lhs dilation or batch groups, with static shapes, in float32 or "
            "float64); got " + ", ".join(str(v.aval) for v in kernel.root.inputs)
            + f" with {kernel.root.params}"
            + (f" (from {kernel.root.source})" if kernel.root.source else ""))


def _direct(kernel) -> bool:
    return (USE_DIRECT and conv_direct is not None and hasattr(conv_direct, "emit")
            and bool(conv_direct.suits(kernel)))


def takes_epilogue(kernel) -> bool:
    """Whether an elementwise consumer of this conv kernel can run as its
    epilogue (epilogue.py): a canonical conv with something to sum, run here (or
    by conv_direct, where it says it takes epilogues)."""
    if not is_canonical(kernel.root) or not _static(kernel):
        return False
    lhs, rhs = kernel.root.inputs
    if kernel.root.outputs[0].aval.size == 0 or rhs.aval.size == 0:
        return False
    if _direct(kernel):
        return bool(getattr(conv_direct, "takes_epilogue", lambda k: False)(kernel))
    return True


@opaque_rule("conv_general_dilated")
def _conv_general_dilated(ctx, kernel):
    _check(kernel)
    if _direct(kernel):
        conv_direct.emit(ctx, kernel)
        return
    emit(ctx, kernel)


# The context array of the task bodies: X, out, packed B, the scratch slots,
# tasks, slots, then the epilogue's other inputs.
_CTX = 6


def emit(ctx, kernel) -> None:
    """Emit the conv (and its epilogue, if any) into the kernel function at ctx.b."""
    b = ctx.b
    mod = ctx.module.module
    lhs, rhs = kernel.root.inputs
    (out,) = kernel.root.outputs
    epi = kernel.epilogue
    cp = ctx.ptr(epi.outputs[0] if epi is not None else out)
    if out.aval.size == 0:
        return
    dt = np.dtype(lhs.aval.dtype)
    et = U.storage_type(dt)
    item = dt.itemsize
    if rhs.aval.size == 0:                  # an empty sum (no epilogue takes it)
        memset = mod.declare_intrinsic("llvm.memset", [U.PTR, U.I64])
        b.call(memset, [cp, ir.Constant(U.I8, 0), _c(out.aval.size * item),
                        ir.Constant(U.I1, 0)])
        return
    p = plan(kernel, target.of_module(mod))
    blk = p.blk
    tag = f"{_vname(et)}.v{blk.vw}"
    bp_elems = p.G * p.nkb * p.bstride
    slot = -(-(blk.mr * p.kcb + _pad(et)) * item // 64) * 64
    work = out.aval.size * p.nkb * p.kcb
    max_threads = max(1, min(p.units, work // tuning.value("gemm_min_work")))
    pool = ctx.module._parallel_for
    threaded = pool is not None and max_threads > 1
    per_thread = TASKS_PER_THREAD if p.fits else TASKS_PER_THREAD_STREAMING
    if threaded:
        nthreads = _declare(mod, "jx_get_num_threads", U.I32, [])
        pool_threads = b.sext(b.call(nthreads, []), U.I64)
        threads = _min(b, pool_threads, _c(max_threads))
        tasks = b.select(b.icmp_signed(">", threads, _c(1)),
                         _min(b, b.mul(threads, _c(per_thread)), _c(p.units)), _c(1))
        slots = _min(b, pool_threads, tasks)
    else:
        tasks = slots = _c(1)
    malloc = _declare(mod, "malloc", U.PTR, [U.I64])
    free = _declare(mod, "free", U.VOID, [U.PTR])
    bbytes = -(-bp_elems * item // 64) * 64
    mem = b.call(malloc, [b.add(b.mul(slots, _c(slot)), _c(bbytes + 64))])
    ok = b.function.append_basic_block("conv.alloc.ok")
    b.cbranch(b.icmp_unsigned("==", mem, ir.Constant(U.PTR, None)), ctx.fail_block, ok)
    b.position_at_end(ok)
    bp = b.inttoptr(b.and_(b.add(b.ptrtoint(mem, U.I64), _c(63)), _c(-64)), U.PTR)
    scratch = _gep(b, bp, _c(bbytes // item), et)
    _pack_b(b, mod, et, tag, p, ctx.ptr(rhs), bp)

    extra = [v for v in epi.inputs if v is not out] if epi is not None else []
    tail = _epilogue_fn(mod, b.function.name, epi, kernel.root, extra, ctx.consts) \
        if epi is not None else None
    entry = b.function.entry_basic_block
    with b.goto_block(entry):
        if entry.instructions:
            b.position_before(entry.instructions[0])
        args = b.alloca(U.PTR, _c(_CTX + len(extra)), name="conv.ctx")
    for i, v in enumerate([ctx.ptr(lhs), cp, bp, scratch, b.inttoptr(tasks, U.PTR),
                           b.inttoptr(slots, U.PTR)] + [ctx.ptr(v) for v in extra]):
        b.store(v, b.gep(args, [_c(i)], source_etype=U.PTR))
    sub = _sub_fn(mod, b.function.name, et, tag, p, tail)
    body = _body_fn(mod, b.function.name, p, sub, slot, indexed=threaded)
    if threaded:
        many = b.function.append_basic_block("conv.parallel")
        one = b.function.append_basic_block("conv.serial")
        join = b.function.append_basic_block("conv.done")
        b.cbranch(b.icmp_signed(">", tasks, _c(1)), many, one)
        b.position_at_end(many)
        b.call(pool, [body, args, tasks])
        b.branch(join)
        b.position_at_end(one)
        b.call(body, [args, _c(0), _c(1)])
        b.branch(join)
        b.position_at_end(join)
    else:
        b.call(body, [args, _c(0), _c(1)])
    b.call(free, [mem])


def _kblock(b, p: ConvPlan, kb):
    """(offset of K block kb in X from a pixel's first element, its row in W
    (times O for its offset), its length kc)."""
    t = b.udiv(kb, _c(p.nks)) if p.nks != 1 else kb
    c0 = b.mul(b.urem(kb, _c(p.nks)), _c(p.kcb)) if p.nks != 1 else _c(0)
    aoff = c0
    for i, (_, stride) in zip(U.delinear(b, t, [s for s, _ in p.taps]), p.taps):
        aoff = b.add(aoff, b.mul(i, _c(stride)))
    wrow = b.add(b.mul(t, _c(p.seg)), c0)
    return aoff, wrow, _min(b, _c(p.kcb), b.sub(_c(p.seg), c0))


def _pack_b(b, mod, et, tag, p: ConvPlan, w, bp) -> None:
    """Every group's K blocks of W into KC x NR micro-panels, block (g, kb) at
    (g nkb + kb) bstride (serially: B is small next to the conv)."""
    pack = _pack_rows_fn(mod, et, tag, p.blk.nr, p.O)
    with _loop(b, 0, p.G, 1, "pg") as g:
        with _loop(b, 0, p.nkb, 1, "pkb") as kb:
            _, wrow, kc = _kblock(b, p, kb)
            src = _gep(b, w, b.add(b.mul(wrow, _c(p.O)), b.mul(g, _c(p.Og))), et)
            dst = _gep(b, bp, b.mul(b.add(b.mul(g, _c(p.nkb)), kb), _c(p.bstride)), et)
            pack(b, dst, src, _c(p.Og), kc)


def _sub_fn(mod, kname, et, tag, p: ConvPlan, tail):
    """sub(args, u0, u1, slot): units u0..u1 of the conv, slab by slab, each slab
    then through the epilogue `tail`; slot: this task's A scratch."""
    fn = ir.Function(mod, ir.FunctionType(U.VOID, [U.PTR, U.I64, U.I64, U.PTR]),
                     f"{kname}.conv.sub")
    fn.linkage = "internal"
    args, u0, u1, ap = fn.args
    blk = p.blk
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, c, bp = (b.load(b.gep(args, [_c(i)], source_etype=U.PTR), typ=U.PTR) for i in range(3))
    micro = _micro_fn(mod, et, tag, blk, packed=True)
    micro_a = _micro_fn(mod, et, tag, blk, packed=False, strides=(p.am, 1)) \
        if not p.pack_a else None
    pack_a = _pack_fn(mod, et, tag, blk.mr, p.am, 1)
    mr, nr = _c(blk.mr), _c(blk.nr)

    def pixel(u):          # (first pixel of unit u, flat; its row; its w)
        row = b.udiv(u, _c(p.nch)) if p.nch != 1 else u
        w = b.mul(b.urem(u, _c(p.nch)), _c(p.chunk)) if p.nch != 1 else _c(0)
        return b.add(b.mul(row, _c(p.wo)), w), row, w

    with _loop(b, u0, u1, p.slab, "slab") as s0:
        s1 = _min(b, b.add(s0, _c(p.slab)), u1)
        with _loop(b, 0, p.G, 1, "g") as g:
            with _loop(b, 0, p.Og, p.nc, "jc") as jc:
                nc = _min(b, _c(p.nc), b.sub(_c(p.Og), jc))
                with _loop(b, 0, p.nkb, 1, "kb") as kb:
                    aoff, _, kc = _kblock(b, p, kb)
                    aoff = b.add(aoff, b.mul(g, _c(p.I)))
                    first = b.icmp_signed("==", kb, _c(0))
                    bblk = _gep(b, bp, b.mul(b.add(b.mul(g, _c(p.nkb)), kb), _c(p.bstride)), et)
                    coff = b.add(b.mul(g, _c(p.Og)), jc)
                    with _loop(b, s0, s1, 1, "u") as u:
                        pix, row, w_lo = pixel(u)
                        w_hi = _min(b, b.add(w_lo, _c(p.chunk)), _c(p.wo))
                        xrow = aoff
                        for i, (_, stride) in zip(U.delinear(b, row, [s for s, _ in p.rows]),
                                                  p.rows):
                            xrow = b.add(xrow, b.mul(i, _c(stride)))
                        crow = b.add(b.mul(b.sub(pix, w_lo), _c(p.O)), coff)
                        with _loop(b, w_lo, w_hi, blk.mr, "w") as w0:
                            _tile(b, p, et, x, c, ap, micro, micro_a, pack_a, bblk, xrow,
                                  crow, w0, _min(b, mr, b.sub(w_hi, w0)), nc, jc, kc, first,
                                  mr, nr)
        if tail is not None:       # this slab of the output is done and in cache
            tail(b, args, c, pixel(s0)[0], pixel(s1)[0])
    b.ret_void()
    return fn


def _tile(b, p, et, x, c, ap, micro, micro_a, pack_a, bblk, xrow, crow, w0, rows, nc, jc,
          kc, first, mr, nr) -> None:
    """One MR tile of pixels w0.. of a row against the column block jc..jc+nc."""
    xoff = b.add(xrow, b.mul(w0, _c(p.am)))
    src = _gep(b, x, xoff, et)
    if micro_a is None:
        direct = ir.Constant(U.I1, 0)
    else:   # all MR rows inside lhs (a short tile reads rows it then drops)
        end = b.add(xoff, b.add(_c((p.blk.mr - 1) * p.am), kc))
        direct = b.or_(b.icmp_signed("==", rows, mr), b.icmp_signed("<=", end, _c(p.lhs_size)))
    with b.if_then(b.not_(direct)):
        pack_a(b, ap, src, rows, kc)
    apan = b.select(direct, src, ap)
    cbase = b.add(crow, b.mul(w0, _c(p.O)))
    with _loop(b, 0, nc, p.blk.nr, "jr") as jr:
        args = [kc, apan, _panel_at(b, bblk, b.add(jc, jr), p.blk.nr, kc, et),
                _gep(b, c, b.add(cbase, jr), et), rows, _min(b, nr, b.sub(nc, jr)), first,
                _c(p.O)]
        if micro_a is None:
            b.call(micro, args + [_c(0), _c(0)])
        else:
            with b.if_else(direct) as (then, other):
                with then:
                    b.call(micro_a, args + [_c(p.am), _c(1)])
                with other:
                    b.call(micro, args + [_c(0), _c(0)])


def _body_fn(mod, kname, p: ConvPlan, sub, slot, indexed):
    """body(args, lo, hi): tasks lo..hi-1, each its contiguous share of the units,
    with the scratch slot of the pool thread running it (indexed) or slot 0; a
    thread past the slots (the pool grew) allocates its own."""
    fn = ir.Function(mod, ir.FunctionType(U.VOID, [U.PTR, U.I64, U.I64]), f"{kname}.conv")
    fn.linkage = "internal"
    args, lo, hi = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    scratch, tasks, slots = (b.load(b.gep(args, [_c(i)], source_etype=U.PTR), typ=U.PTR)
                             for i in (3, 4, 5))
    tasks, slots = b.ptrtoint(tasks, U.I64), b.ptrtoint(slots, U.I64)
    null = ir.Constant(U.PTR, None)
    own, mine = null, scratch
    if indexed:
        index = b.sext(b.call(_declare(mod, "jx_worker_index", U.I32, []), []), U.I64)
        has_slot = b.icmp_signed("<", index, slots)
        pre = b.block
        with b.if_then(b.not_(has_slot), likely=False):
            got = b.call(_declare(mod, "malloc", U.PTR, [U.I64]), [_c(slot + 64)])
            with b.if_then(b.icmp_unsigned("==", got, null), likely=False):
                b.call(_declare(mod, "llvm.trap", U.VOID, []), [])     # out of memory
            grew = b.block
        own = b.phi(U.PTR)
        own.add_incoming(null, pre)
        own.add_incoming(got, grew)
        aligned = b.inttoptr(b.and_(b.add(b.ptrtoint(own, U.I64), _c(63)), _c(-64)), U.PTR)
        mine = b.select(has_slot, b.gep(scratch, [b.mul(index, _c(slot))], source_etype=U.I8,
                                        inbounds=True), aligned)
    with _loop(b, lo, hi, 1, "task") as w:
        u0 = b.sdiv(b.mul(w, _c(p.units)), tasks)
        u1 = b.sdiv(b.mul(b.add(w, _c(1)), _c(p.units)), tasks)
        b.call(sub, [args, u0, u1, mine])
    if indexed:
        b.call(_declare(mod, "free", U.VOID, [U.PTR]), [own])
    b.ret_void()
    return fn


def _epilogue_fn(mod, kname, epi, conv, extra, consts):
    """tail(b, args, c, p0, p1): the epilogue kernel `epi` over output pixels
    p0..p1 (all channels), reading the conv's result from C and writing C in
    place (as gemm._epilogue_fn; its own function, pointers noalias)."""
    from .fused import FusedEmitter
    (res,) = epi.outputs
    (prod,) = conv.outputs
    shape = res.aval.shape
    fn = ir.Function(mod, ir.FunctionType(U.VOID, [U.PTR] * (1 + len(extra)) + [U.I64] * 2),
                     f"{kname}.epilogue")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    c, *ptrs = fn.args[:1 + len(extra)]
    p0, p1 = fn.args[1 + len(extra):]
    for a in fn.args[:1 + len(extra)]:
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    buffers = {id(v): q for v, q in zip(extra, ptrs)}
    buffers[id(prod)] = buffers[id(res)] = c
    em = FusedEmitter(b, epi, buffers, consts)
    with _loop(b, p0, p1, 1, "ep") as px:
        pidx = U.delinear(b, px, shape[:-1])
        with _loop(b, 0, shape[-1], 1, "eo") as o:
            idx = pidx + [o]
            U.store(b, em.value(res, idx), c, U.linear(b, idx, shape), res.aval.dtype)
    b.ret_void()

    def tail(b, args, c, p0, p1):
        ptrs = [b.load(b.gep(args, [_c(_CTX + i)], source_etype=U.PTR), typ=U.PTR)
                for i in range(len(extra))]
        b.call(fn, [c, *ptrs, p0, p1])
    return tail
