"""Elementwise jx.numpy functions: NumPy names over elementwise primitives."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..prims import autodiff as ad
from ..prims import bitcast as bc
from ..prims import elementwise as ew
from ._util import as_value, bind1, broadcast_shapes, broadcast_to, constant, convert, \
    dtype_weak, promote, promote_dtypes, shape_of
from ..array import Array, wrap
from ..core import Tracer


def _binary(prim, to_float=False):
    def fn(x, y):
        a, b = promote(x, y, to_float=to_float)
        return bind1(prim, a, b)
    fn.__name__ = prim.name
    return fn


def _bool_as_logic(prim, logic):
    """add/multiply: on bools JAX and NumPy keep bool, as logical or/and."""
    def fn(x, y):
        a, b = promote(x, y)
        return bind1(logic if a.dtype == dtypes.bool_ else prim, a, b)
    fn.__name__ = prim.name
    return fn


def _bool_as_int(*args):
    """Arithmetic with no bool meaning (square, power, //, %) counts bools as
    the default int, as JAX does (jnp.square(True) is int32 1)."""
    if args[0].dtype != dtypes.bool_:
        return args
    tracers = [a for a in args if isinstance(a, Tracer)]
    return [convert(a, dtypes.default_int(), tracers) for a in args]


def _unchanged(a, x):
    """A result that is the (promoted) operand a of input x itself: a concrete one
    comes back as a jx.Array, as every other eager result, weak if x was."""
    return wrap(a, dtype_weak(x)[1]) if isinstance(a, np.ndarray) else a


def _parts(a):
    """The real and imaginary parts of a complex value."""
    return bind1(ew.real, a), bind1(ew.imag, a)


def _complex(re, im):
    return bind1(ew.complex_, re, im)


def _no_complex(name: str, *args, error=TypeError):
    """JAX's error for functions with no complex meaning (no order, no sign bit)."""
    if any(dtypes.is_complex(dtype_weak(a)[0]) for a in args):
        raise error(f"{name} does not support complex-valued inputs; take their real "
                    "parts (jx.numpy.real) or absolute values (jx.numpy.abs) first")


add = _bool_as_logic(ew.add, ew.or_)
multiply = _bool_as_logic(ew.mul, ew.and_)


def _unary(prim, to_float=False):
    def fn(x):
        (a,) = promote_dtypes(x, to_float=to_float)
        return bind1(prim, a)
    fn.__name__ = prim.name
    return fn


def _ordered(prim):
    """A comparison; complex numbers compare lexicographically (real parts, then
    imaginary parts), as JAX's."""
    def fn(x, y):
        a, b = promote(x, y)
        if not dtypes.is_complex(a.dtype):
            return bind1(prim, a, b)
        (ar, ai), (br, bi) = _parts(a), _parts(b)
        return bind1(ew.select, bind1(ew.eq, ar, br), bind1(prim, ai, bi), bind1(prim, ar, br))
    fn.__name__ = prim.name
    return fn


subtract = _binary(ew.sub)
arctan2 = _binary(ew.atan2, to_float=True)
equal = _binary(ew.eq)
not_equal = _binary(ew.ne)
less = _ordered(ew.lt)
less_equal = _ordered(ew.le)
greater = _ordered(ew.gt)
greater_equal = _ordered(ew.ge)


def _extremum(prim, pick):
    """max/min; complex numbers by their lexicographic order, a NaN part winning."""
    def fn(x, y):
        a, b = promote(x, y)
        if not dtypes.is_complex(a.dtype):
            return bind1(prim, a, b)
        return bind1(ew.select, logical_or(pick(a, b), isnan(a)), a, b)
    fn.__name__ = prim.name
    return fn


maximum = _extremum(ew.max_, greater_equal)
minimum = _extremum(ew.min_, less_equal)
bitwise_and = _binary(ew.and_)
bitwise_or = _binary(ew.or_)
bitwise_xor = _binary(ew.xor)

negative = _unary(ew.neg)
sign = _unary(ew.sign)
exp = _unary(ew.exp, True)
log = _unary(ew.log, True)
log1p = _unary(ew.log1p, True)
expm1 = _unary(ew.expm1, True)
sqrt = _unary(ew.sqrt, True)
tanh = _unary(ew.tanh, True)
sin = _unary(ew.sin, True)
cos = _unary(ew.cos, True)
tan = _unary(ew.tan, True)


def _integral_unchanged(prim):
    """floor/ceil of integers and bools is the value itself, dtype kept (NumPy 2, JAX)."""
    def fn(x):
        _no_complex(prim.name, x)
        (a,) = promote_dtypes(x)
        return bind1(prim, a) if dtypes.is_float(a.dtype) else _unchanged(a, x)
    fn.__name__ = prim.name
    return fn


floor = _integral_unchanged(ew.floor)
ceil = _integral_unchanged(ew.ceil)
invert = _unary(ew.not_)
bitwise_not = invert


def absolute(x):
    (a,) = promote_dtypes(x)
    return _unchanged(a, x) if a.dtype == dtypes.bool_ else bind1(ew.abs_, a)


abs = absolute


def positive(x):
    (a,) = promote_dtypes(x)
    return _unchanged(a, x)


def true_divide(x, y):
    a, b = promote(x, y, to_float=True)
    return bind1(ew.div, a, b)


divide = true_divide


def floor_divide(x, y):
    """As JAX: integers from the truncating division, stepped down where the signs
    differ and the remainder is not 0 (so x // 0 is -2 for x != 0, from XLA's
    x / 0 = -1 and x % 0 = x; -1 for 0 // 0; the maximum for unsigned types)."""
    _no_complex("floor_divide", x, y)
    a, b = _bool_as_int(*promote(x, y))
    if dtypes.is_float(a.dtype):     # round ends it: slope 0 (a symbolic zero), as JAX
        return _float_divmod(a, b)[0]
    q = bind1(ew.div, a, b)
    if a.dtype.kind == "u":
        return q
    r = bind1(ew.rem, a, b)
    fix = logical_and(not_equal(bind1(ew.sign, a), bind1(ew.sign, b)), not_equal(r, 0))
    return where(fix, subtract(q, 1), q)


def _float_divmod(a, b):
    """CPython's float divmod, as JAX computes it: the quotient from a - fmod(a, b)
    (floor(a / b) can be off by one: 1 // 0.1 is 9.0, not 10.0), rounded half away
    from zero to an integer. Infinite a gives NaN (JAX), b = 0 gives a / 0."""
    mod = bind1(ew.rem, a, b)
    div = bind1(ew.div, where(equal(b, 0), a, subtract(a, mod)), b)
    fix = logical_and(not_equal(mod, 0), not_equal(bind1(ew.sign, b), bind1(ew.sign, mod)))
    mod = where(fix, add(mod, b), mod)
    div = where(fix, subtract(div, 1), div)
    return bind1(ew.round_, div, rounding_method="away_from_zero"), mod


def divmod(x, y):
    return floor_divide(x, y), remainder(x, y)


def remainder(x, y):
    """The sign of the divisor, as JAX: x % 0 is 0 for integers (JAX divides by 1
    there); for floats the remainder of fmod, moved by b where the signs differ."""
    a, b = _bool_as_int(*promote(x, y))
    if not dtypes.is_float(b.dtype):
        b = where(equal(b, 0), 1, b)
    r = bind1(ew.rem, a, b)    # sign of the dividend; NumPy wants the divisor's
    fix = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(b, 0)))
    return where(fix, add(r, b), r)


