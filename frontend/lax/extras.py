"""More of jax.lax's elementwise functions, with lax's strict typing: every operand
has one dtype (a Python scalar has its own weak default dtype, int32 or float32,
so lax.nextafter(x_f16, 1.0) is an error, as in JAX) and the dtype must be of the
kinds the function takes. Each result is computed by jx.numpy's function of the
same meaning, which then promotes nothing."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer
from ..errors import ShapeError
from ..numpy._util import as_value, broadcast_to, convert, dtype_weak, is_scalar_const, \
    shape_of
from ..numpy.creation import _wrap_public
from . import ops

_KINDS = {"float": "floating", "int": "integer", "bool": "bool"}


def _kind(dt) -> str:
    return "bool" if dt == dtypes.bool_ else "int" if dtypes.is_int(dt) else "float"


def _value(x):
    """x as an array value; a Python scalar as its weak default-dtype array (JAX)."""
    if is_scalar_const(x):
        return convert(x, dtypes.python_scalar_dtype(x), weak=not isinstance(x, bool))
    return as_value(x)


def operands(name: str, args, kinds=("float",), *, broadcast: bool = True) -> list:
    """The arguments of lax.`name` as values of one dtype of the given kinds, broadcast
    as lax broadcasts (rank-0 operands and size-1 dimensions of equal ranks)."""
    vals = [_value(a) for a in args]
    for i, v in enumerate(vals):
        if _kind(v.dtype) not in kinds:
            at = f" at position {i}" if len(vals) > 1 else ""
            raise ShapeError(f"jx.lax.{name} does not accept dtype {np.dtype(v.dtype).name}"
                             f"{at}: it takes {' or '.join(_KINDS[k] for k in kinds)} dtypes "
                             f"(convert with jx.lax.convert_element_type first)")
    names = [np.dtype(v.dtype).name for v in vals]
    if len(set(names)) > 1:
        raise ShapeError(f"jx.lax.{name} requires arguments to have the same dtypes, got "
                         f"{', '.join(names)} (Python scalars are int32/float32 unless x64 "
                         f"is on; convert first, or use jx.numpy's version, which promotes)")
    if not broadcast or len(vals) < 2:
        return vals
    shapes = [shape_of(v) for v in vals]
    ranks = {len(s) for s in shapes if s}
    if len(ranks) > 1:
        raise ShapeError(f"jx.lax.{name}: arrays must have the same number of dimensions "
                         f"(or be scalars), got shapes {', '.join(map(str, shapes))}")
    out_shape = tuple(next((d for d in dims if d != 1), 1)
                      for dims in zip(*[s for s in shapes if s])) if ranks else ()
    for s in shapes:
        if s and any(d not in (1, o) for d, o in zip(s, out_shape)):
            raise ShapeError(f"jx.lax.{name}: shapes {', '.join(map(str, shapes))} do not "
                             "broadcast")
    tracers = [v for v in vals if isinstance(v, Tracer)]
    return [broadcast_to(v, out_shape, tracers) for v in vals]


def _reweak(out, weak: bool):
    """out with the weak type lax gives (weak iff every operand is): the jx.numpy
    functions and bit tricks it is built from may lose or gain it."""
    if dtype_weak(out)[1] == weak:
        return out
    from ..numpy._util import bind1
    from ..prims import elementwise as ew
    return bind1(ew.convert_element_type, out, new_dtype=out.dtype, weak_type=weak)


def weak_of(vals) -> bool:
    return all(dtype_weak(v)[1] for v in vals)


# ------------------------------------------------------------ float functions

def _float_unary(name, jnp_name):
    def fn(x):
        from .. import numpy as jnp
        (a,) = operands(name, [x])
        return _reweak(getattr(jnp, jnp_name)(a), weak_of([a]))
    fn.__name__ = name
    fn.__doc__ = f"lax.{name}: jx.numpy.{jnp_name} on a float operand (no promotion)."
    return fn


acos = _float_unary("acos", "arccos")
asin = _float_unary("asin", "arcsin")
atan = _float_unary("atan", "arctan")
acosh = _float_unary("acosh", "arccosh")
asinh = _float_unary("asinh", "arcsinh")
atanh = _float_unary("atanh", "arctanh")
sinh = _float_unary("sinh", "sinh")
cosh = _float_unary("cosh", "cosh")
exp2 = _float_unary("exp2", "exp2")
_cbrt = _float_unary("cbrt", "cbrt")


def cbrt(x, *, accuracy=None):
    """Cube root of a float operand (accuracy is accepted and has no effect)."""
    return _cbrt(x)


def nextafter(x1, x2):
    """The next float after x1 towards x2; both of one float dtype."""
    from .. import numpy as jnp
    a, b = operands("nextafter", [x1, x2])
    return _reweak(jnp.nextafter(a, b), weak_of([a, b]))


def integer_pow(x, y: int):
    """x ** y for a static Python int y by repeated squaring (exact for integers,
    and its derivative is y * x ** (y - 1), never through log x)."""
    (a,) = operands("integer_pow", [x], ("int", "float"))
    if isinstance(y, (float, np.floating)) and float(y).is_integer():
        y = int(y)                                # JAX takes a whole float too
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, (int, np.integer)):
        raise TypeError(f"jx.lax.integer_pow: the exponent must be a Python int, got {y!r} "
                        "(use jx.lax.pow for array exponents)")
    y = int(y)
    if y < 0 and _kind(a.dtype) == "int":
        raise TypeError(f"Integers cannot be raised to negative powers, got integer_pow("
                        f"{np.dtype(a.dtype).name}{list(shape_of(a))}, {y}); use a float base")
    # 1 of a's dtype, shape and weak type (a constant: no derivative through it)
    one = broadcast_to(convert(1, a.dtype, weak=dtype_weak(a)[1]), shape_of(a),
                       [a] if isinstance(a, Tracer) else [])
    if y == 0:
        return one
    acc, base, n = None, a, abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else ops.mul(acc, base)
        n >>= 1
        if n:
            base = ops.mul(base, base)
    if y < 0:
        return ops.div(one, acc)
    return acc


def square(x):
    """x * x for an integer or float operand."""
    (a,) = operands("square", [x], ("int", "float"))
    return ops.mul(a, a)


def reciprocal(x):
    """1 / x, i.e. integer_pow(x, -1): integer operands are an error, as in JAX."""
    return integer_pow(x, -1)


def clamp(min, x, max):  # noqa: A002  (lax's argument names)
    """x clipped to [min, max]; min and max are scalars or x's shape, all one dtype.
    The derivative is JAX's: x's where min < x < max, min's where min > x and
    min < max, max's where max < x (none at the ties)."""
    lo, v, hi = (_value(a) for a in (min, x, max))
    operands("clamp", [lo, v, hi], ("int", "float", "bool"), broadcast=False)
    for what, b in (("min", lo), ("max", hi)):
        if shape_of(b) not in ((), shape_of(v)):
            raise ShapeError(f"jx.lax.clamp requires {what}.shape == operand.shape or "
                             f"{what}.shape == (), got {what}.shape={shape_of(b)}, "
                             f"operand.shape={shape_of(v)}")
    if shape_of(v) == () and (shape_of(lo) or shape_of(hi)):
        raise ShapeError("jx.lax.clamp: a scalar operand needs scalar min and max")
    shape = shape_of(v)
    tracers = [b for b in (lo, v, hi) if isinstance(b, Tracer)]
    lo, hi = (broadcast_to(b, shape, tracers) for b in (lo, hi))
    plain = ops.min(ops.max(v, lo), hi)             # XLA's clamp value (NaN propagates)
    if _kind(v.dtype) != "float":
        return plain
    # selects route the derivative as JAX's rule does; the leftover cases (ties,
    # NaNs, min > max) take the value with no derivative
    rest = ops.stop_gradient(plain)
    out = ops.select(ops.lt(hi, v), hi, rest)
    out = ops.select(ops.bitwise_and(ops.gt(v, lo), ops.lt(v, hi)), v, out)
    return ops.select(ops.bitwise_and(ops.gt(lo, v), ops.lt(lo, hi)), lo, out)


