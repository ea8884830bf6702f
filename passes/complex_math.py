"""Complex elementwise math on pairs of real arrays.

passes/decomplex.py replaces every complex value by its (re, im) components,
real arrays of the component dtype (float32 for complex64, float64 for
complex128), and lowers each complex elementwise primitive through
COMPLEX_MATH[name]: the entry takes the operands as (re, im) pairs, in the
primitive's operand order, plus the primitive's params as keywords, and returns
the result as an (re, im) pair; abs, eq and ne return one real (bool) array.

The formulas avoid spurious overflow, underflow and cancellation: they stay
within a few ulp of the exact result on each component, measured relative to
the component itself, or to |result| where the component is small through an
inherent cancellation (e.g. Re log z near |z| = 1, Re expm1 z near e^x cos y = 1,
Re/Im of a product). tests/test_complex_math.py measures them.

Special values (infinities, NaNs, signed zeros) are JAX's (XLA's CPU results),
except where a comment marked "differs from JAX" keeps C99 Annex G / NumPy's
value: mostly the sign of a zero that JAX drops, which the branch cuts of
sqrt, log and the inverse functions built on them depend on.
"""
from __future__ import annotations

import math

import numpy as np

import jx.numpy as jnp


def _finfo(x):
    return np.finfo(x.dtype)


def _log_max(x) -> float:
    """The largest x whose exp(x) is finite, rounded down (exp's overflow threshold)."""
    return float(np.log(_finfo(x).max)) - 1e-3


def _hypot(x, y):
    """sqrt(x^2 + y^2) of x, y scaled by a power of 2 (exact) where the squares
    would overflow or underflow: within 1 ulp (scaling by the larger part, as
    jnp.hypot does, costs up to 2). inf if either is infinite, even with a NaN."""
    fi = _finfo(x)
    half = int(fi.maxexp) // 2
    ax, ay = jnp.abs(x), jnp.abs(y)
    m = jnp.maximum(ax, ay)
    big, tiny = m > float(2.0 ** (half - 4)), m < float(2.0 ** -(half - 4))
    up, down = half + 6, int(fi.nmant) + half
    s = jnp.where(big, float(2.0 ** -up), jnp.where(tiny, float(2.0 ** down), 1.0))
    unscale = jnp.where(big, float(2.0 ** up), jnp.where(tiny, float(2.0 ** -down), 1.0))
    xs, ys = ax * s, ay * s
    h = jnp.sqrt(xs * xs + ys * ys) * unscale
    return jnp.where(jnp.isinf(ax) | jnp.isinf(ay), float("inf"), h)


# ------------------------------------------------------------------ arithmetic

def neg(a):
    """-a, part by part (exact)."""
    return -a[0], -a[1]


def add(a, b):
    """a + b, part by part (exact rounding of each part)."""
    return a[0] + b[0], a[1] + b[1]


def sub(a, b):
    """a - b, part by part."""
    return a[0] - b[0], a[1] - b[1]


def mul(a, b):
    """(ac - bd, ad + bc), as XLA: each component within a few ulp of |result|
    (not of itself where the two products cancel)."""
    (ar, ai), (br, bi) = a, b
    return ar * br - ai * bi, ar * bi + ai * br


