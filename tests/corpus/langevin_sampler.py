"""Unadjusted Langevin sampling of a Bayesian logistic-regression posterior."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax, random


def log_posterior(w, x, y):
    logits = x @ w
    loglik = jnp.sum(y * logits - jnp.logaddexp(0.0, logits))
    return loglik - 0.5 * jnp.sum(w ** 2)


@jax.jit
def sample(key, w0, x, y, step=1e-3):
    grad_lp = jax.grad(log_posterior)

    def body(w, k):
        noise = random.normal(k, w.shape)
        w = w + step * grad_lp(w, x, y) + jnp.sqrt(2 * step) * noise
        return w, w
    keys = random.split(key, 300)
    _, trace = lax.scan(body, w0, keys)
    return trace


def main():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(100, 3))
    y = (x @ np.array([1.0, -0.5, 2.0]) + rng.normal(size=100) > 0).astype(np.float32)
    trace = sample(random.PRNGKey(0), jnp.zeros(3), x, y)
    return {"posterior_mean": trace[100:].mean(0), "last": trace[-1]}


def bench():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(100, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    return sample, (random.PRNGKey(0), jnp.zeros(3), x, y)
