"""Elementwise primitives: operands share one shape and one dtype (the frontend
broadcasts and promotes first), so every backend sees plain maps."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..core import declare
from ..errors import ShapeError
from ..ir import ShapedArray

FLOAT, INT, BOOL, COMPLEX = "float", "int", "bool", "complex"
NUMERIC = (FLOAT, INT)
INEXACT = (FLOAT, COMPLEX)


def _kinds_ok(dt, kinds) -> bool:
    return ((FLOAT in kinds and dtypes.is_float(dt)) or (INT in kinds and dtypes.is_int(dt))
            or (BOOL in kinds and dt == dtypes.bool_)
            or (COMPLEX in kinds and dtypes.is_complex(dt)))


def _elementwise_rule(name: str, kinds, result_dtype=None, real_result=False):
    def rule(*avals):
        shapes = {a.shape for a in avals}
        if len(shapes) > 1:
            raise ShapeError(f"operands must have equal shapes, got "
                             f"{', '.join(str(a) for a in avals)}; broadcast them first")
        dts = {a.dtype for a in avals}
        if len(dts) > 1:
            raise ShapeError(f"operands must share one dtype, got "
                             f"{', '.join(str(a) for a in avals)}")
        dt = avals[0].dtype
        if not _kinds_ok(dt, kinds):
            raise ShapeError(f"{name} takes {'/'.join(kinds)} operands, got {avals[0]}")
        # weak when every operand is, comparisons and is_finite included (JAX:
        # jnp.asarray(2.0) < 1.5 is a weak bool)
        out = result_dtype or (dtypes.real_dtype(dt) if real_result else dt)
        return ShapedArray(avals[0].shape, out, all(a.weak_type for a in avals))
    return rule


def _quiet(fn):
    """References follow IEEE: overflow and invalid operations are values, not warnings."""
    def impl(*args, **params):
        with np.errstate(all="ignore"):
            return fn(*args, **params)
    return impl


def _unary(name, fn, kinds=INEXACT, real_result=False):
    return declare(name, _elementwise_rule(name, kinds, real_result=real_result), _quiet(fn))


def _binary(name, fn, kinds=NUMERIC + (COMPLEX,), result_dtype=None):
    return declare(name, _elementwise_rule(name, kinds, result_dtype), _quiet(fn))


def _logistic(x):
    if dtypes.is_complex(x.dtype):      # no sign to split on: the definition
        return (1 / (1 + np.exp(-x))).astype(x.dtype)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


_erf_vec = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    return _erf_vec(x.astype(np.float64)).astype(x.dtype)


def _round(x, rounding_method):
    if rounding_method == "to_nearest_even":
        return np.round(x)
    t = np.trunc(x)   # half away from zero, without the x + 0.5 rounding trap
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def _int_div(a, b):
    """XLA's integer division: truncates towards zero; x / 0 is -1 (all bits set: the
    unsigned maximum) and MIN / -1 wraps to MIN. Defined everywhere, no trap."""
    bad = (b == 0) | ((b == -1) if a.dtype.kind == "i" else False)
    safe = np.where(bad, np.ones_like(b), b)
    q = a // safe                        # floor division, then towards zero: no abs(),
    q = np.where((a - q * safe != 0) & ((a < 0) != (safe < 0)), q + 1, q)  # (MIN overflows)
    if a.dtype.kind == "i":
        q = np.where(b == -1, (-a.astype(np.int64)).astype(a.dtype), q)   # MIN wraps
    return np.where(b == 0, np.asarray(-1).astype(a.dtype), q).astype(a.dtype)


def _div(a, b):
    return a / b if dtypes.is_inexact(a.dtype) else _int_div(a, b)


def _rem(a, b):
    """fmod; for integers XLA's remainder: x % 0 is x, MIN % -1 is 0."""
    if dtypes.is_float(a.dtype):
        return np.fmod(a, b)
    safe = np.where((b == 0) | ((b == -1) if a.dtype.kind == "i" else False),
                    np.ones_like(b), b)
    return np.where(b == 0, a, np.fmod(a, safe)).astype(a.dtype)


def _sign(x):
    """-1, 0 or 1; zeros and NaNs are their own sign (np.sign(-0.0) is +0.0); a
    complex number's is z / |z| (0 at 0), as JAX's (NumPy 2's too)."""
    if dtypes.is_complex(x.dtype):
        m = np.abs(x)
        return np.where(m == 0, 0, x / np.where(m == 0, 1, m)).astype(x.dtype)
    if not dtypes.is_float(x.dtype):
        return np.sign(x)
    return np.where((x == 0) | np.isnan(x), x, np.sign(x)).astype(x.dtype)


