"""jx.scipy.special: JAX's jax.scipy.special, built from jx.numpy / jx.lax operations
so every function traces, differentiates, vmaps and compiles.

Each function promotes its inputs as JAX does (integers to the default float, a
Python scalar stays weak unless JAX makes the result strong) and computes in the
input's own float dtype (half precision in float32): no float64 intermediates in
32-bit mode. The algorithms are chosen to stay accurate in float32 arithmetic too:
log Gamma and Gamma by their Taylor series about 2 plus a short product below 8.5
and Stirling's series above; digamma by recurrence and its asymptotic series; the
Hurwitz zeta (and polygamma) by Euler-Maclaurin; erfc, ndtr and log_ndtr through
exp(x^2) erfc(x) (a Chebyshev fit, then a continued fraction) with exp(-x^2) taken
without rounding x^2; ndtri by Newton steps on log_ndtr in its tails; incomplete
gamma and beta by series and continued fractions (fixed-trip fori_loops, frozen
once converged); I0, I1 by Chebyshev fits. Where the composed derivative would be
wrong or unstable (branches that are inf or NaN where not taken), a custom_jvp
gives the analytic one.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as jnp
from ..custom import custom_jvp
from ..nn import log_softmax, softmax
from ..nn import logsumexp as _nn_logsumexp
from ..numpy import _util as u
from ..numpy.creation import _wrap_public
from ..prims import elementwise as ew
from .. import random as _rnd

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
_SQRT_2 = math.sqrt(2.0)
_SQRT_PI = math.sqrt(math.pi)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) over axis (jx.nn.logsumexp), with JAX's `where`: the
    entries where it is False are left out (-inf when all are)."""
    if where is not None:
        a = _float1(a)
        a = jnp.where(where, a, jnp.full_like(a, -np.inf))
        if b is not None:
            b = jnp.where(where, b, jnp.zeros_like(b))
    return _nn_logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)


# ---------------------------------------------------------------- helpers
def _floats(*args):
    """The arguments promoted to one float dtype and broadcast (weak kept)."""
    return u.promote(*args, to_float=True)


def _float1(x):
    return u.promote_dtypes(x, to_float=True)[0]


def _weak(x) -> bool:
    return u.dtype_weak(x)[1]


def _in32(fn, *xs):
    """fn on float32 copies of half-precision inputs, converted back (as XLA does):
    the polynomials and series below are sized for float32 and float64."""
    dt = xs[0].dtype
    if dt.itemsize >= 4:
        return fn(*xs)
    weak = _weak(xs[0])
    out = fn(*[u.convert(x, dtypes.float32, xs) for x in xs])
    return u.convert(out, dt, [out], weak)


def _strong(x):
    """x without its weak type: JAX's gamma, ndtri, multigammaln give strong results
    even for Python scalars."""
    if not _weak(x):
        return x
    return u.bind1(ew.convert_element_type, x, new_dtype=x.dtype, weak_type=False)


def _is64(x) -> bool:
    return x.dtype == dtypes.float64


def _poly(coeffs, w):
    """Horner's rule, coefficients highest degree first."""
    p = jnp.full_like(w, coeffs[0])
    for a in coeffs[1:]:
        p = jnp.add(jnp.multiply(p, w), a)
    return p


def _cheb(coeffs, t):
    """Clenshaw's recurrence for sum c_k T_k(t)."""
    b1 = jnp.zeros_like(t)
    b2 = jnp.zeros_like(t)
    t2 = jnp.multiply(t, 2.0)
    for c in coeffs[:0:-1]:
        b1, b2 = jnp.add(jnp.subtract(jnp.multiply(t2, b1), b2), c), b1
    return jnp.add(jnp.subtract(jnp.multiply(t, b1), b2), coeffs[0])


def _zeros(x):
    return jnp.zeros_like(x)


def _where(c, a, b):
    return jnp.where(c, a, b)


def _erf_prim(x):
    return u.bind1(ew.erf, x)


def _sinpi_cospi(x):
    """(sin(pi r), cos(pi r)) with r = x - round(x): exact argument reduction, so
    both are accurate for large x and vanish exactly at integers (cos up to sign,
    which the callers do not need)."""
    r = jnp.subtract(x, jnp.round(x))
    a = jnp.multiply(r, math.pi)
    return jnp.sin(a), jnp.cos(a)


# ---------------------------------------------------------------- log-gamma
# Stirling's series for log Gamma(z) - ((z - 1/2) log z - z + log(2 pi)/2):
# B_2k / (2k (2k - 1)), in powers of 1/z^2 after the leading 1/z, highest first.
_STIRLING = (-3617 / 122400, 1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260,
             -1 / 360, 1 / 12)


def _shift(x) -> int:
    """How far arguments are shifted up before the asymptotic series: the series
    to 1/z^15 is exact to float64 from 8 on and to float32 from 4 on."""
    return 8 if _is64(x) else 4


def _stirling_corr(z):
    w = jnp.reciprocal(z)
    return jnp.multiply(w, _poly(_STIRLING, jnp.multiply(w, w)))


def _lgamma_pos(z):
    """log Gamma(z) for z >= 8.5 (or +inf) by Stirling's series, written
    (z - 1/2)(log z - 1) + ... so the large terms do not cancel."""
    return jnp.add(jnp.multiply(jnp.subtract(z, 0.5), jnp.subtract(jnp.log(z), 1.0)),
                   jnp.add(_stirling_corr(z), _HALF_LOG_2PI - 0.5))


# log Gamma(2 + e) = (1 - gamma) e + sum_k (-1)^k (zeta(k) - 1)/k e^k, k >= 2: the
# coefficients for k = 2..29 (30-digit values rounded), enough for |e| <= 1/2.
_LG2_SERIES = (
    0.3224670334241132, -0.0673523010531981, 0.020580808427784546, -0.007385551028673986,
    0.0028905103307415234, -0.001192753911703261, 0.0005096695247430425,
    -0.00022315475845357939, 9.945751278180853e-05, -4.492623673813314e-05,
    2.050721277567069e-05, -9.439488275268397e-06, 4.374866789907488e-06,
    -2.039215753801366e-06, 9.55141213040742e-07, -4.492469198764566e-07,
    2.1207184805554665e-07, -1.0043224823968099e-07, 4.7698101693639804e-08,
    -2.2711094608943164e-08, 1.0838659214896955e-08, -5.183475041970047e-09,
    2.4836745438024785e-09, -1.1921401405860912e-09, 5.731367241678862e-10,
    -2.7595228851242334e-10, 1.330476437424449e-10, -6.4229645638381e-11)
_ONE_MINUS_EULER = 0.42278433509846713


def _lgamma_near2(e):
    """log Gamma(2 + e) for |e| <= 1/2 by its Taylor series: no cancellation next to
    the zeros of log Gamma at 1 and 2, where the shifted Stirling form loses digits."""
    coeffs = _LG2_SERIES if _is64(e) else _LG2_SERIES[:14]
    return jnp.multiply(e, jnp.add(jnp.multiply(e, _poly(coeffs[::-1], e)), _ONE_MINUS_EULER))


def _reduce_to_2(x):
    """For 0 <= x < 8.5: (e, up, k) with x = k + e, |e| <= 1/2, k an integer 0..8,
    and Gamma(x) = Gamma(2 + e) * up / (x (x + 1) if k == 0, x if k == 1):
    up = (x - 1) ... (x - (k - 2)), a product of positive factors; every
    subtraction is exact."""
    k = jnp.floor(jnp.add(x, 0.5))
    e = jnp.subtract(x, k)
    up = jnp.ones_like(x)
    for j in range(1, 7):
        up = jnp.multiply(up, _where(jnp.greater_equal(k, float(j + 2)),
                                     jnp.subtract(x, float(j)), jnp.ones_like(x)))
    return e, up, k


def _lgamma_small(x):
    """log Gamma(x) on [0, 8.5) from the series about 2 (no cancellation next to the
    zeros at 1 and 2, nor in the shifted Stirling form's log of a product)."""
    e, up, k = _reduce_to_2(x)
    core = jnp.add(_lgamma_near2(e), jnp.log(up))
    l1p = jnp.log1p(e)
    down = _where(jnp.equal(k, 1.0), l1p,
                  _where(jnp.equal(k, 0.0), jnp.add(jnp.log(e), l1p), _zeros(x)))
    return jnp.subtract(core, down)


def _gammaln_impl(x):
    neg = jnp.less(x, 0.0)
    xp = _where(neg, jnp.subtract(1.0, x), x)
    small = jnp.less(xp, 8.5)
    lg = _where(small, _lgamma_small(_where(small, xp, jnp.ones_like(xp))),
                _lgamma_pos(jnp.maximum(xp, 8.5)))
    s, _ = _sinpi_cospi(x)
    refl = jnp.subtract(jnp.subtract(_LOG_PI, jnp.log(jnp.abs(s))), lg)
    out = _where(neg, refl, lg)
    return _where(jnp.isinf(x), jnp.abs(x), out)


