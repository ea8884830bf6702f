"""A LeNet-style CNN trained with plain SGD on MNIST-shaped data, as a user would
write it for JAX with stax (the conv suite runs this file as written on JAX, and on
jx with the imports swapped).

    conv 5x5, 6 channels, SAME - relu - max-pool 2x2
    conv 5x5, 16 channels, VALID - relu - max-pool 2x2
    flatten - dense 120 - relu - dense 84 - relu - dense 10 - log-softmax

One training step: the mean cross-entropy of a batch and its gradient with respect
to every parameter, then params - LR * grad.
"""
import jax
import jax.numpy as jnp
from jax.example_libraries import stax
from jax.example_libraries.stax import Conv, Dense, Flatten, LogSoftmax, MaxPool, Relu

LR = 0.05
CLASSES = 10

init_fun, apply_fun = stax.serial(
    Conv(6, (5, 5), padding="SAME"), Relu, MaxPool((2, 2), strides=(2, 2)),
    Conv(16, (5, 5)), Relu, MaxPool((2, 2), strides=(2, 2)),
    Flatten, Dense(120), Relu, Dense(84), Relu, Dense(CLASSES), LogSoftmax)


def loss(params, x, y):
    """Mean cross-entropy of one-hot labels y under the network's log-probabilities."""
    logp = apply_fun(params, x)
    return -jnp.mean(jnp.sum(logp * y, axis=-1))


@jax.jit
def step(params, x, y):
    """(the updated parameters, the loss before the update)."""
    value, grads = jax.value_and_grad(loss)(params, x, y)
    params = jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
    return params, value


def init(batch=128, seed=0):
    _, params = init_fun(jax.random.PRNGKey(seed), (batch, 28, 28, 1))
    return params


def data(batch=128, seed=0):
    """Synthetic MNIST-shaped images and one-hot labels a network can learn: the
    label of an image is the index of the largest of ten fixed linear features
    of it."""
    import numpy as np
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 28, 28, 1)).astype("float32")
    features = np.random.default_rng(1234).standard_normal((28 * 28, CLASSES))
    labels = np.argmax(x.reshape(batch, -1) @ features, axis=-1)
    return x, np.eye(CLASSES, dtype="float32")[labels]


def bench(batch=128):
    """(the jitted step, its arguments)."""
    x, y = data(batch)
    return step, (init(batch), x, y)
