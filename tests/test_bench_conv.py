"""The convolution suite (jx bench --suite conv) at toy sizes: every case's jx result
checked against its NumPy formulation (and the NumPy formulations against JAX), a
jx result that disagrees shown as a MISMATCH and not timed, a missing kernel named
as such, the report's GEMM ratio and targets, the command line's plumbing, and the
LeNet program training on jx: its loss decreases over a few SGD steps. No timing
figures are checked."""
from __future__ import annotations

import numpy as np
import pytest

from jx.benchmarks import conv as suite
from jx.errors import MissingRuleError

LIMITS = {"cpu": "test cpu", "cores": 2, "fma_f32_gflop_s": 100.0, "fma_f64_gflop_s": 50.0,
          "gemm_f32_gflop_s": 80.0, "gemm_f64_gflop_s": 40.0, "copy_gb_s": 20.0,
          "read_gb_s": 30.0}
SMALL = {c.name: c for c in suite.cases(small=True)}
KERNEL_CASES = [n for n, c in SMALL.items() if c.program is None]


@pytest.fixture(scope="module")
def toy_results():
    """The kernel cases at toy sizes on jx, NumPy and JAX, once for the module."""
    pytest.importorskip("jax")
    return {n: suite.bench_case(SMALL[n], i, 0.002, True, LIMITS)
            for i, n in enumerate(KERNEL_CASES)}


@pytest.mark.parametrize("name", KERNEL_CASES)
def test_toy_case_checked_then_timed(toy_results, name):
    r = toy_results[name]
    assert r["status"] == {"jx": "ok", "NumPy": "ok", "JAX": "ok"}, r["status"]
    assert r["reference"] == "NumPy" and not r["mismatches"]
    assert not r["notes"], r["notes"]      # the NumPy formulation agrees with JAX
    assert set(r["seconds"]) == {"jx", "NumPy", "JAX"} and r["speedup"]["JAX"] > 0
    case = SMALL[name]
    if case.rate == "bytes":
        assert r["gb_s"]["jx"] == pytest.approx(case.bytes / r["seconds"]["jx"] / 1e9)
    else:
        assert r["gflop_s"]["jx"] == pytest.approx(case.flops / r["seconds"]["jx"] / 1e9)


def test_conv_reported_against_jx_gemm(toy_results):
    r = toy_results["conv3x3"]
    g = r["gemm"]
    assert g["status"] == "ok" and g["shape"] == "(128 x 72) @ (72 x 8)"
    assert g["flops"] == r["flops"]
    assert g["conv_over_gemm"] == pytest.approx(r["gflop_s"]["jx"] / g["gflop_s"])
    text = suite.report(list(toy_results.values()), LIMITS, "jx bench --suite conv", True)
    assert "jx's GEMM on the conv3x3 flops" in text and "The issue's targets" in text
    assert "| conv3x3 | jx conv / jx GEMM on the same flops |" in text
    assert "| depthwise3x3 | jx GB/s / measured bandwidth |" in text
    assert "MISMATCH" not in text and "FAILED" not in text
    assert "GB/s" in text and "% bw" in text and "% peak" in text


def test_numpy_formulations_edge_cases():
    rng = np.random.default_rng(1)
    # SAME at stride 1 is (k - 1) // 2 below: as lax.padtype_to_pads
    from jx import lax
    for k in (1, 2, 3, 4, 63):
        want = lax.padtype_to_pads((100,), (k,), (1,), "SAME")
        assert [tuple(p) for p in want] == suite.same_pads((k,))
    # np.correlate's 'same' is the SAME convolution for an odd kernel
    x, w = rng.standard_normal((1, 50, 1)), rng.standard_normal((7, 1, 1))
    np.testing.assert_allclose(suite.np_correlate_same(x, w),
                               suite.np_conv(x, w, suite.same_pads((7,))), rtol=1e-12)
    # a window's tie: the cotangent goes to its first maximum (row-major), as JAX's
    tie = np.array([[1, 3], [3, 0]], "f4").reshape(1, 2, 2, 1)
    got = suite.np_maxpool_grad(tie, np.full((1, 1, 1, 1), 2.0, "f4"))
    assert got[0, :, :, 0].tolist() == [[0, 2], [0, 0]]


