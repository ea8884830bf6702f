"""Lowering of the cumulative primitives cumsum, cumprod, cummax and cummin.

The running value lives in the output itself: out[first] = x[first], then
out[k] = f(out[k - 1], x[k]) walking the axis (backwards when `reverse`). The
loops are ordered outer dims, axis, inner dims, so the innermost loop streams
contiguous rows and every element accumulates sequentially, in the order of
NumPy's accumulate (no reassociation: results match bit for bit).
"""
from __future__ import annotations

from contextlib import ExitStack

from . import irutil as U
from .opaque import opaque_rule
from .opaque_indexing import extremum, open_loops


def _step(b, name, acc, v, dt):
    if name == "cumsum":
        return b.fadd(acc, v) if U.is_float(dt) else b.add(acc, v)
    if name == "cumprod":
        return b.fmul(acc, v) if U.is_float(dt) else b.mul(acc, v)
    return extremum(b, name == "cummax", acc, v, dt)


@opaque_rule("cumsum", "cumprod", "cummax", "cummin")
def _cumulative(ctx, kernel):
    b = ctx.b
    eqn = kernel.root
    (x,) = eqn.inputs
    (out,) = eqn.outputs
    name, axis, reverse = eqn.prim.name, eqn.params["axis"], eqn.params.get("reverse", False)
    shape, dt = x.aval.shape, x.aval.dtype
    if x.aval.size == 0:
        return
    n = shape[axis]
    xp, op = ctx.ptr(x), ctx.ptr(out)
    outer_shape, inner_shape = shape[:axis], shape[axis + 1:]

    def at(oidx, k, iidx):
        return U.linear(b, list(oidx) + [k] + list(iidx), shape)

    with ExitStack() as outer:
        oidx = open_loops(outer, b, outer_shape, "o")
        first = U.i64(n - 1 if reverse else 0)
        with ExitStack() as inner:
            iidx = open_loops(inner, b, inner_shape, "f")
            off = at(oidx, first, iidx)
            U.store(b, U.load(b, xp, off, dt), op, off, dt)
        if U.is_symbolic(n) or n > 1:
            with U.for_range(b, n - 1, "k") as k:
                # step k writes position pos from its neighbour prev
                pos = b.sub(U.i64(n - 2), k) if reverse else b.add(k, U.i64(1))
                prev = b.add(pos, U.i64(1)) if reverse else k
                with ExitStack() as inner:
                    iidx = open_loops(inner, b, inner_shape, "i")
                    acc = U.load(b, op, at(oidx, prev, iidx), dt)
                    off = at(oidx, pos, iidx)
                    v = U.load(b, xp, off, dt)
                    U.store(b, _step(b, name, acc, v, dt), op, off, dt)
