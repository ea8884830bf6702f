"""Lowering of opaque kernels: one primitive each, reading and writing buffers.

`rule(name)(ctx, kernel)` emits the kernel body; ctx gives the builder, the
buffer pointers (`ctx.ptr(atom)`) and helpers. Other modules add rules to the
OPAQUE table for their primitive families (FAMILIES); each is imported the first
time a program needs one of its primitives (`rule`, `parallel_extent`), so a cold
first call imports only the lowerings its program uses (all of them eagerly: ~5 ms
of its critical path). This module imports none of them at import time, so a
family can import `opaque_rule` from here; a test checks FAMILIES against what the
families register.
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from . import irutil as U
from .scalar import SCALAR, convert

OPAQUE: dict = {}
# name -> kernel -> (outer loop shape, work): opaque kernels whose rule honours
# ctx.outer, so their first loop can be split over threads.
PARALLEL_OPAQUE: dict = {}


# family module (jx.codegen.cpu.<name>) -> the primitives it registers
FAMILIES = {
    "collectives": ("all_gather", "all_to_all", "axis_index", "pmax", "pmin", "ppermute",
                    "psum"),
    "control": ("cond", "scan", "while"),
    "opaque_indexing": ("dynamic_update_slice", "gather", "scatter", "scatter_add",
                        "scatter_max", "scatter_min", "scatter_mul"),
    "opaque_scan": ("cummax", "cummin", "cumprod", "cumsum"),
    "opaque_sort": ("sort", "threefry2x32"),
    "opaque_linalg": ("cholesky", "lu", "triangular_solve"),
    "opaque_qr": ("householder_panel", "qr"),
    "opaque_eigh": ("eigh",),
    "opaque_svd": ("svd",),
    "conv": ("conv_general_dilated",),
    "opaque_fft": ("fft_c2c", "fft_c2r", "fft_r2c", "fft_z"),
}
_FAMILY_OF = {p: family for family, prims in FAMILIES.items() for p in prims}


def _load(name: str) -> None:
    family = _FAMILY_OF.get(name)
    if family is not None:
        import importlib
        importlib.import_module(f"{__package__}.{family}")


def rule(name: str):
    """The lowering of opaque primitive `name` (its family imported now if it was
    not yet), or None."""
    if name not in OPAQUE:
        _load(name)
    return OPAQUE.get(name)


def parallel_extent(name: str):
    """PARALLEL_OPAQUE's entry for `name` (its family imported first), or None."""
    if name not in OPAQUE:
        _load(name)
    return PARALLEL_OPAQUE.get(name)


def load_all() -> None:
    """Every family (what lists or checks the whole table needs)."""
    for prims in FAMILIES.values():
        _load(prims[0])


def opaque_rule(*names):
    def deco(fn):
        for n in names:
            OPAQUE[n] = fn
        return fn
    return deco


def strides(shape) -> list:
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= n
    return out[::-1]


def offset(b, idx_dims, shape):
    """Flat offset from (dim, index value) pairs of a row-major array."""
    st = strides(shape)
    off = None
    for d, i in idx_dims:
        if shape[d] == 1:
            continue
        term = i if st[d] == 1 else b.mul(i, U.i64(st[d]), flags=["nuw", "nsw"])
        off = term if off is None else b.add(off, term, flags=["nuw", "nsw"])
    return U.i64(0) if off is None else off


def multiply_add(b, a, c, acc, dt):
    """acc + a * c; floats may use an FMA (as BLAS does), ints wrap."""
    if U.is_float(dt):
        return U.call_intrinsic(b, "llvm.fmuladd", [a, c, acc])
    return SCALAR["add"](b, [acc, SCALAR["mul"](b, [a, c], dt, dt)], dt, dt)


def _free(ndim, *used):
    taken = set().union(*map(set, used))
    return [d for d in range(ndim) if d not in taken]


@opaque_rule("dot_general")
def _dot_general(ctx, kernel):
    """out[b, m, n] = sum_k lhs[b, m, k] * rhs[b, k, n], loops ordered b, m, k, n so the
    innermost loop streams rows of rhs and out (vectorised by LLVM)."""
    from . import gemm
    if _is_matvec(kernel):
        _dot_by_element(ctx, kernel, kernel.outputs[0].aval.dtype, ("reassoc", "contract"))
        return
    gp = gemm.plan(kernel)
    if gp is not None and ctx.outer is None:      # float GEMM: blocked, packed, threaded
        gemm.emit(ctx, kernel, gp)
        return
    b = ctx.b
    (lc, rc, lb, rb, lf, rf), (ls, rs, os_), (dt, odt), (lp, rp, op) = _dot_parts(ctx, kernel)
    if 0 in os_:
        return
    if U.is_half(odt):
        _dot_by_element(ctx, kernel, np.float32)
        return
    zero = U.const(odt, 0)
    with U.loop_nest(b, os_, "z", ctx.outer) as zi:      # this chunk's rows only
        U.store(b, zero, op, U.linear(b, zi, os_), odt)
    ksizes = [ls[d] for d in lc]
    if 0 in ksizes:
        return
    nb = len(lb)
    with U.loop_nest(b, [ls[d] for d in lb] + [ls[d] for d in lf], "bm", ctx.outer) as bm:
        bi, mi = bm[:nb], bm[nb:]
        with U.loop_nest(b, ksizes, "k") as ki:
            a_off = offset(b, list(zip(lb, bi)) + list(zip(lf, mi)) + list(zip(lc, ki)), ls)
            a = convert(b, U.load(b, lp, a_off, dt), dt, odt)
            with U.loop_nest(b, [rs[d] for d in rf], "n") as ni:
                r_off = offset(b, list(zip(rb, bi)) + list(zip(rc, ki)) + list(zip(rf, ni)), rs)
                o_off = U.linear(b, list(bi) + list(mi) + list(ni), os_)
                r = convert(b, U.load(b, rp, r_off, dt), dt, odt)
                acc = U.load(b, op, o_off, odt)
                U.store(b, multiply_add(b, a, r, acc, odt), op, o_off, odt)


