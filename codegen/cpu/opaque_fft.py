"""Lowering of the split-layout FFT primitives (jx.prims.fft_split) as opaque
kernels: each row of the last axis is one call of fft_stages' transform, the rows
split over threads (PARALLEL_OPAQUE), each chunk with its own scratch.

- fft_c2c: the forward transform; the inverse is it on swapped parts, its last
  pass scaled by 1/n. Along a non-last axis, blocks of columns side by side.
- fft_r2c, even n = 2h: x's even and odd elements as the real and imaginary parts
  of one length-h transform Z, then X_k = E + F, X_{h-k} = conj(E - F) with
  E = (Z_k + conj Z_{h-k}) / 2, F = -i w^k (Z_k - conj Z_{h-k}) / 2, w = exp(-2 pi i/n):
  half the work of a complex transform. Odd n: the complex transform of (x, 0).
- fft_c2r, even n: the mirror, Z_k = E + G, Z_{h-k} = conj(E - G) with
  E = X_k + conj X_{h-k}, G = i conj(w^k) (X_k - conj X_{h-k}), scaled 1/n, one
  inverse length-h transform, its parts interleaved. Odd n: the Hermitian
  spectrum filled in and one inverse complex transform.
"""
from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np

from . import irutil as U
from . import target
# fft_plan (P), fft_stages (S), fft_tables (T) and fft_butterfly (B) are imported
# inside the functions that use them: a program without FFTs never loads them
from .opaque import PARALLEL_OPAQUE, opaque_rule


def _rows(kernel) -> tuple:
    """(n, rows): the transformed length of the operand and how many rows it has."""
    shape = kernel.root.inputs[0].aval.shape
    if any(U.is_symbolic(d) for d in shape):
        raise NotImplementedError(
            f"cpu backend: {kernel.root.prim.name} needs static shapes, got "
            f"{kernel.root.inputs[0].aval} (from {kernel.root.source}); give the batch "
            "sizes as numbers (jx.compile --specialize, or fixed specs)")
    return shape[-1], math.prod(shape[:-1])


def _width(ctx, dt) -> int:
    return max(1, target.vector_bytes(target.of_module(ctx.module.module)) //
               np.dtype(dt).itemsize)


class _Row:
    """Per-row pointers and scratch of one chunk of rows."""

    def __init__(self, ctx, kernel, work: int, dt=None):
        self.ctx, self.b = ctx, ctx.b
        self.dt = np.dtype(dt or kernel.root.inputs[0].aval.dtype)
        self.elem = U.storage_type(self.dt)
        self.width = _width(ctx, self.dt)
        self.mem = None
        if work:
            self.mem = self._alloc(2 * work * self.dt.itemsize)

    def _alloc(self, nbytes):
        from . import fft_tables as T
        mod = self.ctx.module
        if mod.parallel:     # the runtime keeps big blocks between calls: no page faults
            get = mod.runtime_function("jx_scratch_get", U.PTR, [U.I64])
            mem = self.b.call(get, [U.i64(nbytes)])
            with self.b.if_then(self.b.icmp_unsigned("==", mem, ir.Constant(U.PTR, None)),
                                likely=False):
                self.b.call(_trap(mod.module), [])             # a chunk cannot report it
            return mem
        return T.checked_malloc(self.b, mod.module, nbytes)

    def release(self):
        from . import fft_tables as T
        if self.mem is None:
            return
        mod = self.ctx.module
        put = mod.runtime_function("jx_scratch_put", U.VOID, [U.PTR]) if mod.parallel \
            else T.libc_free(mod.module)
        self.b.call(put, [self.mem])

    def scratch(self, offset: int):
        """The scratch pointer `offset` elements in."""
        return self.at(self.mem, offset)

    def at(self, ptr, off):
        return self.b.gep(ptr, [off if isinstance(off, ir.Value) else U.i64(off)],
                          source_etype=self.elem, inbounds=True)

    def ld(self, ptr, i):
        return self.b.load(self.at(ptr, i), typ=self.elem)

    def st(self, v, ptr, i):
        self.b.store(v, self.at(ptr, i))

    def each(self, count: int, body):
        b = self.b
        if self.ctx.outer is not None:
            with U.for_between(b, self.ctx.outer[0], self.ctx.outer[1], "fft.row") as t:
                body(t)
        else:
            with U.for_range(b, count, "fft.row") as t:
                body(t)


