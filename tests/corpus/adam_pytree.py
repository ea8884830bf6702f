"""Adam written by hand over a dict of parameters with jax.tree_util."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.tree_util import tree_map, tree_leaves


def model(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss(params, x, y):
    return jnp.mean((model(params, x) - y) ** 2)


@jax.jit
def adam_step(params, state, x, y, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    m, v, t = state
    grads = jax.grad(loss)(params, x, y)
    t = t + 1
    m = tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    mhat = tree_map(lambda m: m / (1 - b1 ** t), m)
    vhat = tree_map(lambda v: v / (1 - b2 ** t), v)
    params = tree_map(lambda p, mh, vh: p - lr * mh / (jnp.sqrt(vh) + eps), params, mhat, vhat)
    return params, (m, v, t)


def main():
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, size=(50, 1))
    y = np.sin(3 * x)
    params = {"w1": rng.normal(size=(1, 16)) * 0.5, "b1": np.zeros(16),
              "w2": rng.normal(size=(16, 1)) * 0.5, "b2": np.zeros(1)}
    params = tree_map(jnp.asarray, params)
    zeros = tree_map(jnp.zeros_like, params)
    state = (zeros, zeros, 0)
    for _ in range(40):
        params, state = adam_step(params, state, x, y)
    return {"params": params, "loss": loss(params, x, y),
            "n_leaves": jnp.array(len(tree_leaves(params)))}


def bench():
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, size=(1024, 1)).astype(np.float32)
    params = {"w1": rng.normal(size=(1, 64)), "b1": np.zeros(64),
              "w2": rng.normal(size=(64, 1)), "b2": np.zeros(1)}
    params = tree_map(lambda p: jnp.asarray(p, jnp.float32), params)
    zeros = tree_map(jnp.zeros_like, params)
    return adam_step, (params, (zeros, zeros, 0), x, np.sin(3 * x))
