"""The FFT suite (jx bench --suite fft) at toy sizes: every case's jx result checked
against NumPy's before it is timed (complex results on both components), the
accuracy column against a float64 transform, the Mandelbrot counts' agreement
rule, and the report's targets. No timing figure is checked."""
from __future__ import annotations

import numpy as np
import pytest

from jx.benchmarks import conv, fft as suite
from jx.benchmarks import measure

LIMITS = {"cpu": "test cpu", "cores": 2, "fma_f32_gflop_s": 100.0, "fma_f64_gflop_s": 50.0,
          "gemm_f32_gflop_s": 80.0, "gemm_f64_gflop_s": 40.0, "copy_gb_s": 20.0,
          "read_gb_s": 30.0}
SMALL = {c.name: c for c in suite.cases(small=True)}


@pytest.fixture(scope="module")
def toy_results():
    pytest.importorskip("jax")
    out = {}
    for i, (name, case) in enumerate(SMALL.items()):
        r = conv.bench_case(case, i, 0.002, True, LIMITS)
        r["accuracy"] = suite.accuracy(case, i)
        out[name] = r
    return out


@pytest.mark.parametrize("name", list(SMALL))
def test_toy_case_checked_then_timed(toy_results, name):
    r = toy_results[name]
    assert r["status"] == {"jx": "ok", "NumPy": "ok", "JAX": "ok"}, (r["status"], r["mismatches"])
    assert r["reference"] == "NumPy" and not r["mismatches"]
    assert set(r["seconds"]) == {"jx", "NumPy", "JAX"}
    assert r["gflop_s"]["jx"] == pytest.approx(SMALL[name].flops / r["seconds"]["jx"] / 1e9)
    if SMALL[name].kind == "fft":
        err, bound = r["accuracy"]
        assert 0 < err < 5 * bound


def test_report_lists_the_targets(toy_results):
    text = suite.report(list(toy_results.values()), LIMITS, "jx bench --suite fft", True)
    assert "| fft 2^10 | speedup over JAX |" in text and "speedup over NumPy" in text
    assert "| mandelbrot 48x48x10 | speedup over JAX |" in text and ">= 1.5x" in text
    assert "rel. L2 error" in text and "FAILED" not in text and "GFLOP/s" in text


def test_complex_results_are_compared_on_both_parts():
    ref = np.array([1 + 1j, 2 - 1j], np.complex64)
    assert not measure.compare("jx", [ref.copy()], [ref])
    assert measure.compare("jx", [np.conj(ref)], [ref])       # the real parts agree


def test_mandelbrot_agreement_rule():
    n = suite.np_mandelbrot(suite._grid(32), 20)
    flipped = n.copy()
    flipped[0, 0] += 1
    assert not conv._agreement("jx", [flipped], [n], 0.999)
    assert conv._agreement("jx", [flipped], [n], 1.0)
