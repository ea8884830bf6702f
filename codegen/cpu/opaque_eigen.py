"""Lowering of `eigh` and `svd` as opaque kernels: a loop over the batch calling a
routine (routines.py: compiled once per host) per matrix, in float64 inside.

eigh: the triangle read is copied into a float64 work matrix scaled by a power of
two (max |a| in [1, 2): no overflow in the squares), reduced to tridiagonal form by
Householder reflectors (each step one pass over the trailing lower triangle: the
previous step's rank-2 update, this step's symmetric product and its transpose
half fused per row), Q^T formed in place (GROUP reflectors per pass over it, in
compact WY form), then implicit QL with Wilkinson shifts on the tridiagonal. The
QL rotations are recorded, not applied one at a time: batches of them go over
blocks of columns of Q^T (`_rotate_fn`), each block staying in cache for the whole
batch, a sweep's shared row in registers, its rows vector operations.

svd: the tall orientation (a^T when m < n) is reduced to upper bidiagonal form
(one pass per column: the left and right reflectors' updates and the next
column's accumulation fused per row), U^T and V^T formed from the reflectors
(U^T with all M rows for full_matrices: the orthonormal completion), then
Golub-Kahan-Reinsch implicit QR with rotations recorded as for eigh; negative
singular values flip their row of V^T. compute_uv=False forms and rotates nothing.

Results are sorted (eigenvalues ascending, singular values descending) with
their vectors. A matrix with a NaN or inf entry, or whose iteration would not
converge (a bounded number of sweeps), gives NaN outputs, as JAX's CPU kernels
do; every loop is bounded. Scratch is malloc'ed once per kernel (per chunk when
the batch is split over threads, where an allocation failure can only be
reported as NaN outputs for that chunk: the chunk body returns no status).
"""
from __future__ import annotations

import math
from contextlib import contextmanager

import llvmlite.ir as ir
import numpy as np

from . import irutil as U
from . import routines
from .opaque import PARALLEL_OPAQUE, opaque_rule

F64, I64, I1, PTR = U.F64, U.I64, U.I1, U.PTR
FAST = ("reassoc", "contract")      # sums that LLVM may vectorise (dot products)
EPS = 2.0 ** -52
TINY = 2.0 ** -1000                 # an off-diagonal this small is zero (scaled to ~1)
MAXIT_EIGH = 60                     # QL iterations allowed per eigenvalue
MAXIT_SVD = 75                      # QR iterations allowed per singular value
BLOCK = 64                          # columns a rotation batch sweeps at a time
GROUP = 8                           # reflectors applied per pass when forming Q, U, V
VEC = 8                             # doubles per vector in _rotate


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


# ------------------------------------------------------------------ rotations

def _rotate_fn(module: ir.Module) -> ir.Function:
    """rotate(mat, L, ld, ri, rj, rc, rs, count): for t in order, rows x = mat[ri[t]]
    and y = mat[rj[t]] (length L, ld apart) become (c x - s y, s x + c y). Columns go
    in blocks of BLOCK, each block through all rotations while it sits in cache."""
    name = "jx.linalg.rotate"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(U.VOID, [PTR, I64, I64, PTR, PTR, PTR, PTR, I64]),
                     name)
    fn.linkage = "internal"
    mat, length, ld, ri, rj, rc, rs, count = fn.args
    c = _Code(ir.IRBuilder(fn.append_basic_block("entry")))
    b = c.b
    full = b.mul(b.sdiv(length, c.i(BLOCK)), c.i(BLOCK))
    vecs = c.add(full, b.mul(b.sdiv(c.sub(length, full), c.i(VEC)), c.i(VEC)))
    with U.for_step(b, c.i(0), full, BLOCK, "rblk") as c0:
        _rotate_block(c, mat, ld, c0, (ri, rj, rc, rs), count, BLOCK // VEC, VEC)
    with U.for_step(b, full, vecs, VEC, "rvec") as c0:
        _rotate_block(c, mat, ld, c0, (ri, rj, rc, rs), count, 1, VEC)
    with U.for_step(b, vecs, length, 1, "rone") as c0:
        _rotate_block(c, mat, ld, c0, (ri, rj, rc, rs), count, 1, 1)
    b.ret_void()
    return fn


def _splat(b, x, vt):
    v = b.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(U.I32, 0))
    return b.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                            ir.Constant(ir.VectorType(U.I32, vt.count), [0] * vt.count))


