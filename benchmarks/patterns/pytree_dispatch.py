"""Per-call overhead: a jitted optimizer-like update of a dict of 20 small parameter
arrays with the learning rate and weight decay as Python floats (gradient descent on
a double-well penalty). The arithmetic is tiny, so the time is almost all the call."""
import numpy as np
import jax
import jax.numpy as jnp

LEAVES, SIZE = 20, 8
IN_GEOMEAN = False          # an overhead probe, not one of the program patterns


@jax.jit
def update(params, lr, weight_decay):
    return {k: p - lr * (p ** 3 - p + weight_decay * p) for k, p in params.items()}


def bench(small=False):
    rng = np.random.default_rng(8)
    params = {f"layer{i}": jnp.asarray(rng.normal(size=SIZE), jnp.float32)
              for i in range(LEAVES)}
    return update, (params, 1e-2, 1e-4)


def cost(args):
    n = sum(p.size for p in args[0].values())
    return 7 * n, 4 * 2 * n
