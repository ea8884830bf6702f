"""Lowering of `eigh` as an opaque kernel: a loop over the batch (eigen_batch.py)
calling a routine per matrix, in float64 inside.

The triangle read is copied into a float64 work matrix scaled by a power of two
(max |a| in [1, 2): no overflow in the squares), reduced to tridiagonal form by
Householder reflectors (each step one pass over the trailing lower triangle: the
previous step's rank-2 update, this step's symmetric product and its transpose
half fused per row), Q^T formed in place (GROUP reflectors per pass over it, in
compact WY form: eigen_reflectors.py), then implicit QL with Wilkinson shifts on
the tridiagonal, its rotations recorded and applied to Q^T in batches
(eigen_rotations.py).

Eigenvalues come out ascending, with their vectors. A matrix with a NaN or inf
entry, or whose iteration would not converge (a bounded number of sweeps), gives
NaN outputs, as JAX's CPU kernels do; every loop is bounded.
"""
from __future__ import annotations

import llvmlite.ir as ir

from . import irutil as U
from .eigen_batch import _extent, _routine, _run_batched, _total
from .eigen_ir import (EPS, F64, FAST, I1, I64, PTR, _any_nonfinite, _carve, _Code, _f,
                       _gather_columns, _Int, _load_in, _nan_fill, _scale_factors, _sort,
                       _store_out, _stride, _sweep_until_split)
from .eigen_reflectors import GROUP, _Group, _house
from .eigen_rotations import _capacity, _rotation_lists, _Rotations
from .opaque import PARALLEL_OPAQUE, opaque_rule

TINY = 2.0 ** -1000                 # an off-diagonal this small is zero (scaled to ~1)
MAXIT_EIGH = 60                     # QL iterations allowed per eigenvalue


def _eigh_parts(n, ld) -> list:
    """Scratch words: the work matrix (rows ld apart), 9 vectors, a group of
    reflectors' copies, the rotation lists."""
    return [n * ld, 9 * (n + 1), GROUP * ld, 4 * (_capacity(n) + 1)]


def _emit_eigh(fn: ir.Function, dt) -> None:
    """eigh(a, v, w, n, lower, scratch) for one n x n matrix."""
    a, vout, wout, n, lower, scratch = fn.args
    c = _Code(ir.IRBuilder(fn.append_basic_block("entry")))
    b = c.b
    nn = _Int(b, n)
    ld = _stride(c, n)
    mat, vecs, grp, rot = _carve(c, scratch, _eigh_parts(nn, _Int(b, ld)))
    d, e, tau, pa, pb, zero, perm = (c.at(vecs, c.mul(q, c.add(n, 1))) for q in range(7))
    cap = _capacity(nn).v

    with b.if_then(_any_nonfinite(c, a, n, n, dt)):
        _nan_fill(c, vout, c.mul(n, n), dt)
        _nan_fill(c, wout, n, dt)
        b.ret_void()
    amax = _load_lower(c, a, mat, n, ld, lower, dt)
    down, up = _scale_factors(c, amax)
    with c.loop(0, n, "srow") as i:
        c.scale(down, c.at(mat, c.mul(i, ld)), 0, c.add(i, 1))

    _tridiagonalise(c, mat, n, ld, d, e, tau, (pa, pb, zero))
    _form_qt(c, mat, n, ld, tau, grp)
    rots = _Rotations(c, mat, n, ld, _rotation_lists(c, rot, cap), cap)
    ok = _ql(c, d, e, n, rots)
    rots.flush()
    with b.if_then(b.not_(ok)):
        _nan_fill(c, vout, c.mul(n, n), dt)
        _nan_fill(c, wout, n, dt)
        b.ret_void()
    _sort(c, d, perm, n, descending=False)
    with c.loop(0, n, "w") as j:
        _store_out(c, c.fmul(c.ld(d, j), up), wout, j, dt)
    _gather_columns(c, vout, n, n, mat, ld, perm, n, dt)
    b.ret_void()


def _load_lower(c: _Code, a, mat, n, ld, lower, dt):
    """mat's lower triangle = the symmetric matrix read from a's `lower` (or upper)
    triangle; returns the largest |entry| read."""
    b = c.b
    amax = c.var(F64, _f(0), "amax")
    with b.if_else(c.icmp("!=", lower, 0)) as (lo, up):
        for branch, from_lower in ((lo, True), (up, False)):
            with branch:
                with c.loop(0, n, "lrow") as i:
                    with c.loop(0, c.add(i, 1), "lcol") as j:
                        src = c.add(c.mul(i, n), j) if from_lower else c.add(c.mul(j, n), i)
                        x = _load_in(c, a, src, dt)
                        c.st(x, mat, c.add(c.mul(i, ld), j))
                        ax = c.fabs(x)
                        amax.set(b.select(c.fcmp(">", ax, amax.get()), ax, amax.get()))
    return amax.get()


