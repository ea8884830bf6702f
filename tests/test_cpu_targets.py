"""Code generated for several CPUs runs right on this host (issue 14).

- The compiler-runtime routines (codegen/cpu/libcalls.py) against NumPy: every
  float16 bit pattern, float32/float64 -> float16 and bfloat16 rounding, 128-bit
  division, compiled for SSE2-only x86-64, where LLVM calls all of them.
- Undefined symbols: one nobody provides is an error naming it, never a call to 0.
- The CPU matrix (tests/cpu_matrix.py): conversions (float16 and bfloat16 both
  ways), elementwise math, GEMM over awkward shapes, fused and row-fused kernels
  and reductions, the factorisations' kernels, compiled by jx.jit for each CPU
  (JX_CPU) and checked against the reference (eager) result; skipped per CPU
  where this host lacks an extension its code may use.
- CPU names: a mistyped one is a clear error; generic-CPU artifacts record and
  check the extensions they need.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax, nn
from jx.codegen.cpu import libcalls, symbols, target
from jx.codegen.cpu.compiler import JitModule

import cpu_matrix
from transform_harness import random_array

# float64 data and references, as in JAX's own tests with jax_enable_x64
pytestmark = pytest.mark.x64

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------------------
# The compiler-runtime routines, through the calls LLVM makes to them

CONVERSIONS_IR = """
define void @h2f(ptr %src, ptr %dst, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %p = getelementptr half, ptr %src, i64 %i
  %h = load half, ptr %p
  %f = fpext half %h to float
  %q = getelementptr float, ptr %dst, i64 %i
  store float %f, ptr %q
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
""" + "".join(f"""
define void @{name}(ptr %src, ptr %dst, i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %p = getelementptr {src}, ptr %src, i64 %i
  %x = load {src}, ptr %p
  %y = fptrunc {src} %x to {dst}
  %q = getelementptr {dst}, ptr %dst, i64 %i
  store {dst} %y, ptr %q
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
""" for name, src, dst in (("f2h", "float", "half"), ("d2h", "double", "half"),
                           ("f2bf", "float", "bfloat"), ("d2bf", "double", "bfloat"))) + """
define void @div128(ptr %a, ptr %b, ptr %out) {
  %x = load i128, ptr %a
  %y = load i128, ptr %b
  %q = sdiv i128 %x, %y
  %r = srem i128 %x, %y
  %uq = udiv i128 %x, %y
  %ur = urem i128 %x, %y
  store i128 %q, ptr %out
  %o1 = getelementptr i128, ptr %out, i64 1
  store i128 %r, ptr %o1
  %o2 = getelementptr i128, ptr %out, i64 2
  store i128 %uq, ptr %o2
  %o3 = getelementptr i128, ptr %out, i64 3
  store i128 %ur, ptr %o3
  ret void
}
"""

_LOOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


@pytest.fixture(scope="module", params=["x86-64", "x86-64-v3", "native"])
def conversions(request):
    cpu = cpu_matrix.runnable(request.param)
    jm = JitModule(CONVERSIONS_IR, cpu)

    def run(name, x, out_dtype):
        x = np.ascontiguousarray(x)
        out = np.zeros(x.shape, out_dtype)
        _LOOP(jm.address(name))(x.ctypes.data, out.ctypes.data, x.size)
        return out
    run.module = jm
    return run


def _float_cases(rng, dtype):
    """Random values over the whole range, values near float16/bfloat16 ties,
    subnormals, overflow edges and specials."""
    info = np.finfo(dtype)
    wide = np.frombuffer(rng.bytes(20000 * info.bits // 8), dtype=dtype)    # any bits
    small = rng.standard_normal(20000).astype(dtype) * np.asarray(
        rng.choice([1e-8, 1e-6, 6e-5, 1e-3, 1, 1e3, 6e4, 1e5]), dtype)
    # exact halfway points between float16 neighbours, and a hair either side
    halves = np.arange(-2048, 2048, dtype=np.float16).astype(np.float64)
    ties = (halves[:-1] + halves[1:]) / 2
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.99, 65520, 65536,
                      2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0000001, 2.0 ** -26,
                      2.0 ** -14, 2.0 ** -14 * (1 - 2 ** -11), 1 + 2 ** -11 + 2 ** -40,
                      3.4e38, 1e39, 1e-40, 1e-46])
    extra = np.concatenate([ties, np.nextafter(ties, np.inf), np.nextafter(ties, -np.inf),
                            edges])
    with np.errstate(over="ignore"):
        return np.concatenate([wide, small, extra.astype(dtype)])


def _same(got, want):
    """Bitwise equality, any NaN matching any NaN."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan)
    assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16)), \
        (got[~nan][got[~nan].view(np.uint16) != want[~nan].view(np.uint16)][:5],
         want[~nan][got[~nan].view(np.uint16) != want[~nan].view(np.uint16)][:5])


