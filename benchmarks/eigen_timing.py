"""eigh and svd under jx.jit against NumPy (LAPACK), n = 128 and 512, float32 and
float64: the best and the median of several calls each, after a warm-up call
(compilation). NumPy is timed first, all of it: jx's thread pool, once started,
would otherwise share the cores with OpenBLAS's threads. One matrix runs on one
thread in jx; OPENBLAS_NUM_THREADS=1 gives NumPy the same (on a busy machine its
threads' timings scatter widely).

    python benchmarks/eigen_timing.py [n ...]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

import jx


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def times(fn, arg, reps: int) -> tuple:
    """(best, median) seconds of fn(arg), outputs made host arrays."""
    fn(arg)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        out = fn(arg)
        for x in (out if isinstance(out, (tuple, list)) else [out]):
            np.asarray(x)
        ts.append(time.perf_counter() - t)
    return min(ts), float(np.median(ts))


def main(sizes) -> None:
    rng = np.random.default_rng(0)
    cases = []
    for n in sizes:
        for dt in (np.float32, np.float64):
            a = rng.standard_normal((n, n)).astype(dt)
            cases += [("eigh", n, dt, (a + a.T) / 2), ("svd", n, dt, a)]
    refs = {"eigh": np.linalg.eigh, "svd": lambda x: np.linalg.svd(x, full_matrices=False)}
    reps = {n: 15 if n <= 128 else 7 for n in sizes}
    numpy_times = [times(refs[op], a, reps[n]) for op, n, _, a in cases]
    ops = {"eigh": jx.jit(lambda x: jx.lax.linalg.eigh(x, symmetrize_input=False)),
           "svd": jx.jit(lambda x: jx.lax.linalg.svd(x, full_matrices=False))}
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores, load average {load}")
    print(f"{'op':<5} {'dtype':<8} {'n':>5} {'jx best':>9} {'median':>9} {'numpy best':>11} "
          f"{'median':>9} {'ratio':>6}   (ms; ratio of the bests)")
    with jx.enable_x64():
        for (op, n, dt, a), (nb, nm) in zip(cases, numpy_times):
            jb, jm = times(ops[op], a, reps[n])
            print(f"{op:<5} {np.dtype(dt).name:<8} {n:>5} {jb * 1e3:>9.2f} {jm * 1e3:>9.2f} "
                  f"{nb * 1e3:>11.2f} {nm * 1e3:>9.2f} {jb / nb:>6.2f}")


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [128, 512])