mod = remainder


def fmod(x, y):
    """C's fmod; an integer x fmod 0 is 0 (JAX divides by 1 there, not by XLA's 0;
    bools divide as int32 without that guard, as JAX: True fmod False is 1)."""
    a, b = promote(x, y)
    guard = dtypes.is_int(a.dtype)
    a, b = _bool_as_int(a, b)
    if guard:
        b = where(equal(b, 0), 1, b)
    return bind1(ew.rem, a, b)


def _concrete_int(y):
    """y as a Python int if it is a concrete integer scalar (JAX's test for its
    integer_pow path: Python ints and bools, integer scalars and 0-d arrays)."""
    if isinstance(y, Tracer):
        return None
    if isinstance(y, int):
        return int(y)
    dt = dtype_weak(y)[0] if isinstance(y, (np.ndarray, np.generic)) or type(y) is Array \
        else None
    if dt is not None and dt.kind in "iu" and shape_of(y) == ():
        return int(np.asarray(y))
    return None


def power(x, y):
    n = _concrete_int(y)
    if n is not None:       # JAX's integer_pow: x's dtype and weak type
        (a,) = _bool_as_int(*promote_dtypes(x))
        if abs(n) <= 64 or not dtypes.is_inexact(a.dtype):
            return _integer_pow(a, n)
        a, b = promote(a, float(n))          # huge exponents: pow rounds once
        return bind1(ew.pow_, a, b)
    (dx, wx), (dy, wy) = dtype_weak(x), dtype_weak(y)
    a, b = _bool_as_int(*promote(x, y))
    if not dtypes.is_inexact(a.dtype):
        # JAX's integer pow multiplies into a strong accumulator: never weak
        return _strong(bind1(ew.pow_, a, b))
    if dtypes.is_float(dx) and dtypes.is_int(dy):
        # JAX's lax.pow(float, int) without promotion: weak only if both inputs are
        return bind1(ew.pow_, a, b) if wx and wy else _strong(bind1(ew.pow_, a, b))
    return bind1(ew.pow_, a, b)