@custom_jvp
def _gammaln(x):
    return _in32(_gammaln_impl, x)


@_gammaln.defjvp
def _gammaln_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _gammaln(x), jnp.multiply(t, _digamma(x))


def gammaln(x):
    """log|Gamma(x)|; +inf at 0, the negative integers and +-inf. Derivative digamma."""
    return _gammaln(_float1(x))


# ---------------------------------------------------------------- digamma
# psi(z) ~ log z - 1/(2z) - sum B_2k / (2k z^2k), coefficients of 1/z^2 powers.
_PSI = (-3617 / 8160, 1 / 12, -691 / 32760, 1 / 132, -1 / 240, 1 / 252, -1 / 120, 1 / 12)


def _digamma_pos(x):
    n = _shift(x) + (2 if _is64(x) else 0)
    small = jnp.less(x, float(n))
    xs = _where(small, x, 1.0)
    acc = jnp.reciprocal(xs)
    for k in range(1, n):
        acc = jnp.add(acc, jnp.reciprocal(jnp.add(xs, float(k))))
    z = _where(small, jnp.add(x, float(n)), x)
    w = jnp.reciprocal(z)
    w2 = jnp.multiply(w, w)
    asym = jnp.subtract(jnp.subtract(jnp.log(z), jnp.multiply(w, 0.5)),
                        jnp.multiply(w2, _poly(_PSI, w2)))
    return jnp.subtract(asym, _where(small, acc, _zeros(x)))


def _digamma_impl(x):
    neg = jnp.less_equal(x, 0.0)
    ps = _digamma_pos(_where(neg, jnp.subtract(1.0, x), x))
    s, c = _sinpi_cospi(x)
    refl = jnp.subtract(ps, jnp.divide(jnp.multiply(c, math.pi), s))
    out = _where(neg, refl, ps)
    # the poles, the non-positive integers: NaN, as JAX (SciPy: -inf at 0)
    pole = jnp.logical_and(neg, jnp.equal(x, jnp.round(x)))
    out = _where(pole, jnp.full_like(x, np.nan), out)
    out = _where(jnp.equal(x, np.inf), x, out)
    return out


@custom_jvp
def _digamma(x):
    return _in32(_digamma_impl, x)


@_digamma.defjvp
def _digamma_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _digamma(x), jnp.multiply(t, _polygamma_float(1.0, x))


def digamma(x):
    """psi(x) = d/dx log Gamma(x); NaN at the non-positive integers."""
    return _digamma(_float1(x))


# ---------------------------------------------------------------- Hurwitz zeta
# B_2j / (2j)! for j = 1..12, the Euler-Maclaurin tail's coefficients.
_BERN = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
         43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730)
_EM = tuple(b / math.factorial(2 * j + 2) for j, b in enumerate(_BERN))


def _zeta_impl(s, q):
    """Hurwitz zeta sum_k (q + k)^-s by Euler-Maclaurin: N terms summed, then the
    integral, half the next term and the Bernoulli tail."""
    n = 12 if _is64(q) else 8
    m = 12 if _is64(q) else 6
    qs = q
    total = _zeros(q)
    for k in range(n):
        total = jnp.add(total, jnp.power(jnp.add(qs, float(k)), jnp.negative(s)))
    a = jnp.add(qs, float(n))
    a_s = jnp.power(a, jnp.negative(s))
    total = jnp.add(total, jnp.divide(jnp.multiply(a, a_s), jnp.subtract(s, 1.0)))
    total = jnp.add(total, jnp.multiply(a_s, 0.5))
    inv_a = jnp.reciprocal(a)
    inv_a2 = jnp.multiply(inv_a, inv_a)
    # term_j = B_2j/(2j)! * s (s+1) ... (s+2j-2) * a^(-s-2j+1)
    fac = jnp.multiply(s, jnp.multiply(a_s, inv_a))
    tail = jnp.multiply(fac, _EM[0])
    for j in range(1, m):
        fac = jnp.multiply(fac, jnp.multiply(jnp.multiply(jnp.add(s, float(2 * j - 1)),
                                                          jnp.add(s, float(2 * j))), inv_a2))
        tail = jnp.add(tail, jnp.multiply(fac, _EM[j]))
    out = jnp.add(total, tail)
    out = _where(jnp.equal(s, 1.0), jnp.full_like(out, np.inf), out)
    out = _where(jnp.less(s, 1.0), jnp.full_like(out, np.nan), out)
    # poles at the non-positive integers q; other negative q are summed as they
    # are (finite for integer s, NaN otherwise: a negative base's power), as JAX
    qpole = jnp.logical_and(jnp.less_equal(q, 0.0), jnp.equal(q, jnp.round(q)))
    return _where(qpole, jnp.full_like(out, np.inf), out)


def _zeta(s, q):
    # the Euler-Maclaurin form is analytic in s and q: its derivatives, by
    # composition, are accurate in both (JAX differentiates in both too)
    return _in32(_zeta_impl, s, q)


def zeta(x, q=None):
    """Hurwitz zeta function sum_k (q + k)^-x (x > 1, q > 0); q=None is required
    to be given, as in JAX (the Riemann zeta is zeta(x, 1.0))."""
    if q is None:
        raise NotImplementedError("jx.scipy.special.zeta: the Riemann zeta (q=None) is not "
                                  "implemented, as in JAX; pass q=1.0")
    s, q = _floats(x, q)
    return _zeta(s, q)


# ---------------------------------------------------------------- polygamma
def _polygamma_float(n, x):
    """psi^(n)(x) for float n >= 1 (array or scalar): (-1)^(n+1) n! zeta(n+1, x)."""
    n = jnp.add(_zeros(x), n)
    sign = jnp.subtract(1.0, jnp.multiply(jnp.remainder(jnp.add(n, 1.0), 2.0), 2.0))
    fact = _gamma(jnp.add(n, 1.0))               # n! exactly for small n
    return jnp.multiply(jnp.multiply(sign, fact), _zeta(jnp.add(n, 1.0), x))


def polygamma(n, x):
    """psi^(n)(x), the n-th derivative of digamma; n a non-negative integer (as an
    array or scalar). NaN for negative n."""
    n_dt = u.dtype_weak(u.as_value(n))[0]
    if not dtypes.is_int(n_dt):
        raise ValueError(f"jx.scipy.special.polygamma: n must be of integer type, got "
                         f"dtype {n_dt} (as in JAX); pass an int or an int array")
    nf, x = _floats(n, x)
    ok = jnp.logical_and(jnp.equal(nf, jnp.round(nf)), jnp.greater_equal(nf, 0.0))
    n1 = _where(jnp.greater_equal(nf, 1.0), nf, jnp.ones_like(nf))
    out = _where(jnp.equal(nf, 0.0), _digamma(x), _polygamma_float(n1, x))
    # at the poles (x = 0, -1, ...) psi^(n) ~ (-1)^(n+1) n! / (x - pole)^(n+1): +inf
    # from both sides for odd n, a sign change (NaN, as JAX) for even n
    pole = jnp.logical_and(jnp.less_equal(x, 0.0), jnp.equal(x, jnp.floor(x)))
    odd = jnp.equal(jnp.remainder(nf, 2.0), 1.0)
    out = _where(pole, _where(odd, jnp.full_like(out, np.inf), jnp.full_like(out, np.nan)),
                 out)
    return _where(ok, out, jnp.full_like(out, np.nan))


# ---------------------------------------------------------------- gamma, beta
def _gamma_pos(x):
    """Gamma(x) for x >= 0: exp of the small series times a short product below 8.5;
    above, sqrt(2 pi) g (g e^-x) e^corr with g = x^((x - 1/2)/2) from one pow, so no
    large logarithm is rounded and nothing overflows before Gamma does."""
    xs = _where(jnp.less(x, 8.5), x, jnp.ones_like(x))
    e, up, k = _reduce_to_2(xs)
    down = _where(jnp.equal(k, 1.0), xs,
                  _where(jnp.equal(k, 0.0), jnp.multiply(xs, jnp.add(xs, 1.0)),
                         jnp.ones_like(x)))
    small = jnp.divide(jnp.multiply(jnp.exp(_lgamma_near2(e)), up), down)
    z = jnp.maximum(x, 8.5)
    g = jnp.power(z, jnp.multiply(jnp.subtract(z, 0.5), 0.5))
    big = jnp.multiply(jnp.multiply(g, jnp.multiply(g, jnp.exp(jnp.negative(z)))),
                       jnp.multiply(jnp.exp(_stirling_corr(z)), math.sqrt(2 * math.pi)))
    big = _where(jnp.isinf(z), z, big)
    return _where(jnp.less(x, 8.5), small, big)


