"""jx.lax's extra names (extras, special, shapes, scans) against JAX, NumPy and SciPy:
values, dtypes and weak types, lax's strict dtype errors, and jit / grad / vmap."""
import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax

jax = pytest.importorskip("jax")
jlax = jax.lax
jjnp = jax.numpy

RNG = np.random.default_rng(0)


def _same(got, want, rtol=2e-6, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64) if got.dtype.kind == "f" else got,
                               want.astype(np.float64) if want.dtype.kind == "f" else want,
                               rtol=rtol, atol=atol, equal_nan=True)


def _weak(x):
    return bool(getattr(x, "weak_type", False))


# ---------------------------------------------------------------- float functions

UNARY = {  # name -> input domain sampler
    "acos": lambda s, dt: RNG.uniform(-0.99, 0.99, s).astype(dt),
    "asin": lambda s, dt: RNG.uniform(-0.99, 0.99, s).astype(dt),
    "atan": lambda s, dt: RNG.normal(0, 3, s).astype(dt),
    "acosh": lambda s, dt: RNG.uniform(1.01, 20, s).astype(dt),
    "asinh": lambda s, dt: RNG.normal(0, 5, s).astype(dt),
    "atanh": lambda s, dt: RNG.uniform(-0.95, 0.95, s).astype(dt),
    "sinh": lambda s, dt: RNG.normal(0, 3, s).astype(dt),
    "cosh": lambda s, dt: RNG.normal(0, 3, s).astype(dt),
    "exp2": lambda s, dt: RNG.normal(0, 4, s).astype(dt),
    "cbrt": lambda s, dt: RNG.normal(0, 10, s).astype(dt),
    "square": lambda s, dt: RNG.normal(0, 3, s).astype(dt),
    "reciprocal": lambda s, dt: RNG.uniform(0.5, 3, s).astype(dt) * RNG.choice([-1, 1], s),
    "erfc": lambda s, dt: RNG.normal(0, 2, s).astype(dt),
    "erf_inv": lambda s, dt: RNG.uniform(-0.99, 0.99, s).astype(dt),
    "lgamma": lambda s, dt: RNG.uniform(0.1, 20, s).astype(dt),
    "digamma": lambda s, dt: RNG.uniform(0.2, 20, s).astype(dt),
    "bessel_i0e": lambda s, dt: RNG.normal(0, 5, s).astype(dt),
    "bessel_i1e": lambda s, dt: RNG.normal(0, 5, s).astype(dt),
}
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-11, atol=1e-13)}
SPECIAL_TOL = {np.float32: dict(rtol=5e-5, atol=5e-6), np.float64: dict(rtol=1e-9, atol=1e-12)}
SPECIAL = {"erfc", "erf_inv", "lgamma", "digamma", "bessel_i0e", "bessel_i1e"}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(), (7,), (3, 4)])
def test_unary_matches_jax(name, shape):
    x = np.asarray(UNARY[name](shape, np.float32))
    tol = (SPECIAL_TOL if name in SPECIAL else TOL)[np.float32]
    _same(getattr(lax, name)(x), getattr(jlax, name)(x), **tol)
    _same(jx.jit(getattr(lax, name))(x), getattr(jlax, name)(x), **tol)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_x64_grad_vmap(name):
    with jx.enable_x64(), jax.enable_x64(True):
        x = np.asarray(UNARY[name]((6,), np.float64))
        tol = (SPECIAL_TOL if name in SPECIAL else TOL)[np.float64]
        _same(getattr(lax, name)(x), getattr(jlax, name)(x), **tol)
        g = jx.vmap(jx.grad(getattr(lax, name)))(x)
        _same(g, jax.vmap(jax.grad(getattr(jlax, name)))(x), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["acos", "sinh", "exp2", "lgamma", "cbrt", "square"])
