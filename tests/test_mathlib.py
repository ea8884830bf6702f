"""The inline math library (codegen/cpu/mathlib.py) against NumPy.

Every function is compiled into a loop kernel `void f(T* in, T* out, i64 n)`
(two inputs for pow/atan2) with llvmlite at -O3 for the host CPU, run on ~1e6
inputs spread over the whole finite range plus special values, and compared in
ULPs: float32 against NumPy's float64 result rounded to float32, float64
against NumPy's long double result (float64 itself where long double is no
wider; erf: math.erf, in float64). The optimised IR must hold vector types in every kernel and call
nothing but LLVM intrinsics: that is what proves the loops vectorised.
"""
from __future__ import annotations

import ctypes
import math
import re
import zlib

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from jx.codegen.cpu import mathlib, target

import cpu_matrix

DTYPES = (np.float32, np.float64)
N = 1 << 20
# (float32, float64) bounds in ulp: the maxima measured by exhaustive / 1e8-sample runs
# (mathlib's docstring) plus one; float32 must never exceed 4 (the accuracy contract).
MAX_ULP = {"exp": (2, 2), "expm1": (2, 3), "log": (2, 2), "log1p": (3, 3), "tanh": (2, 2),
           "logistic": (3, 3), "sin": (2, 2), "cos": (2, 2), "tan": (2, 4), "erf": (2, 3),
           "rsqrt": (1, 1), "sqrt": (0, 0), "pow": (2, 3), "atan2": (3, 3)}
WIDE = np.finfo(np.longdouble).nmant > 52     # long double is a finer float64 reference


def tolerance(name, dtype):
    f32, f64 = MAX_ULP[name]
    if dtype == np.float32:
        return f32
    return f64 if WIDE or name == "sqrt" else f64 + 2   # NumPy float64 errs by itself


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def _logistic(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


REFERENCE = {
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "tanh": np.tanh,
    "logistic": _logistic, "sin": np.sin, "cos": np.cos, "tan": np.tan, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "erf": lambda x: _erf64(x.astype(np.float64)),
    "pow": np.power, "atan2": np.arctan2,
}


def reference(name, dtype, *args):
    """NumPy's value one precision up, rounded to dtype (sqrt: IEEE's correctly rounded
    value in dtype itself, which double rounding from a wider type could miss)."""
    up = np.float64 if dtype == np.float32 else (np.longdouble if WIDE else np.float64)
    up = dtype if name == "sqrt" else up
    with np.errstate(all="ignore"):
        return REFERENCE[name](*(a.astype(up) for a in args)).astype(dtype)


# ---------------------------------------------------------------------------
# Compiling kernels

def _kernel(module, name, dtype, arity):
    t = ir.FloatType() if dtype == np.float32 else ir.DoubleType()
    ptr = ir.PointerType()
    fnty = ir.FunctionType(ir.VoidType(), [ptr] * (arity + 1) + [ir.IntType(64)])
    fn = ir.Function(module, fnty, name=f"{name}_{np.dtype(dtype).name}")
    for arg in fn.args[:-1]:
        arg.add_attribute("noalias")
    *ins, out, n = fn.args
    entry, body, done = (fn.append_basic_block(s) for s in ("entry", "body", "done"))
    b = ir.IRBuilder(entry)
    zero = ir.Constant(ir.IntType(64), 0)
    b.cbranch(b.icmp_signed(">", n, zero), body, done)
    b.position_at_end(body)
    i = b.phi(ir.IntType(64))
    i.add_incoming(zero, entry)
    vals = [b.load(b.gep(p, [i], source_etype=t, inbounds=True), typ=t) for p in ins]
    if arity == 1:
        res = mathlib.emit_unary(b, name, vals[0], np.dtype(dtype))
    else:
        res = mathlib.emit_binary(b, name, vals[0], vals[1], np.dtype(dtype))
    b.store(res, b.gep(out, [i], source_etype=t, inbounds=True))
    nxt = b.add(i, ir.Constant(ir.IntType(64), 1))
    i.add_incoming(nxt, body)
    b.cbranch(b.icmp_signed("<", nxt, n), body, done)
    b.position_at_end(done)
    b.ret_void()


def _bodies(ir_text):
    """{function name: its text} for every definition in a module's IR."""
    return {m.group(1): m.group(0) for m in
            re.finditer(r"^define [^@]*@\"?([\w.]+)\"?\(.*?^}", ir_text, re.M | re.S)}


class Kernels:
    """Every function in both dtypes, through jx's own LLVM pipeline for one CPU of
    the matrix (tests/cpu_matrix.py): AVX-512 targets scale exponents with vscalef,
    the others with the portable two-factor scaling."""

    def __init__(self, cpu):
        from jx.codegen.cpu import compiler
        module = ir.Module(name="mathlib_test")
        module.jx_cpu = cpu
        for name in sorted(mathlib.UNARY):
            for dt in DTYPES:
                _kernel(module, name, dt, 1)
        for name in sorted(mathlib.BINARY):
            for dt in DTYPES:
                _kernel(module, name, dt, 2)
        self.raw = str(module)
        tm = compiler.target_machine(cpu)
        mod = compiler.optimise(self.raw, tm)
        self.optimised = str(mod)
        self.engine = llvm.create_mcjit_compiler(mod, compiler.target_machine(cpu))
        self.engine.finalize_object()
        self.cpu = cpu

    def __call__(self, name, dtype, *args):
        args = [np.ascontiguousarray(a, dtype=dtype) for a in args]
        out = np.empty_like(args[0])
        addr = self.engine.get_function_address(f"{name}_{np.dtype(dtype).name}")
        proto = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (len(args) + 1), ctypes.c_int64)
        proto(addr)(*[a.ctypes.data for a in args], out.ctypes.data, out.size)
        return out


