"""Lowering of `qr` and `householder_panel` as opaque kernels (opaque_linalg.py's
helpers and conventions: row-major matrices, loops along rows, the batch split
over threads).

- qr: geqr2 + org2r: Householder reflectors with LAPACK's signs, so Q and R match
  LAPACK (and JAX, NumPy) to rounding; Q is accumulated backwards in place. Each
  column's norm is taken from entries scaled by its largest (as dnrm2), so no
  square overflows or underflows.
- householder_panel: geqr2 on a tall panel, then larft's triangle t of the compact
  WY form (the blocked QR of passes/expand.py).
"""
from __future__ import annotations

import numpy as np

from . import irutil as U
from .opaque import PARALLEL_OPAQUE, opaque_rule
from .opaque_linalg import (_batch, _batch_count, _c, _copy, _down, _extent_of, _fmul, _i,
                            _Mat, _on_stack, _sum, _view)


def _square(b, x):
    return _fmul(b, x, x)


def _amax(b, dt, lo, hi, entry, name="a"):
    """max |entry(i)| for i in [lo, hi), 0 when empty (NaN entries are passed over)."""
    acc = U.alloca_entry(b, U.compute_type(dt), f"{name}.max")
    b.store(_c(dt, 0), acc)
    with U.for_between(b, _i(lo), _i(hi), name) as i:
        v = U.call_intrinsic(b, "llvm.fabs", [entry(i)])
        cur = b.load(acc)
        b.store(b.select(b.fcmp_ordered(">", v, cur), v, cur), acc)
    return b.load(acc)



# ------------------------------------------------------------------ qr

def _scratch(ctx, kernel, count: int):
    """count elements of the operand's dtype for one matrix at a time: on the stack
    when small (a parallel chunk cannot fail), else from the scratch allocator."""
    dt = kernel.root.inputs[0].aval.dtype
    b = ctx.b
    if _on_stack(kernel, count):
        entry = b.function.entry_basic_block
        with b.goto_block(entry):
            if entry.instructions:
                b.position_before(entry.instructions[0])
            return b.alloca(U.storage_type(dt), U.i64(max(count, 1)), name="qr.scratch"), False
    return ctx.module.alloc(b, max(count, 1) * np.dtype(dt).itemsize, ctx.fail_block), True


def _qr_scratch(kernel) -> int:
    """Per-matrix scratch of a QR: tau (min(m, n)) and a work row (max(n, kq))."""
    m, n = kernel.root.inputs[0].aval.shape[-2:]
    return min(m, n) + max(n, kernel.root.outputs[0].aval.shape[-1])


@opaque_rule("qr")
def _qr(ctx, kernel):
    (a,), (q, r) = kernel.root.inputs, kernel.root.outputs
    m, n = a.aval.shape[-2:]
    kq, kr = q.aval.shape[-1], r.aval.shape[-2]
    k = min(m, n)
    dt = a.aval.dtype
    b = ctx.b
    if m == 0 or _batch_count(kernel) == 0:
        return
    mem, heap = _scratch(ctx, kernel, _qr_scratch(kernel))
    tau = _Mat(b, mem, dt, U.i64(0), 0)
    work = _Mat(b, mem, dt, U.i64(k), 0)

    def one(t):
        Q, R = _view(ctx, q, t, m, kq), _view(ctx, r, t, kr, n)
        W = Q if m >= n else R          # the factorisation's m x n workspace
        if n:
            _copy(b, W, _view(ctx, a, t, m, n), m, n)
        _geqr2(b, W, tau, work, m, n, dt)
        if m >= n and kr and n:         # R: W's upper triangle, zero rows below n
            with U.for_range(b, kr, "ri") as i:
                with U.for_range(b, n, "rj") as j:
                    upper = b.and_(b.icmp_signed("<=", i, j), b.icmp_signed("<", i, U.i64(n)))
                    R.set(i, j, b.select(upper, W.get(i, j), _c(dt, 0)))
        elif m < n:                           # W is R: move the reflectors into Q, zero below
            with U.for_range(b, m, "vi") as i:
                with U.for_range(b, m, "vj") as j:
                    below = b.icmp_signed(">", i, j)
                    Q.set(i, j, b.select(below, W.get(i, j), _c(dt, 0)))
                    with b.if_then(below):
                        W.set(i, j, _c(dt, 0))
        _org2r(b, Q, tau, work, m, kq, k, dt)
    _batch(ctx, kernel, one)
    if heap:
        ctx.module.free(b, mem)


