"""64-bit mode as JAX's (jax_enable_x64) and the flags of jx.config.

Each dtype case is one small program written against a module `m` with JAX's
names (m.numpy, m.lax, m.random, m.jit): run on jx, its dtype, weak type and
warning are checked against the table here in both modes, and against JAX itself
where JAX is installed.
"""
import contextlib
import itertools
import logging
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import flags

F32, F64, I32, I64, U32, U64 = "float32", "float64", "int32", "int64", "uint32", "uint64"

# (label, program, dtype with x64 off, dtype with x64 on, warns with x64 off)
CASES = [
    ("asarray(float64 data)", lambda m: m.numpy.asarray(np.ones(3)), F32, F64, False),
    ("asarray(int64 data)", lambda m: m.numpy.asarray(np.ones(3, np.int64)), I32, I64, False),
    ("asarray(uint64 data)", lambda m: m.numpy.asarray(np.ones(3, np.uint64)), U32, U64, False),
    ("zeros(3, float64)", lambda m: m.numpy.zeros(3, m.numpy.float64), F32, F64, True),
    ("zeros(3, 'float64')", lambda m: m.numpy.zeros(3, "float64"), F32, F64, True),
    ("zeros(3, float)", lambda m: m.numpy.zeros(3, float), F32, F64, False),
    ("zeros(3, int)", lambda m: m.numpy.zeros(3, int), I32, I64, False),
    ("zeros(3)", lambda m: m.numpy.zeros(3), F32, F64, False),
    ("arange(3)", lambda m: m.numpy.arange(3), I32, I64, False),
    ("arange(3.0)", lambda m: m.numpy.arange(3.0), F32, F64, False),
    ("linspace(0, 1, 3)", lambda m: m.numpy.linspace(0, 1, 3), F32, F64, False),
    ("array(1.0)", lambda m: m.numpy.array(1.0), F32, F64, False),
    ("array([1.5, 2])", lambda m: m.numpy.array([1.5, 2]), F32, F64, False),
    ("array(np.float64(2))", lambda m: m.numpy.array(np.float64(2)), F32, F64, False),
    ("asarray(f64 data, dtype=float64)",
     lambda m: m.numpy.asarray(np.ones(3), dtype=m.numpy.float64), F32, F64, True),
    ("x.astype(float64)", lambda m: m.numpy.ones(3).astype(m.numpy.float64), F32, F64, True),
    ("x.astype(int64)", lambda m: m.numpy.ones(3).astype(m.numpy.int64), I32, I64, True),
    ("jnp.float64(1)", lambda m: m.numpy.float64(1), F32, F64, True),
    ("jnp.int64(1)", lambda m: m.numpy.int64(1), I32, I64, True),
    ("ones + np.float64(1)", lambda m: m.numpy.ones(3) + np.float64(1), F32, F64, False),
    ("ones + float64 data", lambda m: m.numpy.ones(3) + np.ones(3), F32, F64, False),
    ("ones(f16) + float64 data",
     lambda m: m.numpy.ones(3, m.numpy.float16) + np.ones(3), F32, F64, False),
    ("ones(f16) * 2.0", lambda m: m.numpy.ones(3, m.numpy.float16) * 2.0,
     "float16", "float16", False),
    ("sin(float64 data)", lambda m: m.numpy.sin(np.ones(3)), F32, F64, False),
    ("jit(f)(float64 data)", lambda m: m.jit(lambda x: x * 2)(np.ones(3)), F32, F64, False),
    ("jit(f)(2.0)", lambda m: m.jit(lambda x: x * 2)(2.0), F32, F64, False),
    ("jit(f)(2.0) * f16", lambda m: m.jit(lambda x: x * m.numpy.ones(2, m.numpy.float16))(2.0),
     "float16", "float16", False),
    ("lax.convert_element_type(x, float64)",
     lambda m: m.lax.convert_element_type(m.numpy.ones(3), m.numpy.float64), F32, F64, True),
    ("sum(x, dtype=float64)", lambda m: m.numpy.sum(m.numpy.ones(3), dtype=m.numpy.float64),
     F32, F64, True),
    ("random.normal(key, dtype=float64)",
     lambda m: m.random.normal(m.random.PRNGKey(0), (2,), m.numpy.float64), F32, F64, True),
    ("random.normal(key)", lambda m: m.random.normal(m.random.PRNGKey(0), (2,)), F32, F64,
     False),
    ("random.randint(key)", lambda m: m.random.randint(m.random.PRNGKey(0), (2,), 0, 9), I32,
     I64, False),
    ("int32 + uint32", lambda m: m.numpy.ones(3, m.numpy.int32) + m.numpy.ones(3, m.numpy.uint32),
     I32, I64, False),
    ("full(3, 1.5, dtype=float64)", lambda m: m.numpy.full(3, 1.5, m.numpy.float64), F32, F64,
     True),
    ("eye(3, dtype=float64)", lambda m: m.numpy.eye(3, dtype=m.numpy.float64), F32, F64, True),
    ("mean(arange(3))", lambda m: m.numpy.mean(m.numpy.arange(3)), F32, F64, False),
    ("argmax(arange(3))", lambda m: m.numpy.argmax(m.numpy.arange(3)), I32, I64, False),
    ("sum(bool)", lambda m: m.numpy.sum(m.numpy.ones(3, bool)), I32, I64, False),
    ("sum(uint8)", lambda m: m.numpy.sum(m.numpy.ones(3, m.numpy.uint8)), U32, U64, False),
    ("cumsum(int8)", lambda m: m.numpy.cumsum(m.numpy.ones(3, m.numpy.int8)), "int8", "int8",
     False),
    ("1 / 2 ** arange(1, 9)", lambda m: 1 / 2 ** m.numpy.arange(1, 9), F32, F64, False),
    # integers up to 32 bits compute in float32 in either mode, 64-bit ones in float64
    ("sin(int32)", lambda m: m.numpy.sin(m.numpy.ones(3, m.numpy.int32)), F32, F32, False),
    ("mean(bool)", lambda m: m.numpy.mean(m.numpy.ones(3, bool)), F32, F32, False),
    ("int16 / int16", lambda m: m.numpy.ones(3, m.numpy.int16) / m.numpy.ones(3, m.numpy.int16),
     F32, F32, False),
    ("sqrt(int64 data)", lambda m: m.numpy.sqrt(np.ones(3, np.int64)), F32, F64, False),
    ("sin(2)", lambda m: m.numpy.sin(2), F32, F64, False),
    ("x.view(int64)", lambda m: m.numpy.ones(4).view(m.numpy.int64), I32, I64, True),
    ("result_type(float)", lambda m: m.numpy.zeros(1, m.numpy.result_type(float)), F32, F64,
     False),
]


