"""Per-call overhead, the other direction: a jitted penalty of a dict of 20 small
parameter arrays with two Python-float weights, returning one scalar (a loss or
a metric evaluated every step). Inputs dominate the call path."""
import numpy as np
import jax
import jax.numpy as jnp

LEAVES, SIZE = 20, 8
IN_GEOMEAN = False          # an overhead probe, not one of the program patterns


@jax.jit
def penalty(params, l1, l2):
    return sum(l1 * jnp.abs(p).sum() + l2 * (p * p).sum() for p in params.values())


def bench(small=False):
    rng = np.random.default_rng(9)
    params = {f"layer{i}": jnp.asarray(rng.normal(size=SIZE), jnp.float32)
              for i in range(LEAVES)}
    return penalty, (params, 1e-3, 1e-4)


def cost(args):
    n = sum(p.size for p in args[0].values())
    return 5 * n, 4 * n
