"""A damped driven pendulum integrated with RK4 inside lax.fori_loop."""
import jax
import jax.numpy as jnp
from jax import lax


def field(t, state, damping=0.3, drive=1.2, omega=0.67):
    theta, v = state
    return jnp.stack([v, -damping * v - jnp.sin(theta) + drive * jnp.cos(omega * t)])


def rk4_step(t, state, dt):
    k1 = field(t, state)
    k2 = field(t + dt / 2, state + dt / 2 * k1)
    k3 = field(t + dt / 2, state + dt / 2 * k2)
    k4 = field(t + dt, state + dt * k3)
    return state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


@jax.jit
def integrate(state0, dt):
    def body(i, state):
        return rk4_step(i * dt, state, dt)
    return lax.fori_loop(0, 500, body, state0)


def main():
    final = integrate(jnp.array([0.2, 0.0]), 0.01)
    energy = 0.5 * final[1] ** 2 + 1 - jnp.cos(final[0])
    return {"final": final, "energy": energy}


def bench():
    return integrate, (jnp.array([0.2, 0.0]), 0.01)