@pytest.fixture(scope="module", params=cpu_matrix.MATRIX)
def kernels(request):
    return Kernels(cpu_matrix.runnable(request.param))


# ---------------------------------------------------------------------------
# Inputs and comparison

def ulp_distance(a, b):
    """|a - b| in units in the last place, through the ordered integer images of the
    floats (0 for two NaNs, huge for NaN against a number)."""
    itype = np.int32 if a.dtype == np.float32 else np.int64
    mask = np.iinfo(itype).max

    def ordered(x):
        i = x.view(itype).astype(np.int64) if itype == np.int32 else x.view(itype)
        return np.where(i < 0, -(i & mask), i)

    nan_a, nan_b = np.isnan(a), np.isnan(b)
    oa, ob = ordered(a), ordered(b)
    same_side = (oa >= 0) == (ob >= 0)                # no int64 overflow in the difference
    d = np.where(same_side, np.abs(np.where(same_side, oa - ob, 0)).astype(np.float64),
                 np.abs(oa.astype(np.float64)) + np.abs(ob.astype(np.float64)))
    d[nan_a != nan_b] = np.inf
    d[nan_a & nan_b] = 0
    return d


def assert_matches(name, dtype, got, want, args, tol):
    d = ulp_distance(got, want)
    # Infinities and signed zeros must match exactly, not just within a few ulp.
    same_inf = np.isinf(want) == np.isinf(got)
    zero_sign = ~((want == 0) & (got == 0)) | (np.signbit(want) == np.signbit(got))
    bad = (d > tol) | ~same_inf | ~zero_sign
    if bad.any():
        k = np.flatnonzero(bad)[:8]
        rows = "\n".join(f"  {tuple(a[j] for a in args)} -> {got[j]!r}, want {want[j]!r} "
                         f"({d[j]:.0f} ulp)" for j in k)
        pytest.fail(f"{name} {np.dtype(dtype).name}: {bad.sum()} of {bad.size} inputs off "
                    f"(tolerance {tol} ulp, worst {np.max(d):.0f}):\n{rows}")
    return float(np.max(d, initial=0))