def _rotate_block(c: _Code, mat, ld, c0, lists, count, nvec: int, width: int) -> None:
    """Columns [c0, c0 + nvec * width) through every rotation. A row the next
    rotation also takes (the shared row of a sweep's neighbouring rotations) stays
    in registers instead of going to memory and back: a sweep then loads and
    stores one row per rotation. The lists end with a sentinel (-1, -1)."""
    b = c.b
    ri, rj, rc, rs = lists
    vt = ir.VectorType(F64, width) if width > 1 else F64
    held = c.var(I64, -1, "held")
    regs = [c.var(vt, ir.Constant(vt, None), "reg") for _ in range(nvec)]
    with c.loop(0, count, "rot") as t:
        i, j = c.ld(ri, t, I64), c.ld(rj, t, I64)
        t1 = c.add(t, 1)
        ni, nj = c.ld(ri, t1, I64), c.ld(rj, t1, I64)
        cs, sn = c.ld(rc, t), c.ld(rs, t)
        if width > 1:
            cs, sn = _splat(b, cs, vt), _splat(b, sn, vt)
        px = c.at(mat, c.add(c.mul(i, ld), c0))
        py = c.at(mat, c.add(c.mul(j, ld), c0))
        hv = held.get()
        x_held, y_held = c.icmp("==", i, hv), c.icmp("==", j, hv)
        keep_x = b.or_(c.icmp("==", i, ni), c.icmp("==", i, nj))
        keep_y = b.and_(b.not_(keep_x), b.or_(c.icmp("==", j, ni), c.icmp("==", j, nj)))
        xs = _row_or_held(c, x_held, px, regs, vt, width)
        ys = _row_or_held(c, y_held, py, regs, vt, width)
        nxs, nys = [], []
        for x, y in zip(xs, ys):
            nxs.append(U.call_intrinsic(b, "llvm.fmuladd", [cs, x, b.fneg(b.fmul(sn, y))]))
            nys.append(U.call_intrinsic(b, "llvm.fmuladd", [sn, x, b.fmul(cs, y)]))
        with b.if_then(b.not_(keep_x)):
            for q, v in enumerate(nxs):
                b.store(v, c.at(px, q * width), align=8)
        with b.if_then(b.not_(keep_y)):
            for q, v in enumerate(nys):
                b.store(v, c.at(py, q * width), align=8)
        held.set(b.select(keep_x, i, b.select(keep_y, j, c.i(-1))))
        for reg, x, y in zip(regs, nxs, nys):
            reg.set(b.select(keep_x, x, y))


def _row_or_held(c: _Code, held, p, regs, vt, width: int) -> list:
    """The vectors of the row at p, or the registers when they hold it (one branch
    for the whole block)."""
    out = [c.var(vt, ir.Constant(vt, None), "rv") for _ in regs]
    with c.b.if_else(held) as (from_regs, from_memory):
        with from_regs:
            for o, reg in zip(out, regs):
                o.set(reg.get())
        with from_memory:
            for q, o in enumerate(out):
                o.set(c.b.load(c.at(p, q * width), typ=vt, align=8))
    return [o.get() for o in out]


class _Rotations:
    """Rotations recorded for the rows of mat (row length `length`, ld apart),
    applied in order by _rotate when the list is full and at flush()."""

    def __init__(self, c: _Code, mat, length, ld, lists, cap, enabled=None):
        self.c, self.mat, self.length, self.ld = c, mat, length, ld
        self.lists, self.cap = lists, cap
        self.enabled = enabled             # an i1: record nothing when false
        self.count = c.var(I64, 0, "nrot")
        self.fn = _rotate_fn(c.b.module)

    def add(self, i, j, cs, sn) -> None:
        c = self.c
        if self.enabled is not None:
            with c.b.if_then(self.enabled):
                self._add(i, j, cs, sn)
        else:
            self._add(i, j, cs, sn)

    def _add(self, i, j, cs, sn) -> None:
        c = self.c
        with c.b.if_then(c.icmp(">=", self.count.get(), self.cap)):
            self.flush()
        n = self.count.get()
        ri, rj, rc, rs = self.lists
        c.st(c.i(i), ri, n, I64)
        c.st(c.i(j), rj, n, I64)
        c.st(cs, rc, n)
        c.st(sn, rs, n)
        self.count.set(c.add(n, 1))

    def flush(self) -> None:
        c = self.c
        ri, rj = self.lists[:2]
        c.st(c.i(-1), ri, self.count.get(), I64)     # the sentinel _rotate_block reads
        c.st(c.i(-1), rj, self.count.get(), I64)
        c.b.call(self.fn, [self.mat, self.length, self.ld] + list(self.lists) +
                 [self.count.get()])
        self.count.set(c.i(0))