def _geqr2(b, W: _Mat, tau: _Mat, work: _Mat, m: int, n: int, dt):
    """Householder QR of W in place: R on and above the diagonal, the reflectors'
    vectors (first entry 1, implied) below it, their scalings in tau (dlarfg's
    beta = -sign(alpha) * ||x||, tau = (beta - alpha) / beta; tau = 0 when the
    column below the diagonal is already zero)."""
    zero, one = _c(dt, 0), _c(dt, 1)
    if min(m, n) == 0:
        return
    with U.for_range(b, min(m, n), "h") as j:
        j1 = b.add(j, U.i64(1))
        alpha = W.get(j, j)
        # ||(alpha, x)|| from squares of entries scaled by the largest (as dnrm2):
        # unscaled, squares overflow past ~1e19 (float32) and underflow below ~1e-19
        xmax = _amax(b, dt, j1, U.i64(m), lambda i: W.get(i, j))
        amax = U.call_intrinsic(b, "llvm.fabs", [alpha])
        s = b.select(b.fcmp_ordered(">", amax, xmax), amax, xmax)
        s = b.select(b.fcmp_ordered(">", s, zero), s, one)
        ss = _sum(b, dt, j1, U.i64(m), lambda i: _square(b, b.fdiv(W.get(i, j), s)))
        # x is zero when its largest |entry| is (a NaN in x makes ss NaN: not zero)
        xzero = b.and_(b.fcmp_ordered("==", xmax, zero), b.fcmp_ordered("==", ss, zero))
        norm = _fmul(b, s, U.call_intrinsic(
            b, "llvm.sqrt", [b.fadd(_square(b, b.fdiv(alpha, s)), ss)]))
        neg = b.fcmp_ordered("<", alpha, zero)
        beta = b.select(neg, norm, b.fneg(norm))
        t = b.select(xzero, zero, b.fdiv(b.fsub(beta, alpha), beta))
        tau.set(0, j, t)
        scale = b.select(xzero, one, b.fdiv(one, b.fsub(alpha, beta)))
        with U.for_between(b, j1, U.i64(m), "v") as i:
            W.set(i, j, _fmul(b, W.get(i, j), scale))
        W.set(j, j, b.select(xzero, alpha, beta))
        _reflect(b, W, W, j, j, j1, U.i64(n), t, work, m, dt)


def _reflect(b, V: _Mat, C: _Mat, vcol, row0, c0, c1, t, work: _Mat, m: int, dt):
    """C[row0:, c0:c1] -= t v (v^T C[row0:, c0:c1]), v = (1, V[row0+1:, vcol]):
    w = v^T C accumulated row by row (axpys along C's rows), then the rank-1 update."""
    with U.for_between(b, c0, c1, "w0") as c:
        work.set(0, c, C.get(row0, c))
    with U.for_between(b, b.add(row0, U.i64(1)), U.i64(m), "wr") as i:
        vi = V.get(i, vcol)
        with U.for_between(b, c0, c1, "wc") as c:
            work.set(0, c, b.fadd(work.get(0, c), _fmul(b, vi, C.get(i, c)),
                                  flags=("contract",)))
    with U.for_between(b, c0, c1, "u0") as c:
        C.set(row0, c, b.fsub(C.get(row0, c), _fmul(b, t, work.get(0, c)), flags=("contract",)))
    with U.for_between(b, b.add(row0, U.i64(1)), U.i64(m), "ur") as i:
        tv = _fmul(b, t, V.get(i, vcol))
        with U.for_between(b, c0, c1, "uc") as c:
            C.set(i, c, b.fsub(C.get(i, c), _fmul(b, tv, work.get(0, c)), flags=("contract",)))


