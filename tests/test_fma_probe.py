"""The machine's arithmetic peak (benchmarks/fma_probe.py): the probe's loop
computes what NumPy computes, on the host's target and on older ones; rooflines
use its figure, and limits recorded before it are measured again. No timing
assertions (a rate is only checked to be a positive number)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from jx.benchmarks import fma_probe, machine
from jx.codegen.cpu import target

M, C = 0.999969482421875, 0.0001220703125     # the probe's constants (exact in f32)
TARGETS = ["host", "x86-64", "x86-64-v3"]


def _expected(bits: int, rounds: int, accumulators: int) -> float:
    """Lane 0 of the probe's summed accumulators, in NumPy at the probe's precision."""
    dt = np.float32 if bits == 32 else np.float64
    acc = np.array([1.0 + k / 64 for k in range(accumulators)], dt)
    for _ in range(rounds):
        acc = (acc * dt(M) + dt(C)).astype(dt)      # (an FMA rounds once: see tol)
    total = acc[0]
    for k in range(1, accumulators):
        total = dt(total + acc[k])
    return float(total)


@pytest.mark.parametrize("cpu", TARGETS)
@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("rounds", [1, 2, 37, 1000])
def test_probe_computes_the_recurrence(cpu, bits, rounds, monkeypatch):
    if cpu != "host":
        if target.runnable_here(cpu):
            pytest.skip(f"this host cannot run {cpu} code")
        monkeypatch.setenv("JX_CPU", cpu)
    fn, ctype, flops, module = fma_probe.compiled(bits)
    lanes = target.vector_bytes(target.jit_cpu()) // (bits // 8)
    accumulators = flops // (2 * lanes)
    assert accumulators in (12, 24)
    sink = ctype(-1.0)
    fn(rounds, sink)
    want = _expected(bits, rounds, accumulators)
    assert sink.value == pytest.approx(want, rel=1e-5 if bits == 32 else 1e-12)


def test_peak_is_a_positive_rate():
    for bits in (32, 64):
        rate = fma_probe.fma_peak(bits, threads=1, seconds=0.002, repeats=1)
        assert np.isfinite(rate) and rate > 0


def test_rooflines_use_the_fma_peak_and_old_records_are_measured_again(tmp_path,
                                                                       monkeypatch):
    limits = {"gemm_f32_gflop_s": 100.0, "gemm_f64_gflop_s": 50.0}
    assert machine.peak_for(limits, 32) == 100.0 and machine.peak_for(limits, 64) == 50.0
    limits.update(fma_f32_gflop_s=400.0, fma_f64_gflop_s=200.0)
    assert machine.peak_for(limits, 32) == 400.0 and machine.peak_for(limits, 64) == 200.0
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))
    key = machine.fingerprint(2)
    old = {"cpu": "c", "gemm_f32_gflop_s": 100.0, "gemm_f64_gflop_s": 50.0}
    (tmp_path / machine.CACHE_NAME).write_text(json.dumps({key: old}))
    if machine.cache_path() != str(tmp_path / machine.CACHE_NAME):
        pytest.skip("the cache folder is not read from JX_CACHE_DIR at call time")
    assert machine.cached(2) is None
    (tmp_path / machine.CACHE_NAME).write_text(json.dumps({key: {**old, **limits}}))
    assert machine.cached(2)["fma_f32_gflop_s"] == 400.0
