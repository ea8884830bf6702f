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
keeps the uncorrected value where the correction is nan (0, inf, nan, negative
x), and (-inf) ** v, which the square root makes nan, is set apart.
"""
from __future__ import annotations

import llvmlite.ir as ir

from . import irutil as U
from . import target

EXPONENTS = frozenset({0.5, -0.5, 1.5, -1.5})


def available(b) -> bool:
    return "fma" in target.features(target.of_module(b.module))


def _fma(b, x, y, z):
    return U.call_intrinsic(b, "llvm.fma", [x, y, z])


def _c(t, v: float):
    return ir.Constant(t, v)


def const_pow_f32(b, x, v: float):
    """x ** v (x a float32 value or vector of them, v in EXPONENTS)."""
    t = x.type
    if v == -1.5:
        return _inverse_three_halves(b, x)
    s = _fabs(b, _sqrt(b, x))                           # (-0) ** v drops the sign
    ninf = b.fcmp_ordered("==", x, _c(t, float("-inf")))
    if v == 0.5:                                        # correctly rounded already
        return b.select(ninf, _c(t, float("inf")), s)
    half_e = b.fmul(_fma(b, b.fneg(s), s, x), _c(t, 0.5))   # sqrt(x) ~ s + e / (2 s)
    if v == -0.5:
        # 1 / (s + lo) ~ q + q (r - lo q), r = 1 - q s exactly, lo ~ e q / 2
        q = b.fdiv(_c(t, 1.0), s)
        r = _fma(b, b.fneg(q), s, _c(t, 1.0))
        y = _fma(b, q, _fma(b, b.fneg(b.fmul(half_e, q)), q, r), q)
        return b.select(ninf, _c(t, 0.0), _finite_or(b, y, q))
    # x sqrt(x) = x s + x e / (2 s) + ..., x / s ~ s: one rounding, in the fma
    ax = _fabs(b, x)
    y = _fma(b, ax, s, b.fmul(half_e, s))
    return b.select(ninf, _c(t, float("inf")), _finite_or(b, y, b.fmul(ax, s)))


def _inverse_three_halves(b, x):
    """x ** -1.5 as r ** 1.5, r = 1 / x: no intermediate leaves the range when the
    result is finite and nonzero (x * sqrt(x) overflows from x = 2 ** 85.3, where
    the result is still 2 ** -128). With 1 / x = r (1 + rho) and sqrt(r) = s +
    e / (2 s): x ** -1.5 = r s + s (e / 2 + 1.5 rho r) + ..., rounded once (fma)."""
    t = x.type
    # x + 0 turns -0 into +0 (r = +inf, the result +inf, as IEEE pow); -inf gives
    # r = -0 and the result +0 through the sign-dropping product below
    r = b.fdiv(_c(t, 1.0), b.fadd(x, _c(t, 0.0)))
    rho = _fma(b, b.fneg(r), x, _c(t, 1.0))             # 1 - r x, exactly
    s = _sqrt(b, r)
    e = _fma(b, b.fneg(s), s, r)
    # 2 (e / 2 + 1.5 rho r) with 3 rho as two adds (they go to the adder pipes;
    # the multiply pipes are this loop's bottleneck), its rounding harmless there
    w2 = _fma(b, b.fadd(b.fadd(rho, rho), rho), r, e)
    y = _fma(b, r, s, b.fmul(b.fmul(s, _c(t, 0.5)), w2))
    return _finite_or(b, y, b.fmul(r, s))


def _finite_or(b, y, fallback):
    """y, or where it is nan or -inf (its error terms were inf - inf or 0 * inf:
    x is 0, inf, nan or negative; or a correction term overflowed, as it does
    where the result is +-inf), the uncorrected value, which has the IEEE result
    there. (y = +inf is right: a correction overflows only past 2 ** 150.)"""
    return b.select(b.fcmp_ordered(">", y, _c(y.type, float("-inf"))), y, fallback)


def _sqrt(b, x):
    return U.call_intrinsic(b, "llvm.sqrt", [x])


def _fabs(b, x):
    return U.call_intrinsic(b, "llvm.fabs", [x])
