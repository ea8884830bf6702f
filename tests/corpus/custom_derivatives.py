"""custom_jvp / custom_vjp rules, stop_gradient and checkpoint, as the docs use them."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * jax.nn.sigmoid(x)


@jax.custom_vjp
def clip_gradient(x):
    return x


def clip_fwd(x):
    return x, None


def clip_bwd(_, g):
    return (jnp.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(clip_fwd, clip_bwd)


def main():
    x = jnp.linspace(-30.0, 30.0, 9)
    f = lambda v: jnp.sum(jnp.sin(jax.checkpoint(jnp.cos)(v)) * 3.0)  # noqa: E731
    return {
        "value": log1pexp(x),
        "grad": jax.vmap(jax.grad(log1pexp))(x),
        "clipped": jax.grad(lambda v: jnp.sum(clip_gradient(v) * 5.0))(x),
        "stopped": jax.grad(lambda v: jnp.sum(v * jax.lax.stop_gradient(v)))(x),
        "remat": jax.jit(jax.grad(f))(x),
    }


_grad_jit = jax.jit(jax.grad(lambda v: jnp.sum(log1pexp(v) + clip_gradient(v) * 5.0)))


def bench():
    return _grad_jit, (jnp.linspace(-30.0, 30.0, 100000),)