def _gamma_impl(x):
    neg = jnp.less(x, 0.0)
    gp = _gamma_pos(_where(neg, jnp.subtract(1.0, x), x))
    # reflection: Gamma(x) = pi / (sin(pi x) Gamma(1 - x)), sin(pi x) = (-1)^n sin(pi r)
    s, _ = _sinpi_cospi(x)
    odd = jnp.equal(jnp.remainder(jnp.round(x), 2.0), 1.0)
    s = _where(odd, jnp.negative(s), s)
    refl = jnp.divide(math.pi, jnp.multiply(s, gp))
    out = _where(neg, refl, gp)
    pole = jnp.logical_and(neg, jnp.equal(x, jnp.floor(x)))     # and -inf
    return _where(pole, jnp.full_like(x, np.nan), out)


@custom_jvp
def _gamma(x):
    return _in32(_gamma_impl, x)


@_gamma.defjvp
def _gamma_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = _gamma(x)
    return out, jnp.multiply(t, jnp.multiply(out, _digamma(x)))


def gamma(x):
    """Gamma(x): +-inf at +-0, NaN at the negative integers and -inf (as JAX); a
    strong dtype even for a Python scalar, as JAX."""
    return _gamma(_strong(_float1(x)))


def gammasgn(x):
    """The sign of Gamma(x): +1 for x > 0 and +0, -1 for -0.0, (-1)^floor(x) for
    negative x; NaN at the negative integers and -inf (as JAX)."""
    x = _strong(_float1(x))
    fl = jnp.floor(x)
    odd = jnp.equal(jnp.remainder(fl, 2.0), 1.0)       # floor(x) odd and x < 0 -> -1
    neg_sign = _where(odd, jnp.full_like(x, -1.0), jnp.ones_like(x))
    out = _where(jnp.greater(x, 0.0), jnp.ones_like(x), neg_sign)
    zero = _where(jnp.signbit(x), jnp.full_like(x, -1.0), jnp.ones_like(x))
    out = _where(jnp.equal(x, 0.0), zero, out)          # Gamma(-0.0) = -inf
    out = _where(jnp.logical_and(jnp.less(x, 0.0), jnp.equal(x, fl)),
                 jnp.full_like(x, np.nan), out)
    return _where(jnp.isnan(x), x, out)


def _lgamma_diff(a, b):
    """log Gamma(a) - log Gamma(a + b) for a >= 8 (float32: 4), b > 0, by the
    Stirling forms of both, with the log terms combined so that they do not cancel."""
    ab = jnp.add(a, b)
    t1 = jnp.multiply(jnp.subtract(a, 0.5), jnp.log1p(jnp.divide(b, a)))
    t2 = jnp.multiply(b, jnp.subtract(jnp.log(ab), 1.0))
    corr = jnp.subtract(_stirling_corr(a), _stirling_corr(ab))
    return jnp.add(jnp.negative(jnp.add(t1, t2)), corr)


def _betaln_impl(a, b):
    big = jnp.maximum(a, b)
    small = jnp.minimum(a, b)
    n = 8.5 if _is64(a) else 4.0        # where Stirling's tail is below the dtype's ulp
    far = jnp.greater_equal(big, n)
    big_s = _where(far, big, jnp.full_like(big, n))
    small_s = _where(jnp.greater(small, 0.0), small, jnp.ones_like(small))
    asym = jnp.add(_gammaln(small), _lgamma_diff(big_s, small_s))
    plain = jnp.subtract(jnp.add(_gammaln(a), _gammaln(b)), _gammaln(jnp.add(a, b)))
    return _where(jnp.logical_and(far, jnp.greater(small, 0.0)), asym, plain)


def betaln(a, b):
    """log|B(a, b)| = log Gamma(a) + log Gamma(b) - log Gamma(a + b), without the
    cancellation of the three terms when one argument is large."""
    a, b = _floats(a, b)
    return _in32(_betaln_impl, a, b)


def beta(a, b):
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), through betaln (signed)."""
    a, b = (_strong(v) for v in _floats(a, b))
    sign = jnp.multiply(jnp.multiply(gammasgn(a), gammasgn(b)), gammasgn(jnp.add(a, b)))
    return jnp.multiply(sign, jnp.exp(betaln(a, b)))


def multigammaln(a, d):
    """log of the multivariate gamma function of dimension d (a Python int)."""
    d = int(d)
    a = _strong(_float1(a))
    const = d * (d - 1) / 4 * _LOG_PI
    terms = [gammaln(jnp.subtract(a, j / 2)) for j in range(d)]
    total = terms[0]
    for t in terms[1:]:
        total = jnp.add(total, t)
    return jnp.add(total, const)


def factorial(n, exact=False):
    """n! = Gamma(n + 1) as a float; 0 for negative n, as JAX."""
    if exact:
        raise ValueError("jx.scipy.special.factorial: exact=True is not supported (as in "
                         "JAX); use exact=False, a float result")
    n = _float1(n)
    return _where(jnp.less(n, 0.0), _zeros(n), _gamma(jnp.add(n, 1.0)))


def loggamma(x):
    """The principal branch of log Gamma for real x: gammaln(x) for x > 0, NaN for
    x <= 0 (where Gamma is negative or has a pole), as JAX's real loggamma."""
    x = _float1(x)
    return _where(jnp.greater(x, 0.0), gammaln(x), jnp.full_like(x, np.nan))


def poch(z, m):
    """The rising factorial Gamma(z + m) / Gamma(z), by gammaln differences (signed);
    1 for m == 0, NaN where z is a pole, as JAX; a strong dtype."""
    z, m = (_strong(v) for v in _floats(z, m))
    zm = jnp.add(z, m)
    sign = jnp.multiply(gammasgn(z), gammasgn(zm))
    out = jnp.multiply(sign, jnp.exp(jnp.subtract(gammaln(zm), gammaln(z))))
    return _where(jnp.equal(m, 0.0), jnp.ones_like(out), out)


def boxcox(x, lmbda):
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda == 0, written
    expm1(lmbda log x) / lmbda so small lmbda keeps its digits."""
    x, lam = _floats(x, lmbda)
    lx = jnp.log(x)
    lam_s = _where(jnp.equal(lam, 0.0), jnp.ones_like(lam), lam)
    return _where(jnp.equal(lam, 0.0), lx, jnp.divide(jnp.expm1(jnp.multiply(lam_s, lx)), lam_s))


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x: expm1(lmbda log1p(x)) / lmbda, log1p(x) at 0."""
    x, lam = _floats(x, lmbda)
    lx = jnp.log1p(x)
    lam_s = _where(jnp.equal(lam, 0.0), jnp.ones_like(lam), lam)
    return _where(jnp.equal(lam, 0.0), lx, jnp.divide(jnp.expm1(jnp.multiply(lam_s, lx)), lam_s))


# Li2(z) = sum_n B_n u^(n+1) / (n+1)! in u = -log(1 - z) (|u| <= log 2 here): the
# odd-power coefficients B_2k / (2k+1)!, k = 1..10, highest first.
_LI2_U = tuple(b / math.factorial(2 * k + 1) for k, b in reversed(list(enumerate(
    (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
     43867 / 798, -174611 / 330), start=1))))
_PI2_6 = math.pi ** 2 / 6


def _li2_u(u):
    """Li2(z) from u = -log(1 - z), |u| <= log 2."""
    u2 = jnp.multiply(u, u)
    coeffs = _LI2_U if _is64(u) else _LI2_U[-5:]
    odd = jnp.multiply(jnp.multiply(u, u2), _poly(coeffs, u2))
    return jnp.add(jnp.subtract(u, jnp.multiply(u2, 0.25)), odd)


def _spence_impl(x):
    """spence(x) = Li2(1 - x), from one of three forms whose u stays in [-log 2, log 2]."""
    mid = jnp.logical_and(jnp.greater_equal(x, 0.5), jnp.less_equal(x, 2.0))
    low = jnp.less(x, 0.5)
    safe = _where(jnp.greater(x, 0.0), x, jnp.full_like(x, 0.25))
    # [1/2, 2]: Li2(1 - x) with u = -log x
    a = _li2_u(jnp.negative(jnp.log(_where(mid, safe, jnp.ones_like(x)))))
    # [0, 1/2): pi^2/6 - log(x) log(1 - x) - Li2(x), u = -log1p(-x)
    xl = _where(low, safe, jnp.full_like(x, 0.25))
    b = jnp.subtract(jnp.subtract(_PI2_6, jnp.multiply(jnp.log(xl), jnp.log1p(jnp.negative(xl)))),
                     _li2_u(jnp.negative(jnp.log1p(jnp.negative(xl)))))
    # (2, inf): -pi^2/6 - log(x - 1)^2 / 2 - Li2(1/(1 - x)), u = -log1p(1/(x - 1))
    xh = _where(jnp.logical_or(mid, low), jnp.full_like(x, 4.0), safe)
    xm1 = jnp.subtract(xh, 1.0)
    lg = jnp.log(xm1)
    c = jnp.subtract(jnp.subtract(-_PI2_6, jnp.multiply(jnp.multiply(lg, lg), 0.5)),
                     _li2_u(jnp.negative(jnp.log1p(jnp.reciprocal(xm1)))))
    out = _where(mid, a, _where(low, b, c))
    out = _where(jnp.equal(x, 0.0), jnp.full_like(x, _PI2_6), out)
    bad = jnp.logical_or(jnp.less(x, 0.0), jnp.logical_or(jnp.isnan(x), jnp.isinf(x)))
    return _where(bad, jnp.full_like(x, np.nan), out)


