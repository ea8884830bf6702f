"""Hamiltonian Monte Carlo on a Bayesian logistic regression (50 weights): each jitted
call runs a chunk of transitions with lax.scan, each transition 20 leapfrog steps and a
Metropolis correction; Python drives the chunks, as a sampler with progress output
does."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax, random

LEAPFROG, CHUNK, CHUNKS = 20, 10, 10


def log_density(w, x, y):
    logits = x @ w
    return jnp.sum(y * logits - jnp.logaddexp(0.0, logits)) - 0.5 * jnp.sum(w ** 2)


def leapfrog(w, p, x, y, step):
    grad = jax.grad(log_density)

    def body(carry, _):
        w, p = carry
        p = p + 0.5 * step * grad(w, x, y)
        w = w + step * p
        p = p + 0.5 * step * grad(w, x, y)
        return (w, p), None
    (w, p), _ = lax.scan(body, (w, p), None, length=LEAPFROG)
    return w, p


def transition(w, key, x, y, step):
    k_mom, k_acc = random.split(key)
    p = random.normal(k_mom, w.shape)
    w_new, p_new = leapfrog(w, p, x, y, step)
    h_old = -log_density(w, x, y) + 0.5 * jnp.sum(p ** 2)
    h_new = -log_density(w_new, x, y) + 0.5 * jnp.sum(p_new ** 2)
    accept = jnp.log(random.uniform(k_acc)) < h_old - h_new
    return jnp.where(accept, w_new, w), accept


@jax.jit
def sample_chunk(w, key, x, y, step):
    keys = random.split(key, CHUNK + 1)

    def body(w, k):
        w, accepted = transition(w, k, x, y, step)
        return w, (w, accepted)
    w, (trace, accepted) = lax.scan(body, w, keys[1:])
    return w, keys[0], trace, accepted


def sample(w, key, x, y, step):
    traces, rates = [], []
    for _ in range(CHUNKS):
        w, key, trace, accepted = sample_chunk(w, key, x, y, step)
        traces.append(trace)
        rates.append(accepted)
    return w, jnp.concatenate(traces), jnp.concatenate(rates)


def bench(small=False):
    n, d = (20, 5) if small else (200, 50)
    rng = np.random.default_rng(7)
    x = rng.normal(size=(n, d)).astype(np.float32) / np.sqrt(d)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-x @ rng.normal(size=d)))).astype(np.float32)
    return sample, (jnp.zeros(d, jnp.float32), random.PRNGKey(0), jnp.asarray(x),
                    jnp.asarray(y), 0.05)


def cost(args):
    n, d = args[2].shape
    grads = CHUNK * CHUNKS * (2 * LEAPFROG + 2)
    flops = grads * (2 * 2 * n * d + 12 * n)       # x @ w and x.T @ g, the logaddexp
    nbytes = 4 * (n * d + n + CHUNK * CHUNKS * (d + 1))   # data, and the trace written
    return flops, nbytes