def test_weak_scalars_and_float16(name):
    got, want = getattr(lax, name)(0.5), getattr(jlax, name)(0.5)
    _same(got, want, rtol=1e-6)
    assert _weak(got) == _weak(want) is True
    x = np.asarray([0.25, 0.5, 0.75], np.float16)
    _same(getattr(lax, name)(x), getattr(jlax, name)(x), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("call", [
    lambda m: m.acos(1), lambda m: m.sinh(np.arange(3)), lambda m: m.lgamma(2),
    lambda m: m.square(np.ones(2, bool)), lambda m: m.reciprocal(2),
    lambda m: m.reciprocal(np.arange(1, 3)), lambda m: m.igamma(1, 2.0),
    lambda m: m.nextafter(np.ones(2, np.float16), 1.0), lambda m: m.polygamma(1, 2.0),
    lambda m: m.population_count(np.ones(2, np.float32)), lambda m: m.clz(np.ones(2, bool)),
    lambda m: m.mulhi(np.ones(2, np.float32), np.ones(2, np.float32)),
    lambda m: m.clamp(0.5, np.arange(3), 2), lambda m: m.clamp(np.zeros(2), np.ones(5), 3.0),
    lambda m: m.integer_pow(np.ones(2, bool), 2),
    lambda m: m.stack([np.ones(2), np.ones(2, np.int32)]),
    lambda m: m.select_n(np.array([0.0, 1.0]), np.zeros(2), np.ones(2)),
    lambda m: m.reduce_and(np.ones(2, np.float32), (0,)),
    lambda m: m.nextafter(np.ones((2, 3), np.float32), np.ones(3, np.float32)),
])
def test_type_errors_where_jax_raises(call):
    with pytest.raises(TypeError):
        call(jlax)
    with pytest.raises(TypeError):
        call(lax)


BINARY = {
    "igamma": lambda s: (RNG.uniform(0.3, 8, s), RNG.uniform(0.01, 12, s)),
    "igammac": lambda s: (RNG.uniform(0.3, 8, s), RNG.uniform(0.01, 12, s)),
    "zeta": lambda s: (RNG.uniform(1.5, 6, s), RNG.uniform(0.5, 4, s)),
    "polygamma": lambda s: (RNG.integers(0, 4, s).astype(float), RNG.uniform(0.5, 6, s)),
    "nextafter": lambda s: (RNG.normal(0, 2, s), RNG.normal(0, 2, s)),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shape", [(), (6,), (2, 3)])
def test_binary_matches_jax(name, shape):
    a, b = (np.asarray(v, np.float32) for v in BINARY[name](shape))
    tol = dict(rtol=1e-4, atol=1e-6) if name != "nextafter" else dict(rtol=0, atol=0)
    _same(getattr(lax, name)(a, b), getattr(jlax, name)(a, b), **tol)
    _same(jx.jit(getattr(lax, name))(a, b), getattr(jlax, name)(a, b), **tol)
    with jx.enable_x64(), jax.enable_x64(True):
        a, b = (np.asarray(v, np.float64) for v in BINARY[name](shape))
        tol = dict(rtol=1e-9, atol=1e-12) if name != "nextafter" else dict(rtol=0, atol=0)
        _same(getattr(lax, name)(a, b), getattr(jlax, name)(a, b), **tol)


def test_binary_weak_and_scalar_broadcast():
    got, want = lax.igamma(1.0, 2.0), jlax.igamma(1.0, 2.0)
    _same(got, want)
    assert _weak(got) and _weak(want)
    x = np.linspace(0.1, 3, 5).astype(np.float32)
    _same(lax.igamma(x, np.float32(2)), jlax.igamma(x, np.float32(2)), rtol=1e-5)
    _same(lax.nextafter(x, 1.0), jlax.nextafter(x, 1.0), rtol=0, atol=0)
    assert not _weak(lax.igamma(1.0, x))


def test_betainc_and_grads():
    a, b = RNG.uniform(0.5, 5, (2, 5)).astype(np.float32)
    x = RNG.uniform(0.05, 0.95, 5).astype(np.float32)
    _same(lax.betainc(a, b, x), jlax.betainc(a, b, x), rtol=2e-4, atol=1e-6)
    gx = jx.grad(lambda x: lax.betainc(a, b, x).sum())(x)
    _same(gx, jax.grad(lambda x: jlax.betainc(a, b, x).sum())(x), rtol=1e-3, atol=1e-5)
    ga = jx.grad(lambda x: lax.igamma(a, x).sum())(x)
    _same(ga, jax.grad(lambda x: jlax.igamma(a, x).sum())(x), rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------- integers

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32"]


@pytest.mark.parametrize("dt", INTS)
def test_bit_functions(dt):
    info = np.iinfo(dt)
    v = RNG.integers(info.min, info.max, (4, 9), endpoint=True).astype(dt)
    w = RNG.integers(info.min, info.max, (4, 9), endpoint=True).astype(dt)
    v[0, :3] = [0, info.max, info.min]
    for name in ("population_count", "clz"):
        _same(getattr(lax, name)(v), getattr(jlax, name)(v), rtol=0, atol=0)
        _same(jx.jit(getattr(lax, name))(v), getattr(jlax, name)(v), rtol=0, atol=0)
    _same(lax.mulhi(v, w), jlax.mulhi(v, w), rtol=0, atol=0)
    _same(jx.vmap(lax.mulhi)(v, w), jlax.mulhi(v, w), rtol=0, atol=0)
    _same(lax.square(v), jlax.square(v), rtol=0, atol=0)
    _same(lax.integer_pow(v, 3), jlax.integer_pow(v, 3), rtol=0, atol=0)


def test_bit_functions_x64_and_weak():
    with jx.enable_x64(), jax.enable_x64(True):
        for dt in ("int64", "uint64"):
            info = np.iinfo(dt)
            v = RNG.integers(info.min, info.max, 20, endpoint=True, dtype=dt)
            w = RNG.integers(info.min, info.max, 20, endpoint=True, dtype=dt)
            for name in ("population_count", "clz"):
                _same(getattr(lax, name)(v), getattr(jlax, name)(v), rtol=0, atol=0)
            _same(lax.mulhi(v, w), jlax.mulhi(v, w), rtol=0, atol=0)
    got = lax.population_count(5)
    assert int(got) == 2 and _weak(got) and _weak(jlax.population_count(5))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, -1, -3])
def test_integer_pow(n):
    x = RNG.uniform(0.5, 2, (3, 4)).astype(np.float32)
    _same(lax.integer_pow(x, n), jlax.integer_pow(x, n), rtol=1e-6)
    g = jx.grad(lambda x: lax.integer_pow(x, n).sum())(x)
    _same(g, jax.grad(lambda x: jlax.integer_pow(x, n).sum())(x), rtol=1e-5)
    got, want = lax.integer_pow(1.5, n), jlax.integer_pow(1.5, n)
    _same(got, want, rtol=1e-6)
    assert _weak(got) == _weak(want)


# ---------------------------------------------------------------- clamp

def test_clamp_values_and_derivatives():
    x = np.array([-2.0, 1.0, 1.5, 2.0, 3.0, np.nan], np.float32)
    for lo, hi in [(1.0, 2.0), (np.float32(1), np.float32(2)), (2.0, 1.0)]:
        _same(lax.clamp(lo, x, hi), jlax.clamp(lo, x, hi))
    _same(lax.clamp(0, np.arange(-3, 4), 2), jlax.clamp(0, jjnp.arange(-3, 4), 2), 0, 0)
    # (JAX's derivative fails for a scalar max beside an array operand: all arrays here)
    for argnum in range(3):
        def f(m, *args):
            return m.clamp(*args).sum()
        args = [np.full(5, 1.0, np.float32), x[:5].copy(), np.full(5, 2.0, np.float32)]
        got = jx.grad(lambda *a: f(lax, *a), argnums=argnum)(*args)
        want = jax.grad(lambda *a: f(jlax, *a), argnums=argnum)(*args)
        _same(got, want)
    for pts in ([1.0, 1.0, 2.0], [1.5, 1.0, 2.0], [1.0, 2.0, 2.0], [1.0, 2.0, 1.5],
                [1.5, 1.0, 0.5]):
        for i in range(3):
            got = jx.grad(lambda *a: lax.clamp(*a), argnums=i)(*pts)
            want = jax.grad(lambda *a: jlax.clamp(*a), argnums=i)(*pts)
            assert float(got) == float(want), (pts, i)
    _same(jx.vmap(lambda v: lax.clamp(1.0, v, 2.0))(x), jlax.clamp(1.0, x, 2.0))


# ---------------------------------------------------------------- shapes

def test_array_builders():
    for got, want in [(lax.full((2, 3), 1.5), jlax.full((2, 3), 1.5)),
                      (lax.full(3, 2, np.float32), jlax.full(3, 2, np.float32)),
                      (lax.full_like(np.ones(2, np.int8), 3.7),
                       jlax.full_like(np.ones(2, np.int8), 3.7)),
                      (lax.full_like(2.0, 3), jlax.full_like(2.0, 3)),
                      (lax.full_like(np.ones(2), 3, shape=(3, 1)),
                       jlax.full_like(np.ones(2), 3, shape=(3, 1))),
                      (lax.empty((2,), np.int32), jlax.empty((2,), np.int32)),
                      (lax.shape_as_value((2, 3)), jlax.shape_as_value((2, 3)))]:
        _same(got, want, 0, 0)
        assert _weak(got) == _weak(want)
    assert lax.broadcast_shapes((2, 1), (3,)) == jlax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    f = jx.jit(lambda x: lax.full_like(x, 7) + lax.full(x.shape, 1, x.dtype))
    _same(f(np.ones(3, np.float32)), np.full(3, 8, np.float32))


def test_shape_functions():
    x = np.arange(24).reshape(2, 3, 4).astype(np.float32)
    cases = [
        lambda m: m.tile(x, (2, 1, 3)), lambda m: m.tile(x[0, 0], (2,)),
        lambda m: m.stack([x, x + 1], axis=1), lambda m: m.stack([1.0, 2.0]),
        lambda m: m.collapse(x, 1), lambda m: m.collapse(x, 0, 2),
        lambda m: m.collapse(x, -2, None),
        lambda m: m.broadcast_to_rank(x[0], 4), lambda m: m.slice_in_dim(x, -3, None, 2, axis=2),
        lambda m: m.slice_in_dim(x, None, -1, axis=1), lambda m: m.index_in_dim(x, -1, 1),
        lambda m: m.index_in_dim(x, 2, 2, keepdims=False),
        lambda m: m.index_take(x, (np.array([0, 1, -1]), np.array([3, 5, 2])), (0, 2)),
        lambda m: m.index_take(x, (np.array([2, 0]),), (1,)),
    ]
    for c in cases:
        _same(c(lax), c(jlax), 0, 0)
    for a, b in zip(lax.split(x, (1, 0, 3), axis=2), jlax.split(x, (1, 0, 3), axis=2)):
        _same(a, b, 0, 0)
    for a, b in zip(lax.unstack(x, 1), jlax.unstack(x, 1)):
        _same(a, b, 0, 0)
    with pytest.raises(ValueError):
        lax.split(x, (1, 1), axis=2)
    with pytest.raises(IndexError):
        lax.index_in_dim(x, 3, 1)
    g = jx.grad(lambda v: (lax.tile(v, (2, 3)) * np.arange(12.0).reshape(4, 3)).sum())(
        np.ones((2, 1), np.float32))
    _same(g, jax.grad(lambda v: (jlax.tile(v, (2, 3)) * jjnp.arange(12.0).reshape(4, 3)).sum())(
        np.ones((2, 1), np.float32)))
    _same(jx.vmap(lambda v: lax.index_in_dim(v, 1, 0, False))(x), x[:, 1])


# ---------------------------------------------------------------- scans

@pytest.mark.parametrize("n", [1, 2, 5, 8, 13])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_sum_and_pytrees(n, reverse):
    x = RNG.normal(size=(3, n)).astype(np.float32)
    _same(lax.associative_scan(jnp.add, x, reverse=reverse, axis=1),
          jlax.associative_scan(jjnp.add, x, reverse=reverse, axis=1), rtol=1e-5, atol=1e-5)
    # a non-commutative one: composing affine maps y = a*y + b (a pytree of two arrays)
    a, b = RNG.uniform(0.5, 1.5, n).astype(np.float32), RNG.normal(size=n).astype(np.float32)

    def compose(m, p, q):
        return (q[0] * p[0], q[0] * p[1] + q[1])
    got = lax.associative_scan(lambda p, q: compose(jnp, p, q), (a, b), reverse=reverse)
    want = jlax.associative_scan(lambda p, q: compose(jjnp, p, q), (a, b), reverse=reverse)
    for g, w in zip(got, want):
        _same(g, w, rtol=1e-5, atol=1e-5)
    jitted = jx.jit(lambda a, b: lax.associative_scan(lambda p, q: compose(jnp, p, q), (a, b),
                                                      reverse=reverse))(a, b)
    _same(jitted[1], want[1], rtol=1e-5, atol=1e-5)


def test_associative_scan_grad_vmap():
    x = RNG.normal(size=(4, 6)).astype(np.float32)
    w = RNG.normal(size=(4, 6)).astype(np.float32)
    got = jx.grad(lambda x: (lax.associative_scan(jnp.multiply, x, axis=1) * w).sum())(x)
    want = jax.grad(lambda x: (jlax.associative_scan(jjnp.multiply, x, axis=1) * w).sum())(x)
    _same(got, want, rtol=1e-4, atol=1e-5)
    _same(jx.vmap(lambda r: lax.associative_scan(jnp.maximum, r))(x),
          jlax.associative_scan(jjnp.maximum, x, axis=1))


@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 5), 1), ((4, 3), 0)])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumlogsumexp_and_cumulative(shape, axis, reverse):
    x = RNG.normal(0, 3, shape).astype(np.float32)
    _same(lax.cumlogsumexp(x, axis, reverse), jlax.cumlogsumexp(x, axis, reverse), rtol=1e-5)
    g = jx.grad(lambda x: lax.cumlogsumexp(x, axis, reverse).sum())(x)
    _same(g, jax.grad(lambda x: jlax.cumlogsumexp(x, axis, reverse).sum())(x), rtol=1e-4,
          atol=1e-5)
    for name in ("cumsum", "cumprod", "cummax", "cummin"):
        _same(getattr(lax, name)(x, axis, reverse), getattr(jlax, name)(x, axis, reverse),
              rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.uint8])