@custom_jvp
def _spence(x):
    return _in32(_spence_impl, x)


@_spence.defjvp
def _spence_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    one = jnp.equal(x, 1.0)
    d = jnp.divide(jnp.log(x), jnp.subtract(1.0, _where(one, jnp.zeros_like(x), x)))
    return _spence(x), jnp.multiply(t, _where(one, jnp.full_like(x, -1.0), d))


def spence(x):
    """Spence's function int_1^x log(t) / (t - 1) dt = Li2(1 - x) (SciPy's convention),
    for x >= 0; NaN below 0 and at inf (as JAX). A strong dtype."""
    return _spence(_strong(_float1(x)))


def comb(N, k, *, repetition=False):
    """The binomial coefficient N choose k as a float (Gamma form, so non-integer N
    and k work); with repetition, (N + k - 1) choose k. 0 where k < 0, k > N or N < 0."""
    n, k = _floats(N, k)
    if repetition:
        n = jnp.subtract(jnp.add(n, k), 1.0)
    n_k = jnp.subtract(n, k)
    ok = jnp.logical_and(jnp.logical_and(jnp.greater_equal(k, 0.0), jnp.greater_equal(n_k, 0.0)),
                         jnp.greater_equal(n, 0.0))
    ns = _where(ok, n, jnp.ones_like(n))
    ks = _where(ok, k, jnp.ones_like(k))
    nks = _where(ok, n_k, _zeros(n_k))
    lg = jnp.subtract(_gammaln(jnp.add(ns, 1.0)),
                      jnp.add(_gammaln(jnp.add(ks, 1.0)), _gammaln(jnp.add(nks, 1.0))))
    return _where(ok, jnp.exp(lg), _zeros(lg))


def bernoulli(n):
    """The Bernoulli numbers B_0 .. B_n (B_1 = -1/2), n a Python int, as an array of
    the default float dtype (computed exactly, then rounded)."""
    import fractions
    n = int(n)
    if n < 0:
        raise ValueError(f"jx.scipy.special.bernoulli: n must be >= 0, got {n}")
    b = [fractions.Fraction(1)]
    for m in range(1, n + 1):          # sum_{j<=m} C(m+1, j) B_j = 0
        b.append(-sum(math.comb(m + 1, j) * b[j] for j in range(m)) / (m + 1))
    return jnp.asarray(np.array([float(v) for v in b]), dtype=dtypes.default_float())


_EULER = 0.5772156649015329


def _e1_impl(x):
    """E1(x) for x > 0: its power series up to 1, the continued fraction
    e^-x / (x + 1 - 1/(x + 3 - 4/(x + 5 - ...))) beyond (modified Lentz)."""
    small = jnp.less_equal(x, 1.0)
    xs = _where(small, x, jnp.ones_like(x))
    # -gamma - log x - sum_{k>=1} (-x)^k / (k k!)
    term = jnp.negative(xs)
    total = term
    for k in range(2, 26 if _is64(x) else 14):
        term = jnp.multiply(term, jnp.divide(jnp.negative(xs), float(k)))
        total = jnp.add(total, jnp.divide(term, float(k)))
    series = jnp.subtract(jnp.negative(jnp.add(_EULER, jnp.log(xs))), total)
    xl = _where(small, jnp.full_like(x, 2.0), x)
    tiny, eps = _tiny(x), float(np.finfo(x.dtype).eps)
    b0 = jnp.add(xl, 1.0)
    d0 = jnp.reciprocal(b0)

    def cf(i, c):
        bb, cc, dd, h, done = c
        k = jnp.add(i, 1.0)
        an = jnp.negative(jnp.multiply(k, k))
        bb = jnp.add(bb, 2.0)
        dd = jnp.add(jnp.multiply(an, dd), bb)
        dd = jnp.reciprocal(_where(jnp.less(jnp.abs(dd), tiny), jnp.full_like(dd, tiny), dd))
        cc = jnp.add(bb, jnp.divide(an, cc))
        cc = _where(jnp.less(jnp.abs(cc), tiny), jnp.full_like(cc, tiny), cc)
        h, done = _lentz_step(h, jnp.multiply(dd, cc), done, eps)
        return bb, cc, dd, h, done
    init = (b0, jnp.full_like(x, 1 / tiny), d0, d0, jnp.zeros(x.shape, bool))
    h = _loop(80 if _is64(x) else 40, cf, init)[3]
    return _where(small, series, jnp.multiply(jnp.exp(jnp.negative(xl)), h))


def _ei_pos(x):
    """Ei(x) for x > 0: gamma + log x + sum x^k / (k k!) up to a threshold, the
    asymptotic e^x / x * sum k! / x^k beyond (its terms are smallest near k = x)."""
    k64 = _is64(x)
    cut = 40.0 if k64 else 20.0
    small = jnp.less_equal(x, cut)
    xs = _where(small, x, jnp.ones_like(x))

    def body(i, c):
        term, total = c
        k = jnp.add(i, 1.0)
        term = jnp.multiply(term, jnp.divide(xs, k))
        return term, jnp.add(total, jnp.divide(term, k))
    _, total = _loop(130 if k64 else 75, body, (jnp.ones_like(x), _zeros(x)))
    series = jnp.add(jnp.add(_EULER, jnp.log(xs)), total)
    xl = _where(small, jnp.full_like(x, cut + 1.0), x)
    inv = jnp.reciprocal(xl)
    term = jnp.ones_like(x)
    acc = jnp.ones_like(x)
    for k in range(1, int(cut)):
        term = jnp.multiply(term, jnp.multiply(inv, float(k)))
        acc = jnp.add(acc, term)
    # e^x / x in two halves, so it overflows only when Ei does
    half = jnp.exp(jnp.multiply(xl, 0.5))
    asym = jnp.multiply(jnp.multiply(half, jnp.multiply(half, inv)), acc)
    return _where(small, series, asym)


@custom_jvp
def _exp1(x):
    def impl(x):
        pos = jnp.greater(x, 0.0)
        out = _e1_impl(_where(pos, jnp.minimum(x, 1e30), jnp.ones_like(x)))
        out = _where(pos, out, _where(jnp.equal(x, 0.0), jnp.full_like(x, np.inf),
                                      jnp.full_like(x, np.nan)))
        return _where(jnp.isinf(x), jnp.full_like(x, np.nan), out)    # JAX: NaN at inf
    return _in32(impl, x)


@_exp1.defjvp
def _exp1_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _exp1(x), jnp.multiply(t, jnp.negative(jnp.divide(jnp.exp(jnp.negative(x)), x)))


def exp1(x):
    """The exponential integral E1(x) = int_x^inf e^-t / t dt for x > 0; inf at 0,
    NaN for x < 0 and at inf (as JAX). A strong dtype."""
    return _exp1(_strong(_float1(x)))


@custom_jvp
def _expi(x):
    def impl(x):
        pos = jnp.greater(x, 0.0)
        neg = jnp.less(x, 0.0)
        ax = _where(jnp.logical_or(pos, neg), jnp.minimum(jnp.abs(x), 1e30), jnp.ones_like(x))
        out = _where(pos, _ei_pos(_where(pos, ax, jnp.ones_like(x))),
                     jnp.negative(_e1_impl(_where(neg, ax, jnp.ones_like(x)))))
        bad = jnp.logical_or(jnp.equal(x, 0.0), jnp.isinf(x))        # JAX: NaN there
        return _where(bad, jnp.full_like(x, np.nan), out)
    return _in32(impl, x)


@_expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _expi(x), jnp.multiply(t, jnp.divide(jnp.exp(x), x))


def expi(x):
    """The exponential integral Ei(x) (principal value); -E1(-x) for x < 0; NaN at 0
    and +-inf (as JAX). A strong dtype."""
    return _expi(_strong(_float1(x)))


# ---------------------------------------------------------------- incomplete gamma, beta
def _loop(n: int, body, init):
    from ..lax.control_flow import fori_loop  # a fixed trip count: differentiable by composition
    return fori_loop(0, n, body, init)


