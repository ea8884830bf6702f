"""The machine's limits, measured once and cached under jx's cache folder.

  copy bandwidth  – STREAM-like copy of large arrays (bytes read + bytes written)
  read bandwidth  – a sum over large arrays (bytes read)
  f32/f64 peak    – fused multiply-adds on registers on every core (fma_probe.py),
                    the peak rooflines are drawn under
  f32/f64 GEMM    – a matrix product through NumPy's BLAS (what the BLAS reaches)
  cores           – CPUs this process may run on, and the threads used

NumPy releases the GIL inside copies, reductions and BLAS calls, so a thread
pool over slices of one big array drives every core from Python.
"""
from __future__ import annotations

import concurrent.futures as futures
import os
import socket
import time

import numpy as np

from jx.runtime import host, store

CACHE_NAME = "machine.json"
BANDWIDTH_MIB = 256          # per array: far larger than any last-level cache
GEMM_N = 2048
REPEATS = 5


def cores() -> int:
    return host.cpus_usable()


def default_threads() -> int:
    env = os.environ.get("JX_NUM_THREADS")
    return int(env) if env and env.isdigit() and int(env) > 0 else cores()


def cpu_model() -> str:
    return host.model_name()


def fingerprint(threads: int) -> str:
    return "|".join([socket.gethostname(), cpu_model(), str(cores()), str(threads),
                     f"numpy {np.__version__}"])


def _best(fn, repeats: int = REPEATS) -> float:
    """Shortest of `repeats` timed runs of fn() after one warm-up run."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _split(a: np.ndarray, parts: int) -> list:
    return np.array_split(a, parts)


def bandwidth(threads: int, mib: int = BANDWIDTH_MIB) -> dict:
    """Copy and read bandwidth in GB/s (1e9 bytes): the best over 1 and `threads`
    threads, each taking a slice (on a busy machine fewer threads can win, and a
    roof is the best the machine can do)."""
    n = mib * 2**20 // 8
    src = np.random.default_rng(0).random(n)            # float64, touched: pages mapped
    dst = np.empty_like(src)
    dst.fill(0.0)
    t_copy = t_read = float("inf")
    for t in sorted({1, threads}):
        pairs = list(zip(_split(dst, t), _split(src, t)))
        chunks = _split(src, t)
        with futures.ThreadPoolExecutor(t) as pool:
            t_copy = min(t_copy, _best(lambda: list(pool.map(lambda p: np.copyto(*p),
                                                              pairs))))
            t_read = min(t_read, _best(lambda: list(pool.map(np.sum, chunks))))
    return {"copy_gb_s": 2 * src.nbytes / t_copy / 1e9, "read_gb_s": src.nbytes / t_read / 1e9}


def gemm_peak(dtype, n: int = GEMM_N) -> float:
    """GFLOP/s of an n^3 matrix product through NumPy's BLAS (its own threads)."""
    rng = np.random.default_rng(0)
    a = rng.random((n, n)).astype(dtype)
    b = rng.random((n, n)).astype(dtype)
    out = np.empty((n, n), dtype)
    t = _best(lambda: np.matmul(a, b, out=out), repeats=REPEATS)
    return 2 * n**3 / t / 1e9


def measure(threads: int, quick: bool = False) -> dict:
    mib = 32 if quick else BANDWIDTH_MIB
    bw = bandwidth(threads, mib)
    n = 512 if quick else GEMM_N
    return {
        "cpu": cpu_model(), "cores": cores(), "threads": threads,
        "copy_gb_s": round(bw["copy_gb_s"], 2), "read_gb_s": round(bw["read_gb_s"], 2),
        "gemm_f32_gflop_s": round(gemm_peak(np.float32, n), 2),
        "gemm_f64_gflop_s": round(gemm_peak(np.float64, n), 2),
        **fma_peaks(threads, quick),
        "blas": _blas_name(), "numpy": np.__version__, "quick": quick,
        "measured": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def fma_peaks(threads: int, quick: bool = False) -> dict:
    from .fma_probe import fma_peak
    seconds = 0.01 if quick else 0.05
    return {f"fma_f{bits}_gflop_s": round(fma_peak(bits, threads, seconds), 2)
            for bits in (32, 64)}


def _blas_name() -> str:
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - informational only
        return "unknown"


def cache_path() -> str:
    return store.record_path(CACHE_NAME)


def cached(threads: int) -> dict | None:
    """The limits stored for `threads` threads on this machine, or None (also for a
    record from before the FMA probe: it is measured again)."""
    rec = store.read_record(CACHE_NAME, fingerprint(threads))
    return rec if rec is not None and "fma_f32_gflop_s" in rec else None


def limits(threads: int | None = None, remeasure: bool = False, quick: bool = False) -> dict:
    """The machine's limits for `threads` threads: from the cache, or measured now
    (a few seconds) and stored. A quick measurement (small arrays, used only when
    nothing is cached) is never stored."""
    threads = threads or default_threads()
    stored = None if remeasure else cached(threads)
    if stored is not None:
        return {**stored, "cached": True}
    result = measure(threads, quick=quick)
    if not quick:       # unwritable: measured again next time
        store.save_record(CACHE_NAME, fingerprint(threads), result)
    return {**result, "cached": False}


def peak_for(machine: dict, float_bits: int) -> float:
    """The arithmetic peak (GFLOP/s) a compute-bound kernel is compared with: the
    FMA probe's, or for limits recorded without it the BLAS GEMM's."""
    bits = 64 if float_bits == 64 else 32
    return machine.get(f"fma_f{bits}_gflop_s") or machine[f"gemm_f{bits}_gflop_s"]


def bandwidth_roof(machine: dict) -> float:
    """The bandwidth a memory-bound kernel is compared with: the better of copy and read."""
    return max(machine["copy_gb_s"], machine["read_gb_s"])


THREADS_MARK = "JX_BENCH_THREADS"


def thread_env(n: int) -> dict:
    """Environment limiting every engine to n threads: jx's runtime, BLAS, XLA
    (ensure_threads also pins the process to n cores)."""
    env = {THREADS_MARK: str(n), "JX_NUM_THREADS": str(n), "OMP_NUM_THREADS": str(n),
           "OPENBLAS_NUM_THREADS": str(n), "MKL_NUM_THREADS": str(n)}
    if n == 1:      # XLA has no "n threads" flag; one thread it can do
        flags = os.environ.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false "
                            "intra_op_parallelism_threads=1").strip()
    return env


def ensure_threads(n: int | None, module: str) -> None:
    """Thread pools size themselves when their library loads, before any option is
    read: so re-run this process (`python -m module ...`) with the limits set."""
    if not n or os.environ.get(THREADS_MARK) == str(n):
        return
    import sys
    env = {**os.environ, **thread_env(n)}
    # XLA's CPU client takes no thread count (its flags leave Eigen's pool at full
    # size): pinning the process to n cores is what limits every engine alike.
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        if n < len(cpus):
            os.sched_setaffinity(0, cpus[:n])
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]], env)
