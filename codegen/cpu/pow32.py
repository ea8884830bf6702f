"""float32 x ** v for v in {0.5, -0.5, 1.5, -1.5} in float32 arithmetic.

The general constant-power lowering (scalar._const_pow) works in double so that
a few products round far below float32's half ulp; a double square root and
division cost 2-4x their float32 forms (Zen 4), and the n-body's (r2 + eps) **
-1.5 spends most of its time there. Here the square root, product and reciprocal
are float32 with their rounding errors recovered exactly by fused multiply-adds
(a sqrt's residual x - s*s, a product's x*s - p, a reciprocal's 1 - q*p) and
folded back in one correction: the result is within 1 ulp (measured: see
tests/test_pow32.py), as the double path's. Only for targets with FMA (without,
llvm.fma is a slow libm call), and with IEEE pow's special values: a select
keeps the uncorrected value where the correction is not finite (0, inf, nan,
negative x), and (-inf) ** v, which the square root makes nan, is set apart.
"""
from __future__ import annotations

import llvmlite.ir as ir

from . import irutil as U
from . import target

EXPONENTS = frozenset({0.5, -0.5, 1.5, -1.5})
# x ** -1.5 rescales x by 2 ** -+SHIFT outside [2 ** -SHIFT, 2 ** SHIFT] so that
# x * sqrt(x) neither overflows nor turns subnormal (x ** -1.5 is finite and
# normal or subnormal for x up to 2 ** 99.3): the result is scaled back by 2 ** 1.5 SHIFT.
SHIFT = 64


def available(b) -> bool:
    return "fma" in target.features(target.of_module(b.module))


def _fma(b, x, y, z):
    return U.call_intrinsic(b, "llvm.fma", [x, y, z])


def _c(t, v: float):
    return ir.Constant(t, v)


def const_pow_f32(b, x, v: float):
    """x ** v (x a float32 value or vector of them, v in EXPONENTS)."""
    t = x.type
    fabs = lambda a: U.call_intrinsic(b, "llvm.fabs", [a])          # noqa: E731
    scale = None
    if v == -1.5:
        big = b.fcmp_ordered(">", x, _c(t, 2.0 ** SHIFT))
        small = b.fcmp_ordered("<", x, _c(t, 2.0 ** -SHIFT))
        x = b.fmul(x, b.select(big, _c(t, 2.0 ** -SHIFT),
                               b.select(small, _c(t, 2.0 ** SHIFT), _c(t, 1.0))))
        scale = b.select(big, _c(t, 2.0 ** (-1.5 * SHIFT)),
                         b.select(small, _c(t, 2.0 ** (1.5 * SHIFT)), _c(t, 1.0)))
    s = fabs(U.call_intrinsic(b, "llvm.sqrt", [x]))     # (-0) ** v drops the sign
    ninf = b.fcmp_ordered("==", x, _c(t, float("-inf")))
    if v == 0.5:                                        # correctly rounded already
        return b.select(ninf, _c(t, float("inf")), s)
    e = _fma(b, b.fneg(s), s, x)                        # x - s*s, exactly
    half_e = b.fmul(e, _c(t, 0.5))                      # sqrt(x) ~ s + e / (2 s)
    if v == -0.5:
        hi = s
        q = b.fdiv(_c(t, 1.0), hi)
        lo = b.fmul(half_e, q)
    else:
        ax = fabs(x)
        hi = b.fmul(ax, s)                              # x * sqrt(x) ~ hi + lo
        lo = _fma(b, half_e, s, _fma(b, ax, s, b.fneg(hi)))
        if v == 1.5:
            ok = b.fcmp_ordered("<", hi, _c(t, float("inf")))
            y = b.select(ok, b.fadd(hi, lo), hi)
            return b.select(ninf, _c(t, float("inf")), y)
        q = b.fdiv(_c(t, 1.0), hi)
    # 1 / (hi + lo) ~ q + q (r - lo q) with r = 1 - q hi (exact)
    r = _fma(b, b.fneg(q), hi, _c(t, 1.0))
    y = _fma(b, q, _fma(b, b.fneg(lo), q, r), q)
    ok = b.and_(b.fcmp_ordered(">", hi, _c(t, 0.0)), b.fcmp_ordered("<", hi, _c(t, float("inf"))))
    y = b.select(ok, y, q)
    if scale is not None:
        y = b.fmul(y, scale)
    return b.select(ninf, _c(t, 0.0), y)
