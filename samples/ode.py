"""Fixed-step RK4 integration of a 64-state nonlinear system, 2000 steps.

    dy/dt = A @ tanh(y) - DAMPING * y

(a continuous-time recurrent network). The time loop is a jx.lax.fori_loop,
so the traced program holds one loop whose body is a single RK4 step, not
2000 unrolled copies. The step size and step count are static (compile-time)
arguments.

Entry:
  integrate(a: f32[64,64], y0: f32[64], dt=0.01, steps=2000) -> y(steps * dt): f32[64]

    jx dump-ir samples/ode.py
"""
import jx
import jx.numpy as jnp

STATE = 64
DAMPING = 0.1


def rhs(a, y):
    return a @ jnp.tanh(y) - DAMPING * y


def rk4_step(a, y, dt):
    k1 = rhs(a, y)
    k2 = rhs(a, y + (0.5 * dt) * k1)
    k3 = rhs(a, y + (0.5 * dt) * k2)
    k4 = rhs(a, y + dt * k3)
    return y + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


@jx.export(a=jx.f32[STATE, STATE], y0=jx.f32[STATE], static={"dt": 0.01, "steps": 2000})
def integrate(a, y0, dt, steps):
    return jx.lax.fori_loop(0, steps, lambda i, y: rk4_step(a, y, dt), y0)
