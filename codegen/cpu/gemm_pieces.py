"""The functions a GEMM kernel calls, emitted once per module and shared by all
its products (gemm.py plans and drives them): panel packing, the blocked
micro-kernel (an MR x NR register tile, A packed or read in place) and the narrow
kernel (vectors along M for outputs a few columns wide). Strides are arguments,
so one function serves every product packed the same way."""
from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from jx.dims import hinted

from . import irutil as U
from . import routines

PREFETCH_C = True        # prefetch each C tile before its k loop


# The two descriptions the pieces are emitted for (gemm.py makes them).
@dataclass(frozen=True)
class Blocking:
    vw: int          # vector lanes
    mr: int          # micro-tile rows (broadcast elements of A)
    nv: int          # micro-tile vectors per row: NR = nv * vw
    kc: int
    mc: int
    nc: int

    @property
    def nr(self) -> int:
        return self.nv * self.vw


@dataclass(frozen=True)
class Plan:
    """A dot_general as a batch of strided 2-D GEMMs."""
    dtype: np.dtype
    batch: tuple          # ((size, lhs stride, rhs stride), ...) in output order
    m: int
    n: int
    k: int
    am: int               # element strides of A[m, k] and B[k, n]
    ak: int
    bk: int
    bn: int

    @property
    def nbatch(self) -> int:
        return math.prod(s for s, _, _ in self.batch)      # (ints or Dims)


# ------------------------------------------------------------------ IR helpers
def _fn(module, name, ret, args, shared: bool = False):
    """The function to fill, or None when the module already has it: internal, or
    with `shared` a routine (routines.py; its body a function of its name and the
    target alone, compiled once per host), whose intrinsics go into fn.module."""
    ftype = ir.FunctionType(ret, args)
    if shared:
        fn = routines.define(module, name, ftype)
    elif name in module.globals:
        return None
    else:
        fn = ir.Function(module, ftype, name)
        fn.linkage = "internal"
    if fn is not None:
        fn.attributes.add("noinline")  # called per panel or tile: calls are cheap; keeps
    return fn                          # the pieces apart in profiles


def _declare(module, name, ret, args):
    return module.globals.get(name) or ir.Function(module, ir.FunctionType(ret, args), name)


def _gep(b, ptr, off, typ):
    return b.gep(ptr, [off], source_etype=typ, inbounds=True)


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _c(v) -> ir.Constant:
    return U.i64(v)


def _loop(b, lo, hi, step, name):
    """for (i = lo; i < hi; i += step), bounds run-time or constant."""
    return U.for_step(b, lo, hi, step, name)


