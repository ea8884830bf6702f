"""The IR pieces of the convolution kernel (conv.py plans it and drives them):
the weights' packing, a task's share of output units (slabs, groups, column
blocks, K blocks, MR tiles onto GEMM's micro-kernels), the task bodies run on
the thread pool, and the epilogue over finished output pixels."""
from __future__ import annotations

import llvmlite.ir as ir

from . import irutil as U
from .gemm_pieces import _c, _declare, _gep, _loop, _micro_fn, _min, _pack_fn, _pack_rows_fn, \
    _panel_at, _size, epilogue_function, worker_scratch

# The context array of the task bodies: X, out, packed B, the scratch slots,
# tasks, slots, W, then the epilogue's other inputs.
_CTX = 7


def _kblock(b, p, kb):
    """(offset of K block kb in X (or a staged row) from a pixel's first element,
    its row in W (times O for its offset), its length kc, its tap's indices)."""
    t = b.udiv(kb, _c(p.nks)) if p.nks != 1 else kb
    c0 = b.mul(b.urem(kb, _c(p.nks)), _c(p.kcb)) if p.nks != 1 else _c(0)
    aoff = c0
    idx = U.delinear(b, t, [s for s, _ in p.taps])
    for i, (_, stride) in zip(idx, p.taps):
        if stride:
            aoff = b.add(aoff, b.mul(i, _c(stride)))
    wrow = b.add(b.mul(t, _c(p.seg)), c0)
    return aoff, wrow, _min(b, _c(p.kcb), b.sub(_c(p.seg), c0)), idx


def _pack_b(b, mod, et, tag, p, w, bp, lo, hi) -> None:
    """Blocks lo..hi (flat over groups, then K blocks) of W into KC x NR
    micro-panels, block (g, kb) at (g nkb + kb) bstride."""
    pack = _pack_rows_fn(mod, et, tag, p.blk.nr, p.O)
    with _loop(b, lo, hi, 1, "pb") as blk:
        g = b.udiv(blk, _c(p.nkb))
        _, wrow, kc, _ = _kblock(b, p, b.urem(blk, _c(p.nkb)))
        src = _gep(b, w, b.add(b.mul(wrow, _c(p.O)), b.mul(g, _c(p.Og))), et)
        pack(b, _gep(b, bp, b.mul(blk, _c(p.bstride)), et), src, _c(p.Og), kc)


def _pack_body_fn(mod, kname, et, tag, p):
    """body(args, lo, hi): _pack_b of blocks lo..hi, for the pool (W at args[_CTX - 1])."""
    fn = ir.Function(mod, ir.FunctionType(U.VOID, [U.PTR, U.I64, U.I64]), f"{kname}.conv.pack")
    fn.linkage = "internal"
    args, lo, hi = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bp, w = (b.load(b.gep(args, [_c(i)], source_etype=U.PTR), typ=U.PTR) for i in (2, _CTX - 1))
    _pack_b(b, mod, et, tag, p, w, bp, lo, hi)
    b.ret_void()
    return fn


