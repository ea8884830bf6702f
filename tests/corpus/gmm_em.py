"""Expectation-maximisation for a 1D Gaussian mixture, responsibilities by logsumexp."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.nn import logsumexp


def log_normal(x, mu, sigma):
    return -0.5 * ((x - mu) / sigma) ** 2 - jnp.log(sigma) - 0.5 * jnp.log(2 * jnp.pi)


@jax.jit
def em_step(params, x):
    logw, mu, sigma = params
    logp = logw[None, :] + log_normal(x[:, None], mu[None, :], sigma[None, :])
    resp = jnp.exp(logp - logsumexp(logp, axis=1, keepdims=True))
    nk = resp.sum(0)
    mu = (resp * x[:, None]).sum(0) / nk
    sigma = jnp.sqrt((resp * (x[:, None] - mu) ** 2).sum(0) / nk)
    return (jnp.log(nk / x.shape[0]), mu, sigma), logsumexp(logp, axis=1).sum()


def main():
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.normal(-2.0, 0.5, 150), rng.normal(1.5, 1.0, 250)])
    params = (jnp.log(jnp.array([0.5, 0.5])), jnp.array([-1.0, 1.0]), jnp.array([1.0, 1.0]))
    lls = []
    for _ in range(25):
        params, ll = em_step(params, x)
        lls.append(ll)
    return {"params": params, "loglik": jnp.stack(lls)}


def bench():
    rng = np.random.default_rng(6)
    x = rng.normal(size=10000).astype(np.float32)
    params = (jnp.log(jnp.array([0.5, 0.5])), jnp.array([-1.0, 1.0]), jnp.array([1.0, 1.0]))
    return em_step, (params, x)