def all_finite(rng, dtype, n):
    """Uniform over the bit patterns of finite floats: log-uniform magnitudes, both signs,
    denormals included."""
    itype = np.uint32 if dtype == np.float32 else np.uint64
    bits = rng.integers(0, np.iinfo(itype).max, size=n, dtype=itype, endpoint=True)
    x = bits.view(dtype)
    return x[np.isfinite(x)]


def specials(dtype):
    fi = np.finfo(dtype)
    tiny_den = fi.smallest_subnormal
    vals = [0.0, 1.0, 0.5, 2.0, 3.0, 10.0, tiny_den, 2 * tiny_den, fi.tiny, fi.tiny * 0.75,
            fi.max, fi.eps, np.pi, np.pi / 2, np.pi / 4, 0.75, 1e-5, 1e5, 1e10]
    # around the overflow / underflow thresholds of exp, expm1, logistic, pow
    big = np.log(fi.max)
    lo = np.log(fi.smallest_subnormal)
    vals += [big, np.nextafter(big, 0), big + 1e-3, lo, lo - 1, -big, 100.0, 1000.0, 1e30]
    vals = np.array(vals, dtype=dtype)
    return np.concatenate([vals, -vals, np.array([np.inf, -np.inf, np.nan], dtype)])


def dense(rng, dtype, lo, hi, n):
    return rng.uniform(lo, hi, n).astype(dtype)


# Where each function does its work (most of the full-range draws saturate).
INTERESTING = {
    "exp": [(-110, 90), (-760, 720)], "expm1": [(-1, 1), (-30, 90), (-40, 720)],
    "log": [(0, 4), (0.5, 2)], "log1p": [(-1, 1), (-1e-3, 1e-3), (0, 1e3)],
    "tanh": [(-1, 1), (-20, 20)], "logistic": [(-120, 120), (-800, 800), (-2, 2)],
    "sin": [(-10, 10), (-1e6, 1e6), (-1e12, 1e12)], "cos": [(-10, 10), (-1e6, 1e6)],
    "tan": [(-10, 10), (-1e6, 1e6), (-1e12, 1e12)], "erf": [(-1.5, 1.5), (-7, 7)],
    "rsqrt": [(0, 10)], "sqrt": [(0, 10)],
}
TRIG_LIMIT64 = 2.0 ** 40       # float64 sin/cos/tan are accurate below this magnitude


def near_multiples_of_pi_2(rng, dtype, n):
    """Floats nearest to k pi/2: the reduced argument is tiny, so every bit of the range
    reduction shows in the result (k stays where floats are denser than pi/2)."""
    top = 2.0 ** (36 if dtype == np.float64 else 22)
    k = np.floor(np.exp2(rng.uniform(0, np.log2(top), n)))
    x = (k.astype(np.longdouble) * (np.longdouble(np.pi) / 2)).astype(dtype)
    return np.concatenate([x, -x])


