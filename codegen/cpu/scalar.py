"""Scalar lowering of the elementwise primitives: one rule per primitive name.

`SCALAR[name](b, args, dt, out_dt, **params) -> value`, where args are values
in compute type (irutil.compute_type) of operand dtype dt. Every rule is
straight-line code (selects, no branches, no libm calls) so loops vectorise,
and every rule defines what hardware leaves undefined the way the NumPy
reference does, which is XLA's way (integer division by zero gives -1 and its
remainder the dividend, out-of-range shifts give 0, float -> int conversion
saturates and maps NaN to 0).
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from . import mathcalls, pow32
from . import irutil as U
from .irutil import compute_type, const, is_float, is_signed

SCALAR: dict = {}
FAST = ()     # no contraction: fused code rounds exactly like the NumPy reference


def rule(*names):
    def deco(fn):
        for n in names:
            SCALAR[n] = fn
        return fn
    return deco


def _intrinsic(b, name, x):
    fn = b.module.declare_intrinsic(name, [x.type])
    return b.call(fn, [x])


@rule("neg")
def _neg(b, args, dt, out_dt):
    (x,) = args
    return b.fneg(x) if is_float(dt) else b.neg(x)


@rule("abs")
def _abs(b, args, dt, out_dt):
    (x,) = args
    if is_float(dt):
        return _intrinsic(b, "llvm.fabs", x)
    if not is_signed(dt):
        return x
    return b.select(b.icmp_signed("<", x, const(dt, 0)), b.neg(x), x)


@rule("sign")
def _sign(b, args, dt, out_dt):
    (x,) = args
    zero, one = const(dt, 0), const(dt, 1)
    if is_float(dt):
        pos = b.select(b.fcmp_ordered(">", x, zero), one, x)
        return b.select(b.fcmp_ordered("<", x, zero), const(dt, -1), pos)
    if not is_signed(dt):
        return b.select(b.icmp_unsigned("!=", x, zero), one, zero)
    return b.select(b.icmp_signed(">", x, zero), one,
                    b.select(b.icmp_signed("<", x, zero), const(dt, -1), zero))


def _arith(fop, iop):
    def lower(b, args, dt, out_dt):
        a, c = args
        if is_float(dt):
            return getattr(b, fop)(a, c, flags=FAST)
        return getattr(b, iop)(a, c)
    return lower


SCALAR["add"] = _arith("fadd", "add")
SCALAR["sub"] = _arith("fsub", "sub")
SCALAR["mul"] = _arith("fmul", "mul")


def _safe_divisor(b, a, c, dt):
    """Divisor with 0 and -1 replaced by 1 (MIN / -1 traps; x / -1 is a negation);
    and the masks of zeros and of minus ones."""
    zero = const(dt, 0)
    is_zero = b.icmp_unsigned("==", c, zero)
    bad, minus_one = is_zero, None
    if is_signed(dt):
        minus_one = b.icmp_signed("==", c, const(dt, -1))
        bad = b.or_(bad, minus_one)
    return b.select(bad, const(dt, 1), c), is_zero, minus_one


@rule("div")
def _div(b, args, dt, out_dt):
    """XLA's integer division: x / 0 is -1 (all bits set), MIN / -1 wraps to MIN."""
    a, c = args
    if is_float(dt):
        return b.fdiv(a, c, flags=FAST)
    safe, is_zero, minus_one = _safe_divisor(b, a, c, dt)
    q = b.sdiv(a, safe) if is_signed(dt) else b.udiv(a, safe)
    if is_signed(dt):
        q = b.select(minus_one, b.neg(a), q)
    return b.select(is_zero, ir.Constant(compute_type(dt), -1), q)


@rule("rem")
def _rem(b, args, dt, out_dt):
    """XLA's integer remainder: x % 0 is x, MIN % -1 is 0."""
    a, c = args
    if is_float(dt):
        return b.frem(a, c)
    safe, is_zero, minus_one = _safe_divisor(b, a, c, dt)
    r = b.srem(a, safe) if is_signed(dt) else b.urem(a, safe)
    if is_signed(dt):
        r = b.select(minus_one, const(dt, 0), r)
    return b.select(is_zero, a, r)


def _extremum(is_max):
    def lower(b, args, dt, out_dt):
        a, c = args
        if is_float(dt):      # NaN propagates and -0.0 < +0.0, as XLA's max/min
            return U.call_intrinsic(b, "llvm.maximum" if is_max else "llvm.minimum", [a, c])
        if compute_type(dt).width == 1:
            return b.or_(a, c) if is_max else b.and_(a, c)
        cmp = b.icmp_signed if is_signed(dt) else b.icmp_unsigned
        return b.select(cmp(">" if is_max else "<", a, c), a, c)
    return lower


SCALAR["max"] = _extremum(True)
SCALAR["min"] = _extremum(False)


@rule("pow")
def _pow(b, args, dt, out_dt):
    a, c = args
    if is_float(dt):
        v = c.constant if isinstance(c, ir.Constant) else None
        if isinstance(v, float) and _pow_by_products(v, dt):
            return _const_pow(b, a, v, dt)
        return _math(b, "pow", [a, c], dt)
    return _int_pow(b, a, c, dt)