def _lentz_step(h, dc, done, eps):
    """h * dc until the factors reach 1 within eps; frozen after, so that the fixed
    number of iterations does not accumulate rounding once converged."""
    h = _where(done, h, jnp.multiply(h, dc))
    return h, jnp.logical_or(done, jnp.less(jnp.abs(jnp.subtract(dc, 1.0)), eps))


def _tiny(x):
    return float(np.finfo(x.dtype).tiny) * 16


def _log1pmx(t):
    """log(1 + t) - t without cancellation: with u = t/(2 + t), it is
    -t^2/(2 + t) + 2 (u^3/3 + u^5/5 + ...) for |t| <= 1/2 (|u| <= 1/3)."""
    near = jnp.less_equal(jnp.abs(t), 0.5)
    ts = _where(near, t, _zeros(t))
    u = jnp.divide(ts, jnp.add(ts, 2.0))
    u2 = jnp.multiply(u, u)
    terms = 17 if _is64(t) else 8
    odd = _poly([1.0 / (2 * k + 1) for k in range(terms, 0, -1)], u2)
    series = jnp.add(jnp.negative(jnp.divide(jnp.multiply(ts, ts), jnp.add(ts, 2.0))),
                     jnp.multiply(jnp.multiply(u, u2), jnp.multiply(odd, 2.0)))
    tf = _where(near, jnp.ones_like(t), t)
    return _where(near, series, jnp.subtract(jnp.log1p(tf), tf))


def _log_igamma_front(a, x):
    """log(x^a e^-x / Gamma(a)). For a >= 8.5, a log1pmx((x - a)/a) + log(a)/2 -
    log(2 pi)/2 - stirling(a): the terms of size a log a cancel analytically."""
    big = jnp.greater_equal(a, 8.5)
    ab = _where(big, a, jnp.full_like(a, 8.5))
    t = jnp.divide(jnp.subtract(x, ab), ab)
    asym = jnp.subtract(jnp.add(jnp.multiply(ab, _log1pmx(t)), jnp.multiply(jnp.log(ab), 0.5)),
                        jnp.add(_stirling_corr(ab), _HALF_LOG_2PI))
    plain = jnp.subtract(jnp.subtract(jnp.multiply(a, jnp.log(x)), x), _gammaln(a))
    return _where(big, asym, plain)


def _igamma_parts(a, x):
    """(P by the series, Q by the continued fraction, which to use) for a > 0, x > 0,
    each computed on inputs moved into its own domain so that neither branch's value
    or derivative is inf or NaN where the other is taken."""
    use_series = jnp.less(x, jnp.add(a, 1.0))
    n = 300 if _is64(x) else 120
    # series: P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))
    xs = _where(use_series, x, jnp.ones_like(x))
    as_ = _where(use_series, a, jnp.full_like(a, 2.0))

    def series(i, c):
        term, total = c
        term = jnp.multiply(term, jnp.divide(xs, jnp.add(as_, jnp.add(i, 1.0))))
        return term, jnp.add(total, term)
    ones = jnp.ones_like(x)
    _, total = _loop(n, series, (ones, ones))
    p = jnp.divide(jnp.multiply(jnp.exp(_log_igamma_front(as_, xs)), total), as_)
    # continued fraction (modified Lentz): Q = x^a e^-x / Gamma(a) /
    #   (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...)))
    xc = _where(use_series, jnp.add(a, 2.0), x)
    tiny = _tiny(x)
    b0 = jnp.subtract(jnp.add(xc, 1.0), a)
    d0 = jnp.reciprocal(b0)

    eps = float(np.finfo(x.dtype).eps)

    def cf(i, c):
        bb, cc, dd, h, done = c
        k = jnp.add(i, 1.0)
        an = jnp.multiply(jnp.negative(k), jnp.subtract(k, a))
        bb = jnp.add(bb, 2.0)
        dd = jnp.add(jnp.multiply(an, dd), bb)
        dd = _where(jnp.less(jnp.abs(dd), tiny), jnp.full_like(dd, tiny), dd)
        cc = jnp.add(bb, jnp.divide(an, cc))
        cc = _where(jnp.less(jnp.abs(cc), tiny), jnp.full_like(cc, tiny), cc)
        dd = jnp.reciprocal(dd)
        h, done = _lentz_step(h, jnp.multiply(dd, cc), done, eps)
        return bb, cc, dd, h, done
    init = (b0, jnp.full_like(x, 1 / tiny), d0, d0, jnp.zeros(x.shape, bool))
    _, _, _, h, _ = _loop(n, cf, init)
    q = jnp.multiply(jnp.exp(_log_igamma_front(a, xc)), h)
    return p, q, use_series


def _igamma(a, x, upper: bool):
    ok = jnp.logical_and(jnp.greater(a, 0.0), jnp.greater(x, 0.0))
    a_s = _where(ok, a, jnp.ones_like(a))
    x_s = _where(ok, jnp.minimum(x, float(np.finfo(x.dtype).max)), jnp.ones_like(x))
    p, q, use_series = _igamma_parts(a_s, x_s)
    lower = _where(use_series, p, jnp.subtract(1.0, q))
    upper_v = _where(use_series, jnp.subtract(1.0, p), q)
    out = upper_v if upper else lower
    # edges, as JAX: x = 0 gives P = 0; a = 0 (x > 0) gives P = 1; x = inf gives P = 1
    p_edge = _where(jnp.equal(x, 0.0), _zeros(x), jnp.ones_like(x))
    edge = jnp.subtract(1.0, p_edge) if upper else p_edge
    at_edge = jnp.logical_or(jnp.logical_or(jnp.equal(x, 0.0), jnp.equal(a, 0.0)),
                             jnp.equal(x, np.inf))
    out = _where(jnp.logical_and(at_edge, jnp.logical_not(ok)), edge, out)
    out = _where(jnp.equal(x, np.inf), edge, out)
    bad = jnp.logical_or(jnp.logical_or(jnp.less(a, 0.0), jnp.less(x, 0.0)),
                         jnp.logical_or(jnp.isnan(a), jnp.isnan(x)))
    bad = jnp.logical_or(bad, jnp.logical_and(jnp.equal(a, 0.0), jnp.equal(x, 0.0)))
    return _where(bad, jnp.full_like(out, np.nan), out)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (a > 0, x >= 0): a
    series below x = a + 1, a continued fraction above. Differentiable in both."""
    a, x = _floats(a, x)
    return _in32(lambda a, x: _igamma(a, x, False), a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x),
    computed directly where it is small (the continued fraction side)."""
    a, x = _floats(a, x)
    return _in32(lambda a, x: _igamma(a, x, True), a, x)


def _betacf(a, b, x, n):
    """The continued fraction of I_x(a, b) (modified Lentz), for x < (a+1)/(a+b+2)."""
    tiny = _tiny(x)
    qab, qap, qam = jnp.add(a, b), jnp.add(a, 1.0), jnp.subtract(a, 1.0)

    def fix(v):
        return _where(jnp.less(jnp.abs(v), tiny), jnp.full_like(v, tiny), v)
    d = jnp.reciprocal(fix(jnp.subtract(1.0, jnp.divide(jnp.multiply(qab, x), qap))))

    eps = float(np.finfo(x.dtype).eps)

    def body(i, c):
        cc, dd, h, done = c
        m = jnp.add(i, 1.0)
        m2 = jnp.multiply(m, 2.0)
        aa = jnp.divide(jnp.multiply(jnp.multiply(m, jnp.subtract(b, m)), x),
                        jnp.multiply(jnp.add(qam, m2), jnp.add(a, m2)))
        dd = jnp.reciprocal(fix(jnp.add(jnp.multiply(aa, dd), 1.0)))
        cc = fix(jnp.add(jnp.divide(aa, cc), 1.0))
        h, done = _lentz_step(h, jnp.multiply(dd, cc), done, eps)
        aa = jnp.negative(jnp.divide(jnp.multiply(jnp.multiply(jnp.add(a, m), jnp.add(qab, m)), x),
                                     jnp.multiply(jnp.add(a, m2), jnp.add(qap, m2))))
        dd = jnp.reciprocal(fix(jnp.add(jnp.multiply(aa, dd), 1.0)))
        cc = fix(jnp.add(jnp.divide(aa, cc), 1.0))
        h, done = _lentz_step(h, jnp.multiply(dd, cc), done, eps)
        return cc, dd, h, done
    _, _, h, _ = _loop(n, body, (jnp.ones_like(x), d, d, jnp.zeros(x.shape, bool)))
    return h