def div(a, b):
    """Smith's algorithm: divides by the larger component of b and multiplies by
    the ratio of the smaller to it (<= 1), so |b|^2 is never formed. Both
    operands are first scaled by a power of 2 where b is within 8x of overflow
    (the denominator big + small r reaches 2 big) or subnormal (its bits would
    be lost). Where that gives NaN + NaN i, the C99 Annex G recoveries that XLA
    applies: x / 0 = inf with x's signs, inf / finite = inf, finite / inf = 0."""
    (ar, ai), (br, bi) = a, b
    fi = _finfo(br)
    m = jnp.maximum(jnp.abs(br), jnp.abs(bi))
    scale = jnp.where(m > float(2.0 ** (int(fi.maxexp) - 3)), 0.125,
                      jnp.where(m < float(fi.tiny), float(2.0 ** (int(fi.nmant) + 1)), 1.0))
    sr, si, tr, ti = ar * scale, ai * scale, br * scale, bi * scale
    swap = jnp.abs(tr) < jnp.abs(ti)
    big, small = jnp.where(swap, ti, tr), jnp.where(swap, tr, ti)
    r = small / big
    den = big + small * r
    p, q = jnp.where(swap, si, sr), jnp.where(swap, sr, si)
    re = (p + q * r) / den
    im = jnp.where(swap, p * r - q, q - p * r) / den   # (a / (i c) = -i a / c)

    inf = float("inf")
    nan_both = jnp.isnan(re) & jnp.isnan(im)
    zero_den = (br == 0) & (bi == 0) & ~(jnp.isnan(ar) & jnp.isnan(ai))
    z_inf = jnp.copysign(inf, br)
    z_re, z_im = z_inf * ar, z_inf * ai
    a_inf = jnp.isinf(ar) | jnp.isinf(ai)
    b_fin = jnp.isfinite(br) & jnp.isfinite(bi)
    ar1 = jnp.copysign(jnp.where(jnp.isinf(ar), 1.0, 0.0), ar)
    ai1 = jnp.copysign(jnp.where(jnp.isinf(ai), 1.0, 0.0), ai)
    i_re, i_im = inf * (ar1 * br + ai1 * bi), inf * (ai1 * br - ar1 * bi)
    b_inf = jnp.isinf(br) | jnp.isinf(bi)
    a_fin = jnp.isfinite(ar) & jnp.isfinite(ai)
    br1 = jnp.copysign(jnp.where(jnp.isinf(br), 1.0, 0.0), br)
    bi1 = jnp.copysign(jnp.where(jnp.isinf(bi), 1.0, 0.0), bi)
    f_re, f_im = 0.0 * (ar * br1 + ai * bi1), 0.0 * (ai * br1 - ar * bi1)

    def fix(v, z, i, f):
        return jnp.where(nan_both, jnp.where(zero_den, z, jnp.where(
            a_inf & b_fin, i, jnp.where(b_inf & a_fin, f, v))), v)
    return fix(re, z_re, i_re, f_re), fix(im, z_im, i_im, f_im)


def _one(a):
    return jnp.ones_like(a[0]), jnp.zeros_like(a[0])


def integer_pow(a, *, y: int):
    """a ** y for a static int y by repeated squaring, as JAX; a negative y is
    the reciprocal of a ** -y (1 / 0 = inf + nan i, as JAX)."""
    if y == 0:
        return _one(a)
    acc, base, n = None, a, abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else mul(acc, base)
        n >>= 1
        if n:
            base = mul(base, base)
    return div(_one(a), acc) if y < 0 else acc


def pow_(a, b):
    """exp(b log a), with JAX's special values: a ** 0 = 1 (even for NaN),
    1 ** b = 1, 0 ** b = 0 for real b > 0 and NaN for any other b; otherwise an
    infinite or NaN part in a or b gives NaN + NaN i, except (inf + 0i) ** real b
    (inf for b > 0, 0 for b < 0). The error grows with |b log a| (the rounding
    of the exponent), as for any exp-log power."""
    (ar, ai), (br, bi) = a, b
    re, im = exp(mul(b, log(a)))
    finite = jnp.isfinite(ar) & jnp.isfinite(ai) & jnp.isfinite(br) & jnp.isfinite(bi)
    inf_base = (ar == float("inf")) & (ai == 0) & (bi == 0)
    nan = float("nan")
    re = jnp.where(finite, re, jnp.where(inf_base & (br > 0), float("inf"),
                                         jnp.where(inf_base & (br < 0), 0.0, nan)))
    im = jnp.where(finite, im, jnp.where(inf_base & ((br > 0) | (br < 0)), 0.0, nan))
    b0 = (br == 0) & (bi == 0)
    one = b0 | ((ar == 1) & (ai == 0))
    zero = (ar == 0) & (ai == 0) & ~b0
    zero_val = jnp.where((bi == 0) & (br > 0), 0.0, nan)
    re = jnp.where(one, 1.0, jnp.where(zero, zero_val, re))
    im = jnp.where(one, 0.0, jnp.where(zero, zero_val, im))
    return re, im


def abs_(a):
    """|a| = hypot(re, im) (_hypot: no overflow or underflow, within 1 ulp);
    |inf + nan i| = inf, as C99 and NumPy (differs from JAX: nan)."""
    return _hypot(a[0], a[1])


