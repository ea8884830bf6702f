"""Lowering of `sort` and `threefry2x32` as opaque kernels.

sort: every row along `dimension` (a flat loop over the other dims; the row's
elements lie `stride` apart) is sorted as a permutation of indices by a stable
bottom-up merge sort (insertion sort makes the first runs), comparing the key
operands lexicographically the way the reference's np.lexsort does: NaN after
+inf, all NaNs equal, -0.0 == 0.0, ints by their signedness, False < True.
Every operand is then gathered through the permutation into its output. With
a single key of <= 8 bytes (sort, argsort, sort_key_val) the sorted words are
instead (order-preserving key bits << w | index) integers: one unsigned
compare on contiguous memory, ties broken by index, so stable for free. The
sort buffer and the merge's scratch are malloc'ed once per kernel; a NULL
makes the kernel return the out-of-memory status before writing anything.

threefry2x32: one flat loop of straight-line i32 arithmetic per element (both
outputs at once), which LLVM vectorises.
"""
from __future__ import annotations

import math
from contextlib import contextmanager

import llvmlite.ir as ir
import numpy as np

from jx.prims.random_bits import KS_PARITY, ROTATIONS

from jx.dims import active

from . import irutil as U
from .opaque import opaque_rule

RUN = 16          # rows are first sorted in runs of this many by insertion sort


# ------------------------------------------------------------------ threefry

def _rotl(b, x, r: int):
    return b.or_(b.shl(x, ir.Constant(U.I32, r)), b.lshr(x, ir.Constant(U.I32, 32 - r)))


def threefry_block(b, k0, k1, x0, x1) -> tuple:
    """Threefry-2x32 with 20 rounds on i32 values (the reference's arithmetic)."""
    ks = (k0, k1, b.xor(b.xor(k0, k1), ir.Constant(U.I32, KS_PARITY)))
    x0, x1 = b.add(x0, ks[0]), b.add(x1, ks[1])
    for i in range(5):                  # 5 groups of 4 rounds, a key injection after each
        for r in ROTATIONS[i % 2]:
            x0 = b.add(x0, x1)
            x1 = b.xor(_rotl(b, x1, r), x0)
        x0 = b.add(x0, ks[(i + 1) % 3])
        x1 = b.add(b.add(x1, ks[(i + 2) % 3]), ir.Constant(U.I32, i + 1))
    return x0, x1


@opaque_rule("threefry2x32")
def _threefry(ctx, kernel):
    b = ctx.b
    eqn = kernel.root
    n = eqn.outputs[0].aval.size
    if n == 0:
        return
    ins = [ctx.ptr(a) for a in eqn.inputs]
    outs = [ctx.ptr(v) for v in eqn.outputs]
    with U.for_range(b, n, "e") as i:
        vals = [U.load(b, p, i, np.uint32) for p in ins]
        for p, v in zip(outs, threefry_block(b, *vals)):
            U.store(b, v, p, i, np.uint32)


# ------------------------------------------------------------------ sort helpers

@contextmanager
def _while(b, cond, name: str):
    """while (cond()) { body }: cond() emits its test in the loop header."""
    fn = b.function
    head = fn.append_basic_block(f"{name}.head")
    body = fn.append_basic_block(f"{name}.body")
    end = fn.append_basic_block(f"{name}.end")
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(cond(), body, end)
    b.position_at_end(body)
    yield
    b.branch(head)
    b.position_at_end(end)


class _Var:
    """A mutable i64/ptr local kept in an entry-block alloca (mem2reg makes it SSA)."""

    def __init__(self, b, typ, init, name: str):
        self.b, self.typ = b, typ
        self.slot = U.alloca_entry(b, typ, name)
        self.set(init)

    def get(self):
        return self.b.load(self.slot, typ=self.typ)

    def set(self, v) -> None:
        self.b.store(v, self.slot)


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _key_less_equal(b, x, y, dt) -> tuple:
    """(x < y, x == y) in the reference's order: NaNs last and equal to each other."""
    if U.is_float(dt):
        x_nan = b.fcmp_unordered("uno", x, x)
        y_nan = b.fcmp_unordered("uno", y, y)
        lt = b.or_(b.fcmp_ordered("<", x, y), b.and_(b.not_(x_nan), y_nan))
        eq = b.or_(b.fcmp_ordered("==", x, y), b.and_(x_nan, y_nan))
        return lt, eq
    cmp = b.icmp_signed if U.is_signed(dt) else b.icmp_unsigned
    return cmp("<", x, y), b.icmp_unsigned("==", x, y)


