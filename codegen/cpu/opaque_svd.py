"""Lowering of `svd` as an opaque kernel: a loop over the batch (eigen_batch.py)
calling a routine per matrix, in float64 inside.

The tall orientation (a^T when m < n), scaled by a power of two as for eigh, is
reduced to upper bidiagonal form (one pass per column: the left and right
reflectors' updates and the next column's accumulation fused per row), U^T and
V^T formed from the reflectors (eigen_reflectors.py; U^T with all M rows for
full_matrices: the orthonormal completion), then Golub-Kahan-Reinsch implicit QR
(svd_golub_kahan.py) with rotations recorded as for eigh; negative singular
values flip their row of V^T. compute_uv=False forms and rotates nothing.

Singular values come out descending, with their vectors. A matrix with a NaN or
inf entry, or whose iteration would not converge (a bounded number of sweeps),
gives NaN outputs, as JAX's CPU kernels do; every loop is bounded.
"""
from __future__ import annotations

import math

import llvmlite.ir as ir

from . import irutil as U
from .eigen_batch import _extent, _routine, _run_batched, _total
from .eigen_ir import (EPS, F64, FAST, I64, PTR, _any_nonfinite, _carve, _Code, _f,
                       _gather_columns, _gather_rows, _Int, _load_in, _nan_fill,
                       _scale_factors, _sort, _store_out, _stride)
from .eigen_reflectors import GROUP, _Group, _house, _identity
from .eigen_rotations import _capacity, _rotation_lists, _Rotations
from .opaque import PARALLEL_OPAQUE, opaque_rule
from .svd_golub_kahan import _golub_kahan


def _svd_parts(mn, num, nn, big, small, uv) -> list:
    """Scratch words: the work matrix (M rows), U^T (nu rows), V^T (N rows) (each
    row a padded stride long), 7 vectors and a group of left reflectors' columns,
    the rotation lists of U and V (none without compute_uv)."""
    return [mn, uv * num, uv * nn, (8 + GROUP) * (big + 1),
            uv * 8 * (_capacity(small) + 1)]


def _emit_svd(fn: ir.Function, dt) -> None:
    """svd(a, s, u, vt, m, n, full, uv, scratch) for one m x n matrix, as the tall
    M x N = max x min problem (a^T when m < n, whose U and V trade places)."""
    a, sout, uout, vtout, m, n, full, uv = fn.args[:8]
    scratch = fn.args[8]
    c = _Code(ir.IRBuilder(fn.append_basic_block("entry")))
    b = c.b
    trans = c.icmp("<", m, n)
    big, small = b.select(trans, n, m), b.select(trans, m, n)
    is_full, with_uv = c.icmp("!=", full, 0), c.icmp("!=", uv, 0)
    nu = b.select(is_full, big, small)
    bi, si = _Int(b, big), _Int(b, small)
    ldw, ldu = _stride(c, small), _stride(c, big)
    parts = _svd_parts(bi * _Int(b, ldw), _Int(b, nu) * _Int(b, ldu), si * _Int(b, ldw), bi, si,
                       _Int(b, uv))
    mat, ut, vt, vecs, rot = _carve(c, scratch, parts)
    q, e, taul, taur, wl, acc, perm, col = (c.at(vecs, c.mul(k, c.add(big, 1)))
                                            for k in range(8))
    cap = _capacity(si).v
    um, vn = b.select(is_full, m, small), b.select(is_full, n, small)

    def fail():
        _nan_fill(c, sout, small, dt)
        with b.if_then(with_uv):
            _nan_fill(c, uout, c.mul(m, um), dt)
            _nan_fill(c, vtout, c.mul(vn, n), dt)
        b.ret_void()

    with b.if_then(_any_nonfinite(c, a, m, n, dt)):
        fail()
    amax = _load_tall(c, a, mat, big, small, ldw, n, trans, dt)
    down, up = _scale_factors(c, amax)
    c.scale(down, mat, 0, c.mul(big, ldw))

    _bidiagonalise(c, mat, big, small, ldw, (q, e, taul, taur, wl, acc))
    bnorm = c.var(F64, _f(0), "bnorm")
    with c.loop(0, small, "bnorm") as k:
        t = c.fadd(c.fabs(c.ld(q, k)), c.fabs(c.ld(e, k)))
        bnorm.set(b.select(c.fcmp(">", t, bnorm.get()), t, bnorm.get()))
    tol = c.fmul(EPS, bnorm.get())
    with b.if_then(with_uv):
        _form_vt(c, mat, vt, small, ldw, taur, col)
        _form_ut(c, mat, ut, big, small, nu, (ldw, ldu), taul, col)
    urots = _Rotations(c, ut, big, ldu, _rotation_lists(c, rot, cap), cap, with_uv)
    vrots = _Rotations(c, vt, small, ldw,
                       _rotation_lists(c, c.at(rot, c.mul(c.add(cap, 1), 4)), cap), cap, with_uv)
    ok = _golub_kahan(c, q, e, small, tol, urots, vrots)
    with b.if_then(with_uv):
        urots.flush()
        vrots.flush()
    with b.if_then(b.not_(ok)):
        fail()
    with c.loop(0, small, "sign") as k:       # singular values >= 0: flip v's sign
        qk = c.ld(q, k)
        with b.if_then(c.fcmp("<", qk, 0.0)):
            c.st(b.fneg(qk), q, k)
            with b.if_then(with_uv):
                c.scale(_f(-1), c.at(vt, c.mul(k, ldw)), 0, small)
    _sort(c, q, perm, small, descending=True)
    with c.loop(0, small, "s") as j:
        _store_out(c, c.fmul(c.ld(q, j), up), sout, j, dt)
    with b.if_then(with_uv):
        tld, nld = b.select(trans, ldw, ldu), b.select(trans, ldu, ldw)
        _gather_columns(c, uout, m, um, b.select(trans, vt, ut), tld, perm, small, dt)
        _gather_rows(c, vtout, vn, n, b.select(trans, ut, vt), nld, perm, small, dt)
    b.ret_void()


