"""Lowering of the factorisations (cholesky, lu) and triangular_solve as opaque
kernels: unblocked LAPACK-style algorithms on one matrix, looped over the batch
(the batch loop split over threads).

Large matrices never reach these loops whole: passes/expand.py rewrites them
into recursive blocked algorithms whose bulk is dot_general (the packed GEMM),
leaving the diagonal blocks and panels to these kernels. So every loop here is
written to stream rows: the matrices are row-major, and each inner loop runs
along a row (a dot product of two row prefixes, or an axpy of one row into
another), which LLVM vectorises.

- cholesky: row-oriented Crout (L[i, j] from the dot product of rows i and j
  before column j). A non-positive (or NaN) pivot makes the factor NaN on and
  below the diagonal (zeros above), as JAX's CPU result is.
- triangular_solve: substitution. With a on the left, rows of x are axpys of
  earlier rows; with a on the right, every row of x is its own solve, by dot
  products when op(a)'s columns are a's rows (transpose_a) and by axpys when not.
- lu: getf2, right-looking with partial pivoting (the first entry of largest
  magnitude pivots; a zero pivot skips the column's scaling, as LAPACK does).
(qr and the Householder panel: opaque_qr.py, on the helpers here.)
"""
from __future__ import annotations

import math
from contextlib import contextmanager

import llvmlite.ir as ir
import numpy as np

from . import irutil as U
from .opaque import PARALLEL_OPAQUE, opaque_rule

FLAGS = ("reassoc", "contract")   # sums along a row may be reordered (vectorised)
STACK_SCRATCH = 1 << 16           # bytes of per-matrix scratch kept on the stack
SMALL = 8                         # matrices up to this size: straight-line code in registers
SHORT_ROWS = 64                   # rows up to this long: sums get a narrow vector width


class _Mat:
    """A row-major matrix inside a buffer: element (i, j) at base + i * ld + j."""

    def __init__(self, b, ptr, dt, base, ld: int):
        self.b, self.ptr, self.dt, self.base, self.ld = b, ptr, np.dtype(dt), base, ld

    def at(self, i, j):
        b = self.b
        return b.add(self.base, b.add(b.mul(_i(i), U.i64(self.ld)), _i(j)))

    def get(self, i, j):
        return U.load(self.b, self.ptr, self.at(i, j), self.dt)

    def set(self, i, j, v) -> None:
        U.store(self.b, v, self.ptr, self.at(i, j), self.dt)


def _i(v):
    return U.i64(v) if isinstance(v, int) else v


def _c(dt, v):
    return U.const(dt, v)


@contextmanager
def _down(b, lo, hi, name):
    """for (i = hi - 1; i >= lo; i--)."""
    with U.for_between(b, _i(lo), _i(hi), name) as t:
        yield b.sub(b.add(_i(lo), b.sub(_i(hi), U.i64(1))), t)


def _width_hint(module, width: int):
    """Loop metadata fixing the vectoriser's width: for sums known to be short (rows of
    small matrices), whose default width (16 lanes, interleaved 4 times) would leave
    every iteration to the scalar remainder loop."""
    opt = module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.width"),
                               ir.Constant(ir.IntType(32), width)])
    il = module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"),
                              ir.Constant(ir.IntType(32), 1)])
    loop_id = module.add_metadata([opt, il])
    loop_id.operands = (loop_id,) + tuple(loop_id.operands)
    return loop_id


def _short(n: int):
    """The vector width for sums along rows of at most n entries: 4 lanes when the
    default (16 x 4 interleaved) would not fill once (a batch of 32 x 32 Cholesky
    factors: 20% faster), else the vectoriser's choice."""
    return 4 if n <= SHORT_ROWS else None


def _sum(b, dt, lo, hi, term, name="k", width=None):
    """sum of term(k) for k in [lo, hi), reassociable (LLVM vectorises it)."""
    acc = U.alloca_entry(b, U.compute_type(dt), f"{name}.acc")
    b.store(_c(dt, 0), acc)
    hint = _width_hint(b.module, width) if width else None
    with U.for_between(b, _i(lo), _i(hi), name, hint) as k:
        b.store(b.fadd(b.load(acc), term(k), flags=FLAGS), acc)
    return b.load(acc)