# ------------------------------------------------------------------ pieces
def _pack_fn(module, et, tag, r, sr, sk):
    """pack(dst, src, rows, kc, sr, sk): dst[k * r + i] = src[i * sr + k * sk] for
    i < rows, zero for rows <= i < r. Returns call(b, dst, src, rows, kc). The
    strides are arguments; only the loop structure they select is in the name, so
    one function serves every operand packed the same way."""
    hsr, hsk = hinted(sr), hinted(sk)      # (symbolic strides: a structure at the hint)
    transposing = hsk == 1 and hsr != 1 and r % 8 == 0
    # k outer over groups of g rows (all r when a k step reads contiguous elements):
    # a few source rows at a time, since rows at power-of-two strides share L1 sets
    g = r if abs(hsr) <= abs(hsk) else math.gcd(r, 8)
    name = f"jx.gemm.pack.{tag}.{r}.{'t' if transposing else 'g'}{g}"
    fn = _fn(module, name, U.VOID, [U.PTR, U.PTR, U.I64, U.I64, U.I64, U.I64], shared=True)

    def call(b, dst, src, rows, kc):
        return b.call(module.globals[name], [dst, src, rows, kc, _c(sr), _c(sk)])
    if fn is None:
        return call
    dst, src, rows, kc, sr_, sk_ = fn.args
    for a in (dst, src):
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    full = fn.append_basic_block("full")
    edge = fn.append_basic_block("edge")
    b.cbranch(b.icmp_signed("==", rows, _c(r)), full, edge)
    b.position_at_end(full)
    k_lo = _c(0)
    if transposing:                     # rows along k: 8 x 8 in-register transposes
        k_lo = b.mul(b.sdiv(kc, _c(8)), _c(8))
        rowp = [_gep(b, src, b.mul(sr_, _c(i)), et) for i in range(r)]
        with _loop(b, 0, k_lo, 8, "k8") as k0:
            for i0 in range(0, r, 8):
                vt = ir.VectorType(et, 8)
                block = [b.load(_gep(b, rowp[i0 + i], k0, et), typ=vt,
                                align=_size(et)) for i in range(8)]
                for kk, v in enumerate(_transpose8(b, block)):
                    d = b.add(b.mul(b.add(k0, _c(kk)), _c(r)), _c(i0))
                    b.store(v, _gep(b, dst, d, et), align=_size(et))
    with _loop(b, 0, r, g, "i0") as i0:
        s0 = b.mul(i0, sr_)
        with _loop(b, k_lo, kc, 1, "k") as k:
            s = b.add(s0, b.mul(k, sk_))
            d = b.add(b.mul(k, _c(r)), i0)
            for i in range(g):
                v = b.load(_gep(b, src, b.add(s, b.mul(sr_, _c(i))), et), typ=et)
                b.store(v, _gep(b, dst, b.add(d, _c(i)), et))
    b.ret_void()
    b.position_at_end(edge)          # zero the panel, then copy the rows there are
    memset = fn.module.declare_intrinsic("llvm.memset", [U.PTR, U.I64])
    nbytes = b.mul(kc, _c(r * _size(et)))
    b.call(memset, [dst, ir.Constant(U.I8, 0), nbytes, ir.Constant(U.I1, 0)])
    with _loop(b, 0, rows, 1, "i") as i:
        with _loop(b, 0, kc, 1, "k") as k:
            v = b.load(_gep(b, src, b.add(b.mul(i, sr_), b.mul(k, sk_)), et), typ=et)
            b.store(v, _gep(b, dst, b.add(b.mul(k, _c(r)), i), et))
    b.ret_void()
    return call


def _pack_rows_fn(module, et, tag, r, sk):
    """pack_rows(dst, src, cols, kc): the pack of all ceil(cols / r) panels of a
    block whose rows are contiguous (sr == 1), a row at a time: each k reads one
    contiguous row segment, which the prefetchers follow (panel by panel, every k
    would touch another page). A partial last panel goes through a masked load."""
    name = f"jx.gemm.packrows.{tag}.{r}"
    fn = _fn(module, name, U.VOID, [U.PTR, U.PTR, U.I64, U.I64, U.I64], shared=True)

    def call(b, dst, src, cols, kc):
        return b.call(module.globals[name], [dst, src, cols, kc, _c(sk)])
    if fn is None:
        return call
    dst, src, cols, kc, sk_ = fn.args
    for a in (dst, src):
        a.add_attribute("noalias")
    vt = ir.VectorType(et, r)
    mt = ir.VectorType(U.I1, r)
    mload = _declare(fn.module, f"llvm.masked.load.v{r}{_vname(et)}.p0", vt,
                     [U.PTR, U.I32, mt, vt])
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    full = b.sdiv(cols, _c(r))
    tail = b.srem(cols, _c(r))
    panel = b.add(b.mul(kc, _c(r)), _c(_pad(et)))
    it = ir.VectorType(U.I64, r)
    mask = b.icmp_signed("<", ir.Constant(it, [_c(j) for j in range(r)]), _splat(b, tail, it))
    zero = ir.Constant(vt, [ir.Constant(et, 0.0)] * r)
    al = _size(et)
    # k in blocks of KB rows, panel by panel inside a block: each panel then gets
    # KB * r contiguous elements (whole cache lines) while the block's KB source
    # rows stay in L1; a k row at a time across all panels wrote one piece of every
    # panel's line per step and fetched each line again for the next piece.
    with _loop(b, 0, kc, _PACK_KB, "k0") as k0:
        k1 = _min(b, b.add(k0, _c(_PACK_KB)), kc)
        with _loop(b, 0, full, 1, "p") as p:
            with _loop(b, k0, k1, 1, "k") as k:
                row = _gep(b, src, b.mul(k, sk_), et)
                out = _gep(b, dst, b.mul(k, _c(r)), et)
                v = b.load(_gep(b, row, b.mul(p, _c(r)), et), typ=vt, align=al)
                b.store(v, _gep(b, out, b.mul(p, panel), et), align=al)
        with b.if_then(b.icmp_signed("!=", tail, _c(0))):
            with _loop(b, k0, k1, 1, "kt") as k:
                row = _gep(b, src, b.mul(k, sk_), et)
                out = _gep(b, dst, b.mul(k, _c(r)), et)
                v = b.call(mload, [b.gep(row, [b.mul(full, _c(r))], source_etype=et),
                                   ir.Constant(U.I32, al), mask, zero])
                b.store(v, _gep(b, out, b.mul(full, panel), et), align=al)
    b.ret_void()
    return call