def _pow_by_products(v: float, dt) -> bool:
    """Whether x ** v (v a constant) is computed from products, a square root and a
    division instead of exp(v * log x): whole and half-integer exponents, as many as
    keep the rounding within the general pow's (float32 works in double, where a
    few products round far below float32's half ulp; float64 allows two)."""
    twice = 2 * v
    if twice != int(twice):
        return False
    limit = 4 if np.dtype(dt) == np.float64 else 16     # |2v|: float64 up to x ** +-2
    return abs(twice) <= limit


def _const_pow(b, x, v: float, dt):
    """x ** v for a whole or half-integer constant v, with IEEE pow's special values:
    x ** 0 = 1 (nan too), (-0) ** v and (-inf) ** v by v's sign and parity, negative
    x with a half-integer v gives nan (the square root's), 1 / 0 = inf."""
    t = x.type
    if np.dtype(dt) == np.float32 and v in pow32.EXPONENTS and pow32.available(b):
        return pow32.const_pow_f32(b, x, v)      # float32 with exact error terms
    wide = compute_type(np.float64) if np.dtype(_math_dtype(dt)) == np.float32 else t
    xd = b.fpext(x, wide) if wide != t else x
    one = ir.Constant(wide, 1.0)
    if v == 0:
        return ir.Constant(t, 1.0)
    n2 = int(abs(2 * v))
    half = n2 % 2 == 1
    # x ** (k + 1/2) = |x| ** k * |sqrt(x)|: one rounding per product, and the signs
    # of -0 drop out ((-0) ** 1.5 is +0; negative x is nan through the square root)
    base, k = (_intrinsic(b, "llvm.fabs", xd) if half else xd), n2 // 2
    acc = None
    while k:      # base ** k by squaring
        if k & 1:
            acc = base if acc is None else b.fmul(acc, base)
        k >>= 1
        if k:
            base = b.fmul(base, base)
    if half:
        root = _intrinsic(b, "llvm.fabs", _intrinsic(b, "llvm.sqrt", xd))
        acc = root if acc is None else b.fmul(acc, root)
    if v < 0:
        acc = b.fdiv(one, acc)
    if half:      # (-inf) ** v: the square root made it nan; IEEE gives inf or +0
        ninf = b.fcmp_ordered("==", xd, ir.Constant(wide, float("-inf")))
        acc = b.select(ninf, ir.Constant(wide, float("inf") if v > 0 else 0.0), acc)
    return b.fptrunc(acc, t) if wide != t else acc


def _int_pow(b, a, c, dt):
    """Exponentiation by squaring, unrolled over the exponent's bits (no branches)."""
    t = compute_type(dt)
    one, zero = const(dt, 1), const(dt, 0)
    acc, base, e = one, a, c
    for _ in range(t.width):
        bit = b.trunc(b.and_(e, one), ir.IntType(1))
        acc = b.select(bit, b.mul(acc, base), acc)
        base = b.mul(base, base)
        e = b.lshr(e, one)
    if is_signed(dt):      # negative exponents: 1 and -1 stay, everything else is 0
        neg = b.icmp_signed("<", c, zero)
        odd = b.trunc(b.and_(c, one), ir.IntType(1))
        special = b.select(b.icmp_signed("==", a, one), one,
                           b.select(b.icmp_signed("==", a, const(dt, -1)),
                                    b.select(odd, const(dt, -1), one), zero))
        acc = b.select(neg, special, acc)
    return acc


def _math_dtype(dt):
    """float16 and bfloat16 compute in float32."""
    return np.dtype(np.float32) if compute_type(dt) == ir.FloatType() else np.dtype(dt)


def _math(b, name, args, dt):
    return mathcalls.emit(b, name, args, _math_dtype(dt))


def _unary_math(name):
    def lower(b, args, dt, out_dt):
        return _math(b, name, args[:1], dt)
    return lower


for _n in ("exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "erf",
           "rsqrt"):
    SCALAR[_n] = _unary_math(_n)


@rule("sqrt")
def _sqrt(b, args, dt, out_dt):
    return _intrinsic(b, "llvm.sqrt", args[0])


@rule("atan2")
def _atan2(b, args, dt, out_dt):
    return _math(b, "atan2", args[:2], dt)


SCALAR["floor"] = lambda b, args, dt, out_dt: _intrinsic(b, "llvm.floor", args[0])
SCALAR["ceil"] = lambda b, args, dt, out_dt: _intrinsic(b, "llvm.ceil", args[0])


@rule("round")
def _round(b, args, dt, out_dt, rounding_method="away_from_zero"):
    name = "llvm.roundeven" if rounding_method == "to_nearest_even" else "llvm.round"
    return _intrinsic(b, name, args[0])


@rule("is_finite")
def _is_finite(b, args, dt, out_dt):
    x = _intrinsic(b, "llvm.fabs", args[0])
    return b.fcmp_ordered("<", x, ir.Constant(x.type, float("inf")))


