"""Checkerboard Metropolis sampling of a 2D Ising model with jax.random."""
import jax
import jax.numpy as jnp
from jax import lax, random


def neighbour_sum(s):
    return (jnp.roll(s, 1, 0) + jnp.roll(s, -1, 0) + jnp.roll(s, 1, 1) + jnp.roll(s, -1, 1))


def half_sweep(spins, key, beta, parity):
    n = spins.shape[0]
    ii, jj = jnp.meshgrid(jnp.arange(n), jnp.arange(n), indexing="ij")
    mask = (ii + jj) % 2 == parity
    delta_e = 2.0 * spins * neighbour_sum(spins)
    accept = random.uniform(key, spins.shape) < jnp.exp(-beta * delta_e)
    return jnp.where(mask & accept, -spins, spins)


@jax.jit
def run(spins, key, beta):
    def sweep(i, carry):
        spins, key = carry
        key, k1, k2 = random.split(key, 3)
        spins = half_sweep(spins, k1, beta, 0)
        spins = half_sweep(spins, k2, beta, 1)
        return spins, key
    spins, _ = lax.fori_loop(0, 40, sweep, (spins, key))
    return spins


def main():
    key = random.PRNGKey(42)
    spins = jnp.where(random.bernoulli(key, 0.5, (16, 16)), 1.0, -1.0)
    cold = run(spins, random.PRNGKey(1), 0.8)
    hot = run(spins, random.PRNGKey(1), 0.1)
    return {"cold": cold, "hot": hot, "m_cold": jnp.abs(cold.mean()), "m_hot": jnp.abs(hot.mean())}


def bench():
    spins = jnp.where(random.bernoulli(random.PRNGKey(42), 0.5, (64, 64)), 1.0, -1.0)
    return run, (spins, random.PRNGKey(1), 0.5)