def unary_inputs(rng, name, dtype):
    n = N // 2
    parts = [all_finite(rng, dtype, n), specials(dtype)]
    for lo, hi in INTERESTING[name]:
        parts.append(dense(rng, dtype, lo, hi, n // len(INTERESTING[name])))
    x = np.concatenate(parts)
    if name in ("sin", "cos", "tan"):
        x = np.concatenate([x, near_multiples_of_pi_2(rng, dtype, n // 8)])
        if dtype == np.float64:
            x = x[~(np.abs(x) >= TRIG_LIMIT64)]     # keeps inf / nan
    return x


# ---------------------------------------------------------------------------
# Tests

def test_interface():
    assert mathlib.UNARY == {"exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos",
                             "tan", "erf", "rsqrt", "sqrt"}
    assert mathlib.BINARY == {"pow", "atan2"}
    assert set(MAX_ULP) == mathlib.UNARY | mathlib.BINARY
    assert all(f32 <= 4 for f32, _ in MAX_ULP.values())     # the float32 contract
    b = ir.IRBuilder(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f")
                     .append_basic_block())
    with pytest.raises(KeyError, match="no unary function 'sinh'"):
        mathlib.emit_unary(b, "sinh", ir.Constant(ir.FloatType(), 1.0), np.dtype(np.float32))
    with pytest.raises(TypeError, match="float16 in float32"):
        mathlib.emit_unary(b, "exp", ir.Constant(ir.HalfType(), 1.0), np.dtype(np.float16))


def test_vectorised_and_no_libm_calls(kernels):
    raw, opt = _bodies(kernels.raw), _bodies(kernels.optimised)
    assert len(raw) == 2 * len(mathlib.UNARY | mathlib.BINARY)
    for fname, text in raw.items():
        callees = set(re.findall(r"call [^@]*@\"?([\w.]+)", text))
        assert all(c.startswith("llvm.") for c in callees), (fname, callees)
        # straight-line: the only branches are the test loop's own two
        assert text.count(" br ") == 2, fname
    for fname, text in opt.items():
        callees = set(re.findall(r"call [^@]*@\"?([\w.]+)", text))
        assert all(c.startswith("llvm.") for c in callees), (fname, callees)
        elt = "float" if fname.endswith("float32") else "double"
        if "fma" in target.features(kernels.cpu):
            # without FMA, llvm.fma is a libm call, which LLVM will not vectorise
            assert re.search(rf"<\d+ x {elt}>", text), f"{fname} did not vectorise"


def test_emission_is_idempotent_on_declarations():
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), "g")
    b = ir.IRBuilder(fn.append_basic_block())
    x = fn.args[0]
    y = mathlib.emit_unary(b, "sin", mathlib.emit_unary(b, "exp", x, np.float64), np.float64)
    b.ret(mathlib.emit_binary(b, "pow", y, x, np.float64))
    llvm.parse_assembly(str(module)).verify()      # one declaration per intrinsic


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(mathlib.UNARY))
def test_unary_accuracy(kernels, name, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{name}{np.dtype(dtype).name}".encode()))
    x = unary_inputs(rng, name, dtype)
    got = kernels(name, dtype, x)
    assert_matches(name, dtype, got, reference(name, dtype, x), (x,), tolerance(name, dtype))


def pow_inputs(rng, dtype):
    n = N // 6
    a, b = all_finite(rng, dtype, n), all_finite(rng, dtype, n)
    m = min(a.size, b.size)
    pairs = [(a[:m], b[:m])]
    # moderate bases and exponents, both signs; integer exponents for negative bases
    pairs.append((dense(rng, dtype, -10, 10, n), dense(rng, dtype, -30, 30, n)))
    pairs.append((dense(rng, dtype, -10, 10, n), rng.integers(-40, 40, n).astype(dtype)))
    # near 1 with huge exponents, results from denormal to overflow: stresses log's precision
    lo, hi = (-746, 710) if dtype == np.float64 else (-104, 89)
    base = np.exp(dense(rng, np.float64, -0.3, 0.3, n)).astype(dtype)
    pairs.append((base, (dense(rng, np.float64, lo, hi, n) / np.log(base.astype(float)))
                  .astype(dtype)))
    pairs.append((np.exp(dense(rng, np.float64, lo, hi - 1, n)).astype(dtype),
                  dense(rng, dtype, -1.5, 1.5, n)))
    s = specials(dtype)
    sa, sb = np.meshgrid(s, np.concatenate([s, np.array([-1, 1, 0.5, -0.5, 3, -3], dtype)]))
    pairs.append((sa.ravel(), sb.ravel()))
    return np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs])


def atan2_inputs(rng, dtype):
    n = N // 3
    y, x = all_finite(rng, dtype, n), all_finite(rng, dtype, n)
    m = min(y.size, x.size)
    ys, xs = [y[:m], dense(rng, dtype, -2, 2, n)], [x[:m], dense(rng, dtype, -2, 2, n)]
    s = specials(dtype)
    sy, sx = np.meshgrid(s, s)
    return np.concatenate(ys + [sy.ravel()]), np.concatenate(xs + [sx.ravel()])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(mathlib.BINARY))
