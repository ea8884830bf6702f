"""`jx bench --suite latency` (issue 27): the suite's machinery on one toy entry,
every first call in a fresh process (jx cold and warm; JAX cold and warm when JAX is
installed), the report's tables and the JSON. No timing assertions."""
from __future__ import annotations

import json
import textwrap
from importlib import import_module

import pytest

from jx.cli.bench import benchmarks_package

bench = benchmarks_package()
latency = import_module(f"{bench.__name__}.latency")

MODEL = textwrap.dedent('''
    import jx
    import jx.numpy as jnp

    @jx.export(x=jx.f32[33], y=jx.f32[33])
    def toy(x, y):
        return {"s": jnp.sum(jnp.tanh(x) * y), "v": 2.0 * x + y}
''')

try:
    import jax  # noqa: F401
    HAVE_JAX = True
except ImportError:
    HAVE_JAX = False


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("latency")
    model = tmp / "toy.py"
    model.write_text(MODEL)
    row = latency.Row("toy entry", str(model), "toy", size="33 f32")
    skipped = latency.Row("toy skipped", str(model), "toy", size="33 f32", skip="a stated reason")
    out = tmp / "results-latency.md"
    mp = pytest.MonkeyPatch()
    mp.setattr(latency, "rows", lambda only=(): [r for r in (row, skipped)
                                                 if any(o in r.name for o in only)])
    try:       # through `jx bench`: the suite's registration and options
        from click.testing import CliRunner

        from jx.cli.main import main
        result = CliRunner().invoke(main, ["bench", "--suite", "latency", "--only", "toy",
                                           "--compile-breakdown", "--out", str(tmp),
                                           "--json", str(tmp / "copy.json")])
    finally:
        mp.undo()
    assert "`jx bench --suite latency --only toy`" in result.output, result.output
    return result.exit_code, out.read_text(), \
        json.loads(out.with_suffix(".json").read_text()), \
        json.loads((tmp / "copy.json").read_text())


def test_rows_have_the_four_first_calls_and_agree(ran):
    code, _, doc, copy = ran
    assert code == 0
    assert copy["rows"] == doc["rows"]
    assert doc["cpu"]
    assert doc["commit"] is None or isinstance(doc["commit"], str)
    r, skipped = doc["rows"]
    assert skipped["skipped"] == "a stated reason"
    for kind in ("jx_cold", "jx_warm") + (("jax_cold", "jax_warm") if HAVE_JAX else ()):
        assert r[kind].get("first_s", 0) > 0, r[kind]
        assert r[kind]["run_s"] > 0
    assert r["jx_cold"]["object_cache_hit"] is False
    assert r["jx_warm"]["object_cache_hit"] is True          # the warm process hit
    assert r["jx_cold"]["checksum"] == pytest.approx(r["jx_warm"]["checksum"])
    if HAVE_JAX:
        assert r["agrees"] is True, r["mismatches"]
        assert r["ratio_cold"] > 0 and r["ratio_warm"] > 0
        assert r["jax_cache_entries"] >= 1                   # JAX's persistent cache filled
        assert doc["summary"]["cold_compared"] == 1


def test_the_breakdown_has_the_stages(ran):
    _, text, doc, _ = ran
    cold = doc["rows"][0]["jx_cold"]["breakdown"]
    warm = doc["rows"][0]["jx_warm"]["breakdown"]
    assert {"trace", "passes", "emit", "load"} <= set(cold), cold
    assert ("optimise" in cold and "codegen" in cold) or "llvm" in cold, cold
    assert "trace" in warm and "optimise" not in warm and "llvm" not in warm, warm
    assert "| entry | cache | " in text and "| toy entry | warm (hit) |" in text
    assert "| toy entry | 33 f32 | " in text
    assert "| toy skipped | 33 f32 | skipped: a stated reason" in text
    assert "CPU: " in text


def test_report_of_made_up_rows():
    rows = [{"name": "e", "size": "s", "agrees": True, "ratio_cold": 0.5, "ratio_warm": 2.0,
             "jx_cold": {"first_s": 0.1, "run_s": 0.001,
                         "breakdown": {"trace": 0.01, "emit": 0.02, "optimise": 0.03}},
             "jx_warm": {"first_s": 0.04, "run_s": 0.001, "object_cache_hit": False,
                         "breakdown": {"trace": 0.01, "load": 0.02}},
             "jax_cold": {"first_s": 0.2}, "jax_warm": {"first_s": 0.02}},
            {"name": "f", "size": "t", "jx_cold": {"error": "ValueError: no"},
             "jx_warm": {"error": "ValueError: no"}}]
    text = latency.report(rows, "jx bench --suite latency")
    assert "| e | s | 100 ms | 40 ms | 200 ms | 20 ms | 0.50 | 2.00 | 1.00 ms | yes |" in text
    assert "| e | cold | 10 | 20 | 30 | - | 40 | 100 |" in text
    assert "| e | warm (MISS) | 10 | - | - | 20 | 10 | 40 |" in text
    assert "error: ValueError: no" in text
    s = latency.summary(rows)
    assert s["jx_cold_le_jax_cold"] == ["e"] and s["jx_warm_le_jax_warm"] == []


def test_the_suite_lists_cases_and_samples():
    rows = latency.rows()
    names = [r.name for r in rows]
    assert "matmul 4096" in names and "samples/mlp.py:predict" in names
    assert all(r.skip for r in rows if "device_step" in r.name)
    assert latency.rows(("softmax",)) and all("softmax" in r.name.lower()
                                              for r in latency.rows(("softmax",)))


def test_repeats_keep_the_median_record():
    recs = [{"first_s": 0.3, "tag": "a"}, {"error": "x"}, {"first_s": 0.1, "tag": "b"},
            {"first_s": 0.2, "tag": "c"}]
    m = latency._median_record(recs)
    assert m["tag"] == "c" and m["samples_s"] == [0.3, None, 0.1, 0.2]
    assert latency._median_record([{"error": "x"}]) == {"error": "x"}
    assert "samples_s" not in latency._median_record([{"first_s": 1.0}])