def _fmul(b, x, y):
    return b.fmul(x, y, flags=("contract",))


def _axpy(b, dst: _Mat, di, src: _Mat, si, alpha, lo, hi, name="j"):
    """dst[di, j] -= alpha * src[si, j] for j in [lo, hi)."""
    with U.for_between(b, _i(lo), _i(hi), name) as j:
        dst.set(di, j, b.fsub(dst.get(di, j), _fmul(b, alpha, src.get(si, j)),
                              flags=("contract",)))


def _batch(ctx, kernel, per_matrix):
    """per_matrix(index) for every matrix of the batch (this chunk's, when split)."""
    count = _batch_count(kernel)
    if count == 0:
        return
    b = ctx.b
    if ctx.outer is not None:
        with U.for_between(b, ctx.outer[0], ctx.outer[1], "mat") as t:
            per_matrix(t)
    else:
        with U.for_range(b, count, "mat") as t:
            per_matrix(t)


def _batch_count(kernel) -> int:
    shape = kernel.root.inputs[0].aval.shape
    for d in shape:
        if U.is_symbolic(d):
            raise NotImplementedError(
                f"cpu backend: {kernel.root.prim.name} needs static shapes, got "
                f"{kernel.root.inputs[0].aval} (from {kernel.root.source}); give the matrix "
                "and batch sizes as numbers (jx.compile --specialize, or fixed specs)")
    return math.prod(shape[:-2])


def _on_stack(kernel, count: int) -> bool:
    """Whether count elements of per-matrix scratch are kept on the stack."""
    return max(count, 1) * kernel.root.inputs[0].aval.dtype.itemsize <= STACK_SCRATCH


def _extent_of(flops, scratch=None):
    """PARALLEL_OPAQUE entry: the batch is the outer loop; work is the flop count. A
    kernel whose scratch (scratch(kernel) elements per matrix) is too big for the
    stack takes it from the heap once and runs serially: a parallel chunk cannot
    report a failed allocation."""
    def extent(kernel):
        count = _batch_count(kernel)
        if count < 2 or (scratch is not None and not _on_stack(kernel, scratch(kernel))):
            return [], 0
        return [count], flops(kernel)
    return extent


def _square_flops(power, scale=1.0):
    def f(kernel):
        a = kernel.root.inputs[0].aval
        return int(a.size * a.shape[-1] ** (power - 2) * scale)
    return f


def _view(ctx, atom, t, rows: int, cols: int):
    b = ctx.b
    base = b.mul(t, U.i64(rows * cols))
    return _Mat(b, ctx.ptr(atom), atom.aval.dtype, base, cols)


def _copy(b, dst: _Mat, src: _Mat, rows: int, cols: int):
    with U.for_range(b, rows, "ci") as i:
        with U.for_range(b, cols, "cj") as j:
            dst.set(i, j, src.get(i, j))


# ------------------------------------------------------------------ cholesky

@opaque_rule("cholesky")
def _cholesky(ctx, kernel):
    (a,), (out,) = kernel.root.inputs, kernel.root.outputs
    n = a.aval.shape[-1]
    dt = a.aval.dtype
    b = ctx.b
    sym = kernel.root.params.get("symmetrize_input", False)
    if n == 0:
        return

    def one(t):
        src, L = _view(ctx, a, t, n, n), _view(ctx, out, t, n, n)
        read = _symmetrized(b, src, dt) if sym else src.get
        if n <= SMALL:
            _cholesky_unrolled(b, read, L, n, dt)
            return
        with U.for_range(b, n, "zi") as i:          # lower triangle of a, zeros above
            with U.for_range(b, n, "zj") as j:
                below = b.icmp_signed("<=", j, i)
                L.set(i, j, b.select(below, read(i, j), _c(dt, 0)))
        failed = U.alloca_entry(b, U.I1, "failed")
        b.store(ir.Constant(U.I1, 0), failed)
        with U.for_range(b, n, "j") as j:
            d = b.fsub(L.get(j, j), _sum(b, dt, 0, j, lambda k: _fmul(b, L.get(j, k), L.get(j, k)),
                                         width=_short(n)))
            ok = b.fcmp_ordered(">", d, _c(dt, 0))          # NaN fails too
            b.store(b.or_(b.load(failed), b.not_(ok)), failed)
            ljj = U.call_intrinsic(b, "llvm.sqrt", [d])
            L.set(j, j, ljj)
            with U.for_between(b, b.add(j, U.i64(1)), U.i64(n), "i") as i:
                s = _sum(b, dt, 0, j, lambda k: _fmul(b, L.get(i, k), L.get(j, k)), width=_short(n))
                L.set(i, j, b.fdiv(b.fsub(L.get(i, j), s), ljj))
        with b.if_then(b.load(failed), likely=False):       # NaN below, zeros above
            with U.for_range(b, n, "ni") as i:
                with U.for_between(b, U.i64(0), b.add(i, U.i64(1)), "nj") as j:
                    L.set(i, j, _c(dt, float("nan")))
    _batch(ctx, kernel, one)