def _rotation_lists(c: _Code, base, cap) -> tuple:
    """(ri, rj, rc, rs) in 4 * (cap + 1) words at base (room for a sentinel)."""
    return tuple(c.at(base, c.mul(c.add(cap, 1), q)) for q in range(4))


def _capacity(n):
    """Rotations recorded before a batch is applied: enough that each block of
    columns loaded does far more arithmetic than loading."""
    return 32 * n + 256


def _stride(c: _Code, length):
    """A row stride for `length` doubles: a multiple of 8, not of 64, so that rows a
    few apart do not share an address's low 12 bits (4K aliasing: loads wait on
    unrelated stores) or a cache set (a column's reads evict each other)."""
    r = c.b.and_(c.add(length, 7), c.i(-8))
    return c.b.select(c.icmp("==", c.b.and_(r, c.i(63)), 0), c.add(r, 8), r)


# ------------------------------------------------------------------ eigh

def _eigh_parts(n, ld) -> list:
    """Scratch words: the work matrix (rows ld apart), 9 vectors, a group of
    reflectors' copies, the rotation lists."""
    return [n * ld, 9 * (n + 1), GROUP * ld, 4 * (_capacity(n) + 1)]


def _eigh_routine(module: ir.Module, dt) -> str:
    name = f"jx.linalg.eigh.{np.dtype(dt).name}"
    ftype = ir.FunctionType(U.VOID, [PTR, PTR, PTR, I64, I64, PTR])
    fn = routines.define(module, name, ftype)
    if fn is not None:
        fn.attributes.add("noinline")
        _emit_eigh(fn, dt)
    return name


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

    bad = c.var(I1, ir.Constant(I1, 0), "bad")
    with c.loop(0, c.mul(n, n), "chk") as j:
        bad.set(b.or_(bad.get(), _nonfinite(c, _load_in(c, a, j, dt))))
    with b.if_then(bad.get()):
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
        its = c.var(I64, 0, "its")
        done = c.var(I1, ir.Constant(I1, 0), "done")
        with c.while_(lambda: b.not_(done.get()), "qlit"):
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
            mv = m.get()
            with b.if_else(c.icmp("==", mv, lv)) as (found, iterate):
                with found:
                    done.set(ir.Constant(I1, 1))
                with iterate:
                    with b.if_else(c.icmp(">=", its.get(), MAXIT_EIGH)) as (stop, step):
                        with stop:
                            ok.set(ir.Constant(I1, 0))
                            done.set(ir.Constant(I1, 1))
                        with step:
                            its.set(c.add(its.get(), 1))
                            _ql_sweep(c, d, e, lv, mv, rots)
        l_.set(b.select(ok.get(), c.add(lv, 1), n))
    return ok.get()


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


# ------------------------------------------------------------------ svd

def _svd_parts(mn, num, nn, big, small, uv) -> list:
    """Scratch words: the work matrix (M rows), U^T (nu rows), V^T (N rows) (each
    row a padded stride long), 7 vectors and a group of left reflectors' columns,
    the rotation lists of U and V (none without compute_uv)."""
    return [mn, uv * num, uv * nn, (8 + GROUP) * (big + 1),
            uv * 8 * (_capacity(small) + 1)]


def _svd_routine(module: ir.Module, dt) -> str:
    name = f"jx.linalg.svd.{np.dtype(dt).name}"
    ftype = ir.FunctionType(U.VOID, [PTR, PTR, PTR, PTR, I64, I64, I64, I64, PTR])
    fn = routines.define(module, name, ftype)
    if fn is not None:
        fn.attributes.add("noinline")
        _emit_svd(fn, dt)
    return name


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

    bad = c.var(I1, ir.Constant(I1, 0), "bad")
    with c.loop(0, c.mul(m, n), "chk") as j:
        bad.set(b.or_(bad.get(), _nonfinite(c, _load_in(c, a, j, dt))))
    with b.if_then(bad.get()):
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


