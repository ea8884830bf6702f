"""The command line's finish: `jx bench`'s table at 80 and 120 columns (rendered from
fixed results, no timing), --wide and --json -, rich markup escaped, --debug
tracebacks, `dump-ir`'s signature after vmap and grad, and export's static= hint.

After an intended change to the table, regenerate its snapshots with

    JX_UPDATE_GOLDEN=1 pytest tests/test_cli_finish.py

and review the diff of tests/golden/bench/table_*.txt before committing it.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from importlib import import_module
from pathlib import Path

import numpy as np
import pytest

import jx
from jx.cli.bench import benchmarks_package

rich_console = pytest.importorskip("rich.console")
from rich.cells import cell_len  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden" / "bench"   # (printer goldens: golden/*.txt)
UPDATE = os.environ.get("JX_UPDATE_GOLDEN") == "1"
bench = benchmarks_package()
report = import_module(f"{bench.__name__}.report")
machine_mod = import_module(f"{bench.__name__}.machine")

MACHINE = {"cpu": "Test CPU [v2]", "cores": 2, "threads": 2, "copy_gb_s": 10.0,
           "read_gb_s": 12.0, "gemm_f32_gflop_s": 100.0, "gemm_f64_gflop_s": 50.0,
           "fma_f32_gflop_s": 200.0, "fma_f64_gflop_s": 100.0,
           "blas": "test blas", "numpy": np.__version__, "quick": False,
           "measured": "2000-01-01 00:00:00"}


def _engine(label, median, first, speed_np, speed_jax, gb, gflop, **extra):
    return {"label": label, "median_s": median, "min_s": median * 0.97,
            "max_s": median * 1.4, "first_call_s": first, "calls": 100, "samples": 100,
            "gb_s": gb, "gflop_s": gflop, "bandwidth_fraction": gb / 12.0,
            "peak_fraction": gflop / 100.0, "speedup_vs_numpy": speed_np,
            "speedup_vs_jax": speed_jax, **extra}


def fake_results() -> list:
    """Results as runner.run_all returns them: a cached first call, a long entry name,
    a failed engine, an entry whose engines disagree, text with rich markup in it."""
    return [
        {"name": "elementwise chain", "size": "16M f32", "agree": True, "notes": [],
         "engines": {
             "jx": _engine("jx jit", 7.64e-3, 24.4e-3, 26.07, 4.13, 17.6, 28.5,
                           object_cache_hit=True),
             "numpy": _engine("NumPy eager", 0.199, 0.919, 1.0, 0.16, 0.674, 1.09),
             "jax": _engine("JAX jit", 31.6e-3, 77.9e-3, 6.31, 1.0, 4.25, 6.91)}},
        {"name": "attention.py:attention_block", "size": "", "agree": True,
         "notes": ["JAX is not importable (No module named 'jax'); `pip install jax` "
                   "(or jx[bench]) adds the JAX column"],
         "engines": {
             "jx": _engine("jx artifact", 8.63e-6, 14.3e-3, 551.9, None, 9.5, 3.4),
             "numpy": _engine("NumPy eager", 4.76e-3, 5.37e-3, 1.0, None, 0.1, 0.02)}},
        {"name": "matmul[1024]", "size": "1024^2 f32", "agree": True, "notes": [],
         "engines": {
             "jx": _engine("jx jit", 11.3e-3, 36.1e-3, 0.95, 0.91, 1.11, 190.0),
             "numpy": _engine("NumPy eager", 10.7e-3, 12.4e-3, 1.0, 0.96, 1.17, 200.0),
             "jax": {"label": "JAX jit", "error": "XlaRuntimeError: out of [memory]"}}},
        {"name": "row softmax", "size": "", "agree": False, "notes": [],
         "reference": "numpy", "mismatches": ["3 of 4096 elements differ [max 0.5]"],
         "engines": {"jx": {"label": "jx jit", "first_call_s": 0.01},
                     "numpy": {"label": "NumPy eager", "first_call_s": 0.02}}},
    ]


def render(width: int, wide: bool = False) -> str:
    out = rich_console.Console(file=io.StringIO(), width=width, no_color=True,
                               highlight=False)
    report.show(out, fake_results(), MACHINE, wide=wide)
    return "\n".join(line.rstrip() for line in out.file.getvalue().splitlines()) + "\n"


def table_lines(text: str) -> list:
    return text.split("\n")[:text.split("\n").index("note: matmul[1024]: JAX jit failed: "
                                                    "XlaRuntimeError: out of [memory]")]


@pytest.mark.parametrize("width", [80, 120])
def test_bench_table_fits_the_terminal(width):
    text = render(width)
    lines = text.splitlines()
    assert max(map(cell_len, lines)) <= width, text
    assert "…" not in text, text
    # the most telling figures, whole, at any width
    for cell in ("7.64 ms", "26.07x", "4.13x", "24.4 ms*", "8.63 µs", "551.90x", "0.95x",
                 "146.7%", "28.5%", "failed", "DISAGREE", "jx .so", "NumPy"):
        assert cell in text, (cell, text)
    assert "* first call loaded the compiled code from jx's object cache" in text
    # short names stay whole; a long one may fold but keeps every character
    for name in ("elementwise chain", "matmul[1024]", "row softmax"):
        assert name in text, name
    table = "".join(ln[:ln.find("  ")] for ln in table_lines(text)
                    if ln and not ln.startswith(("jx bench", "entry", "─")))
    assert "attention.py:attention_block" in table.replace(" ", ""), text
    if width >= 120:      # all but min and max fit at 120, the entry names whole
        for head in ("median", "1st call", "GB/s", "%BW", "GFLOP/s", "%peak", "vs NumPy",
                     "vs JAX"):
            assert head in lines[1], head
        assert "attention.py:attention_block" in text


@pytest.mark.parametrize("width", [80, 120])
def test_bench_table_snapshot(width):
    text = render(width)
    path = GOLDEN / f"table_{width}.txt"
    if UPDATE:
        path.write_text(text)
    assert text == path.read_text(), f"regenerate {path} with JX_UPDATE_GOLDEN=1 if intended"


def test_bench_wide_has_every_column_and_full_labels():
    text = render(80, wide=True)
    for head in ("median", "min", "max", "first call", "GB/s", "% BW", "GFLOP/s",
                 "% peak", "vs NumPy", "vs JAX", "jx jit", "NumPy eager", "JAX jit",
                 "24.4 ms (cached)", "attention.py:attention_block"):
        assert head in text, head
    assert "…" not in text
    assert max(map(cell_len, table_lines(text))) > 80      # wider than asked, not cut


def test_bench_wide_enough_gets_the_boxed_table():
    text = render(200)
    assert "┏" in text and "first call" in text and "NumPy eager" in text


def test_bench_text_is_not_rich_markup():
    text = " ".join(render(120).split())
    assert "pip install jax` (or jx[bench]) adds the JAX column" in text
    assert "matmul[1024]" in text and "out of [memory]" in text
    assert "Test CPU [v2]" in text
    from jx.cli.bench import _check_results
    err = rich_console.Console(file=io.StringIO(), width=120, no_color=True)
    with pytest.raises(Exception):
        _check_results(err, [dict(fake_results()[3], name="soft[max]")])
    shown = err.file.getvalue()
    assert "ENGINES DISAGREE on soft[max]" in shown
    assert "3 of 4096 elements differ [max 0.5]" in shown
    for table in (report.machine_table(MACHINE), report.facts_table("f", {"a[b]": "c[d]"})):
        con = rich_console.Console(file=io.StringIO(), width=120)
        con.print(table)
        assert "[v2]" in con.file.getvalue() or "a[b]" in con.file.getvalue()


# --- jx bench run as a user runs it --------------------------------------------------

MODEL = textwrap.dedent('''
    import jx

    @jx.export(x=jx.f32[33], y=jx.f32[33])
    def axpy_with_a_name_longer_than_the_compact_entry_column(x, y):
        return 2.0 * x + y
''')


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A model file and a jx cache holding the machine's limits (no measuring)."""
    d = tmp_path_factory.mktemp("bench_cli")
    (d / "model.py").write_text(MODEL)
    (d / "cache").mkdir()
    key = machine_mod.fingerprint(machine_mod.default_threads())
    (d / "cache" / machine_mod.CACHE_NAME).write_text(json.dumps({key: MACHINE}))
    return d