def _symmetrized(b, src: _Mat, dt):
    """Element reader of (a + a^T) / 2, rounded as JAX's symmetrisation is."""
    half = _c(dt, 0.5)
    return lambda i, j: b.fmul(b.fadd(src.get(i, j), src.get(j, i)), half)


def _cholesky_unrolled(b, read, L: _Mat, n: int, dt):
    """The same algorithm on a matrix small enough to live in registers: straight-line
    code (batches of 4 x 4 matrices spent most of their time on loop control)."""
    v = {(i, j): read(i, j) for i in range(n) for j in range(i + 1)}
    failed = ir.Constant(U.I1, 0)
    for j in range(n):
        d = v[j, j]
        for k in range(j):
            d = b.fsub(d, _fmul(b, v[j, k], v[j, k]), flags=("contract",))
        failed = b.or_(failed, b.not_(b.fcmp_ordered(">", d, _c(dt, 0))))
        v[j, j] = U.call_intrinsic(b, "llvm.sqrt", [d])
        for i in range(j + 1, n):
            s = v[i, j]
            for k in range(j):
                s = b.fsub(s, _fmul(b, v[i, k], v[j, k]), flags=("contract",))
            v[i, j] = b.fdiv(s, v[j, j])
    nan = _c(dt, float("nan"))
    for i in range(n):
        for j in range(n):
            L.set(i, j, b.select(failed, nan, v[i, j]) if j <= i else _c(dt, 0))


PARALLEL_OPAQUE["cholesky"] = _extent_of(_square_flops(3, 1 / 3))


# ------------------------------------------------------------------ triangular solve

@opaque_rule("triangular_solve")
def _triangular_solve(ctx, kernel):
    eqn = kernel.root
    (a, rhs), (out,) = eqn.inputs, eqn.outputs
    p = eqn.params
    m = a.aval.shape[-1]
    rows, cols = rhs.aval.shape[-2:]
    if m == 0 or rows == 0 or cols == 0:
        return
    dt = a.aval.dtype
    b = ctx.b
    trans, unit = p["transpose_a"], p["unit_diagonal"]
    # op(a) = a^T with transpose_a; op(a) is lower iff `lower` differs from transpose_a
    op_lower = p["lower"] != trans

    def one(t):
        A, B, X = _view(ctx, a, t, m, m), _view(ctx, rhs, t, rows, cols), \
            _view(ctx, out, t, rows, cols)

        def op(i, j):
            return A.get(j, i) if trans else A.get(i, j)

        def divide(x, i):
            return x if unit else b.fdiv(x, op(i, i))

        _copy(b, X, B, rows, cols)
        if p["left_side"]:        # op(a) x = b: row i of x from the rows solved before it
            order = U.for_range(b, m, "i") if op_lower else _down(b, 0, m, "i")
            with order as i:
                lo, hi = (U.i64(0), i) if op_lower else (b.add(i, U.i64(1)), U.i64(m))
                with U.for_between(b, lo, hi, "k") as k:
                    _axpy(b, X, i, X, k, op(i, k), 0, cols)
                with U.for_range(b, cols, "j") as j:
                    X.set(i, j, divide(X.get(i, j), i))
            return
        # x op(a) = b, one row of x at a time: sum_i x_i op(a)[i, j] = b_j
        with U.for_range(b, rows, "r") as r:
            order = _down(b, 0, m, "j") if op_lower else U.for_range(b, m, "j")
            with order as j:
                if trans:      # dot form: op(a)[i, j] = a[j, i] runs along a's row j
                    lo, hi = (b.add(j, U.i64(1)), U.i64(m)) if op_lower else (U.i64(0), j)
                    s = _sum(b, dt, lo, hi, lambda i: _fmul(b, X.get(r, i), A.get(j, i)),
                             width=_short(m))
                    X.set(r, j, divide(b.fsub(X.get(r, j), s), j))
                else:          # axpy form: x_j known, remove it from the later b's
                    xj = divide(X.get(r, j), j)
                    X.set(r, j, xj)
                    lo, hi = (U.i64(0), j) if op_lower else (b.add(j, U.i64(1)), U.i64(m))
                    _axpy(b, X, r, A, j, xj, lo, hi)
    _batch(ctx, kernel, one)