def test_top_k(dt):
    x = RNG.integers(0, 6, (3, 10)).astype(dt)      # many ties: JAX's order among them
    for k in (0, 1, 4, 10):
        for got, want in zip(lax.top_k(x, k), jlax.top_k(x, k)):
            _same(got, want, 0, 0)
    for got, want in zip(lax.top_k(x, 3, axis=0), jlax.top_k(x, 3, axis=0)):
        _same(got, want, 0, 0)
    for got, want in zip(jx.jit(lambda v: lax.top_k(v, 2))(x), jlax.top_k(x, 2)):
        _same(got, want, 0, 0)


def test_top_k_nan_inf_and_grad():
    x = np.array([1.0, np.nan, 3.0, 3.0, -np.inf, np.nan, 0.0, -0.0, np.inf], np.float32)
    for got, want in zip(lax.top_k(x, 9), jlax.top_k(x, 9)):
        _same(got, want, 0, 0)
    y = RNG.normal(size=(2, 8)).astype(np.float32)
    got = jx.grad(lambda v: (lax.top_k(v, 3)[0] * np.arange(3.0)).sum())(y)
    want = jax.grad(lambda v: (jlax.top_k(v, 3)[0] * jjnp.arange(3.0)).sum())(y)
    _same(got, want)
    for g, w in zip(jx.vmap(lambda r: lax.top_k(r, 2))(y), jlax.top_k(y, 2)):
        _same(g, w, 0, 0)


