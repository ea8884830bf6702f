"""Kernel least squares: a gradient step on the weights of an RBF-kernel regression,
called once per iteration from a Python loop (100 points, 100 weights)."""
import numpy as np
import jax
import jax.numpy as jnp


def rbf_kernel(x, z, lengthscale):
    sq = jnp.sum((x[:, None, :] - z[None, :, :]) ** 2, axis=-1)
    return jnp.exp(-0.5 * sq / lengthscale ** 2)


def loss(alpha, x, y, lam):
    k = rbf_kernel(x, x, 0.5)
    resid = k @ alpha - y
    return jnp.mean(resid ** 2) + lam * alpha @ (k @ alpha)


@jax.jit
def step(alpha, x, y, lr, lam):
    return alpha - lr * jax.grad(loss)(alpha, x, y, lam)


def fit(alpha, x, y, iters=50):
    for _ in range(iters):
        alpha = step(alpha, x, y, 0.05, 1e-3)
    return alpha


def bench(small=False):
    n = 20 if small else 100
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, size=(n, 2)).astype(np.float32)
    y = np.sin(x[:, 0]) * np.cos(x[:, 1])
    args = (jnp.zeros(n, jnp.float32), jnp.asarray(x), jnp.asarray(y, jnp.float32), 0.05, 1e-3)
    return step, args


def cost(args):
    n, d = args[1].shape
    # kernel: n^2 (3d + 3) incl. exp; forward and backward matvecs: 4 of 2 n^2
    flops = n * n * (3 * d + 3) + 4 * 2 * n * n + 10 * n
    nbytes = 4 * (n * d + n + 2 * n)      # x, y, alpha in, alpha out
    return flops, nbytes
