"""GPU benchmarks of the CUDA backend (`jx bench --target cuda [--quick]`):
memory-bound fused kernels at the suite's sizes and 8x larger against JAX on the
GPU and the measured device-to-device copy bandwidth, a few model steps, and
the dispatch time of a 3-element call. Prints one table row per case."""
from __future__ import annotations

import sys
import time

import numpy as np


def _sync(cp):
    cp.cuda.get_current_stream().synchronize()


def _time(fn, sync, reps: int, warm: int = 3) -> float:
    """Median seconds per call over `reps` calls, timed in batches."""
    for _ in range(warm):
        fn()
    sync()
    batches = []
    per = max(1, reps // 5)
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(per):
            fn()
        sync()
        batches.append((time.perf_counter() - t0) / per)
    return float(np.median(batches))


def _time_jax(jax, fn, reps: int) -> float:
    last = []
    return _time(lambda: last.append(fn()) if not last else last.__setitem__(0, fn()),
                 lambda: jax.block_until_ready(last[0]), reps)


def copy_bandwidth(cp, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy, bytes read + written per second."""
    a = cp.empty(nbytes, np.uint8)
    b = cp.empty_like(a)
    t = _time(lambda: b.__setitem__(Ellipsis, a), lambda: _sync(cp), 20)
    return 2 * nbytes / t


def gemm_peak(cp, n: int = 8192, dtype=np.float32) -> float:
    """FLOP/s of an n^3 matrix product through CuPy (cuBLAS): the GPU's GEMM limit."""
    a = cp.ones((n, n), dtype)
    b = cp.ones((n, n), dtype)
    t = _time(lambda: a @ b, lambda: _sync(cp), 10)
    return 2 * n ** 3 / t


def chain(m, x):
    y = m.tanh(x * 0.5 + 1.0)
    y = m.exp(-m.abs(y)) * 2.0
    y = m.sqrt(y + x * x)
    y = y - 0.25 * x
    return m.maximum(y, 0.0)


def sum_of_squares(m, x):
    return m.sum(x * x)


def softmax(m, x):
    e = m.exp(x - m.max(x, axis=-1, keepdims=True))
    return e / m.sum(e, axis=-1, keepdims=True)


def layernorm(m, x, gamma, beta):
    mean = m.mean(x, axis=-1, keepdims=True)
    var = m.mean(m.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) / m.sqrt(var + 1e-5) * gamma + beta


def _cases(quick: bool):
    s = 4 if quick else 1
    big = 1 if quick else 8
    out = []
    for scale, tag in ((1, ""), (big, " x8")):
        if quick and scale != 1:
            continue
        n = 4096 * 4096 * scale // s
        out.append((f"elementwise chain{tag}", chain, [(n // 4096, 4096)], 8))
        n = 8192 * 8192 * scale // s
        out.append((f"sum of squares{tag}", sum_of_squares, [(n // 8192, 8192)], 4))
        out.append((f"row softmax{tag}", softmax, [(4096 * scale // s, 4096)], 8))
        rows = 8192 * scale // s
        out.append((f"layernorm{tag}", layernorm, [(rows, 1024), (1024,), (1024,)], 8))
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    import cupy as cp

    import jx
    import jx.numpy as jnp
    try:
        import jax
        import jax.numpy as jaxnp
    except ImportError:
        jax = None
    rng = np.random.default_rng(0)
    bw = copy_bandwidth(cp)
    dev = cp.cuda.Device()
    peak = gemm_peak(cp, 2048 if quick else 8192)
    print(f"device {cp.cuda.runtime.getDeviceProperties(dev.id)['name'].decode()} "
          f"sm_{dev.compute_capability}; copy bandwidth {bw / 1e9:.0f} GB/s (read+write); "
          f"GEMM f32 {peak / 1e12:.1f} TFLOP/s (cuBLAS via CuPy)")
    print(f"{'case':24s} {'jx ms':>9s} {'jx GB/s':>9s} {'% copy':>7s} {'jax ms':>9s} "
          f"{'jx/jax':>7s}")
    for name, fn, shapes, bytes_per in _cases(quick):
        host = [rng.standard_normal(sh).astype(np.float32) for sh in shapes]
        args = [cp.asarray(h) for h in host]
        f = jx.jit(lambda *a, fn=fn: fn(jnp, *a), backend="cuda")
        want = fn(np, *host)
        got = cp.asnumpy(f(*args))
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-3)
        t = _time(lambda: f(*args), lambda: _sync(cp), 20)
        moved = bytes_per * host[0].size
        tj = float("nan")
        if jax is not None:
            jf = jax.jit(lambda *a, fn=fn: fn(jaxnp, *a))
            jargs = [jax.device_put(h) for h in host]
            tj = _time_jax(jax, lambda: jf(*jargs), 20)
        print(f"{name:24s} {t * 1e3:9.3f} {moved / t / 1e9:9.0f} {100 * moved / t / bw:6.1f}% "
              f"{tj * 1e3:9.3f} {tj / t:7.2f}x")
    # dispatch: host time per call of a 3-element function (launches are asynchronous)
    f = jx.jit(lambda x: x * 2.0 + 1.0, backend="cuda")
    x3 = cp.asarray(np.ones(3, np.float32))
    t = _time(lambda: f(x3), lambda: _sync(cp), 20000)
    line = f"dispatch (3 f32, jx.jit) {t * 1e6:.1f} us/call"
    if jax is not None:
        jf = jax.jit(lambda x: x * 2.0 + 1.0)
        j3 = jax.device_put(np.ones(3, np.float32))
        tj = _time_jax(jax, lambda: jf(j3), 20000)
        line += f"; jax {tj * 1e6:.1f} us/call"
    print(line)
    # the same through a compiled artifact and the runtime (jx compile --target cuda)
    import os
    import tempfile

    import jx.runtime
    from jx.cli.compile import compile_model
    models = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models.py")
    if os.path.isfile(models):
        with tempfile.TemporaryDirectory() as tmp:
            res = compile_model(models, tmp, ("dispatch",), (), "cuda", None, None,
                                "sm_" + dev.compute_capability)
            art = jx.runtime.load(res["library"])
            t = _time(lambda: art.dispatch(x3), lambda: _sync(cp), 20000)
            print(f"dispatch (3 f32, jx.runtime artifact) {t * 1e6:.1f} us/call")
    return 0
