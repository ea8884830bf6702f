"""Scalar IR for the eigh and svd routines (opaque_eigh.py, opaque_svd.py): a
builder of float64 and i64 arithmetic, memory and control flow (`_Code`), the
operand's way in (read as float64, checked for NaN and inf, scaled by a power of
two) and the results' way out (sorted with their vectors, stored in the operand's
dtype, or NaN), and the bounded sweep loop of both iterations.
"""
from __future__ import annotations

from contextlib import contextmanager

import llvmlite.ir as ir
import numpy as np

from . import irutil as U

F64, I64, I1, PTR = U.F64, U.I64, U.I1, U.PTR
FAST = ("reassoc", "contract")      # sums that LLVM may vectorise (dot products)
EPS = 2.0 ** -52


# ------------------------------------------------------------------ IR helpers

def _f(x) -> ir.Constant:
    return ir.Constant(F64, float(x))


class _Var:
    """A mutable local in an entry-block alloca (mem2reg makes it SSA)."""

    def __init__(self, b, typ, init, name: str = ""):
        self.b, self.typ = b, typ
        self.slot = U.alloca_entry(b, typ, name)
        b.store(init, self.slot)

    def get(self):
        return self.b.load(self.slot, typ=self.typ)

    def set(self, v) -> None:
        self.b.store(v, self.slot)


class _Int:
    """An i64 value with + and *, so one layout function gives sizes in Python (ints,
    jx.dims.Dim) and offsets in IR."""

    def __init__(self, b, v):
        self.b, self.v = b, v

    def _o(self, o):
        return o.v if isinstance(o, _Int) else U.i64(o)

    def __add__(self, o):
        return _Int(self.b, self.b.add(self.v, self._o(o)))

    def __mul__(self, o):
        return _Int(self.b, self.b.mul(self.v, self._o(o)))

    __radd__, __rmul__ = __add__, __mul__


