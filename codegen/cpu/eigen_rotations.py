"""Recorded rotations, for the QL (eigh) and Golub-Kahan (svd) iterations: the
rotations are recorded, not applied one at a time (`_Rotations`), then batches of
them go over blocks of columns of the matrix they act on (`_rotate_fn`), each
block staying in cache for the whole batch, a sweep's shared row in registers,
its rows vector operations.
"""
from __future__ import annotations

import llvmlite.ir as ir

from . import irutil as U
from .eigen_ir import F64, I64, PTR, _Code

BLOCK = 64                          # columns a rotation batch sweeps at a time
VEC = 8                             # doubles per vector in _rotate_block


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
    applied in order by _rotate_fn when the list is full and at flush()."""

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
