"""Gravitational N-body with a leapfrog integrator in lax.scan; forces by vmap."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax


def accel_on(i_pos, positions, masses, eps=0.5):
    d = positions - i_pos
    r2 = jnp.sum(d * d, axis=-1) + eps ** 2
    return jnp.sum((masses / r2 ** 1.5)[:, None] * d, axis=0)


def accelerations(positions, masses):
    return jax.vmap(accel_on, in_axes=(0, None, None))(positions, positions, masses)


@jax.jit
def simulate(pos, vel, masses, dt=0.01):
    def step(carry, _):
        pos, vel = carry
        vel = vel + 0.5 * dt * accelerations(pos, masses)
        pos = pos + dt * vel
        vel = vel + 0.5 * dt * accelerations(pos, masses)
        kinetic = 0.5 * jnp.sum(masses * jnp.sum(vel ** 2, axis=-1))
        return (pos, vel), kinetic
    (pos, vel), kinetic = lax.scan(step, (pos, vel), None, length=50)
    return pos, vel, kinetic


def main():
    rng = np.random.default_rng(2)
    pos = rng.normal(size=(8, 3))
    vel = 0.1 * rng.normal(size=(8, 3))
    masses = rng.uniform(0.5, 1.5, size=8)
    pos, vel, kinetic = simulate(pos, vel, masses)
    return {"pos": pos, "vel": vel, "kinetic": kinetic, "momentum": (masses[:, None] * vel).sum(0)}


def bench():
    rng = np.random.default_rng(2)
    pos, vel = (rng.normal(size=(64, 3)).astype(np.float32) for _ in range(2))
    return simulate, (pos, vel, np.ones(64, np.float32))
