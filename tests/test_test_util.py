"""jx.test_util.check_grads: passes on correct derivatives (several functions, orders,
modes, dtypes, pytrees of arguments) and fails on a wrong custom_jvp / custom_vjp."""
import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.test_util import check_grads, check_jvp, check_vjp

RS = np.random.RandomState(0)
X = RS.randn(3, 4).astype(np.float32)


@pytest.mark.parametrize("f,args,order", [
    (lambda a: jnp.sin(a) * jnp.exp(a).sum(), (X,), 2),
    (lambda a, b: jnp.tanh(a @ b.T), (X, X + 1), 2),
    (lambda a: jnp.sin(a), (1.5,), 3),
    (lambda a: jx.nn.log_softmax(a, axis=-1), (X,), 2),
    (lambda a: jnp.cumsum(a ** 2, axis=0), (X,), 1),
    (lambda t: t["u"] * jnp.cos(t["v"][0]), ({"u": X, "v": (X - 1,)},), 2),
])
@pytest.mark.parametrize("modes", [("fwd", "rev"), ("fwd", "rev", "lin")])
def test_correct_derivatives_pass(f, args, order, modes):
    check_grads(f, args, order, modes=modes)


@pytest.mark.x64
def test_float64_tolerances():
    x = RS.randn(5).astype(np.float64)
    check_grads(lambda a: jnp.log1p(a ** 2) * jnp.sqrt(jnp.abs(a) + 1), (x,), 2)


def _wrong_sin():
    @jx.custom_jvp
    def f(a):
        return jnp.sin(a)

    @f.defjvp
    def _(primals, tangents):       # twice the true derivative
        return f(primals[0]), 2.0 * jnp.cos(primals[0]) * tangents[0]
    return f


@pytest.mark.parametrize("modes", [("fwd",), ("rev",), ("lin",)])
def test_wrong_custom_jvp_fails(modes):
    with pytest.raises(AssertionError, match="tangent|cotangent projection"):
        check_grads(_wrong_sin(), (X,), 1, modes=modes)


def test_wrong_custom_vjp_fails():
    @jx.custom_vjp
    def f(a):
        return jnp.exp(a)

    f.defvjp(lambda a: (jnp.exp(a), a), lambda a, g: (g * a,))   # should be g * exp(a)
    with pytest.raises(jx.JxError, match="custom_vjp"):   # as JAX: no jvp of custom_vjp
        check_grads(f, (X,), 1, modes=("fwd",))
    with pytest.raises(AssertionError, match="VJP"):
        check_grads(f, (X,), 1, modes=("rev",))


def test_second_order_catches_wrong_inner_rule():
    # a*a whose jvp rule is right but, through stop_gradient, has a zero derivative
    @jx.custom_jvp
    def sq(a):
        return a * a

    @sq.defjvp
    def _(primals, tangents):
        a, = primals
        return sq(a), 2 * jx.stop_gradient(a) * tangents[0]

    check_grads(sq, (X,), 1)
    with pytest.raises(AssertionError):
        check_grads(sq, (X,), 2, modes=("fwd",))


def test_explicit_tolerances_and_eps():
    f = _wrong_sin()
    check_grads(f, (X,), 1, modes=("fwd",), atol=1.0, rtol=1.0)    # loose enough
    check_grads(jnp.exp, (X,), 1, eps=1e-3)


def test_check_jvp_and_vjp_directly():
    from functools import partial
    check_jvp(jnp.tanh, partial(jx.jvp, jnp.tanh), (X,))
    check_vjp(jnp.tanh, partial(jx.vjp, jnp.tanh), (X,))
    with pytest.raises(AssertionError, match="primal"):
        check_jvp(jnp.tanh, lambda p, t: (jnp.tanh(p[0]) + 1, t[0]), (X,))


def test_matches_jax_verdicts():
    jax = pytest.importorskip("jax")
    import jax.test_util as jtu
    jf = jax.custom_jvp(lambda a: jax.numpy.sin(a))
    jf.defjvp(lambda p, t: (jf(p[0]), 2.0 * jax.numpy.cos(p[0]) * t[0]))
    with pytest.raises(AssertionError):
        jtu.check_grads(jf, (X,), 1)
    jtu.check_grads(jax.numpy.sin, (X,), 2)          # and ours agree on both
    check_grads(jnp.sin, (X,), 2)