# ---------------------------------------------------------------- selection, reduction

def test_select_n():
    cases = [RNG.normal(size=(2, 3)).astype(np.float32) for _ in range(4)]
    which = RNG.integers(-1, 6, (2, 3)).astype(np.int32)
    for n in (1, 2, 3, 4):
        _same(lax.select_n(which, *cases[:n]), jlax.select_n(which, *cases[:n]))
    b = RNG.random((2, 3)) > 0.5
    _same(lax.select_n(b, *cases[:2]), jlax.select_n(b, *cases[:2]))
    _same(lax.select_n(True, *cases[:2]), jlax.select_n(True, *cases[:2]))
    _same(lax.select_n(np.uint8(2), *cases[:3]), jlax.select_n(np.uint8(2), *cases[:3]))
    got = lax.select_n(True, 1.0, 2.0)
    assert float(got) == 2.0 and _weak(got)
    g = jx.grad(lambda c: lax.select_n(which, cases[0], c, cases[2]).sum())(cases[1])
    _same(g, jax.grad(lambda c: jlax.select_n(which, cases[0], c, cases[2]).sum())(cases[1]))
    _same(jx.vmap(lax.select_n)(which, cases[0], cases[1]), jlax.select_n(which, *cases[:2]))


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.bool_])
def test_reduce_monoids(dt):
    x = (RNG.normal(size=(3, 4, 5)) * 3).astype(dt)
    comps = [(jlax.add, lax.add, 0), (jlax.mul, lax.mul, 1), (jlax.max, lax.max, None),
             (jlax.min, lax.min, None)]
    if dt != np.float32:
        comps += [(jlax.bitwise_and, lax.bitwise_and, True if dt == np.bool_ else -1),
                  (jlax.bitwise_or, lax.bitwise_or, False if dt == np.bool_ else 0)]
    for jf, f, init in comps:
        if dt == np.bool_ and jf in (jlax.add, jlax.mul):
            continue
        if init is None:
            init = (-np.inf if jf is jlax.max else np.inf) if dt == np.float32 else \
                (np.iinfo(dt).min if jf is jlax.max else np.iinfo(dt).max) if dt != np.bool_ \
                else jf is jlax.min
        init = np.asarray(init, dt)
        for dims in [(0,), (1, 2), (0, 1, 2)]:
            _same(lax.reduce(x, init, f, dims), jlax.reduce(x, init, jf, dims), rtol=1e-5)
            _same(jx.jit(lambda v: lax.reduce(v, init, f, dims))(x),
                  jlax.reduce(x, init, jf, dims), rtol=1e-5)


