"""A small MLP classifier trained with plain SGD (in the style of JAX's MNIST example)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import random


def init_mlp(key, sizes):
    keys = random.split(key, len(sizes) - 1)
    return [(random.normal(k, (m, n)) * jnp.sqrt(2.0 / m), jnp.zeros(n))
            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]


def predict(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return jax.nn.log_softmax(x @ w + b)


def loss(params, x, labels):
    logp = predict(params, x)
    return -jnp.mean(jnp.sum(logp * jax.nn.one_hot(labels, 3), axis=-1))


@jax.jit
def step(params, x, labels):
    value, grads = jax.value_and_grad(loss)(params, x, labels)
    params = jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads)
    return params, value


def main():
    rng = np.random.default_rng(1)
    centers = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    labels = rng.integers(0, 3, 120)
    x = centers[labels] + 0.5 * rng.normal(size=(120, 2))
    params = init_mlp(random.PRNGKey(0), [2, 16, 16, 3])
    losses = []
    for _ in range(30):
        params, value = step(params, x, labels)
        losses.append(value)
    accuracy = jnp.mean(jnp.argmax(predict(params, x), axis=-1) == labels)
    return {"losses": jnp.stack(losses), "accuracy": accuracy, "params": params}


def bench():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(256, 2)).astype(np.float32)
    labels = rng.integers(0, 3, 256).astype(np.int32)
    return step, (init_mlp(random.PRNGKey(0), [2, 64, 64, 3]), x, labels)
