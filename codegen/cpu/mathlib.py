"""Vectorisable math library: transcendental functions as straight-line LLVM IR.

LLVM does not vectorise calls to libm, so every function here is emitted inline
at the builder's position as range reduction + polynomial, with bit tricks done
through bitcasts, `select` instead of branches, and no calls except intrinsics
that have vector forms (llvm.fma, fabs, rint, trunc, copysign, minnum, maxnum,
sqrt). A loop applying any of them vectorises.

    emit_unary(builder, name, x, dtype) -> value      name in UNARY
    emit_binary(builder, name, a, b, dtype) -> value  name in BINARY

x, a, b are scalar `float` (dtype float32) or `double` (float64) values; callers
compute float16 in float32. Special values follow NumPy: NaN propagates, ±0
keeps its sign where NumPy does, overflow gives inf and underflow 0 or denormals.

Methods. exp/expm1: k = rint(x/ln2), Cody-Waite r = x - k*ln2 (fma, 2 parts),
minimax polynomial on |r| <= ln2/2, scaling by 2^k in two halves so denormal
results round once. log/log1p: x = m*2^k with m in [sqrt(1/2), sqrt(2)),
s = f/(2+f), log(1+f) = f - f^2/2 + s*(f^2/2 + R(s^2)) (fdlibm's form); log1p
adds the rounding error of 1+x as c/u. tanh: odd polynomial below 0.55, else
1 - 2/(exp(2|x|) + 1). logistic = 1/(1+exp(-x)) or exp(x)/(1+exp(x)) by sign.
erf: odd polynomial below 1, above it 1 - t*exp(h(t) - x^2) with t = 2/(2+|x|)
(the Numerical Recipes substitution) and x^2 split exactly by fma. atan2:
octant reduction to |u| <= tan(pi/8), odd polynomial, result n*pi/4 +- atan(u)
with pi/4 in two parts. sin/cos/tan float32: exact Payne-Hanek reduction in
integer arithmetic (96 bits of 2/pi chosen by the exponent, so every finite x),
polynomials in double. sin/cos/tan float64: 3-part Cody-Waite with fma, accurate
for |x| < 2^40 ~ 1.1e12; beyond, the rounded quotient x*2/pi lets |r| outgrow
the polynomials: results stay finite, sin/cos within [-1, 1], but lose accuracy.
pow float32: exp(b*log|a|) in double. pow float64: log|a| as a double-double
(s = (m-1)/(m+1) carried to ~2^-100), b*log|a| as a double-double, exp of the pair.

The exactness arguments (Cody-Waite steps, two-product error terms) rely on
llvm.fma being a fused multiply-add (on targets without FMA it becomes a libm
`fma` call, still correct but neither fast nor vectorised) and on the emitted
arithmetic carrying no fast-math flags: callers must not add any.

Measured max error in ulp. float32: every finite input (all 2^32 bit patterns)
against NumPy's float64 result rounded to float32; pow on 2e9 and atan2 on 1e9
random pairs. float64: 1.6e8 random inputs per function (log-uniform over the finite
range, dense where the function varies, specials) against NumPy long double
(erf against math.erf, itself ~1 ulp: mpmath gives 1.4 ulp; tan 2.4 ulp):

    function   float32   float64      function   float32   float64
    exp           1         1         sin           1         1
    expm1         1         2         cos           1         1
    log           1         1         tan           1         3
    log1p         2         2         erf           1         2
    tanh          1         1         rsqrt         1         1
    logistic      2         2         pow           1         2
    atan2         2         2         sqrt          0         0

tests/test_mathlib.py enforces these plus one (float32 never above 4) on ~1e6
inputs per function and dtype.
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

UNARY = frozenset({"exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
                   "erf", "rsqrt", "sqrt"})
BINARY = frozenset({"pow", "atan2"})

F32, F64 = ir.FloatType(), ir.DoubleType()


# ---------------------------------------------------------------------------
# Exact constants, computed once in fixed point (no hand-copied digits).

_PREC = 400   # bits after the binary point


def _series_inv(n: int, alternating: bool) -> int:
    """atan(1/n) (alternating) or atanh(1/n), times 2**_PREC, by its series."""
    guard = 16
    power = (1 << (_PREC + guard)) // n
    total, k, sign = 0, 1, 1
    while power:
        total += sign * (power // k)
        power //= n * n
        k += 2
        sign = -sign if alternating else 1
    return total >> guard


class _Exact:
    """The rational n/d, exactly: what this module needs of fractions' Fraction,
    whose import (with decimal's) was ~5 ms of a first jit. float() rounds
    correctly, as Python's int / int does."""
    __slots__ = ("n", "d")

    def __init__(self, n: int, d: int = 1):
        self.n, self.d = n, d

    def __float__(self) -> float:
        return self.n / self.d

    def __truediv__(self, k: int) -> _Exact:
        return _Exact(self.n, self.d * k)

    def __rtruediv__(self, k: int) -> _Exact:
        return _Exact(k * self.d, self.n)

    def __sub__(self, v: float) -> _Exact:
        p, q = v.as_integer_ratio()
        return _Exact(self.n * q - p * self.d, self.d * q)


_PI_FIXED = 16 * _series_inv(5, True) - 4 * _series_inv(239, True)   # Machin's formula
_PI = _Exact(_PI_FIXED, 1 << _PREC)
_LN2 = _Exact(2 * _series_inv(3, False), 1 << _PREC)


def _split(value: _Exact, parts: int, single: bool = False) -> list:
    """value as an unevaluated sum of `parts` floats (float32 values if single)."""
    out = []
    for _ in range(parts):
        v = float(value)
        if single:
            v = float(np.float32(v))
        out.append(v)
        value = value - v
    return out


# 2/pi in 32-bit words, led by 64 zero bits so a window may start before the point.
_TWO_OVER_PI_BITS = 224
_TWO_OVER_PI = (1 << (_TWO_OVER_PI_BITS + 1 + _PREC)) // _PI_FIXED   # floor(2^224 * 2/pi)
_WORDS = [0, 0] + [(_TWO_OVER_PI >> (32 * (6 - i))) & 0xFFFFFFFF for i in range(7)]
_PAIRS = [(_WORDS[i] << 32) | _WORDS[i + 1] for i in range(8)]   # 64-bit windows


# ---------------------------------------------------------------------------
# Minimax coefficients (Remez exchange in 50-digit mpmath, coefficients rounded
# to the working precision and refitted; max error of the rounded fit noted).

# e^r = 1 + r + r^2 P(r), |r| <= ln2/2; relative 2^-28 / 2^-60
_EXP = {F32: (0.4999999403953552, 0.16666516661643982, 0.04166810214519501,
              0.008369192481040955, 0.001383890281431377),
        F64: (0.5, 0.16666666666666682, 0.041666666666666095, 0.008333333333317048,
              0.0013888888889115455, 0.00019841269896351188, 2.4801586926846004e-05,
              2.7557234895228935e-06, 2.755758175228557e-07, 2.5112025001406857e-08,
              2.0826634586299433e-09)}
# expm1(r) = r + r^2/2 + r^3 Q(r); relative 2^-31 / 2^-59
_EXPM1 = {F32: (0.1666666567325592, 0.04166646674275398, 0.008333643898367882,
                0.001393497921526432, 0.00019660635734908283),
          F64: (0.16666666666666677, 0.04166666666666658, 0.008333333333322167,
                0.0013888888888942627, 0.00019841269884919, 2.4801587198276102e-05,
                2.7557245320866318e-06, 2.755738702274604e-07, 2.5108676208989765e-08,
                2.0878910206015856e-09)}
# tanh x = x + x^3 T(x^2), |x| < 0.55; relative 2^-33 / 2^-60
_TANH = {F32: (-0.3333333134651184, 0.1333322674036026, -0.05394915118813515,
               0.021711383014917374, -0.008194135501980782, 0.0021449413616210222),
         F64: (-0.333333333333333, 0.1333333333332658, -0.053968253963736966,
               0.02186948838522002, -0.00886323259240067, 0.003592091959735475,
               -0.0014555425628277913, 0.0005884441814293217, -0.0002333833349047176,
               8.332311295498891e-05, -1.9501623725457373e-05)}
# R(z) = (2 atanh(s) - 2s)/s, z = s^2 <= 0.0295, as z*poly(z); absolute 2^-34 / 2^-58
_LOG = {F32: (0.6666666269302368, 0.40000972151756287, 0.2849879264831543,
              0.24278858304023743),
        F64: (0.6666666666666734, 0.3999999999941664, 0.28571428742028143,
              0.22222198605063792, 0.1818356285041306, 0.1531408487668286,
              0.14795632845800633)}
# (2 atanh(s) - 2s - 2s^3/3)/s^5 as poly(s^2); relative 2^-50 (double-double log)
_POWLOG = (0.40000000000000024, 0.2857142857134095, 0.22222222270450262,
           0.18181808322549123, 0.15385570581799993, 0.13286071546409037,
           0.12912425894539298)
# sin r = r + r^3 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2), |r| <= pi/4; both evaluated in
# double (float32 inputs too); relative 2^-47 / 2^-63 (sin), 2^-43 / 2^-64 (cos)
_SIN = {F32: (-0.1666666666663035, 0.008333333325077696, -0.0001984126372859034,
              2.755533964693801e-06, -2.476045386280273e-08),
        F64: (-0.16666666666666666, 0.00833333333333304, -0.00019841269840959285,
              2.7557319071880108e-06, -2.505207028341492e-08, 1.6054220479004305e-10,
              -7.384541133585452e-13)}
_COS = {F32: (0.04166666661949169, -0.001388888350010052, 2.4799460160226842e-05,
              -2.7205754621226535e-07),
        F64: (0.041666666666666595, -0.0013888888888873342, 2.480158728900208e-05,
              -2.7557314217038855e-07, 2.087570539602699e-09, -1.1358749239703346e-11)}
# atan u = u + u^3 A(u^2), |u| <= tan(pi/8); relative 2^-34 / 2^-64
_ATAN = {F32: (-0.3333333134651184, 0.19999802112579346, -0.14279130101203918,
               0.11009545624256134, -0.08282853662967682, 0.043503064662218094),
         F64: (-0.33333333333333326, 0.19999999999997098, -0.14285714285317078,
               0.11111111083805619, -0.09090907988545147, 0.07692279271020898,
               -0.06666175820867268, 0.058765283612852826, -0.05215261172208564,
               0.04490897764000828, -0.03318280218312676, 0.014901760459591594)}
# erf x, |x| < 1: float32 x + x*E(x^2) (keeps 2/sqrt(pi) exact enough), float64 x*E(x^2);
# relative 2^-29 / 2^-56
_ERF = {F32: (0.12837916612625122, -0.3761262595653534, 0.11283578723669052,
              -0.026853347197175026, 0.005187162198126316, -0.0007997853099368513,
              7.806903886375949e-05),
        F64: (1.1283791670955126, -0.37612638903183343, 0.1128379167093695,
              -0.02686617064195914, 0.005223977596735908, -0.0008548325485001603,
              0.00012055280496703637, -1.4924465642762873e-05, 1.6444150605400602e-06,
              -1.6183991333226114e-07, 1.3616699114658574e-08, -7.6078097824203e-10)}
# erfc x = t exp(h(t) - x^2), t = 2/(2+x), 1 <= x <= XMAX, h a polynomial in (t - centre);
# absolute error of erf 2^-33 / 2^-60
_ERFC = {F32: (4.0, 0.5, (-0.671794056892395, 1.3452848196029663, 0.1893749237060547,
                          -0.3742619752883911, -0.17371663451194763, 0.3902910053730011,
                          -0.20312930643558502)),
         F64: (6.0, 0.4583333333333333, (
             -0.7274922853522043, 1.3276012289342372, 0.23442498156459854,
             -0.34412908966285277, -0.2131176173179657, 0.243592795335661,
             0.1961935210309367, -0.26576995999143316, -0.16961682088650817,
             0.3459157066650185, 0.10529801908990537, -0.5252748074625904,
             0.3369882057973012))}


# ---------------------------------------------------------------------------
# A thin emitter for one float type.

def _scalef(module) -> bool:
    """Does the target have AVX-512's vscalef?"""
    from . import target
    return target.vector_bytes(target.of_module(module)) == 64


class _Ops:
    """Scalar float ops of one type at a builder's position. Python numbers passed as
    operands become constants of that type."""

    def __init__(self, b: ir.IRBuilder, t: ir.Type):
        self.b, self.t = b, t
        self.wide = isinstance(t, ir.DoubleType)
        self.key = F64 if self.wide else F32
        self.nbits = 64 if self.wide else 32
        self.it = ir.IntType(self.nbits)
        self.mant = 52 if self.wide else 23
        self.bias = 1023 if self.wide else 127

    # constants and conversions
    def v(self, x):
        return ir.Constant(self.t, float(x)) if isinstance(x, (int, float)) else x

    def i(self, x):
        return ir.Constant(self.it, int(x)) if isinstance(x, int) else x

    def bits(self, x):
        return self.b.bitcast(self.v(x), self.it)

    def from_bits(self, n):
        return self.b.bitcast(n, self.t)

    def to_float(self, n, signed=True):
        return self.b.sitofp(n, self.t) if signed else self.b.uitofp(n, self.t)

    def to_int(self, x):
        return self.b.fptosi(x, self.it)

    # arithmetic
    def add(self, x, y):
        return self.b.fadd(self.v(x), self.v(y))

    def sub(self, x, y):
        return self.b.fsub(self.v(x), self.v(y))

    def mul(self, x, y):
        return self.b.fmul(self.v(x), self.v(y))

    def div(self, x, y):
        return self.b.fdiv(self.v(x), self.v(y))

    def neg(self, x):
        return self.b.fneg(x)

    def _intr(self, name, *args):
        fnty = ir.FunctionType(self.t, [self.t] * len(args))
        fn = self.b.module.declare_intrinsic(name, [self.t], fnty)
        return self.b.call(fn, [self.v(a) for a in args])

    def fma(self, x, y, z):
        return self._intr("llvm.fma", x, y, z)

    def abs(self, x):
        return self._intr("llvm.fabs", x)

    def rint(self, x):
        return self._intr("llvm.rint", x)

    def trunc(self, x):
        return self._intr("llvm.trunc", x)

    def sqrt(self, x):
        return self._intr("llvm.sqrt", x)

    def copysign(self, x, sign):
        return self._intr("llvm.copysign", x, sign)

    def clamp(self, x, lo, hi):
        """minnum/maxnum: a NaN x becomes lo, so the result is safe for fptosi."""
        return self._intr("llvm.minnum", self._intr("llvm.maxnum", x, lo), hi)

    def poly(self, x, coeffs):
        """coeffs[0] + coeffs[1] x + ... by Horner's rule with fma."""
        acc = self.v(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, c)
        return acc

    # comparisons and selects
    def cmp(self, op, x, y):
        return self.b.fcmp_ordered(op, self.v(x), self.v(y))

    def isnan(self, x, y=None):
        return self.b.fcmp_unordered("uno", x, x if y is None else y)

    def sel(self, cond, x, y):
        return self.b.select(cond, self.v(x), self.v(y))

    def signbit(self, x):
        return self.b.icmp_signed("<", self.bits(x), self.i(0))

    def ldexp(self, x, k):
        """x * 2**k, rounded once (denormal results included), for an integer k
        with |k| < 2**31. One vscalef on AVX-512 hosts, where llvm.ldexp
        vectorises; elsewhere it would become a libm call per element, so two
        exact power-of-two factors do it there."""
        if not _scalef(self.b.module):
            k1 = self.b.ashr(k, self.i(1))   # two halves: each 2^k normal
            return self.mul(self.mul(x, self.pow2(k1)), self.pow2(self.b.sub(k, k1)))
        k32 = self.b.trunc(k, ir.IntType(32)) if self.wide else k
        fnty = ir.FunctionType(self.t, [self.t, ir.IntType(32)])
        fn = self.b.module.declare_intrinsic("llvm.ldexp", [self.t, ir.IntType(32)], fnty)
        return self.b.call(fn, [x, k32])

    def pow2(self, k):
        """2**k for an integer k in the normal exponent range."""
        return self.from_bits(self.b.shl(self.b.add(k, self.i(self.bias)), self.i(self.mant)))

    def flip_sign(self, x, flag):
        """-x where the i1 `flag` is set (an exact sign flip, NaN included)."""
        mask = self.b.shl(self.b.zext(flag, self.it), self.i(self.nbits - 1))
        return self.from_bits(self.b.xor(self.bits(x), mask))

    def on_nan(self, x, res, y=None):
        """NaN inputs give NaN (x + y keeps the payload NumPy would)."""
        return self.sel(self.isnan(x, y), x if y is None else self.add(x, y), res)


# ---------------------------------------------------------------------------
# exp, expm1, log, log1p

def _exp(m: _Ops, x, x_lo=None):
    """e^(x + x_lo); overflow -> inf, underflow -> 0; a NaN x gives a number (callers
    that can see NaN select it back)."""
    lim = 800.0 if m.wide else 110.0   # past every threshold, keeps 2^(k/2) normal
    ln2 = _split(_LN2, 2, not m.wide)
    xc = m.clamp(x, -lim, lim)
    kf = m.rint(m.mul(xc, float(1 / _LN2)))
    r = m.fma(kf, -ln2[0], xc)          # exact: the product is exact inside fma
    r = m.fma(kf, -ln2[1], r)
    if x_lo is not None:      # (x_lo is NaN when x overflowed to inf)
        r = m.add(r, m.sel(m.cmp("<", m.abs(x), lim), x_lo, 0.0))
    q = m.fma(m.mul(r, r), m.poly(r, _EXP[m.key]), r)
    p = m.add(q, 1.0)
    return m.ldexp(p, m.to_int(kf))


def _exp_fn(m, x):
    return m.on_nan(x, _exp(m, x))


def _expm1(m: _Ops, x):
    lo, hi = (-40.0, 710.0) if m.wide else (-20.0, 89.0)   # -1 and inf beyond these
    ln2 = _split(_LN2, 2, not m.wide)
    xc = m.clamp(x, lo, hi)
    kf = m.rint(m.mul(xc, float(1 / _LN2)))
    r = m.fma(kf, -ln2[0], xc)
    r = m.fma(kf, -ln2[1], r)
    p = m.fma(m.mul(r, r), m.fma(r, m.poly(r, _EXPM1[m.key]), 0.5), r)
    # 2^k (p + 1) - 1 = 2 (t p + (t - 1/2)) with t = 2^(k-1), finite up to k = 1024
    t = m.pow2(m.b.sub(m.to_int(kf), m.i(1)))
    res = m.mul(m.fma(t, p, m.sub(t, 0.5)), 2.0)
    res = m.sel(m.cmp("==", x, 0.0), x, res)        # expm1(-0) = -0
    return m.on_nan(x, res)


def _log_reduce(m: _Ops, u):
    """u = 2^k m, m in [sqrt(1/2), sqrt(2)): returns (k as float, f = m - 1). u normal."""
    ftype, itype = (np.float64, np.int64) if m.wide else (np.float32, np.int32)
    sqh = int(np.array(np.sqrt(0.5), ftype).view(itype))
    one = m.bias << m.mant
    ix = m.b.add(m.bits(u), m.i(one - sqh))
    k = m.b.sub(m.b.ashr(ix, m.i(m.mant)), m.i(m.bias))
    mb = m.b.add(m.b.and_(ix, m.i((1 << m.mant) - 1)), m.i(sqh))
    return m.to_float(k), m.sub(m.from_bits(mb), 1.0)


def _log_sum(m: _Ops, kf, f, extra=None):
    """k ln2 + log(1 + f) (+ extra, a small correction)."""
    ln2 = _split(_LN2, 2, not m.wide)
    s = m.div(f, m.add(f, 2.0))
    z = m.mul(s, s)
    r = m.mul(z, m.poly(z, _LOG[m.key]))
    hfsq = m.mul(m.mul(f, f), 0.5)
    low = m.fma(s, m.add(hfsq, r), m.mul(kf, ln2[1]))
    if extra is not None:
        low = m.add(low, extra)
    return m.fma(kf, ln2[0], m.add(m.sub(f, hfsq), low))


def _log_finite(m: _Ops, x):
    """log x for positive finite x (denormals included)."""
    tiny = m.cmp("<", x, float(np.finfo(np.float64 if m.wide else np.float32).tiny))
    shift = m.mant + 2
    xs = m.sel(tiny, m.mul(x, float(2 ** shift)), x)
    kf, f = _log_reduce(m, xs)
    kf = m.sub(kf, m.sel(tiny, float(shift), 0.0))
    return _log_sum(m, kf, f)


def _log_specials(m: _Ops, x, res, zero_at):
    inf = float("inf")
    res = m.sel(m.cmp("==", x, inf), inf, res)
    res = m.sel(m.cmp("==", x, zero_at), -inf, res)
    res = m.sel(m.cmp("<", x, zero_at), float("nan"), res)
    return m.on_nan(x, res)


def _log(m, x):
    return _log_specials(m, x, _log_finite(m, x), 0.0)


def _log1p(m: _Ops, x):
    u = m.add(x, 1.0)
    kf, f = _log_reduce(m, u)     # u >= 2^-mant whenever x > -1: never denormal
    # rounding error of u = 1 + x (exact by Sterbenz either way), as log(u + c) ~ log u + c/u
    c = m.sel(m.cmp(">=", kf, 2.0), m.sub(1.0, m.sub(u, x)), m.sub(x, m.sub(u, 1.0)))
    res = _log_sum(m, kf, f, m.div(c, u))
    res = m.sel(m.cmp("==", x, 0.0), x, res)        # log1p(-0) = -0
    return _log_specials(m, x, res, -1.0)


# ---------------------------------------------------------------------------
# tanh, logistic, erf

def _tanh(m: _Ops, x):
    ax = m.abs(x)
    z = m.mul(x, x)
    small = m.fma(m.mul(ax, z), m.poly(z, _TANH[m.key]), ax)
    # 1 - 2/(e^2|x| + 1): the subtracted term stays <= 1/2 where it is used
    big = m.sub(1.0, m.div(2.0, m.add(_exp(m, m.add(ax, ax)), 1.0)))
    res = m.copysign(m.sel(m.cmp("<", ax, 0.55), small, big), x)
    return m.on_nan(x, res)


def _logistic(m: _Ops, x):
    e = _exp(m, m.neg(m.abs(x)))
    d = m.add(e, 1.0)
    res = m.sel(m.cmp(">=", x, 0.0), m.div(1.0, d), m.div(e, d))
    return m.on_nan(x, res)


def _erf(m: _Ops, x):
    ax = m.abs(x)
    z = m.mul(x, x)
    if m.wide:
        small = m.mul(x, m.poly(z, _ERF[F64]))
    else:
        small = m.fma(x, m.poly(z, _ERF[F32]), x)
    xmax, centre, coeffs = _ERFC[m.key]
    a = m.clamp(ax, 1.0, xmax)                      # erf rounds to 1 beyond xmax
    t = m.div(2.0, m.add(a, 2.0))
    h = m.poly(m.sub(t, centre), coeffs)
    a2 = m.mul(a, a)
    a2_lo = m.fma(a, a, m.neg(a2))                  # a^2 = a2 + a2_lo exactly
    erfc = m.mul(t, _exp(m, m.sub(m.sub(h, a2), a2_lo)))
    big = m.copysign(m.sub(1.0, erfc), x)
    return m.on_nan(x, m.sel(m.cmp("<", ax, 1.0), small, big))


# ---------------------------------------------------------------------------
# sin, cos, tan

def _trig_f64(m: _Ops, x):
    """|x| = q pi/2 + r by 3-part Cody-Waite; returns (r, q as i64)."""
    ax = m.abs(x)
    q = m.rint(m.mul(ax, float(2 / _PI)))
    q = m.clamp(q, 0.0, float(2 ** 52))             # defined fptosi for huge/inf/NaN
    r = ax
    for part in _split(_PI / 2, 3):                 # first step exact for q < 2^52
        r = m.fma(q, -part, r)
    return m.clamp(r, -1.0, 1.0), m.to_int(q)


def _trig_f32(m: _Ops, d: _Ops, x):
    """Payne-Hanek: |x| (float32) = q pi/2 + r exactly enough for every finite x.
    |x| = M 2^e; x 2/pi mod 4 = (M * C mod 2^96) 2^-94 where C holds bits e-1 .. e+94 of
    2/pi. Returns (r as double, q as i64)."""
    b = m.b
    i64 = ir.IntType(64)
    ix = b.and_(m.bits(x), m.i(0x7FFFFFFF))
    mant = b.zext(b.or_(b.and_(ix, m.i(0x7FFFFF)), m.i(0x800000)), i64)
    e = b.sub(b.lshr(ix, m.i(23)), m.i(150))
    e = b.select(b.icmp_signed("<", e, m.i(-62)), m.i(-62), e)  # tiny |x| handled apart
    j0 = b.zext(b.add(e, m.i(62)), i64)             # first window bit in _WORDS
    widx, sh = b.lshr(j0, ir.Constant(i64, 5)), b.and_(j0, ir.Constant(i64, 31))

    def word(k):                                    # 32 window bits from pair widx + k
        pair = ir.Constant(i64, _PAIRS[k])
        for w in range(1, 6):
            hit = b.icmp_unsigned("==", widx, ir.Constant(i64, w))
            pair = b.select(hit, ir.Constant(i64, _PAIRS[w + k]), pair)
        return b.lshr(b.shl(pair, sh), ir.Constant(i64, 32))

    p0, p1, p2 = (b.mul(mant, word(k)) for k in range(3))   # each < 2^56
    lo = b.add(p2, b.shl(p1, ir.Constant(i64, 32)))
    carry = b.zext(b.icmp_unsigned("<", lo, p2), i64)
    hi = b.add(b.add(p0, b.lshr(p1, ir.Constant(i64, 32))), carry)
    hi = b.and_(b.add(hi, ir.Constant(i64, 1 << 29)), ir.Constant(i64, 0xFFFFFFFF))  # round
    q = b.lshr(hi, ir.Constant(i64, 30))
    fhi = b.sub(b.and_(hi, ir.Constant(i64, 0x3FFFFFFF)), ir.Constant(i64, 1 << 29))
    frac = d.fma(d.to_float(lo, signed=False), 2.0 ** -64, d.to_float(fhi))
    return d.mul(frac, float(_PI / 2) * 2.0 ** -30), q


def _trig(m: _Ops, x, which: str):
    """sin / cos / tan: reduce, evaluate both polynomials in double, pick by quadrant."""
    if m.wide:
        d = m
        r, q = _trig_f64(m, x)
    else:
        d = _Ops(m.b, F64)
        r, q = _trig_f32(m, d, x)
    b, key = m.b, m.key
    z = d.mul(r, r)
    s = d.fma(d.mul(r, z), d.poly(z, _SIN[key]), r)
    hz = d.mul(z, 0.5)
    w = d.sub(1.0, hz)                              # 1 - z/2 and its rounding error
    c = d.add(w, d.fma(d.mul(z, z), d.poly(z, _COS[key]), d.sub(d.sub(1.0, w), hz)))
    one = ir.Constant(q.type, 1)
    odd = b.trunc(b.and_(q, one), ir.IntType(1))
    half = b.trunc(b.lshr(q, one), ir.IntType(1))   # bit 1 of q
    neg = m.signbit(x)
    if which == "sin":
        res = d.flip_sign(d.sel(odd, c, s), b.xor(half, neg))
    elif which == "cos":
        res = d.flip_sign(d.sel(odd, s, c), b.xor(half, odd))
    else:
        res = d.flip_sign(d.div(d.sel(odd, c, s), d.sel(odd, s, c)), b.xor(odd, neg))
    if not m.wide:
        res = b.fptrunc(res, m.t)
        tiny = m.cmp("<", m.abs(x), 2.0 ** -12)     # where sin x, tan x round to x, cos to 1
        res = m.sel(tiny, 1.0 if which == "cos" else x, res)
    not_finite = b.fcmp_unordered(">=", m.abs(x), m.v(float("inf")))
    return m.sel(not_finite, float("nan"), res)


# ---------------------------------------------------------------------------
# atan2, pow

def _atan2(m: _Ops, y, x):
    """Octant reduction: result = n pi/4 + s atan(u), |u| <= tan(pi/8)."""
    b = m.b
    inf = float("inf")
    ay, ax = m.abs(y), m.abs(x)
    swap = m.cmp(">", ay, ax)
    mn, mx = m.sel(swap, ax, ay), m.sel(swap, ay, ax)
    # scale so that mn + mx cannot overflow and 0.414 mx not underflow; the ratio is kept
    half = m.bias // 2
    scale = m.sel(m.cmp(">", mx, 2.0 ** half), 0.25,
                  m.sel(m.cmp("<", mx, 2.0 ** -half), 2.0 ** (m.mant + 2), 1.0))
    mn, mx = m.mul(mn, scale), m.mul(mx, scale)
    both_inf = b.and_(m.cmp("==", ay, inf), m.cmp("==", ax, inf))
    big = b.or_(m.cmp(">", mn, m.mul(mx, 0.41421356237309503)), both_inf)
    u = m.div(m.sel(big, m.sub(mn, mx), mn), m.sel(big, m.add(mn, mx), mx))
    u = m.sel(b.or_(m.cmp("==", mx, 0.0), both_inf), 0.0, u)
    z = m.mul(u, u)
    p = m.fma(m.mul(u, z), m.poly(z, _ATAN[m.key]), u)
    # (swap, x<0) -> base octant n and sign s; c = 1 when the pi/4 shift was taken
    xneg = m.signbit(x)
    cf = m.sel(big, 1.0, 0.0)
    n = m.sel(swap, m.sel(xneg, m.add(cf, 2.0), m.sub(2.0, cf)),
              m.sel(xneg, m.sub(4.0, cf), cf))
    minus = b.xor(swap, xneg)
    pio4 = _split(_PI / 4, 2, not m.wide)
    res = m.fma(n, pio4[0], m.fma(n, pio4[1], m.flip_sign(p, minus)))
    return m.on_nan(y, m.copysign(res, y), x)


def _two_sum(m: _Ops, a, c):
    s = m.add(a, c)
    bb = m.sub(s, a)
    return s, m.add(m.sub(a, m.sub(s, bb)), m.sub(c, bb))


def _log_dd(m: _Ops, x):
    """log x as a double-double (hi, lo), relative error ~2^-64; x positive finite."""
    tiny = m.cmp("<", x, float(np.finfo(np.float64).tiny))
    xs = m.sel(tiny, m.mul(x, 2.0 ** 54), x)
    kf, f = _log_reduce(m, xs)
    kf = m.sub(kf, m.sel(tiny, 54.0, 0.0))
    mm = m.add(f, 1.0)
    den = m.add(mm, 1.0)
    den_lo = m.sub(mm, m.sub(den, 1.0))             # exact rounding error of mm + 1
    s = m.div(f, den)                               # s = (m-1)/(m+1) = s + s_lo
    s_lo = m.div(m.fma(m.neg(s), den_lo, m.fma(m.neg(s), den, f)), den)
    z = m.mul(s, s)
    z_lo = m.fma(m.add(s, s), s_lo, m.fma(s, s, m.neg(z)))
    s3 = m.mul(s, z)
    s3_lo = m.add(m.fma(s, z, m.neg(s3)), m.fma(s, z_lo, m.mul(s_lo, z)))
    c3 = _split(_Exact(2, 3), 2)
    t3 = m.mul(s3, c3[0])                           # (2/3) s^3 as t3 + t3_lo
    t3_lo = m.add(m.fma(s3, c3[0], m.neg(t3)), m.fma(s3_lo, c3[0], m.mul(s3, c3[1])))
    tail = m.mul(m.mul(s3, z), m.poly(z, _POWLOG))  # s^5 T(s^2), < 6e-5
    ln2 = _split(_LN2, 2)
    a1 = m.mul(kf, ln2[0])
    a1_lo = m.fma(kf, ln2[0], m.neg(a1))
    hi, e1 = _two_sum(m, a1, m.add(s, s))
    hi, e2 = _two_sum(m, hi, t3)
    lo = m.add(m.add(e1, e2), m.add(m.fma(kf, ln2[1], a1_lo),
                                    m.add(m.add(s_lo, s_lo), m.add(t3_lo, tail))))
    total = m.add(hi, lo)
    return total, m.sub(lo, m.sub(total, hi))


def _pow_magnitude(m: _Ops, ax, y):
    """|a|^y for positive finite |a| and finite y (double arithmetic)."""
    if not m.wide:      # float32: everything in double, then one rounding
        d = _Ops(m.b, F64)
        ad, yd = m.b.fpext(ax, F64), m.b.fpext(y, F64)
        return m.b.fptrunc(_exp(d, d.mul(yd, _log_finite(d, ad))), m.t)
    hi, lo = _log_dd(m, ax)
    p = m.mul(y, hi)
    p_lo = m.fma(y, lo, m.fma(y, hi, m.neg(p)))
    return _exp(m, p, p_lo)


def _pow(m: _Ops, a, y):
    b = m.b
    inf, nan = float("inf"), float("nan")
    ax = m.abs(a)
    mag = _pow_magnitude(m, ax, y)
    y_int = m.cmp("==", y, m.trunc(y))              # true for +-inf too
    hy = m.mul(y, 0.5)
    y_odd = b.and_(y_int, m.cmp("!=", hy, m.trunc(hy)))
    y_neg = m.cmp("<", y, 0.0)
    mag = m.sel(m.cmp("==", ax, 0.0), m.sel(y_neg, inf, 0.0), mag)
    mag = m.sel(m.cmp("==", ax, inf), m.sel(y_neg, 0.0, inf), mag)
    toward_inf = b.icmp_unsigned("==", m.cmp("<", ax, 1.0), y_neg)
    y_inf = m.sel(m.cmp("==", ax, 1.0), 1.0, m.sel(toward_inf, inf, 0.0))
    mag = m.sel(m.cmp("==", m.abs(y), inf), y_inf, mag)
    res = m.flip_sign(mag, b.and_(m.signbit(a), y_odd))
    neg_finite = b.and_(m.cmp("<", a, 0.0), m.cmp("<", ax, inf))
    res = m.sel(b.and_(neg_finite, b.not_(y_int)), nan, res)
    res = m.on_nan(a, res, y)
    res = m.sel(m.cmp("==", a, 1.0), 1.0, res)      # 1^y = 1 and x^0 = 1, NaN included
    return m.sel(m.cmp("==", y, 0.0), 1.0, res)


# ---------------------------------------------------------------------------

_UNARY_IMPL = {
    "exp": _exp_fn,
    "expm1": _expm1,
    "log": _log,
    "log1p": _log1p,
    "tanh": _tanh,
    "logistic": _logistic,
    "erf": _erf,
    "sin": lambda m, x: _trig(m, x, "sin"),
    "cos": lambda m, x: _trig(m, x, "cos"),
    "tan": lambda m, x: _trig(m, x, "tan"),
    "sqrt": lambda m, x: m.sqrt(x),
    "rsqrt": lambda m, x: m.div(1.0, m.sqrt(x)),
}
_BINARY_IMPL = {"pow": _pow, "atan2": _atan2}
assert set(_UNARY_IMPL) == UNARY and set(_BINARY_IMPL) == BINARY


def _ops(builder: ir.IRBuilder, dtype, *values) -> _Ops:
    dtype = np.dtype(dtype)
    want = {np.dtype(np.float32): F32, np.dtype(np.float64): F64}.get(dtype)
    if want is None:
        raise TypeError(f"mathlib computes float32 and float64 only, not {dtype}; "
                        "compute float16 in float32")
    for v in values:
        if v.type != want:
            raise TypeError(f"mathlib: value of type {v.type} for dtype {dtype}")
    return _Ops(builder, want)


def emit_unary(builder: ir.IRBuilder, name: str, x: ir.Value, dtype: np.dtype) -> ir.Value:
    """Emit name(x) (name in UNARY) as straight-line IR at the builder's position."""
    if name not in _UNARY_IMPL:
        raise KeyError(f"mathlib has no unary function {name!r}; it has {sorted(UNARY)}")
    return _UNARY_IMPL[name](_ops(builder, dtype, x), x)


def emit_binary(builder: ir.IRBuilder, name: str, a: ir.Value, b: ir.Value,
                dtype: np.dtype) -> ir.Value:
    """Emit name(a, b) (name in BINARY: pow, atan2(a=y, b=x)) at the builder's position."""
    if name not in _BINARY_IMPL:
        raise KeyError(f"mathlib has no binary function {name!r}; it has {sorted(BINARY)}")
    return _BINARY_IMPL[name](_ops(builder, dtype, a, b), a, b)
