"""Poisson regression by gradient descent, likelihood from jax.scipy (gammaln, poisson)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, xlogy
from jax.scipy.stats import poisson


def nll(w, x, counts):
    rate = jnp.exp(x @ w)
    return -jnp.sum(xlogy(counts, rate) - rate - gammaln(counts + 1.0))


@jax.jit
def step(w, x, counts, lr=2e-3):
    return w - lr * jax.grad(nll)(w, x, counts)


def main():
    rng = np.random.default_rng(12)
    x = np.concatenate([np.ones((150, 1)), rng.normal(size=(150, 2))], axis=1)
    counts = rng.poisson(np.exp(x @ np.array([0.5, 0.8, -0.4]))).astype(np.float64)
    w = jnp.zeros(3)
    for _ in range(80):
        w = step(w, x, counts)
    return {"w": w, "nll": nll(w, x, counts),
            "check": jnp.sum(poisson.logpmf(counts, jnp.exp(x @ w)))}


def bench():
    rng = np.random.default_rng(12)
    x = rng.normal(size=(4096, 3)).astype(np.float32)
    counts = rng.poisson(2.0, size=4096).astype(np.float32)
    return step, (jnp.zeros(3), x, counts)