def _strong(v):
    """v without its weak type (the dtype kept)."""
    if isinstance(v, Tracer):
        return v if not v.weak_type else \
            bind1(ew.convert_element_type, v, new_dtype=v.dtype, weak_type=False)
    return wrap(np.asarray(v), False)


def _integer_pow(x, n: int):
    """x**n for a static int n by repeated squaring: exact, cheap, and its
    derivative never takes log(x) (as JAX's integer_pow)."""
    (a,) = _bool_as_int(*promote_dtypes(x))
    if n < 0 and dtypes.is_inexact(a.dtype):
        return reciprocal(_integer_pow(a, -n))
    if n < 0:       # as JAX (integer_pow): an error, not a value
        raise TypeError(f"integers cannot be raised to negative powers, got "
                        f"{a.dtype} ** {n}; use a float base (x.astype(float) ** {n})")
    if n == 0:                  # ones_like(a), built here: creation sits above ufuncs
        return constant(np.ones, shape_of(a), dtype_weak(a)[0],
                        "ones")
    acc, base = None, a
    while n:
        if n & 1:
            acc = base if acc is None else bind1(ew.mul, acc, base)
        n >>= 1
        if n:
            base = bind1(ew.mul, base, base)
    return acc


def square(x):
    (a,) = _bool_as_int(*promote_dtypes(x))
    return bind1(ew.mul, a, a)


def reciprocal(x):
    return true_divide(1, x)


def rsqrt(x):
    (a,) = promote_dtypes(x, to_float=True)
    return bind1(ew.rsqrt, a)


def round(x, decimals=0):
    (a,) = promote_dtypes(x)
    if dtypes.is_complex(a.dtype):          # each part, as JAX
        return _complex(*(round(p, decimals) for p in _parts(a)))
    if not dtypes.is_float(a.dtype):
        if decimals >= 0 or a.dtype == dtypes.bool_:
            return _unchanged(a, x)
        return _round_int(a, 10 ** -decimals)
    if decimals == 0:
        return bind1(ew.round_, a, rounding_method="to_nearest_even")
    scale = 10.0 ** decimals
    return true_divide(bind1(ew.round_, multiply(a, scale),
                             rounding_method="to_nearest_even"), scale)


around = round


