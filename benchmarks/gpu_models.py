"""Model-level GPU timings: the MLP SGD step, the attention block and per-example
gradients under jx.jit(backend="cuda") against JAX on the same GPU
(`jx bench --target cuda --suite models`). Needs CuPy, a GPU and JAX."""
from __future__ import annotations

import os
import sys
import time

import numpy as np


def _time(fn, sync, reps=30):
    for _ in range(3):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t) / reps


def main() -> int:
    import cupy as cp
    import jax
    import jax.numpy as jjnp

    import jx
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "samples")
    sys.path.insert(0, here)
    import attention
    import mlp
    import train
    from .jaxshim import load_model_with_jax   # the model file with jx's names bound to JAX's
    rng = np.random.default_rng(0)
    sync = cp.cuda.get_current_stream().synchronize

    def case(name, jx_fn, jax_fn, args):
        dev = jx.tree_util.tree_map(cp.asarray, args)
        f = jx.jit(jx_fn, backend="cuda")
        out = f(*dev)
        jargs = jax.tree_util.tree_map(jjnp.asarray, args)
        g = jax.jit(jax_fn)
        ref = g(*jargs)
        a = [cp.asnumpy(x) for x in jx.tree_util.tree_leaves(out)]
        b = [np.asarray(x) for x in jax.tree_util.tree_leaves(ref)]
        err = max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))
        tj = _time(lambda: f(*dev), sync)
        tx = _time(lambda: g(*jargs), lambda: jax.block_until_ready(g(*jargs)))
        print(f"{name:20s} jx {tj * 1e3:8.3f} ms  jax {tx * 1e3:8.3f} ms  jx/jax "
              f"{tx / tj:5.2f}x  max|diff| {err:.2e}")

    params = {k: (rng.standard_normal(v.shape) * 0.05).astype(np.float32)
              for k, v in mlp.PARAMS.items()}
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128).astype(np.int32)
    case("MLP SGD step", train.sgd_step, load_model_with_jax(train.__file__).sgd_step, (params, x, y))
    ap = jx.tree_util.tree_map(
        lambda v: (rng.standard_normal(v.shape) * 0.05).astype(np.float32), attention.PARAMS)
    t = rng.standard_normal((attention.TOKENS, attention.WIDTH)).astype(np.float32)
    case("attention block", attention.attention_block,
         load_model_with_jax(attention.__file__).attention_block, (ap, t))
    w, b = rng.standard_normal(64).astype(np.float32), np.float32(0.1)
    xs = rng.standard_normal((256, 64)).astype(np.float32)
    ys = (rng.random(256) < 0.5).astype(np.float32)
    case("per-example grads", train.per_example_grads,
         load_model_with_jax(train.__file__).per_example_grads, (w, b, xs, ys))
    return 0

