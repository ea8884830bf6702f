"""The host-measured code-generation constants (codegen/cpu/tuning.py, jx/autotune.py):
measured once into the cache, read back by a later process, applied to the code,
shown by `jx bench --machine`; bad modes and corrupt caches are handled."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import jx
import jx.numpy as jnp

pytest.importorskip("llvmlite")
from jx import autotune  # noqa: E402
from jx.codegen.cpu import compiler, parallel, target, tuning  # noqa: E402
from jx.codegen.cpu.jit import CompiledFunction  # noqa: E402


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("JX_TUNE", "auto")
    tuning.forget()
    yield tmp_path
    tuning.forget()


FORK = 'call void @"jx_parallel_for"'


def _ir(fun, *args):
    from jx.api import trace_pytree
    from jx.passes.fuse import fuse
    from jx.passes.pipeline import run
    graph, _ = trace_pytree(fun, args, {}, ())
    return CompiledFunction(fuse(run(graph, check=False)), "probe").ir_text


def test_measures_once_and_a_later_process_reads_it(fresh_cache):
    rec = autotune.ensure()
    assert rec is not None and rec["seconds"] < 30
    vals = rec["values"]
    assert set(vals) <= set(tuning.DEFAULTS)
    assert vals["interleave"] in (0, 2, 4, 8)
    if (parallel.num_threads() or 1) > 1:
        assert 1 << 12 <= vals["parallel_min_work"] <= 1 << 22
        assert 1 << 18 <= vals["gemm_min_work"] <= 1 << 26
        assert "fork-join" in rec["measured"]
    if "avx512f" in target.host_features():
        assert vals["vector_bits"] in (256, 512)
    stored = json.loads((fresh_cache / "tuning.json").read_text())
    assert stored[tuning.fingerprint()]["values"] == vals
    for name, v in vals.items():
        assert tuning.value(name) == v
    # another process finds the record and measures nothing
    code = ("from jx.codegen.cpu import tuning; import json; "
            "print(json.dumps(tuning.record()['values']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), check=True).stdout
    assert json.loads(out) == vals
    assert autotune.ensure() is tuning.record()          # cached: not measured again


def test_off_keeps_the_defaults_and_a_bad_mode_is_an_error(fresh_cache, monkeypatch):
    monkeypatch.setenv("JX_TUNE", "off")
    assert autotune.ensure() is None
    assert not (fresh_cache / "tuning.json").exists()
    assert tuning.value("parallel_min_work") == tuning.DEFAULTS["parallel_min_work"]
    monkeypatch.setenv("JX_TUNE", "fast")
    with pytest.raises(jx.JxError, match="JX_TUNE='fast'.*'auto'.*'off'"):
        tuning.mode()


def test_off_ignores_a_measured_record(fresh_cache, monkeypatch):
    """A host that measured once still builds with the defaults under JX_TUNE=off
    (reproducible builds across hosts: jx compile --check)."""
    tuning.save({"values": {"parallel_min_work": 777, "interleave": 2}, "measured": "t",
                 "seconds": 0.0})
    assert tuning.value("parallel_min_work") == 777
    monkeypatch.setenv("JX_TUNE", "off")
    assert tuning.value("parallel_min_work") == tuning.DEFAULTS["parallel_min_work"]
    assert tuning.value("interleave") == tuning.DEFAULTS["interleave"]


def test_a_corrupt_record_is_measured_again(fresh_cache):
    (fresh_cache / "tuning.json").write_text("{not json")
    assert tuning.record() is None
    rec = autotune.ensure()
    assert rec is not None and json.loads((fresh_cache / "tuning.json").read_text())
    tuning.forget()
    (fresh_cache / "tuning.json").write_text(json.dumps(
        {tuning.fingerprint(): {"values": {"no_such_constant": 1}}}))
    assert tuning.record() is None                     # unknown names: not trusted


def test_unknown_constant_is_refused():
    with pytest.raises(KeyError, match="no_such"):
        with tuning.using(no_such=1):
            pass


def test_the_values_shape_the_code():
    if not parallel.available():
        pytest.skip("no C compiler: no thread pool, no parallel regions")
    x = np.ones((64, 256), np.float32)
    with tuning.using(parallel_min_work=0):
        assert FORK in _ir(lambda v: v * 2.0 + 1.0, x)
    with tuning.using(parallel_min_work=1 << 62):
        assert FORK not in _ir(lambda v: v * 2.0 + 1.0, x)
    chain = lambda v: jnp.tanh(jnp.exp(jnp.sqrt(v)))   # noqa: E731
    with tuning.using(interleave=8):
        assert "llvm.loop.interleave.count\", i32 8" in _ir(chain, x)
    with tuning.using(interleave=0):
        assert "llvm.loop.interleave.count" not in _ir(chain, x)
    a = np.ones((256, 256), np.float32)
    with tuning.using(gemm_min_work=1 << 62):
        assert FORK not in _ir(jnp.matmul, a, a)
    with tuning.using(gemm_min_work=1):
        assert FORK in _ir(jnp.matmul, a, a)


def test_vector_width_reaches_llvm_only_for_the_host():
    host = target.host_cpu()
    with tuning.using(vector_bits=256):
        feats = compiler.llvm_features(host)
        assert ("+prefer-256-bit" in feats) == ("avx512f" in target.host_features())
        assert "-prefer-256-bit" in compiler.llvm_features("skylake-avx512")
    with tuning.using(vector_bits=512):
        assert "+prefer-256-bit" not in compiler.llvm_features(host)


@pytest.mark.parametrize("bits", [256, 512])
def test_tuned_code_computes_the_same(rng, bits):
    """Every candidate a probe may pick gives the reference's results."""
    x = rng.random((96, 640), dtype=np.float32)
    chain = lambda v: jnp.tanh(jnp.exp(jnp.sqrt(v))) * v + 1.0   # noqa: E731
    expect = np.tanh(np.exp(np.sqrt(x.astype(np.float64)))) * x + 1.0
    for n in (0, 2, 8):
        with tuning.using(vector_bits=bits, interleave=n, parallel_min_work=0):
            got = jx.jit(chain)(x)
        np.testing.assert_allclose(got, expect, rtol=2e-6, atol=1e-6)


def test_bench_machine_shows_and_remeasures(fresh_cache):
    (fresh_cache / "machine.json").write_text("{}")    # limits: measured quickly below
    r = subprocess.run([sys.executable, "-m", "jx.cli", "bench", "--machine", "--quick"],
                       capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert "parallel loops from" in r.stdout and "probe: loop" in r.stdout
    first = json.loads((fresh_cache / "tuning.json").read_text())
    assert "measured" in r.stdout
    r = subprocess.run([sys.executable, "-m", "jx.cli", "bench", "--machine", "--quick",
                        "--remeasure"], capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert "measuring the code-generation constants" in r.stderr
    assert set(json.loads((fresh_cache / "tuning.json").read_text())) == set(first)
