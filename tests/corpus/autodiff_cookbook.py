"""Forward and reverse mode the way the autodiff cookbook shows them."""
import jax
import jax.numpy as jnp
from jax import grad, jacfwd, jacrev, jvp, vjp


def f(x):
    return jnp.sin(x) * jnp.exp(-x ** 2 / 4) + x ** 3 / 10


def piecewise(x):
    # Python control flow on a concrete primal: differentiable at a point
    if x < 3:
        return 3.0 * x ** 2
    return -4.0 * x


def rosenbrock(v):
    return jnp.sum(100.0 * (v[1:] - v[:-1] ** 2) ** 2 + (1 - v[:-1]) ** 2)


def hvp(fun, x, v):
    return jvp(grad(fun), (x,), (v,))[1]


def main():
    x = jnp.linspace(-2.0, 2.0, 7)
    v = jnp.array([0.5, -1.0, 1.5, 0.25])
    y, vjp_fn = vjp(f, x)
    out = {
        "grad_points": jax.vmap(grad(f))(x),
        "jvp": jvp(f, (x,), (jnp.ones_like(x),))[1],
        "vjp": vjp_fn(jnp.ones_like(y))[0],
        "piecewise": jnp.stack([grad(piecewise)(1.0), grad(piecewise)(4.0)]),
        "jac_fwd": jacfwd(rosenbrock)(v),
        "jac_rev": jacrev(rosenbrock)(v),
        "hessian": jax.hessian(rosenbrock)(v),
        "hvp": hvp(rosenbrock, v, jnp.ones_like(v)),
        "second_derivative": grad(grad(jnp.tanh))(0.7),
    }
    return out


_hessian_jit = jax.jit(jax.hessian(rosenbrock))


def bench():
    return _hessian_jit, (jnp.linspace(-1.0, 1.0, 64),)