def _betainc_impl(a, b, x):
    ok = jnp.logical_and(jnp.logical_and(jnp.greater(a, 0.0), jnp.greater(b, 0.0)),
                         jnp.logical_and(jnp.greater(x, 0.0), jnp.less(x, 1.0)))
    a_s = _where(ok, a, jnp.ones_like(a))
    b_s = _where(ok, b, jnp.ones_like(b))
    x_s = _where(ok, x, jnp.full_like(x, 0.5))
    flip = jnp.greater(x_s, jnp.divide(jnp.add(a_s, 1.0), jnp.add(jnp.add(a_s, b_s), 2.0)))
    aa = _where(flip, b_s, a_s)
    bb = _where(flip, a_s, b_s)
    xx = _where(flip, jnp.subtract(1.0, x_s), x_s)
    yy = _where(flip, x_s, jnp.subtract(1.0, x_s))         # 1 - xx, exactly where it matters
    log_front = jnp.subtract(jnp.add(jnp.multiply(aa, jnp.log(xx)),
                                     jnp.multiply(bb, jnp.log(yy))), betaln(aa, bb))
    n = 300 if _is64(x) else 120
    part = jnp.divide(jnp.multiply(jnp.exp(log_front), _betacf(aa, bb, xx, n)), aa)
    out = _where(flip, jnp.subtract(1.0, part), part)
    # edges, as JAX: x = 0 -> 0, x = 1 -> 1 (a, b > 0); a = 0 -> 1, b = 0 -> 0 (0 < x)
    out = _where(jnp.equal(x, 0.0), _zeros(x), out)
    out = _where(jnp.equal(x, 1.0), jnp.ones_like(x), out)
    out = _where(jnp.logical_and(jnp.equal(a, 0.0), jnp.greater(x, 0.0)), jnp.ones_like(x), out)
    out = _where(jnp.logical_and(jnp.equal(b, 0.0), jnp.less(x, 1.0)), _zeros(x), out)
    bad = jnp.logical_or(jnp.logical_or(jnp.less(a, 0.0), jnp.less(b, 0.0)),
                         jnp.logical_or(jnp.less(x, 0.0), jnp.greater(x, 1.0)))
    bad = jnp.logical_or(bad, jnp.logical_and(jnp.equal(a, 0.0), jnp.equal(b, 0.0)))
    bad = jnp.logical_or(bad, jnp.logical_or(jnp.isnan(x), jnp.isnan(jnp.add(a, b))))
    return _where(bad, jnp.full_like(out, np.nan), out)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) by its continued fraction,
    on the side of the mean where it converges fast (1 - I_{1-x}(b, a) beyond)."""
    a, b, x = _floats(a, b, x)
    return _in32(_betainc_impl, a, b, x)


# ---------------------------------------------------------------- error functions
# exp(x^2) erfc(x) on [0.5, 2]: Chebyshev coefficients in t = (4x - 5) / 3 (from
# 40-digit values at 48 Chebyshev nodes); beyond 2 the continued fraction below.
_ERFCX_CHEB = (
    0.4006822530639845, -0.17395587897748596, 0.03383702540740585, -0.006032263577025819,
    0.001000274118215681, -0.0001558965252433288, 2.3014442396758424e-05,
    -3.2375421924541957e-06, 4.360702485858127e-07, -5.645684833789816e-08,
    7.048623263203286e-09, -8.509612327566787e-10, 9.957554366871612e-11,
    -1.1316613855047257e-11, 1.2513369992930791e-12, -1.3483678086194079e-13,
    1.4178345509581745e-14, -1.4566964654246537e-15, 1.4639564848603663e-16,
    -1.4406081509350508e-17, 1.3893934243911832e-18,)


def _erfcx_pos(x):
    """exp(x^2) erfc(x) for x >= 0.5 (values below are clamped)."""
    x = jnp.maximum(x, 0.5)
    k64 = _is64(x)
    coeffs = _ERFCX_CHEB if k64 else _ERFCX_CHEB[:12]
    t = jnp.divide(jnp.subtract(jnp.multiply(x, 4.0), 5.0), 3.0)
    near = _cheb(coeffs, jnp.minimum(t, 1.0))
    # erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
    xf = jnp.maximum(x, 2.0)
    tail = _zeros(x)
    for k in range(60 if k64 else 24, 0, -1):
        tail = jnp.divide(k / 2, jnp.add(xf, tail))
    far = jnp.divide(1.0 / _SQRT_PI, jnp.add(xf, tail))
    return _where(jnp.less(x, 2.0), near, far)


def _exp_neg_sq(x, half=False):
    """exp(-x^2) (or exp(-x^2/2)) without the error of rounding x^2: x = h + l with
    h a multiple of 1/16, so h^2 is exact and only the small part is rounded."""
    x = jnp.minimum(x, 1e15)      # beyond, the result is 0 anyway; inf - inf would be NaN
    h = jnp.divide(jnp.round(jnp.multiply(x, 16.0)), 16.0)
    l = jnp.subtract(x, h)
    hi = jnp.multiply(h, h)
    lo = jnp.multiply(l, jnp.add(x, h))
    if half:
        hi, lo = jnp.multiply(hi, 0.5), jnp.multiply(lo, 0.5)
    return jnp.multiply(jnp.exp(jnp.negative(hi)), jnp.exp(jnp.negative(lo)))


def _erfc_impl(x):
    ax = jnp.abs(x)
    tail = jnp.multiply(_exp_neg_sq(ax), _erfcx_pos(ax))     # erfc(|x|), |x| >= 0.5
    tail = _where(jnp.less(x, 0.0), jnp.subtract(2.0, tail), tail)
    out = _where(jnp.less(ax, 0.5), jnp.subtract(1.0, _erf_prim(x)), tail)
    return _where(jnp.isnan(x), x, out)


@custom_jvp
def _erfc(x):
    return _in32(_erfc_impl, x)


@_erfc.defjvp
def _erfc_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    d = jnp.multiply(_exp_neg_sq(x), -2.0 / _SQRT_PI)
    return _erfc(x), jnp.multiply(t, d)


def erf(x):
    """The error function."""
    return _erf_prim(_float1(x))


def erfc(x):
    """1 - erf(x), accurate in the right tail (down to the smallest floats)."""
    return _erfc(_float1(x))


def _erfinv_impl(x):
    """Giles' polynomials (those of jx.random.erfinv and XLA) in w = -log(1 - x^2),
    with 1 - x^2 taken as (1 - x)(1 + x): exact next to +-1, where x*x is not."""
    w = jnp.negative(jnp.log(jnp.multiply(jnp.subtract(1.0, x), jnp.add(x, 1.0))))
    if _is64(x):
        root = jnp.sqrt(w)
        p = _where(jnp.less(w, 6.25), _poly(_rnd._ERFINV64_W_LT_6_25, jnp.subtract(w, 3.125)),
                   _where(jnp.less(w, 16.0), _poly(_rnd._ERFINV64_W_LT_16,
                                                    jnp.subtract(root, 3.25)),
                          _poly(_rnd._ERFINV64_W_GE_16, jnp.subtract(root, 5.0))))
    else:
        small = jnp.less(w, 5.0)
        p = _where(small, _poly(_rnd._ERFINV32_W_LT_5, jnp.subtract(w, 2.5)),
                   _poly(_rnd._ERFINV32_W_GE_5, jnp.subtract(jnp.sqrt(w), 3.0)))
    y = jnp.multiply(p, x)
    return _where(jnp.equal(jnp.abs(x), 1.0), jnp.multiply(x, np.inf), y)


@custom_jvp
def _erfinv(x):
    return _in32(_erfinv_impl, x)


@_erfinv.defjvp
def _erfinv_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _erfinv(x)
    return y, jnp.multiply(t, jnp.multiply(jnp.exp(jnp.square(y)), _SQRT_PI / 2))


def erfinv(x):
    """Inverse of erf on (-1, 1); +-inf at +-1, NaN outside."""
    return _erfinv(_float1(x))


def _exp_pos_sq(x):
    """exp(x^2) with x = h + l split as in _exp_neg_sq."""
    x = jnp.minimum(x, 1e15)
    h = jnp.divide(jnp.round(jnp.multiply(x, 16.0)), 16.0)
    lo = jnp.multiply(jnp.subtract(x, h), jnp.add(x, h))
    return jnp.multiply(jnp.exp(jnp.multiply(h, h)), jnp.exp(lo))


def _erfcx_impl(x):
    ax = jnp.abs(x)
    pos = _erfcx_pos(ax)
    centre = jnp.multiply(_exp_pos_sq(x), jnp.subtract(1.0, _erf_prim(x)))
    neg = jnp.subtract(jnp.multiply(_exp_pos_sq(ax), 2.0), pos)
    out = _where(jnp.less(ax, 0.5), centre, _where(jnp.less(x, 0.0), neg, pos))
    return _where(jnp.isnan(x), x, out)


@custom_jvp
def _erfcx(x):
    return _in32(_erfcx_impl, x)


@_erfcx.defjvp
def _erfcx_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = _erfcx(x)
    d = jnp.subtract(jnp.multiply(jnp.multiply(x, out), 2.0), 2 / _SQRT_PI)
    return out, jnp.multiply(t, d)


def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x), accurate for large
    x (about 1/(x sqrt(pi))); it overflows to inf below about -26.6 (float64). A
    strong dtype even for a Python scalar, as JAX."""
    return _erfcx(_strong(_float1(x)))