def _is_matvec(kernel) -> bool:
    """One output column (matrix-vector products, e.g. in an ODE step): a register
    accumulator and a vectorised sum over k beat packing panels for a GEMM."""
    lhs, rhs = kernel.root.inputs
    (lc, rc), (lb, rb) = kernel.root.params["dimension_numbers"]
    n = 1
    for d in _free(rhs.aval.ndim, rc, rb):
        n *= rhs.aval.shape[d]
    size = kernel.outputs[0].aval.size
    return n == 1 and U.is_float(lhs.aval.dtype) and (U.is_symbolic(size) or size > 0)


def _dot_parts(ctx, kernel) -> tuple:
    """((lhs/rhs contracting, batch and free dims), (lhs, rhs, out shapes), (operand and
    result dtypes), (lhs, rhs, out pointers)) of a dot_general kernel."""
    eqn = kernel.root
    lhs, rhs = eqn.inputs
    (out,) = eqn.outputs
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lf, rf = _free(lhs.aval.ndim, lc, lb), _free(rhs.aval.ndim, rc, rb)
    return ((lc, rc, lb, rb, lf, rf), (lhs.aval.shape, rhs.aval.shape, out.aval.shape),
            (lhs.aval.dtype, out.aval.dtype), (ctx.ptr(lhs), ctx.ptr(rhs), ctx.ptr(out)))


def _dot_by_element(ctx, kernel, work, flags=()):
    """out[b, m, n] = sum over k of lhs * rhs, each output element summed in a
    register of dtype `work`'s compute type and stored (rounded) once. Matrix-vector
    products take it with `reassoc` (LLVM vectorises the sum); float16/bfloat16
    products in float32, in order, as XLA sums them (accumulating in the output
    rounded every step: bfloat16 lost a unit in the last place by K = 2)."""
    b = ctx.b
    (lc, rc, lb, rb, lf, rf), (ls, rs, os_), (dt, odt), (lp, rp, op) = _dot_parts(ctx, kernel)
    nb = len(lb)
    ksizes = [ls[d] for d in lc]
    with U.loop_nest(b, [ls[d] for d in lb] + [ls[d] for d in lf], "bm", ctx.outer) as bm:
        bi, mi = bm[:nb], bm[nb:]
        with U.loop_nest(b, [rs[d] for d in rf], "n") as ni:
            acc = U.alloca_entry(b, U.compute_type(work), "acc")
            b.store(U.const(work, 0), acc)
            if 0 not in ksizes:
                with U.loop_nest(b, ksizes, "k") as ki:
                    a_off = offset(b, list(zip(lb, bi)) + list(zip(lf, mi)) + list(zip(lc, ki)),
                                   ls)
                    r_off = offset(b, list(zip(rb, bi)) + list(zip(rc, ki)) + list(zip(rf, ni)),
                                   rs)
                    a = convert(b, U.load(b, lp, a_off, dt), dt, work)
                    r = convert(b, U.load(b, rp, r_off, dt), dt, work)
                    b.store(b.fadd(b.load(acc), b.fmul(a, r), flags=flags), acc)
            U.store(b, b.load(acc), op, U.linear(b, list(bi) + list(mi) + list(ni), os_), odt)


def _dot_extent(kernel):
    from . import gemm
    if _is_matvec(kernel):
        lhs = kernel.root.inputs[0]
        (lc, _), (lb, _) = kernel.root.params["dimension_numbers"]
        return [lhs.aval.shape[d] for d in list(lb) + _free(lhs.aval.ndim, lc, lb)], \
            lhs.aval.size
    if gemm.plan(kernel) is not None:      # the GEMM splits its own work over threads
        return [], 0
    lhs, rhs = kernel.root.inputs
    (lc, _), (lb, _) = kernel.root.params["dimension_numbers"]
    outer = [lhs.aval.shape[d] for d in list(lb) + _free(lhs.aval.ndim, lc, lb)]
    k = 1
    for d in lc:
        k *= lhs.aval.shape[d]
    return outer, kernel.outputs[0].aval.size * k


PARALLEL_OPAQUE["dot_general"] = _dot_extent
