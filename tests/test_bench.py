"""`jx bench` and the benchmark machinery: the command in a subprocess (table, JSON
columns, the engines-agree check failing on a perturbed result, JAX absent),
byte/flop counting on known graphs, and the agreement and timing helpers.
No assertion depends on how fast anything runs."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from importlib import import_module
from pathlib import Path

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.cli.bench import benchmarks_package

ROOT = Path(__file__).resolve().parents[1]
bench = benchmarks_package()
machine = import_module(f"{bench.__name__}.machine")
measure = import_module(f"{bench.__name__}.measure")
report = import_module(f"{bench.__name__}.report")
jaxshim = import_module(f"{bench.__name__}.jaxshim")
inputs = import_module(f"{bench.__name__}.inputs")
suite = import_module(f"{bench.__name__}.suite")

MODEL = textwrap.dedent('''
    import jx
    import jx.numpy as jnp

    @jx.export(x=jx.f32[257], y=jx.f32[257])
    def axpy(x, y):
        return 2.0 * x + y

    @jx.export(p={"w": jx.f32[8, 4], "b": jx.f32[4]}, x=jx.f32[16, 8], static={"k": 2})
    def layer(p, x, k):
        return {"h": jnp.maximum(x @ p["w"] + p["b"], 0.0) * k, "s": jnp.sum(x * x)}
''')

FAKE_MACHINE = {"cpu": "test cpu", "cores": 2, "threads": 2, "copy_gb_s": 10.0,
                "read_gb_s": 12.0, "gemm_f32_gflop_s": 100.0, "gemm_f64_gflop_s": 50.0,
                "fma_f32_gflop_s": 200.0, "fma_f64_gflop_s": 100.0,
                "blas": "test blas", "numpy": np.__version__, "quick": False,
                "measured": "2000-01-01 00:00:00"}

ENGINE_COLUMNS = {"label", "median_s", "min_s", "max_s", "first_call_s", "calls", "gb_s",
                  "gflop_s", "bandwidth_fraction", "peak_fraction", "speedup_vs_numpy",
                  "speedup_vs_jax"}
ENTRY_COLUMNS = {"name", "bytes", "flops", "intensity", "agree", "mismatches", "notes",
                 "engines"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A model file and a jx cache holding the machine's limits (no measuring in tests)."""
    d = tmp_path_factory.mktemp("bench")
    (d / "model.py").write_text(MODEL)
    cache = d / "cache"
    cache.mkdir()
    key = machine.fingerprint(machine.default_threads())
    (cache / machine.CACHE_NAME).write_text(json.dumps({key: FAKE_MACHINE}))
    return d


def jx_bench(workdir, *args, env=None, block_jax=False):
    pre = "import sys; sys.modules['jax'] = None; " if block_jax else ""
    code = pre + "from jx.cli.main import main; main(prog_name='jx')"
    return subprocess.run([sys.executable, "-c", code, "bench", *map(str, args)],
                          cwd=workdir, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JX_CACHE_DIR": str(workdir / "cache"),
                               **(env or {})})


def _has_jax() -> bool:
    try:
        jaxshim.import_jax()
        return True
    except jaxshim.JaxUnavailable:
        return False


# --- the command ------------------------------------------------------------------