class _Row:
    """Addressing and comparison of one row: element k is at base + k * stride."""

    def __init__(self, b, keys, base, stride: int):
        self.b, self.keys, self.base, self.stride = b, keys, base, stride

    def at(self, k):
        if self.stride != 1:
            k = self.b.mul(k, U.i64(self.stride), flags=["nuw", "nsw"])
        return self.b.add(self.base, k, flags=["nuw", "nsw"])

    def less(self, i, j):
        """Element i sorts strictly before element j (lexicographic over the keys)."""
        b = self.b
        oi, oj = self.at(i), self.at(j)
        result = None
        for ptr, dt in reversed(self.keys):       # fold from the last key outwards
            lt, eq = _key_less_equal(b, U.load(b, ptr, oi, dt), U.load(b, ptr, oj, dt), dt)
            result = lt if result is None else b.or_(lt, b.and_(eq, result))
        return result


def _get(b, buf, k, et):
    return b.load(b.gep(buf, [k], source_etype=et, inbounds=True), typ=et)


def _put(b, buf, k, v, et) -> None:
    b.store(v, b.gep(buf, [k], source_etype=et, inbounds=True))


def _insertion_runs(b, less, buf, n: int, et) -> None:
    """buf[s:s+RUN] sorted for every run start s (stable: shifts only past greater)."""
    with U.for_range(b, (n + RUN - 1) // RUN, "run") as r:
        s = b.mul(r, U.i64(RUN))
        e = _min(b, b.add(s, U.i64(RUN)), U.i64(n))
        i = _Var(b, U.I64, b.add(s, U.i64(1)), "ins.i")
        with _while(b, lambda: b.icmp_signed("<", i.get(), e), "ins"):
            iv = i.get()
            v = _get(b, buf, iv, et)
            j = _Var(b, U.I64, iv, "ins.j")

            def shift_more():
                jv = j.get()
                # buf[max(j - 1, s)] is always in bounds; j > s decides
                above = b.icmp_signed(">", jv, s)
                prev = _get(b, buf, b.select(above, b.sub(jv, U.i64(1)), s), et)
                return b.and_(above, less(v, prev))

            with _while(b, shift_more, "shift"):
                jv = j.get()
                jm = b.sub(jv, U.i64(1))
                _put(b, buf, jv, _get(b, buf, jm, et), et)
                j.set(jm)
            _put(b, buf, j.get(), v, et)
            i.set(b.add(iv, U.i64(1)))


def _merge_passes(b, less, buf, tmp, n: int, et):
    """Bottom-up merges of runs of RUN, 2 RUN, ...; returns the buffer holding the result."""
    src = _Var(b, U.PTR, buf, "src")
    dst = _Var(b, U.PTR, tmp, "dst")
    width = _Var(b, U.I64, U.i64(RUN), "width")
    with _while(b, lambda: b.icmp_signed("<", width.get(), U.i64(n)), "pass"):
        w, sp, dp = width.get(), src.get(), dst.get()
        lo = _Var(b, U.I64, U.i64(0), "lo")
        with _while(b, lambda: b.icmp_signed("<", lo.get(), U.i64(n)), "pair"):
            lv = lo.get()
            mid = _min(b, b.add(lv, w), U.i64(n))
            hi = _min(b, b.add(mid, w), U.i64(n))
            last = b.sub(hi, U.i64(1))
            i = _Var(b, U.I64, lv, "m.i")
            j = _Var(b, U.I64, mid, "m.j")
            k = _Var(b, U.I64, lv, "m.k")
            with _while(b, lambda: b.icmp_signed("<", k.get(), hi), "merge"):
                iv, jv = i.get(), j.get()
                # clamped reads stay inside [lo, hi); the flags decide which side is live
                a = _get(b, sp, _min(b, iv, last), et)
                c = _get(b, sp, _min(b, jv, last), et)
                left_done = b.icmp_signed(">=", iv, mid)
                right_live = b.icmp_signed("<", jv, hi)
                # the right element wins only when strictly smaller: stable
                take_right = b.and_(right_live, b.or_(left_done, less(c, a)))
                _put(b, dp, k.get(), b.select(take_right, c, a), et)
                i.set(b.add(iv, b.zext(b.not_(take_right), U.I64)))
                j.set(b.add(jv, b.zext(take_right, U.I64)))
                k.set(b.add(k.get(), U.i64(1)))
            lo.set(hi)
        src.set(dp)
        dst.set(sp)
        width.set(b.mul(w, U.i64(2)))
    return src.get()


# ------------------------------------------------------------------ packed keys

def _packable(keys, n: int):
    """The packed word type when a single key of <= 8 bytes can be sorted as
    (order-preserving key bits, index) integers: ties then break by index, so
    every comparison is one unsigned compare on contiguous memory."""
    if U.is_symbolic(n):            # the index must fit in 32 bits at every size
        hi = active().bounds(n)[1]
        if hi is None or hi >= 2 ** 32:
            return None
    if len(keys) != 1 or (not U.is_symbolic(n) and n >= 2 ** 32):
        return None
    return U.I64 if np.dtype(keys[0][1]).itemsize <= 4 else ir.IntType(128)


def _order_bits(b, x, dt, width: int):
    """x as an unsigned integer of `width` bits (32 or 64) ordered like the
    reference: signed ints get the sign bit flipped, floats the IEEE trick with
    -0.0 made +0.0 and every NaN mapped to all ones (after +inf). f16 arrives
    as f32 (its compute type), which keeps its order."""
    dt = np.dtype(dt)
    it = ir.IntType(width)
    if not U.is_float(dt):
        if dt == np.bool_ or not U.is_signed(dt):
            return b.zext(x, it) if x.type.width < width else x
        v = b.sext(x, it) if x.type.width < width else x
        return b.xor(v, ir.Constant(it, 1 << (width - 1)))
    x = b.select(b.fcmp_ordered("==", x, ir.Constant(x.type, 0.0)),
                 ir.Constant(x.type, 0.0), x)
    bits = b.bitcast(x, it)
    neg = b.icmp_signed("<", bits, ir.Constant(it, 0))
    key = b.select(neg, b.not_(bits), b.or_(bits, ir.Constant(it, 1 << (width - 1))))
    return b.select(b.fcmp_unordered("uno", x, x), ir.Constant(it, -1), key)


def _pack(b, row, k, et):
    ptr, dt = row.keys[0]
    half = et.width // 2
    key = _order_bits(b, U.load(b, ptr, row.at(k), dt), dt, half)
    return b.or_(b.shl(b.zext(key, et), ir.Constant(et, half)), b.zext(k, et))


@opaque_rule("sort")
def _sort(ctx, kernel):
    b = ctx.b
    eqn = kernel.root
    dim, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
    shape = eqn.inputs[0].aval.shape
    symbolic = any(U.is_symbolic(d) for d in shape)      # (run-time loops handle 0 and 1)
    if not symbolic and int(np.prod(shape)) == 0:
        return
    n = shape[dim]
    stride = math.prod(shape[dim + 1:])          # (ints or Dims)
    rows = math.prod(shape[:dim]) * stride
    ins = [(ctx.ptr(a), a.aval.dtype) for a in eqn.inputs]
    outs = [ctx.ptr(v) for v in eqn.outputs]
    packed = _packable(ins[:num_keys], n)
    et = packed or U.I64
    nbytes = n * et.width // 8
    buf = tmp = None
    long = U.is_symbolic(n) or n > RUN
    if U.is_symbolic(n) or n > 1:
        buf = ctx.module.alloc(b, nbytes, ctx.fail_block)
    if long:
        tmp = ctx.module.alloc(b, nbytes, _free_then(ctx, buf))
    with U.for_range(b, rows, "row") as r:
        # row r: outer index r // stride, inner index r % stride
        outer = b.udiv(r, U.i64(stride)) if stride != 1 else r
        inner = b.urem(r, U.i64(stride)) if stride != 1 else U.i64(0)
        base = b.add(b.mul(outer, U.i64(n * stride)), inner)
        row = _Row(b, ins[:num_keys], base, stride)
        if not U.is_symbolic(n) and n == 1:
            for (p, dt), q in zip(ins, outs):
                U.store(b, U.load(b, p, base, dt), q, base, dt)
        else:
            _sort_row(b, row, ins, outs, buf, tmp, n, et, packed is not None, long)
    if long:
        ctx.module.free(b, tmp)
    if buf is not None:
        ctx.module.free(b, buf)


def _sort_row(b, row, ins, outs, buf, tmp, n, et, packed: bool, long: bool) -> None:
    if packed:
        def less(x, y):
            return b.icmp_unsigned("<", x, y)
    else:
        less = row.less
    with U.for_range(b, n, "init") as k:
        _put(b, buf, k, _pack(b, row, k, et) if packed else k, et)
    _insertion_runs(b, less, buf, n, et)
    result = _merge_passes(b, less, buf, tmp, n, et) if long else buf
    with U.for_range(b, n, "gather") as k:
        v = _get(b, result, k, et)
        # the index is the low half of a packed word
        idx = b.and_(v, ir.Constant(et, (1 << et.width // 2) - 1)) if packed else v
        src, dst = row.at(b.trunc(idx, U.I64) if et.width > 64 else idx), row.at(k)
        for (p, dt), q in zip(ins, outs):
            U.store(b, U.load(b, p, src, dt), q, dst, dt)


def _free_then(ctx, mem):
    """A block freeing mem, then returning the out-of-memory status."""
    b = ctx.b
    blk = b.function.append_basic_block("sort.unwind")
    with b.goto_block(blk):
        ctx.module.free(b, mem)
        b.branch(ctx.fail_block)
    return blk
