"""Least squares by gradient descent, the first example of every JAX tutorial."""
import numpy as np
import jax
import jax.numpy as jnp


def loss(params, x, y):
    w, b = params
    pred = x @ w + b
    return jnp.mean((pred - y) ** 2)


@jax.jit
def update(params, x, y, lr=0.1):
    grads = jax.grad(loss)(params, x, y)
    return [p - lr * g for p, g in zip(params, grads)]


def main():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3))
    true_w = np.array([1.5, -2.0, 0.5])
    y = x @ true_w + 0.3 + 0.01 * rng.normal(size=64)
    params = [jnp.zeros(3), 0.0]
    for _ in range(50):
        params = update(params, x, y)
    return {"w": params[0], "b": params[1], "loss": loss(params, x, y)}


def bench():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, 3)).astype(np.float32)
    y = (x @ np.array([1.5, -2.0, 0.5], np.float32)).astype(np.float32)
    return update, ([jnp.zeros(3), jnp.float32(0.0)], x, y)