_PACK_KB = 8


def _pad(et) -> int:
    """Elements between consecutive packed panels: one cache line, so panels are
    never a multiple of 4 KiB apart (a transposed A packed a k-row at a time then
    stored every k step into one L1 set: 55 us for 512 KB instead of ~10)."""
    return 64 // _size(et)


def _panel_at(b, base, idx, step, kc, et):
    """The panel holding rows (or columns) idx..idx+step of a packed block."""
    return _gep(b, base, b.add(b.mul(idx, kc), b.mul(b.sdiv(idx, _c(step)), _c(_pad(et)))),
                et)


def _transpose8(b, rows):
    """The columns of an 8 x 8 block given as 8 row vectors (unpack, shuffle and
    128-bit permute stages, as x86 does it)."""
    def shuf(x, y, mask):
        return b.shuffle_vector(x, y, ir.Constant(ir.VectorType(U.I32, 8), mask))
    lo, hi = [0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15]
    t = []
    for i in range(0, 8, 2):
        t += [shuf(rows[i], rows[i + 1], lo), shuf(rows[i], rows[i + 1], hi)]
    even, odd = [0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]
    s_ = []
    for q in (0, 4):
        s_ += [shuf(t[q], t[q + 2], even), shuf(t[q], t[q + 2], odd),
               shuf(t[q + 1], t[q + 3], even), shuf(t[q + 1], t[q + 3], odd)]
    first, second = [0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]
    return ([shuf(s_[j], s_[j + 4], first) for j in range(4)]
            + [shuf(s_[j], s_[j + 4], second) for j in range(4)])


def _size(et) -> int:
    return 4 if et == U.F32 else 8


def _splat(b, x, vt):
    v = b.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(U.I32, 0))
    return b.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                            ir.Constant(ir.VectorType(U.I32, vt.count), [0] * vt.count))


def _k_loop(b, nacc: int, zero):
    """Open `for k in [0, kc)` (kc >= 1) carrying nacc accumulators that start at
    zero: returns (k, accumulator phis); _k_loop_end closes it."""
    entry = b.block
    b.branch(b.function.append_basic_block("k"))
    b.position_at_end(b.function.blocks[-1])
    k = b.phi(U.I64, name="k")
    k.add_incoming(_c(0), entry)
    accs = []
    for _ in range(nacc):
        acc = b.phi(zero.type)
        acc.add_incoming(zero, entry)
        accs.append(acc)
    return k, accs