def _tridiagonalise(c: _Code, mat, n, ld, d, e, tau, vecs) -> None:
    """Householder reduction of the symmetric matrix in mat's lower triangle:
    Q^T A Q = tridiag(d, e) (e[k] couples k and k+1, e[n-1] = 0), reflector k's
    vector in row k's upper part (mat[k, k+1] = 1), its tau in tau[k].

    Step k's rank-2 update A -= v q^T + q v^T waits ("pending") until step k+1's
    pass, which applies it row by row while accumulating that step's product
    p = A v (the lower triangle read once per step: both halves of the symmetric
    product from each row). Column k+1 gets it first, to make the next reflector."""
    b = c.b
    pa, pb, zero = vecs
    c.fill(_f(0), zero, 0, n)
    pv = c.var(PTR, zero, "pv")
    pq = c.var(PTR, zero, "pq")
    pnew = c.var(PTR, pa, "pnew")
    pother = c.var(PTR, pb, "pother")
    with c.loop(0, c.sub(n, 1), "tri") as k:
        PV, PQ, P = pv.get(), pq.get(), pnew.get()
        k1 = c.add(k, 1)
        # column k (rows >= k) gets the pending update
        pvk, pqk = c.ld(PV, k), c.ld(PQ, k)
        kk = c.add(c.mul(k, ld), k)
        c.st(c.fsub(c.ld(mat, kk), c.fmul(2.0, c.fmul(pvk, pqk))), mat, kk)
        vk = c.at(mat, c.mul(k, ld))
        with c.loop(k1, n, "colk") as i:
            ik = c.add(c.mul(i, ld), k)
            upd = c.fma(c.ld(PV, i), pqk, c.fmul(c.ld(PQ, i), pvk))
            x = c.fsub(c.ld(mat, ik), upd)
            c.st(x, mat, ik)
            c.st(x, vk, i)                      # the column, copied into row k
        c.st(c.ld(mat, kk), d, k)
        beta, t = _house(c, vk, k1, n)
        c.st(beta, e, k)
        c.st(t, tau, k)
        # pass: rows i > k apply the pending update; P = A v over the trailing block
        c.fill(_f(0), P, k1, n)
        with c.loop(k1, n, "trow") as i:
            row = c.at(mat, c.mul(i, ld))
            pvi, pqi, vi = c.ld(PV, i), c.ld(PQ, i), c.ld(vk, i)
            acc = c.var(F64, _f(0), "acc")
            with c.loop(k1, i, "tcol") as j:
                upd = c.fma(pvi, c.ld(PQ, j), c.fmul(pqi, c.ld(PV, j)))
                w = c.fsub(c.ld(row, j), upd)
                c.st(w, row, j)
                acc.set(c.fadd(acc.get(), c.fmul(w, c.ld(vk, j), flags=FAST), flags=FAST))
                c.st(c.fma(w, vi, c.ld(P, j)), P, j)
            wd = c.fsub(c.ld(row, i), c.fmul(2.0, c.fmul(pvi, pqi)))
            c.st(wd, row, i)
            c.st(c.fadd(c.ld(P, i), c.fma(wd, vi, acc.get())), P, i)
        # q = tau P - (tau^2 / 2) (P . v) v becomes the pending update
        c.scale(t, P, k1, n)
        kq = c.fmul(c.fmul(-0.5, t), c.dot(P, vk, k1, n))
        c.axpy(kq, vk, P, k1, n)
        pv.set(vk)
        pq.set(P)
        pnew.set(pother.get())
        pother.set(P)
    with b.if_then(c.icmp(">", n, 0)):
        last = c.sub(n, 1)
        c.st(c.ld(mat, c.add(c.mul(last, ld), last)), d, last)
        c.st(_f(0), e, last)


def _form_qt(c: _Code, mat, n, ld, tau, grp) -> None:
    """Q^T = H_{n-2} ... H_0 in place of the reflectors (as LAPACK's orgtr),
    GROUP of them at a time, from the last: their vectors (rows k, columns > k)
    are copied out, rows and columns k + 1 become the identity's, then the rows
    from the group's smallest k + 1 on are multiplied by them (reflector k acts
    on columns > k; rows it does not reach have zeros there, so stay)."""
    group = _Group(c, grp, ld, n)
    with group.each(n) as (top, first):     # column k + 1 for reflector k (k = -1: none)
        group.load(c.sub(top, 1), tau, mat, ld, 1, 1)
        with c.loop(first, c.add(top, 1), "qid") as col:
            c.st(_f(1), mat, c.add(c.mul(col, ld), col))
            with c.loop(c.add(col, 1), n, "qz") as j:
                c.st(_f(0), mat, c.add(c.mul(col, ld), j))
                c.st(_f(0), mat, c.add(c.mul(j, ld), col))
        group.apply(mat, ld, (first, n), first)