def jx_bench(workdir, *args, columns=None):
    """`jx bench ARGS` in a subprocess where JAX cannot be imported (its note shows)."""
    env = {**os.environ, "JX_CACHE_DIR": str(workdir / "cache")}
    env.pop("COLUMNS", None)
    if columns:
        env["COLUMNS"] = str(columns)
    code = "import sys; sys.modules['jax'] = None; from jx.cli.main import main; main()"
    return subprocess.run([sys.executable, "-c", code, "bench", *map(str, args)],
                          cwd=workdir, capture_output=True, text=True, timeout=300, env=env)


def test_bench_command_fits_columns_and_prints_json(workdir):
    r = jx_bench(workdir, "model.py", "--min-time", "0.001", columns=80)
    assert r.returncode == 0, r.stderr
    assert max(map(cell_len, r.stdout.splitlines())) <= 80, r.stdout
    assert "…" not in r.stdout and "median" in r.stdout and "vs NumPy" in r.stdout
    assert "machine: Test CPU [v2]" in r.stdout
    assert "`pip install jax` (or jx[bench]) adds the JAX column" in " ".join(r.stdout.split())
    r = jx_bench(workdir, "model.py", "--min-time", "0.001", "--no-jax", "--json", "-",
                 columns=80)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)          # the JSON alone: no table around it
    (entry,) = doc["entries"]
    assert entry["name"] == "model.py:axpy_with_a_name_longer_than_the_compact_entry_column"
    assert entry["engines"]["jx"]["median_s"] > 0
    r = jx_bench(workdir, "--machine", "--json", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["machine"]["cpu"] == "Test CPU [v2]"


# --- errors, dump-ir, export ------------------------------------------------------------

BRANCH = textwrap.dedent('''
    import jx

    @jx.export(x=jx.f32[3], n=jx.i32[()])
    def f(x, n):
        if n > 0:
            return x
        return -x
''')


def jx_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "jx.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def branch(tmp_path_factory):
    d = tmp_path_factory.mktemp("branch")
    (d / "branch.py").write_text(BRANCH)
    return d


def test_debug_traceback_does_not_end_by_suggesting_debug(branch):
    r = jx_cli("dump-ir", "branch.py", cwd=branch)
    assert r.returncode == 1
    assert r.stderr.rstrip().endswith("Run with --debug to see the full traceback.")
    r = jx_cli("dump-ir", "branch.py", "--debug", cwd=branch)
    assert r.returncode == 1 and "Traceback" in r.stderr
    last = r.stderr.rstrip().splitlines()[-1]
    assert last.startswith("jx.cli.errors.CliError: tracing entry 'f' failed"), last
    assert "--debug" not in r.stderr.split("Traceback")[-1], r.stderr


def test_cli_error_keeps_the_hint_out_of_its_message():
    from jx.cli.errors import DEBUG_HINT, CliError
    e = CliError(f"it broke. {DEBUG_HINT}", where="m.py:3")
    assert str(e) == "it broke." and e.text() == f"m.py:3: error: it broke. {DEBUG_HINT}"
    assert CliError("plain").text() == "error: plain"
    assert CliError("asks", debug_hint=True).text().endswith(DEBUG_HINT)


def test_export_errors_name_export_static_option(branch):
    r = jx_cli("dump-ir", "branch.py", cwd=branch)
    assert "static={'name': value} in @jx.export" in r.stderr, r.stderr
    assert "static_argnums" not in r.stderr
    # jit's own message keeps jit's option
    with pytest.raises(jx.errors.TracerConversionError, match=r"\(static_argnums\)"):
        jx.jit(lambda x: x if x > 0 else -x)(1.0)
    with pytest.raises(jx.EntryError, match=r"static=\{'k': \.\.\.\} names no argument "
                                            r"\(arguments: x\)"):
        @jx.export(x=jx.f32[3], static={"k": 1})
        def g(x):
            return x


def _signature(stdout: str, entry: str) -> str:
    (line,) = [ln for ln in stdout.splitlines() if ln.startswith(f"# {entry}(")]
    return line[2:]


def test_dump_ir_after_vmap_prints_the_batched_signature():
    r = jx_cli("dump-ir", "samples/mlp.py", "--after", "vmap", "--batch", "4")
    assert r.returncode == 0, r.stderr
    sig = _signature(r.stdout, "predict")
    assert sig.startswith("predict(params: {b1: f32[4,1024], b2: f32[4,1024], b3: f32[4,10], "
                          "w1: f32[4,784,1024]"), sig
    assert sig.endswith(", x: f32[4,128,784]) -> f32[4,128,10]"), sig
    assert _signature(r.stdout, "loss").endswith("y: i32[4,128]) -> f32[4]")
    graph = r.stdout.split(_signature(r.stdout, "predict"))[1]
    assert "graph(a:f32[4,1024]" in graph
    r = jx_cli("dump-ir", "samples/mlp.py", "--after", "simplify", "--entry", "predict")
    assert _signature(r.stdout, "predict").endswith("x: f32[128,784]) -> f32[128,10]")


def test_dump_ir_after_grad_prints_value_and_gradients():
    r = jx_cli("dump-ir", "samples/mlp.py", "--entry", "loss", "--after", "grad")
    assert r.returncode == 0, r.stderr
    sig = _signature(r.stdout, "loss")
    assert sig.endswith("y: i32[128]) -> (f32[], grad: (params: {b1: f32[1024], "
                        "b2: f32[1024], b3: f32[10], w1: f32[784,1024], w2: f32[1024,1024], "
                        "w3: f32[1024,10]}, x: f32[128,784]))"), sig