def _k_loop_end(b, k, accs, new, kc, hint=None) -> None:
    """Feed the next values back and leave the loop; `new` then holds the sums.
    `hint`: loop metadata for the latch (irutil.loop_hint)."""
    loop = b.block
    for acc, x in zip(accs, new):
        acc.add_incoming(x, loop)
    k1 = b.add(k, _c(1), flags=["nuw", "nsw"])
    k.add_incoming(k1, loop)
    done = b.function.append_basic_block("k.done")
    br = b.cbranch(b.icmp_signed("<", k1, kc), k.parent, done)
    if hint is not None:
        br.set_metadata("llvm.loop", hint)
    b.position_at_end(done)


def _micro_fn(module, et, tag, blk: Blocking, packed: bool, strides=None):
    """micro(kc, ap, bp, c, mr, nr, first, ldc, sa, sk): C[:mr, :nr] (+)= A Bp over
    kc for C rows ldc apart, where A[i, k] = ap[i + k * MR] (a packed panel) or
    ap[i * sa + k * sk] (A read in place). ldc is an argument: one function serves
    every product of a module (each copy is ~60 KB of IR, and LLVM's time grows
    with it). A read in place is the exception: its strides (sa, sk) = `strides`
    are constants of its own copy, since MR row pointers a run-time stride apart
    need MR general registers, more than x86-64 has left in the k loop; the
    spills made the direct kernel 3x slower in a model with two different
    strides (measured on Zen 4; one stride was constant-propagated anyway)."""
    mr_, nr_, vw, nv = blk.mr, blk.nr, blk.vw, blk.nv
    name = f"jx.gemm.micro.{tag}.{mr_}x{nr_}.{'packed' if packed else 'direct'}"
    if not packed:        # (a symbolic row stride stays an argument: "rt")
        name += f".{'rt' if U.is_symbolic(strides[0]) else strides[0]}.{strides[1]}"
    # packed: one function for every product of a dtype and blocking, a routine;
    # direct: A's strides are constants of the copy (see above), kept in the module
    fn = _fn(module, name, U.VOID, [U.I64, U.PTR, U.PTR, U.PTR, U.I64, U.I64, U.I1,
                                    U.I64, U.I64, U.I64], shared=packed)
    if fn is None:
        return module.globals[name]
    kc, ap, bp, c, mr, nr, first, ldc, sa, sk = fn.args
    if not packed:
        sa = sa if U.is_symbolic(strides[0]) else _c(strides[0])
        sk = _c(strides[1])
    for a in (ap, bp, c):
        a.add_attribute("noalias")
    vt = ir.VectorType(et, vw)
    fma = _declare(fn.module, f"llvm.fma.v{vw}{_vname(et)}", vt, [vt] * 3)
    valign = vw * _size(et)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    crows = [_gep(b, c, b.mul(ldc, _c(i)), et) for i in range(mr_)]
    arows = [ap if i == 0 else _gep(b, ap, _c(i) if packed else b.mul(sa, _c(i)), et)
             for i in range(mr_)]
    if PREFETCH_C:       # the C tile is read after the k loop: start fetching it now
        pf = _declare(fn.module, "llvm.prefetch.p0", U.VOID, [U.PTR, U.I32, U.I32, U.I32])
        for i in range(mr_):
            for v in range(0, nr_ * _size(et), 64):
                ptr = b.gep(crows[i], [_c(v)], source_etype=U.I8)
                b.call(pf, [ptr, ir.Constant(U.I32, 1), ir.Constant(U.I32, 3),
                            ir.Constant(U.I32, 1)])
    zero = ir.Constant(vt, [ir.Constant(et, 0.0)] * vw)
    k, accs = _k_loop(b, mr_ * nv, zero)
    boff = b.mul(k, _c(nr_))
    bv = [b.load(_gep(b, bp, b.add(boff, _c(v * vw)), et), typ=vt, align=valign)
          for v in range(nv)]
    aoff = b.mul(k, _c(mr_) if packed else sk)
    new = []
    for i in range(mr_):
        a = _splat(b, b.load(_gep(b, arows[i], aoff, et), typ=et), vt)
        new += [b.call(fma, [a, bv[v], accs[i * nv + v]]) for v in range(nv)]
    # a direct copy is compiled per program: its k loop is left rolled (unrolled
    # twice, with a remainder copy, it took a third more of LLVM's time, ~8 ms on
    # Zen 4, and ran no faster: 24 FMAs per iteration hide the loop's own cost)
    _k_loop_end(b, k, accs, new, kc, None if packed else U.loop_hint(module, unroll=False))
    full = fn.append_basic_block("full")
    edge = fn.append_basic_block("edge")
    b.cbranch(b.and_(b.icmp_signed("==", mr, _c(mr_)), b.icmp_signed("==", nr, _c(nr_))),
              full, edge)
    b.position_at_end(full)
    store = fn.append_basic_block("store")
    update = fn.append_basic_block("update")
    b.cbranch(first, store, update)
    for blkname, add in ((store, False), (update, True)):
        b.position_at_end(blkname)
        for i in range(mr_):
            for v in range(nv):
                ptr = _gep(b, crows[i], _c(v * vw), et)
                val = new[i * nv + v]
                if add:
                    val = b.fadd(b.load(ptr, typ=vt, align=_size(et)), val)
                b.store(val, ptr, align=_size(et))
        b.ret_void()

    # edge tile: lanes j < nr of rows i < mr, through masked loads and stores; a
    # direct copy (emitted per program) leaves them to the edge routine, through
    # the tile on the stack (those masked loads and stores were a third of its LLVM
    # time; edge tiles are a few of a product's)
    b.position_at_end(edge)
    if packed:
        _store_edge(b, fn.module, et, blk, crows, mr, nr, first, new)
    else:
        tile = U.alloca_entry(b, ir.ArrayType(vt, mr_ * nv), "tile")   # (vectors, row-major)
        tile.align = 64
        for j, val in enumerate(new):
            b.store(val, b.gep(tile, [_c(0), _c(j)], inbounds=True), align=valign)
        b.call(_edge_fn(module, et, tag, blk), [tile, c, mr, nr, first, ldc])
    b.ret_void()
    return fn