@contextlib.contextmanager
def x64_mode(on: bool, jax=None):
    with contextlib.ExitStack() as stack:
        stack.enter_context(jx.enable_x64(on))
        if jax is not None:
            stack.enter_context(jax.enable_x64(on))
        yield


def _run(program, m):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = program(m)
    return str(np.dtype(out.dtype)), any("Explicitly requested dtype" in str(w.message)
                                          for w in caught)


@pytest.mark.parametrize("x64", [False, True], ids=["x64_off", "x64_on"])
@pytest.mark.parametrize("label,program,want32,want64,warns", CASES, ids=[c[0] for c in CASES])
def test_dtypes_of_programs(label, program, want32, want64, warns, x64):
    with x64_mode(x64):
        got, warned = _run(program, jx)
    assert got == (want64 if x64 else want32), label
    assert warned == (warns and not x64), label


def test_dtypes_match_jax():
    jax = pytest.importorskip("jax")
    problems = []
    for x64 in (False, True):
        for label, program, *_ in CASES:
            with x64_mode(x64, jax):
                want = _run(program, jax)
                got = _run(program, jx)
            if got != want:
                problems.append(f"x64={x64} {label}: jx {got}, JAX {want}")
    assert not problems, "\n".join(problems)


def test_warning_names_the_users_line_and_the_function():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jnp.zeros(3, jnp.float64)          # this line
    (w,) = caught
    assert w.filename == __file__
    assert "requested in zeros" in str(w.message) and "jax_enable_x64" in str(w.message)


def test_python_ints_out_of_int32_range_overflow_as_in_jax():
    with pytest.raises(OverflowError, match="2147483648"):
        jnp.array(2**31)
    with pytest.raises(OverflowError):
        jnp.ones(3, jnp.int32) + 2**40
    with pytest.raises(OverflowError):
        jx.jit(lambda x: x * 2)(2**40)
    with jx.enable_x64():
        assert jnp.array(2**40).dtype == np.int64
        assert int(jx.jit(lambda x: x * 2)(2**40)) == 2**41


