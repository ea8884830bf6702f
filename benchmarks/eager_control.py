"""Eager control flow: sampler-style loops written with lax.scan / fori_loop and
called outside jit (issue 17), as a user of JAX writes them in a notebook.

    jx bench --suite eager [--steps N] [--min-time S] [--out DIR]

Engines, on the same inputs:
  interpreted   jx with jx.eager.disabled(): the primitive's NumPy reference runs
                the body graph one step at a time (what jx did before issue 17)
  jx eager      jx.eager: the loop compiled once per signature, then native
  JAX eager     jax.lax.* outside jax.jit (JAX compiles the primitive alone)
  jx jit / JAX jit   the whole function jitted, the floor for the eager engines

"first" is the first call in this process: for jx, compiled without jx's object
cache (LLVM's work included); for JAX, its compile of the primitive. The other
times are medians of steady calls (the body re-traced each call, as in a loop of
calls to a function that calls lax.scan).
"""
from __future__ import annotations

import argparse
import os
import time
import types

import numpy as np

import jx
import jx.eager as eager

from . import engines, machine, measure
from .corpus import publish

HERE = os.path.dirname(os.path.abspath(__file__))


def _metropolis(lib, X, y, w0, noise, logu, step=0.05):
    """Random-walk Metropolis on a logistic-regression posterior (the data closed
    over by the log density). Returns run() -> the chain of samples."""
    lax, jnp = lib.lax, lib.numpy

    def logp(w):
        z = X @ w
        return jnp.sum(y * z - jnp.logaddexp(0.0, z)) - 0.5 * jnp.sum(w * w)

    def move(carry, inp):
        w, lp = carry
        z, lu = inp
        prop = w + step * z
        lpp = logp(prop)
        ok = lu < lpp - lp
        w, lp = jnp.where(ok, prop, w), jnp.where(ok, lpp, lp)
        return (w, lp), w

    def run():
        return lax.scan(move, (w0, logp(w0)), (noise, logu))[1]
    return run


def _rk4(lib, A, y0, steps, dt=0.01):
    """Fixed-step RK4 of dy/dt = A tanh(y) - 0.1 y (A closed over) with fori_loop.
    Returns run() -> y(steps * dt)."""
    lax, jnp = lib.lax, lib.numpy

    def rhs(y):
        return A @ jnp.tanh(y) - 0.1 * y

    def step(i, y):
        k1 = rhs(y)
        k2 = rhs(y + 0.5 * dt * k1)
        k3 = rhs(y + 0.5 * dt * k2)
        k4 = rhs(y + dt * k3)
        return y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return lambda: lax.fori_loop(0, steps, step, y0)


def cases(steps: int, seed: int = 0) -> list:
    """(name, size, make(lib, *args) -> run(), args) per case; inputs fixed, float32. The
    inputs are arguments (not closed over) so that jit stages the loop instead of
    running it while tracing, as it does with constants."""
    rng = np.random.default_rng(seed)
    d, n = 8, 200
    X = rng.standard_normal((n, d)).astype(np.float32)
    w_true = rng.standard_normal(d).astype(np.float32)
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ w_true))).astype(np.float32)
    noise = rng.standard_normal((steps, d)).astype(np.float32)
    logu = np.log(rng.random(steps)).astype(np.float32)
    w0 = np.zeros(d, np.float32)
    k = 16
    A = (0.1 * rng.standard_normal((k, k))).astype(np.float32)
    y0 = rng.standard_normal(k).astype(np.float32)
    return [
        ("RW Metropolis, lax.scan", f"{steps} steps, logreg {n}x{d}", _metropolis,
         (X, y, w0, noise, logu)),
        ("RK4 ODE, lax.fori_loop", f"{steps} steps, {k} states",
         lambda lib, A, y0: _rk4(lib, A, y0, steps), (A, y0)),
    ]


def _libs():
    libs = {"jx": types.SimpleNamespace(lax=jx.lax, numpy=jx.numpy)}
    try:
        import jax
        import jax.numpy  # noqa: F401
        libs["jax"] = types.SimpleNamespace(lax=jax.lax, numpy=jax.numpy, jax=jax)
    except Exception:  # noqa: BLE001 - no JAX: its columns are left out
        pass
    return libs


def _timed(call, min_time: float) -> tuple:
    dt, out = measure.first_call(call)
    return dt, measure.time_calls(call, min_time).median, out