def test_every_float16_widens_exactly(conversions):
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    got = conversions("h2f", h, np.float32)
    want = h.astype(np.float32)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_narrowing_to_float16_rounds_once_to_nearest_even(conversions, dtype):
    x = _float_cases(np.random.default_rng(11), dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16)        # NumPy rounds float64 -> float16 directly
    got = conversions("f2h" if dtype == np.float32 else "d2h", x, np.float16)
    _same(got, want)


def _bf16_reference(x):
    """float64 -> bfloat16 in one rounding to nearest even, with integers: keep the
    top 8 significant bits of the double (values in bfloat16's normal range)."""
    bits = x.view(np.uint64)
    lsb = (bits >> np.uint64(45)) & np.uint64(1)
    bits = (bits + np.uint64((1 << 44) - 1) + lsb) & ~np.uint64((1 << 45) - 1)
    return bits.view(np.float64).astype(np.float32).astype(BF16)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_narrowing_to_bfloat16(conversions, dtype):
    rng = np.random.default_rng(12)
    x = (rng.standard_normal(50000) * 10.0 ** rng.integers(-30, 30, 50000)).astype(dtype)
    # exact ties between bfloat16 neighbours, and just either side
    grid = np.arange(1, 4, 2 ** -7, dtype=np.float64)
    ties = ((grid[:-1] + grid[1:]) / 2).astype(dtype)
    x = np.concatenate([x, ties, np.nextafter(ties, dtype(np.inf)),
                        np.nextafter(ties, dtype(-np.inf))])
    got = conversions("f2bf" if dtype == np.float32 else "d2bf", x, BF16)
    want = x.astype(BF16) if dtype == np.float32 else _bf16_reference(x.astype(np.float64))
    _same(got, want)
    nan = conversions("d2bf", np.array([np.nan, -np.inf, np.inf]), BF16)
    assert np.isnan(nan[0].astype(np.float32)) and list(nan[1:].astype(np.float32)) == \
        [-np.inf, np.inf]


