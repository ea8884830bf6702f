"""Per-example gradients with vmap(grad), clipped and averaged (DP-SGD style)."""
import numpy as np
import jax
import jax.numpy as jnp


def loss(w, x, y):
    logits = jnp.dot(x, w)
    return jnp.logaddexp(0.0, -y * logits)


def clipped_mean_grad(w, xs, ys, max_norm=0.5):
    grads = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    norms = jnp.linalg.norm(grads, axis=1, keepdims=True)
    grads = grads / jnp.maximum(1.0, norms / max_norm)
    return grads.mean(0), norms[:, 0]


train_step = jax.jit(lambda w, xs, ys: w - 0.5 * clipped_mean_grad(w, xs, ys)[0])


def main():
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(32, 5))
    ys = np.sign(xs @ np.array([1.0, -1.0, 0.5, 0.0, 2.0]) + 0.1)
    w = jnp.zeros(5)
    for _ in range(20):
        w = train_step(w, xs, ys)
    _, norms = clipped_mean_grad(w, xs, ys)
    return {"w": w, "norms": norms, "loss": jnp.mean(jax.vmap(loss, (None, 0, 0))(w, xs, ys))}


def bench():
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(512, 32)).astype(np.float32)
    ys = np.sign(rng.normal(size=512)).astype(np.float32)
    return train_step, (jnp.zeros(32), xs, ys)
