"""Measure the CPU backend's host-dependent constants (jx/codegen/cpu/tuning.py).

Runs once per host, at the first CPU compile (a few seconds), and on
`jx bench --machine --remeasure`. Each probe is a small jx.jit program built
with the constant under test pinned (tuning.using), timed as the best of a few
batches of calls:

  fork-join      a parallel and a serial build of the same small loop: the pool's
                 cost per region is the median difference of their timings
  loop cost      one thread over a loop that fits in L2: seconds per element-op
  GEMM rate      one thread over a 256^3 product: multiply-adds per second

parallel_min_work is where a loop's time saved on T threads pays the fork-join
twice over; gemm_min_work keeps the fork-join under a tenth of each thread's share
of a product. Both are rounded to powers of two, so noise between runs rarely
changes code. interleave and vector_bits are chosen by timing their candidates on
a transcendental chain (and, for the width, a plain loop); a candidate replaces
the default only when it is clearly faster (SIGNIFICANT).
"""
from __future__ import annotations

import time

import numpy as np

SIGNIFICANT = 0.03         # a candidate must beat the default by 3% to replace it
BATCH_SECONDS = 2e-3
BATCHES = 7
NEVER = 1 << 62            # a threshold no kernel reaches: serial code


def ensure(force: bool = False) -> dict | None:
    """This host's tuning record, measured now if it is not cached (or `force`)."""
    from jx.codegen.cpu import tuning
    return tuning.ensure(measure, force=force)


def _batch(fn, args) -> int:
    """Calls per batch: enough for BATCH_SECONDS (after a warm-up call)."""
    fn(*args)
    n = 1
    while n < 1 << 16:
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        if time.perf_counter() - t0 >= BATCH_SECONDS:
            break
        n *= 2
    return n


def _timed(fn, args, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn(*args)
    return (time.perf_counter() - t0) / n


def _per_call(fn, *args) -> float:
    """Seconds per call of fn(*args): the best of BATCHES batches."""
    n = _batch(fn, args)
    return min(_timed(fn, args, n) for _ in range(BATCHES))


def _difference(slow, fast, args) -> float:
    """Seconds slow(*args) takes over fast(*args): batches of the two alternate (so
    both see the same machine), and the median of their differences is robust to
    a batch a preemption spoilt."""
    n = max(_batch(slow, args), _batch(fast, args))
    diffs = sorted(_timed(slow, args, n) - _timed(fast, args, n) for _ in range(3 * BATCHES))
    return diffs[len(diffs) // 2]


def _build(fun, args, **pinned):
    """fun compiled with the tuned constants `pinned`, called on flat arrays.

    Staged and compiled directly rather than through jx.jit: jx.jit asks this
    module for the tuning at its first compile, so using it here would make the
    two import each other."""
    from jx.codegen.cpu import tuning
    from jx.codegen.cpu.jit import CompiledFunction

    from .staging import stage
    with tuning.using(**pinned):                   # compiles under the pinned values
        compiled = CompiledFunction(stage(fun, args).program,
                                    getattr(fun, "__name__", "fn"))
    compiled(*args)
    return compiled


def _probe(fun, args, **pinned) -> float:
    """Seconds per call of fun built with `pinned`."""
    return _per_call(_build(fun, args, **pinned), *args)


def _pow2(x: float, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, 1 << max(0, round(np.log2(max(x, 1.0)))))))


def _affine(x):
    return x * np.float32(1.5) + np.float32(0.5)


def _chain(x):
    import jx.numpy as jnp
    return jnp.tanh(jnp.exp(jnp.sqrt(x)))


def _matmul(a, b):
    return a @ b


def _pick(times: dict, default) -> object:
    """The fastest candidate, unless the default is within SIGNIFICANT of it."""
    best = min(times, key=times.get)
    return default if times[default] <= times[best] * (1 + SIGNIFICANT) else best


def measure() -> dict:
    from jx.codegen.cpu import parallel, target, tuning
    t_start = time.perf_counter()
    rng = np.random.default_rng(0)
    threads = parallel.num_threads() or 1
    d = tuning.DEFAULTS
    values, measured = {}, {}

    big = rng.random((64, 1024), dtype=np.float32)           # 256 KiB: in L2
    t_loop = _probe(_affine, (big,), parallel_min_work=NEVER)
    op_s = t_loop / (big.size * 2)                            # a multiply and an add
    measured["loop"] = f"{op_s * 1e9:.3f} ns/element-op"

    a = rng.random((256, 256), dtype=np.float32)
    t_gemm = _probe(_matmul, (a, a), gemm_min_work=NEVER)
    macs = 256 ** 3 / t_gemm
    measured["GEMM"] = f"{macs / 1e9:.1f} G multiply-adds/s per thread"

    if threads > 1:
        small = rng.random((8 * threads, 256), dtype=np.float32)
        fork = max(0.5e-6, _difference(_build(_affine, (small,), parallel_min_work=0),
                                       _build(_affine, (small,), parallel_min_work=NEVER),
                                       (small,)))
        measured["fork-join"] = f"{fork * 1e6:.1f} us ({threads} threads)"
        values["parallel_min_work"] = _pow2(2 * fork * threads / (op_s * (threads - 1)),
                                            1 << 12, 1 << 22)
        values["gemm_min_work"] = _pow2(10 * fork * macs, 1 << 18, 1 << 26)
    else:
        measured["fork-join"] = "none (1 thread)"

    x = rng.random((64, 1024), dtype=np.float32)
    chain = {n: _probe(_chain, (x,), parallel_min_work=NEVER, interleave=n)
             for n in (0, 2, 4, 8)}
    values["interleave"] = _pick(chain, d["interleave"])
    measured["chain by interleave"] = ", ".join(f"{n}: {t * 1e6:.0f} us"
                                                for n, t in chain.items())

    if "avx512f" in target.host_features():
        pinned = dict(parallel_min_work=NEVER, interleave=values["interleave"])
        width = {bits: _probe(_chain, (x,), vector_bits=bits, **pinned) +
                 _probe(_affine, (big,), vector_bits=bits, **pinned) for bits in (512, 256)}
        values["vector_bits"] = _pick(width, d["vector_bits"])
        measured["loops by vector width"] = ", ".join(f"{b}: {t * 1e6:.0f} us"
                                                      for b, t in width.items())
    return {"values": values, "measured": measured,
            "seconds": round(time.perf_counter() - t_start, 2)}