def rint(x):
    """Nearest integer, ties to even; unlike round, ints and bools become floats
    (float32, as JAX's rint)."""
    (a,) = promote_dtypes(x, to_float=True)
    if dtypes.is_complex(a.dtype):
        return _complex(*(rint(p) for p in _parts(a)))
    return bind1(ew.round_, a, rounding_method="to_nearest_even")


def _round_int(a, f: int):
    """Integers to a multiple of f, ties to the even multiple, exactly (no floats)."""
    q = floor_divide(a, f)
    r2 = multiply(subtract(a, multiply(q, f)), 2)          # 2 * remainder, in [0, 2f)
    odd = not_equal(remainder(q, 2), 0)
    up = logical_or(greater(r2, f), logical_and(equal(r2, f), odd))
    return multiply(where(up, add(q, 1), q), f)


def exp2(x):
    return exp(multiply(x, float(np.log(2.0))))


def _log_base(x, base: float):
    """log(x) / log(base), the divisor a strong constant of log(x)'s dtype (JAX's:
    never weak)."""
    out = log(x)
    return divide(out, convert(float(np.log(base)), out.dtype))


def log2(x):
    return _log_base(x, 2.0)


def log10(x):
    return _log_base(x, 10.0)


def _weak_as(out, a):
    """out weakly typed where the input a is (JAX's sinh and cosh are single
    operations, whose results keep the operand's weak type)."""
    if dtype_weak(a)[1] and not dtype_weak(out)[1]:
        return bind1(ew.convert_element_type, out, new_dtype=out.dtype, weak_type=True)
    return out


def _wide(fn, a):
    """fn(a) for a float16/bfloat16 `a` computed in float32 and rounded once: XLA's
    sinh and cosh are single operations, which its CPU backend evaluates in float32
    for 16-bit types; built from several jx operations, each would round."""
    if a.dtype.itemsize == 2:
        return convert(fn(convert(a, np.float32)), a.dtype)
    return fn(a)


def sinh(x):
    """As XLA: for |x| < 1, (m + m / (m + 1)) / 2 with m = expm1(x) (exact for tiny x,
    where e^x - e^-x cancels); beyond, e^(x - ln 2) - e^(-x - ln 2), finite wherever
    sinh is. The small branch sees 0 where it is not taken, so its infinities never
    reach a gradient. Complex: sinh(x) cos(y) + i cosh(x) sin(y)."""
    (a,) = promote_dtypes(x, to_float=True)
    if dtypes.is_complex(a.dtype):
        re, im = _parts(a)
        return _weak_as(_complex(multiply(sinh(re), cos(im)), multiply(cosh(re), sin(im))), a)

    def f(v):
        small = less(absolute(v), convert(1.0, v.dtype, [v]))
        m = expm1(where(small, v, convert(0.0, v.dtype, [v])))
        near = multiply(add(m, divide(m, add(m, convert(1.0, v.dtype, [v])))), 0.5)
        half = convert(-np.log(2.0), v.dtype, [v])
        far = subtract(exp(add(v, half)), exp(subtract(half, v)))
        return where(small, near, far)
    return _weak_as(_wide(f, a), a)


def cosh(x):
    """e^(x - ln 2) + e^(-x - ln 2), as XLA: finite wherever cosh is (e^x alone
    overflows first), and the input is a float before it is negated (an unsigned
    -x wrapped to 2**32 - x). Complex: cosh(x) cos(y) + i sinh(x) sin(y)."""
    (a,) = promote_dtypes(x, to_float=True)
    if dtypes.is_complex(a.dtype):
        re, im = _parts(a)
        return _weak_as(_complex(multiply(cosh(re), cos(im)), multiply(sinh(re), sin(im))), a)

    def f(v):
        half = convert(-np.log(2.0), v.dtype, [v])
        return add(exp(add(v, half)), exp(subtract(half, v)))
    return _weak_as(_wide(f, a), a)


