"""Differentiation at a concrete point keeps the primals concrete (issue 17, 3).

As in JAX's autodiff cookbook: grad, value_and_grad, jvp, vjp, linearize, jacfwd,
jacrev and hessian at concrete inputs run Python control flow and float()/int() on
primal values, following the branch taken at that point. Under jit and vmap the
values are abstract and the TracerConversionError names the user's line.

Each function is written once against a module `m` (jx.numpy or NumPy), so the
NumPy version in float64 gives central finite differences as the reference;
JAX (when installed) is a second oracle.
"""
import inspect

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.errors import TracerConversionError


# ---------------------------------------------------------------- the functions

def piecewise(x, m=jnp):
    if m.sum(x) < 3:                        # BRANCH piecewise
        return m.sum(3.0 * x ** 2 + m.sin(x))
    return m.sum(-4.0 * x + m.cos(x))


def doubling(x, m=jnp):
    while m.max(m.abs(x)) < 10:             # BRANCH doubling
        x = x * 2.0
    return m.sum(x * m.sin(0.3 * x))   # well conditioned in float32 (unlike tanh at 20)


def recursive(x, m=jnp):
    depth = int(m.max(m.abs(x)))            # recursion depth chosen by a value
    return _power(x, depth, m)


def _power(x, n, m):
    return m.sum(m.exp(0.1 * x)) if n <= 0 else m.sum(x * 0.5) + _power(x * 0.9, n - 1, m)


SCALAR_FUNS = [piecewise, doubling, recursive]


def uses_float(x, m=jnp):
    """float(x) leaves the computation: a constant for the derivative (JAX too)."""
    c = float(m.sum(x))
    return m.sum(m.sin(x)) * c + c ** 2


def uses_float_grad(x):
    c = float(np.sum(x))
    return np.cos(x) * c


def vec_piecewise(x, m=jnp):
    """Vector -> vector, for the jacobians."""
    if m.sum(x) < 3:
        return m.sin(x) * x[::-1]
    return x ** 3 - m.exp(0.5 * x)


def _points(shape, rng):
    """Points on both sides of each branch: the kink at sum(x) == 3 and the integers
    (where `recursive` changes depth) avoided, so finite differences hold."""
    n = int(np.prod(shape)) or 1
    lo = rng.uniform(-1.0, 2.5 / n, shape)
    hi = rng.uniform(3.5 / n, 3.5 / n + 1.5, shape)
    out = []
    for x in (lo, hi):
        near = np.abs(x - np.round(x)) < 0.02
        out.append(np.where(near, x + 0.05, x).astype(np.float32))
    return out


def _fd_grad(f, x, eps=1e-5):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d, np) - f(x - d, np)) / (2 * eps)
    return g


def _fd_jac(f, x, eps=1e-5):
    x = np.asarray(x, np.float64)
    cols = []
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        cols.append((f(x + d, np) - f(x - d, np)) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x, np)) + x.shape)


def _close(a, b, rtol=2e-3, atol=2e-3):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=rtol, atol=atol)


SHAPES = [(), (3,), (2, 3)]