def test_mismatch_is_reported_instead_of_a_time():
    # jx's convolution runs the kernel flipped: a different result
    case = SMALL["conv3x3"]
    flipped = suite.Case(
        "conv3x3", case.kind, case.size, case.inputs,
        lambda L: (lambda x, w: suite.conv2d(L)(x, w[::-1, ::-1])), case.numpy,
        flops=case.flops, bytes=case.bytes)
    r = suite.bench_case(flipped, 0, 0.002, False, LIMITS)
    assert r["status"]["jx"] == "MISMATCH" and "jx" not in r["seconds"]
    assert r["seconds"]["NumPy"] > 0
    assert r["mismatches"] and "against NumPy" in r["mismatches"][0]
    text = suite.report([r], LIMITS, "jx bench --suite conv", False)
    assert "**MISMATCH**" in text and "FAILED" in text and "| JAX |" not in text
    assert suite.failed(r)


def test_missing_kernel_is_named():
    assert suite._status(MissingRuleError(
        "cpu backend: no lowering for primitive 'conv_general_dilated'")) == "no kernel"
    assert suite._status(NotImplementedError("stax.MaxPool needs ...")) == "no kernel"
    assert suite._status(ValueError("bad")).startswith("error: ValueError")

    def missing(L):
        raise NotImplementedError("no such layer")
    case = suite.Case("pool", "max-pool", "toy", lambda rng: (np.ones((2, 4, 4, 1), "f4"),),
                      missing, suite.np_maxpool, bytes=80, rate="bytes")
    r = suite.bench_case(case, 0, 0.002, False, LIMITS)
    assert r["status"] == {"jx": "no kernel", "NumPy": "ok"} and not suite.failed(r)
    text = suite.report([r], LIMITS, "jx bench --suite conv", False)
    assert "| pool | toy | no kernel |" in text and "No CPU kernel in jx yet" in text


def _lenet(use_jx: bool):
    return suite.load("lenet", use_jx, suite.PROGRAMS)


def test_lenet_trains_on_jx():
    """The issue's requirement: the stax CNN trains on synthetic data, its loss
    decreasing step after step (one batch, plain SGD), the first loss being
    NumPy's forward pass of the same network."""
    module = _lenet(True)
    params, x, y = module.init(16), *module.data(16)
    first = suite.lenet_loss(params, x, y)
    losses = []
    for _ in range(6):
        params, loss = module.step(params, x, y)
        losses.append(float(loss))
    assert np.isfinite(losses).all()
    np.testing.assert_allclose(losses[0], first, rtol=1e-4)
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < losses[0] - 0.01, losses


def test_lenet_step_agrees_with_jax():
    pytest.importorskip("jax")
    r = suite.bench_case(SMALL["LeNet training step"], 0, 0.002, True, LIMITS)
    assert r["status"] == {"jx": "ok", "JAX": "ok"} and r["reference"] == "JAX"
    assert not r["mismatches"] and r["speedup"]["JAX"] > 0


def test_command_line_runs_the_suite(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from jx.cli.main import main
    monkeypatch.setattr(suite.machine, "limits", lambda *a, **k: LIMITS)
    monkeypatch.setattr(suite, "cases", lambda small=False: [SMALL["maxpool2x2"],
                                                             SMALL["conv3x3"]])
    result = CliRunner().invoke(main, ["bench", "--suite", "conv", "--only", "maxpool",
                                       "--min-time", "0.002", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "results-conv.md").read_text()
    assert "`jx bench --suite conv --only maxpool`" in text
    assert "| maxpool2x2 |" in text and "| conv3x3 |" not in text
    assert (tmp_path / "results-conv.json").exists()