# ------------------------------------------------------------ integer bit functions

def _unsigned(a):
    ut = np.dtype(f"uint{np.dtype(a.dtype).itemsize * 8}")
    return ut, (a if a.dtype == ut else ops.bitcast_convert_type(a, ut))


def _popcount_bits(u, ut):
    """Bits set per element of an unsigned array u (SWAR: pairs, nibbles, bytes)."""
    nbits = ut.itemsize * 8
    m1, m2, m4, h01 = (int(c * ut.itemsize, 16) for c in ("55", "33", "0f", "01"))
    u = ops.sub(u, ops.bitwise_and(ops.shift_right_logical(u, 1), m1))
    u = ops.add(ops.bitwise_and(u, m2), ops.bitwise_and(ops.shift_right_logical(u, 2), m2))
    u = ops.bitwise_and(ops.add(u, ops.shift_right_logical(u, 4)), m4)
    if nbits == 8:
        return u
    return ops.shift_right_logical(ops.mul(u, h01), nbits - 8)


def population_count(x):
    """The number of set bits of each element, in x's integer dtype."""
    (a,) = operands("population_count", [x], ("int",))
    ut, u = _unsigned(a)
    out = _popcount_bits(u, ut)
    if out.dtype != a.dtype:
        out = ops.bitcast_convert_type(out, a.dtype)
    return _reweak(out, dtype_weak(a)[1])


def clz(x):
    """The number of leading zero bits of each element, in x's integer dtype."""
    (a,) = operands("clz", [x], ("int",))
    ut, u = _unsigned(a)
    nbits = ut.itemsize * 8
    s = 1
    while s < nbits:                         # smear the top set bit downwards
        u = ops.bitwise_or(u, ops.shift_right_logical(u, s))
        s *= 2
    out = ops.sub(nbits, _popcount_bits(u, ut))
    if out.dtype != a.dtype:
        out = ops.bitcast_convert_type(out, a.dtype)
    return _reweak(out, dtype_weak(a)[1])