def _ql(c: _Code, d, e, n, rots: _Rotations):
    """Implicit QL with Wilkinson shifts on tridiag(d, e) (e[k] couples k, k+1),
    its rotations recorded for the rows of Q^T. Returns an i1: all converged."""
    b = c.b
    ok = c.var(I1, ir.Constant(I1, 1), "ok")
    l_ = c.var(I64, 0, "l")
    with c.while_(lambda: c.icmp("<", l_.get(), n), "ql"):
        lv = l_.get()

        def split():
            mv = _block_end(c, d, e, n, lv)
            return c.icmp("==", mv, lv), mv
        _sweep_until_split(c, ok, MAXIT_EIGH, "qlit", split,
                           lambda mv: _ql_sweep(c, d, e, lv, mv, rots))
        l_.set(b.select(ok.get(), c.add(lv, 1), n))
    return ok.get()


def _block_end(c: _Code, d, e, n, lv):
    """m: the end of the unreduced block from l (e[m] negligible, or m = n - 1)."""
    b = c.b
    m = c.var(I64, lv, "m")

    def split_not_found():
        mv = m.get()
        at_end = c.icmp(">=", mv, c.sub(n, 1))
        m1 = b.select(at_end, mv, c.add(mv, 1))
        dd = c.fadd(c.fabs(c.ld(d, mv)), c.fabs(c.ld(d, m1)))
        em = c.fabs(c.ld(e, mv))
        small = b.or_(c.fcmp("<=", em, c.fmul(EPS, dd)), c.fcmp("<=", em, TINY))
        return b.not_(b.or_(at_end, small))

    with c.while_(split_not_found, "qlm"):
        m.set(c.add(m.get(), 1))
    return m.get()


def _ql_sweep(c: _Code, d, e, lv, mv, rots: _Rotations) -> None:
    """One implicit QL step on the block [lv, mv] (e[lv] is not negligible)."""
    b = c.b
    dl, el = c.ld(d, lv), c.ld(e, lv)
    g0 = c.fdiv(c.fsub(c.ld(d, c.add(lv, 1)), dl), c.fmul(2.0, el))
    r0 = c.hypot(g0, _f(1))
    g = c.var(F64, c.fadd(c.fsub(c.ld(d, mv), dl), c.fdiv(el, c.fadd(g0, c.copysign(r0, g0)))))
    s = c.var(F64, _f(1), "s")
    cs = c.var(F64, _f(1), "c")
    p = c.var(F64, _f(0), "p")
    i = c.var(I64, c.sub(mv, 1), "i")
    under = c.var(I1, ir.Constant(I1, 0), "under")
    with c.while_(lambda: b.and_(c.icmp(">=", i.get(), lv), b.not_(under.get())), "qls"):
        iv = i.get()
        i1 = c.add(iv, 1)
        ei = c.ld(e, iv)
        f = c.fmul(s.get(), ei)
        bb = c.fmul(cs.get(), ei)
        r = c.hypot(f, g.get())
        c.st(r, e, i1)
        with b.if_else(c.fcmp("==", r, 0.0)) as (zero, go):
            with zero:                      # underflow: deflate here and start again
                c.st(c.fsub(c.ld(d, i1), p.get()), d, i1)
                c.st(_f(0), e, mv)
                under.set(ir.Constant(I1, 1))
            with go:
                inv = c.fdiv(1.0, r)
                sn, cn = c.fmul(f, inv), c.fmul(g.get(), inv)
                gg = c.fsub(c.ld(d, i1), p.get())
                rr = c.fma(c.fsub(c.ld(d, iv), gg), sn, c.fmul(2.0, c.fmul(cn, bb)))
                pp = c.fmul(sn, rr)
                c.st(c.fadd(gg, pp), d, i1)
                g.set(c.fsub(c.fmul(cn, rr), bb))
                p.set(pp)
                s.set(sn)
                cs.set(cn)
                rots.add(iv, i1, cn, sn)
                i.set(c.sub(iv, 1))
    with b.if_then(b.not_(under.get())):
        c.st(c.fsub(c.ld(d, lv), p.get()), d, lv)
        c.st(g.get(), e, lv)
        c.st(_f(0), e, mv)


# ------------------------------------------------------------------ kernel

@opaque_rule("eigh")
def _eigh(ctx, kernel):
    eqn = kernel.root
    a = eqn.inputs[0]
    n = a.aval.shape[-1]
    module = ctx.b.module
    fn = _routine(module, "eigh", a.aval.dtype, [PTR, PTR, PTR, I64, I64, PTR], _emit_eigh)
    lower = int(bool(eqn.params["lower"]))

    def call(c, ptrs, scratch):
        c.b.call(fn, ptrs + [U.i64(n), c.i(lower), scratch])
    _run_batched(ctx, kernel, _total(_eigh_parts(n, n + 16)), [n * n, n * n, n], call)


PARALLEL_OPAQUE["eigh"] = _extent