def sign(a):
    """a / |a|, and a itself at 0 (as JAX). Both parts are divided by one
    _hypot, within an ulp: the result has modulus 1 within about 2 ulp."""
    x, y = a
    h = _hypot(x, y)
    zero = h == 0
    safe = jnp.where(zero, 1.0, h)
    return jnp.where(zero, x, x / safe), jnp.where(zero, y, y / safe)


def eq(a, b):
    """Both parts equal (a NaN part is unequal, as JAX and NumPy)."""
    return (a[0] == b[0]) & (a[1] == b[1])


def ne(a, b):
    """Either part unequal: not eq."""
    return (a[0] != b[0]) | (a[1] != b[1])


# ------------------------------------------------------------ exp and friends

def _exp_scaled(x, c, s):
    """(e^x c, e^x s) for |c|, |s| <= 1: past exp's overflow threshold as
    (e^(x/2) c) e^(x/2), finite wherever the product is."""
    big = x > _log_max(x)
    h = jnp.exp(jnp.where(big, 0.5 * x, x))
    hh = jnp.where(big, h, 1.0)
    return (h * c) * hh, (h * s) * hh


def exp(a):
    """e^x (cos y + i sin y); a real argument (y = 0) gives a real result
    (exp(inf) = inf + 0i, exp(nan) = nan + 0i), the zero with y's sign (differs from
    JAX, which gives +0 also for y = -0)."""
    x, y = a
    re, im = _exp_scaled(x, jnp.cos(y), jnp.sin(y))
    return re, jnp.where(y == 0, y, im)


def expm1(a):
    """e^z - 1 = (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y: no cancellation
    of e^x against 1 near z = 0 (cos y - 1 = -2 sin^2(y/2) exactly)."""
    x, y = a
    c, s = jnp.cos(y), jnp.sin(y)
    h = jnp.sin(0.5 * y)
    re = jnp.expm1(x) * c - 2.0 * (h * h)
    big_re, im = _exp_scaled(x, c, s)
    re = jnp.where(x > _log_max(x), big_re, re)
    return re, jnp.where(y == 0, y, im)


def _log_abs(x, y):
    """log|z| without forming |z|: with m = max(|x|, |y|), n = min, where
    |z|^2 is in [1/2, 2], half of log1p(u) with u = |z|^2 - 1 = 2d + (d^2 + n^2),
    d = m - 1 exact (Sterbenz): u cancels only where |z| is within rounding of 1,
    and there log|z| is far below |log z| (arg z is not small). Elsewhere
    log m + log1p((n/m)^2) / 2, whose terms are at most twice |log|z|| (a rounded
    hypot would cost up to 4 ulp where log|z| is near +-0.35)."""
    ax, ay = jnp.abs(x), jnp.abs(y)
    m, n = jnp.maximum(ax, ay), jnp.minimum(ax, ay)
    near = (m >= 0.5) & (m * m + n * n >= 0.5) & (m * m + n * n <= 2.0)
    d = jnp.where(near, m - 1.0, 0.0)
    nn = jnp.where(near, n, 0.0)
    near_val = 0.5 * jnp.log1p(2.0 * d + (d * d + nn * nn))
    r = n / jnp.where(m == 0, 1.0, m)
    far_val = jnp.log(m) + 0.5 * jnp.log1p(r * r)
    inf = jnp.isinf(ax) | jnp.isinf(ay)
    return jnp.where(inf, float("inf"), jnp.where(near, near_val, far_val))


def log(a):
    """log|z| + i atan2(y, x), log|z| as _log_abs. log(0) = -inf + i atan2(y, x).
    log(inf + nan i) = inf + nan i, as C99 and NumPy (differs from JAX: nan + nan i)."""
    x, y = a
    return _log_abs(x, y), jnp.arctan2(y, x)