def _store_edge(b, module, et, blk: Blocking, crows, mr, nr, first, vals) -> None:
    """vals (MR x NV vectors) into lanes j < nr of C's rows i < mr: stored, or added
    to C's values unless first; crows[i]: row i of the tile in C."""
    vw, nv = blk.vw, blk.nv
    vt = ir.VectorType(et, vw)
    mt = ir.VectorType(U.I1, vw)
    it = ir.VectorType(U.I64, vw)
    mload = _declare(module, f"llvm.masked.load.v{vw}{_vname(et)}.p0", vt,
                     [U.PTR, U.I32, mt, vt])
    mstore = _declare(module, f"llvm.masked.store.v{vw}{_vname(et)}.p0", U.VOID,
                      [vt, U.PTR, U.I32, mt])
    zero = ir.Constant(vt, [ir.Constant(et, 0.0)] * vw)
    nrv = _splat(b, nr, it)
    none = ir.Constant(mt, [ir.Constant(U.I1, 0)] * vw)
    al = ir.Constant(U.I32, _size(et))
    lanes = [b.icmp_signed("<", ir.Constant(it, [_c(v * vw + j) for j in range(vw)]), nrv)
             for v in range(nv)]
    for i in range(blk.mr):
        row = b.icmp_signed("<", _c(i), mr)
        for v in range(nv):
            mask = b.select(row, lanes[v], none)
            ptr = b.gep(crows[i], [_c(v * vw)], source_etype=et)   # may be past the end
            old = b.call(mload, [ptr, al, b.select(first, none, mask), zero])
            val = vals[i * nv + v]
            b.call(mstore, [b.select(first, val, b.fadd(old, val)), ptr, al, mask])


