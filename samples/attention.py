"""Transformer building blocks: softmax, layer norm and an 8-head self-attention block.

Shapes: 512 tokens, 8 heads of width 64 (model width 512), float32.

Entries:
  softmax(x: f32[8,512,512])           row softmax over the last axis (attention scores)
  layernorm(x, gamma, beta)            normalise each token over its 512 features
  attention_block(params, x)           x + MultiHeadAttention(LayerNorm(x)), pre-norm style

    jx dump-ir samples/attention.py --entry attention_block
"""
import jx
import jx.numpy as jnp

TOKENS, HEADS, HEAD_DIM = 512, 8, 64
WIDTH = HEADS * HEAD_DIM
EPS = 1e-5


@jx.export(x=jx.f32[HEADS, TOKENS, TOKENS])
def softmax(x):
    # Subtract the row max first so exp never overflows.
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


@jx.export(x=jx.f32[TOKENS, WIDTH], gamma=jx.f32[WIDTH], beta=jx.f32[WIDTH])
def layernorm(x, gamma, beta):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jnp.rsqrt(var + EPS) * gamma + beta


def split_heads(t):
    """[tokens, width] -> [heads, tokens, head_dim]."""
    return jnp.transpose(jnp.reshape(t, (t.shape[0], HEADS, HEAD_DIM)), (1, 0, 2))


def merge_heads(t):
    """[heads, tokens, head_dim] -> [tokens, width]."""
    return jnp.reshape(jnp.transpose(t, (1, 0, 2)), (t.shape[1], WIDTH))


PARAMS = {
    "ln": {"gamma": jx.f32[WIDTH], "beta": jx.f32[WIDTH]},
    "wq": jx.f32[WIDTH, WIDTH], "wk": jx.f32[WIDTH, WIDTH],
    "wv": jx.f32[WIDTH, WIDTH], "wo": jx.f32[WIDTH, WIDTH],
}


@jx.export(params=PARAMS, x=jx.f32[TOKENS, WIDTH])
def attention_block(params, x):
    h = layernorm(x, params["ln"]["gamma"], params["ln"]["beta"])
    q = split_heads(h @ params["wq"])
    k = split_heads(h @ params["wk"])
    v = split_heads(h @ params["wv"])
    scores = (q @ jnp.swapaxes(k, -1, -2)) * (1.0 / HEAD_DIM ** 0.5)
    out = merge_heads(softmax(scores) @ v)
    return x + out @ params["wo"]
