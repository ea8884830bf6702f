"""Gravitational n-body: all N x N pairwise separations, the softened inverse cube
(r2 + eps) ** -1.5, the accelerations as a product with the masses; a few leapfrog
steps per call in lax.fori_loop."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

STEPS = 4
EPS = 1e-2


def accelerations(pos, mass):
    d = pos[None, :, :] - pos[:, None, :]               # (N, N, 3): j minus i
    r2 = jnp.sum(d * d, axis=-1)
    inv_r3 = (r2 + EPS) ** -1.5
    return jnp.swapaxes(d * inv_r3[:, :, None], 1, 2) @ mass


@jax.jit
def leapfrog(pos, vel, mass, dt):
    def body(_, state):
        pos, vel = state
        vel = vel + 0.5 * dt * accelerations(pos, mass)
        pos = pos + dt * vel
        vel = vel + 0.5 * dt * accelerations(pos, mass)
        return pos, vel
    return lax.fori_loop(0, STEPS, body, (pos, vel))


def bench(small=False):
    n = 33 if small else 1024
    rng = np.random.default_rng(4)
    pos = rng.normal(size=(n, 3)).astype(np.float32)
    vel = 0.1 * rng.normal(size=(n, 3)).astype(np.float32)
    mass = rng.uniform(0.5, 1.5, size=n).astype(np.float32) / n
    return leapfrog, (jnp.asarray(pos), jnp.asarray(vel), jnp.asarray(mass), 1e-3)


def cost(args):
    n = args[0].shape[0]
    # per pair: 3 sub, 3 mul + 2 add, +eps, the power (rsqrt and 2 mul), 3 mul, 3 fma
    flops = STEPS * 2 * 20 * n * n
    nbytes = 4 * (3 * n * 4 + n)                  # pos, vel in and out; mass
    return flops, nbytes