# Complex inverse functions by Kahan's formulas ("Branch cuts for complex elementary
# functions", 1987): square roots of 1 -+ z built from explicit parts, so that the
# sign of a zero imaginary part picks the side of a branch cut, as NumPy's.
def _asin_parts(x, y):
    """arcsin(x + iy) as (real, imaginary) parts."""
    s1 = sqrt(_complex(subtract(1, x), negative(y)))
    s2 = sqrt(_complex(add(1, x), y))
    (r1, i1), (r2, i2) = _parts(s1), _parts(s2)
    return (arctan2(x, subtract(multiply(r1, r2), multiply(i1, i2))),
            arcsinh(subtract(multiply(r1, i2), multiply(i1, r2))))


def _atanh_parts(x, y):
    """arctanh(x + iy) as (real, imaginary) parts: log(|1+z|/|1-z|) / 2 as a log1p
    of |x| (odd in x: log1p's argument stays >= 0, away from its pole), and half
    the argument of (1 + z)(1 - conj z)."""
    m = absolute(x)
    r = multiply(0.25, log1p(divide(multiply(4, m), add(square(subtract(1, m)), square(y)))))
    return (where(signbit(x), negative(r), r),
            multiply(0.5, arctan2(multiply(2, y),
                                  subtract(multiply(subtract(1, x), add(1, x)), square(y)))))


def arctan(x):
    a, one = promote(x, 1.0, to_float=True)
    if dtypes.is_complex(a.dtype):          # -i atanh(iz)
        re, im = _parts(a)
        r, i = _atanh_parts(negative(im), re)
        return _complex(i, negative(r))
    return bind1(ew.atan2, a, one)


def arcsin(x):
    (a,) = promote_dtypes(x, to_float=True)
    if dtypes.is_complex(a.dtype):
        return _complex(*_asin_parts(*_parts(a)))
    return arctan2(a, sqrt(subtract(1, square(a))))


def arccos(x):
    (a,) = promote_dtypes(x, to_float=True)
    if dtypes.is_complex(a.dtype):
        re, im = _parts(a)
        s1 = sqrt(_complex(subtract(1, re), negative(im)))
        s2 = sqrt(_complex(add(1, re), im))
        (r1, i1), (r2, i2) = _parts(s1), _parts(s2)
        return _complex(multiply(2, arctan2(r1, r2)),
                        arcsinh(subtract(multiply(r2, i1), multiply(i2, r1))))
    return arctan2(sqrt(subtract(1, square(a))), a)


def _large(a):
    """Where sqrt(a*a + 1) is |a| to the dtype's precision (and a*a may overflow)."""
    return greater(abs(a), float(1 / np.sqrt(dtypes.finfo(a.dtype).eps)))


def arcsinh(x):
    # odd function: work on |x| so that large negative x does not cancel; log1p keeps
    # tiny values, log(2|x|) huge ones (each branch fed only its own safe inputs)
    (a,) = promote_dtypes(x, to_float=True)
    if dtypes.is_complex(a.dtype):          # -i asin(iz)
        re, im = _parts(a)
        r, i = _asin_parts(negative(im), re)
        return _complex(i, negative(r))
    m = abs(a)
    big = _large(m)
    mb, ms = where(big, m, 1.0), where(big, 0.0, m)
    small = log1p(add(ms, divide(square(ms), add(1, sqrt(add(square(ms), 1))))))
    r = where(big, add(log(mb), float(np.log(2.0))), small)
    return where(equal(a, 0), a, where(less(a, 0), negative(r), r))   # keeps -0.0


def arccosh(x):
    # near 1 through log1p of x - 1 (exact there); for huge x, log(2x)
    (a,) = promote_dtypes(x, to_float=True)
    if dtypes.is_complex(a.dtype):
        re, im = _parts(a)
        s1 = sqrt(_complex(subtract(re, 1), im))
        s2 = sqrt(_complex(add(re, 1), im))
        (r1, i1), (r2, i2) = _parts(s1), _parts(s2)
        return _complex(arcsinh(add(multiply(r1, r2), multiply(i1, i2))),
                        multiply(2, arctan2(i1, r2)))
    big = _large(a)
    ab, d = where(big, a, 1.0), subtract(where(big, 1.0, a), 1)
    small = log1p(add(d, multiply(sqrt(d), sqrt(add(d, 2)))))   # at x = 1: slope inf
    return where(big, add(log(ab), float(np.log(2.0))), small)