# ---------------------------------------------------------------- modified Bessel I0, I1
# Chebyshev coefficients (from 40-digit values at 48 nodes): on [0, 8] of i0e(x) and
# i1e(x)/x in t = x/4 - 1; beyond 8 of sqrt(x) i0e(x) and sqrt(x) i1e(x) in t = 16/x - 1.
_I0E_SMALL = (
    0.33839763720473803, -0.3046826723431984, 0.17162090152220877, -0.09490109704804764,
    0.04930528423967071, -0.02373741480589947, 0.010546460394594998, -0.004324309995050576,
    0.0016394756169413357, -0.0005763755745385824, 0.00018850288509584165,
    -5.754195010082104e-05, 1.6448448070728896e-05, -4.4167383584587505e-06,
    1.1173875391201037e-06, -2.670793853940612e-07, 6.046995022541919e-08,
    -1.300025009986248e-08, 2.6598237246823866e-09, -5.189795601635263e-10,
    9.675809035373237e-11, -1.726826291441556e-11, 2.95505266312964e-12,
    -4.856446783111929e-13, 7.676185498604936e-14, -1.1685332877993451e-14,
    1.715391285555133e-15, -2.431279846547955e-16, 3.3307945188222384e-17,
    -4.4153416464793395e-18,)
_I1E_SMALL = (
    0.12629359322181682, -0.17641651835783406, 0.1026436586898471, -0.05294598120809499,
    0.024726449030626516, -0.010564084894626197, 0.004156422944312888,
    -0.0015135724506312532, 0.0005122859561685758, -0.00016176081582589674,
    4.781565107550054e-05, -1.3273163656039436e-05, 3.4702513081376785e-06,
    -8.568720264695455e-07, 2.0032947535521353e-07, -4.445059128796328e-08,
    9.381537386495773e-09, -1.8872497517228294e-09, 3.625590281552117e-10,
    -6.663489723502027e-11, 1.1736186298890901e-11, -1.9839743977649436e-12,
    3.223793365945575e-13, -5.042185504727912e-14, 7.600684294735408e-15,
    -1.1055969477353862e-15, 1.5536319577362005e-16, -2.111421214358166e-17,
    2.7779141127610464e-18, -3.541581772542136e-19,)
_I0E_LARGE = (
    0.4022452055070544, 0.0033691164782556943, 6.889758346916825e-05,
    2.8913705208347567e-06, 2.0489185894690638e-07, 2.266668990498178e-08,
    3.3962320257083865e-09, 4.94060238822497e-10, 1.1889147107846439e-11,
    -3.1499165279632416e-11, -1.3215811840447713e-11, -1.7941785315068062e-12,
    7.180124451383666e-13, 3.8527783827421426e-13, 1.54008621752141e-14,
    -4.150569347287222e-14, -9.554846698828307e-15, 3.8116806693526224e-15,
    1.7725601330565263e-15, -3.425485619677219e-16, -2.8276239805165836e-16,
    3.461222867697461e-17, 4.46562142029676e-17, -4.830504485944178e-18,
    -7.23318048787476e-18, 9.921475412173676e-19, 1.1936508908460063e-18,)
_I1E_LARGE = (
    0.38928811750914005, -0.009761097491361469, -0.00011058893876262371,
    -3.882564808877691e-06, -2.512236237870209e-07, -2.6314688468895196e-08,
    -3.835380385964237e-09, -5.589743462196584e-10, -1.8974958123505413e-11,
    3.2526035830154884e-11, 1.4125807436613782e-11, 2.0356285441470896e-12,
    -7.198551776245908e-13, -4.0835511110921974e-13, -2.1015418427726643e-14,
    4.272440016711951e-14, 1.0420276984128802e-14, -3.8144030724370075e-15,
    -1.8803547755107825e-15, 3.3082023109209285e-16, 2.96262899764595e-16,
    -3.209525921993424e-17, -4.650305368489358e-17, 4.414348323071704e-18,
    7.517296310842111e-18, -9.314178867326863e-19, -1.2421932751949152e-18,)


def _series(coeffs, x):
    """The coefficients a float32 evaluation needs (the rest are below its ulp)."""
    if _is64(x):
        return coeffs
    return tuple(c for c in coeffs if abs(c) > 1e-9 * abs(coeffs[0]))


def _bessel_e(x, small_c, large_c):
    """(value on [0, 8] of the small fit, value beyond 8 of the large fit / sqrt x)."""
    ax = jnp.abs(x)
    near = jnp.less_equal(ax, 8.0)
    xs = _where(near, ax, jnp.full_like(ax, 8.0))
    xl = _where(near, jnp.full_like(ax, 8.0), ax)
    small = _cheb(_series(small_c, x), jnp.subtract(jnp.multiply(xs, 0.25), 1.0))
    large = jnp.divide(_cheb(_series(large_c, x), jnp.subtract(jnp.divide(16.0, xl), 1.0)),
                       jnp.sqrt(xl))
    return near, small, large


def _i0e_impl(x):
    near, small, large = _bessel_e(x, _I0E_SMALL, _I0E_LARGE)
    return _where(near, small, large)


def _i1e_impl(x):
    near, small, large = _bessel_e(x, _I1E_SMALL, _I1E_LARGE)
    return _where(near, jnp.multiply(x, small), jnp.multiply(jnp.sign(x), large))


def _unscale(x, scaled):
    """exp(|x|) * scaled, in two halves so it overflows only when the product does."""
    ax = jnp.abs(x)
    half = jnp.exp(jnp.multiply(ax, 0.5))
    whole = jnp.multiply(jnp.exp(ax), scaled)          # one rounding fewer, where finite
    out = _where(jnp.less(ax, math.log(float(np.finfo(x.dtype).max))), whole,
                 jnp.multiply(half, jnp.multiply(half, scaled)))
    return _where(jnp.isinf(x), jnp.multiply(jnp.sign(scaled), np.inf), out)


