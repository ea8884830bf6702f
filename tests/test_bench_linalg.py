"""The linear algebra suite (jx bench --suite linalg) at toy sizes: sign-invariant
comparisons, a jx result that disagrees shown as a MISMATCH and not timed, a
missing kernel named as such, and the GP program on jx against NumPy. No timing
figures are checked."""
from __future__ import annotations

import numpy as np
import pytest

import jx
from jx.benchmarks import linalg as suite
from jx.errors import MissingRuleError

LIMITS = {"cpu": "test cpu", "cores": 2, "fma_f32_gflop_s": 100.0, "fma_f64_gflop_s": 50.0,
          "gemm_f32_gflop_s": 80.0, "gemm_f64_gflop_s": 40.0}
RNG = np.random.default_rng(0)


def _flips(n: int) -> np.ndarray:
    return np.where(RNG.random(n) < 0.5, -1.0, 1.0)


def test_decompositions_compared_up_to_signs():
    a = RNG.standard_normal((6, 6))
    q, r = np.linalg.qr(a)
    s = _flips(6)
    assert np.allclose(suite.canonical("qr", [q * s, s[:, None] * r]),
                       suite.canonical("qr", [q, r]))
    w, v = np.linalg.eigh(a + a.T)
    assert np.allclose(suite.canonical("eigh", [w, v * s])[1], suite.canonical("eigh", [w, v])[1])
    u, sv, vh = np.linalg.svd(a)
    got = suite.canonical("svd", [u * s, sv, s[:, None] * vh])
    for g, w_ in zip(got, suite.canonical("svd", [u, sv, vh])):
        assert np.allclose(g, w_)
    # u_i flipped without v_i is another matrix, not a sign convention
    bad = suite.canonical("svd", [u * s, sv, vh])
    assert not np.allclose(bad[2], suite.canonical("svd", [u, sv, vh])[2])


def _case(fn, check="plain"):
    return suite.Case("cholesky 8", "cholesky", "float32", "8x8", 8**3 / 3,
                      lambda rng, dt: suite._cast(dt, suite._spd(rng, 8)), fn, check=check)


def test_agreeing_case_is_timed():
    r = suite.bench_case(_case(lambda L: L.np.linalg.cholesky), 0, 0.005, False, LIMITS)
    assert r["status"] == {"jx": "ok", "NumPy": "ok"} and not r["mismatches"]
    assert r["seconds"]["jx"] > 0 and r["speedup"]["NumPy"] > 0
    assert r["gflop_s"]["jx"] == pytest.approx(8**3 / 3 / r["seconds"]["jx"] / 1e9)
    text = suite.report([r], LIMITS, "jx bench --suite linalg", False)
    assert "| cholesky 8 | float32 |" in text and "MISMATCH" not in text
    assert "| JAX |" not in text and "n³/3" in text


def test_mismatch_is_reported_instead_of_a_time():
    # jx computes the upper factor, NumPy the lower one
    wrong = _case(lambda L: lambda a: L.np.linalg.cholesky(a).T if L.np is not np else
                  np.linalg.cholesky(a))
    r = suite.bench_case(wrong, 0, 0.005, False, LIMITS)
    assert r["status"]["jx"] == "MISMATCH" and "jx" not in r["seconds"]
    assert r["mismatches"] and "against NumPy" in r["mismatches"][0]
    text = suite.report([r], LIMITS, "jx bench --suite linalg", False)
    assert "**MISMATCH**" in text and "FAILED" in text


def test_missing_kernel_is_named():
    assert suite._status(MissingRuleError("cpu backend: no lowering for primitive 'svd'")) \
        == "no kernel"
    assert suite._status(ValueError("bad")).startswith("error: ValueError")


def test_gp_program_matches_numpy():
    module = suite.load("gp_regression", True, suite.PROGRAMS)
    params, x, y = module.data(n=64, dtype="float32")
    value, grad = module.nll_and_grad(params, x, y)
    with jx.enable_x64():
        want = suite.gp_forward(module.data(n=64, dtype="float64"))
    np.testing.assert_allclose(np.asarray(value), want, rtol=1e-4)
    assert np.asarray(grad).shape == (3,) and np.isfinite(np.asarray(grad)).all()


def test_every_case_has_a_flop_formula():
    cases = suite._cases()
    assert {c.op for c in cases} <= set(suite.FLOPS)
    assert {c.dtype for c in cases} == {"float32", "float64"}
    assert all(c.flops is None for c in cases if c.op == "gp")