def test_values_follow_the_mode():
    """Not only dtypes: float64 data computed in 32-bit mode rounds to float32."""
    x = np.array([16777217.0, 0.1])
    got = np.asarray(jnp.asarray(x) * 1)
    np.testing.assert_array_equal(got, x.astype(np.float32))
    with jx.enable_x64():
        np.testing.assert_array_equal(np.asarray(jnp.asarray(x) * 1), x)
        got = np.asarray(jx.jit(lambda v: v * 3)(x))
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, x * 3)


def test_jit_caches_key_on_the_mode():
    f = jx.jit(lambda x: x + 1.0)
    x = np.arange(3.0)
    assert f(x).dtype == np.float32
    with jx.enable_x64():
        assert f(x).dtype == np.float64
        assert f(2.0).dtype == np.float64
    assert f(x).dtype == np.float32 and f(2.0).dtype == np.float32


def test_jit_python_scalars_are_weak():
    f = jx.jit(lambda s, h: s * h)
    h = jnp.ones(3, jnp.float16)
    assert f(2.0, h).dtype == np.float16          # JAX: the weak scalar takes f16
    assert f(np.float32(2.0), h).dtype == np.float32


def test_spec_of_float64_compiles_as_float64_in_either_mode():
    def model(x, n):
        return jnp.sum(x * 0.5 + jnp.ones(n.shape)) + jnp.zeros(()) + n.astype(x.dtype)[0]
    assert not jx.config.jax_enable_x64
    g = jx.make_graph(model)(jx.f64[4], jx.i64[1])
    assert [a.dtype for a in g.out_avals] == [np.float64]
    g32 = jx.make_graph(model)(jx.f32[4], jx.i32[1])
    assert [a.dtype for a in g32.out_avals] == [np.float32]
    assert not jx.config.jax_enable_x64          # the mode is back as it was


def test_config_update_read_and_attributes():
    assert jx.config.read("jax_enable_x64") is False
    jx.config.update("jax_enable_x64", True)
    try:
        assert jx.config.jax_enable_x64 is True and jx.config.x64_enabled
        assert jnp.zeros(2).dtype == np.float64
    finally:
        jx.config.update("jax_enable_x64", False)
    assert jnp.zeros(2).dtype == np.float32
    for name, value in [("jax_platform_name", "cpu"), ("jax_default_matmul_precision", "highest"),
                        ("jax_traceback_filtering", "off"), ("jax_check_tracer_leaks", False)]:
        old = jx.config.read(name)
        jx.config.update(name, value)
        assert jx.config.read(name) == value
        jx.config.update(name, old)


def test_unknown_flag_and_bad_values_are_errors_naming_them():
    with pytest.raises(AttributeError, match="jax_enable_x65.*did you mean 'jax_enable_x64'"):
        jx.config.update("jax_enable_x65", True)
    with pytest.raises(AttributeError, match="jax_no_such_flag"):
        jx.config.read("jax_no_such_flag")
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion.*'bogus'"):
        jx.config.update("jax_numpy_rank_promotion", "bogus")
    with pytest.raises(ValueError, match="'tpu'"):
        jx.config.update("jax_platforms", "tpu")
    with pytest.raises(ValueError, match="jax_enable_x64 takes True or False"):
        jx.config.update("jax_enable_x64", "maybe")
    with pytest.raises(ValueError, match="threefry2x32"):
        jx.config.update("jax_default_prng_impl", "rbg")
    assert jx.config.jax_numpy_rank_promotion == "allow"


def test_context_managers_restore_on_exit_and_on_error():
    with pytest.raises(RuntimeError):
        with jx.enable_x64():
            assert jnp.arange(2).dtype == np.int64
            raise RuntimeError
    assert jnp.arange(2).dtype == np.int32
    with jx.experimental.enable_x64():
        with jx.experimental.disable_x64():
            assert jnp.arange(2).dtype == np.int32
        assert jnp.arange(2).dtype == np.int64


@pytest.mark.parametrize("value,want", [("1", "float64"), ("true", "float64"), ("0", "float32")])
def test_environment_variable(value, want):
    code = "import jx, jx.numpy as jnp; print(jnp.zeros(1).dtype, jx.config.jax_enable_x64)"
    env = dict(os.environ, JAX_ENABLE_X64=value)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == want


