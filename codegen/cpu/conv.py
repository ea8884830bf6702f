"""The CPU kernel of a canonical float convolution: an implicit im2col GEMM.

The expand pass leaves every float conv_general_dilated canonical (see
jx.prims.convolution.is_canonical): lhs (N, S..., C), rhs (K..., I, O), out
(N, S'..., O), padding >= 0 (zeros supplied here), no lhs dilation, feature
groups G with C = G I and O = G Og. Per group it is a GEMM with M = output pixels, K = taps x I, N = Og,
and no im2col matrix is made: for MR consecutive output pixels of one output
row and one K block (inside one tap, or one row of taps, see below) the A rows
are equally strided in the input,

    A[m, c] = X[base(row) + (w0 + m) * stride_d * C + off(tap) + g I + c],

so GEMM's in-place micro-kernel reads them where they lie (am = stride_d C,
ak = 1). With one group and no dilation along the last spatial dim, the taps
along it are contiguous too, and a K block spans a whole row of taps (K_d I).
B, the weights, is packed once per call into KC x NR micro-panels (shared
read-only by every task; by the pool's threads when large); C is the output, O
apart per pixel; MR is fitted to the row (blocking). One task:

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
L1 set (gemm._rows_collide) are packed for every tile.

With padding, each output row's lhs row at a K block's outer tap is staged in
the task's scratch before its tiles: group g's I channels of the S_d pixels
between the padding's zeros (all zeros when the tap's row lies in an outer
dim's padding), with room after them for a short tile's dropped rows; the
tiles read the staged row in place (am = stride_d I; taps along the last dim
are offsets in it). The copy is a few percent of the row's work and leaves the
row in L1 (3x3 SAME 56x56x64: 15.6 ms against 16.3 on a padded copy of lhs).
Depthwise and
tiny-channel convs go to conv_direct when it takes them. This module plans the
conv and drives it; conv_pieces.py emits the loops.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import llvmlite.ir as ir
import numpy as np

from jx.errors import MissingRuleError
from jx.prims.convolution import is_canonical

from . import irutil as U
from . import target, tuning
from .opaque import opaque_rule

if TYPE_CHECKING:
    from .gemm_pieces import Blocking

# conv_pieces, gemm_pieces and conv_direct are imported where used, at the first conv
# kernel: a program without convolutions never loads them (the CPU module builder
# imports this module for its opaque rule)
_NOT_LOADED = object()
conv_direct = _NOT_LOADED    # the direct kernel's module (None: not there)


def _conv_direct():
    global conv_direct
    if conv_direct is _NOT_LOADED:
        try:
            from . import conv_direct as module
        except ImportError:  # (written separately; the GEMM form takes every conv)
            module = None
        conv_direct = module
    return conv_direct

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
# Packed weights from this size are packed by the pool's threads (a fork-join
# costs tens of microseconds; 9 MB of 3x3x512x512 weights take about a millisecond).
PACK_THREADS_FROM = 1 << 20


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
    # padding (the zeros supplied here): per outer spatial dim (stride, rhs dilation,
    # low pad, size, lhs stride); the last dim's (low pad, size, C); elements of a
    # staged row (0: no padding, rows read in place)
    outer: tuple = ()
    last: tuple | None = None
    stage: int = 0

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
    def apack(self) -> int:
        """Elements of a task's A panel scratch (64-byte multiple); the staged row
        follows it in the task's slot."""
        from .gemm_pieces import _pad
        item = self.dtype.itemsize
        return -(-(self.blk.mr * self.kcb + _pad(U.storage_type(self.dtype))) * item // 64) \
            * 64 // item

    @property
    def slot(self) -> int:
        """Bytes of a task's scratch slot."""
        return -(-(self.apack + self.stage) * self.dtype.itemsize // 64) * 64

    @property
    def bstride(self) -> int:
        """Elements from one packed B block (a group's K block) to the next."""
        from .gemm_pieces import _pad
        return self.npan * (self.kcb * self.blk.nr + _pad(U.storage_type(self.dtype)))


# A tile's fixed cost (loading and storing its C tile, the call), in rows of
# MR: short rows take the MR that wastes least of the last tile of a row.
TILE_COST = 2


def blocking(dtype, og: int, wo: int, cpu=None) -> Blocking:
    """GEMM's blocking for Og columns, with MR fitted to rows of wo pixels: as
    many rows as the registers hold, or fewer when they split wo better (a 56-pixel
    row in 4 tiles of 14, not 5 of 12; a 7-pixel row in one tile of 7); KC no more
    than an MR x KC panel of A in half of L1 (nor than GEMM's, for which NC is)."""
    from . import gemm
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


def plan(kernel, cpu=None) -> ConvPlan:
    """The GEMM form of a canonical conv (one with pixels and K to compute)."""
    from . import gemm
    from .gemm_pieces import _pad
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
    instr = gemm._row_strides(lhs.aval.shape)[1:-1]       # spatial strides of lhs
    pads = tuple(tuple(int(v) for v in x) for x in p["padding"])
    padded = any(lo or hi for lo, hi in pads)
    rows = [(N, instr[0] * S[0])] + [(sp[j], st[j] * instr[j]) for j in range(d - 1)]
    wo, am = sp[-1], st[-1] * C
    outer = ()
    if padded:     # rows staged with their zeros, the group's I channels (see above)
        am = st[-1] * I
        outer = tuple((st[j], rd[j], pads[j][0], S[j], instr[j]) for j in range(d - 1))
    while not padded and rows and (rows[-1][0] == 1 or rows[-1][1] == wo * am):
        wo *= rows.pop()[0]                               # pixels follow on: one row
    if not padded:
        rows = [r for r in rows if r[0] != 1]
    blk = blocking(dt, Og, wo, cpu)
    # (staged, the outer taps move the staged row, not an offset in it)
    tstride = [0 if padded else rd[j] * instr[j] for j in range(d - 1)] + \
        [rd[-1] * (I if padded else C)]
    if G == 1 and rd[-1] == 1:       # a row of taps is contiguous in X and in W
        taps = [(ks[j], tstride[j]) for j in range(d - 1)]
        seg = ks[-1] * I
    else:
        taps = [(ks[j], tstride[j]) for j in range(d)]
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
        chunk = blk.mc // blk.mr * blk.mr
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
    # a staged row: lo zeros, S_d pixels, hi zeros, and MR strides more (zeros) that
    # a short tile's dropped rows read
    stage = (pads[-1][0] + S[-1] + pads[-1][1] + blk.mr * st[-1]) * I if padded else 0
    return ConvPlan(dt, blk, G, Og, O, I, tuple(rows), wo, am, tuple(taps), seg, nks, kcb,
                    chunk, nch, slab, nc, fits, pack_a, lhs.aval.size, outer,
                    (pads[-1][0], S[-1], C) if padded else None, stage)


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
    direct = _conv_direct() if USE_DIRECT else None
    return (direct is not None and hasattr(direct, "emit") and bool(direct.suits(kernel)))


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


def emit(ctx, kernel) -> None:
    """Emit the conv (and its epilogue, if any) into the kernel function at ctx.b."""
    from .conv_pieces import _CTX, _body_fn, _epilogue_fn, _pack_b, _pack_body_fn, _sub_fn
    from .gemm_pieces import _c, _declare, _gep, _min, _vname, run_tasks
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
    slot = p.slot
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

    extra = [v for v in epi.inputs if v is not out] if epi is not None else []
    tail = _epilogue_fn(mod, b.function.name, epi, kernel.root, extra, ctx.consts) \
        if epi is not None else None
    entry = b.function.entry_basic_block
    with b.goto_block(entry):
        if entry.instructions:
            b.position_before(entry.instructions[0])
        args = b.alloca(U.PTR, _c(_CTX + len(extra)), name="conv.ctx")
    for i, v in enumerate([ctx.ptr(lhs), cp, bp, scratch, b.inttoptr(tasks, U.PTR),
                           b.inttoptr(slots, U.PTR), ctx.ptr(rhs)] + [ctx.ptr(v) for v in extra]):
        b.store(v, b.gep(args, [_c(i)], source_etype=U.PTR))
    nblocks = p.G * p.nkb
    if threaded and bbytes >= PACK_THREADS_FROM:     # one more fork-join, B packed sooner
        b.call(pool, [_pack_body_fn(mod, b.function.name, et, tag, p), args, _c(nblocks)])
    else:
        _pack_b(b, mod, et, tag, p, ctx.ptr(rhs), bp, _c(0), _c(nblocks))
    sub = _sub_fn(mod, b.function.name, et, tag, p, tail)
    body = _body_fn(mod, b.function.name, p, sub, slot, indexed=threaded)
    run_tasks(b, pool, body, args, tasks, threaded, "conv")
    b.call(free, [mem])