def _org2r(b, Q: _Mat, tau: _Mat, work: _Mat, m: int, kq: int, k: int, dt):
    """Q = H_0 ... H_{k-1} I[:, :kq] in place, the reflectors' vectors below Q's
    diagonal in its first k columns (dorg2r): columns from k on start as the
    identity's, and H_j is applied to the columns right of j before column j
    becomes (0, .., 1 - tau_j, -tau_j v)."""
    zero, one = _c(dt, 0), _c(dt, 1)
    if kq > k:
        with U.for_range(b, m, "ei") as i:
            with U.for_range(b, kq - k, "ej") as jj:
                j = b.add(jj, U.i64(k))
                Q.set(i, j, b.select(b.icmp_signed("==", i, j), one, zero))
    if k == 0:
        return
    with _down(b, 0, k, "g") as j:
        j1 = b.add(j, U.i64(1))
        t = tau.get(0, j)
        _reflect(b, Q, Q, j, j, j1, U.i64(kq), t, work, m, dt)
        with U.for_between(b, j1, U.i64(m), "s") as i:
            Q.set(i, j, b.fneg(_fmul(b, t, Q.get(i, j))))
        Q.set(j, j, b.fsub(one, t))
        with U.for_between(b, U.i64(0), j, "z") as i:
            Q.set(i, j, zero)


def _qr_flops(kernel):
    a = kernel.root.inputs[0].aval
    return 4 * a.size * max(min(a.shape[-2:]), 1)


PARALLEL_OPAQUE["qr"] = _extent_of(_qr_flops, _qr_scratch)


# ------------------------------------------------------------------ householder panel

@opaque_rule("householder_panel")
def _householder_panel(ctx, kernel):
    """geqr2 on the panel, then larft: t[:i, i] = -tau_i t[:i, :i] (V[:, :i]^T v_i),
    t[i, i] = tau_i. V^T v_i is gathered row by row into t's row i (below the
    diagonal, where t is zero), then consumed and cleared."""
    (a,), (packed, t) = kernel.root.inputs, kernel.root.outputs
    m, n = a.aval.shape[-2:]
    dt = a.aval.dtype
    b = ctx.b
    if n == 0 or _batch_count(kernel) == 0:
        return
    mem, heap = _scratch(ctx, kernel, _panel_scratch(kernel))
    tau = _Mat(b, mem, dt, U.i64(0), 0)
    work = _Mat(b, mem, dt, U.i64(n), 0)
    zero = _c(dt, 0)

    def one(idx):
        W, T = _view(ctx, packed, idx, m, n), _view(ctx, t, idx, n, n)
        _copy(b, W, _view(ctx, a, idx, m, n), m, n)
        _geqr2(b, W, tau, work, m, n, dt)
        with U.for_range(b, n, "ti") as i:
            with U.for_range(b, n, "tj") as j:
                T.set(i, j, b.select(b.icmp_signed("==", i, j), tau.get(0, i), zero))
            # z_r = V[i, r] + sum_{l > i} V[l, r] V[l, i]  (r < i), into T[i, r]
            with U.for_between(b, U.i64(0), i, "zr") as r:
                T.set(i, r, W.get(i, r))
            with U.for_between(b, b.add(i, U.i64(1)), U.i64(m), "zl") as l:
                vli = W.get(l, i)
                with U.for_between(b, U.i64(0), i, "zc") as r:
                    T.set(i, r, b.fadd(T.get(i, r), _fmul(b, W.get(l, r), vli),
                                       flags=("contract",)))
            ti = b.fneg(tau.get(0, i))
            with U.for_between(b, U.i64(0), i, "tr") as r:
                s = _sum(b, dt, r, i, lambda c: _fmul(b, T.get(r, c), T.get(i, c)), "tc")
                T.set(r, i, _fmul(b, ti, s))
            with U.for_between(b, U.i64(0), i, "tz") as r:
                T.set(i, r, zero)
    _batch(ctx, kernel, one)
    if heap:
        ctx.module.free(b, mem)


def _panel_scratch(kernel) -> int:
    """Per-matrix scratch of a panel: tau and a work row, n each."""
    return 2 * kernel.root.inputs[0].aval.shape[-1]


def _panel_flops(kernel):
    a = kernel.root.inputs[0].aval
    return 4 * a.size * a.shape[-1]


PARALLEL_OPAQUE["householder_panel"] = _extent_of(_panel_flops, _panel_scratch)
