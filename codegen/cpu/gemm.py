"""A blocked, packed, multi-threaded GEMM for float dot_general (BLIS-style).

A dot_general whose lhs free dims, contracting dims and rhs free dims each
collapse to one strided dim becomes a batch of C[M, N] = A[M, K] B[K, N] with
arbitrary element strides for A and B (C is the row-major output). One task:

    for pc in K step KC:                 C (+)= A[:, pc] B[pc, :] (stored on pc == 0)
      A: read in place when its rows are contiguous along K (a partial last row
         panel is packed), else packed in MC-row blocks of MR x KC micro-panels
      for jc in N step NC:               B block (KC x NC): packed, stays in L2
        pack B into KC x NR micro-panels (k-major, zero-padded columns; for
          row-major B a whole row of the block at a time, for the prefetchers)
        for ir in M step MR:             the A micro-panel stays in L1
          for jr in NC step NR:          B micro-panels stream from L2
            micro-kernel: an MR x NR tile in MR * NR / VW vector registers

The micro-kernel broadcasts one element of A per row and multiplies it into NR /
VW vectors of B with FMAs (vectors along N, so C tiles store as rows); edge tiles
store through masked loads and stores. Tasks split N (or M, when too few column
granules) over the batch in NR (MR) granules, TASKS_PER_THREAD per thread of the
pool; each packs into its own slot of one scratch allocation made by the kernel.
One fork-join per kernel call: the pool costs tens of microseconds per join on a
loaded machine. Outputs a few columns wide from a transposed A take the narrow
kernel instead; an elementwise consumer runs as an epilogue (epilogue.py).
gemm_pieces.py emits the packing and kernel functions; this module plans the
product and drives them.
"""
from __future__ import annotations

import dataclasses
import math

import llvmlite.ir as ir
import numpy as np

from jx.dims import hinted
from jx.runtime.host import cpus_usable

from . import irutil as U
from . import target, tuning
from .gemm_pieces import (Blocking, Plan, _c, _declare, _edge_fn, _fn, _gep, _loop,
                          _micro_fn, _min, _narrow_fn, _pack_fn, _pack_rows_fn, _pad,
                          _panel_at, _size, _vname, epilogue_function, run_tasks,
                          worker_scratch)

# Tasks are taken dynamically, so a thread whose core is busy (another process,
# a preemption) does fewer instead of holding up the product. More tasks cost
# where each task packs a shared operand again (A split by N, B split by M):
# 4 tasks per thread made 1024^3 12% slower on Zen 4, so such products get 2.
TASKS_PER_THREAD = 4
TASKS_PER_THREAD_PACKING = 2
# For tests and tuning: blocking fields to override (small blocks make small
# matrices cross every block boundary), A read in place (True) or packed
# (False), and the split dim ("m" or "n"); None chooses.
OVERRIDE: dict = {}
DIRECT_A = None
SPLIT = None
NARROW = None            # False: never the narrow kernel (tests compare both paths)