def _load_tall(c: _Code, a, mat, big, small, ld, n, trans, dt):
    """mat (big x small) = a, or a^T when trans; returns the largest |entry|."""
    b = c.b
    amax = c.var(F64, _f(0), "amax")
    with b.if_else(trans) as (tr, keep):
        for branch, transposed in ((tr, True), (keep, False)):
            with branch:
                with c.loop(0, big, "trow") as i:
                    with c.loop(0, small, "tcol") as j:
                        src = c.add(c.mul(j, n), i) if transposed else c.add(c.mul(i, n), j)
                        x = _load_in(c, a, src, dt)
                        c.st(x, mat, c.add(c.mul(i, ld), j))
                        ax = c.fabs(x)
                        amax.set(b.select(c.fcmp(">", ax, amax.get()), ax, amax.get()))
    return amax.get()


def _bidiagonalise(c: _Code, mat, big, small, ld, vecs) -> None:
    """Householder reduction of mat (M x N, M >= N) to upper bidiagonal form:
    diagonal q, superdiagonal e (e[k] couples k-1 and k, e[0] = 0). Left reflector
    k's vector sits in column k (mat[k, k] = 1), the right one's in row k
    (mat[k, k+1] = 1).

    One pass over the trailing rows per column c0: each row takes the previous
    left reflector's update (its product wl = A^T u made at the end of the
    previous pass), then the previous right reflector's (dot and axpy), then adds
    itself, times its entry in column c0, into acc, from which column c0's left
    reflector gets its product without another pass: wl = row c0 + acc / (alpha - beta)."""
    b = c.b
    q, e, taul, taur, wl, acc = vecs
    c.st(_f(0), e, 0)
    tl = c.var(F64, _f(0), "tl")
    tr = c.var(F64, _f(0), "tr")
    with c.loop(0, small, "bid") as c0:
        c1 = c.add(c0, 1)
        has_prev = c.icmp(">", c0, 0)
        prev = b.select(has_prev, c.sub(c0, 1), c0)
        y = c.at(mat, c.mul(prev, ld))
        TL, TR = tl.get(), tr.get()
        c.fill(_f(0), acc, c0, small)      # acc[c0] sums the squares below alpha
        with c.loop(c0, big, "brow") as i:
            row = c.at(mat, c.mul(i, ld))
            below = c.icmp(">", i, c0)
            with b.if_else(has_prev) as (update, first):
                with update:
                    a1 = b.fneg(c.fmul(TL, c.ld(row, prev)))
                    z = c.var(F64, _f(0), "z")
                    with c.loop(c0, small, "bl") as j:       # left update, right product
                        r = c.fma(a1, c.ld(wl, j), c.ld(row, j))
                        c.st(r, row, j)
                        z.set(c.fadd(z.get(), c.fmul(r, c.ld(y, j), flags=FAST), flags=FAST))
                    a2 = b.fneg(c.fmul(TR, z.get()))
                    x = c.fma(a2, c.ld(y, c0), c.ld(row, c0))
                    with b.if_else(below) as (gather, top):
                        with gather:                           # right update, into acc
                            with c.loop(c0, small, "br") as j:
                                r = c.fma(a2, c.ld(y, j), c.ld(row, j))
                                c.st(r, row, j)
                                c.st(c.fma(x, r, c.ld(acc, j)), acc, j)
                        with top:
                            c.axpy(a2, y, row, c0, small)
                with first:
                    with b.if_then(below):
                        c.axpy(c.ld(row, c0), row, acc, c0, small)
        sig = c.var(F64, c.ld(acc, c0), "sig")
        # column c0's reflector, from alpha and the sum of squares below it
        rowc = c.at(mat, c.mul(c0, ld))
        alpha = c.ld(rowc, c0)
        beta = c.var(F64, alpha, "beta")
        t = c.var(F64, _f(0), "t")
        sc = c.var(F64, _f(0), "sc")
        with b.if_then(c.fcmp(">", sig.get(), 0.0)):
            nrm = c.sqrt(c.fma(alpha, alpha, sig.get()))
            bt = b.select(c.fcmp(">=", alpha, 0.0), b.fneg(nrm), nrm)
            t.set(c.fdiv(c.fsub(bt, alpha), bt))
            sc.set(c.fdiv(1.0, c.fsub(alpha, bt)))
            beta.set(bt)
            with c.loop(c1, big, "bcol") as i:
                ic = c.add(c.mul(i, ld), c0)
                c.st(c.fmul(c.ld(mat, ic), sc.get()), mat, ic)
        c.st(_f(1), rowc, c0)
        c.st(beta.get(), q, c0)
        c.st(t.get(), taul, c0)
        with c.loop(c1, small, "wl") as j:
            w = c.fma(sc.get(), c.ld(acc, j), c.ld(rowc, j))
            c.st(w, wl, j)
            c.st(c.fsub(c.ld(rowc, j), c.fmul(t.get(), w)), rowc, j)
        tl.set(t.get())
        c.st(_f(0), taur, c0)
        with b.if_then(c.icmp("<", c1, small)):
            br, trv = _house(c, rowc, c1, small)
            c.st(br, e, c1)
            c.st(trv, taur, c0)
        tr.set(c.ld(taur, c0))


