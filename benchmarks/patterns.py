"""Patterns of real JAX programs (issue 19) as benchmarks: jx against JAX in one run,
with each step's flops and compulsory bytes set against the machine's roofline.

    jx bench --suite patterns [--only NAME] [--min-time S] [--out FILE.md]

The programs are benchmarks/patterns/*.py: plain JAX-style code (not a package),
loaded by corpus.py's import swap for jx and as written for JAX. Each has
`bench(small=False)` returning (the timed callable, its arguments): the user's
jitted step, or the Python function driving it when the pattern is the Python loop;
and `cost(args)` returning (flops, bytes) of one call, bytes being the compulsory
memory traffic. Optional: `result(out)`, the part of the output to compare (a
pmapped step's first replica), `TOLERANCE = (rtol, atol)`, and `IN_GEOMEAN = False`
for a probe kept out of the geometric mean (the per-call overhead case: issue 19's
targets set the mean over the program patterns and the overhead apart).

The roofline fraction of a time t is max(flops / peak, bytes / bandwidth) / t: 1.0
is the machine's limit for that work (f32 GEMM peak and the better of copy and read
bandwidth, from machine.limits: measured once, cached).
"""
from __future__ import annotations

import math
import os
import pathlib
import time

import numpy as np

from . import machine, measure
from .corpus import _t, _timed, load, parse_args, programs, publish

HERE = os.path.dirname(os.path.abspath(__file__))
PATTERNS = pathlib.Path(HERE) / "patterns"
TOLERANCE = (2e-3, 2e-3)      # float32 steps run in another order by each engine


def patterns() -> list:
    return programs(PATTERNS)


def load_pattern(name: str, use_jx: bool):
    return load(name, use_jx, PATTERNS)


def compared(module, out, tree_util) -> list:
    """The leaves of a step's output that the engines must agree on."""
    out = module.result(out) if hasattr(module, "result") else out
    return [np.asarray(x) for x in tree_util.tree_leaves(out)]


def roofline(flops: float, nbytes: float, seconds: float, limits: dict) -> dict:
    """Achieved rates of one call and their fractions of the machine's limits."""
    peak = machine.peak_for(limits, 32)               # GFLOP/s
    bw = machine.bandwidth_roof(limits)               # GB/s
    gflop_s, gb_s = flops / seconds / 1e9, nbytes / seconds / 1e9
    bound = max(flops / (peak * 1e9), nbytes / (bw * 1e9))
    return {"gflop_s": gflop_s, "gb_s": gb_s, "peak_fraction": gflop_s / peak,
            "bandwidth_fraction": gb_s / bw, "roofline_fraction": bound / seconds,
            "bound": "compute" if flops / peak >= nbytes / bw else "memory"}


def bench_pattern(name: str, min_time: float, with_jax: bool, limits: dict,
                  small: bool = False) -> dict:
    import jx
    module = load_pattern(name, use_jx=True)
    step, args = module.bench(small=small)
    flops, nbytes = module.cost(args)
    res = {"pattern": name, "doc": (module.__doc__ or "").strip().split("\n\n")[0],
           "flops": flops, "bytes": nbytes, "first_s": {}, "median_s": {},
           "in_geomean": getattr(module, "IN_GEOMEAN", True)}
    res["first_s"]["jx"], res["median_s"]["jx"], got = _timed(step, args, lambda x: x,
                                                                 min_time)
    res["jx"] = roofline(flops, nbytes, res["median_s"]["jx"], limits)
    res["devices"] = {"jx": jx.local_device_count()}
    if with_jax:
        import jax
        jmod = load_pattern(name, use_jx=False)
        jstep, jargs = jmod.bench(small=small)
        first, med, want = _timed(jstep, jargs, jax.block_until_ready, min_time)
        res["first_s"]["JAX"], res["median_s"]["JAX"] = first, med
        res["JAX"] = roofline(flops, nbytes, med, limits)
        res["devices"]["JAX"] = jax.local_device_count()
        res["speedup_vs_jax"] = med / res["median_s"]["jx"]
        problems = measure.compare("jx", compared(module, got, jx.tree_util),
                                   compared(jmod, want, jax.tree_util),
                                   getattr(module, "TOLERANCE", TOLERANCE))
        res["agrees_with_jax"] = not problems
        res["mismatches"] = [str(p) for p in problems]
    return res


