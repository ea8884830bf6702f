"""2x2 max-pooling (stride 2, VALID, NHWC: batch 32, 112x112 -> 56x56, 64 channels,
float32) and its gradient: jx (jx.jit) against JAX's CPU jit and NumPy, with the
achieved memory bandwidth.

    python -m benchmarks.pooling [--repeats N]

Bytes counted are the compulsory traffic: forward, the input read once and the
output written once; gradient (the vjp at x of the output cotangent g), x and g
read once and dx written once. GB/s = bytes / best time (1e9 bytes). The machine's
copy and read bandwidth (benchmarks.machine.bandwidth) is printed for scale.

`cases()` returns the two cases as (name, jx function, JAX function, NumPy
function, arguments, bytes) for a suite to run.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from .conv import np_maxpool, np_maxpool_grad  # the conv suite's NumPy references

SHAPE = (32, 112, 112, 64)
WINDOW = (1, 2, 2, 1)


def cases():
    import jx
    from jx import lax

    def pool(x):
        return lax.reduce_window(x, -np.inf, lax.max, WINDOW, WINDOW, "VALID")

    def pool_grad(x, g):
        return jx.vjp(pool, x)[1](g)[0]

    try:
        import jax

        def jpool(x):
            return jax.lax.reduce_window(x, -np.inf, jax.lax.max, WINDOW, WINDOW, "VALID")

        def jpool_grad(x, g):
            return jax.vjp(jpool, x)[1](g)[0]
        jfns = (jax.jit(jpool), jax.jit(jpool_grad))
    except ImportError:
        jfns = (None, None)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    g = rng.standard_normal(np_maxpool(x).shape).astype(np.float32)
    return [("maxpool 2x2", jx.jit(pool), jfns[0], np_maxpool, (x,),
             x.nbytes + g.nbytes),
            ("maxpool 2x2 gradient", jx.jit(pool_grad), jfns[1], np_maxpool_grad, (x, g),
             2 * x.nbytes + g.nbytes)]


def best_time(fn, args, repeats):
    out = fn(*args)
    if hasattr(out, "block_until_ready"):
        out.block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args)
        if hasattr(out, "block_until_ready"):
            out.block_until_ready()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args(argv)
    from . import machine
    print(f"CPU: {machine.cpu_model()}, {machine.cores()} cores")
    bw = machine.bandwidth(machine.default_threads())
    print(f"machine: copy {bw['copy_gb_s']:.1f} GB/s, read {bw['read_gb_s']:.1f} GB/s")
    for name, jxf, jaxf, npf, xs, nbytes in cases():
        want = npf(*xs)
        got = np.asarray(jxf(*xs))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)
        t_jx = best_time(jxf, xs, args.repeats)
        t_np = best_time(npf, xs, max(3, args.repeats // 4))
        line = (f"{name:22s} jx {t_jx * 1e3:8.2f} ms ({nbytes / t_jx / 1e9:6.1f} GB/s)   "
                f"numpy {t_np * 1e3:8.2f} ms")
        if jaxf is not None:
            np.testing.assert_allclose(np.asarray(jaxf(*xs)), want, rtol=1e-6, atol=1e-6)
            t_jax = best_time(jaxf, xs, args.repeats)
            line += (f"   jax {t_jax * 1e3:8.2f} ms ({nbytes / t_jax / 1e9:6.1f} GB/s)   "
                     f"jx/jax speed {t_jax / t_jx:5.2f}x")
        print(line)


if __name__ == "__main__":
    main()