def test_binary_accuracy(kernels, name, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{name}{np.dtype(dtype).name}".encode()))
    a, b = (pow_inputs if name == "pow" else atan2_inputs)(rng, dtype)
    got = kernels(name, dtype, a, b)
    assert_matches(name, dtype, got, reference(name, dtype, a, b), (a, b), tolerance(name, dtype))


# Edge cases spelled out (NumPy semantics), beyond agreeing with the reference.
EDGES = [
    ("exp", [-np.inf, np.inf, 1e4, -1e4], [0.0, np.inf, np.inf, 0.0]),
    ("log", [0.0, -0.0, -1.0, np.inf, 1.0], [-np.inf, -np.inf, np.nan, np.inf, 0.0]),
    ("log1p", [-1.0, -2.0, -0.0, np.inf], [-np.inf, np.nan, -0.0, np.inf]),
    ("expm1", [-np.inf, np.inf, -0.0], [-1.0, np.inf, -0.0]),
    ("tanh", [np.inf, -np.inf, -0.0, 50.0], [1.0, -1.0, -0.0, 1.0]),
    ("logistic", [np.inf, -np.inf, 0.0], [1.0, 0.0, 0.5]),
    ("sin", [np.inf, -np.inf, -0.0], [np.nan, np.nan, -0.0]),
    ("cos", [np.inf, 0.0], [np.nan, 1.0]),
    ("tan", [-np.inf, -0.0], [np.nan, -0.0]),
    ("erf", [np.inf, -np.inf, -0.0], [1.0, -1.0, -0.0]),
    ("rsqrt", [0.0, -0.0, np.inf, -1.0], [np.inf, -np.inf, 0.0, np.nan]),
]
BINARY_EDGES = [
    ("pow", [(0.0, 0.0), (np.nan, 0.0), (1.0, np.nan), (-8.0, 1 / 3), (-2.0, 3.0), (-2.0, 2.0),
             (-0.0, 3.0), (-0.0, -3.0), (0.0, -2.0), (-1.0, np.inf), (0.5, -np.inf),
             (2.0, -np.inf), (-np.inf, 3.0), (-np.inf, -3.0), (-np.inf, 0.5), (np.inf, -1.0),
             (10.0, 400.0), (10.0, -400.0), (-10.0, 401.0)],
     [1.0, 1.0, 1.0, np.nan, -8.0, 4.0, -0.0, -np.inf, np.inf, 1.0, np.inf, 0.0, -np.inf,
      -0.0, np.inf, 0.0, np.inf, 0.0, -np.inf]),
    ("atan2", [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (1.0, 0.0), (-1.0, -0.0),
               (np.inf, np.inf), (-np.inf, -np.inf), (0.0, -1.0), (-0.0, -1.0), (1.0, -np.inf),
               (np.nan, 1.0)],
     [0.0, -0.0, np.pi, -np.pi, np.pi / 2, -np.pi / 2, np.pi / 4, -3 * np.pi / 4, np.pi,
      -np.pi, np.pi, np.nan]),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_edge_cases(kernels, dtype):
    for name, xs, want in EDGES:
        x = np.array(xs, dtype)
        want = np.array(want, dtype)
        got = kernels(name, dtype, x)
        assert_matches(name, dtype, got, want, (x,), 0)
    for name, pairs, want in BINARY_EDGES:
        a, b = (np.array(v, dtype) for v in zip(*pairs))
        want = np.array(want, dtype)
        got = kernels(name, dtype, a, b)
        assert_matches(name, dtype, got, want, (a, b), 0)


def test_trig_stays_bounded_beyond_float64_range(kernels, rng):
    x = np.concatenate([rng.uniform(TRIG_LIMIT64, 1e300, 10000),
                        -np.geomspace(TRIG_LIMIT64, 1e308, 999)])
    for name in ("sin", "cos"):
        got = kernels(name, np.float64, x)
        assert np.all(np.abs(got) <= 1), name
    assert np.all(np.isfinite(kernels("tan", np.float64, x)))
