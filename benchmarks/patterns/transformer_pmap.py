"""A small transformer language model's training step with Adam, data-parallel with
jax.pmap over the local devices (as many as there are, perhaps one): two layers,
d_model 128, four heads, sequences of 64 tokens. The global batch is split across the
devices and the gradients averaged with lax.pmean."""
import functools

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax
from jax.example_libraries import optimizers

VOCAB, D, HEADS, LAYERS, SEQ, BATCH = 256, 128, 4, 2, 64, 16


def init_params(rng, vocab, d, layers, seq):
    def dense(m, n):
        return jnp.asarray(rng.normal(size=(m, n)) / np.sqrt(m), jnp.float32)
    params = {"embed": dense(vocab, d), "pos": dense(seq, d) * 0.1, "blocks": []}
    for _ in range(layers):
        params["blocks"].append({
            "ln1": jnp.ones(d, jnp.float32), "ln2": jnp.ones(d, jnp.float32),
            "qkv": dense(d, 3 * d), "proj": dense(d, d),
            "fc1": dense(d, 4 * d), "b1": jnp.zeros(4 * d, jnp.float32),
            "fc2": dense(4 * d, d), "b2": jnp.zeros(d, jnp.float32)})
    params["ln_f"] = jnp.ones(d, jnp.float32)
    return params


def layer_norm(x, scale):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return scale * (x - mean) * lax.rsqrt(var + 1e-5)


def attention(x, block):
    b, t, d = x.shape
    q, k, v = jnp.split(x @ block["qkv"], 3, axis=-1)
    heads = lambda a: a.reshape(b, t, HEADS, d // HEADS).transpose(0, 2, 1, 3)
    q, k, v = heads(q), heads(k), heads(v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // HEADS)
    causal = jnp.tril(jnp.ones((t, t), bool))
    scores = jnp.where(causal, scores, -1e9)
    out = jax.nn.softmax(scores, axis=-1) @ v
    return out.transpose(0, 2, 1, 3).reshape(b, t, d) @ block["proj"]


def forward(params, tokens):
    x = params["embed"][tokens] + params["pos"][: tokens.shape[1]]
    for block in params["blocks"]:
        x = x + attention(layer_norm(x, block["ln1"]), block)
        h = jax.nn.gelu(layer_norm(x, block["ln2"]) @ block["fc1"] + block["b1"])
        x = x + h @ block["fc2"] + block["b2"]
    return layer_norm(x, params["ln_f"]) @ params["embed"].T


def loss(params, tokens):
    logits = forward(params, tokens[:, :-1])
    logp = jax.nn.log_softmax(logits)
    target = jax.nn.one_hot(tokens[:, 1:], logp.shape[-1])
    return -jnp.mean(jnp.sum(logp * target, axis=-1))


opt_init, opt_update, get_params = optimizers.adam(3e-4)


@functools.partial(jax.pmap, axis_name="batch", in_axes=(None, 0, 0))
def train_step(i, opt_state, tokens):
    value, grads = jax.value_and_grad(loss)(get_params(opt_state), tokens)
    grads = lax.pmean(grads, "batch")
    return opt_update(i, grads, opt_state), lax.pmean(value, "batch")


def replicate(tree, n):
    return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), tree)


def bench(small=False):
    ndev = jax.local_device_count()
    vocab, d, layers, seq, batch = (32, 16, 1, 8, 2) if small else (VOCAB, D, LAYERS, SEQ + 1,
                                                                      BATCH)
    batch = max(batch // ndev, 1) * ndev
    rng = np.random.default_rng(6)
    opt_state = replicate(opt_init(init_params(rng, vocab, d, layers, seq)), ndev)
    tokens = rng.integers(0, vocab, size=(ndev, batch // ndev, seq)).astype(np.int32)
    return train_step, (0, opt_state, jnp.asarray(tokens))


def result(out):
    """The first device's copy: the replicas agree, and their number is the host's."""
    opt_state, value = out
    return jax.tree_util.tree_map(lambda x: x[0], (get_params(opt_state), value))


def cost(args):
    tokens = args[2]
    n_tok = tokens.shape[0] * tokens.shape[1] * (tokens.shape[2] - 1)
    params = get_params(args[1])
    leaves = jax.tree_util.tree_leaves(params)
    n_params = sum(x.size for x in leaves) // tokens.shape[0]
    d = params["ln_f"].shape[-1]
    t = tokens.shape[2] - 1
    layers = len(params["blocks"])
    # matmuls 2 flops per weight per token, attention 4 t d per token and layer; x3 for
    # the backward pass
    flops = 3 * (2 * n_params * n_tok + layers * 4 * t * d * n_tok)
    nbytes = 4 * (6 * n_params + tokens.size)    # params and two moments in and out
    return flops, nbytes