def test_debug_nans_names_the_primitive_and_the_line():
    def f(x):
        y = jnp.log(x)                       # the NaN comes from here
        return y * 2

    x = np.array([-1.0, 2.0], np.float32)
    assert np.isnan(np.asarray(jx.jit(f)(x))[0])      # off: NaNs flow
    with jx.debug_nans():
        with pytest.raises(FloatingPointError, match=r"nan.*log.*test_x64_mode.py:\d+"):
            jx.jit(f)(x)
        with pytest.raises(FloatingPointError, match="log"):
            jnp.log(jnp.asarray(x))
        good = jx.jit(f)(np.array([2.0], np.float32))
        np.testing.assert_allclose(np.asarray(good), 2 * np.log(2.0), rtol=1e-6)
    with jx.debug_infs():
        with pytest.raises(FloatingPointError, match="inf"):
            jnp.asarray(x) / 0.0


def test_disable_jit_runs_python():
    seen = []

    def body(i, c):
        seen.append(type(i))                 # concrete: a Python loop index
        return c + i

    def f(x):
        seen.append(float(x[0]))             # concrete inside "jit"
        return x * 2

    with jx.disable_jit():
        np.testing.assert_array_equal(np.asarray(jx.jit(f)(jnp.ones(2))), [2.0, 2.0])
        assert jx.lax.fori_loop(0, 3, body, 0) == 3
        c, ys = jx.lax.scan(lambda c, x: (c + x, c * x), 0.0, jnp.arange(4.0))
        assert float(c) == 6.0 and np.asarray(ys).tolist() == [0.0, 0.0, 2.0, 9.0]
        c, ys = jx.lax.scan(lambda c, x: (c + x, c), 0.0, jnp.arange(3.0), reverse=True)
        assert np.asarray(ys).tolist() == [3.0, 2.0, 0.0]
        assert jx.lax.cond(True, lambda: 1, lambda: 2) == 1
        assert jx.lax.switch(7, [lambda: 0, lambda: 1]) == 1
        assert jx.lax.while_loop(lambda c: c < 5, lambda c: c + 2, 0) == 6
        np.testing.assert_array_equal(np.asarray(jx.lax.map(lambda v: v * 2, jnp.arange(3))),
                                      [0, 2, 4])
    assert seen == [1.0, int, int, int]
    # jit again compiles: the function sees tracers, no Python float() of them
    with pytest.raises(TypeError):
        jx.jit(f)(jnp.ones(2))


def test_numpy_rank_promotion():
    a, b = jnp.ones((2, 3)), jnp.ones(3)
    with jx.numpy_rank_promotion("raise"):
        assert (a + 1.0).shape == (2, 3) and (a + jnp.float32(1)).shape == (2, 3)
        with pytest.raises(ValueError, match=r"\(2, 3\) \(3,\).*rank_promotion='raise'"):
            a + b
        with pytest.raises(ValueError):
            jx.jit(lambda u, v: u * v)(a, b)
    with jx.numpy_rank_promotion("warn"):
        with pytest.warns(UserWarning, match="rank promotion"):
            a * b
    assert (a + b).shape == (2, 3)


def test_numpy_dtype_promotion_strict():
    with jx.numpy_dtype_promotion("strict"):
        assert (jnp.ones(3) + 2).dtype == np.float32       # weak scalars still promote
        with pytest.raises(TypeError, match="int32.*float32|float32.*int32"):
            jnp.ones(3) + jnp.ones(3, jnp.int32)
    assert (jnp.ones(3) + jnp.ones(3, jnp.int32)).dtype == np.float32


def test_log_compiles(caplog):
    f = jx.jit(lambda x: x - 1)
    with jx.log_compiles(), caplog.at_level(logging.WARNING, logger="jx"):
        f(np.ones(2, np.float32))
        f(np.ones(2, np.float32))                # cached: no second message
    msgs = [r.getMessage() for r in caplog.records if "Compiling" in r.getMessage()]
    assert len(msgs) == 1 and "f32[2]" in msgs[0]


def test_flags_with_a_meaning_take_effect(tmp_path):
    old = jx.device_count()
    jx.config.update("jax_num_cpu_devices", 3)
    try:
        assert jx.device_count() == 3
    finally:
        jx.config.update("jax_num_cpu_devices", -1)
    assert jx.device_count() == old
    from jx.runtime import store
    jx.config.update("jax_compilation_cache_dir", str(tmp_path))
    try:
        assert store.cache_dir() == str(tmp_path)
    finally:
        jx.config.update("jax_compilation_cache_dir", None)
    assert store.cache_dir() != str(tmp_path)
    jx.config.update("jax_platforms", "cpu")
    try:
        assert isinstance(jx.jit(lambda x: x)(np.ones(1)), jx.Array)
    finally:
        jx.config.update("jax_platforms", None)