def test_bench_prints_table_and_json_has_every_column(workdir):
    out = workdir / "out.json"
    r = jx_bench(workdir, "model.py", "--min-time", "0.001", "--json", out)
    assert r.returncode == 0, r.stderr
    for head in ("median", "first call", "GB/s", "GFLOP/s", "% BW", "% peak", "vs NumPy",
                 "vs JAX", "model.py:axpy", "model.py:layer", "jx jit", "NumPy eager"):
        assert head in r.stdout, head
    doc = json.loads(out.read_text())
    assert doc["machine"]["cpu"] == "test cpu"
    assert [e["name"] for e in doc["entries"]] == ["model.py:axpy", "model.py:layer"]
    engines = {"jx", "numpy"} | ({"jax"} if _has_jax() else set())
    for e in doc["entries"]:
        assert ENTRY_COLUMNS <= set(e), e
        assert e["agree"] is True and not e["mismatches"]
        assert set(e["engines"]) == engines
        for name, rec in e["engines"].items():
            assert ENGINE_COLUMNS <= set(rec), (name, rec)
            assert rec["min_s"] <= rec["median_s"] <= rec["max_s"]
            assert rec["first_call_s"] > 0 and rec["calls"] >= 1
            assert rec["gb_s"] == pytest.approx(e["bytes"] / rec["median_s"] / 1e9)
            assert rec["bandwidth_fraction"] == pytest.approx(rec["gb_s"] / 12.0)
            assert rec["peak_fraction"] == pytest.approx(rec["gflop_s"] / 200.0)
        assert e["engines"]["numpy"]["speedup_vs_numpy"] == pytest.approx(1.0)
    axpy = doc["entries"][0]
    assert axpy["bytes"] == 3 * 257 * 4 and axpy["flops"] == 2 * 257


def test_perturbed_result_fails_the_agreement_check_loudly(workdir):
    out = workdir / "bad.json"
    r = jx_bench(workdir, "model.py", "--entry", "layer", "--min-time", "0.001", "--no-jax",
                 "--json", out, env={"JX_BENCH_PERTURB": "jx"})
    assert r.returncode == 1
    assert "ENGINES DISAGREE on model.py:layer" in r.stderr
    assert "error: the engines disagree on model.py:layer" in r.stderr
    assert "elements differ" in r.stderr and "Traceback" not in r.stderr
    assert "DISAGREE" in r.stdout
    entry = json.loads(out.read_text())["entries"][0]
    assert entry["agree"] is False and entry["mismatches"]
    assert entry["engines"]["jx"]["median_s"] is None      # not timed


def test_without_jax_the_column_is_skipped_with_a_note(workdir):
    out = workdir / "nojax.json"
    r = jx_bench(workdir, "model.py", "--entry", "axpy", "--min-time", "0.001", "--json", out,
                 block_jax=True)
    assert r.returncode == 0, r.stderr
    assert "JAX is not importable" in r.stdout
    entry = json.loads(out.read_text())["entries"][0]
    assert set(entry["engines"]) == {"jx", "numpy"}
    assert any("JAX is not importable" in n for n in entry["notes"])
    assert entry["engines"]["jx"]["speedup_vs_jax"] is None


def test_machine_prints_the_cached_limits(workdir):
    r = jx_bench(workdir, "--machine")
    assert r.returncode == 0, r.stderr
    for text in ("copy bandwidth", "10.00 GB/s", "f32 FMA peak", "200.0 GFLOP/s",
                 "f32 GEMM peak", "100.0 GFLOP/s", "(cached)"):
        assert text in r.stdout, text


