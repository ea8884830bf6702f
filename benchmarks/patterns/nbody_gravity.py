"""Gravitational n-body in the style of the classic NumPy tutorial code: N x N
pairwise coordinate differences, the softened inverse cube (r2 + eps) ** -1.5, the
accelerations as products with the (N, 1) mass column; a few kick-drift-kick
leapfrog steps per call in lax.fori_loop."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

STEPS = 5
EPS = 1e-2          # softening length squared


def accelerations(pos, mass):
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx, dy, dz = x.T - x, y.T - y, z.T - z            # (N, N): particle j minus i
    inv_r3 = (dx ** 2 + dy ** 2 + dz ** 2 + EPS) ** -1.5
    return jnp.hstack([(dx * inv_r3) @ mass, (dy * inv_r3) @ mass, (dz * inv_r3) @ mass])


@jax.jit
def leapfrog(pos, vel, acc, mass, dt):
    def body(_, state):
        pos, vel, acc = state
        vel = vel + 0.5 * dt * acc
        pos = pos + dt * vel
        acc = accelerations(pos, mass)
        vel = vel + 0.5 * dt * acc
        return pos, vel, acc
    return lax.fori_loop(0, STEPS, body, (pos, vel, acc))


def bench(small=False):
    n = 33 if small else 1024
    rng = np.random.default_rng(4)
    pos = jnp.asarray(rng.normal(size=(n, 3)), jnp.float32)
    vel = jnp.asarray(0.1 * rng.normal(size=(n, 3)), jnp.float32)
    mass = jnp.asarray(rng.uniform(0.5, 1.5, size=(n, 1)) / n, jnp.float32)
    return leapfrog, (pos, vel, accelerations(pos, mass), mass, 1e-3)


def cost(args):
    n = args[0].shape[0]
    # per pair: 3 differences, 3 squares and 3 adds (eps included), the power (an
    # rsqrt and two multiplies), 3 multiplies by inv_r3, 3 multiply-adds into @ mass
    flops = STEPS * 21 * n * n
    nbytes = 4 * (2 * 3 * 3 * n + n)              # pos, vel, acc in and out; mass
    return flops, nbytes