def test_state_is_the_flags_values():
    assert flags.STATE.mode == (jx.config.jax_enable_x64, jx.config.jax_numpy_rank_promotion,
                                jx.config.jax_numpy_dtype_promotion)


def test_transformations_take_numpy_data_in_the_modes_dtypes():
    x = np.linspace(0.5, 1.5, 3)                        # float64 data
    f = lambda v: jnp.sum(jnp.sin(v) * v)               # noqa: E731
    want = np.cos(x) * x + np.sin(x)
    for x64, dt, tol in ((False, np.float32, 1e-6), (True, np.float64, 1e-12)):
        with jx.enable_x64(x64):
            results = [jx.grad(f)(x), jx.value_and_grad(f)(x)[1], jx.jacfwd(f)(x),
                       jx.jacrev(f)(x), jx.vjp(f, x)[1](np.float64(1.0))[0],
                       jx.jvp(f, (x,), (np.ones(3),))[1], jx.vmap(jx.grad(f))(x[None])[0],
                       jx.hessian(f)(x).diagonal(), jx.linearize(f, x)[1](np.ones(3))]
            for r in results[:7]:
                assert np.asarray(r).dtype == dt
            for r in results[:5] + [results[6]]:
                np.testing.assert_allclose(np.asarray(r), want, rtol=tol)
            np.testing.assert_allclose(float(results[5]), want.sum(), rtol=tol * 10)


def test_dtype_helpers_of_jx_numpy():
    assert jnp.dtype("float64") == np.float64 and jnp.dtype(jnp.float32) == np.float32
    assert jnp.finfo(jnp.float32).eps == np.finfo(np.float32).eps
    assert jnp.finfo(jnp.float64).bits == 64                 # info, not data: no narrowing
    assert jnp.iinfo(jnp.int8).min == -128
    assert jnp.issubdtype(jnp.float32, jnp.floating)
    assert jnp.issubdtype(jnp.zeros(2).dtype, jnp.inexact)
    assert not jnp.issubdtype(jnp.arange(2).dtype, jnp.floating)


PROMOTION_KINDS = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                   "int64", "float16", "bfloat16", "float32", "float64"]
PROMOTION_SCALARS = {"True": True, "2": 2, "2.5": 2.5}


def _promoted(m, a: str, b: str) -> str:
    """The dtype (and * when weak) of a + b on module m's numpy, for array dtypes and
    Python scalars (bool pairs: logical_or)."""
    def operand(name):
        if name in PROMOTION_SCALARS:
            return PROMOTION_SCALARS[name]
        if name == "bfloat16":
            import ml_dtypes
            return np.zeros(2, ml_dtypes.bfloat16)
        return np.zeros(2, name)
    both_bool = a in ("True", "bool") and b in ("True", "bool")
    r = (m.numpy.logical_or if both_bool else m.numpy.add)(operand(a), operand(b))
    weak = getattr(r, "weak_type", None)
    if weak is None:                               # JAX's arrays keep it on the aval
        weak = r.aval.weak_type
    return str(r.dtype) + ("*" if weak else "")


@pytest.mark.parametrize("x64", [False, True], ids=["x64_off", "x64_on"])
def test_promotion_table_in_both_modes(x64):
    """Every pair of array dtypes and Python scalars, eagerly, against JAX when it is
    installed, else against JAX 0.10.2's table (tests/golden/promotion_table.json)."""
    import json
    import pathlib
    try:
        import jax
    except ImportError:
        jax = None
    table = json.loads((pathlib.Path(__file__).parent / "golden" /
                        "promotion_table.json").read_text())["x64" if x64 else "x32"]
    kinds = PROMOTION_KINDS if jx.dtypes.bfloat16 is not None else \
        [k for k in PROMOTION_KINDS if k != "bfloat16"]
    problems = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a, b in itertools.product(kinds + list(PROMOTION_SCALARS), repeat=2):
            with x64_mode(x64, jax):
                want = _promoted(jax, a, b) if jax is not None else table[f"{a},{b}"]
                got = _promoted(jx, a, b)
            if got != want:
                problems.append(f"{a} + {b}: jx {got}, JAX {want}")
    assert not problems, "\n".join(problems)