def _edge_fn(module, et, tag, blk: Blocking):
    """edge(tile, c, mr, nr, first, ldc): _store_edge of an MR x NR tile (row-major,
    64-byte aligned) into C, rows ldc apart. A routine: one per host and blocking."""
    mr_, nr_, vw, nv = blk.mr, blk.nr, blk.vw, blk.nv
    name = f"jx.gemm.edge.{tag}.{mr_}x{nr_}"
    fn = _fn(module, name, U.VOID, [U.PTR, U.PTR, U.I64, U.I64, U.I1, U.I64], shared=True)
    if fn is None:
        return module.globals[name]
    tile, c, mr, nr, first, ldc = fn.args
    for a in (tile, c):
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    vt = ir.VectorType(et, vw)
    vals = [b.load(_gep(b, tile, _c(i * nr_ + v * vw), et), typ=vt, align=vw * _size(et))
            for i in range(mr_) for v in range(nv)]
    crows = [_gep(b, c, b.mul(ldc, _c(i)), et) for i in range(mr_)]
    _store_edge(b, fn.module, et, blk, crows, mr, nr, first, vals)
    b.ret_void()
    return fn


def _vname(et) -> str:
    return "f32" if et == U.F32 else "f64"


def _narrow_fn(module, et, tag, vw, nvec, p: Plan):
    """sub(a, b, c, mlen, nlen, scratch) for _narrow_rows' case: C[:mlen, :n] =
    A[:mlen] B with A[m, k] = a[m + k * ak], in tiles of nvec * vw rows: per k, nvec
    vector loads of A and one broadcast of B per column feed n * nvec FMAs; each
    accumulator holds a column piece of C, stored by a masked scatter."""
    n, rows = p.n, nvec * vw
    name = f"jx.gemm.narrow.{tag}.{nvec}.{n}.{p.k}.{p.ak}.{p.bk}.{p.bn}"
    fn = _fn(module, name, U.VOID, [U.PTR, U.PTR, U.PTR, U.I64, U.I64, U.PTR])
    if fn is None:
        return module.globals[name]
    a, bm, c, mlen, _, _ = fn.args
    for x in (a, bm, c):
        x.add_attribute("noalias")
    vt, mt, it = ir.VectorType(et, vw), ir.VectorType(U.I1, vw), ir.VectorType(U.I64, vw)
    al = ir.Constant(U.I32, _size(et))
    fma = _declare(module, f"llvm.fma.v{vw}{_vname(et)}", vt, [vt] * 3)
    mload = _declare(module, f"llvm.masked.load.v{vw}{_vname(et)}.p0", vt,
                     [U.PTR, U.I32, mt, vt])
    pvt = ir.VectorType(U.PTR, vw)
    scatter = _declare(module, f"llvm.masked.scatter.v{vw}{_vname(et)}.v{vw}p0", U.VOID,
                       [vt, pvt, U.I32, mt])
    zero = ir.Constant(vt, [ir.Constant(et, 0.0)] * vw)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with _loop(b, 0, mlen, rows, "m0") as m0:
        left = b.sub(mlen, m0)
        masks = [b.icmp_signed("<", ir.Constant(it, [_c(v * vw + j) for j in range(vw)]),
                               _splat(b, left, it)) for v in range(nvec)]
        k, accs = _k_loop(b, n * nvec, zero)
        arow = b.add(m0, b.mul(k, _c(p.ak)))
        # plain geps: a vector of a tail tile may start past the end of A (all its
        # lanes masked off), which an inbounds gep would make poison
        av = [b.call(mload, [b.gep(a, [b.add(arow, _c(v * vw))], source_etype=et), al,
                             masks[v], zero]) for v in range(nvec)]
        new = []
        for j in range(n):
            bj = b.load(_gep(b, bm, b.add(b.mul(k, _c(p.bk)), _c(j * p.bn)), et), typ=et)
            bs = _splat(b, bj, vt)
            new += [b.call(fma, [av[v], bs, accs[j * nvec + v]]) for v in range(nvec)]
        _k_loop_end(b, k, accs, new, _c(p.k))
        for v in range(nvec):
            lane = b.add(_splat(b, m0, it), ir.Constant(it, [_c(v * vw + j) for j in range(vw)]))
            # byte addresses of C[m0 + lane, 0] (a vector gep is beyond llvmlite)
            base = b.add(_splat(b, b.ptrtoint(c, U.I64), it),
                         b.mul(lane, _splat(b, _c(n * _size(et)), it)))
            for j in range(n):
                ptrs = b.inttoptr(b.add(base, _splat(b, _c(j * _size(et)), it)), pvt)
                b.call(scatter, [new[j * nvec + v], ptrs, al, masks[v]])
    b.ret_void()
    return fn