def arctanh(x):
    # (log1p(x) - log1p(-x)) / 2: its derivative is infinite at +-1, as 1 / (1 - x*x)
    (a,) = promote_dtypes(x, to_float=True)
    if dtypes.is_complex(a.dtype):
        return _complex(*_atanh_parts(*_parts(a)))
    return multiply(0.5, subtract(log1p(a), log1p(negative(a))))


def hypot(x, y):
    """sqrt(x**2 + y**2) as JAX computes it: scaled by the larger magnitude, so it
    neither overflows nor underflows, and its derivative at (0, 0) is JAX's (1/2 to
    each side through the tie in maximum) rather than 0/0."""
    _no_complex("hypot", x, y, error=ValueError)
    a, b = promote(x, y, to_float=True)
    a, b = absolute(a), absolute(b)
    inf = logical_or(isposinf(a), isposinf(b))
    hi, lo = maximum(a, b), minimum(a, b)
    zero = equal(hi, 0)
    scaled = multiply(hi, sqrt(add(1, square(divide(lo, where(zero, 1, hi))))))
    return where(inf, np.inf, where(zero, hi, scaled))


def logaddexp(x, y):
    a, b = promote(x, y, to_float=True)
    m = maximum(a, b)
    if dtypes.is_complex(a.dtype):      # JAX's: the imaginary part wrapped into [-pi, pi)
        out = add(m, log1p(exp(subtract(add(a, b), multiply(m, 2)))))
        re, im = _parts(out)
        turn = remainder(add(im, np.pi), 2 * np.pi)
        return _complex(re, subtract(turn, np.pi))
    d = subtract(a, b)
    # equal infinities give d = NaN: their sum is the answer (and NaNs propagate).
    # -|d| written as min(d, -d): at a == b the tie in min (like the one in max)
    # splits the derivative evenly, which gives JAX's 1/2 each; abs would give (0, 1)
    return where(isnan(d), add(a, b), add(m, log1p(exp(minimum(d, negative(d))))))


def logaddexp2(x, y):
    """max + log1p(2^-|x - y|) / ln 2, as JAX: the base-2 form itself, not
    logaddexp of scaled values, which cancels to a different last bit near 0."""
    a, b = promote(x, y, to_float=True)
    m = maximum(a, b)
    d = subtract(a, b)
    tail = multiply(float(1 / np.log(2.0)), log1p(exp2(minimum(d, negative(d)))))
    return where(isnan(d), add(a, b), add(m, tail))


def _to_bool(a):
    """a != 0 after promotion, as JAX: weak for a weak scalar, whose zero is a
    Python scalar there; against a strong zero otherwise."""
    if a.dtype == dtypes.bool_:
        return a
    weak = dtype_weak(a)[1] and shape_of(a) == ()
    return not_equal(a, 0 if weak else convert(0, a.dtype))


def logical_and(x, y):
    return bitwise_and(*map(_to_bool, promote_dtypes(x, y)))


def logical_or(x, y):
    return bitwise_or(*map(_to_bool, promote_dtypes(x, y)))


def logical_xor(x, y):
    return bitwise_xor(*map(_to_bool, promote_dtypes(x, y)))


def logical_not(x):
    return invert(*map(_to_bool, promote_dtypes(x)))


def left_shift(x, y):
    a, b = _bool_as_int(*promote(x, y))     # bools shift as ints, as JAX
    return bind1(ew.shift_left, a, b)


def right_shift(x, y):
    a, b = _bool_as_int(*promote(x, y))
    prim = ew.shift_right_arithmetic if a.dtype.kind == "i" else ew.shift_right_logical
    return bind1(prim, a, b)