def mulhi(x, y, /):
    """The high half of the double-width product x * y (signed or unsigned ints),
    from half-width partial products that never overflow."""
    a, b = operands("mulhi", [x, y], ("int",))
    dt = np.dtype(a.dtype)
    ut, ua = _unsigned(a)
    _, ub = _unsigned(b)
    h = ut.itemsize * 4
    mask = (1 << h) - 1

    def lo(v):
        return ops.bitwise_and(v, mask)

    def hi(v):
        return ops.shift_right_logical(v, h)
    a0, a1, b0, b1 = lo(ua), hi(ua), lo(ub), hi(ub)
    t = ops.add(ops.mul(a1, b0), hi(ops.mul(a0, b0)))
    w = ops.add(ops.mul(a0, b1), lo(t))
    out = ops.add(ops.add(ops.mul(a1, b1), hi(t)), hi(w))
    if dt != ut:   # signed: subtract y where x < 0 and x where y < 0 (mod 2^bits)
        out = ops.sub(out, ops.select(ops.lt(a, 0), ub, 0))
        out = ops.sub(out, ops.select(ops.lt(b, 0), ua, 0))
        out = ops.bitcast_convert_type(out, dt)
    return _reweak(out, dtype_weak(a)[1] and dtype_weak(b)[1])



# ------------------------------------------------------------ reduce_precision

_FORMAT = {2: (5, 10), 4: (8, 23), 8: (11, 52)}     # itemsize -> (exponent, mantissa) bits


def _round_bits(x, exponent_bits: int, mantissa_bits: int):
    """XLA's ReducePrecision on the bits: mantissa rounded to nearest even, then
    exponents beyond the reduced range become +-inf (above) or +-0 (below)."""
    dt = np.dtype(x.dtype)
    src_e, src_m = (8, 7) if dt == dtypes.bfloat16 else _FORMAT[dt.itemsize]
    ut, u = _unsigned(x)
    nbits = ut.itemsize * 8
    if mantissa_bits < src_m:
        drop = src_m - mantissa_bits
        last = 1 << drop                               # the lowest kept mantissa bit
        bias = ops.add(ops.shift_right_logical(ops.bitwise_and(u, last), drop),
                       (last >> 1) - 1)                # ties go to the even neighbour
        u = ops.bitwise_and(ops.add(u, bias), ((1 << nbits) - 1) ^ (last - 1))
    if exponent_bits < src_e:
        exp_mask = ((1 << src_e) - 1) << src_m
        src_bias, new_bias = (1 << (src_e - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        e = ops.bitwise_and(u, exp_mask)
        signed_zero = ops.bitwise_and(u, 1 << (nbits - 1))
        signed_inf = ops.bitwise_or(signed_zero, exp_mask)
        u = ops.select(ops.le(e, (src_bias - new_bias) << src_m), signed_zero, u)
        u = ops.select(ops.gt(e, (src_bias + new_bias) << src_m), signed_inf, u)
    out = ops.bitcast_convert_type(u, dt)
    return ops.select(ops.ne(x, x), x, out)            # NaNs stay NaNs


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """operand rounded to a float format with the given exponent and mantissa bits
    (kept in operand's dtype), as XLA's ReducePrecision; its derivative is the
    tangent rounded the same way (the operation is treated as linear, as in JAX)."""
    import operator
    from ..custom import custom_jvp
    eb, mb = operator.index(exponent_bits), operator.index(mantissa_bits)
    if eb < 1 or mb < 0:
        raise ValueError(f"jx.lax.reduce_precision: exponent_bits must be >= 1 and "
                         f"mantissa_bits >= 0, got {eb} and {mb}")
    (x,) = operands("reduce_precision", [operand])
    return _reweak(_rounding(eb, mb)(x), weak_of([x]))


def _rounding(eb: int, mb: int):
    """reduce_precision as a function with JAX's derivatives: a custom_jvp whose
    tangent is rounded too, through a custom_vjp that rounds the cotangent (the
    map is its own transpose), so both forward and reverse mode work."""
    from ..custom import custom_jvp, custom_vjp

    @custom_vjp
    def linear(t):
        return _round_bits(t, eb, mb)
    linear.defvjp(lambda t: (_round_bits(t, eb, mb), None),
                  lambda _, ct: (_round_bits(ct, eb, mb),))

    @custom_jvp
    def rounded(v):
        return _round_bits(v, eb, mb)

    @rounded.defjvp
    def _jvp(primals, tangents):
        return _round_bits(primals[0], eb, mb), linear(tangents[0])
    return rounded


__all__ = ["acos", "asin", "atan", "acosh", "asinh", "atanh", "sinh", "cosh", "exp2", "cbrt",
           "nextafter", "integer_pow", "square", "reciprocal", "clamp", "population_count",
           "clz", "mulhi", "reduce_precision"]
_wrap_public(globals(), __all__)
