"""Maximum likelihood for Normal and Student-t models with jax.scipy.stats."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.scipy import stats
from jax.scipy.special import logsumexp


def nll_normal(theta, x):
    mu, log_sigma = theta
    return -jnp.sum(stats.norm.logpdf(x, mu, jnp.exp(log_sigma)))


def nll_t(theta, x):
    mu, log_scale, log_df = theta
    return -jnp.sum(stats.t.logpdf(x, jnp.exp(log_df), mu, jnp.exp(log_scale)))


@jax.jit
def fit_step(theta_n, theta_t, x, lr=1e-3):
    theta_n = theta_n - lr * jax.grad(nll_normal)(theta_n, x)
    theta_t = theta_t - lr * jax.grad(nll_t)(theta_t, x)
    return theta_n, theta_t


def main():
    rng = np.random.default_rng(11)
    x = 1.5 + 0.7 * rng.standard_t(5.0, size=200)
    theta_n, theta_t = jnp.array([0.0, 0.0]), jnp.array([0.0, 0.0, 1.0])
    for _ in range(60):
        theta_n, theta_t = fit_step(theta_n, theta_t, x)
    grid = jnp.linspace(-1.0, 4.0, 9)
    return {"theta_n": theta_n, "theta_t": theta_t,
            "cdf": stats.norm.cdf(grid, theta_n[0], jnp.exp(theta_n[1])),
            "log_evidence": logsumexp(-jnp.array([nll_normal(theta_n, x), nll_t(theta_t, x)]))}


def bench():
    rng = np.random.default_rng(11)
    x = rng.standard_t(5.0, size=4096).astype(np.float32)
    return fit_step, (jnp.array([0.0, 0.0]), jnp.array([0.0, 0.0, 1.0]), x)
