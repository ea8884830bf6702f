"""The compiler-runtime routines LLVM may call, written in LLVM IR by jx itself.

LLVM lowers some instructions to calls instead of code: `fptrunc double to half`
on every x86 CPU without AVX512-FP16 (`__truncdfhf2`), any half conversion
without F16C (`__extendhfsf2`, `__truncsfhf2`), bfloat16 from double, and 128-bit
division. Those routines live in libgcc or compiler-rt, which `cc` links into a
shared object but nothing loads into jx.jit's process. Defining them here, in IR
LLVM compiles like any other module, means the same code serves the JIT (its
addresses registered with llvm.add_symbol) and artifacts (its object linked in,
symbols hidden), with no C compiler involved and no ABI to get wrong: LLVM
itself decides how a `half` is passed, on both sides of the call.

Every routine is built from integer operations and native float32/float64
arithmetic only, so none of them can lower to a call of another (or itself).
"""
from __future__ import annotations

import functools

import llvmlite.ir as ir

from . import irutil as U

I16, I128 = U.I16, ir.IntType(128)


def _c32(v: int) -> ir.Constant:
    return ir.Constant(U.I32, v)


def _define(module: ir.Module, name: str, ret, args) -> tuple:
    fn = ir.Function(module, ir.FunctionType(ret, args), name)
    # hidden: an artifact must not export these (interposing on its host's libgcc,
    # or clashing with another artifact's copy). llvmlite prints no visibility for
    # functions, but prints the linkage field verbatim where LLVM reads it.
    fn.linkage = "hidden"
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def half_bits_from_f32(b: ir.IRBuilder, x) -> ir.Value:
    """The float16 nearest to float32 x (ties to even), as i16 bits. Overflow
    goes to inf, NaN to a quiet NaN of its sign; subnormals are rounded by one
    float32 addition of a magic constant that puts the half's last bit at the
    float's last bit (the hardware rounds to nearest even)."""
    bits = b.bitcast(x, U.I32)
    sign = b.and_(bits, _c32(0x80000000))
    mag = b.xor(bits, sign)
    f32_inf, f16_limit = 255 << 23, (127 + 16) << 23          # 65536.0
    denorm_magic = ((127 - 15) + (23 - 10) + 1) << 23          # 0.5
    special = b.select(b.icmp_unsigned(">", mag, _c32(f32_inf)), _c32(0x7E00), _c32(0x7C00))
    # subnormal (or zero) half
    sum_ = b.fadd(b.bitcast(mag, U.F32), b.bitcast(_c32(denorm_magic), U.F32))
    small = b.sub(b.bitcast(sum_, U.I32), _c32(denorm_magic))
    # normal half: rebias, round to nearest even at bit 13
    odd = b.and_(b.lshr(mag, _c32(13)), _c32(1))
    normal = b.add(b.add(mag, _c32(((15 - 127) << 23) + 0xFFF)), odd)
    normal = b.lshr(normal, _c32(13))
    out = b.select(b.icmp_unsigned(">=", mag, _c32(f16_limit)), special,
                   b.select(b.icmp_unsigned("<", mag, _c32(113 << 23)), small, normal))
    return b.trunc(b.or_(out, b.lshr(sign, _c32(16))), I16)


def f32_from_half_bits(b: ir.IRBuilder, h) -> ir.Value:
    """float32 of float16 bits h (exact)."""
    v = b.zext(h, U.I32)
    sign = b.shl(b.and_(v, _c32(0x8000)), _c32(16))
    exp = b.and_(b.lshr(v, _c32(10)), _c32(0x1F))
    mant = b.and_(v, _c32(0x3FF))
    inf_nan = b.or_(_c32(0x7F800000), b.shl(mant, _c32(13)))
    normal = b.or_(b.shl(b.add(exp, _c32(112)), _c32(23)), b.shl(mant, _c32(13)))
    # subnormal: mant * 2**-24, exact in float32
    sub = b.bitcast(b.fmul(b.uitofp(mant, U.F32), ir.Constant(U.F32, 2.0 ** -24)), U.I32)
    mag = b.select(b.icmp_unsigned("==", exp, _c32(0x1F)), inf_nan,
                   b.select(b.icmp_unsigned("==", exp, _c32(0)), sub, normal))
    return b.bitcast(b.or_(mag, sign), U.F32)


