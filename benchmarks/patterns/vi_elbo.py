"""Variational inference: one stochastic-gradient step on a mean-field Gaussian
posterior over the weights of a small Bayesian logistic regression. The ELBO's
gradient uses the reparameterisation trick with a fresh key per step; the learning
rate arrives as a Python float."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import random


def log_joint(w, x, y):
    logits = x @ w
    log_lik = jnp.sum(y * jax.nn.log_sigmoid(logits) + (1 - y) * jax.nn.log_sigmoid(-logits))
    return log_lik - 0.5 * jnp.sum(w ** 2)


def elbo(params, key, x, y, n_samples):
    mu, log_sigma = params["mu"], params["log_sigma"]
    eps = random.normal(key, (n_samples,) + mu.shape)
    w = mu + jnp.exp(log_sigma) * eps
    expected = jnp.mean(jax.vmap(log_joint, in_axes=(0, None, None))(w, x, y))
    return expected + jnp.sum(log_sigma)


@jax.jit
def vi_step(params, key, x, y, lr):
    key, sub = random.split(key)
    value, grads = jax.value_and_grad(elbo)(params, sub, x, y, 8)
    params = jax.tree_util.tree_map(lambda p, g: p + lr * g, params, grads)
    return params, key, value


def bench(small=False):
    n, d = (16, 3) if small else (64, 5)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = (x @ rng.normal(size=d) > 0).astype(np.float32)
    params = {"mu": jnp.zeros(d, jnp.float32), "log_sigma": jnp.full(d, -1.0, jnp.float32)}
    return vi_step, (params, random.PRNGKey(0), jnp.asarray(x), jnp.asarray(y), 1e-3)


def cost(args):
    params, _, x, _, _ = args
    n, d = x.shape
    s = 8
    # per sample: logits 2nd, log-likelihood ~20n; backward about twice the forward
    flops = 3 * s * (2 * n * d + 20 * n) + 30 * d
    nbytes = 4 * (n * d + n + 4 * d + 4)
    return flops, nbytes
