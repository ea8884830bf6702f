"""Golub-Kahan-Reinsch implicit QR on an upper bidiagonal (the svd routine's
iteration, opaque_svd.py), bottom up, its rotations recorded for the rows of U^T
and V^T (eigen_rotations.py).
"""
from __future__ import annotations

import llvmlite.ir as ir

from .eigen_ir import F64, I1, I64, _Code, _f, _sweep_until_split

MAXIT_SVD = 75                      # QR iterations allowed per singular value


def _golub_kahan(c: _Code, q, e, small, tol, urots, vrots):
    """Golub-Kahan-Reinsch implicit QR on the bidiagonal (q, e), bottom up; the
    rotations recorded for the rows of U^T and V^T. Returns an i1: all converged."""
    b = c.b
    ok = c.var(I1, ir.Constant(I1, 1), "ok")
    k = c.var(I64, c.sub(small, 1), "k")
    with c.while_(lambda: c.icmp(">=", k.get(), 0), "gk"):
        kv = k.get()

        def split():
            lv, cancel = _split_point(c, q, e, kv, tol)
            with b.if_then(cancel):
                _cancel(c, q, e, lv, kv, tol, urots)
            return c.icmp("==", lv, kv), lv
        _sweep_until_split(c, ok, MAXIT_SVD, "gkit", split,
                           lambda lv: _gk_sweep(c, q, e, lv, kv, urots, vrots))
        k.set(b.select(ok.get(), c.sub(kv, 1), c.i(-1)))
    return ok.get()


def _split_point(c: _Code, q, e, kv, tol) -> tuple:
    """(l, cancel): the top of the unreduced block ending at k (e[l] negligible, or
    l = 0), with cancel set when q[l-1] is negligible instead."""
    b = c.b
    lvar = c.var(I64, kv, "l")
    cancel = c.var(I1, ir.Constant(I1, 0), "cancel")
    searching = c.var(I1, ir.Constant(I1, 1), "searching")
    with c.while_(lambda: b.and_(searching.get(), c.icmp(">", lvar.get(), 0)), "split"):
        lv = lvar.get()
        with b.if_else(c.fcmp("<=", c.fabs(c.ld(e, lv)), tol)) as (split, other):
            with split:
                searching.set(ir.Constant(I1, 0))
            with other:
                with b.if_else(c.fcmp("<=", c.fabs(c.ld(q, c.sub(lv, 1))), tol)) as (cn, up):
                    with cn:
                        cancel.set(ir.Constant(I1, 1))
                        searching.set(ir.Constant(I1, 0))
                    with up:
                        lvar.set(c.sub(lv, 1))
    return lvar.get(), cancel.get()


def _cancel(c: _Code, q, e, lv, kv, tol, urots) -> None:
    """q[l-1] negligible: rotations (l-1, i) chase e[l] out of the block."""
    b = c.b
    cs = c.var(F64, _f(0), "cc")
    sn = c.var(F64, _f(1), "cs")
    l1 = c.sub(lv, 1)
    i = c.var(I64, lv, "ci")
    go = c.var(I1, ir.Constant(I1, 1), "cgo")
    with c.while_(lambda: b.and_(go.get(), c.icmp("<=", i.get(), kv)), "cancel"):
        iv = i.get()
        ei = c.ld(e, iv)
        f = c.fmul(sn.get(), ei)
        c.st(c.fmul(cs.get(), ei), e, iv)
        with b.if_else(c.fcmp("<=", c.fabs(f), tol)) as (stop, rot):
            with stop:
                go.set(ir.Constant(I1, 0))
            with rot:
                g = c.ld(q, iv)
                h = c.hypot(f, g)
                c.st(h, q, iv)
                cn, s = c.fdiv(g, h), c.fdiv(f, h)      # s = -(Reinsch's s)
                cs.set(cn)
                sn.set(b.fneg(s))
                urots.add(l1, iv, cn, s)
                i.set(c.add(iv, 1))


def _gk_sweep(c: _Code, q, e, lv, kv, urots, vrots) -> None:
    """One implicit QR step with the shift from the trailing 2 x 2 on block [l, k]."""
    b = c.b
    x0, y0, z0 = c.ld(q, lv), c.ld(q, c.sub(kv, 1)), c.ld(q, kv)
    g0, h0 = c.ld(e, c.sub(kv, 1)), c.ld(e, kv)
    num = c.fma(c.fsub(y0, z0), c.fadd(y0, z0), c.fmul(c.fsub(g0, h0), c.fadd(g0, h0)))
    f0 = c.fdiv(num, c.fmul(c.fmul(2.0, h0), y0))
    g1 = c.hypot(f0, _f(1))
    inner = c.fsub(c.fdiv(y0, c.fadd(f0, c.copysign(g1, f0))), h0)
    f = c.var(F64, c.fdiv(c.fma(c.fsub(x0, z0), c.fadd(x0, z0), c.fmul(h0, inner)), x0), "f")
    x = c.var(F64, x0, "x")
    cs = c.var(F64, _f(1), "c")
    sn = c.var(F64, _f(1), "s")
    with c.loop(c.add(lv, 1), c.add(kv, 1), "gks") as i:
        im = c.sub(i, 1)
        g = c.ld(e, i)
        y = c.ld(q, i)
        h = c.fmul(sn.get(), g)
        g = c.fmul(cs.get(), g)
        z = c.hypot(f.get(), h)
        c.st(z, e, im)
        nz = c.fcmp("!=", z, 0.0)
        zs = b.select(nz, z, _f(1))
        cv = b.select(nz, c.fdiv(f.get(), zs), _f(1))
        sv = b.select(nz, c.fdiv(h, zs), _f(0))
        xv = x.get()
        fn = c.fma(xv, cv, c.fmul(g, sv))
        g = c.fsub(c.fmul(g, cv), c.fmul(xv, sv))
        h = c.fmul(y, sv)
        y = c.fmul(y, cv)
        vrots.add(im, i, cv, b.fneg(sv))
        z = c.hypot(fn, h)
        c.st(z, q, im)
        nz = c.fcmp("!=", z, 0.0)
        zs = b.select(nz, z, _f(1))
        cv = b.select(nz, c.fdiv(fn, zs), cv)
        sv = b.select(nz, c.fdiv(h, zs), sv)
        f.set(c.fma(cv, g, c.fmul(sv, y)))
        x.set(c.fsub(c.fmul(cv, y), c.fmul(sv, g)))
        cs.set(cv)
        sn.set(sv)
        urots.add(im, i, cv, b.fneg(sv))
    c.st(_f(0), e, lv)
    c.st(f.get(), e, kv)
    c.st(x.get(), q, kv)