def _extremum(pick):
    """maximum/minimum as XLA: NaNs propagate and -0.0 < +0.0, so max(-0, +0) is +0
    in either order (np.maximum returns the first of two equal operands)."""
    def fn(a, b):
        out = pick(a, b)
        if not dtypes.is_float(a.dtype):
            return out
        u = np.dtype(f"u{a.dtype.itemsize}")
        bits = (a.view(u) & b.view(u)) if pick is np.maximum else (a.view(u) | b.view(u))
        return np.where(a == b, bits.view(a.dtype), out)   # differ only in a zero's sign
    return fn


def _pow(a, b):
    if dtypes.is_complex(a.dtype):      # XLA's: 0 ** 0 is 1, 0 ** b is 0 for Re(b) > 0
        zero = a == 0
        out = np.power(np.where(zero, 1, a), b)
        return np.where(zero, np.where(b == 0, 1, np.where(b.real > 0, 0, out)),
                        out).astype(a.dtype)
    if dtypes.is_float(a.dtype):
        return np.power(a, b)
    if a.dtype.kind == "u":
        return np.power(a, b)
    # integer power: negative exponents give 0 except for bases 1 and -1 (every
    # operand kept in a's dtype: a mix with Python ints would go through float64)
    one = np.ones_like(a)
    r = np.power(a, np.where(b < 0, np.zeros_like(b), b))
    neg = np.where(a == one, one, np.where(a == -one, np.where(b % 2 == 0, one, -one),
                                            np.zeros_like(a)))
    return np.where(b < 0, neg, r).astype(a.dtype)


def _shift_mask(a, b, fn):
    bits = a.dtype.itemsize * 8
    out = fn(a, np.clip(b, 0, bits - 1).astype(a.dtype))
    return np.where((b < 0) | (b >= bits), np.zeros_like(a), out)


def _shift_right_logical(a, b):
    u = np.dtype(f"u{a.dtype.itemsize}")
    return _shift_mask(a.view(u), b.astype(u), np.right_shift).view(a.dtype)


def _shift_right_arithmetic(a, b):
    # Sign-extending on the bit pattern, also for unsigned types (LLVM ashr); amounts
    # outside [0, bits) act as bits - 1 and fill with the sign, as XLA does.
    bits = a.dtype.itemsize * 8
    signed = np.dtype(f"i{a.dtype.itemsize}")
    amount = np.where((b < 0) | (b >= bits), bits - 1, b).astype(signed)
    return np.right_shift(a.view(signed), amount).view(a.dtype)


# arithmetic
ALL_NUMBERS = NUMERIC + (COMPLEX,)
neg = _unary("neg", np.negative, ALL_NUMBERS)
abs_ = _unary("abs", np.abs, ALL_NUMBERS, real_result=True)    # |complex| is real
sign = _unary("sign", _sign, ALL_NUMBERS)
add = _binary("add", np.add)
sub = _binary("sub", np.subtract)
mul = _binary("mul", np.multiply)
div = _binary("div", _div)
rem = _binary("rem", _rem, NUMERIC)
pow_ = _binary("pow", _pow, INEXACT + (INT,))
max_ = _binary("max", _extremum(np.maximum), NUMERIC + (BOOL,))
min_ = _binary("min", _extremum(np.minimum), NUMERIC + (BOOL,))
atan2 = _binary("atan2", np.arctan2, (FLOAT,))

# complex parts (JAX's real_p, imag_p, complex_p, conj_p)
real = _unary("real", np.real, (COMPLEX,), real_result=True)
imag = _unary("imag", np.imag, (COMPLEX,), real_result=True)
conj = _unary("conj", np.conj, (COMPLEX,))


def _complex_rule(re, im):
    out = _elementwise_rule("complex", (FLOAT,))(re, im)
    if out.dtype not in (dtypes.float32, dtypes.float64):
        raise ShapeError(f"complex takes float32 or float64 parts, got {re}")
    return out.update(dtype=dtypes.complex_dtype(out.dtype))


def _make_complex(re, im):
    """re + i*im from the parts themselves (re + 1j * im would turn an imaginary
    -0.0 into +0.0, which moves values across branch cuts)."""
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)),
                   dtypes.complex_dtype(np.asarray(re).dtype))
    out.real, out.imag = re, im
    return out


