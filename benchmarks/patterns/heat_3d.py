"""The 3-D heat equation by explicit finite differences: a 7-point stencil of shifted
slices, ten steps per call in lax.fori_loop; the boundary held at zero by padding the
updated interior (jnp.pad), a common way to avoid an indexed update."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

STEPS = 10


def laplacian(u):
    c = u[1:-1, 1:-1, 1:-1]
    return (u[2:, 1:-1, 1:-1] + u[:-2, 1:-1, 1:-1]
            + u[1:-1, 2:, 1:-1] + u[1:-1, :-2, 1:-1]
            + u[1:-1, 1:-1, 2:] + u[1:-1, 1:-1, :-2] - 6 * c)


@jax.jit
def evolve(u, alpha):
    def body(_, u):
        return jnp.pad(u[1:-1, 1:-1, 1:-1] + alpha * laplacian(u), 1)
    return lax.fori_loop(0, STEPS, body, u)


def bench(small=False):
    n = 12 if small else 128
    x = np.linspace(0, 1, n, dtype=np.float32)
    u = np.sin(np.pi * x)[:, None, None] * np.sin(np.pi * x)[None, :, None] \
        * np.sin(2 * np.pi * x)[None, None, :]
    u[n // 2, n // 2, n // 2] = 5.0
    u[[0, -1]], u[:, [0, -1]], u[:, :, [0, -1]] = 0, 0, 0
    return evolve, (jnp.asarray(u, jnp.float32), 0.1)


def cost(args):
    n = args[0].shape[0]
    interior = (n - 2) ** 3
    flops = STEPS * 9 * interior                  # 6 adds, the -6c, the alpha*, the +=
    # a grid larger than the cache streams through memory once per step: read and write
    nbytes = STEPS * 2 * 4 * n ** 3
    return flops, nbytes
