"""A constant-velocity Kalman filter over noisy positions, as a lax.scan."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax


def kalman(observations, dt=0.1, q=0.01, r=0.25):
    F = jnp.array([[1.0, dt], [0.0, 1.0]])
    H = jnp.array([1.0, 0.0])
    Q = q * jnp.array([[dt ** 3 / 3, dt ** 2 / 2], [dt ** 2 / 2, dt]])

    def step(carry, z):
        m, P = carry
        m = F @ m
        P = F @ P @ F.T + Q
        S = H @ P @ H + r
        K = P @ H / S
        m = m + K * (z - H @ m)
        P = P - jnp.outer(K, H @ P)
        return (m, P), m

    init = (jnp.zeros(2), jnp.eye(2))
    (m, P), means = lax.scan(step, init, observations)
    return means, P


def main():
    rng = np.random.default_rng(5)
    t = np.arange(80) * 0.1
    truth = 1.0 + 0.7 * t
    obs = truth + 0.5 * rng.normal(size=t.shape)
    means, P = jax.jit(kalman)(obs)
    return {"means": means, "P": P, "rmse": jnp.sqrt(jnp.mean((means[:, 0] - truth) ** 2))}


_kalman_jit = jax.jit(kalman)


def bench():
    rng = np.random.default_rng(5)
    return _kalman_jit, (rng.normal(size=1000).astype(np.float32),)