def bench_case(name, size, make, args, libs, min_time: float) -> dict:
    """Steady calls of run() (its loop body defined once, as at a notebook's top
    level) and of make(...)() (the body defined afresh on each call, as inside a
    function): JAX's own trace cache keys on the body function's identity."""
    jxl = libs["jx"]
    res = {"name": name, "size": size, "first_s": {}, "median_s": {}}
    run = make(jxl, *args)
    with eager.disabled():
        first, med, ref = _timed(run, min_time)
    res["median_s"]["interpreted"], res["first_s"]["interpreted"] = med, first
    eager.clear_cache()
    eager.reset_stats()
    with engines.fresh_object_cache():
        first, out = measure.first_call(run)
    res["first_s"]["jx eager"] = first
    res["median_s"]["jx eager"] = measure.time_calls(run, min_time).median
    res["median_s"]["jx eager, fresh body"] = measure.time_calls(
        lambda: make(jxl, *args)(), min_time).median
    res["compiles"], res["hits"] = eager.STATS["compiles"], eager.STATS["hits"]
    outs = {"jx eager": out}
    jitted = jx.jit(lambda *a: make(jxl, *a)())
    first, med, outs["jx jit"] = _timed(lambda: jitted(*args), min_time)
    res["first_s"]["jx jit"], res["median_s"]["jx jit"] = first, med
    if "jax" in libs:
        jl = libs["jax"]
        block = jl.jax.block_until_ready
        on_device = [jl.jax.device_put(a) for a in args]
        jrun = make(jl, *on_device)
        first, med, outs["JAX eager"] = _timed(lambda: block(jrun()), min_time)
        res["first_s"]["JAX eager"], res["median_s"]["JAX eager"] = first, med
        res["median_s"]["JAX eager, fresh body"] = measure.time_calls(
            lambda: block(make(jl, *on_device)()), min_time).median
        jj = jl.jax.jit(lambda *a: make(jl, *a)())
        first, med, outs["JAX jit"] = _timed(lambda: block(jj(*on_device)), min_time)
        res["first_s"]["JAX jit"], res["median_s"]["JAX jit"] = first, med
    ref = np.asarray(ref)
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    res["max_rel_diff_vs_interpreted"] = {
        k: float(np.max(np.abs(np.asarray(v, np.float64) - ref)) / scale)
        for k, v in outs.items()}
    return res


def _ms(s) -> str:
    if s is None:
        return "-"
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def report(results: list, cpu: str, command: str, load: tuple | None = None) -> str:
    cols = ["interpreted", "jx eager", "JAX eager", "jx eager, fresh body",
            "JAX eager, fresh body", "jx jit", "JAX jit"]
    lines = ["# Eager control flow (issue 17)", "", f"Command: `{command}`", "",
             f"CPU: {cpu}, {machine.cores()} cores usable"
             + (f"; load average {load[0]:.2f} at the start (other work on the machine "
                "inflates and spreads the times)" if load else ""), "",
             "| case | size | " + " | ".join(cols) + " | jx eager first call | "
             "JAX eager first call | jx eager vs interpreted | jx eager vs JAX eager |",
             "|" + "---|" * (len(cols) + 6)]
    for r in results:
        med = r["median_s"]
        ratio = (lambda a, b: f"{med[a] / med[b]:.3g}x" if a in med and b in med else "-")
        lines.append(f"| {r['name']} | {r['size']} | " +
                     " | ".join(_ms(med.get(c)) for c in cols) +
                     f" | {_ms(r['first_s'].get('jx eager'))} | "
                     f"{_ms(r['first_s'].get('JAX eager'))} | "
                     f"{ratio('interpreted', 'jx eager')} | {ratio('JAX eager', 'jx eager')} |")
    lines += ["", "Medians of steady calls. \"fresh body\": the loop body is defined "
              "anew on each call (a function that builds its step and calls lax.scan), "
              "which JAX's trace cache, keyed on the function object, does not "
              "recognise; jx re-traces the body on every call either way and finds "
              "the compiled loop by its structure. First calls include compiling "
              "(jx: without its object cache). Speedups: how many times faster jx "
              "eager is (body defined once).", ""]
    for r in results:
        diffs = ", ".join(f"{k} {v:.2g}" for k, v in r["max_rel_diff_vs_interpreted"].items())
        lines.append(f"- {r['name']}: {r['compiles']} compile(s), {r['hits']} cache hits; "
                     f"max |difference| / max |interpreted|: {diffs}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="jx bench --suite eager",
                                description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--min-time", type=float, default=1.0)
    p.add_argument("--out", default=os.path.join(HERE, "results-eager.md"),
                   help="markdown report (a .json beside it holds the raw numbers)")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error("--steps must be a positive int")
    libs = _libs()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    t0 = time.perf_counter()
    results = [bench_case(n, s, m, a, libs, args.min_time) for n, s, m, a in cases(args.steps)]
    command = "jx bench --suite eager " + " ".join(argv or ())
    publish(args.out, report(results, machine.cpu_model(), command.strip(), load),
            {"cpu": machine.cpu_model(), "seconds": time.perf_counter() - t0,
             "results": results})
    return 0
