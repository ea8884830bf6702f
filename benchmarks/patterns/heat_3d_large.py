"""The 3-D heat equation on a grid far larger than a last-level cache (256^3 float32:
64 MiB per grid), so every step streams the grid through memory: the stencil's
bandwidth figure. Explicit finite differences, a 7-point stencil of shifted slices
with the boundary held at zero, updated in place with .at[].set, eight steps per
call in lax.fori_loop."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

STEPS = 8
IN_GEOMEAN = False          # heat_3d is the program pattern; this is its bandwidth probe


def step(u, alpha):
    lap = (u[2:, 1:-1, 1:-1] + u[:-2, 1:-1, 1:-1] + u[1:-1, 2:, 1:-1]
           + u[1:-1, :-2, 1:-1] + u[1:-1, 1:-1, 2:] + u[1:-1, 1:-1, :-2]
           - 6.0 * u[1:-1, 1:-1, 1:-1])
    return u.at[1:-1, 1:-1, 1:-1].add(alpha * lap)


@jax.jit
def run(u, alpha):
    return lax.fori_loop(0, STEPS, lambda _, u: step(u, alpha), u)


def bench(small=False):
    n = 20 if small else 256
    rng = np.random.default_rng(11)
    u = rng.uniform(0.0, 1.0, size=(n, n, n)).astype(np.float32)
    u[[0, -1]], u[:, [0, -1]], u[:, :, [0, -1]] = 0, 0, 0
    return run, (jnp.asarray(u), 0.05)


def cost(args):
    n = args[0].shape[0]
    flops = STEPS * 9 * (n - 2) ** 3
    nbytes = STEPS * 2 * 4 * n ** 3           # each step reads and writes the grid once
    return flops, nbytes
