"""MLP classifier for 28x28 images: 784 -> 1024 -> 1024 -> 10.

Entries (batch 128, float32):
  predict(params, x) -> logits f32[128,10]
  loss(params, x, y) -> mean cross-entropy f32[] for integer labels y in [0, 10)

`params` is a dict pytree of weights and biases. The log-softmax is written out
with jx.numpy (max-shifted, so exp cannot overflow) instead of calling jx.nn.

    jx dump-ir samples/mlp.py
    jx dump-ir samples/mlp.py --entry loss --shape x=f32[32,784] --shape y=i32[32]
"""
import jx
import jx.numpy as jnp

BATCH = 128
SIZES = (784, 1024, 1024, 10)

PARAMS = {
    f"{kind}{i + 1}": (jx.f32[n_in, n_out] if kind == "w" else jx.f32[n_out])
    for i, (n_in, n_out) in enumerate(zip(SIZES[:-1], SIZES[1:]))
    for kind in ("w", "b")
}


def relu(x):
    return jnp.maximum(x, 0.0)


@jx.export(params=PARAMS, x=jx.f32[BATCH, 784])
def predict(params, x):
    h = relu(x @ params["w1"] + params["b1"])
    h = relu(h @ params["w2"] + params["b2"])
    return h @ params["w3"] + params["b3"]


def log_softmax(logits):
    shifted = logits - jnp.max(logits, axis=-1, keepdims=True)
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=-1, keepdims=True))


@jx.export(params=PARAMS, x=jx.f32[BATCH, 784], y=jx.i32[BATCH])
def loss(params, x, y):
    logp = log_softmax(predict(params, x))
    # One-hot by comparison with a class index row: no gather needed.
    classes = jnp.expand_dims(jnp.arange(logp.shape[-1]), 0)
    one_hot = (classes == jnp.expand_dims(y, 1)).astype(logp.dtype)
    return -jnp.mean(jnp.sum(one_hot * logp, axis=-1))