def log1p(a):
    """log(1 + z) = log|1 + z| + i atan2(y, 1 + x). Where |1 + z|^2 = 1 + u with
    u = 2x + (x^2 + y^2) >= -3/4, log|1 + z| = log1p(u) / 2: no rounding of 1 + x,
    and exact for tiny z. Below (1 + z near 0: 1 + x is exact by Sterbenz) and
    for huge z (x^2 would overflow; log|1 + z| is large) it is _log_abs(1 + x, y)."""
    x, y = a
    xp1 = x + 1.0
    m = jnp.maximum(jnp.abs(x), jnp.abs(y))
    fi = _finfo(x)
    small = m < float(2.0 ** (int(fi.maxexp) // 2 - 2))
    xs, ys = jnp.where(small, x, 0.0), jnp.where(small, y, 0.0)
    u = 2.0 * xs + (xs * xs + ys * ys)
    direct = small & (u >= -0.75)
    re = jnp.where(direct, 0.5 * jnp.log1p(jnp.where(direct, u, 0.0)), _log_abs(xp1, y))
    return re, jnp.arctan2(y, xp1)


def _sqrt_scaled(a):
    """Kahan's sqrt of s z, s an even power of 2 that keeps |x| + |z| from
    overflowing and lifts subnormal inputs: t = sqrt((|x| + |z|) / 2), then
    (t, y / 2t) for x >= 0 and (|y| / 2t, t with y's sign) for x < 0, so
    neither part cancels and the branch cut follows the sign of y's zero
    (sqrt(-4 - 0i) = -2i). Returns (re, im) of sqrt(s z), |s z| and 1 / sqrt(s)."""
    x, y = a
    fi = _finfo(x)
    m = jnp.maximum(jnp.abs(x), jnp.abs(y))
    lift = 2 * ((int(fi.nmant) + 2) // 2)
    big = m > float(fi.max) / 8
    tiny = m < float(fi.tiny)
    s = jnp.where(big, 0.25, jnp.where(tiny, float(2.0 ** lift), 1.0))
    unscale = jnp.where(big, 2.0, jnp.where(tiny, float(2.0 ** (-lift // 2)), 1.0))
    xs, ys = x * s, y * s
    h = _hypot(xs, ys)
    t = jnp.sqrt(0.5 * (jnp.abs(xs) + h))
    q = ys / (2.0 * t)
    re = jnp.where(x >= 0, t, jnp.abs(q))
    im = jnp.where(x >= 0, q, jnp.copysign(t, ys))
    return re, im, h, unscale


def sqrt(a):
    """Kahan's branch-cut-correct square root (see _sqrt_scaled). sqrt(0 +- 0i) =
    0 +- 0i, sqrt(x +- inf i) = inf +- inf i for any x. Differs from JAX, whose
    sqrt(-4 - 0i) is +2i (it drops the zero's sign) and sqrt(0 - 0i) = 0 + 0i."""
    x, y = a
    re, im, h, unscale = _sqrt_scaled(a)
    re, im = re * unscale, im * unscale
    zero = (x == 0) & (y == 0)
    yinf = jnp.isinf(y)
    re = jnp.where(zero, 0.0, jnp.where(yinf, float("inf"), re))
    im = jnp.where(zero | yinf, y, im)
    return re, im


def rsqrt(a):
    """1 / sqrt(z) = conj(sqrt z) / |z|, its parts sqrt((|x| + |z|) / 2|z|^2)
    and |y| / sqrt(2 |z|^2 (|x| + |z|)) (signs and places as Kahan's sqrt), with
    |z|^2 = x^2 + y^2 rounded once and no division of a rounded sqrt by a rounded
    |z|: about 1 ulp less than that. z is first scaled by an even power of 2
    (undone exactly) that keeps |z|^3 finite and normal; 1 / 0 = inf + nan i, as JAX."""
    x, y = a
    lo1, lo2, f1, f2 = {23: (36, 84, 60, 120)}.get(int(_finfo(x).nmant), (300, 680, 500, 1000))
    m = jnp.maximum(jnp.abs(x), jnp.abs(y))
    sc = jnp.where(m > float(2.0 ** lo2), float(2.0 ** -f2),
                   jnp.where(m > float(2.0 ** lo1), float(2.0 ** -f1),
                             jnp.where(m < float(2.0 ** -lo2), float(2.0 ** f2),
                                       jnp.where(m < float(2.0 ** -lo1), float(2.0 ** f1), 1.0))))
    un = jnp.where(m > float(2.0 ** lo2), float(2.0 ** -(f2 // 2)),
                   jnp.where(m > float(2.0 ** lo1), float(2.0 ** -(f1 // 2)),
                             jnp.where(m < float(2.0 ** -lo2), float(2.0 ** (f2 // 2)),
                                       jnp.where(m < float(2.0 ** -lo1), float(2.0 ** (f1 // 2)),
                                                 1.0))))
    xs, ys = x * sc, y * sc
    s2 = xs * xs + ys * ys
    p = jnp.abs(xs) + jnp.sqrt(s2)
    t = jnp.sqrt((0.5 * p) / s2) * un                   # sqrt((|x| + |z|) / 2) / |z|
    r = jnp.sqrt((2.0 * s2) * p)
    lost = jnp.abs(ys) < float(_finfo(x).tiny) * float(2.0 ** int(_finfo(x).nmant))
    q = jnp.where(lost, (y / r) * sc, ys / r) * un     # (y / r first where y * sc is subnormal)
    pos = x >= 0
    re = jnp.where(pos, t, jnp.abs(q))
    im = jnp.where(pos, -q, -jnp.copysign(t, ys))
    zero = (x == 0) & (y == 0)
    inf = jnp.isinf(x) | jnp.isinf(y)
    zero_re = jnp.where(x == -float("inf"), -0.0, 0.0)          # (JAX's zero signs)
    re = jnp.where(zero, float("inf"), jnp.where(inf, zero_re, re))
    im = jnp.where(zero, float("nan"), jnp.where(inf, jnp.copysign(0.0, -y), im))
    return re, im


# ------------------------------------------------------------ trigonometric

def _taylor(x2, first: int, eps: float, bound: float = 1.0):
    """sum of x^(2k) / (first + 2k)! for k >= 0, to relative precision eps for
    x^2 <= bound: Horner in x^2 from the smallest term."""
    coefs, k, f, p = [], first, float(math.factorial(first)), 1.0
    while p / f > eps / 16:
        coefs.append(1.0 / f)
        f *= (k + 1) * (k + 2)
        k += 2
        p *= bound
    acc = coefs[-1]
    for c in reversed(coefs[:-1]):
        acc = c + x2 * acc
    return acc


def _sinh_cosh(x):
    """(sinh x, cosh x) for |x| <= 1 by their Taylor series, x (1 + x^2/6 + ...)
    and 1 + x^2 (1/2 + ...): within about an ulp (through expm1 and exp they
    gather 2-3)."""
    eps = float(_finfo(x).eps)
    x2 = x * x
    return x + x * (x2 * _taylor(x2, 3, eps)), 1.0 + x2 * _taylor(x2, 2, eps)


def _mul_cosh_sinh(p, q, y):
    """(p cosh y, q sinh y) for |p|, |q| <= 1: their Taylor series for |y| <= 1
    (_sinh_cosh), (E +- 1/E) / 2 with E = e^|y| beyond; past exp's
    overflow threshold, e^|y| / 2 as (e^(|y|/2) / 2) e^(|y|/2), finite wherever
    the products are."""
    ay = jnp.abs(y)
    big = ay > _log_max(y)
    small = ay <= 1.0
    e = jnp.exp(jnp.where(big | small, 0.0, ay))
    sh_s, ch_s = _sinh_cosh(jnp.where(small, y, 0.0))
    ch = jnp.where(small, ch_s, 0.5 * e + 0.5 / e)
    sh = jnp.where(small, sh_s, jnp.copysign(0.5 * e - 0.5 / e, y))
    h = jnp.exp(jnp.where(big, 0.5 * ay, 0.0))
    hs = jnp.copysign(h, y)
    cp = jnp.where(big, ((0.5 * p) * h) * h, p * ch)
    sq = jnp.where(big, ((0.5 * q) * hs) * h, q * sh)
    return cp, sq


def sin(a):
    """sin x cosh y + i cos x sinh y; Re = x when x = 0 (no 0 * inf). The zero
    keeps x's sign, odd as sin is (differs from JAX: sin(-0 + yi) has Re +0)."""
    x, y = a
    re, im = _mul_cosh_sinh(jnp.sin(x), jnp.cos(x), y)
    return jnp.where(x == 0, x, re), im


def cos(a):
    """cos x cosh y - i sin x sinh y; Im = 0 when x = 0 (no 0 * inf), with the
    sign -sin x sinh y has (differs from JAX, which gives +0; +0 for a NaN y)."""
    x, y = a
    re, im = _mul_cosh_sinh(jnp.cos(x), jnp.sin(x), y)
    im0 = jnp.where(jnp.isnan(y), 0.0, -(x * jnp.copysign(1.0, y)))
    return re, jnp.where(x == 0, im0, -im)


def _two_sum(a, b):
    """(s, e): s = a + b rounded and e its rounding error, s + e = a + b exactly."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(v):
    """(hi, lo) with hi + lo = v exactly and hi carrying at most half the
    significand's bits (Veltkamp), so hi * hi and 2 hi lo are exact; |v| <= 1."""
    t = v * float(2.0 ** ((int(_finfo(v).nmant) + 2) // 2) + 1.0)
    hi = t - (t - v)
    return hi, v - hi


# pi/2 in three parts, the first two of 33 bits (fdlibm's): k * each is exact
_PIO2 = (1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624879595063154e-21)


def _cos(y):
    """float64 cos y as a double float (hi, lo), within about 2^-60 relative
    (jnp.cos reaches 1.4 ulp): r + rl = y - k pi/2 (|r| <= pi/4, pi/2 in three
    parts, a two-sum), then the Taylor series of cos or sin at r by the quadrant
    k mod 4, the leading terms 1 - r^2/2 (r split so that r^2 is exact) or r
    summed exactly with the rest. Past |y| = 2^19, jnp.cos (lo = 0)."""
    eps = float(_finfo(y).eps)
    ok = jnp.abs(y) < float(2.0 ** 19)
    yr = jnp.where(ok, y, 0.0)
    k = jnp.round(yr * (2.0 / math.pi))
    a, c = yr - k * _PIO2[0], -(k * _PIO2[1])               # (both exact)
    r, rl = _two_sum(a, c)
    rl = rl - k * _PIO2[2]                                  # y - k pi/2 = r + rl
    z = r * r
    rh, rt = _split(r)
    hh = 0.5 * (rh * rh)                                    # r^2 / 2 = hh + hl
    hl = (rh * rt + 0.5 * (rt * rt)) + r * rl
    one = 1.0 - hh
    ct = (((1.0 - one) - hh) - hl) + (z * z) * _taylor(-z, 4, eps, 0.62)
    st = rl - r * (z * _taylor(-z, 3, eps, 0.62))
    q = k - 4.0 * jnp.floor(0.25 * k)                       # cos r, -sin r, -cos r, sin r
    even = (q == 0.0) | (q == 2.0)
    v0, v1 = jnp.where(even, one, r), jnp.where(even, ct, st)
    hi = v0 + v1
    lo = v1 - (hi - v0)
    neg = (q == 1.0) | (q == 2.0)
    hi, lo = jnp.where(neg, -hi, hi), jnp.where(neg, -lo, lo)
    return jnp.where(ok, hi, jnp.cos(y)), jnp.where(ok, lo, 0.0)


def tanh(a):
    """(sinh 2x + i sin 2y) / (cosh 2x + cos 2y). For |x| < 1 as
    (sinh x cosh x + i sin 2y / 2) / (cos^2 y + sinh^2 x), with cos y and x split
    so that their squares are exact and sinh^2 x = x^2 + d (2x + d), d = sinh x - x
    by its Taylor series: nothing cancels near the poles. float64 takes cos y as
    _cos's double float (jnp.cos's 1.4 ulp, doubled in cos^2 y, would cost 5 ulp)
    and rounds the sum once; float32 (jnp.cos within 0.5 ulp) sums it as a double
    float whose low part corrects both quotients. For |x| >= 1 from E = e^(2|x|)
    (cosh 2x >= 3.7 > |cos 2y|), the denominator E + (1/E + 2 cos 2y), the real
    part as 1 - 2 (1/E + cos 2y) / den, E's rounding mostly cancelling. Once
    tanh x rounds to +-1 the parts are +-1 and 2 sin 2y e^(-2|x|): no inf / inf.
    tanh(+-inf + yi) = +-1 + 0i for every y (as JAX); a real argument gives a
    real result whose zero keeps y's sign (differs from JAX: +0)."""
    x, y = a
    fi = _finfo(x)
    ax = jnp.abs(x)
    far = ax > float((int(fi.nmant) + 4) * math.log(2) / 2 + 1)
    near = ax < 1.0
    s2y, c2y = jnp.sin(2.0 * y), jnp.cos(2.0 * y)
    # |x| < 1: (sinh x cosh x + i sin y cos y) / (cos^2 y + sinh^2 x)
    xn = jnp.where(near, x, 0.0)
    x2, tx = xn * xn, 2.0 * xn
    eps = float(fi.eps)
    shch = xn + xn * ((tx * tx) * _taylor(tx * tx, 3, eps, 4.0))     # sinh 2x / 2
    d = xn * (x2 * _taylor(x2, 3, eps))                                # sinh x - x
    if int(fi.nmant) >= 52:
        cy, cl = _cos(jnp.where(near, y, 0.0))
        hi, lo = _split(cy)
        xh, xl = _split(xn)
        den = (hi * hi + xh * xh) + ((((2.0 * hi) * lo + lo * lo) + 2.0 * (cy * cl)) +
                                     (((2.0 * xh) * xl + xl * xl) + d * (2.0 * xn + d)))
        re_n, im_n = shch / den, (0.5 * s2y) / den
    else:
        cy = jnp.cos(y)
        hi, lo = _split(cy)
        xh, xl = _split(xn)
        s1, e1 = _two_sum(hi * hi, xh * xh)
        den, e2 = _two_sum(s1, ((2.0 * hi) * lo + (2.0 * xh) * xl) + d * (2.0 * xn + d))
        tail = e2 + (e1 + (lo * lo + xl * xl))
        rel = tail / den                               # den (1 + rel) = cos^2 y + sinh^2 x
        re_n, im_n = shch / den, (0.5 * s2y) / den     # (sin y cos y = sin 2y / 2)
        re_n = jnp.where(xn == 0, re_n, re_n - re_n * rel)  # (keeps x's zero sign)
        im_n = im_n - im_n * rel
    # 1 <= |x| <= far
    e = jnp.exp(jnp.where(near | far, 2.0, 2.0 * ax))
    ie = 1.0 / e
    den2 = e + (ie + 2.0 * c2y)
    re_m = jnp.copysign(1.0 - (2.0 * (ie + c2y)) / den2, x)         # (e - ie) / den2
    im_m = (2.0 * s2y) / den2
    # past far
    tail = (2.0 * s2y) * jnp.exp(-2.0 * ax)
    re = jnp.where(far, jnp.copysign(1.0, x), jnp.where(near, re_n, re_m))
    im = jnp.where(far, jnp.where(jnp.isfinite(y), tail, 0.0), jnp.where(near, im_n, im_m))
    return re, jnp.where(y == 0, y, im)


def tan(a):
    """tan z = -i tanh(i z)."""
    x, y = a
    re, im = tanh((-y, x))
    return im, -re


def logistic(a):
    """1 / (1 + e^-z) without overflow: with E = e^-|x| <= 1, c = cos y, s = sin y,
    it is ((1 + E c) + i E s) / D for x >= 0 and (E (c + E) + i E s) / D
    for x < 0, as for the real logistic, over D = |1 + e^(-|x| -+ iy)|^2 =
    1 + E (2c + E), rounded once at the end (no square of a rounded 1 + E c)."""
    x, y = a
    pos = x >= 0
    e = jnp.exp(-jnp.abs(x))
    s, c = jnp.sin(y), jnp.cos(y)
    d = 1.0 + e * (2.0 * c + e)
    re = jnp.where(pos, 1.0 + e * c, e * (c + e)) / d
    es = e * s
    im = jnp.where(pos, 0.0 - (-es), es) / d          # (0 - -es: NumPy's and JAX's zero signs)
    return re, jnp.where((y == 0) & ~jnp.isnan(x), 0.0, im)     # (+0 for real z, as NumPy and JAX)


COMPLEX_MATH = {
    "neg": neg, "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow_,
    "integer_pow": integer_pow, "sign": sign, "abs": abs_, "eq": eq, "ne": ne,
    "exp": exp, "log": log, "log1p": log1p, "expm1": expm1, "sqrt": sqrt,
    "rsqrt": rsqrt, "sin": sin, "cos": cos, "tan": tan, "tanh": tanh,
    "logistic": logistic,
}