def test_reduce_generic_variadic_and_lambdas():
    x = RNG.normal(size=(4, 7)).astype(np.float32)
    idx = np.broadcast_to(np.arange(7, dtype=np.int32), (4, 7))

    def argmax(m):
        def comp(a, b):
            take_a = m.bitwise_or(m.gt(a[0], b[0]), m.bitwise_and(m.eq(a[0], b[0]),
                                                                  m.lt(a[1], b[1])))
            return m.select(take_a, a[0], b[0]), m.select(take_a, a[1], b[1])
        return comp
    init = (np.float32(-np.inf), np.int32(0))
    got = lax.reduce((x, idx), init, argmax(lax), (1,))
    want = jlax.reduce((x, idx), init, argmax(jlax), (1,))
    for g, w in zip(got, want):
        _same(g, w, 0, 0)
    _same(lax.reduce(x, 0.0, lambda a, b: a + b, (0,)),
          jlax.reduce(x, 0.0, lambda a, b: a + b, (0,)), rtol=1e-5)
    # a non-identity init is applied once, as XLA does on the CPU
    _same(lax.reduce(x, np.float32(1.0), lax.add, (1,)),
          jlax.reduce(x, np.float32(1.0), jlax.add, (1,)), rtol=1e-5)
    _same(lax.reduce(x, np.float32(-np.inf), jnp.logaddexp, (1,)),
          jlax.reduce(x, np.float32(-np.inf), jjnp.logaddexp, (1,)), rtol=1e-5)
    g = jx.grad(lambda v: lax.reduce(v, np.float32(-np.inf), lax.max, (1,)).sum())(x)
    _same(g, jax.grad(lambda v: jlax.reduce(v, np.float32(-np.inf), jlax.max, (1,)).sum())(x))