complex_ = declare("complex", _complex_rule, _make_complex)

# transcendental and rounding (float only)
exp = _unary("exp", np.exp)
log = _unary("log", np.log)
log1p = _unary("log1p", np.log1p)
expm1 = _unary("expm1", np.expm1)
sqrt = _unary("sqrt", np.sqrt)
rsqrt = _unary("rsqrt", lambda x: (1 / np.sqrt(x)).astype(x.dtype))
tanh = _unary("tanh", np.tanh)
logistic = _unary("logistic", _logistic)
sin = _unary("sin", np.sin)
cos = _unary("cos", np.cos)
tan = _unary("tan", np.tan)
erf = _unary("erf", _erf, (FLOAT,))
floor = _unary("floor", np.floor, (FLOAT,))
ceil = _unary("ceil", np.ceil, (FLOAT,))
ROUNDING_METHODS = ("away_from_zero", "to_nearest_even")


def _round_rule(x, rounding_method):
    if rounding_method not in ROUNDING_METHODS:
        raise ShapeError(f"rounding_method must be one of {ROUNDING_METHODS}, "
                         f"got {rounding_method!r}")
    return _elementwise_rule("round", (FLOAT,))(x)


round_ = declare("round", _round_rule, _quiet(_round))
is_finite = declare("is_finite", _elementwise_rule("is_finite", (FLOAT,), dtypes.bool_),
                    np.isfinite)

# comparisons
ALL = NUMERIC + (BOOL,)
eq = _binary("eq", np.equal, ALL + (COMPLEX,), dtypes.bool_)
ne = _binary("ne", np.not_equal, ALL + (COMPLEX,), dtypes.bool_)
lt = _binary("lt", np.less, ALL, dtypes.bool_)
le = _binary("le", np.less_equal, ALL, dtypes.bool_)
gt = _binary("gt", np.greater, ALL, dtypes.bool_)
ge = _binary("ge", np.greater_equal, ALL, dtypes.bool_)

# logical (bool) and bitwise (int)
and_ = _binary("and", np.bitwise_and, (INT, BOOL))
or_ = _binary("or", np.bitwise_or, (INT, BOOL))
xor = _binary("xor", np.bitwise_xor, (INT, BOOL))
not_ = _unary("not", np.invert, (INT, BOOL))
shift_left = _binary("shift_left", lambda a, b: _shift_mask(a, b, np.left_shift), (INT,))
shift_right_logical = _binary("shift_right_logical", _shift_right_logical, (INT,))
shift_right_arithmetic = _binary("shift_right_arithmetic", _shift_right_arithmetic, (INT,))


def _select_rule(pred, on_true, on_false):
    if pred.dtype != dtypes.bool_:
        raise ShapeError(f"predicate must be bool, got {pred}")
    if not (on_true.same_type(on_false)):
        raise ShapeError(f"branches must have one type, got {on_true} and {on_false}")
    if pred.shape not in ((), on_true.shape):
        raise ShapeError(f"predicate shape {pred} must be () or match {on_true}")
    return ShapedArray(on_true.shape, on_true.dtype, on_true.weak_type and on_false.weak_type)


select = declare("select", _select_rule, np.where)


def _convert_rule(x, new_dtype, weak_type=False):
    dtypes.check_supported(new_dtype)
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert(x, new_dtype, weak_type=False):
    new_dtype = np.dtype(new_dtype)
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype):
        if new_dtype == dtypes.bool_:
            return x != 0
        x = x.real          # as XLA: a complex number converts to a real by its real part
    if dtypes.is_int(new_dtype) and dtypes.is_float(x.dtype):
        # float -> int truncates; NaN -> 0 and out-of-range values saturate (defined, no UB)
        info = np.iinfo(new_dtype)
        y = np.trunc(x.astype(np.float64))
        # float(info.max) rounds up past the range (2**63 for int64): compare in float,
        # but only cast values known to fit, and write the bounds as integers
        hi, lo = y >= float(info.max), y <= float(info.min)
        fits = np.where(hi | lo | np.isnan(y), 0.0, y).astype(new_dtype)
        return np.where(hi, np.asarray(info.max, new_dtype),
                        np.where(lo, np.asarray(info.min, new_dtype), fits))
    if new_dtype == dtypes.bool_:
        return x != 0
    return x.astype(new_dtype)


convert_element_type = declare("convert_element_type", _convert_rule, _quiet(_convert))

