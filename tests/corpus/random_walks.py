"""Random walks with jax.random: split, fold_in, normal, bernoulli, statistics."""
import jax
import jax.numpy as jnp
from jax import random


@jax.jit
def walks(key, n_walkers=64, n_steps=100):
    k_step, k_flip = random.split(key)
    steps = random.normal(k_step, (n_walkers, n_steps)) * 0.1
    flips = random.bernoulli(k_flip, 0.3, (n_walkers, n_steps))
    steps = jnp.where(flips, -jnp.abs(steps), steps)
    paths = jnp.cumsum(steps, axis=1)
    return paths


def main():
    key = random.PRNGKey(2024)
    paths = walks(key)
    keys = jax.vmap(lambda i: random.fold_in(key, i))(jnp.arange(4))
    extra = jax.vmap(lambda k: random.uniform(k, (3,), minval=-1.0, maxval=1.0))(keys)
    return {"final": paths[:, -1], "mean": paths.mean(0), "max": paths.max(),
            "ints": random.randint(key, (10,), 0, 100), "extra": extra,
            "perm": random.permutation(key, 10)}


def bench():
    return walks, (random.PRNGKey(2024),)