def _form_vt(c: _Code, mat, vt, small, ld, taur, cols) -> None:
    """V^T = G_{N-2} ... G_0 (right reflectors, vectors in mat's rows; both ld),
    GROUP at a time (copies at cols)."""
    _identity(c, vt, small, small, ld)
    group = _Group(c, cols, c.add(small, 1), small)
    with group.each(c.sub(small, 1)) as (top, first):
        group.load(top, taur, mat, ld, 1, 1)
        first1 = c.add(first, 1)
        group.apply(vt, ld, (first1, small), first1)


def _form_ut(c: _Code, mat, ut, big, small, nu, lds, taul, cols) -> None:
    """U^T = H_{N-1} ... H_0 (left reflectors, vectors in mat's columns), GROUP at
    a time (copies at cols), its first nu rows (N, or all M: the orthonormal
    completion for full_matrices)."""
    ldw, ldu = lds
    _identity(c, ut, nu, big, ldu)
    group = _Group(c, cols, c.add(big, 1), big)
    with group.each(small) as (top, first):
        group.load(top, taul, mat, 1, ldw, 0)
        group.apply(ut, ldu, (first, nu), first)


# ------------------------------------------------------------------ kernel

def _svd_words(m, n, full: bool, uv: bool):
    """Scratch words for an m x n svd: _svd_parts at (M, N) = (max, min), bounded
    above where a size is symbolic (max and min are then unknown)."""
    if U.is_symbolic(m) or U.is_symbolic(n):      # the strides: at most 16 more
        big = small = m + n
        mn = m * n + 16 * (m + n)
        num = m * m + n * n + 16 * (m + n) if full else mn
    else:
        big, small = max(m, n), min(m, n)
        mn = big * (small + 16)
        num = (big if full else small) * (big + 16)
    return _total(_svd_parts(mn, num, mn, big, small, int(uv)))


@opaque_rule("svd")
def _svd(ctx, kernel):
    eqn = kernel.root
    a = eqn.inputs[0]
    m, n = a.aval.shape[-2:]
    full, uv = bool(eqn.params["full_matrices"]), bool(eqn.params["compute_uv"])
    module = ctx.b.module
    fn = _routine(module, "svd", a.aval.dtype, [PTR, PTR, PTR, PTR, I64, I64, I64, I64, PTR],
                  _emit_svd)
    nbatch = len(a.aval.shape) - 2
    counts = [m * n] + [math.prod(o.aval.shape[nbatch:]) for o in eqn.outputs]
    null = ir.Constant(PTR, None)

    def call(c, ptrs, scratch):
        s, u, vt = (ptrs[1:] + [null, null])[:3]
        c.b.call(fn, [ptrs[0], s, u, vt, U.i64(m), U.i64(n), c.i(int(full)), c.i(int(uv)),
                      scratch])
    _run_batched(ctx, kernel, _svd_words(m, n, full, uv), counts, call)


PARALLEL_OPAQUE["svd"] = _extent