def worker_scratch(b, module, scratch, slots, slot: int, indexed: bool):
    """(this task's scratch slot, a pointer to free after the tasks or null). A pool
    thread past the kernel's slots (the pool may be larger than the threads it
    counted) allocates its own; running out of memory there traps."""
    null = ir.Constant(U.PTR, None)
    if not indexed:
        return scratch, null
    index = b.sext(b.call(_declare(module, "jx_worker_index", U.I32, []), []), U.I64)
    has_slot = b.icmp_signed("<", index, slots)
    pre = b.block
    with b.if_then(b.not_(has_slot), likely=False):
        got = b.call(_declare(module, "malloc", U.PTR, [U.I64]), [_c(slot + 64)])
        with b.if_then(b.icmp_unsigned("==", got, null), likely=False):
            b.call(_declare(module, "llvm.trap", U.VOID, []), [])     # out of memory
        grew = b.block
    own = b.phi(U.PTR)
    own.add_incoming(null, pre)
    own.add_incoming(got, grew)
    aligned = b.inttoptr(b.and_(b.add(b.ptrtoint(own, U.I64), _c(63)), _c(-64)), U.PTR)
    mine = b.select(has_slot, b.gep(scratch, [b.mul(index, _c(slot))], source_etype=U.I8,
                                    inbounds=True), aligned)
    return mine, own


def run_tasks(b, pool, body, args, tasks, threaded: bool, tag: str) -> None:
    """body(args, 0, tasks) on the pool when there is more than one task, else inline."""
    if not threaded:
        b.call(body, [args, _c(0), _c(1)])
        return
    many = b.function.append_basic_block(f"{tag}.parallel")
    one = b.function.append_basic_block(f"{tag}.serial")
    join = b.function.append_basic_block(f"{tag}.done")
    b.cbranch(b.icmp_signed(">", tasks, _c(1)), many, one)
    b.position_at_end(many)
    b.call(pool, [body, args, tasks])
    b.branch(join)
    b.position_at_end(one)
    b.call(body, [args, _c(0), _c(1)])
    b.branch(join)
    b.position_at_end(join)


def epilogue_function(module, kname, epi, prod, extra, consts, nidx: int, symbols=()):
    """The function an output-fused consumer `epi` of an opaque product runs in:
    f(c, *extra buffers, nidx index args[, dims]) -> (fn, builder, C, index args,
    emitter), C holding the product and receiving epi's result in place. Its own
    function with noalias pointers (outputs never overlap inputs; inlined, LLVM lost
    the facts and did not vectorise), never inlined."""
    from .fused import FusedEmitter
    (res,) = epi.outputs
    fn = ir.Function(module, ir.FunctionType(U.VOID, [U.PTR] * (1 + len(extra)) +
                                             [U.I64] * nidx + [U.PTR] * bool(symbols)),
                     f"{kname}.epilogue")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    c, *ptrs = fn.args[:1 + len(extra)]
    for a in fn.args[:1 + len(extra)]:
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    buffers = {id(v): q for v, q in zip(extra, ptrs)}
    buffers[id(prod)] = buffers[id(res)] = c
    return fn, b, c, fn.args[1 + len(extra):1 + len(extra) + nidx], \
        FusedEmitter(b, epi, buffers, consts)