def blocking(dtype, n: int = 1 << 30, cpu: str | None = None) -> Blocking:
    """Register and cache blocking for the target's widest vectors (n: columns of C)."""
    vbytes = target.vector_bytes(cpu or target.host_cpu())
    item = np.dtype(dtype).itemsize
    vw = vbytes // item
    # 32 vector registers with AVX-512: 12 x 2 accumulators + 2 of B (+1 broadcast);
    # 16 otherwise: 6 x 2 + 2 (+1). One vector per row when C is that narrow, with
    # rows enough to cover the FMA latency.
    nv = 1 if n <= vw else 2
    mr = (12 if vbytes == 64 else 6) if nv == 2 else 8
    # Cache blocking from the host's caches (target.cache_sizes): KC so the A
    # micro-panel (MR x KC) fills half of L1, NC so the B block (KC x NC) fills
    # half of L2 (the rest holds A micro-panels and C tiles), MC so a packed A
    # block fills half this core's share of L3 (at most 2 MiB: beyond, packing
    # and its reuse no longer overlap). A 32 KiB L1 / 2 MiB L2 Intel core gets the
    # blocking tuned there before; a Zen 4 core (1 MiB L2) a B block half as big.
    caches = target.cache_sizes()
    kc = max(8, (caches[1] // 2 // (mr * item)) // 8 * 8)
    nc = max(nv * vw, caches[2] // 2 // (kc * item) // (nv * vw) * (nv * vw))
    a_block = min(2 << 20, max(caches[2], caches[3] // 2))
    mc = max(mr, a_block // (kc * item) // mr * mr)
    blk = Blocking(vw, mr, nv, kc, mc, nc)
    if OVERRIDE:
        blk = Blocking(**{**blk.__dict__, **OVERRIDE})
    return blk


def build_routines(module, dtype) -> None:
    """Declare in module (external routines: each gets its own module) every GEMM
    routine the host's blockings for dtype can call: the packed micro-kernel and
    each packing loop structure, for the narrow (one vector) and wide tiles. They
    depend on no program, so a host can have them compiled before its first one."""
    et = U.storage_type(np.dtype(dtype))
    for n in (1, 1 << 30):
        blk = blocking(dtype, n, target.of_module(module))
        tag = f"{_vname(et)}.v{blk.vw}"
        _micro_fn(module, et, tag, blk, packed=True)
        _macro_fn(module, et, tag, blk)
        _edge_fn(module, et, tag, blk)        # (the direct micro-kernels' edge tiles)
        _rows_axpy_fn(module, et)            # (a symbolic product's streamed rows)
        _rows_dot_fn(module, et, blk.vw)
        for r in sorted({blk.mr, blk.nr}):
            _pack_rows_fn(module, et, tag, r, 2)
            # (sr, sk): k contiguous (8 x 8 transposes), rows contiguous, neither
            for sr, sk in ((2, 1), (1, 2), (3, 2)):
                _pack_fn(module, et, tag, r, sr, sk)


def describe() -> dict:
    """The blocking this host gets, for `jx bench --machine`."""
    out = {}
    for dt in ("float32", "float64"):
        blk = blocking(dt)
        out[f"GEMM {dt} blocking"] = (f"MR x NR {blk.mr} x {blk.nr}, KC {blk.kc}, "
                                      f"MC {blk.mc}, NC {blk.nc}")
    out["GEMM tasks per thread"] = (f"{TASKS_PER_THREAD} ({TASKS_PER_THREAD_PACKING} where "
                                    "each task packs a shared operand)")
    return out


def _row_strides(shape) -> list:
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= n
    return out[::-1]


def _merge(shape, strides, dims):
    """(size, stride) of dims read as one row-major index, or None if they do not
    form one strided dim. Unit dims do not matter."""
    dims = [d for d in dims if shape[d] != 1]
    if not dims:
        return 1, 0
    for d, e in zip(dims, dims[1:]):
        if strides[d] != strides[e] * shape[e]:
            return None
    return math.prod(shape[d] for d in dims), strides[dims[-1]]   # (ints or Dims)


def plan(kernel) -> Plan | None:
    """The GEMM form of a float dot_general kernel, or None (naive path)."""
    eqn = kernel.root
    lhs, rhs = eqn.inputs
    (out,) = eqn.outputs
    dt = np.dtype(lhs.aval.dtype)
    if dt not in (np.float32, np.float64) or rhs.aval.dtype != dt or out.aval.dtype != dt:
        return None
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    ls, rs = lhs.aval.shape, rhs.aval.shape
    sa, sb = _row_strides(ls), _row_strides(rs)
    lf = [d for d in range(len(ls)) if d not in lc and d not in lb]
    rf = [d for d in range(len(rs)) if d not in rc and d not in rb]
    m, n = _merge(ls, sa, lf), _merge(rs, sb, rf)
    if m is None or n is None:
        return None
    pairs = [(a, b) for a, b in zip(lc, rc) if ls[a] != 1]
    for order in (pairs, sorted(pairs, key=lambda p: -sa[p[0]])):
        ka = _merge(ls, sa, [a for a, _ in order])
        kb = _merge(rs, sb, [b for _, b in order])
        if ka is not None and kb is not None:
            break
    else:
        return None
    batch = tuple((ls[a], sa[a], sb[b]) for a, b in zip(lb, rb) if ls[a] != 1)
    return Plan(dt, batch, m[0], n[0], ka[0], m[1], ka[1], kb[1], n[1])


def _pack_panels(b, pack, dst, mat, first, count, step, s_row, s_k, pc, kc, et):
    """Pack rows first..first+count of an operand (A's rows or B's columns: row stride
    s_row, k stride s_k, from k = pc) panel by panel, `step` rows to a panel."""
    with _loop(b, 0, count, step, "pp") as j:
        src = _gep(b, mat, b.add(b.mul(b.add(first, j), _c(s_row)), b.mul(pc, _c(s_k))), et)
        pack(b, _panel_at(b, dst, j, step, kc, et), src, _min(b, _c(step), b.sub(count, j)), kc)


def _sub_fn(module, et, tag, blk: Blocking, p: Plan, ap_elems: int, symbols: tuple = ()):
    """sub(a, b, c, mlen, nlen, scratch, kc[, dims]): C[:mlen, :nlen] = A[:mlen] B[:, :nlen],
    K in blocks of kc (chosen by the caller: at run time when K is symbolic).
    `symbols`: the module's symbolic sizes, whose values `dims` points at."""
    stream = _streams(p)
    name = (f"jx.gemm.sub.{tag}.{blk.mr}x{blk.nr}.{blk.mc}.{blk.nc}.{p.n}.{p.k}."
            f"{p.am}.{p.ak}.{p.bk}.{p.bn}.{ap_elems}"     # B's scratch starts at ap_elems
            + (".s" if stream else ""))
    fn = _fn(module, name, U.VOID, [U.PTR, U.PTR, U.PTR, U.I64, U.I64, U.PTR, U.I64] +
             ([U.PTR] if symbols else []))
    if fn is None:
        return module.globals[name]
    U.plain(fn)     # (the tile loops, which run per micro-kernel call, are _macro_fn's)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with U.dims_scope(U.dims_from(b, fn.args[-1], symbols) if symbols else None):
        if stream:
            _stream_if_tiny(b, module, et, blk, p, *fn.args[:5])
        _sub_body(b, module, et, tag, blk, p, ap_elems, *fn.args[:7])
    b.ret_void()
    return fn


# Rows of C (of a task's share) up to which a product of run-time M streams B
# instead of packing it: a row reads B once from memory, packing reads and
# writes it once, so streaming costs less up to two rows.
STREAM_ROWS = 2
# K up to which it streams too: the micro-kernel's C tile loads and stores, and
# the packing, are then most of its work (a K of 1 is an outer product)
STREAM_DEPTH = 4


def _streams(p: Plan) -> bool:
    """Whether a product may stream its rows (_stream_if_tiny): M or K known only at
    run time, and B contiguous along N (axpy rows) or both operands along K (dots)."""
    return (U.is_symbolic(p.m) or U.is_symbolic(p.k)) and \
        (p.bn == 1 or (p.bk == 1 and p.ak == 1))


def _stream_if_tiny(b, module, et, blk, p: Plan, a, bmat, c, mlen, nlen) -> None:
    """At the start of a task's share: when its rows or K are tiny (a batch of 1
    or 2; a gradient's x.T @ dy over one), the rows routine computes it and the
    share returns; packing would cost as much as the product."""
    tiny = b.or_(b.icmp_signed("<=", mlen, _c(STREAM_ROWS)),
                 b.icmp_signed("<=", _c(p.k), _c(STREAM_DEPTH)))
    stream = b.function.append_basic_block("stream")
    blocked = b.function.append_basic_block("blocked")
    b.cbranch(tiny, stream, blocked)
    b.position_at_end(stream)
    rows_fn = _rows_axpy_fn(module, et) if p.bn == 1 else _rows_dot_fn(module, et, blk.vw)
    b.call(rows_fn, [a, bmat, c, mlen, nlen, _c(p.k), _c(p.am), _c(p.ak), _c(p.bk),
                     _c(p.bn), _c(p.n)])
    b.ret_void()
    b.position_at_end(blocked)


def _sub_body(b, module, et, tag, blk, p, ap_elems, a, bmat, c, mlen, nlen, scratch, kcb):
    pack_a = _pack_fn(module, et, tag, blk.mr, p.am, p.ak)
    # A stored transposed (contiguous along M, e.g. h.T @ g in a gradient): pack the
    # whole block a k-row at a time; panel by panel, every k step would land in the
    # same L1 set (rows 4 KB apart) and thrash.
    pack_a_rows = _pack_rows_fn(module, et, tag, blk.mr, p.ak) if p.am == 1 else None
    pack_b = (_pack_rows_fn(module, et, tag, blk.nr, p.bk) if p.bn == 1 else
              _pack_fn(module, et, tag, blk.nr, p.bn, p.bk))
    micro = _micro_fn(module, et, tag, blk, packed=True)
    macro = _macro_fn(module, et, tag, blk)
    direct = _direct_a(p)
    null = ir.Constant(U.PTR, None)
    # full row panels read A in place (this copy of the micro-kernel has A's strides
    # built in); only a last partial one is packed
    micro_a = _micro_fn(module, et, tag, blk, packed=False, strides=(p.am, p.ak)) \
        if direct else null
    ap = scratch
    bp = _gep(b, scratch, _c(ap_elems), et)
    mcb = 1 << 40 if direct else blk.mc        # read in place, A needs no M blocks
    with _loop(b, 0, mlen, mcb, "ic") as ic:
        mc = _min(b, _c(mcb), b.sub(mlen, ic))
        with _loop(b, 0, p.k, kcb, "pc") as pc:
            kc = _min(b, kcb, b.sub(_c(p.k), pc))
            first = b.icmp_signed("==", pc, _c(0))
            a_block = _gep(b, a, b.add(b.mul(ic, _c(p.am)), b.mul(pc, _c(p.ak))), et)
            if direct:
                tail = b.srem(mc, _c(blk.mr))
                with b.if_then(b.icmp_signed("!=", tail, _c(0))):
                    row = b.sub(mc, tail)
                    pack_a(b, ap, _gep(b, a_block, b.mul(row, _c(p.am)), et), tail, kc)
            elif pack_a_rows is not None:
                pack_a_rows(b, ap, a_block, mc, kc)
            else:
                _pack_panels(b, pack_a, ap, a, ic, mc, blk.mr, p.am, p.ak, pc, kc, et)
            with _loop(b, 0, nlen, blk.nc, "jc") as jc:
                nc = _min(b, _c(blk.nc), b.sub(nlen, jc))
                if p.bn == 1:
                    src = _gep(b, bmat, b.add(jc, b.mul(pc, _c(p.bk))), et)
                    pack_b(b, bp, src, nc, kc)
                else:
                    _pack_panels(b, pack_b, bp, bmat, jc, nc, blk.nr, p.bn, p.bk, pc, kc, et)
                cblock = _gep(b, c, b.add(b.mul(ic, _c(p.n)), jc), et)
                b.call(macro, [kc, mc, nc, ap, bp, cblock, _c(p.n), first, a_block,
                               _c(p.am), _c(p.ak), micro, micro_a])


_MICRO_TYPE = ir.FunctionType(U.VOID, [U.I64, U.PTR, U.PTR, U.PTR, U.I64, U.I64, U.I1,
                                       U.I64, U.I64, U.I64])


def _macro_fn(module, et, tag, blk: Blocking):
    """macro(kc, mc, nc, ap, bp, c, ldc, first, a, am, ak, micro, micro_a): C[:mc, :nc]
    (+)= A B for one packed B block (bp, kc rows) and its A rows, micro-kernel tile
    by tile (the loops around each micro-kernel call). A is packed at ap (MR-row
    panels), or, with micro_a (a micro-kernel with A's strides built in, not null),
    read in place at a (rows am, k ak apart) but for a last partial panel packed at
    ap. The micro-kernels are arguments: a routine, compiled once per host, while
    the loops around it (sub) run once per block and are left unoptimised."""
    name = f"jx.gemm.macro.{tag}.{blk.mr}x{blk.nr}"
    fn = _fn(module, name, U.VOID, [U.I64, U.I64, U.I64, U.PTR, U.PTR, U.PTR, U.I64, U.I1,
                                    U.PTR, U.I64, U.I64, U.PTR, U.PTR], shared=True)
    if fn is None:
        return module.globals[name]
    kc, mc, nc, ap, bp, c, ldc, first, a, am, ak, micro, micro_a = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    mr, nr = _c(blk.mr), _c(blk.nr)
    direct = b.icmp_unsigned("!=", micro_a, ir.Constant(U.PTR, None))
    with _loop(b, 0, mc, blk.mr, "ir") as ir_:
        rows = _min(b, mr, b.sub(mc, ir_))
        in_place = b.and_(direct, b.icmp_signed("==", rows, mr))
        packed = b.select(direct, ap, _panel_at(b, ap, ir_, blk.mr, kc, et))
        apan = b.select(in_place, _gep(b, a, b.mul(ir_, am), et), packed)
        crow = _gep(b, c, b.mul(ir_, ldc), et)
        with _loop(b, 0, nc, blk.nr, "jr") as jr:
            args = [kc, apan, _panel_at(b, bp, jr, blk.nr, kc, et), _gep(b, crow, jr, et),
                    rows, _min(b, nr, b.sub(nc, jr)), first, ldc]
            with b.if_else(in_place) as (then, other):
                with then:
                    b.call(U.Callee(micro_a, _MICRO_TYPE), args + [am, ak])
                with other:
                    b.call(U.Callee(micro, _MICRO_TYPE), args + [_c(0), _c(0)])
    b.ret_void()
    return fn


def _narrow_rows(p: Plan, blk: Blocking) -> int:
    """Rows per tile of the narrow kernel, or 0 when the blocked path fits better:
    for C a few columns wide (a 10-class output layer's gradient h.T @ dy) vectors
    along N would be mostly empty lanes, while A stored transposed (contiguous
    along M) gives full vectors along M with nothing to pack."""
    if NARROW is False or any(U.is_symbolic(v) for v in (p.m, p.n, p.k, p.ak, p.bk, p.bn)):
        return 0          # (its function has the sizes built in)
    if p.am != 1 or p.m < blk.vw or p.n > blk.vw or p.k < 2:
        return 0
    vectors = 2 if p.n <= 12 else 1             # p.n x vectors accumulators, of 32
    return vectors * blk.vw


def _direct_a(p: Plan) -> bool:
    """Read full MR-row panels of A in place instead of packing them, when A's rows
    are contiguous along K: packing them is a transposing copy that costs about as
    much as a micro-kernel call when few column tiles reuse each panel, and tasks
    that share A would each pack it again. (Column-major A packs by cheap
    contiguous copies, and read in place its k steps may all hit one L1 set.)"""
    if U.is_symbolic(p.ak):
        return False            # (the in-place micro-kernel has A's k stride built in)
    if DIRECT_A is not None:
        return DIRECT_A
    return p.ak == 1 and p.am != 1 and not _rows_collide(hinted(p.am) * p.dtype.itemsize)


def _rows_collide(row_bytes: int, rows: int = 12) -> bool:
    """Would `rows` rows this far apart crowd one L1 set? Rows 4 KiB apart (a
    1024-float K) all map to one set of a 64-set L1: the micro-kernel's loads of
    A then evict each other every few k steps (packed, 87 -> 97 GFLOP/s for
    128x1024x1024 on one Zen 4 core). More rows in one set than its ways less two
    (B's panel and C stream through L1 too) counts: attention's heads, rows 2 KiB
    apart, put 6 in a set of 8 ways and run faster in place (10.7 -> 9.3 ms)."""
    sets, ways = target.l1_geometry()
    per_set: dict = {}
    for i in range(rows):
        s = (i * row_bytes // 64) % sets
        per_set[s] = per_set.get(s, 0) + 1
    return max(per_set.values()) > ways - 2


# ------------------------------------------------------------------ the kernel
def _split(p: Plan, blk: Blocking):
    """(split M?, granule, granules per matrix). Tasks split N where they can: with
    A read in place, column ranges share nothing, so nothing is packed twice; row
    ranges would each pack all of B."""
    gm, gn = -(-p.m // blk.mr), -(-p.n // blk.nr)
    hgm, hgn = hinted(gm), hinted(gn)
    by_m = hinted(p.nbatch) * hgn < 8 and hgm > hgn if SPLIT is None else SPLIT == "m"
    if SPLIT is None and _deep(p):
        # each task packs the whole shared operand (K x N or M x K), and K is long: the
        # split into fewer tasks packs it fewer times, as long as every core gets one
        # (a weight gradient's 64 x 100352 x 64: 10.7 -> 4.3 ms on 2 Zen 5 cores)
        few, many = sorted((hgm, hgn))
        if hinted(p.nbatch) == 1 and few >= cpus_usable():
            by_m = hgm == few
    return (True, blk.mr, gm) if by_m else (False, blk.nr, gn)


def _deep(p: Plan) -> bool:
    """K much longer than M and N: packing the shared operand is most of a task."""
    m, n, k = hinted(p.m), hinted(p.n), hinted(p.k)
    return k >= 16 * max(m, n)


def emit(ctx, kernel, p: Plan) -> None:
    """Emit the GEMM of plan p into the kernel function at ctx.b."""
    b = ctx.b
    mod = ctx.module.module
    # the kernel only drives: sizes, the thread split and calls; optimising it (a
    # third more IR with symbolic sizes) cost compile time and gained nothing
    U.plain(b.function)
    lhs, rhs = kernel.root.inputs
    (out,) = kernel.root.outputs
    et = U.storage_type(p.dtype)
    item = p.dtype.itemsize
    epi = kernel.epilogue              # see epilogue.py: C is its output, updated in place
    cp = ctx.ptr(epi.outputs[0] if epi is not None else out)
    symbols = ctx.module.symbols
    if out.aval.size == 0:
        return
    memset = mod.declare_intrinsic("llvm.memset", [U.PTR, U.I64])

    def zero_c():
        b.call(memset, [cp, ir.Constant(U.I8, 0), _c(out.aval.size * item),
                        ir.Constant(U.I1, 0)])
    if p.k == 0:                         # empty sum
        zero_c()
        return
    blk = blocking(p.dtype, hinted(p.n), target.of_module(mod))
    if U.is_symbolic(p.k):
        # K known at run time: an empty sum there is zeros (epilogue or not: C is its
        # output, updated in place), else equal K blocks of at most KC, as below
        k = _c(p.k)
        with b.if_then(b.icmp_signed("<=", k, _c(0)), likely=False):
            zero_c()
        nk = b.sdiv(b.add(k, _c(blk.kc - 1)), _c(blk.kc))
        nk = b.select(b.icmp_signed("<", nk, _c(1)), _c(1), nk)
        kcb = b.sdiv(b.add(k, b.sub(nk, _c(1))), nk)
    else:
        nk = -(-p.k // blk.kc)               # equal K blocks: no short last block
        blk = dataclasses.replace(blk, kc=-(-p.k // nk))
        kcb = _c(blk.kc)
    tag = f"{_vname(et)}.v{blk.vw}"
    rows = _narrow_rows(p, blk)
    if rows:             # vectors along M, nothing packed (see _narrow_fn)
        by_m, gran, per = True, rows, -(-p.m // rows)
        slot = 64
        sub = _narrow_fn(mod, et, tag, blk.vw, rows // blk.vw, p)
    else:
        by_m, gran, per = _split(p, blk)
        # the packing slots: sized for the largest blocks a symbolic size can take
        kc = blk.kc if U.is_symbolic(p.k) else min(blk.kc, p.k)
        arows = blk.mr if _direct_a(p) else blk.mc if U.is_symbolic(p.m) else \
            -(-min(blk.mc, p.m) // blk.mr) * blk.mr
        ap_elems = -(-(arows * kc + arows // blk.mr * _pad(et)) * item // 64) * 64 // item
        bcols = blk.nc if U.is_symbolic(p.n) else min(blk.nc, -(-p.n // blk.nr) * blk.nr)
        bp_elems = bcols * kc + bcols // blk.nr * _pad(et)
        slot = -(-(ap_elems + bp_elems) * item // 64) * 64
        sub = _sub_fn(mod, et, tag, blk, p, ap_elems, symbols)
    units = p.nbatch * per
    work = p.nbatch * p.m * p.n * p.k
    symbolic = U.is_symbolic(units) or U.is_symbolic(work)
    if symbolic:        # the thread split, at run time: max(1, min(units, work / min))
        mt = _min(b, _c(units), b.sdiv(_c(work), _c(tuning.value("gemm_min_work"))))
        max_threads = b.select(b.icmp_signed("<", mt, _c(1)), _c(1), mt)
    else:
        max_threads = max(1, min(units, work // tuning.value("gemm_min_work")))

    extra = [v for v in epi.inputs if v is not out] if epi is not None else []
    tail = _epilogue_fn(mod, b.function.name, epi, kernel.root, extra, ctx.consts, p,
                        symbols) if epi is not None else None
    pool = ctx.module._parallel_for
    threaded = pool is not None and (symbolic or max_threads > 1)
    body = _body_fn(mod, b.function.name, et, p, sub, by_m, gran, per, units, slot, tail,
                    indexed=threaded, symbols=symbols, kcb=kcb)

    shares_packing = not rows and (by_m or not _direct_a(p))
    per_thread = TASKS_PER_THREAD_PACKING if shares_packing else TASKS_PER_THREAD
    # tasks: per_thread per thread of the pool (at most max_threads threads),
    # taken dynamically; scratch: one slot per thread, not per task
    if threaded:
        nthreads = _declare(mod, "jx_get_num_threads", U.I32, [])
        pool_threads = b.sext(b.call(nthreads, []), U.I64)
        threads = _min(b, pool_threads, _c(max_threads) if not symbolic else max_threads)
        tasks = b.select(b.icmp_signed(">", threads, _c(1)),
                         _min(b, b.mul(threads, _c(per_thread)), _c(units)), _c(1))
        # any thread of the pool may take a task, not only `threads` of them
        slots = _min(b, pool_threads, tasks)
    else:
        tasks = slots = _c(1)
    malloc = _declare(mod, "malloc", U.PTR, [U.I64])
    free = _declare(mod, "free", U.VOID, [U.PTR])
    mem = b.call(malloc, [b.add(b.mul(slots, _c(slot)), _c(64))])
    ok = b.function.append_basic_block("gemm.alloc.ok")
    b.cbranch(b.icmp_unsigned("==", mem, ir.Constant(U.PTR, None)), ctx.fail_block, ok)
    b.position_at_end(ok)
    base = b.inttoptr(b.and_(b.add(b.ptrtoint(mem, U.I64), _c(63)), _c(-64)), U.PTR)
    entry = b.function.entry_basic_block
    with b.goto_block(entry):        # a static alloca: A, B, C, scratch, tasks, epilogue's
        if entry.instructions:
            b.position_before(entry.instructions[0])
        args = b.alloca(U.PTR, _c(_CTX + len(extra) + (1 if symbols else 0)), name="gemm.ctx")
    for i, v in enumerate([ctx.ptr(lhs), ctx.ptr(rhs), cp, base, b.inttoptr(tasks, U.PTR),
                           b.inttoptr(slots, U.PTR), b.inttoptr(kcb, U.PTR)] +
                          [ctx.ptr(v) for v in extra] +
                          ([U.current_dims_ptr()] if symbols else [])):
        b.store(v, b.gep(args, [_c(i)], source_etype=U.PTR))
    run_tasks(b, pool, body, args, tasks, threaded, "gemm")
    b.call(free, [mem])


_ROWS_ARGS = [U.PTR, U.PTR, U.PTR] + [U.I64] * 8


def _rows_axpy_fn(module, et):
    """rows(a, b, c, rows, width, k, am, ak, bk, bn, ldc): C[:rows, :width] = A B
    for B contiguous along N: each row of C zeroed, then C[m, :] += A[m, k] B[k, :]
    for each k (axpy). A routine: one per host, whatever the product."""
    name = f"jx.gemm.rowsaxpy.{_vname(et)}"
    fn = _fn(module, name, U.VOID, _ROWS_ARGS, shared=True)
    if fn is None:
        return module.globals[name]
    a, bm, c, rows, width, k, am, ak, bk, _, ldc = fn.args
    axpy = _axpy_fn(fn.module, et)          # inside the routine's own module
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    memset = fn.module.declare_intrinsic("llvm.memset", [U.PTR, U.I64])
    with _loop(b, 0, rows, 1, "m") as m:
        crow = _gep(b, c, b.mul(m, ldc), et)
        b.call(memset, [crow, ir.Constant(U.I8, 0), b.mul(width, _c(_size(et))),
                        ir.Constant(U.I1, 0)])
        arow = b.mul(m, am)
        with _loop(b, 0, k, 1, "k") as kk:
            av = b.load(_gep(b, a, b.add(arow, b.mul(kk, ak)), et), typ=et)
            b.call(axpy, [crow, _gep(b, bm, b.mul(kk, bk), et), av, width])
    b.ret_void()
    return fn


def _rows_dot_fn(module, et, vw):
    """rows(...) as _rows_axpy_fn's for B stored transposed (contiguous along K,
    A too): C[m, n] = dot(A[m, :], B[:, n])."""
    name = f"jx.gemm.rowsdot.{_vname(et)}.v{vw}"
    fn = _fn(module, name, U.VOID, _ROWS_ARGS, shared=True)
    if fn is None:
        return module.globals[name]
    a, bm, c, rows, width, k, am, _, _, bn, ldc = fn.args
    dot = _dot_fn(fn.module, et, vw)         # inside the routine's own module
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with _loop(b, 0, rows, 1, "m") as m:
        arow = _gep(b, a, b.mul(m, am), et)
        crow = _gep(b, c, b.mul(m, ldc), et)
        with _loop(b, 0, width, 1, "n") as n:
            b.store(b.call(dot, [arow, _gep(b, bm, b.mul(n, bn), et), k]), _gep(b, crow, n, et))
    b.ret_void()
    return fn


def _axpy_fn(module, et):
    """axpy(c, b, a, n): c[i] += a * b[i], i < n (c and b apart: vectorised)."""
    name = f"jx.gemm.axpy.{_vname(et)}"
    fn = _fn(module, name, U.VOID, [U.PTR, U.PTR, et, U.I64])
    if fn is None:
        return module.globals[name]
    c, bv, av, n = fn.args
    c.add_attribute("noalias")
    bv.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with _loop(b, 0, n, 1, "i") as i:
        pc = _gep(b, c, i, et)
        b.store(b.fadd(b.load(pc, typ=et), b.fmul(av, b.load(_gep(b, bv, i, et), typ=et))), pc)
    b.ret_void()
    return fn


def _dot_fn(module, et, vw):
    """dot(a, b, n) -> sum of a[i] * b[i], i < n: DOT_ACCUMULATORS vectors of vw
    lanes (independent FMAs in flight), then one vector at a time, combined
    pairwise, then the last n mod vw in order."""
    name = f"jx.gemm.dot.{_vname(et)}.v{vw}"
    fn = _fn(module, name, et, [U.PTR, U.PTR, U.I64])
    if fn is None:
        return module.globals[name]
    a, bv, n = fn.args
    vt = ir.VectorType(et, vw)
    fma = _declare(module, f"llvm.fma.v{vw}{_vname(et)}", vt, [vt] * 3)
    zero = ir.Constant(vt, [ir.Constant(et, 0.0)] * vw)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    accs = [U.alloca_entry(b, vt, "acc") for _ in range(DOT_ACCUMULATORS)]
    for acc in accs:
        b.store(zero, acc)
    step = vw * DOT_ACCUMULATORS

    def vload(p, i):
        return b.load(_gep(b, p, i, et), typ=vt, align=_size(et))

    full = b.mul(b.sdiv(n, _c(step)), _c(step))
    with _loop(b, 0, full, step, "i") as i:
        for j, acc in enumerate(accs):
            at = b.add(i, _c(j * vw))
            b.store(b.call(fma, [vload(a, at), vload(bv, at), b.load(acc, typ=vt)]), acc)
    vecs = b.mul(b.sdiv(n, _c(vw)), _c(vw))
    with _loop(b, full, vecs, vw, "v") as i:
        b.store(b.call(fma, [vload(a, i), vload(bv, i), b.load(accs[0], typ=vt)]), accs[0])
    total = b.load(accs[0], typ=vt)
    for acc in accs[1:]:
        total = b.fadd(total, b.load(acc, typ=vt))
    k = vw
    while k > 1:                  # pairwise: the upper half onto the lower
        k //= 2
        lo_half = b.shuffle_vector(total, total, ir.Constant(ir.VectorType(U.I32, k),
                                                             list(range(k))))
        hi_half = b.shuffle_vector(total, total, ir.Constant(ir.VectorType(U.I32, k),
                                                             list(range(k, 2 * k))))
        total = b.fadd(lo_half, hi_half)
    out = U.alloca_entry(b, et, "sum")
    b.store(b.extract_element(total, ir.Constant(U.I32, 0)), out)
    with _loop(b, vecs, n, 1, "r") as i:
        prod = b.fmul(b.load(_gep(b, a, i, et), typ=et), b.load(_gep(b, bv, i, et), typ=et))
        b.store(b.fadd(b.load(out, typ=et), prod), out)
    b.ret(b.load(out, typ=et))
    return fn


DOT_ACCUMULATORS = 4      # as fused.ACCUMULATORS: an FMA's latency over its throughput


def _epilogue_fn(module, kname, epi, dot, extra, consts, p: Plan, symbols=()):
    """tail(b, args, c, bi, r0, r1, c0, c1): the epilogue kernel `epi` over rows
    r0..r1 and columns c0..c1 of matrix bi of C, reading the product of `dot` from
    C and writing C; the buffers of `extra`, its other inputs, are args[_CTX:]. The
    loops live in their own function whose pointers are noalias (outputs never
    overlap inputs), or LLVM would not vectorise them."""
    (res,) = epi.outputs
    (prod,) = dot.outputs
    (lc, _), (lb, _) = dot.params["dimension_numbers"]
    nb, nlf = len(lb), dot.inputs[0].aval.ndim - len(lc) - len(lb)
    shape = res.aval.shape
    bshape, mshape, nshape = shape[:nb], shape[nb:nb + nlf], shape[nb + nlf:]
    fn, b, c, (bi, r0, r1, c0, c1), em = epilogue_function(module, kname, epi, prod, extra,
                                                           consts, 5, symbols)
    with U.dims_scope(U.dims_from(b, fn.args[-1], symbols) if symbols else None):
        bidx = U.delinear(b, bi, bshape)
        with _loop(b, r0, r1, 1, "er") as r:
            midx = U.delinear(b, r, mshape)
            with _loop(b, c0, c1, 1, "ec") as col:
                idx = bidx + midx + U.delinear(b, col, nshape)
                v = em.value(res, idx)
                # the address the product was read from, computed the same way: LLVM
                # must see the in-place update as one location to vectorise it
                U.store(b, v, c, U.linear(b, idx, shape), res.aval.dtype)
    b.ret_void()
    fn = U.same_function(fn)

    def tail(b, args, c, bi, r0, r1, c0, c1):
        ptrs = [b.load(b.gep(args, [_c(_CTX + i)], source_etype=U.PTR), typ=U.PTR)
                for i in range(len(extra))]
        b.call(fn, [c, *ptrs, bi, r0, r1, c0, c1] +
               ([U.current_dims_ptr()] if symbols else []))
    tail.extra = extra
    return tail


# The GEMM's context array: A, B, C, scratch, tasks, scratch slots, KC, then the
# epilogue's other inputs, then (symbolic sizes) the dims array.
_CTX = 7


def _body_fn(module, kname, et, p: Plan, sub, by_m, gran, per, units, slot, tail=None,
             indexed=False, symbols=(), kcb=None):
    """body(ctx, lo, hi): tasks w in lo..hi-1 each run their contiguous share of
    the batch's M (or N) granules (then `tail`, an epilogue, over the same share),
    packing into the scratch slot of the pool thread running them (indexed), or
    slot 0. A thread whose index has no slot (the pool grew since the kernel
    counted its threads) allocates its own."""
    fn = ir.Function(module, ir.FunctionType(U.VOID, [U.PTR, U.I64, U.I64]),
                     f"{kname}.gemm")
    fn.linkage = "internal"
    U.plain(fn)         # a few tasks' calls of sub (and of the epilogue)
    args, lo, hi = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    a, bm, c, scratch, tasks, slots, kcb = (
        b.load(b.gep(args, [_c(i)], source_etype=U.PTR), typ=U.PTR) for i in range(_CTX))
    tasks, slots, kcb = (b.ptrtoint(v, U.I64) for v in (tasks, slots, kcb))
    dims = None
    if symbols:       # last in ctx, after the epilogue's inputs (emit)
        n_extra = len(tail.extra) if tail is not None else 0
        dims = b.load(b.gep(args, [_c(_CTX + n_extra)], source_etype=U.PTR), typ=U.PTR)
        scope = U.dims_scope(U.dims_from(b, dims, symbols))
    else:
        scope = U.dims_scope(None)
    with scope:
        _body_tasks(b, fn, module, et, p, sub, by_m, gran, per, units, slot, tail, indexed,
                    args, lo, hi, a, bm, c, scratch, tasks, slots, kcb, dims)
    b.ret_void()
    return fn


def _body_tasks(b, fn, module, et, p, sub, by_m, gran, per, units, slot, tail, indexed,
                args, lo, hi, a, bm, c, scratch, tasks, slots, kcb, dims):
    mine, own = worker_scratch(b, module, scratch, slots, slot, indexed)
    with _loop(b, lo, hi, 1, "w") as w:
        u0 = b.sdiv(b.mul(w, _c(units)), tasks)
        u1 = b.sdiv(b.mul(b.add(w, _c(1)), _c(units)), tasks)
        pre = b.block
        head = fn.append_basic_block("u.head")
        step = fn.append_basic_block("u.step")
        end = fn.append_basic_block("u.end")
        b.branch(head)
        b.position_at_end(head)
        u = b.phi(U.I64, name="u")
        u.add_incoming(u0, pre)
        b.cbranch(b.icmp_signed("<", u, u1), step, end)
        b.position_at_end(step)
        bi = b.sdiv(u, _c(per))
        s0 = b.srem(u, _c(per))
        s1 = _min(b, _c(per), b.add(s0, b.sub(u1, u)))      # to the end of this matrix
        aoff, boff = _c(0), _c(0)
        for (_, sa, sb), q in zip(p.batch, _delinear(b, bi, [s for s, _, _ in p.batch])):
            aoff = b.add(aoff, b.mul(q, _c(sa)))
            boff = b.add(boff, b.mul(q, _c(sb)))
        coff = b.mul(bi, _c(p.m * p.n))
        full = p.m if by_m else p.n
        lo_ = b.mul(s0, _c(gran))
        len_ = b.sub(_min(b, b.mul(s1, _c(gran)), _c(full)), lo_)
        if by_m:
            aoff = b.add(aoff, b.mul(lo_, _c(p.am)))
            coff = b.add(coff, b.mul(lo_, _c(p.n)))
            sizes = [len_, _c(p.n)]
        else:
            boff = b.add(boff, b.mul(lo_, _c(p.bn)))
            coff = b.add(coff, lo_)
            sizes = [_c(p.m), len_]
        b.call(sub, [_gep(b, a, aoff, et), _gep(b, bm, boff, et), _gep(b, c, coff, et),
                     *sizes, mine, kcb] + ([dims] if dims is not None else []))
        if tail is not None:            # this share of C is done and still in cache
            hi_ = b.add(lo_, len_)
            if by_m:
                tail(b, args, c, bi, lo_, hi_, _c(0), _c(p.n))
            else:
                tail(b, args, c, bi, _c(0), _c(p.m), lo_, hi_)
        u.add_incoming(b.add(u, b.sub(s1, s0)), b.block)
        b.branch(head)
        b.position_at_end(end)
    if indexed:
        b.call(_declare(module, "free", U.VOID, [U.PTR]), [own])


def _delinear(b, flat, sizes):
    """Row-major indices of flat in sizes."""
    out, strides, stride = [], [], 1
    for n in reversed(sizes):
        strides.append(stride)
        stride = stride * n
    for n, stride in zip(sizes, reversed(strides)):
        q = b.sdiv(flat, _c(stride)) if stride != 1 else flat
        out.append(b.srem(q, _c(n)) if out else q)
    return out