class _Code:
    """Scalar float64 and i64 arithmetic, memory and control flow on a builder."""

    def __init__(self, b: ir.IRBuilder):
        self.b = b

    # -- integers (Python ints become constants)
    @staticmethod
    def i(v):
        return v if isinstance(v, ir.Value) else ir.Constant(I64, int(v))

    def add(self, x, y):
        return self.b.add(self.i(x), self.i(y))

    def sub(self, x, y):
        return self.b.sub(self.i(x), self.i(y))

    def mul(self, x, y):
        return self.b.mul(self.i(x), self.i(y))

    def icmp(self, op, x, y):
        return self.b.icmp_signed(op, self.i(x), self.i(y))

    def imax(self, x, y):
        return self.b.select(self.icmp(">", x, y), self.i(x), self.i(y))

    # -- memory (float64 unless t says otherwise)
    def at(self, p, idx, t=F64):
        return self.b.gep(p, [self.i(idx)], source_etype=t, inbounds=True)

    def ld(self, p, idx, t=F64):
        return self.b.load(self.at(p, idx, t), typ=t)

    def st(self, v, p, idx, t=F64) -> None:
        self.b.store(v, self.at(p, idx, t))

    # -- floats (Python numbers become constants)
    @staticmethod
    def f(v):
        return v if isinstance(v, ir.Value) else _f(v)

    def fadd(self, x, y, flags=()):
        return self.b.fadd(self.f(x), self.f(y), flags=flags)

    def fsub(self, x, y):
        return self.b.fsub(self.f(x), self.f(y))

    def fmul(self, x, y, flags=()):
        return self.b.fmul(self.f(x), self.f(y), flags=flags)

    def fdiv(self, x, y):
        return self.b.fdiv(self.f(x), self.f(y))

    def fcmp(self, op, x, y):
        return self.b.fcmp_ordered(op, self.f(x), self.f(y))

    def fma(self, a, x, y):
        """a * x + y (fused where the target has it)."""
        return U.call_intrinsic(self.b, "llvm.fmuladd", [self.f(a), self.f(x), self.f(y)])

    def fabs(self, x):
        return U.call_intrinsic(self.b, "llvm.fabs", [x])

    def sqrt(self, x):
        return U.call_intrinsic(self.b, "llvm.sqrt", [x])

    def copysign(self, x, y):
        return U.call_intrinsic(self.b, "llvm.copysign", [x, y])

    def hypot(self, x, y):
        """sqrt(x^2 + y^2) without overflow or underflow in the squares: plain where
        the sum of squares is safely normal (the common case, off the division's
        latency), scaled by the larger otherwise."""
        b = self.b
        r = _Var(b, F64, _f(0), "hyp")
        sq = self.fma(x, x, self.fmul(y, y))
        plain = b.and_(self.fcmp(">", sq, 2.0 ** -960), self.fcmp("<", sq, 2.0 ** 960))
        with b.if_else(plain) as (fast, scaled):
            with fast:
                r.set(self.sqrt(sq))
            with scaled:
                ax, ay = self.fabs(x), self.fabs(y)
                big = b.select(self.fcmp(">", ax, ay), ax, ay)
                small = b.select(self.fcmp(">", ax, ay), ay, ax)
                t = self.fdiv(small, b.select(self.fcmp("==", big, 0.0), _f(1), big))
                r.set(self.fmul(big, self.sqrt(self.fma(t, t, 1.0))))
        return r.get()

    # -- control flow
    def var(self, typ, init, name: str = "") -> _Var:
        return _Var(self.b, typ, self.i(init) if typ == I64 else init, name)

    def loop(self, lo, hi, name: str = "i"):
        """for (i = lo; i < hi; i++), bounds run-time values or ints (may be empty)."""
        return U.for_step(self.b, self.i(lo), self.i(hi), 1, name)

    @contextmanager
    def while_(self, cond, name: str = "w"):
        """while (cond()) { body }: cond() emits its test in the loop header."""
        fn = self.b.function
        head = fn.append_basic_block(f"{name}.head")
        body = fn.append_basic_block(f"{name}.body")
        end = fn.append_basic_block(f"{name}.end")
        self.b.branch(head)
        self.b.position_at_end(head)
        self.b.cbranch(cond(), body, end)
        self.b.position_at_end(body)
        yield
        self.b.branch(head)
        self.b.position_at_end(end)

    # -- vector loops (LLVM vectorises them)
    def dot(self, x, y, lo, hi):
        """sum of x[j] * y[j] over [lo, hi)."""
        acc = self.var(F64, _f(0), "dot")
        with self.loop(lo, hi, "dot") as j:
            prod = self.fmul(self.ld(x, j), self.ld(y, j), flags=FAST)
            acc.set(self.fadd(acc.get(), prod, flags=FAST))
        return acc.get()

    def axpy(self, a, x, y, lo, hi) -> None:
        """y[j] += a * x[j] over [lo, hi)."""
        with self.loop(lo, hi, "axpy") as j:
            self.st(self.fma(a, self.ld(x, j), self.ld(y, j)), y, j)

    def scale(self, a, x, lo, hi) -> None:
        with self.loop(lo, hi, "scal") as j:
            self.st(self.fmul(a, self.ld(x, j)), x, j)

    def fill(self, v, p, lo, hi, t=F64) -> None:
        with self.loop(lo, hi, "fill") as j:
            self.st(v, p, j, t)


# ------------------------------------------------------------------ operand, scratch

def _store_out(c: _Code, v, p, idx, dt) -> None:
    """Store float64 v into an output of dtype dt."""
    if np.dtype(dt) == np.float32:
        c.st(c.b.fptrunc(v, U.F32), p, idx, U.F32)
    else:
        c.st(v, p, idx)


def _load_in(c: _Code, p, idx, dt):
    if np.dtype(dt) == np.float32:
        return c.b.fpext(c.ld(p, idx, U.F32), F64)
    return c.ld(p, idx)


def _nan_fill(c: _Code, p, count, dt) -> None:
    st = U.storage_type(dt)
    c.fill(ir.Constant(st, float("nan")), p, 0, count, st)


def _carve(c: _Code, scratch, parts) -> list:
    """Pointers to consecutive parts (sizes in 8-byte words, _Int) of scratch."""
    ptrs, off = [], c.i(0)
    for size in parts:
        ptrs.append(c.at(scratch, off))
        off = c.add(off, size.v)
    return ptrs


def _scale_factors(c: _Code, amax) -> tuple:
    """(2^-e, 2^e) with amax * 2^-e in [1, 2) (clamped for zero, subnormal and huge)."""
    b = c.b
    bits = b.bitcast(amax, I64)
    ef = b.and_(b.lshr(bits, c.i(52)), c.i(0x7FF))
    ef = b.select(c.icmp("<", ef, 1), c.i(1), ef)
    ef = b.select(c.icmp(">", ef, 2045), c.i(2045), ef)
    down = b.bitcast(b.shl(c.sub(2046, ef), c.i(52)), F64)
    up = b.bitcast(b.shl(ef, c.i(52)), F64)
    return down, up


