"""A causal self-attention block with layer norm, written with einsum."""
import numpy as np
import jax
import jax.numpy as jnp


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return gamma * (x - mu) / jnp.sqrt(var + eps) + beta


def attention(params, x, heads=2):
    t, d = x.shape
    h = layer_norm(x, params["g"], params["b"])
    q, k, v = (jnp.einsum("td,de->te", h, params[n]).reshape(t, heads, d // heads)
               for n in ("wq", "wk", "wv"))
    scores = jnp.einsum("thd,shd->hts", q, k) / jnp.sqrt(d // heads)
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = jnp.where(mask[None], scores, -1e9)
    weights = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("hts,shd->thd", weights, v).reshape(t, d)
    return x + out @ params["wo"], weights


def main():
    rng = np.random.default_rng(4)
    d = 8
    params = {n: rng.normal(size=(d, d)) / np.sqrt(d) for n in ("wq", "wk", "wv", "wo")}
    params["g"], params["b"] = np.ones(d), np.zeros(d)
    x = rng.normal(size=(6, d))
    out, weights = jax.jit(attention)(params, x)
    grads = jax.jit(jax.grad(lambda p, x: jnp.sum(attention(p, x)[0] ** 2)))(params, x)
    return {"out": out, "weights": weights, "grad_wq": grads["wq"], "grad_g": grads["g"]}


_attention_jit = jax.jit(attention)


def bench():
    rng = np.random.default_rng(4)
    d = 64
    params = {n: (rng.normal(size=(d, d)) / np.sqrt(d)).astype(np.float32)
              for n in ("wq", "wk", "wv", "wo")}
    params["g"], params["b"] = np.ones(d, np.float32), np.zeros(d, np.float32)
    return _attention_jit, (params, rng.normal(size=(128, d)).astype(np.float32))
