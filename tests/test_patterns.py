"""The issue-19 pattern programs (benchmarks/patterns/*.py) and their runner.

Every program loads by import swap and, at small sizes, its jx result matches JAX's
run of the program as written (or, without JAX, jx's own run with jit disabled);
its cost is positive. The report is checked on made-up results. No timing.
"""
from __future__ import annotations

import numpy as np
import pytest

import jx
from jx.benchmarks import machine, measure, patterns as runner

NAMES = runner.patterns()
LIMITS = {"cpu": "test cpu", "cores": 2, "gemm_f32_gflop_s": 100.0,
          "gemm_f64_gflop_s": 50.0, "copy_gb_s": 20.0, "read_gb_s": 40.0}


def _run(name: str, use_jx: bool):
    module = runner.load_pattern(name, use_jx)
    step, args = module.bench(small=True)
    return module, args, step(*args)


def test_every_issue_pattern_is_present():
    for want in ("kernel_least_squares", "vi_elbo", "lennard_jones_md", "heat_3d",
                 "nbody_gravity", "mlp_training", "transformer_pmap", "hmc_sampler",
                 "pytree_dispatch"):
        assert want in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_pattern_matches_reference(name):
    module, args, out = _run(name, use_jx=True)
    got = runner.compared(module, out, jx.tree_util)
    assert got, f"{name} returned nothing to compare"
    for leaf in got:
        if leaf.dtype.kind == "f":
            assert np.isfinite(leaf).all(), f"{name}: non-finite results"
    flops, nbytes = module.cost(args)
    assert flops > 0 and nbytes > 0
    try:
        import jax
    except ImportError:
        with jx.disable_jit():
            _, _, eager = _run(name, use_jx=True)
        want = runner.compared(module, eager, jx.tree_util)
    else:
        jmod, _, jout = _run(name, use_jx=False)
        want = runner.compared(jmod, jout, jax.tree_util)
    problems = measure.compare("jx", got, want, getattr(module, "TOLERANCE", runner.TOLERANCE))
    assert not problems, "\n".join(str(p) for p in problems)


def test_roofline_fractions():
    # 1 GFLOP and 1 GB in 0.1 s: 10 GFLOP/s of 100, 10 GB/s of 40
    r = runner.roofline(1e9, 1e9, 0.1, LIMITS)
    assert r["gflop_s"] == pytest.approx(10.0) and r["gb_s"] == pytest.approx(10.0)
    assert r["peak_fraction"] == pytest.approx(0.1)
    assert r["bandwidth_fraction"] == pytest.approx(0.25)
    assert r["roofline_fraction"] == pytest.approx(0.25) and r["bound"] == "memory"
    assert runner.roofline(1e12, 1e3, 20.0, LIMITS)["bound"] == "compute"
    assert machine.bandwidth_roof(LIMITS) == 40.0


def _fake(name, jx_s, jax_s=None, agrees=True):
    r = {"pattern": name, "flops": 2e9, "bytes": 1e8, "first_s": {"jx": 1.0},
         "median_s": {"jx": jx_s}, "devices": {"jx": 2}}
    r["jx"] = runner.roofline(2e9, 1e8, jx_s, LIMITS)
    if jax_s is not None:
        r["first_s"]["JAX"], r["median_s"]["JAX"] = 0.5, jax_s
        r["JAX"] = runner.roofline(2e9, 1e8, jax_s, LIMITS)
        r["speedup_vs_jax"] = jax_s / jx_s
        r["agrees_with_jax"] = agrees
        r["mismatches"] = [] if agrees else ["jx['x']: 3 of 4 elements differ"]
        r["devices"]["JAX"] = 1
    return r


def test_report_with_jax():
    probe = {**_fake("dispatch", 1e-5, 1e-3), "in_geomean": False}
    text = runner.report([_fake("heat_3d", 0.1, 0.2), _fake("nbody", 0.2, 0.05, False),
                          probe], LIMITS, "jx bench --suite patterns")
    assert "| heat_3d | 100 ms | 200 ms | 2.00x | 20 (20%) | 1 (2.5%) | 20% (compute) |" \
        in text
    assert "| nbody | 200 ms | 50 ms | 0.25x |" in text and "| NO |" in text
    assert "Geometric-mean speedup of jx over JAX: 0.71x (2 patterns; dispatch left " \
        "out)." in text
    assert "| dispatch | 10 µs | 1 ms | 100.00x |" in text
    assert "Local devices (pmap): jx 2, JAX 1." in text
    assert "- nbody: jx['x']: 3 of 4 elements differ" in text


def test_report_without_jax():
    text = runner.report([_fake("dispatch", 4e-6)], LIMITS, "jx bench --suite patterns")
    assert "| dispatch | 4 µs | - | - |" in text and "| - |\n" in text
    assert "Geometric-mean" not in text
    assert runner.geomean([None, 2.0, 8.0]) == pytest.approx(4.0)