def i0e(x):
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0."""
    return _in32(_i0e_impl, _float1(x))


def i0(x):
    """I0(x), the modified Bessel function of the first kind of order 0."""
    x = _float1(x)
    return _in32(lambda v: _unscale(v, _i0e_impl(v)), x)


def i1e(x):
    """exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1."""
    return _in32(_i1e_impl, _float1(x))


def i1(x):
    """I1(x), the modified Bessel function of the first kind of order 1."""
    x = _float1(x)
    return _in32(lambda v: _unscale(v, _i1e_impl(v)), x)


# ---------------------------------------------------------------- normal distribution
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _ndtr_impl(x):
    mid = jnp.less(jnp.abs(x), 1 / _SQRT_2)
    centre = jnp.add(jnp.multiply(_erf_prim(jnp.multiply(x, 1 / _SQRT_2)), 0.5), 0.5)
    y = jnp.abs(x)
    # Phi(-y) = exp(-y^2/2) erfcx(y/sqrt 2) / 2: y/sqrt 2's rounding is harmless in
    # the slowly varying erfcx, and exp(-y^2/2) is taken without rounding y^2
    low = jnp.multiply(jnp.multiply(_exp_neg_sq(y, half=True),
                                    _erfcx_pos(jnp.multiply(y, 1 / _SQRT_2))), 0.5)
    tail = _where(jnp.less(x, 0.0), low, jnp.subtract(1.0, low))
    out = _where(mid, centre, tail)
    return _where(jnp.isnan(x), x, out)


@custom_jvp
def _ndtr(x):
    return _in32(_ndtr_impl, x)


@_ndtr.defjvp
def _ndtr_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _ndtr(x), jnp.multiply(t, jnp.multiply(_exp_neg_sq(x, half=True), _INV_SQRT_2PI))


def ndtr(x):
    """The standard normal CDF, accurate in both tails."""
    return _ndtr(_strong(_float1(x)))


def _log_ndtr_left(y):
    """log Phi(-y) for y >= 1/sqrt 2 (smaller y clamped): log(1/2) - y^2/2 +
    log erfcx(y/sqrt 2), with no underflow in the far tail."""
    ys = jnp.maximum(y, 1 / _SQRT_2)
    return jnp.add(jnp.subtract(-math.log(2.0), jnp.multiply(jnp.square(ys), 0.5)),
                   jnp.log(_erfcx_pos(jnp.multiply(ys, 1 / _SQRT_2))))


def _log_ndtr_impl(x):
    y = jnp.negative(x)
    left = _log_ndtr_left(y)
    right = jnp.log1p(jnp.negative(_ndtr_impl(jnp.minimum(y, -1.0))))
    centre = jnp.log(_ndtr_impl(x))
    out = _where(jnp.greater_equal(y, 1 / _SQRT_2), left,
                 _where(jnp.greater(x, 1.0), right, centre))
    out = _where(jnp.equal(x, -np.inf), x, out)
    return _where(jnp.isnan(x), x, out)


@custom_jvp
def _log_ndtr(x):
    return _in32(_log_ndtr_impl, x)


@_log_ndtr.defjvp
def _log_ndtr_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = _log_ndtr(x)
    # phi(x) / Phi(x) as exp(log phi - log Phi): finite in the far left tail
    log_phi = jnp.subtract(jnp.multiply(jnp.square(x), -0.5), _HALF_LOG_2PI)
    return out, jnp.multiply(t, jnp.exp(jnp.subtract(log_phi, out)))


def log_ndtr(x, series_order=3):
    """log of the standard normal CDF, accurate in the far left tail (log_ndtr(-1e5)
    is about -5e9) and next to 0 on the right. series_order is accepted for JAX's
    signature; the tail here needs no truncated series."""
    if not isinstance(series_order, int) or series_order < 0 or series_order > 30:
        raise ValueError(f"jx.scipy.special.log_ndtr: series_order must be an int in "
                         f"[0, 30], got {series_order!r}")
    return _log_ndtr(_strong(_float1(x)))


def _ndtri_impl(p):
    q = jnp.minimum(p, jnp.subtract(1.0, p))             # exact for p >= 1/2
    central = jnp.greater(q, 0.2)
    # central: sqrt 2 erfinv(2p - 1), 2p - 1 exact on [1/4, 1] and the relative
    # error of 2p - 1 at most 2 ulp on [1/5, 1/4]
    c_arg = jnp.subtract(jnp.multiply(_where(central, p, jnp.full_like(p, 0.5)), 2.0), 1.0)
    c_val = jnp.multiply(_erfinv_impl(c_arg), _SQRT_2)
    # tails: Abramowitz & Stegun 26.2.23 as a start, then Newton on log_ndtr(x) = log q
    qs = jnp.clip(_where(central, jnp.full_like(q, 0.2), q), np.finfo(q.dtype).tiny, 0.2)
    lq = jnp.log(qs)
    t = jnp.sqrt(jnp.multiply(lq, -2.0))
    num = _poly((0.010328, 0.802853, 2.515517), t)
    den = _poly((0.001308, 0.189269, 1.432788, 1.0), t)
    x = jnp.negative(jnp.subtract(t, jnp.divide(num, den)))
    for _ in range(4 if _is64(p) else 3):
        lnd = _log_ndtr_left(jnp.negative(x))      # x < -0.84 stays below -1/sqrt 2
        log_phi = jnp.subtract(jnp.multiply(jnp.square(x), -0.5), _HALF_LOG_2PI)
        x = jnp.subtract(x, jnp.multiply(jnp.subtract(lnd, lq), jnp.exp(jnp.subtract(lnd, log_phi))))
    tail = _where(jnp.greater(p, 0.5), jnp.negative(x), x)
    out = _where(central, c_val, tail)
    out = _where(jnp.equal(p, 0.0), jnp.full_like(p, -np.inf), out)
    out = _where(jnp.equal(p, 1.0), jnp.full_like(p, np.inf), out)
    bad = jnp.logical_or(jnp.logical_or(jnp.less(p, 0.0), jnp.greater(p, 1.0)), jnp.isnan(p))
    return _where(bad, jnp.full_like(p, np.nan), out)


@custom_jvp
def _ndtri(p):
    return _in32(_ndtri_impl, p)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    (p,), (t,) = primals, tangents
    x = _ndtri(p)
    inv_phi = jnp.exp(jnp.add(jnp.multiply(jnp.square(x), 0.5), _HALF_LOG_2PI))
    return x, jnp.multiply(t, inv_phi)


def ndtri(p):
    """The inverse of ndtr: the standard normal quantile; -inf at 0, inf at 1, NaN
    outside [0, 1]. Accurate for the tiniest p (Newton steps on log_ndtr)."""
    return _ndtri(_strong(_float1(p)))


# ---------------------------------------------------------------- logistic, entropy
def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return u.bind1(ew.logistic, _float1(x))


def _logit_impl(x):
    near_half = jnp.logical_and(jnp.greater(x, 0.25), jnp.less(x, 0.75))
    one_minus = jnp.subtract(1.0, x)
    ratio = jnp.log(jnp.divide(x, one_minus))
    # x/(1-x) = 1 + (2x - 1)/(1 - x), with 2x - 1 exact on [1/4, 1]
    centre = jnp.log1p(jnp.divide(jnp.subtract(jnp.multiply(x, 2.0), 1.0), one_minus))
    return _where(near_half, centre, ratio)


@custom_jvp
def _logit(x):
    return _logit_impl(x)


@_logit.defjvp
def _logit_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _logit(x), jnp.divide(t, jnp.multiply(x, jnp.subtract(1.0, x)))


def logit(x):
    """log(x / (1 - x)), the inverse of expit."""
    return _logit(_float1(x))


@custom_jvp
def _xlogy(x, y):
    return _where(jnp.equal(x, 0.0), _zeros(x), jnp.multiply(x, jnp.log(y)))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlogy(x, y), jnp.add(jnp.multiply(tx, jnp.log(y)),
                                 jnp.divide(jnp.multiply(ty, x), y))


def xlogy(x, y):
    """x * log(y), 0 where x == 0 (even for y == 0). Derivative log(y), x / y (as JAX)."""
    x, y = _floats(x, y)
    return _xlogy(x, y)


@custom_jvp
def _xlog1py(x, y):
    return _where(jnp.equal(x, 0.0), _zeros(x), jnp.multiply(x, jnp.log1p(y)))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlog1py(x, y), jnp.add(jnp.multiply(tx, jnp.log1p(y)),
                                   jnp.divide(jnp.multiply(ty, x), jnp.add(y, 1.0)))


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (even for y == -1)."""
    x, y = _floats(x, y)
    return _xlog1py(x, y)


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf for x < 0. Derivative -(1 + log x) (inf at 0)."""
    return _entr(_float1(x))


@custom_jvp
def _entr(x):
    pos = jnp.greater(x, 0.0)
    xs = _where(pos, x, jnp.ones_like(x))
    val = jnp.negative(jnp.multiply(xs, jnp.log(xs)))
    out = _where(pos, val, _where(jnp.equal(x, 0.0), _zeros(x), jnp.full_like(x, -np.inf)))
    return _where(jnp.isnan(x), x, out)


@_entr.defjvp
def _entr_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _entr(x), jnp.multiply(t, jnp.negative(jnp.add(jnp.log(x), 1.0)))


def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 at p == 0, q >= 0; inf otherwise."""
    p, q = _floats(p, q)
    both = jnp.logical_and(jnp.greater(p, 0.0), jnp.greater(q, 0.0))
    ps = _where(both, p, jnp.ones_like(p))
    qs = _where(both, q, jnp.ones_like(q))
    val = jnp.multiply(ps, jnp.log(jnp.divide(ps, qs)))
    zero = jnp.logical_and(jnp.equal(p, 0.0), jnp.greater_equal(q, 0.0))
    return _where(both, val, _where(zero, _zeros(p), jnp.full_like(p, np.inf)))


def kl_div(p, q):
    """p log(p / q) - p + q for p, q > 0; q at p == 0, q >= 0; inf otherwise."""
    p, q = _floats(p, q)
    both = jnp.logical_and(jnp.greater(p, 0.0), jnp.greater(q, 0.0))
    ps = _where(both, p, jnp.ones_like(p))
    qs = _where(both, q, jnp.ones_like(q))
    val = jnp.add(jnp.subtract(jnp.multiply(ps, jnp.log(jnp.divide(ps, qs))), ps), qs)
    zero = jnp.logical_and(jnp.equal(p, 0.0), jnp.greater_equal(q, 0.0))
    return _where(both, val, _where(zero, q, jnp.full_like(p, np.inf)))


__all__ = ["logsumexp", "softmax", "log_softmax", "erf", "erfc", "erfinv", "expit", "logit",
           "xlogy", "xlog1py", "entr", "rel_entr", "kl_div", "gammaln", "gamma", "gammasgn",
           "digamma", "polygamma", "zeta", "betaln", "beta", "multigammaln", "factorial",
           "ndtr", "ndtri", "log_ndtr", "gammainc", "gammaincc", "betainc",
           "erfcx", "i0", "i0e", "i1", "i1e", "loggamma", "poch", "boxcox", "boxcox1p",
           "spence", "comb", "bernoulli", "exp1", "expi"]

_wrap_public(globals(), [n for n in __all__ if n not in ("softmax", "log_softmax")])
