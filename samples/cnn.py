"""A LeNet-style convolutional classifier for 28x28 grey images, NHWC.

    conv 5x5 (1 -> 8), relu, 2x2 max-pool -> conv 5x5 (8 -> 16), relu, 2x2 max-pool
    -> dense 256 -> 10

Entries (batch 64, float32):
  predict(params, x) -> logits f32[64,10]
  sgd_step(params, x, y) -> (new params, loss): one SGD step on the mean
                            cross-entropy for integer labels y in [0, 10)

    jx compile samples/cnn.py
    jx dump-ir samples/cnn.py --entry sgd_step --after expand
"""
import jx
import jx.numpy as jnp
from jx import lax

BATCH = 64
LR = 0.05
DN = ("NHWC", "HWIO", "NHWC")

PARAMS = {
    "c1": jx.f32[5, 5, 1, 8], "b1": jx.f32[8],
    "c2": jx.f32[5, 5, 8, 16], "b2": jx.f32[16],
    "w3": jx.f32[7 * 7 * 16, 10], "b3": jx.f32[10],
}


def conv_relu_pool(x, w, b):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN) + b
    y = jnp.maximum(y, 0.0)
    return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


@jx.export(params=PARAMS, x=jx.f32[BATCH, 28, 28, 1])
def predict(params, x):
    h = conv_relu_pool(x, params["c1"], params["b1"])
    h = conv_relu_pool(h, params["c2"], params["b2"])
    return h.reshape(h.shape[0], -1) @ params["w3"] + params["b3"]


def loss(params, x, y):
    logp = log_softmax(predict(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def log_softmax(logits):
    shifted = logits - jnp.max(logits, axis=-1, keepdims=True)
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=-1, keepdims=True))


@jx.export(params=PARAMS, x=jx.f32[BATCH, 28, 28, 1], y=jx.i32[BATCH])
def sgd_step(params, x, y):
    value, grads = jx.value_and_grad(loss)(params, x, y)
    new = jx.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
    return new, value