def _nonfinite(c: _Code, x):
    """x is inf or NaN (i1)."""
    t = c.fsub(x, x)
    return c.b.fcmp_unordered("uno", t, t)


def _any_nonfinite(c: _Code, a, rows, cols, dt):
    """Some entry of a (rows x cols, dtype dt) is inf or NaN (i1)."""
    b = c.b
    bad = c.var(I1, ir.Constant(I1, 0), "bad")
    with c.loop(0, c.mul(rows, cols), "chk") as j:
        bad.set(b.or_(bad.get(), _nonfinite(c, _load_in(c, a, j, dt))))
    return bad.get()


def _stride(c: _Code, length):
    """A row stride for `length` doubles: a multiple of 8, not of 64, so that rows a
    few apart do not share an address's low 12 bits (4K aliasing: loads wait on
    unrelated stores) or a cache set (a column's reads evict each other)."""
    r = c.b.and_(c.add(length, 7), c.i(-8))
    return c.b.select(c.icmp("==", c.b.and_(r, c.i(63)), 0), c.add(r, 8), r)


# ------------------------------------------------------------------ iteration

def _sweep_until_split(c: _Code, ok: _Var, maxit: int, name: str, split, sweep) -> None:
    """The inner loop of QL and of Golub-Kahan: sweeps on the unreduced block at
    the value the outer loop is on, until that value splits off. Each round
    split() emits the search for the block and returns (an i1: the block is that
    value alone, converged; the block's other end); otherwise sweep(other end)
    emits one sweep. Past maxit sweeps ok becomes false and the loop ends (every
    loop is bounded)."""
    b = c.b
    its = c.var(I64, 0, "its")
    done = c.var(I1, ir.Constant(I1, 0), "done")
    with c.while_(lambda: b.not_(done.get()), name):
        converged, other = split()
        with b.if_else(converged) as (found, iterate):
            with found:
                done.set(ir.Constant(I1, 1))
            with iterate:
                with b.if_else(c.icmp(">=", its.get(), maxit)) as (stop, step):
                    with stop:
                        ok.set(ir.Constant(I1, 0))
                        done.set(ir.Constant(I1, 1))
                    with step:
                        its.set(c.add(its.get(), 1))
                        sweep(other)


# ------------------------------------------------------------------ results

def _sort(c: _Code, d, perm, n, descending: bool) -> None:
    """Selection sort of d[0:n], perm[j] the original index of the j-th value."""
    with c.loop(0, n, "perm") as j:
        c.st(j, perm, j, I64)
    with c.loop(0, n, "sort") as i:
        best = c.var(I64, i, "best")
        with c.loop(c.add(i, 1), n, "scan") as j:
            better = c.fcmp(">" if descending else "<", c.ld(d, j), c.ld(d, best.get()))
            best.set(c.b.select(better, j, best.get()))
        k = best.get()
        di, dk = c.ld(d, i), c.ld(d, k)
        c.st(dk, d, i)
        c.st(di, d, k)
        pi, pk = c.ld(perm, i, I64), c.ld(perm, k, I64)
        c.st(pk, perm, i, I64)
        c.st(pi, perm, k, I64)


def _picked(c: _Code, perm, k, j):
    """perm[j] for j < k, j itself after (the completion rows stay in order)."""
    inside = c.icmp("<", j, k)
    return c.b.select(inside, c.ld(perm, c.b.select(inside, j, c.i(0)), I64), j)


def _gather_columns(c: _Code, dst, rows, cols, src, ld, perm, k, dt) -> None:
    """dst[r, j] = src[picked(j), r]: rows of src (ld apart) become columns."""
    with c.loop(0, cols, "gcol") as j:
        srow = c.at(src, c.mul(_picked(c, perm, k, j), ld))
        with c.loop(0, rows, "grow") as r:
            _store_out(c, c.ld(srow, r), dst, c.add(c.mul(r, cols), j), dt)


def _gather_rows(c: _Code, dst, rows, length, src, ld, perm, k, dt) -> None:
    """dst[j, :] = src[picked(j), :] (rows of src ld apart)."""
    with c.loop(0, rows, "grow") as j:
        srow = c.at(src, c.mul(_picked(c, perm, k, j), ld))
        drow = c.mul(j, length)
        with c.loop(0, length, "gel") as r:
            _store_out(c, c.ld(srow, r), dst, c.add(drow, r), dt)