@pytest.mark.parametrize("dt", [np.bool_, np.int8, np.uint16, np.int32])
def test_logical_reductions(dt):
    x = RNG.integers(0, 2 if dt == np.bool_ else 100, (3, 5, 4)).astype(dt)
    for name in ("reduce_and", "reduce_or", "reduce_xor"):
        for axes in [(0,), (1, 2), ()]:
            _same(getattr(lax, name)(x, axes), getattr(jlax, name)(x, axes), 0, 0)
    _same(jx.jit(lambda v: lax.reduce_xor(v, (1,)))(x), jlax.reduce_xor(x, (1,)), 0, 0)


def test_optimization_barrier():
    tree = (1.0, np.ones(2, np.float32))
    got, want = lax.optimization_barrier(tree), jlax.optimization_barrier(tree)
    for g, w in zip(got, want):
        _same(g, w)
    assert jx.grad(lambda v: lax.optimization_barrier(v * 3.0))(2.0) == 3.0


# ---------------------------------------------------------------- reduce_precision

def _random_floats(dt, n):
    ut = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]
    bits = RNG.integers(0, np.iinfo(ut).max, n, dtype=ut, endpoint=True).view(dt)
    with np.errstate(over="ignore"):
        scaled = (RNG.normal(size=n) * 10.0 ** RNG.integers(-8, 8, n)).astype(dt)
    return np.concatenate([bits, scaled, np.array([0, -0.0, np.inf, -np.inf, np.nan], dt)])


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_reduce_precision_bits(dt):
    with jx.enable_x64(), jax.enable_x64(True):
        x = _random_floats(dt, 2000)
        for eb, mb in [(5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (11, 52), (3, 0), (1, 1),
                       (6, 0), (2, 5)]:
            got = np.asarray(lax.reduce_precision(x, eb, mb))
            want = np.asarray(jlax.reduce_precision(x, eb, mb))
            assert got.dtype == want.dtype
            same = (got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")) | \
                (np.isnan(got) & np.isnan(want))
            assert same.all(), (eb, mb, x[~same][:4], got[~same][:4], want[~same][:4])


def test_reduce_precision_transforms():
    def f(m):
        return lambda x: m.reduce_precision(x * 1.3, 5, 2) * 1.7
    assert float(jx.grad(f(lax))(1.1)) == float(jax.grad(f(jlax))(1.1))
    for g, w in zip(jx.jvp(f(lax), (1.1,), (1.0,)), jax.jvp(f(jlax), (1.1,), (1.0,))):
        assert float(g) == float(w)
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    _same(jx.vmap(lambda r: lax.reduce_precision(r, 5, 3))(x), jlax.reduce_precision(x, 5, 3))
    _same(jx.jit(lambda r: lax.reduce_precision(r, 8, 7))(x), jlax.reduce_precision(x, 8, 7))
    got = lax.reduce_precision(1.3, 5, 2)
    assert float(got) == 1.25 and _weak(got)
    with pytest.raises(ValueError):
        lax.reduce_precision(x, 0, 3)
    with pytest.raises(TypeError):
        lax.reduce_precision(np.arange(3), 5, 2)


# ---------------------------------------------------------------- implicit solvers

@pytest.fixture
def autodiff():
    """jx.lax.solvers' rules need jx's jvp/vjp: the API layer registers them when
    jx.transforms loads (as jx.grad & co. load it)."""
    import jx.transforms
    from jx.lax import solvers
    assert solvers.AUTODIFF is jx.transforms
    yield


def _linear_problem(m, npx, symmetric=False, weights=np.arange(1.0, 5.0)):
    def jacobi(mv, b):       # an iterative solver: never differentiated itself
        d = npx.diagonal(A_now[0])
        return m.while_loop(lambda c: c[0] < 300,
                            lambda c: (c[0] + 1, c[1] + (b - mv(c[1])) / d),
                            (0, npx.zeros_like(b)))[1]
    A_now = [None]

    def f(A, b):
        A_now[0] = A
        mv = (lambda x: A @ x)
        x = m.custom_linear_solve(mv, b, jacobi, None if symmetric else jacobi,
                                  symmetric=symmetric)
        return (x * weights).sum()
    return f


@pytest.mark.parametrize("symmetric", [False, True])
def test_custom_linear_solve(autodiff, symmetric):
    A = RNG.normal(size=(4, 4)).astype(np.float32)
    A = (A + A.T if symmetric else A) + 10 * np.eye(4, dtype=np.float32)
    b = RNG.normal(size=4).astype(np.float32)
    f, jf = _linear_problem(lax, jnp, symmetric), _linear_problem(jlax, jjnp, symmetric)
    _same(f(A, b), jf(A, b), rtol=1e-5)
    _same(jx.jit(f)(A, b), jf(A, b), rtol=1e-5)
    want = jax.grad(jf, argnums=(0, 1))(A, b)
    for g, w in zip(jx.grad(f, argnums=(0, 1))(A, b), want):
        _same(g, w, rtol=1e-4, atol=1e-6)
    for g, w in zip(jx.jit(jx.grad(f, argnums=(0, 1)))(A, b), want):
        _same(g, w, rtol=1e-4, atol=1e-6)
    tA, tb = RNG.normal(size=(4, 4)).astype(np.float32), RNG.normal(size=4).astype(np.float32)
    for g, w in zip(jx.jvp(f, (A, b), (tA, tb)), jax.jvp(jf, (A, b), (tA, tb))):
        _same(g, w, rtol=1e-4, atol=1e-6)
    bs = RNG.normal(size=(3, 4)).astype(np.float32)
    _same(jx.vmap(jx.grad(f, argnums=1), (None, 0))(A, bs),
          jax.vmap(jax.grad(jf, argnums=1), (None, 0))(A, bs), rtol=1e-4, atol=1e-6)


def test_custom_linear_solve_pytrees_and_aux(autodiff):
    d1, d2 = np.float32([2.0, 3.0]), np.float32([4.0])

    def solve_tree(m):
        def f(s, b):
            mv = lambda x: {"u": x["u"] * d1 * s, "v": x["v"] * d2 * s}  # noqa: E731
            sol = lambda _, r: ({"u": r["u"] / (d1 * s), "v": r["v"] / (d2 * s)},  # noqa: E731
                                r["u"].sum())
            x, aux = m.custom_linear_solve(mv, b, sol, symmetric=True, has_aux=True)
            return x["u"].sum() + 3 * x["v"].sum() + 0 * aux
        return f
    b = {"u": np.float32([1.0, 2.0]), "v": np.float32([5.0])}
    s = np.float32(1.5)
    _same(solve_tree(lax)(s, b), solve_tree(jlax)(s, b))
    for g, w in zip(jax.tree_util.tree_leaves(jx.grad(solve_tree(lax), argnums=(0, 1))(s, b)),
                    jax.tree_util.tree_leaves(jax.grad(solve_tree(jlax), argnums=(0, 1))(s, b))):
        _same(g, w, rtol=1e-5)


def test_custom_linear_solve_needs_transpose_solve(autodiff):
    A = np.diag(np.float32([1.0, 2.0, 3.0]))
    def f(b):
        return lax.custom_linear_solve(lambda x: A @ x, b,
                                       lambda _, r: r / jnp.diagonal(A)).sum()
    _same(f(np.ones(3, np.float32)), np.float32(1 + 1 / 2 + 1 / 3))
    with pytest.raises(jx.errors.JxError, match="transpose_solve"):
        jx.grad(f)(np.ones(3, np.float32))


def _sqrt_by_root(m, npx):
    def f(a):
        def solve(fn, x0):
            return m.fori_loop(0, 40, lambda i, x: x - fn(x) / (2 * x), x0)
        return m.custom_root(lambda x: x * x - a, npx.ones_like(a), solve,
                             lambda g, y: y / g(npx.ones_like(y)))
    return f


def test_custom_root(autodiff):
    a = RNG.uniform(0.5, 9, 5).astype(np.float32)
    f, jf = _sqrt_by_root(lax, jnp), _sqrt_by_root(jlax, jjnp)
    _same(f(a), jf(a), rtol=1e-6)
    _same(jx.jit(f)(a), np.sqrt(a), rtol=1e-6)
    _same(jx.grad(lambda a: f(a).sum())(a), jax.grad(lambda a: jf(a).sum())(a), rtol=1e-5)
    _same(jx.grad(lambda a: f(a).sum())(a), 0.5 / np.sqrt(a), rtol=1e-5)
    _same(jx.jit(jx.grad(lambda a: f(a).sum()))(a), 0.5 / np.sqrt(a), rtol=1e-5)
    _same(jx.vmap(jx.grad(lambda a: f(a).sum()))(a[:, None]), (0.5 / np.sqrt(a))[:, None],
          rtol=1e-5)
    for g, w in zip(jx.jvp(f, (a,), (np.ones_like(a),)), jax.jvp(jf, (a,), (np.ones_like(a),))):
        _same(g, w, rtol=1e-5)
    with jx.enable_x64():
        x = lax.custom_root(lambda x: x ** 3 - 2.0, 1.0,
                            lambda fn, x0: lax.fori_loop(
                                0, 60, lambda i, x: x - fn(x) / (3 * x * x), x0),
                            lambda g, y: y / g(1.0))
        assert abs(float(x) - 2 ** (1 / 3)) < 1e-14


# ---------------------------------------------------------------- every name under jit and vmap

X = RNG.uniform(0.2, 0.9, (3, 4, 5)).astype(np.float32)
I = RNG.integers(-50, 50, (3, 4, 5)).astype(np.int32)
PER_EXAMPLE = {      # name -> f(m, one example of X or I) for jit and vmap over the batch
    "acos": lambda m, x: m.acos(x), "atanh": lambda m, x: m.atanh(x),
    "erf_inv": lambda m, x: m.erf_inv(x), "lgamma": lambda m, x: m.lgamma(x),
    "igammac": lambda m, x: m.igammac(x, x + 0.5), "zeta": lambda m, x: m.zeta(x + 1.5, x),
    "polygamma": lambda m, x: m.polygamma(m.full_like(x, 2.0), x),
    "betainc": lambda m, x: m.betainc(x + 1.0, x + 2.0, x),
    "nextafter": lambda m, x: m.nextafter(x, 0.0 * x),
    "integer_pow": lambda m, x: m.integer_pow(x, -3), "clamp": lambda m, x: m.clamp(0.4, x, 0.7),
    "reduce_precision": lambda m, x: m.reduce_precision(x, 5, 4),
    "full_like": lambda m, x: m.full_like(x, 2.5) + x, "tile": lambda m, x: m.tile(x, (2, 1)),
    "stack": lambda m, x: m.stack([x, 2 * x], 1), "unstack": lambda m, x: m.unstack(x, 1)[2],
    "split": lambda m, x: m.split(x, (2, 3), 1)[1],
    "slice_in_dim": lambda m, x: m.slice_in_dim(x, 1, None, 2, 1),
    "index_in_dim": lambda m, x: m.index_in_dim(x, -1, 0),
    "collapse": lambda m, x: m.collapse(x, 0),
    "broadcast_to_rank": lambda m, x: m.broadcast_to_rank(x, 4),
    "index_take": lambda m, x: m.index_take(x, (np.array([0, 3, -1]),), (0,)),
    "top_k": lambda m, x: m.top_k(x, 3)[1], "cumlogsumexp": lambda m, x: m.cumlogsumexp(x, 1, True),
    "associative_scan": lambda m, x: m.associative_scan(m.add, x, axis=1),
    "select_n": lambda m, x: m.select_n(m.gt(x, 0.5), x, -x),
    "reduce": lambda m, x: m.reduce(x, np.float32(-np.inf), m.max, (1,)),
    "optimization_barrier": lambda m, x: m.optimization_barrier(x),
}
PER_EXAMPLE_INT = {
    "population_count": lambda m, i: m.population_count(i), "clz": lambda m, i: m.clz(i),
    "mulhi": lambda m, i: m.mulhi(i, i * 7919), "square": lambda m, i: m.square(i),
    "reduce_xor": lambda m, i: m.reduce_xor(i, (0,)),
    "reduce_or": lambda m, i: m.reduce_or(i, (1,)),
}


@pytest.mark.parametrize("name", sorted(PER_EXAMPLE) + sorted(PER_EXAMPLE_INT))
def test_jit_and_vmap(name):
    fn, data = (PER_EXAMPLE[name], X) if name in PER_EXAMPLE else (PER_EXAMPLE_INT[name], I)
    want = jax.vmap(lambda v: fn(jlax, v))(data)
    tol = dict(rtol=1e-4, atol=1e-6)
    _same(jx.vmap(lambda v: fn(lax, v))(data), want, **tol)
    _same(jx.jit(jx.vmap(lambda v: fn(lax, v)))(data), want, **tol)
    _same(jx.jit(lambda v: fn(lax, v))(data[0]), want[0], **tol)


@pytest.mark.parametrize("call,error", [
    (lambda m: m.top_k(np.float32(1), 1), ValueError),
    (lambda m: m.top_k(np.ones(3, np.float32), 4), ValueError),
    (lambda m: m.associative_scan(lambda a, b: a, (np.ones(3), np.ones(4))), ValueError),
    (lambda m: m.split(np.ones(4), (1, 2)), ValueError),
    (lambda m: m.index_in_dim(np.ones(4), 4), IndexError),
    (lambda m: m.slice_in_dim(np.ones(4), 0, 5), TypeError),
    (lambda m: m.tile(np.ones(4), (1, 2)), TypeError),
    (lambda m: m.reduce((np.ones(3), np.ones(3)), 0.0, lambda a, b: a, (0,)), ValueError),
    (lambda m: m.reduce(np.ones(3, np.float32), 1, m.add, (0,)), TypeError),
    (lambda m: m.collapse(np.ones((2, 3)), 2, 1), ValueError),
    (lambda m: m.full((2,), np.ones(2)), TypeError),
    (lambda m: m.integer_pow(np.ones(2), 2.5), TypeError),
    (lambda m: m.stack([np.ones(2), np.ones(3)]), ValueError),
    (lambda m: m.select_n(np.ones(2, bool), np.ones(2), np.ones(2), np.ones(2)), TypeError),
])
def test_argument_errors_as_jax(call, error):
    with pytest.raises(error):
        call(jlax)
    with pytest.raises(error):
        call(lax)


def test_lenient_where_jax_is():
    x = np.arange(3.0, dtype=np.float32)
    for c in [lambda m: m.reduce(x, 0, m.add, (0,)), lambda m: m.integer_pow(x, 2.0),
              lambda m: m.broadcast_to_rank(np.ones((2, 3), np.float32), 1),
              lambda m: m.reduce(np.ones(3, np.int32), 0.0, m.add, (0,))]:
        _same(c(lax), c(jlax))