# ---------------------------------------------------------------- reverse mode

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fun", SCALAR_FUNS, ids=lambda f: f.__name__)
def test_grad_and_value_and_grad_follow_the_branch(fun, shape):
    rng = np.random.default_rng(0)
    for x in _points(shape, rng):
        g = jx.grad(fun)(x)
        assert np.shape(g) == shape and np.asarray(g).dtype == np.float32
        _close(g, _fd_grad(fun, x))
        v, g2 = jx.value_and_grad(fun)(x)
        _close(v, fun(np.asarray(x, np.float64), np), rtol=1e-4)
        _close(g2, g, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fun", SCALAR_FUNS, ids=lambda f: f.__name__)
def test_vjp_at_a_point(fun, shape):
    rng = np.random.default_rng(1)
    for x in _points(shape, rng):
        out, pull = jx.vjp(fun, x)
        ct = np.float32(rng.uniform(0.5, 2.0))
        (g,) = pull(ct)
        _close(out, fun(np.asarray(x, np.float64), np), rtol=1e-4)
        _close(g, ct * _fd_grad(fun, x))


def test_float_of_a_primal_is_a_constant():
    rng = np.random.default_rng(2)
    for shape in SHAPES:
        for x in _points(shape, rng):
            _close(jx.grad(uses_float)(x), uses_float_grad(x))
            t = rng.standard_normal(shape).astype(np.float32)
            _, tout = jx.jvp(uses_float, (x,), (t,))
            _close(tout, np.sum(uses_float_grad(x) * t))


def test_int_index_item_tolist_on_primals():
    def f(x):
        k = x[0].astype(jnp.int32)          # an int primal used as a Python index
        scale = x[1].item() + sum(x.tolist())
        return x[k] * scale + x[int(x[2])] ** 2
    x = np.array([1.7, 2.0, 0.2], np.float32)
    g = jx.grad(f)(x)
    scale = float(x[1]) + float(np.sum(x.astype(np.float64)))
    want = np.zeros(3)
    want[1] += scale
    want[0] += 2 * x[0]
    _close(g, want, rtol=1e-5)


def test_grad_has_aux_and_argnums_with_branches():
    def f(x, y):
        if x > y:
            return jnp.sum(x * y), {"branch": x * 0 + 1}
        return jnp.sum(x - y), {"branch": x * 0 + 2}
    (g, aux) = jx.grad(f, argnums=(0, 1), has_aux=True)(np.float32(2.0), np.float32(1.0))
    assert float(aux["branch"]) == 1
    _close(g, (1.0, 2.0))
    (g, aux) = jx.grad(f, argnums=(0, 1), has_aux=True)(np.float32(0.5), np.float32(1.0))
    assert float(aux["branch"]) == 2
    _close(g, (1.0, -1.0))


# ---------------------------------------------------------------- forward mode

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fun", SCALAR_FUNS, ids=lambda f: f.__name__)
def test_jvp_and_linearize_at_a_point(fun, shape):
    rng = np.random.default_rng(3)
    for x in _points(shape, rng):
        t = rng.standard_normal(shape).astype(np.float32)
        out, tout = jx.jvp(fun, (x,), (t,))
        want = np.sum(_fd_grad(fun, x) * t)
        _close(out, fun(np.asarray(x, np.float64), np), rtol=1e-4)
        _close(tout, want)
        out2, f_jvp = jx.linearize(fun, x)
        _close(out2, out, rtol=1e-6)
        _close(f_jvp(t), want)
        _close(f_jvp(2 * t), 2 * want)


# ---------------------------------------------------------------- jacobians, hessian

@pytest.mark.parametrize("n", [1, 3, 4])
def test_jacfwd_jacrev_at_a_point(n):
    rng = np.random.default_rng(4)
    for x in _points((n,), rng):
        want = _fd_jac(vec_piecewise, x)
        _close(jx.jacfwd(vec_piecewise)(x), want)
        _close(jx.jacrev(vec_piecewise)(x), want)


def _fd_hessian(f, x, eps=1e-3):
    return _fd_jac(lambda y, m: _fd_grad(f, y, eps), x, eps)


@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("fun", SCALAR_FUNS, ids=lambda f: f.__name__)
def test_hessian_and_grad_of_grad_at_a_point(fun, shape):
    rng = np.random.default_rng(5)
    for x in _points(shape, rng):
        h = jx.hessian(fun)(x)
        assert np.shape(h) == shape + shape
        _close(h, _fd_hessian(fun, x), rtol=1e-2, atol=1e-2)
        if shape == ():
            _close(jx.grad(jx.grad(fun))(x), h, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- JAX as the oracle

def _jax_version(fun):
    jnp_ = pytest.importorskip("jax.numpy")
    return lambda x: fun(x, jnp_)


# uses_float is not compared: JAX 0.10.2 raises ConcretizationTypeError for float()
# of a primal under grad/jvp (bool() it allows); jx allows both, as the issue asks.
@pytest.mark.parametrize("fun", SCALAR_FUNS, ids=lambda f: f.__name__)
def test_against_jax(fun):
    jax = pytest.importorskip("jax")
    jf = _jax_version(fun)
    rng = np.random.default_rng(6)
    for shape in SHAPES:
        for x in _points(shape, rng):
            _close(jx.grad(fun)(x), jax.grad(jf)(x), rtol=1e-4, atol=1e-4)
            t = rng.standard_normal(shape).astype(np.float32)
            _close(jx.jvp(fun, (x,), (t,))[1], jax.jvp(jf, (x,), (t,))[1], rtol=1e-4,
                   atol=1e-4)
            _close(jx.hessian(fun)(x), jax.hessian(jf)(x), rtol=1e-3, atol=1e-3)
    jv = _jax_version(vec_piecewise)
    for x in _points((3,), rng):
        _close(jx.jacrev(vec_piecewise)(x), jax.jacrev(jv)(x), rtol=1e-4, atol=1e-4)
        _close(jx.jacfwd(vec_piecewise)(x), jax.jacfwd(jv)(x), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- jit and vmap stay abstract

def _branch_line(fun):
    lines, start = inspect.getsourcelines(fun)
    for i, line in enumerate(lines):
        if "# BRANCH" in line:
            return f"{__file__}:{start + i}"
    raise AssertionError("no BRANCH marker")


@pytest.mark.parametrize("fun", [piecewise, doubling], ids=lambda f: f.__name__)
def test_jit_of_grad_keeps_the_tracer_error(fun):
    x = np.float32(1.0)
    for wrapped in (jx.jit(jx.grad(fun)), jx.jit(jx.value_and_grad(fun)),
                    jx.jit(lambda x: jx.jvp(fun, (x,), (x,))),
                    jx.jit(jx.hessian(fun))):
        with pytest.raises(TracerConversionError) as e:
            wrapped(x)
        assert _branch_line(fun) in str(e.value)


@pytest.mark.parametrize("fun", [piecewise, doubling], ids=lambda f: f.__name__)
def test_jit_inside_grad_at_a_point_is_abstract(fun):
    """A jit nested in differentiation at a point sees abstract inputs (as JAX's
    jit does): a branch on them inside the jit raises, one outside it does not."""
    with pytest.raises(TracerConversionError) as e:
        jx.grad(lambda x: jx.jit(fun)(x))(np.float32(2.0))
    assert _branch_line(fun) in str(e.value)
    g = jx.grad(lambda x: jx.jit(lambda y: y * y)(x) if x < 3 else x)(np.float32(2.0))
    np.testing.assert_allclose(g, 4.0)


@pytest.mark.parametrize("fun", [piecewise, doubling], ids=lambda f: f.__name__)
def test_vmap_of_grad_keeps_the_tracer_error(fun):
    xs = np.linspace(0.5, 4.0, 4).astype(np.float32)
    for wrapped in (jx.vmap(jx.grad(fun)), jx.vmap(jx.jacrev(fun)),
                    jx.vmap(lambda x: jx.jvp(fun, (x,), (x,))[1])):
        with pytest.raises(TracerConversionError) as e:
            wrapped(xs)
        assert _branch_line(fun) in str(e.value)


def test_vmap_inside_grad_is_abstract_over_its_batch():
    ys = np.linspace(-1.0, 1.0, 5).astype(np.float32)

    def on_primal(x):      # branches on the point (known), maps over ys
        return jnp.sum(jx.vmap(lambda y: y * x if x < 3 else y - x)(ys))
    _close(jx.grad(on_primal)(np.float32(2.0)), np.sum(ys))
    _close(jx.grad(on_primal)(np.float32(4.0)), -len(ys))

    def on_batch(x):       # branches on a mapped value: abstract, as in JAX
        return jnp.sum(jx.vmap(lambda y: y * x if y < 0 else y)(ys))
    with pytest.raises(TracerConversionError) as e:
        jx.grad(on_batch)(np.float32(2.0))
    assert f"{__file__}:" in str(e.value)


def test_control_flow_free_functions_unchanged_under_jit():
    """A function without Python branches: grad at a point, under jit and under vmap
    agree (the known trace adds no equations)."""
    def f(x):
        return jnp.sum(jnp.sin(x) * x)
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((4, 3)).astype(np.float32)
    eager = np.stack([np.asarray(jx.grad(f)(x)) for x in xs])
    _close(jx.jit(jx.vmap(jx.grad(f)))(xs), eager, rtol=1e-5, atol=1e-5)
    _close(eager, np.cos(xs) * xs + np.sin(xs), rtol=1e-5, atol=1e-5)
