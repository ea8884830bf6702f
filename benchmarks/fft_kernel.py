"""The CPU FFT kernels on split complex data (jx.prims.fft_split, jitted on the
real and imaginary float32 arrays) against NumPy's pocketfft and JAX's CPU FFT on
the equivalent complex64 data, with GFLOP/s (5 n log2 n per complex transform,
half that per real one) and the relative L2 error against a float64 reference.

    python -m benchmarks.fft_kernel [--repeats N] [--only NAME ...]

Times are the best of `repeats` runs of each (the machine's noise is +-10%).
Ratios are NumPy or JAX time / jx time: above 1, jx is faster.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np


def _best(fn, repeats: int) -> float:
    fn()                                           # compile, tables, caches
    best = math.inf
    budget = time.perf_counter() + 3.0
    for i in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
        if i >= 2 and time.perf_counter() > budget:
            break
    return best


def cases():
    """(name, flops, jx fn, its args, NumPy fn, JAX fn, complex input, reference)"""
    import jx
    import jx.numpy as jnp
    from jx.core import bind
    from jx.prims import fft_split as fs
    rng = np.random.default_rng(0)

    def c2c(re, im):
        return bind(fs.fft_c2c, re, im, inverse=False)

    def fft2(re, im):             # the second pass along axis 0: no transposes
        re, im = bind(fs.fft_c2c, re, im, inverse=False)
        return bind(fs.fft_c2c, re, im, inverse=False, axis=0)

    def fft2_transposed(re, im):  # the composition through last-axis passes only
        re, im = bind(fs.fft_c2c, re, im, inverse=False)
        re, im = bind(fs.fft_c2c, jnp.swapaxes(re, 0, 1), jnp.swapaxes(im, 0, 1), inverse=False)
        return jnp.swapaxes(re, 0, 1), jnp.swapaxes(im, 0, 1)

    def complex_case(name, shape, fn, np_fn, jax_name):
        z = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
        n_total = math.prod(shape)
        fl = 5 * n_total * math.log2(n_total) if name.startswith("fft2") else \
            5 * n_total * math.log2(shape[-1])
        args = (np.ascontiguousarray(z.real), np.ascontiguousarray(z.imag))
        return (name, fl, jx.jit(fn), args, lambda: np_fn(z), jax_name, z,
                lambda: np_fn(z.astype(np.complex128)))

    out = []
    for p in range(10, 23):
        out.append(complex_case(f"fft 2^{p}", (1 << p,), c2c, np.fft.fft, "fft"))
    out.append(complex_case("fft 1024 x 1024", (1024, 1024), c2c, np.fft.fft, "fft"))
    out.append(complex_case("fft 10007", (10007,), c2c, np.fft.fft, "fft"))
    out.append(complex_case("fft2 2048x2048", (2048, 2048), fft2, np.fft.fft2, "fft2"))
    out.append(complex_case("fft2 2048x2048 (T)", (2048, 2048), fft2_transposed, np.fft.fft2,
                            "fft2"))
    x = rng.standard_normal(1 << 20).astype(np.float32)
    out.append(("rfft 2^20", 2.5 * (1 << 20) * 20, jx.jit(lambda v: bind(fs.fft_r2c, v)), (x,),
                lambda: np.fft.rfft(x), "rfft", x,
                lambda: np.fft.rfft(x.astype(np.float64))))
    return out


def run(repeats: int = 20, only=()) -> list:
    try:
        import jax
        import jax.numpy as jjnp
    except ImportError:
        jax = None
    rows = []
    for name, fl, fn, args, np_fn, jax_name, data, ref_fn in cases():
        if only and not any(o in name for o in only):
            continue
        outs = fn(*args)
        got = np.asarray(outs[0]) + 1j * np.asarray(outs[1])
        ref = ref_fn()
        err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        t_jx = _best(lambda: fn(*args), repeats)
        t_np = _best(np_fn, repeats)
        t_jax = math.nan
        if jax is not None:
            jfn = jax.jit(getattr(jjnp.fft, jax_name))
            jd = jax.device_put(data)
            t_jax = _best(lambda: jfn(jd).block_until_ready(), repeats)
        n = data.shape[-1]
        rows.append((name, t_jx, t_np, t_jax, fl / t_jx / 1e9, err,
                     err / np.finfo(np.float32).eps / math.log2(max(n, 2))))
        r = rows[-1]
        print(f"{r[0]:18s} jx {r[1] * 1e3:9.3f} ms  numpy {r[2] * 1e3:9.3f} ms  "
              f"jax {r[3] * 1e3:9.3f} ms  vs numpy {r[2] / r[1]:5.2f}x  vs jax "
              f"{r[3] / r[1]:5.2f}x  {r[4]:6.1f} GFLOP/s  err {r[5]:.2e} "
              f"({r[6]:.2f} eps log2 n)", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--only", nargs="*", default=())
    a = ap.parse_args(argv)
    run(a.repeats, a.only)


if __name__ == "__main__":
    main()