def test_128_bit_division(conversions):
    rng = np.random.default_rng(13)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
        conversions.module.address("div128"))
    bufs = [ctypes.create_string_buffer(16 * k) for k in (1, 1, 4)]
    cases = [(7, 2), (-7, 2), (7, -2), (-7, -2), (2 ** 127 - 1, 3), (-2 ** 127, 7),
             (-2 ** 127, -1 + 2 ** 64), (1, 2 ** 100), (2 ** 100 + 12345, 2 ** 40 + 1)]
    cases += [(int(rng.integers(-2 ** 62, 2 ** 62)) * int(rng.integers(1, 2 ** 62)),
               int(rng.integers(1, 2 ** 62)) * (-1) ** k) for k in range(200)]
    for x, y in cases:
        bufs[0].raw = (x % 2 ** 128).to_bytes(16, "little")
        bufs[1].raw = (y % 2 ** 128).to_bytes(16, "little")
        fn(*[ctypes.addressof(b) for b in bufs])
        raw = bufs[2].raw
        q, r, uq, ur = (int.from_bytes(raw[16 * i:16 * i + 16], "little", signed=i < 2)
                        for i in range(4))
        tq = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)      # C: truncating
        assert (q, r) == (tq, x - tq * y), (x, y)
        ux, uy = x % 2 ** 128, y % 2 ** 128
        assert (uq, ur) == (ux // uy, ux % uy), (x, y)


def test_libcalls_module_needs_nothing_itself():
    from jx.codegen.cpu.compiler import emit_object
    from jx.codegen.cpu.objsyms import global_symbols
    for cpu in ("x86-64", "x86-64-v3", "znver4", "sapphirerapids"):
        defined, undefined = global_symbols(emit_object(libcalls.module_ir(), cpu))
        assert undefined == set(), (cpu, undefined)
        assert defined == set(libcalls.names())


# ---------------------------------------------------------------------------
# Undefined symbols

MISSING_IR = """
declare double @jx_test_no_such_function(double)
define double @f(double %x) {
  %y = call double @jx_test_no_such_function(double %x)
  ret double %y
}
"""


def test_an_unresolvable_symbol_is_an_error_naming_it():
    with pytest.raises(symbols.UnresolvedSymbolError, match="jx_test_no_such_function"):
        JitModule(MISSING_IR)
    from jx.codegen.cpu.compiler import emit_object
    with pytest.raises(symbols.UnresolvedSymbolError, match="jx_test_no_such_function"):
        symbols.check(emit_object(MISSING_IR), symbols.for_artifact(frozenset()), "test")


def test_a_c_library_function_resolves():
    assert symbols.in_c_library("fmod") and symbols.in_c_library("memcpy")
    assert not symbols.in_c_library("__truncdfhf2")      # libgcc's, never assumed


# ---------------------------------------------------------------------------
# The CPU matrix, through jx.jit

@pytest.fixture(params=cpu_matrix.MATRIX)
def jit_cpu(request, monkeypatch):
    cpu = cpu_matrix.runnable(request.param)
    monkeypatch.setenv("JX_CPU", request.param)
    assert target.jit_cpu() == cpu
    return cpu


def _check(f, *args, rtol=2e-6, atol=0.0, exact=False):
    """jx.jit(f) against f run eagerly (the reference): bit-exact for integers and
    for conversions, else within rtol (16-bit floats: a fused chain rounds once,
    the reference after every operation)."""
    got = jx.jit(f)(*args)
    want = f(*args)
    for g, w in zip(jx.tree_util.tree_leaves(got), jx.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if exact or w.dtype.kind in "biu":
            assert np.array_equal(g.astype(np.float64), w.astype(np.float64), equal_nan=True)
        else:
            tol = max(rtol, 4e-3) if w.dtype.itemsize == 2 else rtol
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol,
                                       atol=atol)


CONVERT_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "uint8", "bool")


def test_matrix_conversions(jit_cpu):
    rng = np.random.default_rng(21)
    for src in CONVERT_DTYPES:
        x = random_array(rng, (203,), BF16 if src == "bfloat16" else src)
        if src in ("float32", "float64"):
            x = np.concatenate([x * 1e3, np.array([np.nan, np.inf, -np.inf, 6e4, 65520,
                                                   1 + 2 ** -11 + 2 ** -40, 3e-8],
                                                  dtype=src)])

        def f(v):
            return [lax.convert_element_type(v, BF16 if d == "bfloat16" else d)
                    for d in CONVERT_DTYPES]
        with np.errstate(all="ignore"):
            _check(f, x, exact=True)


