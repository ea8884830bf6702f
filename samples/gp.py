"""Gaussian-process regression: the negative log marginal likelihood of an RBF-kernel
GP and its gradient with respect to the hyperparameters (what a fit by gradient
descent calls each step). 256 training points with 8 features, float32.

    nll = ½ yᵀ K⁻¹ y + ½ log det K + ½ n log 2π,
    K   = σ_f² exp(-|x - x'|² / 2ℓ²) + σ_n² I

computed through the Cholesky factor L of K: log det K = 2 Σ log L_ii and
K⁻¹ y = L⁻ᵀ (L⁻¹ y), two triangular solves. The hyperparameters are kept in logs
(log ℓ, log σ_f², log σ_n²) so any real vector is valid.

Entries:
  nll(params: f32[3], x: f32[256,8], y: f32[256]) -> f32[]
  nll_and_grad(params, x, y) -> (f32[], f32[3]): jx.value_and_grad of nll

    jx dump-ir samples/gp.py --entry nll_and_grad
    jx compile samples/gp.py
"""
import math

import jx
import jx.numpy as jnp
from jx.scipy.linalg import solve_triangular

POINTS, FEATURES = 256, 8


def rbf_kernel(x1, x2, lengthscale, signal_var):
    x1 = x1 / lengthscale
    x2 = x2 / lengthscale
    sq1 = jnp.sum(x1 * x1, axis=-1)
    sq2 = jnp.sum(x2 * x2, axis=-1)
    # |a - b|² expanded into a matrix product; rounding can make it slightly negative
    d2 = sq1[:, None] + sq2[None, :] - 2.0 * (x1 @ x2.T)
    return signal_var * jnp.exp(-0.5 * jnp.maximum(d2, 0.0))


def neg_log_marginal_likelihood(params, x, y):
    log_lengthscale, log_signal_var, log_noise_var = params[0], params[1], params[2]
    n = x.shape[0]
    k = rbf_kernel(x, x, jnp.exp(log_lengthscale), jnp.exp(log_signal_var))
    k = k + jnp.exp(log_noise_var) * jnp.eye(n, dtype=x.dtype)
    chol = jnp.linalg.cholesky(k)
    z = solve_triangular(chol, y, lower=True)
    alpha = solve_triangular(chol.T, z, lower=False)
    return (0.5 * jnp.dot(y, alpha) + jnp.sum(jnp.log(jnp.diagonal(chol)))
            + 0.5 * n * math.log(2.0 * math.pi))


SPECS = dict(params=jx.f32[3], x=jx.f32[POINTS, FEATURES], y=jx.f32[POINTS])


@jx.export(**SPECS)
def nll(params, x, y):
    return neg_log_marginal_likelihood(params, x, y)


@jx.export(**SPECS)
def nll_and_grad(params, x, y):
    return jx.value_and_grad(neg_log_marginal_likelihood)(params, x, y)