def _compare(op):
    def lower(b, args, dt, out_dt):
        a, c = args
        if is_float(dt):
            # NumPy: every comparison with NaN is False, except != which is True
            return b.fcmp_unordered(op, a, c) if op == "!=" else b.fcmp_ordered(op, a, c)
        if is_signed(dt):
            return b.icmp_signed(op, a, c)
        return b.icmp_unsigned(op, a, c)
    return lower


for _n, _op in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"),
                ("ge", ">=")):
    SCALAR[_n] = _compare(_op)

SCALAR["and"] = lambda b, args, dt, out_dt: b.and_(*args)
SCALAR["or"] = lambda b, args, dt, out_dt: b.or_(*args)
SCALAR["xor"] = lambda b, args, dt, out_dt: b.xor(*args)
SCALAR["not"] = lambda b, args, dt, out_dt: b.not_(args[0])


def _shift(kind):
    def lower(b, args, dt, out_dt):
        a, c = args
        bits = compute_type(dt).width
        out_of_range = b.icmp_unsigned(">=", c, const(dt, bits))   # negatives are huge
        safe = b.select(out_of_range, const(dt, 0), c)
        if kind == "shl":
            return b.select(out_of_range, const(dt, 0), b.shl(a, safe))
        if kind == "lshr":
            return b.select(out_of_range, const(dt, 0), b.lshr(a, safe))
        # amounts outside [0, bits), negative ones included, shift by bits - 1 (XLA)
        return b.ashr(a, b.select(out_of_range, const(dt, bits - 1), c))
    return lower


SCALAR["shift_left"] = _shift("shl")
SCALAR["shift_right_logical"] = _shift("lshr")
SCALAR["shift_right_arithmetic"] = _shift("ashr")


@rule("select")
def _select(b, args, dt, out_dt):
    p, x, y = args
    return b.select(p, x, y)


@rule("stop_gradient")
def _identity(b, args, dt, out_dt):
    return args[0]


@rule("convert_element_type")
def _convert(b, args, dt, out_dt, new_dtype=None, weak_type=False):
    return convert(b, args[0], dt, out_dt)


@rule("bitcast_convert_type")
def _bitcast(b, args, dt, out_dt, new_dtype=None):
    """The bits of x as out_dt (one width): through the storage types, since 16-bit
    floats compute in float32."""
    bits = U.to_storage(b, args[0], dt)
    st = U.storage_type(out_dt)
    if bits.type != st:
        bits = b.bitcast(bits, st)
    return U.to_compute(b, bits, out_dt)


def convert(b, x, src, dst):
    """Value conversion with the reference's semantics (saturating float -> int)."""
    src, dst = np.dtype(src), np.dtype(dst)
    st, tt = compute_type(src), compute_type(dst)
    if src == dst:
        return x
    if dst == np.bool_:
        return b.fcmp_unordered("!=", x, ir.Constant(st, 0.0)) if is_float(src) else \
            b.icmp_unsigned("!=", x, ir.Constant(st, 0))
    if src == np.bool_:
        return b.uitofp(x, tt) if is_float(dst) else b.zext(x, tt)
    if is_float(src) and is_float(dst):
        if U.is_half(dst):
            if st.intrinsic_name == "f64" and dst == np.float16:
                # one rounding, as NumPy: through float32 (nearest) would round twice
                # (1 + 2**-11 + 2**-40 is 1.001 in float16, but 1.0 by way of float32);
                # rounding to odd first keeps the float32 -> half step native
                x = U.round_to_odd_f32(b, x)
            elif st.intrinsic_name == "f64":    # bfloat16: through float32, as
                x = b.fptrunc(x, U.F32)          # ml_dtypes and XLA round it
            return U.round_to(b, x, dst)       # float32 -> 16 bits is never a no-op
        if st == tt:
            return x
        return b.fpext(x, tt) if st.intrinsic_name == "f32" and tt.intrinsic_name == "f64" \
            else b.fptrunc(x, tt) if st.intrinsic_name == "f64" and tt.intrinsic_name == "f32" \
            else x
    if is_float(dst):
        # to float32, then to 16 bits: the two roundings NumPy (ml_dtypes) and XLA make
        y = b.sitofp(x, tt) if is_signed(src) else b.uitofp(x, tt)
        return U.round_to(b, y, dst)
    if is_float(src):
        # saturating conversion: the llvm.fpto[su]i.sat intrinsics map NaN to 0
        base = "llvm.fptosi.sat" if is_signed(dst) else "llvm.fptoui.sat"
        name = f"{base}.i{tt.width}.{st.intrinsic_name}"
        fn = b.module.globals.get(name) or ir.Function(b.module, ir.FunctionType(tt, [st]), name)
        return b.call(fn, [x])
    if tt.width > st.width:
        return b.sext(x, tt) if is_signed(src) else b.zext(x, tt)
    if tt.width < st.width:
        return b.trunc(x, tt)
    return x