def _sub_fn(mod, kname, et, tag, p, tail):
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
    stage = _gep(b, ap, _c(p.apack), et)

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
                    aoff, _, kc, taps = _kblock(b, p, kb)
                    if not p.stage:
                        aoff = b.add(aoff, b.mul(g, _c(p.I)))
                    first = b.icmp_signed("==", kb, _c(0))
                    bblk = _gep(b, bp, b.mul(b.add(b.mul(g, _c(p.nkb)), kb), _c(p.bstride)), et)
                    coff = b.add(b.mul(g, _c(p.Og)), jc)
                    with _loop(b, s0, s1, 1, "u") as u:
                        pix, row, w_lo = pixel(u)
                        w_hi = _min(b, b.add(w_lo, _c(p.chunk)), _c(p.wo))
                        ridx = U.delinear(b, row, [s for s, _ in p.rows])
                        if p.stage:
                            src, xrow = stage, aoff
                            _stage_row(b, p, et, x, stage, ridx, taps, g)
                        else:
                            src, xrow = x, aoff
                            for i, (_, stride) in zip(ridx, p.rows):
                                xrow = b.add(xrow, b.mul(i, _c(stride)))
                        crow = b.add(b.mul(b.sub(pix, w_lo), _c(p.O)), coff)
                        with _loop(b, w_lo, w_hi, blk.mr, "w") as w0:
                            _tile(b, p, et, src, c, ap, micro, micro_a, pack_a, bblk, xrow,
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
    elif p.stage:     # (a staged row has room for a short tile's dropped rows)
        direct = ir.Constant(U.I1, 1)
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


def _stage_row(b, p, et, x, stage, ridx, taps, g) -> None:
    """Stage the lhs row that output row ridx = (n, o_1, ..) reads at the outer
    tap of `taps`, group g's channels, with the zeros of the padding: pixel q of
    the row at stage[(q + lo) I], zeros around (all zeros when the tap's row lies
    in the padding of an outer dim)."""
    lo, size, C = p.last
    item = _size(et)
    memset = b.module.declare_intrinsic("llvm.memset", [U.PTR, U.I64])
    memcpy = b.module.declare_intrinsic("llvm.memcpy", [U.PTR, U.PTR, U.I64])
    false = ir.Constant(U.I1, 0)
    zero = ir.Constant(U.I8, 0)
    off = b.mul(ridx[0], _c(p.rows[0][1]))                 # the batch
    valid = ir.Constant(U.I1, 1)
    for o, k, (st, rd, plo, n, instr) in zip(ridx[1:], taps, p.outer):
        pos = b.sub(b.add(b.mul(o, _c(st)), b.mul(k, _c(rd))), _c(plo))
        valid = b.and_(valid, b.icmp_unsigned("<", pos, _c(n)))     # (0 <= pos < n)
        off = b.add(off, b.mul(pos, _c(instr)))
    with b.if_else(valid) as (inside, outside):
        with inside:
            b.call(memset, [stage, zero, _c(lo * p.I * item), false])
            src = _gep(b, x, b.add(off, b.mul(g, _c(p.I))), et) if p.G > 1 else \
                b.gep(x, [off], source_etype=et)
            dst = _gep(b, stage, _c(lo * p.I), et)
            if p.I == C:           # one group: the row as it lies
                b.call(memcpy, [dst, src, _c(size * C * item), false])
            else:
                with _loop(b, 0, size, 1, "q") as q:
                    b.call(memcpy, [_gep(b, dst, b.mul(q, _c(p.I)), et),
                                    _gep(b, src, b.mul(q, _c(C)), et), _c(p.I * item), false])
            rest = (lo + size) * p.I
            b.call(memset, [_gep(b, stage, _c(rest), et), zero,
                            _c((p.stage - rest) * item), false])
        with outside:
            b.call(memset, [stage, zero, _c(p.stage * item), false])


def _body_fn(mod, kname, p, sub, slot, indexed):
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
    mine, own = worker_scratch(b, mod, scratch, slots, slot, indexed)
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
    (res,) = epi.outputs
    (prod,) = conv.outputs
    shape = res.aval.shape
    fn, b, c, (p0, p1), em = epilogue_function(mod, kname, epi, prod, extra, consts, 2)
    with _loop(b, p0, p1, 1, "ep") as px:
        pidx = U.delinear(b, px, shape[:-1])
        with _loop(b, 0, shape[-1], 1, "eo") as o:
            idx = pidx + [o]
            U.store(b, em.value(res, idx), c, U.linear(b, idx, shape), res.aval.dtype)
    b.ret_void()
    fn = U.same_function(fn)

    def tail(b, args, c, p0, p1):
        ptrs = [b.load(b.gep(args, [_c(_CTX + i)], source_etype=U.PTR), typ=U.PTR)
                for i in range(len(extra))]
        b.call(fn, [c, *ptrs, p0, p1])
    return tail
