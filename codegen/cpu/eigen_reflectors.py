"""Householder reflectors for the eigh and svd routines: one made from a vector
(`_house`), and GROUP of them applied per pass over a matrix's rows in compact WY
form (`_Group`, through one shared function, `_reflect_fn`), as LAPACK's orgtr
and orgbr form Q, U and V from the reflectors that reduced the matrix.
"""
from __future__ import annotations

from contextlib import contextmanager

import llvmlite.ir as ir

from . import irutil as U
from .eigen_ir import F64, FAST, I64, PTR, _Code, _f

GROUP = 8                           # reflectors applied per pass when forming Q, U, V


def _house(c: _Code, x, lo, hi) -> tuple:
    """The reflector H = I - tau v v^T with H x[lo:hi] = beta e_lo (absolute indices,
    lo < hi): x[lo] becomes v's leading 1, x[lo+1:hi] its tail. tau is 0 (H = I,
    beta = x[lo]) when the tail is zero."""
    alpha = c.ld(x, lo)
    sigma = c.dot(x, x, c.add(lo, 1), hi)
    beta = c.var(F64, alpha, "beta")
    tau = c.var(F64, _f(0), "tau")
    with c.b.if_then(c.fcmp(">", sigma, 0.0)):
        nrm = c.sqrt(c.fma(alpha, alpha, sigma))
        bt = c.b.select(c.fcmp(">=", alpha, 0.0), c.b.fneg(nrm), nrm)
        tau.set(c.fdiv(c.fsub(bt, alpha), bt))
        c.scale(c.fdiv(1.0, c.fsub(alpha, bt)), x, c.add(lo, 1), hi)
        beta.set(bt)
    c.st(_f(1), x, lo)
    return beta.get(), tau.get()


def _reflect_fn(module: ir.Module) -> ir.Function:
    """reflect(mat, ld, r0, r1, V, vs, taus, lo, hi): rows [r0, r1) of mat (ld
    apart) times H_0 H_1 ... H_{GROUP-1}, H_q = I - taus[q] v_q v_q^T with
    v_q = V + q vs, zero outside [lo, hi) (a dead one has tau 0). In the compact
    WY form H_0 H_1 ... = I - V T V^T (T upper triangular, as LAPACK's larft): per
    row z = row V in one pass, then row -= (z T) V^T in another, the row in cache
    (the matrix streams through once per group, not once per reflector)."""
    name = "jx.linalg.reflect"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(U.VOID, [PTR, I64, I64, I64, PTR, I64, PTR, I64,
                                                      I64]), name)
    fn.linkage = "internal"
    mat, ld, r0, r1, base, vs, taus, lo, hi = fn.args
    c = _Code(ir.IRBuilder(fn.append_basic_block("entry")))
    b = c.b
    vecs = [c.at(base, c.mul(q, vs)) for q in range(GROUP)]
    gram = {(i, j): c.dot(vecs[i], vecs[j], lo, hi)
            for j in range(GROUP) for i in range(j)}
    t = [[None] * GROUP for _ in range(GROUP)]
    for j in range(GROUP):
        tau_j = c.ld(taus, j)
        t[j][j] = tau_j
        for i in range(j):
            acc = _f(0)
            for k in range(i, j):
                acc = c.fma(t[i][k], gram[(k, j)], acc)
            t[i][j] = c.fmul(b.fneg(tau_j), acc)
    with c.loop(r0, r1, "refl") as r:
        row = c.at(mat, c.mul(r, ld))
        z = _dots(c, row, vecs, lo, hi)
        w = []
        for j in range(GROUP):
            acc = _f(0)
            for i in range(j + 1):
                acc = c.fma(z[i], t[i][j], acc)
            w.append(b.fneg(acc))
        with c.loop(lo, hi, "wy") as col:
            x = c.ld(row, col)
            for wj, v in zip(w, vecs):
                x = c.fma(wj, c.ld(v, col), x)
            c.st(x, row, col)
    b.ret_void()
    return fn


def _dots(c: _Code, x, ys, lo, hi) -> list:
    """[x[lo:hi] . y[lo:hi] for y in ys], in one loop."""
    accs = [c.var(F64, _f(0), "dots") for _ in ys]
    with c.loop(lo, hi, "dots") as j:
        xj = c.ld(x, j)
        for acc, y in zip(accs, ys):
            acc.set(c.fadd(acc.get(), c.fmul(xj, c.ld(y, j), flags=FAST), flags=FAST))
    return [acc.get() for acc in accs]


class _Group:
    """GROUP reflectors at a time, indices top, top - 1, ... (those < 0 dead),
    their vectors copied to zero-padded rows of `buf` (vs apart), taus to an
    array; then reflect() applies them to rows of a matrix."""

    def __init__(self, c: _Code, buf, vs, hi):
        self.c, self.buf, self.vs, self.hi = c, buf, vs, hi
        b = c.b
        entry = b.function.entry_basic_block
        with b.goto_block(entry):
            b.position_before(entry.instructions[0])
            self.taus = b.alloca(F64, size=c.i(GROUP), name="taus")

    @contextmanager
    def each(self, count):
        """for each group of the indices count - 1, ..., 0: yields (top, first), first
        its smallest live index."""
        c = self.c
        ngroups = c.b.sdiv(c.add(count, GROUP - 1), c.i(GROUP))
        with c.loop(0, ngroups, "grp") as g:
            top = c.sub(c.sub(count, 1), c.mul(g, GROUP))
            yield top, c.imax(c.sub(top, GROUP - 1), 0)

    def load(self, top, tau, source, stride, step, offset) -> None:
        """Reflector k's vector from source[k * stride + j * step] for j in
        [k + offset, hi) (its leading 1 in place), its tau from tau[k]."""
        c, b = self.c, self.c.b
        with c.loop(0, GROUP, "gq") as q:
            k = c.sub(top, q)
            live = c.icmp(">=", k, 0)
            kk = b.select(live, k, c.i(0))
            lo = b.select(live, c.add(k, offset), self.hi)
            c.st(b.select(live, c.ld(tau, kk), _f(0)), self.taus, q)
            v = c.at(self.buf, c.mul(q, self.vs))
            c.fill(_f(0), v, 0, lo)
            src = c.mul(kk, stride)
            with c.loop(lo, self.hi, "gcp") as j:
                c.st(c.ld(source, c.add(src, c.mul(j, step))), v, j)

    def apply(self, mat, ld, rows, lo) -> None:
        c = self.c
        c.b.call(_reflect_fn(c.b.module), [mat, ld, rows[0], rows[1], self.buf, self.vs,
                                           self.taus, lo, self.hi])


def _identity(c: _Code, mat, rows, cols, ld) -> None:
    with c.loop(0, rows, "eye") as r:
        row = c.at(mat, c.mul(r, ld))
        c.fill(_f(0), row, 0, cols)
        with c.b.if_then(c.icmp("<", r, cols)):
            c.st(_f(1), row, r)
