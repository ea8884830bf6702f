"""Molecular dynamics: one velocity-Verlet step of 10 Lennard-Jones particles in a
periodic box; the state is a NamedTuple and the forces come from jax.grad of the
potential energy."""
from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp


class State(NamedTuple):
    position: jnp.ndarray
    velocity: jnp.ndarray
    force: jnp.ndarray


BOX = 4.0


def energy(position, sigma=1.0, epsilon=1.0):
    dr = position[:, None, :] - position[None, :, :]
    dr = dr - BOX * jnp.round(dr / BOX)                 # minimum image
    r2 = jnp.sum(dr ** 2, axis=-1)
    n = position.shape[0]
    off_diag = ~jnp.eye(n, dtype=bool)
    r2 = jnp.where(off_diag, r2, 1.0)
    inv6 = (sigma ** 2 / r2) ** 3
    pair = 4 * epsilon * (inv6 ** 2 - inv6)
    return 0.5 * jnp.sum(jnp.where(off_diag, pair, 0.0))


force_fn = jax.grad(lambda p: -energy(p))


@jax.jit
def verlet_step(state, dt):
    velocity = state.velocity + 0.5 * dt * state.force
    position = jnp.mod(state.position + dt * velocity, BOX)
    force = force_fn(position)
    velocity = velocity + 0.5 * dt * force
    return State(position, velocity, force)


def initial_state(n):
    side = int(np.ceil(n ** (1 / 3)))
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    pos = (grid[:n] + 0.5) * (BOX / side)
    pos = pos + np.random.default_rng(2).normal(scale=0.05, size=pos.shape)
    vel = np.random.default_rng(3).normal(scale=0.1, size=pos.shape)
    pos = jnp.asarray(pos, jnp.float32)
    return State(pos, jnp.asarray(vel, jnp.float32), force_fn(pos))


def bench(small=False):
    return verlet_step, (initial_state(8 if small else 10), 1e-3)


def cost(args):
    n = args[0].position.shape[0]
    # per pair: distances ~12, powers ~8, energy ~4; the gradient about twice that
    flops = 3 * 24 * n * n + 20 * n
    nbytes = 4 * 2 * 3 * 3 * n            # three (n, 3) arrays in and out
    return flops, nbytes
