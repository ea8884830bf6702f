"""Gaussian-process regression with an RBF kernel: the negative log marginal
likelihood of the training targets and its gradient with respect to the three
log hyperparameters, as a user would write it for JAX (the linalg suite runs this
file as written on JAX, and on jx with the imports swapped).

    nll(θ) = ½ yᵀ K⁻¹ y + ½ log det K + ½ n log 2π
    K      = σ_f² exp(-|x - x'|² / 2ℓ²) + σ_n² I
"""
import math

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular


def rbf_kernel(x1, x2, lengthscale, signal_var):
    x1 = x1 / lengthscale
    x2 = x2 / lengthscale
    sq1 = jnp.sum(x1 * x1, axis=-1)
    sq2 = jnp.sum(x2 * x2, axis=-1)
    d2 = sq1[:, None] + sq2[None, :] - 2.0 * (x1 @ x2.T)
    return signal_var * jnp.exp(-0.5 * jnp.maximum(d2, 0.0))


def neg_log_marginal_likelihood(params, x, y):
    log_lengthscale, log_signal_var, log_noise_var = params
    n = x.shape[0]
    k = rbf_kernel(x, x, jnp.exp(log_lengthscale), jnp.exp(log_signal_var))
    k = k + jnp.exp(log_noise_var) * jnp.eye(n, dtype=x.dtype)
    chol = jnp.linalg.cholesky(k)
    z = solve_triangular(chol, y, lower=True)
    alpha = solve_triangular(chol.T, z, lower=False)
    return (0.5 * jnp.dot(y, alpha) + jnp.sum(jnp.log(jnp.diagonal(chol)))
            + 0.5 * n * math.log(2.0 * math.pi))


nll_and_grad = jax.jit(jax.value_and_grad(neg_log_marginal_likelihood))


def data(n=1024, d=8, dtype="float32", seed=0):
    """Inputs on [0, 1]^d, targets a smooth function of them plus noise; the
    hyperparameters at a point a fit would pass through (lengthscale 0.7, signal
    variance 1, noise variance 0.01)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    x = rng.random((n, d))
    y = np.sin(3.0 * x[:, 0]) + np.cos(2.0 * x[:, 1]) * x[:, 2] + 0.1 * rng.standard_normal(n)
    params = np.array([math.log(0.7), 0.0, math.log(0.01)])
    return params.astype(dtype), x.astype(dtype), (y - y.mean()).astype(dtype)


def bench(dtype="float32"):
    """(the jitted step, its arguments)."""
    return nll_and_grad, data(dtype=dtype)