def _half_routines(m: ir.Module) -> None:
    fn, b = _define(m, "__extendhfsf2", U.F32, [U.F16])
    b.ret(f32_from_half_bits(b, b.bitcast(fn.args[0], I16)))
    fn, b = _define(m, "__truncsfhf2", U.F16, [U.F32])
    b.ret(b.bitcast(half_bits_from_f32(b, fn.args[0]), U.F16))
    fn, b = _define(m, "__truncdfhf2", U.F16, [U.F64])
    b.ret(b.bitcast(half_bits_from_f32(b, U.round_to_odd_f32(b, fn.args[0])), U.F16))
    # llvmlite.ir has no bfloat type: the bit patterns here, the `bfloat`
    # signatures as IR text (see _BF16_WRAPPERS)
    for name, arg in (("jx.bf16_from_f32", U.F32), ("jx.bf16_from_f64", U.F64)):
        fn, b = _define(m, name, I16, [arg])
        fn.linkage = "internal"
        x = fn.args[0] if arg is U.F32 else U.round_to_odd_f32(b, fn.args[0])
        b.ret(U.bf16_bits(b, x))


_BF16_WRAPPERS = "".join(f"""
define hidden bfloat @{name}({arg} %x) {{
  %bits = call i16 @jx.bf16_from_{src}({arg} %x)
  %r = bitcast i16 %bits to bfloat
  ret bfloat %r
}}
""" for name, arg, src in (("__truncsfbf2", "float", "f32"), ("__truncdfbf2", "double", "f64")))


def _udivmod(m: ir.Module) -> ir.Function:
    """{q, r} = a udiv/urem b by shift and subtract, one quotient bit per step
    (128-bit division is rare: jx emits none itself; correctness over speed)."""
    pair = ir.LiteralStructType([I128, I128])
    fn = ir.Function(m, ir.FunctionType(pair, [I128, I128]), "jx.udivmod128")
    fn.linkage = "internal"
    a, d = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    q_ptr, r_ptr = b.alloca(I128), b.alloca(I128)
    b.store(ir.Constant(I128, 0), q_ptr)
    b.store(ir.Constant(I128, 0), r_ptr)
    with U.for_step(b, 0, 128, 1, "bit") as i:
        shift = b.zext(b.sub(U.i64(127), i), I128)
        r = b.or_(b.shl(b.load(r_ptr), ir.Constant(I128, 1)),
                  b.and_(b.lshr(a, shift), ir.Constant(I128, 1)))
        fits = b.icmp_unsigned(">=", r, d)
        b.store(b.select(fits, b.sub(r, d), r), r_ptr)
        q = b.load(q_ptr)
        b.store(b.or_(q, b.shl(b.zext(fits, I128), shift)), q_ptr)
    out = b.insert_value(ir.Constant(pair, ir.Undefined), b.load(q_ptr), 0)
    b.ret(b.insert_value(out, b.load(r_ptr), 1))
    return fn


def _int128_routines(m: ir.Module) -> None:
    udivmod = _udivmod(m)
    zero = ir.Constant(I128, 0)
    for name, signed, part in (("__udivti3", False, 0), ("__umodti3", False, 1),
                               ("__divti3", True, 0), ("__modti3", True, 1)):
        fn, b = _define(m, name, I128, [I128, I128])
        x, y = fn.args
        if not signed:
            b.ret(b.extract_value(b.call(udivmod, [x, y]), part))
            continue
        xneg, yneg = b.icmp_signed("<", x, zero), b.icmp_signed("<", y, zero)
        ax = b.select(xneg, b.sub(zero, x), x)
        ay = b.select(yneg, b.sub(zero, y), y)
        res = b.extract_value(b.call(udivmod, [ax, ay]), part)
        # C semantics: the quotient truncates, the remainder has the dividend's sign
        neg = b.xor(xneg, yneg) if part == 0 else xneg
        b.ret(b.select(neg, b.sub(zero, res), res))


@functools.lru_cache(maxsize=None)
def _module() -> ir.Module:
    m = ir.Module("jx_libcalls")
    _half_routines(m)
    _int128_routines(m)
    return m


def module_ir() -> str:
    return str(_module()) + _BF16_WRAPPERS


def names() -> frozenset:
    """The symbols this module defines."""
    return frozenset([f.name for f in _module().functions
                      if not f.is_declaration and f.linkage != "internal"] +
                     ["__truncsfbf2", "__truncdfbf2"])