def _trsm_flops(kernel):
    a, rhs = kernel.root.inputs
    return int(rhs.aval.size * a.aval.shape[-1])


PARALLEL_OPAQUE["triangular_solve"] = _extent_of(_trsm_flops)


# ------------------------------------------------------------------ lu

@opaque_rule("lu")
def _lu(ctx, kernel):
    (a,), (out, piv, perm) = kernel.root.inputs, kernel.root.outputs
    m, n = a.aval.shape[-2:]
    k = min(m, n)
    dt = a.aval.dtype
    b = ctx.b
    if m == 0:
        return

    def one(t):
        LU = _view(ctx, out, t, m, n)
        P = _Mat(b, ctx.ptr(perm), np.int32, b.mul(t, U.i64(m)), 0)
        V = _Mat(b, ctx.ptr(piv), np.int32, b.mul(t, U.i64(k)), 0)
        if n:
            _copy(b, LU, _view(ctx, a, t, m, n), m, n)
        with U.for_range(b, m, "p") as i:
            P.set(0, i, b.trunc(i, U.I32))
        if k == 0:
            return
        best = U.alloca_entry(b, U.compute_type(dt), "best")
        where = U.alloca_entry(b, U.I64, "where")
        with U.for_range(b, k, "j") as j:
            b.store(_c(dt, -1), best)          # every magnitude (not NaN) beats it
            b.store(j, where)
            with U.for_between(b, j, U.i64(m), "s") as i:
                v = U.call_intrinsic(b, "llvm.fabs", [LU.get(i, j)])
                more = b.fcmp_ordered(">", v, b.load(best))
                b.store(b.select(more, v, b.load(best)), best)
                b.store(b.select(more, i, b.load(where)), where)
            pv = b.load(where)
            V.set(0, j, b.trunc(pv, U.I32))
            with b.if_then(b.icmp_signed("!=", pv, j)):
                with U.for_range(b, n, "w") as c:
                    x = LU.get(j, c)
                    LU.set(j, c, LU.get(pv, c))
                    LU.set(pv, c, x)
                x = P.get(0, j)
                P.set(0, j, P.get(0, pv))
                P.set(0, pv, x)
            d = LU.get(j, j)
            nonzero = b.fcmp_unordered("!=", d, _c(dt, 0))
            with U.for_between(b, b.add(j, U.i64(1)), U.i64(m), "i") as i:
                with b.if_then(nonzero):
                    LU.set(i, j, b.fdiv(LU.get(i, j), d))
                _axpy(b, LU, i, LU, j, LU.get(i, j), b.add(j, U.i64(1)), U.i64(n))
    _batch(ctx, kernel, one)


def _lu_flops(kernel):
    m, n = kernel.root.inputs[0].aval.shape[-2:]
    return int(math.prod(kernel.root.inputs[0].aval.shape[:-2]) * m * n * min(m, n))


PARALLEL_OPAQUE["lu"] = _extent_of(_lu_flops)