def test_bad_invocations_are_clear_errors(workdir):
    r = jx_bench(workdir, "missing.py")
    assert r.returncode == 1 and "missing.py does not exist" in r.stderr
    r = jx_bench(workdir, "model.py", "--target", "tpu")
    assert r.returncode == 1 and "unknown --target 'tpu'" in r.stderr
    import importlib.util
    if importlib.util.find_spec("cupy") is None:
        r = jx_bench(workdir, "model.py", "--target", "cuda")
        assert r.returncode == 1 and "needs CuPy" in r.stderr
    r = jx_bench(workdir, "model.py", "--entry", "nope")
    assert r.returncode == 1 and "has no entry 'nope'" in r.stderr


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
def test_bench_an_artifact_finds_its_model(workdir):
    env = {**os.environ, "JX_CACHE_DIR": str(workdir / "cache")}
    r = subprocess.run([sys.executable, "-m", "jx.cli.main", "compile", "model.py", "-o",
                        "build", "--entry", "axpy"], cwd=workdir, capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    out = workdir / "art.json"
    r = jx_bench(workdir, "build/libmodel.so", "--min-time", "0.001", "--no-jax",
                 "--json", out)
    assert r.returncode == 0, r.stderr
    assert "jx artifact" in r.stdout
    entry = json.loads(out.read_text())["entries"][0]
    assert entry["name"] == "libmodel.so:axpy" and entry["agree"] is True
    assert entry["bytes"] == 3 * 257 * 4
    r = jx_bench(workdir, "build/libmodel.so", "--min-time", "0.001", "--no-jax",
                 env={"JX_BENCH_PERTURB": "jx"})
    assert r.returncode == 1 and "ENGINES DISAGREE" in r.stderr


# --- bytes and flops ------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 100, 4099])
def test_add_of_two_vectors_moves_three_n_elements(n):
    for dt in (jx.f32, jx.f64, jx.i32):
        cost = measure.program_cost(jx.jit(lambda x, y: x + y).lower(dt[n], dt[n]))
        assert cost.bytes == 3 * n * np.dtype(dt.dtype).itemsize
        assert cost.flops == n


@pytest.mark.parametrize("m,k,n", [(3, 5, 7), (64, 32, 16), (1, 128, 1)])
def test_matmul_has_two_mnk_flops(m, k, n):
    cost = measure.program_cost(jx.jit(lambda a, b: a @ b).lower(jx.f32[m, k], jx.f32[k, n]))
    assert cost.flops == 2 * m * n * k
    assert cost.bytes == 4 * (m * k + k * n + m * n)


def test_reduction_and_fused_chain_counts():
    n = 1000
    cost = measure.program_cost(jx.jit(lambda x: jnp.sum(x * x)).lower(jx.f32[n]))
    assert cost.bytes == 4 * (n + 1)        # x read once (fused), one scalar written
    assert cost.flops == 2 * n              # n multiplies, n adds
    cost = measure.program_cost(
        jx.jit(lambda x: jnp.sqrt(x * 2.0 + 1.0)).lower(jx.f32[n]))
    assert cost.bytes == 8 * n and cost.flops >= 3 * n


def test_loop_body_counts_once_per_trip():
    n, steps = 50, 10

    def f(x):
        return jx.lax.fori_loop(0, steps, lambda i, v: v * 1.5, x)
    cost = measure.program_cost(jx.jit(f).lower(jx.f32[n]))
    assert steps * n <= cost.flops <= steps * (n + 2)   # the multiply (+ the counter)
    assert cost.bytes >= steps * 2 * 4 * n


# --- agreement, inputs, timing ------------------------------------------------------------

def test_compare_accepts_rounding_and_rejects_real_differences(rng):
    x = rng.standard_normal((40, 30)).astype(np.float32)
    ref = {"a": x, "b": (np.arange(5, dtype=np.int32), np.array(True))}
    close = {"a": x * np.float32(1 + 1e-6), "b": (np.arange(5, dtype=np.int32),
                                                 np.array(True))}
    assert measure.compare("jx", close, ref) == []
    assert measure.compare("jx", measure.perturb(ref), ref)
    wrong = {"a": x.copy(), "b": ref["b"]}
    wrong["a"][3, 4] += 1.0
    (m,) = measure.compare("jx", wrong, ref)
    assert m.leaf == "['a']" and "index (3, 4)" in m.detail and "1 of 1200" in m.detail
    nan = {"a": x.copy(), "b": ref["b"]}
    nan["a"][0, 0] = np.nan
    assert "NaN" in measure.compare("jx", nan, ref)[0].detail
    assert "shape" in measure.compare("jx", {"a": x[:3], "b": ref["b"]}, ref)[0].detail
    ints = {"a": x, "b": (np.arange(5, dtype=np.int32) + 1, np.array(True))}
    assert "5 of 5" in measure.compare("jx", ints, ref)[0].detail
    assert "structure" in measure.compare("jx", (x,), ref)[0].detail


def test_f64_tolerance_is_tight(rng):
    x = rng.standard_normal(100)
    assert measure.compare("jx", x * (1 + 1e-12), x) == []
    assert measure.compare("jx", x * (1 + 1e-6), x)


def test_entry_inputs_follow_the_declared_specs_and_seed(workdir):
    from jx.cli import loading
    entries = loading.select_entries(loading.load_model(str(workdir / "model.py")), ())
    layer = entries[1]
    a = inputs.entry_inputs(layer)
    b = inputs.entry_inputs(layer)
    assert set(a[0]) == {"w", "b"} and a[0]["w"].shape == (8, 4)
    assert a[0]["w"].dtype == np.float32 and a[1].shape == (16, 8) and a[2] == 2
    np.testing.assert_array_equal(a[0]["w"], b[0]["w"])        # fixed seed
    scaled = inputs.entry_inputs(layer, scales={"p": 0.01})
    assert np.abs(scaled[0]["w"]).max() < np.abs(a[0]["w"]).max()
    rng = np.random.default_rng(1)
    ints = inputs.random_leaf(rng, (1000,), np.int32)
    assert ints.dtype == np.int32 and 0 <= ints.min() and ints.max() < 10
    assert inputs.random_leaf(rng, (7,), np.bool_).dtype == np.bool_
    assert inputs.random_leaf(rng, (2,), np.uint32).dtype == np.uint32


def test_time_calls_batches_fast_calls_and_reports_every_sample():
    calls = []
    t = measure.time_calls(lambda: calls.append(1), min_time=0.002)
    assert t.batch > 1 and len(t.samples) >= measure.MIN_REPS
    assert len(calls) == t.calls + 1            # +1: the call that sized the batch
    assert t.min <= t.median <= t.max


def test_report_formats():
    assert report.fmt_time(2.5) == "2.5 s" and report.fmt_time(3e-3) == "3 ms"
    assert report.fmt_time(4.2e-6) == "4.2 µs" and report.fmt_time(5e-9) == "5 ns"
    assert report.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert report.geomean([None]) is None


def test_suite_declares_the_issue_cases():
    names = " ".join(c.name for c in suite.CASES).lower()
    for word in ("chain", "sum of squares", "softmax", "layernorm", "matmul 1024",
                 "matmul 4096", "mlp predict", "sgd", "per-example", "attention", "ode",
                 "dispatch"):
        assert word in names, word
    for c in suite.CASES:
        assert os.path.isfile(c.model), c.model


@pytest.mark.skipif(not _has_jax(), reason="JAX not installed (optional: jx[bench])")
def test_jax_shim_binds_jax_names_and_restores_jx(tmp_path):
    (tmp_path / "helper.py").write_text("import jx.numpy as jnp\n\n"
                                        "def double(x):\n    return jnp.rsqrt(x) * 2.0\n")
    (tmp_path / "m.py").write_text(textwrap.dedent('''
        import jx
        import jx.numpy as jnp
        from helper import double

        @jx.export(x=jx.f32[4])
        def f(x):
            return jx.lax.fori_loop(0, 3, lambda i, v: jnp.tanh(v), double(x))
    '''))
    fns, note = jaxshim.jax_entries(str(tmp_path / "m.py"))
    assert note is None
    import jax
    x = np.array([1.0, 4.0, 9.0, 16.0], np.float32)
    got = np.asarray(jax.jit(fns["f"])(x))
    np.testing.assert_allclose(got, np.tanh(np.tanh(np.tanh(2 / np.sqrt(x)))), rtol=1e-5)
    assert sys.modules["jx"] is jx and sys.modules["jx.numpy"] is jnp
    assert "helper" not in sys.modules


def test_bench_fails_when_no_engine_can_run(tmp_path):
    import subprocess
    import sys
    (tmp_path / "raises.py").write_text(
        "import jx\n\n@jx.export(x=jx.f32[3])\ndef f(x):\n    raise ValueError('boom')\n")
    r = subprocess.run([sys.executable, "-m", "jx.cli.main", "bench", str(tmp_path / "raises.py"),
                        "--no-jax", "--min-time", "0.01"], capture_output=True, text=True)
    assert r.returncode == 1 and "no engine could run" in r.stderr and "boom" in r.stderr
