"""MLP training in the example_libraries style: params a list of (W, b), cross-entropy
on a batch of 128, SGD with momentum from jax.example_libraries.optimizers, one update
per call."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.example_libraries import optimizers

LAYERS = [784, 512, 512, 10]


def init_params(sizes, rng):
    return [(jnp.asarray(rng.normal(size=(m, n)) * np.sqrt(2.0 / m), jnp.float32),
             jnp.zeros(n, jnp.float32)) for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return jax.nn.log_softmax(x @ w + b)


def loss(params, batch):
    x, y = batch
    return -jnp.mean(jnp.sum(predict(params, x) * y, axis=1))


opt_init, opt_update, get_params = optimizers.momentum(1e-2, mass=0.9)


@jax.jit
def update(i, opt_state, batch):
    params = get_params(opt_state)
    return opt_update(i, jax.grad(loss)(params, batch), opt_state)


def bench(small=False):
    sizes = [20, 16, 16, 10] if small else LAYERS
    batch = 8 if small else 128
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.normal(size=(batch, sizes[0])), jnp.float32)
    y = jax.nn.one_hot(jnp.asarray(rng.integers(0, 10, batch)), 10)
    return update, (0, opt_init(init_params(sizes, rng)), (x, y))


def cost(args):
    x = args[2][0]
    batch = x.shape[0]
    weights = [w.size for w, _ in get_params(args[1])]
    n_params = sum(weights) + sum(b.size for _, b in get_params(args[1]))
    flops = 3 * 2 * batch * sum(weights)            # forward, and backward twice that
    nbytes = 4 * (4 * n_params + x.size + args[2][1].size)   # params, velocity in+out
    return flops, nbytes
