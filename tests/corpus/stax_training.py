"""An MLP built with stax and trained with optimizers.adam (jax.example_libraries)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import random
from jax.example_libraries import optimizers, stax

init_fun, apply_fun = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(32), stax.Tanh,
                                  stax.Dense(3), stax.LogSoftmax)
opt_init, opt_update, get_params = optimizers.adam(1e-2)


def loss(params, batch):
    x, y = batch
    return -jnp.mean(jnp.sum(apply_fun(params, x) * y, axis=-1))


@jax.jit
def update(i, opt_state, batch):
    params = get_params(opt_state)
    value, grads = jax.value_and_grad(loss)(params, batch)
    return opt_update(i, grads, opt_state), value


def data(n=96):
    rng = np.random.default_rng(10)
    labels = rng.integers(0, 3, n)
    x = np.stack([np.cos(labels * 2.1), np.sin(labels * 2.1)], 1) + 0.4 * rng.normal(size=(n, 2))
    return x, np.eye(3)[labels]


def main():
    _, params = init_fun(random.PRNGKey(0), (-1, 2))
    opt_state = opt_init(params)
    batch = data()
    losses = []
    for i in range(25):
        opt_state, value = update(i, opt_state, batch)
        losses.append(value)
    return {"losses": jnp.stack(losses), "params": get_params(opt_state)}


def bench():
    _, params = init_fun(random.PRNGKey(0), (-1, 2))
    return update, (0, opt_init(params), data(512))