def test_matrix_elementwise_math(jit_cpu):
    rng = np.random.default_rng(22)
    for dt in ("float32", "float64"):
        x = rng.uniform(-3, 3, (1031,)).astype(dt)

        def f(v):
            return (jnp.exp(v) * jnp.tanh(v) + jnp.log1p(v * v), jnp.sin(v) / (1 + jnp.cos(v) ** 2),
                    nn.sigmoid(v) - jnp.sqrt(jnp.abs(v)), jnp.floor(v * 2.5), jnp.round(v))
        _check(f, x, rtol=1e-5 if dt == "float32" else 1e-12, atol=1e-6)
    h = rng.uniform(-3, 3, (517,)).astype(np.float16)
    _check(lambda v: jnp.exp(v) + v * 3, h, atol=1e-2)   # cancellation near -0.2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matrix_gemm_awkward_shapes(jit_cpu, dtype):
    rng = np.random.default_rng(23)
    tol = 2e-5 if dtype == "float32" else 1e-12
    for m, k, n in [(1, 1, 1), (7, 13, 5), (67, 45, 33), (129, 257, 65), (3, 700, 17),
                    (200, 3, 300)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        got = np.asarray(jx.jit(lambda x, y: x @ y)(a, b))
        np.testing.assert_allclose(got, a @ b, rtol=tol, atol=tol * np.sqrt(k))
        got = np.asarray(jx.jit(lambda x, y: x.T @ y)(np.ascontiguousarray(a.T), b))
        np.testing.assert_allclose(got, a @ b, rtol=tol, atol=tol * np.sqrt(k))
    a = rng.standard_normal((4, 33, 21)).astype(dtype)
    b = rng.standard_normal((4, 21, 19)).astype(dtype)
    got = np.asarray(jx.jit(lambda x, y: jnp.tanh(jnp.einsum("bij,bjk->bik", x, y)))(a, b))
    np.testing.assert_allclose(got, np.tanh(a @ b), rtol=tol, atol=tol * 10)


def test_matrix_fused_and_row_fused(jit_cpu):
    rng = np.random.default_rng(24)
    x = rng.standard_normal((37, 129)).astype(np.float32)
    g = rng.standard_normal(129).astype(np.float32)

    def layernorm(v, gamma):
        mu = jnp.mean(v, -1, keepdims=True)
        var = jnp.mean((v - mu) ** 2, -1, keepdims=True)
        return (v - mu) * lax.rsqrt(var + 1e-5) * gamma

    _check(lambda v: nn.softmax(v, axis=-1), x, atol=1e-7)
    _check(layernorm, x, g, rtol=1e-5, atol=1e-5)
    _check(lambda v: jnp.maximum(v, 0) * 2 + jnp.exp(-v * v), x, atol=1e-7)


def test_matrix_reductions(jit_cpu):
    rng = np.random.default_rng(25)
    for dt in ("float32", "float64", "int32"):
        x = random_array(rng, (33, 65), dt)
        _check(lambda v: (jnp.sum(v, 0), jnp.max(v, 1), jnp.min(v), jnp.argmax(v, axis=1),
                          jnp.argmin(v, axis=0)), x, rtol=1e-5)
    h = random_array(rng, (300,), "float16")
    _check(lambda v: jnp.sum(v.astype(jnp.float32)), h, rtol=1e-5)


def test_matrix_factorisations(jit_cpu):
    """The decomposition kernels (tests/test_linalg_accuracy.py has their accuracy):
    Cholesky unrolled (5) and looped (37), triangular solves by axpys and by dot
    products, LU and QR of tall matrices, and a blocked QR (its Householder panels)."""
    rng = np.random.default_rng(27)
    g = rng.standard_normal((2, 37, 37))
    spd = g @ np.swapaxes(g, -1, -2) / 37 + np.eye(37)
    b = rng.standard_normal((2, 37, 3))
    x = rng.standard_normal((2, 70, 66))

    def f(s, a, rhs, tall):
        L = lax.linalg.cholesky(s)
        return (lax.linalg.cholesky(s[:, :5, :5]), L,
                lax.linalg.triangular_solve(L, rhs, left_side=True, lower=True),
                lax.linalg.triangular_solve(L, jnp.swapaxes(rhs, 1, 2), lower=True,
                                            transpose_a=True),
                lax.linalg.lu(a[:, :, :29]), lax.linalg.qr(a[:, :, :29]),
                lax.linalg.qr(tall, full_matrices=False))
    _check(f, spd, g, b, x, rtol=1e-10, atol=1e-13)


def test_matrix_symbolic_sizes(jit_cpu):
    """One compilation with a symbolic batch (run-time loop bounds, GEMM blocking
    and streamed rows, reductions over it) at sizes crossing every vector tail."""
    rng = np.random.default_rng(26)
    w = rng.standard_normal((37, 19)).astype(np.float32)

    def f(x):
        h = jnp.tanh(x @ w)
        return h, x.T @ h, nn.softmax(h, axis=0), jnp.sum(x, axis=0), jnp.cumsum(x[::-1], 0)
    sym = jx.jit(f, abstracted_axes=({0: "B"},))
    for b in (1, 2, 3, 9, 17, 64, 131):
        x = rng.standard_normal((b, 37)).astype(np.float32)
        for g, want in zip(sym(x), f(x)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=3e-5, atol=3e-5)
    assert len(sym._cache) == 1


# ---------------------------------------------------------------------------
# CPU names and artifacts

def test_unknown_cpu_names_are_clear_errors(monkeypatch):
    with pytest.raises(target.UnknownCpuError, match="'skylakee'.*x86-64-v3"):
        target.check_cpu("skylakee")
    with pytest.raises(target.UnknownCpuError, match="i686"):
        target.check_cpu("i686")              # 32-bit only: LLVM would abort
    monkeypatch.setenv("JX_CPU", "zen4")
    with pytest.raises(target.UnknownCpuError, match="JX_CPU= 'zen4'"):
        jx.jit(lambda x: x + 1)(np.ones(3, np.float32))
    assert target.check_cpu("native") == target.host_cpu()
    foreign = next((c for c in cpu_matrix.MATRIX[1:] if target.runnable_here(c)), None)
    if foreign:
        monkeypatch.setenv("JX_CPU", foreign)
        with pytest.raises(target.UnknownCpuError, match="runs its code on this host"):
            jx.jit(lambda x: x + 2)(np.ones(3, np.float32))


def test_cli_rejects_a_mistyped_cpu(tmp_path):
    model = os.path.join(os.path.dirname(__file__), "..", "samples", "mlp.py")
    proc = subprocess.run([sys.executable, "-m", "jx.cli", "compile", model, "--cpu",
                           "haswel", "-o", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "'haswel' is not a 64-bit x86 CPU" in proc.stderr and "haswell" in proc.stderr
    assert "LLVM ERROR" not in proc.stderr and "Traceback" not in proc.stderr
    assert not list(tmp_path.iterdir())


def test_generic_cpu_artifacts_record_and_check_their_extensions(tmp_path):
    model = os.path.join(os.path.dirname(__file__), "..", "samples", "mlp.py")
    out = tmp_path / "v3"
    subprocess.run([sys.executable, "-m", "jx.cli", "compile", model, "--cpu", "x86-64-v3",
                    "-o", str(out)], check=True, capture_output=True)
    from jx import runtime
    lib = runtime.load(str(out / "libmlp.so"))
    assert lib.manifest["cpu"] == "x86-64-v3"
    assert {"avx2", "fma", "f16c"} <= set(lib.manifest["cpu_features"])
    assert "avx512f" not in lib.manifest["cpu_features"]
    assert target.runnable_here("sapphirerapids") or "avx512fp16" in target.host_features()


def test_caches_are_keyed_by_what_codegen_reads_from_the_host(tmp_path, monkeypatch):
    """A cache directory shared by hosts (NFS home, a baked image) must not hand one
    host's code to another: the GEMM's blocking comes from the host's cache sizes and
    L1 geometry, and a host build uses the host's exact feature set, which a VM can
    cut below what its CPU name implies (same name, no AVX-512)."""
    from jx.cli.compile import compile_model
    from jx.codegen.cpu import compiler
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path / "cache"))
    model = os.path.join(os.path.dirname(__file__), "..", "samples", "mlp.py")

    def build(out):
        return compile_model(model, str(tmp_path / out), ("predict",), (), "cpu", None, None)
    first = build("a")
    assert build("b")["cache_hit"]
    monkeypatch.setattr(target, "cache_sizes", lambda: {1: 48 << 10, 2: 2 << 20, 3: 4 << 20})
    other = build("c")
    assert not other["cache_hit"] and other["sha256"] != first["sha256"]
    sets, ways = target.l1_geometry()          # another geometry than this host's
    monkeypatch.setattr(target, "l1_geometry", lambda: (sets, 8 if ways != 8 else 12))
    assert not build("d")["cache_hit"]

    ir_text = "define i32 @f(i32 %x) {\n  ret i32 %x\n}\n"
    cpu, triple = target.host_cpu(), target.host_triple()
    assert not compiler.cached_object(ir_text, cpu, triple)[1]
    assert compiler.cached_object(ir_text, cpu, triple)[1]
    host = compiler.llvm_features
    monkeypatch.setattr(compiler, "llvm_features", lambda c: host(c) + ",-avx512f")
    assert not compiler.cached_object(ir_text, cpu, triple)[1]


def test_a_cpu_llvm_knows_but_the_table_does_not_is_refused():
    """`skylake_avx512` (LLVM's alias) builds AVX-512 code; accepted, its manifest
    listed no extensions and the loader would have run it on any x86-64 CPU."""
    for name in ("skylake_avx512",):
        assert target._llvm_accepts(name)
        with pytest.raises(target.UnknownCpuError, match="cannot tell which"):
            target.check_cpu(name)