def _trap(module):
    return module.globals.get("llvm.trap") or \
        ir.Function(module, ir.FunctionType(U.VOID, []), "llvm.trap")


def _transform(ctx, row, plan, scale=1.0):
    """(fft function, tr, ti) of plan, its results times scale."""
    from . import fft_stages as S, fft_tables as T
    module = ctx.module.module
    fn = S.fft_function(module, plan, row.dt, row.width, scale)
    tr, ti = T.table(ctx.b, module, plan, row.dt, row.width)
    return fn, tr, ti


# ------------------------------------------------------------------ complex

# elements of a block of columns transformed side by side (three such blocks of
# scratch, re and im, per chunk of units)
BLOCK_LIMIT = 1 << 18


def _axis(kernel) -> int:
    return kernel.root.params.get("axis", -1) % kernel.root.inputs[0].aval.ndim


def _columns(kernel) -> tuple:
    """(n, units, inner, cols) of fft_c2c along a non-last axis: units of cols
    adjacent columns of the `inner` ones after the axis (side by side in one
    transform when its plan is direct, up to a 256-byte run, a multiple of every
    vector width; Bluestein's, one column at a time). Shorter runs of a
    power-of-two row stride fall into a few cache sets: 64-byte runs of a
    2048 x 2048 float32 axis-0 pass took 10x the time of 256-byte ones."""
    from . import fft_plan as P
    shape = kernel.root.inputs[0].aval.shape
    _rows(kernel)
    axis = _axis(kernel)
    n, inner = shape[axis], math.prod(shape[axis + 1:])
    run = 256 // kernel.root.inputs[0].aval.dtype.itemsize
    cols = math.gcd(inner, run) if P.plan(n).blue is None else 1
    while cols > 1 and n * cols > BLOCK_LIMIT:      # (powers of two: still divisors)
        cols //= 2
    return n, math.prod(shape[:axis]) * (inner // cols), inner, cols


@opaque_rule("fft_c2c")
def _c2c(ctx, kernel):
    from . import fft_plan as P
    if _axis(kernel) != kernel.root.inputs[0].aval.ndim - 1:
        _c2c_strided(ctx, kernel)
        return
    (re, im), (ore, oim) = kernel.root.inputs, kernel.root.outputs
    n, rows = _rows(kernel)
    if rows == 0:
        return
    plan = P.plan(n)
    row = _Row(ctx, kernel, plan.work)
    inverse = kernel.root.params["inverse"]
    fn, tr, ti = _transform(ctx, row, plan, 1.0 / n if inverse else 1.0)
    null = ir.Constant(U.PTR, None)
    wr, wi = (row.scratch(0), row.scratch(plan.work)) if plan.work else (null, null)
    ptrs = [ctx.ptr(a) for a in (re, im, ore, oim)]

    def one(t):
        xr, xi, yr, yi = (row.at(p, ctx.b.mul(t, U.i64(n))) for p in ptrs)
        if inverse:
            ctx.b.call(fn, [xi, xr, yi, yr, wr, wi, tr, ti])
        else:
            ctx.b.call(fn, [xr, xi, yr, yi, wr, wi, tr, ti])
    row.each(rows, one)
    row.release()


def _c2c_strided(ctx, kernel):
    """Along a non-last axis: each unit's columns are copied into a compact block
    (rows of cols), transformed side by side and copied back, so every pass of the
    transform runs along contiguous rows and the block stays in cache."""
    from . import fft_plan as P, fft_stages as S, fft_tables as T
    (re, im), (ore, oim) = kernel.root.inputs, kernel.root.outputs
    n, units, inner, cols = _columns(kernel)
    if units == 0:
        return
    base_plan = P.plan(n)
    plan = base_plan.side_by_side(cols) if cols > 1 else base_plan
    block = n * cols
    span = 2 * block + plan.work                  # the imaginary half's offset
    row = _Row(ctx, kernel, span)
    b = ctx.b
    fn = S.fft_function(ctx.module.module, plan, row.dt, row.width)
    tr, ti = T.table(b, ctx.module.module, base_plan, row.dt, row.width)
    inr, ini, outr, outi = row.scratch(0), row.scratch(span), row.scratch(block), \
        row.scratch(span + block)
    wr, wi = row.scratch(2 * block), row.scratch(span + 2 * block)
    ptrs = [ctx.ptr(a) for a in (re, im, ore, oim)]
    inverse = kernel.root.params["inverse"]
    per = inner // cols
    inv = ir.Constant(row.elem, 1.0 / n)

    def one(u):
        outer = b.sdiv(u, U.i64(per))
        base = b.add(b.mul(outer, U.i64(n * inner)), b.mul(b.srem(u, U.i64(per)),
                                                            U.i64(cols)))
        with U.for_range(b, n, "col.in") as i:
            src = b.add(base, b.mul(i, U.i64(inner)))
            with U.for_range(b, cols, "col.c") as c:
                at = b.add(b.mul(i, U.i64(cols)), c)
                row.st(row.ld(ptrs[0], b.add(src, c)), inr, at)
                row.st(row.ld(ptrs[1], b.add(src, c)), ini, at)
        if inverse:
            b.call(fn, [ini, inr, outi, outr, wr, wi, tr, ti])
        else:
            b.call(fn, [inr, ini, outr, outi, wr, wi, tr, ti])
        with U.for_range(b, n, "col.out") as i:
            dst = b.add(base, b.mul(i, U.i64(inner)))
            with U.for_range(b, cols, "col.c") as c:
                at = b.add(b.mul(i, U.i64(cols)), c)
                vr, vi = row.ld(outr, at), row.ld(outi, at)
                if inverse:
                    vr, vi = b.fmul(vr, inv), b.fmul(vi, inv)
                row.st(vr, ptrs[2], b.add(dst, c))
                row.st(vi, ptrs[3], b.add(dst, c))
    row.each(units, one)
    row.release()


# ------------------------------------------------------------------ real input

@opaque_rule("fft_r2c")
def _r2c(ctx, kernel):
    from . import fft_plan as P, fft_tables as T
    (x,), (ore, oim) = kernel.root.inputs, kernel.root.outputs
    n, rows = _rows(kernel)
    if rows == 0:
        return
    if n % 2:
        _r2c_odd(ctx, kernel, n, rows)
        return
    h = n // 2
    plan = P.plan(h)
    row = _Row(ctx, kernel, h + plan.work)
    b = ctx.b
    fn, tr, ti = _transform(ctx, row, plan)
    zr, zi = row.scratch(0), row.scratch(h + plan.work)
    wr, wi = row.scratch(h), row.scratch(2 * h + plan.work)
    half = h // 2 + 1
    cr, ci = T.twiddles(b, ctx.module.module, half, n, row.dt)
    xp, rp, ip = ctx.ptr(x), ctx.ptr(ore), ctx.ptr(oim)
    module = ctx.module.module
    split, post = _split(module, row.dt), _r2c_post(module, row.dt)

    def one(t):
        src = row.at(xp, b.mul(t, U.i64(n)))
        yr, yi = row.at(rp, b.mul(t, U.i64(h + 1))), row.at(ip, b.mul(t, U.i64(h + 1)))
        b.call(split, [src, zr, zi, U.i64(h)])
        b.call(fn, [zr, zi, yr, yi, wr, wi, tr, ti])
        b.call(post, [yr, yi, cr, ci, U.i64(h)])
    row.each(rows, one)
    row.release()


# The even-length real transforms' passes around the complex one, and the
# interleaved transform's, as routines (routines.py) of the dtype alone, generic in
# the length: compiled once per host, not per program (each program's own loops
# were a third of a real transform's LLVM time).

def _routine(module, name: str, args: list, body) -> ir.Function:
    """Routine `name` of these argument types, its body(b, *args) emitted where the
    host has not compiled it (routines.define); as module calls it."""
    from . import routines
    fn = routines.define(module, name, ir.FunctionType(U.VOID, args))
    if fn is not None:
        for a in fn.args:
            if a.type == U.PTR:
                a.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        body(b, *fn.args)
        b.ret_void()
    return module.globals[name]


def _pair_ops(b, elem):
    def at(ptr, i):
        return b.gep(ptr, [i], source_etype=elem, inbounds=True)
    return (lambda ptr, i: b.load(at(ptr, i), typ=elem)), \
        (lambda v, ptr, i: b.store(v, at(ptr, i)))


def _split(module, dt) -> ir.Function:
    """split(src, re, im, n): re[j] = src[2 j], im[j] = src[2 j + 1], j < n."""
    return _pairs(module, dt, "split")


def _join(module, dt) -> ir.Function:
    """join(re, im, dst, n): dst[2 j] = re[j], dst[2 j + 1] = im[j], j < n."""
    return _pairs(module, dt, "join")


def _pairs(module, dt, kind: str) -> ir.Function:
    elem = U.storage_type(np.dtype(dt))

    def body(b, p, q, r, n):
        ld, st = _pair_ops(b, elem)
        with U.for_between(b, U.i64(0), n, kind) as j:
            j2 = b.mul(j, U.i64(2))
            j21 = b.add(j2, U.i64(1))
            if kind == "split":          # p: the interleaved source; q, r: the parts
                st(ld(p, j2), q, j)
                st(ld(p, j21), r, j)
            else:                        # p, q: the parts; r: the interleaved result
                st(ld(p, j), r, j2)
                st(ld(q, j), r, j21)
    return _routine(module, f"jx.fft.{kind}.{np.dtype(dt).name}", [U.PTR] * 3 + [U.I64], body)


def _r2c_post(module, dt) -> ir.Function:
    """post(yr, yi, cr, ci, h): Z = y (the length-h transform of the even and odd
    elements) -> X_k, k <= h in place (see the module doc); c: w^k, k <= h / 2."""
    from . import fft_butterfly as B
    elem = U.storage_type(np.dtype(dt))

    def body(b, yr, yi, cr, ci, h):
        ld, st = _pair_ops(b, elem)
        two = ir.Constant(elem, 0.5)
        half = b.add(b.lshr(h, U.i64(1)), U.i64(1))
        with U.for_between(b, U.i64(0), half, "r2c.post") as k:
            back = b.sub(h, k)
            a = (ld(yr, k), ld(yi, k))
            wrap = b.select(b.icmp_unsigned("==", back, h), U.i64(0), back)
            bc = (ld(yr, wrap), b.fneg(ld(yi, wrap)))
            e = B.scale(b, B.add(b, a, bc), two)
            d = B.scale(b, B.sub(b, a, bc), two)
            f = B.mul(b, (d[1], b.fneg(d[0])), (ld(cr, k), ld(ci, k)))   # -i d w^k
            xk, xb = B.add(b, e, f), B.sub(b, e, f)
            st(xb[0], yr, back)
            st(b.fneg(xb[1]), yi, back)
            st(xk[0], yr, k)
            st(xk[1], yi, k)
    return _routine(module, f"jx.fft.r2c.post.{np.dtype(dt).name}",
                    [U.PTR] * 4 + [U.I64], body)


def _c2r_pre(module, dt) -> ir.Function:
    """pre(sr, si, zr, zi, cr, ci, h, inv): the Hermitian half X_k, k <= h -> Z, the
    length-h spectrum whose inverse holds the even and odd outputs, times inv."""
    from . import fft_butterfly as B
    elem = U.storage_type(np.dtype(dt))

    def body(b, sr, si, zr, zi, cr, ci, h, inv):
        ld, st = _pair_ops(b, elem)
        zero = ir.Constant(elem, 0.0)
        half = b.add(b.lshr(h, U.i64(1)), U.i64(1))
        with U.for_between(b, U.i64(0), half, "c2r.pre") as k:
            back = b.sub(h, k)
            dc = b.icmp_unsigned("==", k, U.i64(0))          # X_0, X_h: real parts only
            a = (ld(sr, k), b.select(dc, zero, ld(si, k)))
            bc = (ld(sr, back), b.fneg(b.select(dc, zero, ld(si, back))))
            e = B.scale(b, B.add(b, a, bc), inv)
            d = B.scale(b, B.sub(b, a, bc), inv)
            wk = (ld(cr, k), b.fneg(ld(ci, k)))
            g = B.mul(b, (b.fneg(d[1]), d[0]), wk)               # i d conj(w^k)
            zk, zb = B.add(b, e, g), B.sub(b, e, g)
            with b.if_then(b.icmp_unsigned("<", back, h)):
                st(zb[0], zr, back)
                st(b.fneg(zb[1]), zi, back)
            st(zk[0], zr, k)
            st(zk[1], zi, k)
    return _routine(module, f"jx.fft.c2r.pre.{np.dtype(dt).name}",
                    [U.PTR] * 6 + [U.I64, elem], body)


def build_routines(module, dt) -> None:
    """Declare every routine here for dt (routines.py), as a host that compiled
    programs of every kind has them."""
    for make in (_split, _join, _r2c_post, _c2r_pre):
        make(module, dt)


def _odd_row(ctx, kernel, n):
    """The odd-length real transforms' chunk scratch: one length-n complex
    transform from z to out with its work area; (row, fn, tr, ti, zr, zi, outr,
    outi, wr, wi), each half [z | out | work] of 2n + plan.work elements."""
    from . import fft_plan as P
    plan = P.plan(n)
    row = _Row(ctx, kernel, 2 * n + plan.work)
    fn, tr, ti = _transform(ctx, row, plan)
    span = 2 * n + plan.work                     # the imaginary half's offset
    return (row, fn, tr, ti, row.scratch(0), row.scratch(span), row.scratch(n),
            row.scratch(span + n), row.scratch(2 * n), row.scratch(span + 2 * n))


def _r2c_odd(ctx, kernel, n, rows):
    row, fn, tr, ti, zr, zi, outr, outi, wr, wi = _odd_row(ctx, kernel, n)
    b = ctx.b
    xp, rp, ip = ctx.ptr(kernel.root.inputs[0]), *(ctx.ptr(o) for o in kernel.root.outputs)
    h1 = n // 2 + 1
    zero = ir.Constant(row.elem, 0.0)

    def one(t):
        src = row.at(xp, b.mul(t, U.i64(n)))
        with U.for_range(b, n, "r2c.in") as j:
            row.st(row.ld(src, j), zr, j)
            row.st(zero, zi, j)
        b.call(fn, [zr, zi, outr, outi, wr, wi, tr, ti])
        yr, yi = row.at(rp, b.mul(t, U.i64(h1))), row.at(ip, b.mul(t, U.i64(h1)))
        with U.for_range(b, h1, "r2c.out") as k:
            row.st(row.ld(outr, k), yr, k)
            row.st(row.ld(outi, k), yi, k)
    row.each(rows, one)
    row.release()


@opaque_rule("fft_c2r")
def _c2r(ctx, kernel):
    from . import fft_plan as P, fft_tables as T
    n = kernel.root.params["n"]
    _, rows = _rows(kernel)
    if rows == 0:
        return
    if n % 2:
        _c2r_odd(ctx, kernel, n, rows)
        return
    h = n // 2
    plan = P.plan(h)
    row = _Row(ctx, kernel, 2 * h + plan.work)
    b = ctx.b
    fn, tr, ti = _transform(ctx, row, plan)
    span = 2 * h + plan.work
    zr, zi, outr, outi = row.scratch(0), row.scratch(span), row.scratch(h), \
        row.scratch(span + h)
    wr, wi = row.scratch(2 * h), row.scratch(span + 2 * h)
    half = h // 2 + 1
    cr, ci = T.twiddles(b, ctx.module.module, half, n, row.dt)
    (re, im), (x,) = kernel.root.inputs, kernel.root.outputs
    rp, ip, xp = ctx.ptr(re), ctx.ptr(im), ctx.ptr(x)
    inv = ir.Constant(row.elem, 1.0 / n)
    module = ctx.module.module
    pre, join = _c2r_pre(module, row.dt), _join(module, row.dt)

    def one(t):
        sr, si = row.at(rp, b.mul(t, U.i64(h + 1))), row.at(ip, b.mul(t, U.i64(h + 1)))
        b.call(pre, [sr, si, zr, zi, cr, ci, U.i64(h), inv])
        b.call(fn, [zi, zr, outi, outr, wr, wi, tr, ti])       # the inverse: swapped
        b.call(join, [outr, outi, row.at(xp, b.mul(t, U.i64(n))), U.i64(h)])
    row.each(rows, one)
    row.release()


def _c2r_odd(ctx, kernel, n, rows):
    row, fn, tr, ti, zr, zi, outr, outi, wr, wi = _odd_row(ctx, kernel, n)
    b = ctx.b
    (re, im), (x,) = kernel.root.inputs, kernel.root.outputs
    rp, ip, xp = ctx.ptr(re), ctx.ptr(im), ctx.ptr(x)
    h1 = n // 2 + 1
    zero = ir.Constant(row.elem, 0.0)

    def one(t):
        sr, si = row.at(rp, b.mul(t, U.i64(h1))), row.at(ip, b.mul(t, U.i64(h1)))
        row.st(row.ld(sr, 0), zr, 0)
        row.st(zero, zi, 0)
        with U.for_step(b, 1, h1, 1, "c2r.fill") as k:
            vr, vi = row.ld(sr, k), row.ld(si, k)
            back = b.sub(U.i64(n), k)
            row.st(vr, zr, k)
            row.st(vi, zi, k)
            row.st(vr, zr, back)
            row.st(b.fneg(vi), zi, back)
        b.call(fn, [zi, zr, outi, outr, wr, wi, tr, ti])
        dst = row.at(xp, b.mul(t, U.i64(n)))
        inv = ir.Constant(row.elem, 1.0 / n)
        with U.for_range(b, n, "c2r.out") as j:
            row.st(b.fmul(row.ld(outr, j), inv), dst, j)
    row.each(rows, one)
    row.release()


# ------------------------------------------------------------------ interleaved

@opaque_rule("fft_z")
def _z(ctx, kernel):
    """fft_c2c of a complex array in place of its parts: each row's components
    split into scratch, transformed there, and interleaved into the output row:
    the row stays in cache between the three."""
    from . import fft_plan as P
    (z,), (out,) = kernel.root.inputs, kernel.root.outputs
    n, rows = _rows(kernel)
    if rows == 0:
        return
    plan = P.plan(n)
    part = np.dtype(z.aval.dtype.char.lower())      # complex64 -> float32
    row = _Row(ctx, kernel, plan.work + 2 * n, dt=part)
    inverse = kernel.root.params["inverse"]
    fn, tr, ti = _transform(ctx, row, plan, 1.0 / n if inverse else 1.0)
    w = plan.work
    wr, wi = (row.scratch(0), row.scratch(w + 2 * n)) if w else \
        (ir.Constant(U.PTR, None), ir.Constant(U.PTR, None))
    xr, xi = row.scratch(w), row.scratch(w + n)                 # the row's parts
    yr, yi = row.scratch(2 * w + 2 * n), row.scratch(2 * w + 3 * n)
    src, dst = ctx.ptr(z), ctx.ptr(out)
    b = ctx.b

    split, join = _split(ctx.module.module, part), _join(ctx.module.module, part)

    def one(t):
        base = b.mul(t, U.i64(2 * n))
        b.call(split, [row.at(src, base), xr, xi, U.i64(n)])
        if inverse:
            b.call(fn, [xi, xr, yi, yr, wr, wi, tr, ti])
        else:
            b.call(fn, [xr, xi, yr, yi, wr, wi, tr, ti])
        b.call(join, [yr, yi, row.at(dst, base), U.i64(n)])
    row.each(rows, one)
    row.release()


# ------------------------------------------------------------------ threads

def _extent(per_row_flops):
    def extent(kernel):
        n, rows = _rows(kernel)
        if rows < 2 or n == 0:
            return [], 0
        return [rows], rows * per_row_flops(kernel, n)
    return extent


def _c2c_extent(kernel):
    from . import fft_plan as P
    if _axis(kernel) == kernel.root.inputs[0].aval.ndim - 1:
        return _extent(lambda k, n: P.flops(n))(kernel)
    n, units, _, cols = _columns(kernel)
    if units < 2:
        return [], 0
    return [units], units * cols * P.flops(n)


def _flops(n: int) -> int:
    from . import fft_plan as P
    return P.flops(n)


PARALLEL_OPAQUE["fft_c2c"] = _c2c_extent
PARALLEL_OPAQUE["fft_r2c"] = _extent(lambda k, n: _flops(n) // 2)
PARALLEL_OPAQUE["fft_c2r"] = _extent(lambda k, n: _flops(k.root.params["n"]) // 2)
PARALLEL_OPAQUE["fft_z"] = _extent(lambda k, n: _flops(n))