def _golub_kahan(c: _Code, q, e, small, tol, urots, vrots):
    """Golub-Kahan-Reinsch implicit QR on the bidiagonal (q, e), bottom up; the
    rotations recorded for the rows of U^T and V^T. Returns an i1: all converged."""
    b = c.b
    ok = c.var(I1, ir.Constant(I1, 1), "ok")
    k = c.var(I64, c.sub(small, 1), "k")
    with c.while_(lambda: c.icmp(">=", k.get(), 0), "gk"):
        kv = k.get()
        its = c.var(I64, 0, "its")
        done = c.var(I1, ir.Constant(I1, 0), "done")
        with c.while_(lambda: b.not_(done.get()), "gkit"):
            lv, cancel = _split_point(c, q, e, kv, tol)
            with b.if_then(cancel):
                _cancel(c, q, e, lv, kv, tol, urots)
            with b.if_else(c.icmp("==", lv, kv)) as (converged, iterate):
                with converged:
                    done.set(ir.Constant(I1, 1))
                with iterate:
                    with b.if_else(c.icmp(">=", its.get(), MAXIT_SVD)) as (stop, step):
                        with stop:
                            ok.set(ir.Constant(I1, 0))
                            done.set(ir.Constant(I1, 1))
                        with step:
                            its.set(c.add(its.get(), 1))
                            _gk_sweep(c, q, e, lv, kv, urots, vrots)
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


# ------------------------------------------------------------------ kernels

def _batch(shape):
    return math.prod(shape[:-2])         # (ints or Dims)


def _total(parts):
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


def _run_batched(ctx, kernel, words, counts, call) -> None:
    """call(c, ptrs, scratch) for every matrix of the batch (this chunk's, with
    ctx.outer): ptrs point at its operand and outputs (`counts` elements apart),
    scratch holds `words` 8-byte words, allocated once."""
    b = ctx.b
    c = _Code(b)
    eqn = kernel.root
    atoms = list(eqn.inputs) + list(eqn.outputs)
    nb = _batch(eqn.inputs[0].aval.shape)
    if not U.is_symbolic(nb) and nb == 0:
        return
    if ctx.outer is None:
        lo, hi, fail = c.i(0), U.i64(nb), ctx.fail_block
    else:
        lo, hi = ctx.outer
        fail = _nan_chunk(ctx, eqn.outputs, counts[len(eqn.inputs):], lo, hi)
    scratch = ctx.module.alloc(b, words * 8, fail)
    with c.loop(lo, hi, "mat") as i:
        ptrs = [c.at(ctx.ptr(x), c.mul(i, U.i64(cnt)), U.storage_type(x.aval.dtype))
                for x, cnt in zip(atoms, counts)]
        call(c, ptrs, scratch)
    ctx.module.free(b, scratch)


def _nan_chunk(ctx, outs, counts, lo, hi):
    """A block that gives matrices [lo, hi) NaN outputs and returns: a parallel
    chunk's answer to a failed allocation (its body has no status to return)."""
    b = ctx.b
    blk = b.function.append_basic_block("eigen.nomem")
    with b.goto_block(blk):
        c = _Code(b)
        for v, cnt in zip(outs, counts):
            st = U.storage_type(v.aval.dtype)
            n = U.i64(cnt)
            c.fill(ir.Constant(st, float("nan")), ctx.ptr(v), c.mul(lo, n), c.mul(hi, n), st)
        b.ret_void()
    return blk


@opaque_rule("eigh")
def _eigh(ctx, kernel):
    eqn = kernel.root
    a = eqn.inputs[0]
    n = a.aval.shape[-1]
    module = ctx.b.module
    fn = module.globals[_eigh_routine(module, a.aval.dtype)]
    lower = int(bool(eqn.params["lower"]))

    def call(c, ptrs, scratch):
        c.b.call(fn, ptrs + [U.i64(n), c.i(lower), scratch])
    _run_batched(ctx, kernel, _total(_eigh_parts(n, n + 16)), [n * n, n * n, n], call)


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
    fn = module.globals[_svd_routine(module, a.aval.dtype)]
    nbatch = len(a.aval.shape) - 2
    counts = [m * n] + [math.prod(o.aval.shape[nbatch:]) for o in eqn.outputs]
    null = ir.Constant(PTR, None)

    def call(c, ptrs, scratch):
        s, u, vt = (ptrs[1:] + [null, null])[:3]
        c.b.call(fn, [ptrs[0], s, u, vt, U.i64(m), U.i64(n), c.i(int(full)), c.i(int(uv)),
                      scratch])
    _run_batched(ctx, kernel, _svd_words(m, n, full, uv), counts, call)


def _extent(kernel):
    """The batch is split over threads; work ~ the flops of one matrix each."""
    shape = kernel.root.inputs[0].aval.shape
    nb = _batch(shape)
    m, n = shape[-2:]
    return [nb], nb * m * n * (m + n)


PARALLEL_OPAQUE["eigh"] = _extent
PARALLEL_OPAQUE["svd"] = _extent