def isfinite(x):
    (a,) = promote_dtypes(x)
    if dtypes.is_complex(a.dtype):
        return logical_and(*map(isfinite, _parts(a)))
    if not dtypes.is_float(a.dtype):
        return full_like_bool(a, True)
    return bind1(ew.is_finite, a)


def isnan(x):
    (a,) = promote_dtypes(x)
    if not dtypes.is_inexact(a.dtype):     # JAX's x != x: weak as x
        return full_like_bool(a, False, dtype_weak(a)[1])
    return not_equal(a, a)


def _equals_const(a, value):
    """a == value against a strong constant of a's dtype: JAX's isinf family is
    never weak."""
    return equal(a, convert(value, a.dtype))


def _no_complex_inf(x):
    if dtypes.is_complex(dtype_weak(x)[0]):
        raise ValueError("isposinf/isneginf are not well defined for complex types; test "
                         "the parts (jx.numpy.real, imag) or use isinf")


def isposinf(x):
    _no_complex_inf(x)
    (a,) = promote_dtypes(x)
    return _equals_const(a, np.inf) if dtypes.is_float(a.dtype) else full_like_bool(a, False)


def isneginf(x):
    _no_complex_inf(x)
    (a,) = promote_dtypes(x)
    return _equals_const(a, -np.inf) if dtypes.is_float(a.dtype) else full_like_bool(a, False)


def isinf(x):
    (a,) = promote_dtypes(x)
    if dtypes.is_complex(a.dtype):
        return logical_or(*map(isinf, _parts(a)))
    if not dtypes.is_float(a.dtype):
        return full_like_bool(a, False)
    return _equals_const(abs(a), np.inf)


def full_like_bool(a, value: bool, weak: bool = False):
    """full_like(a, value, dtype=bool), built here: creation sits above ufuncs."""
    v = np.asarray(value, dtype=dtypes.bool_)
    out = constant(lambda s, d: np.full(s, v, dtype=d), shape_of(a), np.dtype(dtypes.bool_),
                   "full")
    return wrap(np.asarray(out), True) if weak else out


def where(condition, x=None, y=None):
    if x is None or y is None:
        raise TypeError("jx.numpy.where needs x and y: the one-argument form has a "
                        "data-dependent output shape, which a compiled program cannot have")
    c = convert(condition, dtypes.bool_)
    a, b = promote_dtypes(x, y)
    c, a, b = _broadcast_all(c, a, b)
    return bind1(ew.select, c, a, b)


def _broadcast_all(*args):
    shape = broadcast_shapes(*[shape_of(a) for a in args])
    tracers = [a for a in args if isinstance(a, Tracer)]
    return [broadcast_to(a, shape, tracers) for a in args]


def clip(a, /, min=None, max=None, *, a_min=None, a_max=None):
    """NumPy 2 / JAX (and the array API) spell the bounds min= and max=;
    NumPy's older a_min=/a_max= keywords still work."""
    a_min = min if a_min is None else a_min
    a_max = max if a_max is None else a_max
    if any(v is not None and dtypes.is_complex(dtype_weak(as_value(v))[0])
           for v in (a, a_min, a_max)):
        raise ValueError("Clip received a complex value either through the input or the "
                         "min/max keywords. Complex values have no ordering and cannot be "
                         "clipped. Please convert to a real value or array by taking the "
                         "real or imaginary components via jax.numpy.real/imag respectively.")
    out = as_value(a)
    if a_min is not None:
        out = maximum(out, a_min)
    if a_max is not None:
        out = minimum(out, a_max)
    return out


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    (a,) = promote_dtypes(x)
    if dtypes.is_complex(a.dtype):      # each part, as JAX
        return _complex(*(nan_to_num(p, nan, posinf, neginf) for p in _parts(a)))
    if not dtypes.is_float(a.dtype):
        return _unchanged(a, x)
    info = dtypes.finfo(a.dtype)
    a = where(isnan(a), nan, a)
    a = where(equal(a, np.inf), info.max if posinf is None else posinf, a)
    return where(equal(a, -np.inf), info.min if neginf is None else neginf, a)


