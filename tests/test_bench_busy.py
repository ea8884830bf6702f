"""`jx bench benchmarks/ --busy N`: the spinner processes (they run, burn CPU, and are
gone afterwards however the block ends, even if their parent is killed) and the
command writing results-busy.json. No assertion depends on how fast anything runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from importlib import import_module
from pathlib import Path

import numpy as np
import pytest

from jx.cli.bench import benchmarks_package

ROOT = Path(__file__).resolve().parents[1]
bench = benchmarks_package()
busy = import_module(f"{bench.__name__}.busy")
machine = import_module(f"{bench.__name__}.machine")

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")

FAKE_MACHINE = {"cpu": "test cpu", "cores": 2, "threads": 2, "copy_gb_s": 10.0,
                "read_gb_s": 12.0, "gemm_f32_gflop_s": 100.0, "gemm_f64_gflop_s": 50.0,
                "fma_f32_gflop_s": 200.0, "fma_f64_gflop_s": 100.0,
                "blas": "test blas", "numpy": np.__version__, "quick": False,
                "measured": "2000-01-01 00:00:00"}


def stat(pid: int):
    """(state, ppid, cpu ticks used) from /proc/<pid>/stat; None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()      # after "pid (comm) "
    return fields[0], int(fields[1]), int(fields[11]) + int(fields[12])


def running(pid: int) -> bool:
    s = stat(pid)
    return s is not None and s[0] not in "ZX"        # a zombie has stopped running


def wait_gone(pids, seconds: float = 10.0) -> list:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(running(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if running(p)]


def cpu_ticks_grow(pids, seconds: float = 10.0) -> bool:
    """Whether every process's CPU time grows (polled: no rate is assumed)."""
    start = {p: stat(p)[2] for p in pids}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = {p: stat(p) for p in pids}
        if all(now[p] and now[p][2] > start[p] for p in pids):
            return True
        time.sleep(0.05)
    return False


def test_spinners_run_burn_cpu_and_are_gone_afterwards():
    n = busy.max_spinners()
    with busy.Spinners(n) as spin:
        pids = spin.pids
        assert len(pids) == n == len(set(pids))
        for p in pids:
            assert running(p) and stat(p)[1] == os.getpid()     # our own children
        assert cpu_ticks_grow(pids)
        spin.check()
    assert spin.pids == []
    assert wait_gone(pids, 0.0) == []                          # reaped by the block's end


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_spinners_stop_when_the_block_raises(exc):
    with pytest.raises(exc):
        with busy.Spinners(1) as spin:
            pids = spin.pids
            assert running(pids[0])
            raise exc("stop")
    assert wait_gone(pids, 0.0) == []


def test_spinners_exit_by_themselves_when_their_parent_is_killed():
    code = ("import os, signal, sys; sys.path.insert(0, sys.argv[1]); "
            "from benchmarks import busy; s = busy.Spinners(1).start(); "
            "print(*s.pids, flush=True); os.kill(os.getpid(), signal.SIGKILL)")
    r = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True,
                       text=True, timeout=60)
    pids = [int(p) for p in r.stdout.split()]
    assert len(pids) == 1, r.stderr
    assert wait_gone(pids) == []


def test_never_more_spinners_than_cores():
    with pytest.raises(ValueError, match="choose 1 to"):
        busy.Spinners(busy.max_spinners() + 1)
    with busy.Spinners(0) as spin:
        assert spin.pids == []


def test_busy_command_writes_quiet_and_busy_times(tmp_path):
    cache = tmp_path / "cache"            # the machine's limits, so nothing is measured
    cache.mkdir()
    key = machine.fingerprint(machine.default_threads())
    (cache / machine.CACHE_NAME).write_text(json.dumps({key: FAKE_MACHINE}))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "jx.cli.main", "bench", "benchmarks", "--busy",
                        "1", "--quick", "--only", "matmul 1024", "--no-jax", "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "JX_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stdout + r.stderr
    for head in ("jx quiet", "jx busy", "jx slowdown", "JAX slowdown", "jx/JAX", "test cpu"):
        assert head in r.stdout, head
    assert not (out / "results.md").exists() and (out / "results-busy.md").exists()
    doc = json.loads((out / "results-busy.json").read_text())
    assert doc["busy_cores"] == 1 and doc["cpu"] == "test cpu"
    [entry] = doc["entries"]
    assert entry["name"] == "matmul 1024" and entry["target"] is True
    assert set(entry["engines"]) == {"jx", "numpy"} and entry["ratio"] is None
    for rec in entry["engines"].values():
        assert rec["quiet_s"] > 0 and rec["busy_s"] > 0
        assert rec["slowdown"] == pytest.approx(rec["busy_s"] / rec["quiet_s"])
        assert rec["busy_samples"] >= 1


def test_busy_over_the_core_count_is_refused(tmp_path):
    r = subprocess.run([sys.executable, "-m", "jx.cli.main", "bench", "benchmarks", "--busy",
                        str(busy.max_spinners() + 1), "--out", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "choose 1 to" in r.stderr
