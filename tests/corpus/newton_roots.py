"""Newton's method on many starting points at once: vmap over a lax.while_loop."""
import jax
import jax.numpy as jnp
from jax import lax


def f(x):
    return x ** 3 - 2 * x - 5


def newton(x0, tol=1e-3, max_iter=50):
    df = jax.grad(f)

    def cond(state):
        x, i = state
        return (jnp.abs(f(x)) > tol) & (i < max_iter)

    def body(state):
        x, i = state
        return x - f(x) / df(x), i + 1

    return lax.while_loop(cond, body, (x0, 0))


def main():
    starts = jnp.linspace(1.0, 4.0, 16)
    roots, iters = jax.jit(jax.vmap(newton))(starts)
    return {"roots": roots, "iters": iters, "residual": jnp.max(jnp.abs(f(roots)))}


_newton_batched = jax.jit(jax.vmap(newton))


def bench():
    return _newton_batched, (jnp.linspace(1.0, 4.0, 4096),)