def trunc(x):
    _no_complex("trunc", x)
    (a,) = promote_dtypes(x)
    if not dtypes.is_float(a.dtype):
        return _unchanged(a, x)
    return where(less(a, 0), ceil(a), floor(a))


fix = trunc


def fabs(x):
    _no_complex("fabs", x)
    (a,) = promote_dtypes(x, to_float=True)
    return bind1(ew.abs_, a)


def cbrt(x):
    """|x| ** (1/3) refined by one Newton step (the exponent 1/3 is itself rounded,
    which leaves ~10 ulps at the ends of the range), with x's sign; zeros, infinities
    and NaNs are their own cube roots. 16-bit floats go through float32."""
    _no_complex("cbrt", x)
    (a,) = promote_dtypes(x, to_float=True)

    def f(v):
        m = abs(v)
        r = power(m, 1.0 / 3.0)
        special = logical_or(equal(r, 0), logical_not(isfinite(r)))
        rs = where(special, 1.0, r)
        r = where(special, r, subtract(rs, divide(subtract(rs, divide(m, multiply(rs, rs))),
                                                  3.0)))
        return where(equal(v, 0), v, where(less(v, 0), negative(r), r))
    return _wide(f, a)


def deg2rad(x):
    return multiply(promote_dtypes(x, to_float=True)[0], float(np.pi / 180))


def rad2deg(x):
    return multiply(promote_dtypes(x, to_float=True)[0], float(180 / np.pi))


radians, degrees = deg2rad, rad2deg


def signbit(x):
    _no_complex("signbit", x, error=ValueError)
    (a,) = promote_dtypes(x)
    if a.dtype == dtypes.bool_:
        return full_like_bool(a, False)
    if not dtypes.is_float(a.dtype):
        return less(a, convert(0, a.dtype))           # a strong zero: never weak (JAX)
    # the sign bit itself, as JAX: set for -0.0 and -NaN too
    bits = bind1(bc.bitcast_convert_type, a, new_dtype=np.dtype(f"i{a.dtype.itemsize}"))
    return less(bits, convert(0, bits.dtype))


def float_power(x, y):
    a, b = promote(x, y, to_float=True)
    return bind1(ew.pow_, a, b)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| (NumPy's asymmetric test); equal infinities match."""
    x, y = promote(a, b)
    if not dtypes.is_inexact(x.dtype):
        x, y = promote(x, y, to_float=True)
    # tolerances as strong constants of x's (real) dtype (JAX): never weak
    rt = dtypes.real_dtype(x.dtype)
    atol, rtol = convert(atol, rt), convert(rtol, rt)
    close = less_equal(abs(subtract(x, y)), add(atol, multiply(rtol, abs(y))))
    out = logical_or(equal(x, y), logical_and(close, isfinite(subtract(x, y))))
    if equal_nan:
        out = logical_or(out, logical_and(isnan(x), isnan(y)))
    return out


def copysign(x, y):
    _no_complex("copysign", x, y)
    a, b = promote(x, y, to_float=True)
    m = abs(a)
    return where(signbit(b), negative(m), m)


def fmax(x, y):
    """maximum that ignores NaNs (NaN only where both are); ties pick y, as JAX."""
    a, b = promote(x, y)
    return where(logical_or(greater(a, b), isnan(b)), a, b)


def fmin(x, y):
    """minimum that ignores NaNs (NaN only where both are); ties pick y, as JAX."""
    a, b = promote(x, y)
    return where(logical_or(less(a, b), isnan(b)), a, b)


def heaviside(x, h0):
    _no_complex("heaviside", x, h0)
    a, h = promote(x, h0, to_float=True)
    # NaN stays NaN (NumPy, JAX): the last branch passes x itself through
    return where(greater(a, 0), 1.0, where(equal(a, 0), h, where(less(a, 0), 0.0, a)))


__all__ = [n for n, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__ and n[0] != "_"]