def geomean(values: list) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def mean_speedups(results: list) -> list:
    """The speedups the geometric mean is taken over."""
    return [r["speedup_vs_jax"] for r in results
            if r.get("speedup_vs_jax") and r.get("in_geomean", True)]


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.3g}%"


def report(results: list, limits: dict, command: str) -> str:
    """The markdown report: one row per pattern, the geometric-mean speedup."""
    lines = ["# Patterns of real JAX programs: jx vs JAX (issue 19)", "",
             f"Command: `{command}`", "",
             f"CPU: {limits.get('cpu', '?')}, {limits.get('cores', '?')} cores; roofline: "
             f"f32 {'FMA' if 'fma_f32_gflop_s' in limits else 'GEMM'} peak "
             f"{machine.peak_for(limits, 32):.4g} GFLOP/s, bandwidth "
             f"{machine.bandwidth_roof(limits):.4g} GB/s (best of copy and read).", "",
             "| pattern | jx | JAX | jx speedup | jx GFLOP/s (% peak) | jx GB/s (% bw) | "
             "jx roofline | JAX roofline | jx first call | agrees |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        m, j, x = r["median_s"], r["jx"], r.get("JAX")
        sp = r.get("speedup_vs_jax")
        agrees = {True: "yes", False: "NO", None: "-"}[r.get("agrees_with_jax")]
        lines.append(
            f"| {r['pattern']} | {_t(m['jx'])} | {_t(m.get('JAX'))} | "
            f"{f'{sp:.2f}x' if sp else '-'} | {j['gflop_s']:.3g} ({_pct(j['peak_fraction'])}) "
            f"| {j['gb_s']:.3g} ({_pct(j['bandwidth_fraction'])}) | "
            f"{_pct(j['roofline_fraction'])} ({j['bound']}) | "
            f"{_pct(x['roofline_fraction']) if x else '-'} | {_t(r['first_s']['jx'])} | "
            f"{agrees} |")
    speedups = mean_speedups(results)
    if speedups:
        left_out = [r["pattern"] for r in results if not r.get("in_geomean", True)]
        lines += ["", f"Geometric-mean speedup of jx over JAX: {geomean(speedups):.2f}x "
                      f"({len(speedups)} patterns" +
                      (f"; {', '.join(left_out)} left out" if left_out else "") + ")."]
    devices = {k: v for r in results for k, v in r.get("devices", {}).items()}
    if len(set(devices.values())) > 1:
        lines += ["", "Local devices (pmap): " + ", ".join(f"{k} {v}" for k, v in
                                                          devices.items()) + "."]
    for r in results:
        for p in r.get("mismatches", []):
            lines.append(f"- {r['pattern']}: {p}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args, with_jax = parse_args(argv, "patterns", "results-patterns.md")
    limits = machine.limits()
    t0 = time.perf_counter()
    results = []
    for name in patterns():
        if args.only and not any(o in name for o in args.only):
            continue
        r = bench_pattern(name, args.min_time, with_jax, limits)
        results.append(r)
        print(f"{name}: jx {_t(r['median_s']['jx'])}, JAX {_t(r['median_s'].get('JAX'))}",
              flush=True)
    command = "jx bench --suite patterns" + "".join(f" --only {o}" for o in args.only)
    publish(args.out, report(results, limits, command),
            {"command": command, "machine": limits,
             "geomean_speedup_vs_jax": geomean(mean_speedups(results)),
             "seconds": time.perf_counter() - t0, "results": results})
    return 1 if any(r.get("agrees_with_jax") is False for r in results) else 0
