"""jvp, vjp and vmap of every primitive of the core families (elementwise,
structural, reductions, linalg, autodiff helpers), plus compositions and the
error cases. Cases live in TRANSFORM_CASES; see transform_harness.py."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as lax
import jx.numpy as jnp
from jx.passes.simplify import simplify
from transform_harness import Case, case_tests, fd_grad as _fd_grad

# float64 data and references, as in JAX's own tests with jax_enable_x64
pytestmark = pytest.mark.x64

COVERED = {"checkpoint", "custom_jvp_call", "custom_vjp_call", "stop_gradient"}
TRANSFORM_COVERED = {"custom_jvp_call", "custom_vjp_call"}   # test_custom_jvp_and_vjp

S = (3, 4)
TRANSFORM_CASES = {
    "neg": Case(lambda x: lax.neg(x), [S]),
    "abs": Case(lambda x: lax.abs(x), [S]),
    "add": Case(lambda x, y: lax.add(x, y), [S, S]),
    "sub": Case(lambda x, y: lax.sub(x, y), [S, S]),
    "mul": Case(lambda x, y: lax.mul(x, y), [S, S]),
    "div": Case(lambda x, y: lax.div(x, y), [S, S], domain="pos"),
    "rem": Case(lambda x, y: lax.rem(x, lax.add(y, 3.0)), [S, S], domain="pos"),
    "pow": Case(lambda x, y: lax.pow(x, y), [S, S], domain="pos"),
    "max": Case(lambda x, y: lax.max(x, y), [S, S]),
    "min": Case(lambda x, y: lax.min(x, y), [S, S]),
    "atan2": Case(lambda x, y: lax.atan2(x, y), [S, S], domain="pos"),
    "exp": Case(lambda x: lax.exp(x), [S]),
    "log": Case(lambda x: lax.log(x), [S], domain="pos"),
    "log1p": Case(lambda x: lax.log1p(x), [S], domain="pos"),
    "expm1": Case(lambda x: lax.expm1(x), [S]),
    "sqrt": Case(lambda x: lax.sqrt(x), [S], domain="pos"),
    "rsqrt": Case(lambda x: lax.rsqrt(x), [S], domain="pos"),
    "tanh": Case(lambda x: lax.tanh(x), [S]),
    "logistic": Case(lambda x: lax.logistic(x), [S]),
    "sin": Case(lambda x: lax.sin(x), [S]),
    "cos": Case(lambda x: lax.cos(x), [S]),
    "tan": Case(lambda x: lax.tan(lax.mul(x, 0.3)), [S]),
    "erf": Case(lambda x: lax.erf(x), [S]),
    "select": Case(lambda x, y: lax.select(lax.gt(x, y), lax.sin(x), y), [S, S]),
    "convert_element_type": Case(
        lambda x: lax.convert_element_type(lax.convert_element_type(x, np.float32),
                                           np.float64), [S], tol=1e-3, eps=1e-2),
    "broadcast_in_dim": Case(lambda x: lax.broadcast_in_dim(x, (2, 4, 3), (1, 2)), [(4, 1)]),
    "reshape": Case(lambda x: lax.reshape(x, (2, 6)), [S]),
    "transpose": Case(lambda x: lax.transpose(x, (1, 0)), [S]),
    "squeeze": Case(lambda x: lax.squeeze(x, (1,)), [(3, 1, 4)]),
    "expand_dims": Case(lambda x: lax.expand_dims(x, (0, 2)), [S]),
    "slice": Case(lambda x: lax.slice(x, (0, 1), (3, 4), (2, 2)), [S]),
    "pad": Case(lambda x, v: lax.pad(x, lax.reduce_sum(v, (0,)),
                                     ((1, -1, 1), (0, 2, 0))), [S, (2,)]),
    "concatenate": Case(lambda x, y: lax.concatenate([x, y, x], 1), [S, (3, 2)]),
    "rev": Case(lambda x: lax.rev(x, (0, 1)), [S]),
    "reduce_sum": Case(lambda x: lax.reduce_sum(x, (1,)), [S]),
    "reduce_max": Case(lambda x: lax.reduce_max(x, (0,)), [S]),
    "reduce_min": Case(lambda x: lax.reduce_min(x, (0, 1)), [S]),
    "reduce_prod": Case(lambda x: lax.reduce_prod(x, (1,)), [S]),
    "cumsum": Case(lambda x: lax.cumsum(x, 1, reverse=True), [S]),
    "cumprod": Case(lambda x: lax.cumprod(x, 1), [(3, 7)]),
    "cummax": Case(lambda x: lax.cummax(x, 0, reverse=True), [(5, 3)]),
    "cummin": Case(lambda x: lax.cummin(x, 1), [S]),
    "dot_general": Case(lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
                        [(2, 3, 4), (2, 4, 5)]),
    "stop_gradient": Case(lambda x: lax.mul(jx.stop_gradient(x), x), [S], diff=False),
    # the bits of a float as an int: no derivative (a zero tangent, as JAX), vmap only
    "bitcast_convert_type": Case(lambda x: lax.bitcast_convert_type(x, np.int64), [S],
                                 diff=False),
    "checkpoint": Case(lambda x: jx.checkpoint(lambda y: lax.mul(lax.sin(y), y))(x), [S]),
}
TRANSFORM_CASES["sort"] = Case(
    lambda x, y: lax.mul(lax.sort_key_val(x, y, 1)[1], lax.sort(x, 0)), [S, S])
TRANSFORM_CASES["threefry2x32"] = Case(
    lambda k: lax.convert_element_type(lax.reduce_sum(jx.random.bits(
        lax.convert_element_type(k, np.uint32), (2,)), (0,)), np.float64),
    [(2,)], diff=False, int_args=(0,), int_high=1000)


for _name, _fn in {
    "sign": lambda x: lax.sign(x), "floor": lambda x: lax.floor(x),
    "ceil": lambda x: lax.ceil(x), "round": lambda x: lax.round(x),
    "is_finite": lambda x: lax.is_finite(x), "eq": lambda x: lax.eq(x, 0.5),
    "ne": lambda x: lax.ne(x, 0.5), "lt": lambda x: lax.lt(x, 0.5),
    "le": lambda x: lax.le(x, 0.5), "gt": lambda x: lax.gt(x, 0.5),
    "ge": lambda x: lax.ge(x, 0.5),
    "and": lambda x: lax.bitwise_and(lax.gt(x, 0.0), lax.lt(x, 1.0)),
    "or": lambda x: lax.bitwise_or(lax.gt(x, 0.0), lax.lt(x, -1.0)),
    "xor": lambda x: lax.bitwise_xor(lax.gt(x, 0.0), lax.lt(x, 1.0)),
    "not": lambda x: lax.bitwise_not(lax.gt(x, 0.0)),
    "argmax": lambda x: lax.argmax(x, 1), "argmin": lambda x: lax.argmin(x, 0),
    "iota": lambda x: lax.add(x, lax.convert_element_type(
        lax.broadcasted_iota(np.int32, S, 1), np.float64)),
}.items():
    TRANSFORM_CASES[_name] = Case(_fn, [S], diff=False)

_INT = lambda f: Case(f, [S], diff=False, int_args=(0,), int_high=50)  # noqa: E731
TRANSFORM_CASES["shift_left"] = _INT(lambda x: lax.shift_left(x, 2))
TRANSFORM_CASES["shift_right_logical"] = _INT(lambda x: lax.shift_right_logical(x, 1))
TRANSFORM_CASES["shift_right_arithmetic"] = _INT(lambda x: lax.shift_right_arithmetic(x, 1))

test_jvp_matches_finite_differences, test_vjp_consistent_with_jvp_and_fd, \
    test_vmap_matches_loop = case_tests(TRANSFORM_CASES)


# ---------------------------------------------------------------- API and compositions

def mlp_loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    return jnp.mean((logits - y) ** 2)


def _mlp(rng):
    params = {"w1": rng.standard_normal((4, 8)), "b1": rng.standard_normal(8),
              "w2": rng.standard_normal((8, 2)), "b2": rng.standard_normal(2)}
    return params, rng.standard_normal((5, 4)), rng.standard_normal((5, 2))


def test_grad_pytree_matches_fd(rng):
    params, x, y = _mlp(rng)
    g = jx.grad(mlp_loss)(params, x, y)
    assert set(g) == set(params)
    for k in params:
        def f(v, k=k):
            p = dict(params)
            p[k] = v
            return mlp_loss(p, x, y)
        np.testing.assert_allclose(g[k], _fd_grad(f, params[k]), rtol=1e-5, atol=1e-7)


def test_value_and_grad_has_aux_argnums(rng):
    def f(a, b):
        return jnp.sum(a * b ** 2), {"norm": jnp.sum(b)}
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    (val, aux), (ga, gb) = jx.value_and_grad(f, argnums=(0, 1), has_aux=True)(a, b)
    np.testing.assert_allclose(val, np.sum(a * b ** 2))
    np.testing.assert_allclose(aux["norm"], np.sum(b))
    np.testing.assert_allclose(ga, b ** 2)
    np.testing.assert_allclose(gb, 2 * a * b)


def test_per_example_gradients_vmap_grad(rng):
    w = rng.standard_normal(4)
    xs, ys = rng.standard_normal((6, 4)), rng.standard_normal(6)

    def loss(w, x, y):
        return (jnp.dot(x, w) - y) ** 2
    got = jx.vmap(jx.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    want = np.stack([jx.grad(loss)(w, x, y) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(want, 2 * (xs @ w - ys)[:, None] * xs, rtol=1e-10)


def test_grad_of_grad_and_hessian(rng):
    x = rng.standard_normal(3)
    f = lambda v: jnp.sum(jnp.sin(v) * v ** 3)  # noqa: E731
    h = jx.hessian(f)(x)
    want = np.diag(-np.sin(x) * x ** 3 + 6 * np.cos(x) * x ** 2 + 6 * np.sin(x) * x)
    np.testing.assert_allclose(h, want, rtol=1e-9, atol=1e-12)
    g2 = jx.grad(jx.grad(lambda s: jnp.sin(s) * s))(1.3)
    np.testing.assert_allclose(g2, 2 * np.cos(1.3) - 1.3 * np.sin(1.3), rtol=1e-5)


def test_jacfwd_equals_jacrev(rng):
    x = rng.standard_normal(4)
    f = lambda v: jnp.tanh(v[None, :] * v[:, None]).sum(axis=0)  # noqa: E731
    np.testing.assert_allclose(jx.jacfwd(f)(x), jx.jacrev(f)(x), rtol=1e-10)
    np.testing.assert_allclose(jx.jacfwd(jx.jacrev(lambda v: jnp.sum(v ** 3)))(x),
                               np.diag(6 * x), rtol=1e-10)


def test_vmap_of_vmap_and_out_axes(rng):
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    got = jx.vmap(jx.vmap(jnp.dot, in_axes=(0, None)), in_axes=(0, None))(a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)
    got = jx.vmap(lambda r: r * 2.0, out_axes=1)(a[0])
    np.testing.assert_allclose(got, (a[0] * 2).T)


def test_linearize_and_vjp_structure(rng):
    x = rng.standard_normal(3)
    y, f_jvp = jx.linearize(jnp.sin, x)
    np.testing.assert_allclose(f_jvp(np.ones(3)), np.cos(x))
    out, vjp_fn = jx.vjp(lambda a, b: {"s": a * b}, x, x)
    ga, gb = vjp_fn({"s": np.ones(3)})
    np.testing.assert_allclose(ga, x)


def test_integer_inputs_get_float0(rng):
    out, vjp_fn = jx.vjp(lambda x, n: x * n, np.ones(3), np.arange(3, dtype=np.int32))
    gx, gn = vjp_fn(np.ones(3))
    assert gn.dtype == jx.float0 and gn.shape == (3,)
    np.testing.assert_allclose(gx, np.arange(3))


def test_autodiff_primitives_evaluate_like_their_functions(rng):
    """Forward values of the autodiff primitives, eagerly and traced."""
    x = rng.standard_normal((2, 3)).astype(np.float32)

    @jx.custom_jvp
    def cj(v):
        return jnp.sin(v) * 2.0
    cj.defjvp(lambda p, t: (cj(p[0]), 2.0 * jnp.cos(p[0]) * t[0]))

    @jx.custom_vjp
    def cv(v):
        return jnp.exp(v)
    cv.defvjp(lambda v: (jnp.exp(v), v), lambda r, g: (g * jnp.exp(r),))
    fns = {"stop_gradient": (jx.stop_gradient, x),
           "checkpoint": (jx.checkpoint(lambda v: jnp.tanh(v) + v), np.tanh(x) + x),
           "custom_jvp_call": (cj, np.sin(x) * 2), "custom_vjp_call": (cv, np.exp(x))}
    for name, (fn, want) in fns.items():
        graph = jx.verify(jx.make_graph(fn)(x))
        assert name in graph.op_counts()
        for got in (fn(x), jx.eval_graph(graph, x)[0]):
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_cumprod_gradient_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 4.0])
    g = jx.grad(lambda v: jnp.sum(jnp.cumprod(v)))(x)
    # d/dx_j sum_i prod_{k<=i} x_k, by hand: only prefixes containing x_1 = 0 vanish
    np.testing.assert_allclose(g, [1.0, 2 + 6 + 24, 0.0, 0.0])


def test_stop_gradient_blocks_derivative(rng):
    x = rng.standard_normal(3)
    np.testing.assert_allclose(jx.grad(lambda v: jnp.sum(jx.stop_gradient(v) * v))(x), x)
    np.testing.assert_allclose(jx.jvp(lambda v: jx.stop_gradient(v) * v, (x,), (x,))[1], x * x)


def test_custom_jvp_and_vjp(rng):
    @jx.custom_jvp
    def lse(x):
        return jnp.log(jnp.sum(jnp.exp(x)))

    @lse.defjvp
    def lse_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = lse(x)
        return y, jnp.sum(jnp.exp(x - y) * t)

    x = rng.standard_normal(5)
    soft = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(jx.grad(lse)(x), soft, rtol=1e-12)
    np.testing.assert_allclose(jx.vmap(jx.grad(lse))(np.stack([x, x])), [soft, soft])
    np.testing.assert_allclose(jx.grad(lambda v: jnp.sum(jx.vmap(lse)(v)))(x[None]), [soft])

    @jx.custom_vjp
    def clip_grad(x):
        return x

    clip_grad.defvjp(lambda x: (x, None), lambda res, g: (jnp.clip(g, -0.5, 0.5),))
    np.testing.assert_allclose(jx.grad(lambda v: jnp.sum(clip_grad(v) * 3.0))(x),
                               np.full(5, 0.5))
    with pytest.raises(jx.JxError, match="forward-mode"):
        jx.jvp(clip_grad, (x,), (x,))


def test_grad_graph_is_small_after_simplify():
    p = {"w1": jx.f32[784, 64], "b1": jx.f32[64], "w2": jx.f32[64, 10], "b2": jx.f32[10]}
    fwd = simplify(jx.make_graph(mlp_loss)(p, jx.f32[32, 784], jx.f32[32, 10]))
    bwd = simplify(jx.make_graph(jx.grad(mlp_loss))(p, jx.f32[32, 784], jx.f32[32, 10]))
    jx.verify(bwd)
    assert len(bwd.eqns) <= 3 * len(fwd.eqns), (len(fwd.eqns), len(bwd.eqns))


def test_transformed_graphs_verify(rng):
    params, x, y = _mlp(rng)
    jx.verify(jx.make_graph(jx.grad(mlp_loss))(params, x, y))
    jx.verify(jx.make_graph(jx.vmap(jx.grad(mlp_loss), in_axes=(None, 0, 0)))(params, x, y))
    jx.verify(jx.make_graph(jx.jacfwd(jnp.sin))(params["b1"]))
    jx.verify(jx.make_graph(jx.hessian(lambda v: jnp.sum(jnp.tanh(v) ** 3)))(params["b1"]))


# ---------------------------------------------------------------- errors

def test_grad_of_nonscalar_is_clear():
    with pytest.raises(jx.JxError, match="scalar"):
        jx.grad(jnp.sin)(np.ones(3))


def test_grad_of_int_input_is_clear():
    with pytest.raises(jx.JxError, match="float"):
        jx.grad(lambda n: n * 2.0)(np.arange(3))


def test_missing_rule_names_primitive_and_pass():
    from jx.core import declare
    from jx.errors import MissingRuleError
    prim = jx.PRIMITIVES.get("test_only_identity") or declare(
        "test_only_identity", lambda x: x, lambda x: x)
    f = lambda x: jnp.sum(prim.bind(x))  # noqa: E731
    with pytest.raises(MissingRuleError, match="test_only_identity.*|jvp"):
        jx.jvp(f, (np.ones(2),), (np.ones(2),))
    with pytest.raises(MissingRuleError, match="vmap: no rule for primitive 'test_only"):
        jx.vmap(f)(np.ones((2, 2)))
    del jx.PRIMITIVES["test_only_identity"]


def test_vmap_bad_in_axes_is_clear():
    with pytest.raises(jx.JxError, match="in_axes"):
        jx.vmap(jnp.add, in_axes=(0, 0, 0))(np.ones(3), np.ones(3))
    with pytest.raises(jx.JxError, match="different sizes"):
        jx.vmap(jnp.add)(np.ones(3), np.ones(4))


@pytest.mark.parametrize("name", ["logsumexp", "log_softmax", "softplus"])
def test_nn_functions_use_custom_jvp(name, rng):
    fn = getattr(jx.nn, name)
    x = rng.standard_normal((3, 5))

    def f(v):
        return jnp.sum(jnp.sin(fn(v)))
    g = jx.grad(f)(x)
    eps = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        fd[i] = (f(x + d) - f(x - d)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    assert "custom_jvp_call" in jx.make_graph(f)(x).op_counts()
    # stable at extreme inputs: no NaN from exp overflow in the derivative
    big = np.array([[1e4, 1e4, -1e4]])
    assert np.all(np.isfinite(jx.grad(lambda v: jnp.sum(fn(v)))(big)))


@pytest.mark.parametrize("dims,lhs_shape,rhs_shape", [
    ((((), ()), ((0,), (0,))), (5, 3), (5, 4)),          # per-row outer products
    ((((), ()), ((), ())), (3,), (4, 2)),                  # plain outer product
    ((((), ()), ((1,), (0,))), (3, 6), (6, 2)),            # batch dim not first in lhs
    ((((), ()), ((2, 0), (1, 0))), (2, 3, 4), (2, 4, 5)),  # two batch dims, reordered
])
def test_contraction_free_dot_becomes_an_elementwise_product(dims, lhs_shape, rhs_shape, rng):
    a = rng.standard_normal(lhs_shape).astype(np.float32)
    b = rng.standard_normal(rhs_shape).astype(np.float32)
    f = lambda a, b: lax.dot_general(a, b, dims)
    g = simplify(jx.make_graph(f)(a, b))
    assert [e.prim.name for e in g.eqns if e.prim.name == "dot_general"] == []
    want = f(a, b)                                   # eager: the NumPy reference
    np.testing.assert_allclose(jx.jit(f)(a, b), want, rtol=1e-6, atol=1e-6)
    from jx.interpret import eval_graph
    np.testing.assert_allclose(eval_graph(g, a, b)[0], want, rtol=1e-6, atol=1e-6)


def test_derivatives_at_kinks_follow_jax():
    """abs has slope +1 at 0 and -0; relu 0 at 0; relu6 0 at 0 and 6 (JAX's choices)."""
    np.testing.assert_array_equal(jx.grad(lambda x: jnp.sum(jnp.abs(x)))(
        np.array([0.0, -0.0, 1.0, -2.0])), [1, 1, 1, -1])
    np.testing.assert_array_equal(jx.grad(lambda x: jnp.sum(jx.nn.relu(x)))(
        np.array([0.0, 1.0, -1.0])), [0, 1, 0])
    np.testing.assert_array_equal(jx.grad(lambda x: jnp.sum(jx.nn.relu6(x)))(
        np.array([0.0, 1.0, 6.0, 7.0])), [0, 1, 0, 0])
    np.testing.assert_array_equal(jx.nn.relu6(np.array([-1.0, 3.0, 9.0])), [0, 3, 6])


def test_integer_division_of_the_most_negative_int():
    a = np.array([-2**31, -7, 7, -2**31], np.int32)
    b = np.array([1000, 2, -2, -3], np.int32)
    trunc = np.array([-2147483, -3, -3, 715827882], np.int32)
    np.testing.assert_array_equal(lax.div(a, b), trunc)
    np.testing.assert_array_equal(jx.jit(lax.div)(a, b), trunc)
    np.testing.assert_array_equal(jx.vmap(lambda x, y: x // y)(a, b), a // b)
    np.testing.assert_array_equal(jnp.floor_divide(np.int8(-128), np.int8(3)), -43)


def test_jacfwd_of_a_pytree_argument_and_grad_of_a_python_float(rng):
    x = rng.standard_normal(3)
    np.testing.assert_allclose(jx.jacfwd(lambda t: t[0] * 2.0)((x,)), 2 * np.eye(3))
    g = jx.grad(lambda a, s: jnp.sum(a) * s, argnums=1)(np.ones(3), 2.0)
    np.testing.assert_allclose(g, 3.0)


def test_jacrev_of_pytrees_matches_jacfwd_and_fd(rng):
    """jacrev with a dict argument and a tuple of outputs: an output-shaped tree of
    argument-shaped trees (as JAX), each block out.shape + in.shape."""
    p = {"a": rng.standard_normal(3), "b": rng.standard_normal(2)}

    def f(p):
        return jnp.sum(p["a"] * p["b"][0]), jnp.tanh(p["a"])[:2] * p["b"]

    jac = jx.jacrev(f)(p)
    assert isinstance(jac, tuple) and set(jac[0]) == {"a", "b"}
    assert jac[1]["a"].shape == (2, 3) and jac[1]["b"].shape == (2, 2)
    eps = 1e-6
    for key in ("a", "b"):
        for i in range(p[key].size):
            up = {k: v.copy() for k, v in p.items()}
            dn = {k: v.copy() for k, v in p.items()}
            up[key][i] += eps
            dn[key][i] -= eps
            for o in range(2):
                fd = (np.asarray(f(up)[o]) - np.asarray(f(dn)[o])) / (2 * eps)
                np.testing.assert_allclose(np.asarray(jac[o][key])[..., i], fd, rtol=1e-5,
                                           atol=1e-7)
