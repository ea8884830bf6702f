"""jx.random's samplers beyond uniform/normal: JAX's algorithms and key splits.

Against JAX (where installed): integer-valued samplers bit for bit; float ones
to a few ulp (the algorithms are JAX's operation for operation, but jx's
log/exp/pow round differently from XLA's in the last bit). Everywhere:
distributions by Kolmogorov-Smirnov tests or moments with fixed keys, shapes,
dtypes, errors, and the gamma family's reparameterized gradient.
"""
import contextlib

import numpy as np
import pytest

import jx
import jx.numpy as jnp
import jx.random as jr

stats = pytest.importorskip("scipy.stats")

A = np.random.default_rng(0).uniform(0.2, 5, (3, 4)).astype(np.float32)
COV = np.array([[2, .5, 0], [.5, 1, .2], [0, .2, 3]], np.float32)

# name -> (call on a random module and key, float result?, relative tolerance f32/f64)
CASES = {
    "cauchy": (lambda r, k: r.cauchy(k, (5, 7)), 2e-6),
    "laplace": (lambda r, k: r.laplace(k, (5, 7)), 2e-6),
    "logistic": (lambda r, k: r.logistic(k, (5, 7)), 2e-6),
    "maxwell": (lambda r, k: r.maxwell(k, (5, 7)), 2e-6),
    "pareto": (lambda r, k: r.pareto(k, A), 2e-6),
    "lognormal": (lambda r, k: r.lognormal(k, A), 2e-6),
    "lognormal_default": (lambda r, k: r.lognormal(k, shape=(4,)), 2e-6),
    "rayleigh": (lambda r, k: r.rayleigh(k, A, (2, 3, 4)), 2e-6),
    "wald": (lambda r, k: r.wald(k, A), 1e-4),          # cancels in x's formula
    "weibull_min": (lambda r, k: r.weibull_min(k, 2.0, A, (3, 4)), 2e-6),
    "triangular": (lambda r, k: r.triangular(k, -1.0, A - 1, 5.0), 2e-6),
    "double_sided_maxwell": (lambda r, k: r.double_sided_maxwell(
        k, 1.0, np.full(3, 2, np.float32), (2,)), 2e-6),
    "gamma": (lambda r, k: r.gamma(k, A), 2e-6),
    "gamma_small_a": (lambda r, k: r.gamma(k, A * 0.05, (2, 3, 4)), 2e-6),
    "loggamma": (lambda r, k: r.loggamma(k, A * 0.05), 2e-6),
    "generalized_normal": (lambda r, k: r.generalized_normal(k, 1.5, (4, 5)), 2e-6),
    "ball": (lambda r, k: r.ball(k, 3, 2, (4,)), 2e-6),
    "t": (lambda r, k: r.t(k, A), 2e-6),
    "chisquare": (lambda r, k: r.chisquare(k, A), 2e-6),
    "f": (lambda r, k: r.f(k, A, A + 1), 2e-6),
    "beta": (lambda r, k: r.beta(k, A, 2.0), 2e-6),
    "dirichlet": (lambda r, k: r.dirichlet(k, A), 2e-6),
    "multivariate_normal": (lambda r, k: r.multivariate_normal(
        k, np.zeros(3, np.float32), COV, (5,)), 1e-5),
    "orthogonal": (lambda r, k: r.orthogonal(k, 4, (2,)), 1e-5),
    "orthogonal_wide": (lambda r, k: r.orthogonal(k, 3, (), m=5), 1e-5),
    # integer valued: exact
    "geometric": (lambda r, k: r.geometric(k, A / 6), 0),
    "rademacher": (lambda r, k: r.rademacher(k, (3, 5)), 0),
    "poisson_knuth": (lambda r, k: r.poisson(k, np.array([0, 0.5, 3, 9.9], np.float32)), 0),
    "poisson_rejection": (lambda r, k: r.poisson(k, np.array([10, 30, 1000], np.float32)), 0),
    "poisson_shape": (lambda r, k: r.poisson(k, 4.0, (50,)), 0),
    "binomial": (lambda r, k: r.binomial(
        k, np.array([5, 20, 100, 1000, 10, 0, -1, np.inf], np.float32),
        np.array([.3, .5, .7, .2, .9, .5, .5, .5], np.float32)), 0),
    "binomial_invalid_p": (lambda r, k: r.binomial(
        k, 10.0, np.array([np.nan, -0.1, 1.0, 0.0], np.float32)), 0),
    "multinomial": (lambda r, k: r.multinomial(
        k, 100.0, np.array([.2, .3, .5], np.float32), shape=(4, 3)), 0),
}


def _mode(x64):
    return jx.enable_x64() if x64 else contextlib.nullcontext()


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name, x64):
    jax = pytest.importorskip("jax")
    fn, rtol = CASES[name]
    with jax.enable_x64(x64), _mode(x64):
        want = np.asarray(fn(jax.random, jax.random.PRNGKey(7)))
        eager = np.asarray(fn(jr, jr.PRNGKey(7)))
        jitted = np.asarray(jx.jit(lambda k: fn(jr, k))(jr.PRNGKey(7)))
    for got in (eager, jitted):
        assert got.dtype == want.dtype and got.shape == want.shape
        if rtol == 0:
            np.testing.assert_array_equal(got, want)
        else:
            tol = rtol if want.dtype == np.float32 else 1e-12 * rtol / 2e-6
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_gamma_bits_match_jax_on_a_large_draw():
    """Each element walks its own key stream through Marsaglia-Tsang: the same
    acceptances as JAX, so nearly every element is JAX's to the last bit (the
    few that are not differ by the last-bit rounding of jx's log/pow)."""
    jax = pytest.importorskip("jax")
    a = np.random.default_rng(1).uniform(0.1, 20, 2000).astype(np.float32)
    want = np.asarray(jax.random.gamma(jax.random.PRNGKey(3), a))
    got = np.asarray(jx.jit(jr.gamma)(jr.PRNGKey(3), a))
    assert np.mean(got == want) > 0.9
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_vmap_over_keys_matches_jax():
    jax = pytest.importorskip("jax")
    keys = np.asarray(jax.random.split(jax.random.PRNGKey(0), 4))
    want = np.asarray(jax.vmap(lambda k: jax.random.gamma(k, 2.0, (3,)))(keys))
    got = np.asarray(jx.vmap(lambda k: jr.gamma(k, 2.0, (3,)))(keys))
    np.testing.assert_allclose(got, want, rtol=2e-6)


def test_vmap_over_parameters_matches_jax():
    """A shared key under vmap: each row draws what the unbatched call would."""
    jax = pytest.importorskip("jax")
    a = np.array([[0.5, 2.0, 7.0], [1.5, 3.0, 0.2]], np.float32)
    for name, f in (("gamma", lambda r, k, a: r.gamma(k, a)),
                    ("poisson", lambda r, k, a: r.poisson(k, 5 * a, (3,)))):
        want = np.asarray(jax.vmap(lambda a: f(jax.random, jax.random.PRNGKey(1), a))(a))
        got = np.asarray(jx.vmap(lambda a: f(jr, jr.PRNGKey(1), a))(a))
        np.testing.assert_allclose(got, want, rtol=2e-6, err_msg=name)


# ---------------------------------------------------------------- distributions

N = 4000


class _SignedChi3:
    """A Maxwell magnitude (chi with 3 degrees of freedom) with a random sign."""
    @staticmethod
    def cdf(x):
        return 0.5 * (1 + np.sign(x) * stats.chi(3).cdf(np.abs(x)))


KS = {   # name -> (draw, scipy frozen distribution)
    "cauchy": (lambda k: jr.cauchy(k, (N,)), stats.cauchy()),
    "laplace": (lambda k: jr.laplace(k, (N,)), stats.laplace()),
    "logistic": (lambda k: jr.logistic(k, (N,)), stats.logistic()),
    "maxwell": (lambda k: jr.maxwell(k, (N,)), stats.maxwell()),
    "pareto": (lambda k: jr.pareto(k, 3.0, (N,)), stats.pareto(3.0)),
    "lognormal": (lambda k: jr.lognormal(k, 0.5, (N,)), stats.lognorm(0.5)),
    "rayleigh": (lambda k: jr.rayleigh(k, 2.0, (N,)), stats.rayleigh(scale=2.0)),
    "wald": (lambda k: jr.wald(k, 1.5, (N,)), stats.invgauss(1.5)),
    "weibull_min": (lambda k: jr.weibull_min(k, 2.0, 1.5, (N,)),
                    stats.weibull_min(1.5, scale=2.0)),
    "triangular": (lambda k: jr.triangular(k, -1.0, 0.5, 2.0, (N,)),
                   stats.triang(0.5, loc=-1.0, scale=3.0)),
    "double_sided_maxwell": (lambda k: jr.double_sided_maxwell(k, 0.0, 1.0, (N,)),
                             _SignedChi3()),
    "gamma_0.2": (lambda k: jr.gamma(k, 0.2, (N,)), stats.gamma(0.2)),
    "gamma_3": (lambda k: jr.gamma(k, 3.0, (N,)), stats.gamma(3.0)),
    "gamma_400": (lambda k: jr.gamma(k, 400.0, (N,)), stats.gamma(400.0)),
    "loggamma": (lambda k: jnp.exp(jr.loggamma(k, 0.7, (N,))), stats.gamma(0.7)),
    "generalized_normal": (lambda k: jr.generalized_normal(k, 3.0, (N,)), stats.gennorm(3.0)),
    "t": (lambda k: jr.t(k, 4.0, (N,)), stats.t(4.0)),
    "chisquare": (lambda k: jr.chisquare(k, 5.0, (N,)), stats.chi2(5.0)),
    "f": (lambda k: jr.f(k, 4.0, 7.0, (N,)), stats.f(4.0, 7.0)),
    "beta": (lambda k: jr.beta(k, 0.5, 2.0, (N,)), stats.beta(0.5, 2.0)),
    "dirichlet_marginal": (lambda k: jr.dirichlet(k, np.array([1.5, 2.0, 0.5]), (N,))[:, 0],
                           stats.beta(1.5, 2.5)),
    "ball_radius": (lambda k: jnp.linalg.norm(jr.ball(k, 3, 2, (N,)), axis=-1) ** 3,
                    stats.uniform()),
    "mvn_projection": (lambda k: jr.multivariate_normal(k, np.ones(3), COV, (N,)) @
                       np.array([1.0, -1.0, 0.5]),
                       stats.norm(0.5, np.sqrt(np.array([1, -1, .5]) @ COV @
                                               np.array([1, -1, .5])))),
}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(KS))
def test_distribution_ks(name, jit):
    draw, dist = KS[name]
    f = jx.jit(draw) if jit else draw
    x = np.asarray(f(jr.PRNGKey(11)), np.float64)
    assert np.all(np.isfinite(x))
    assert stats.kstest(x, dist.cdf).pvalue > 1e-3


DISCRETE = {   # name -> (draw, scipy frozen distribution)
    "poisson_3": (lambda k: jr.poisson(k, 3.0, (N,)), stats.poisson(3.0)),
    "poisson_40": (lambda k: jr.poisson(k, 40.0, (N,)), stats.poisson(40.0)),
    "binomial_inv": (lambda k: jr.binomial(k, 12.0, 0.3, (N,)), stats.binom(12, 0.3)),
    "binomial_btrs": (lambda k: jr.binomial(k, 200.0, 0.6, (N,)), stats.binom(200, 0.6)),
    "geometric": (lambda k: jr.geometric(k, 0.3, (N,)), stats.geom(0.3)),
}


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_distribution(name, x64):
    """Chi-square goodness of fit over the values with enough expected counts."""
    draw, dist = DISCRETE[name]
    with _mode(x64):
        x = np.asarray(jx.jit(draw)(jr.PRNGKey(5)))
    lo, hi = dist.ppf(0.001), dist.ppf(0.999)
    edges = np.arange(lo, hi + 2) - 0.5
    seen, _ = np.histogram(x, edges)
    expect = np.diff(dist.cdf(edges)) * N
    keep = expect > 5
    chi2 = np.sum((seen[keep] - expect[keep]) ** 2 / expect[keep])
    assert stats.chi2(keep.sum() - 1).sf(chi2) > 1e-3


def test_multinomial_counts():
    p = np.array([0.1, 0.6, 0.3], np.float32)
    x = np.asarray(jx.jit(lambda k: jr.multinomial(k, 50.0, p, shape=(N, 3)))(jr.PRNGKey(2)))
    assert x.dtype == np.float32 and x.shape == (N, 3)
    np.testing.assert_array_equal(x.sum(-1), 50)
    np.testing.assert_allclose(x.mean(0), 50 * p, rtol=0.03)
    np.testing.assert_allclose(np.cov(x.T), 50 * (np.diag(p) - np.outer(p, p)), atol=0.6)


def test_rademacher_and_orthogonal_properties():
    r = np.asarray(jr.rademacher(jr.PRNGKey(0), (N,)))
    assert r.dtype == np.int32 and set(np.unique(r)) == {-1, 1} and abs(r.mean()) < 0.05
    q = np.asarray(jx.jit(lambda k: jr.orthogonal(k, 5, (3,)))(jr.PRNGKey(1)))
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(5), (3, 5, 5)),
                               atol=1e-5)
    w = np.asarray(jr.orthogonal(jr.PRNGKey(1), 2, m=4))
    assert w.shape == (2, 4)
    np.testing.assert_allclose(w @ w.T, np.eye(2), atol=1e-5)


def test_multivariate_normal_moments_and_batching():
    mean = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]], np.float32)
    x = np.asarray(jx.jit(lambda k: jr.multivariate_normal(k, mean, COV, (N, 2)))(
        jr.PRNGKey(4)))
    assert x.shape == (N, 2, 3) and x.dtype == np.float32
    np.testing.assert_allclose(x.mean(0), mean, atol=0.1)
    np.testing.assert_allclose(np.cov(x[:, 1].T), COV, atol=0.15)


# ---------------------------------------------------------------- gradients

@pytest.mark.parametrize("log_space", [False, True])
def test_gamma_gradient_is_implicit_reparameterization(log_space):
    """d sample / d a at a fixed CDF level: -(dF/da) / f, F by scipy."""
    a = np.array([0.1, 0.4, 1.0, 2.5, 10.0, 60.0])
    fn = jr.loggamma if log_space else jr.gamma
    k = jr.PRNGKey(9)
    x = np.asarray(fn(k, a.astype(np.float32)), np.float64)
    g = np.asarray(jx.grad(lambda a: fn(k, a).sum())(a.astype(np.float32)), np.float64)
    s = np.exp(x) if log_space else x
    h = 1e-6 * a
    dF = (stats.gamma.cdf(s, a + h) - stats.gamma.cdf(s, a - h)) / (2 * h)
    want = -dF / stats.gamma.pdf(s, a)
    if log_space:
        want = want / s
    np.testing.assert_allclose(g, want, rtol=2e-3)


def test_gamma_gradient_matches_jax():
    jax = pytest.importorskip("jax")
    a = np.array([0.05, 0.3, 1.0, 2.5, 10.0, 150.0], np.float32)
    for name in ("gamma", "loggamma"):
        want = np.asarray(jax.grad(lambda a: getattr(jax.random, name)(
            jax.random.PRNGKey(1), a).sum())(a))
        got = np.asarray(jx.jit(jx.grad(lambda a: getattr(jr, name)(jr.PRNGKey(1), a).sum()))(a))
        np.testing.assert_allclose(got, want, rtol=1e-4)


def test_gamma_gradient_x64_matches_jax():
    jax = pytest.importorskip("jax")
    a = np.array([0.3, 2.0, 50.0])
    with jax.enable_x64(True), jx.enable_x64():
        want = np.asarray(jax.grad(lambda a: jax.random.gamma(jax.random.PRNGKey(0), a).sum())(a))
        got = np.asarray(jx.grad(lambda a: jr.gamma(jr.PRNGKey(0), a).sum())(a))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-10)


PARAM = np.array([0.7, 2.0, 4.0], np.float32)
TRACED = {   # samplers of a traced parameter a, under jx.jit, and their gradients in a
    "pareto": lambda r, k, a: r.pareto(k, a),
    "lognormal": lambda r, k, a: r.lognormal(k, a),
    "rayleigh": lambda r, k, a: r.rayleigh(k, a),
    "wald": lambda r, k, a: r.wald(k, a),
    "weibull_min": lambda r, k, a: r.weibull_min(k, a, a, (3,)),
    "triangular": lambda r, k, a: r.triangular(k, a - 1, a, a + 1),
    "double_sided_maxwell": lambda r, k, a: r.double_sided_maxwell(k, a, a),
    "t": lambda r, k, a: r.t(k, a),
    "chisquare": lambda r, k, a: r.chisquare(k, a),
    "f": lambda r, k, a: r.f(k, a, a),
    "beta": lambda r, k, a: r.beta(k, a, a),
    "dirichlet": lambda r, k, a: r.dirichlet(k, a),
    "multivariate_normal": lambda r, k, a: r.multivariate_normal(k, a[:2], COV[:2, :2] * a[0]),
    "ball": lambda r, k, a: r.ball(k, 3, 1.5) * a,
}


@pytest.mark.parametrize("name", sorted(TRACED))
def test_traced_parameters_and_gradients_match_jax(name):
    jax = pytest.importorskip("jax")
    f = TRACED[name]
    got = np.asarray(jx.jit(lambda k, a: f(jr, k, a))(jr.PRNGKey(3), PARAM))
    want = np.asarray(f(jax.random, jax.random.PRNGKey(3), PARAM))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    g = np.asarray(jx.grad(lambda a: f(jr, jr.PRNGKey(3), a).sum())(PARAM))
    gw = np.asarray(jax.grad(lambda a: f(jax.random, jax.random.PRNGKey(3), a).sum())(PARAM))
    np.testing.assert_allclose(g, gw, rtol=1e-3)


def test_beta_and_dirichlet_are_differentiable():
    g = jx.grad(lambda a: jr.beta(jr.PRNGKey(0), a, 2.0, (8,)).sum())(np.float32(1.5))
    assert np.isfinite(np.asarray(g))
    g = jx.grad(lambda a: jr.dirichlet(jr.PRNGKey(0), a)[0])(np.array([1.0, 2.0], np.float32))
    assert np.all(np.isfinite(np.asarray(g)))


# ---------------------------------------------------------------- shapes, dtypes, errors

def test_default_dtypes_and_shapes():
    k = jr.PRNGKey(0)
    assert jr.gamma(k, np.ones((2, 3))).dtype == np.float32
    assert jr.gamma(k, 1.0, (4, 2, 3)).shape == (4, 2, 3)
    assert jr.poisson(k, 3.0, (5,)).dtype == np.int32
    assert jr.binomial(k, 5.0, 0.5).dtype == np.float32
    assert jr.double_sided_maxwell(k, np.zeros(3), 1.0, (2,)).shape == (2, 3)
    assert jr.double_sided_maxwell(k, np.zeros(3), 1.0).shape == (3, 3)
    assert jr.dirichlet(k, np.ones(4), (2, 5)).shape == (2, 5, 4)
    assert jr.ball(k, 4, 1, (3,)).shape == (3, 4)
    with jx.enable_x64():
        assert jr.gamma(k, 1.0).dtype == np.float64
        assert jr.poisson(k, 3.0).dtype == np.int64
        assert jr.cauchy(k).dtype == np.float64
        assert jr.gamma(k, 1.0, dtype=np.float32).dtype == np.float32


def test_errors_name_the_problem():
    k = jr.PRNGKey(0)
    with pytest.raises(ValueError, match="dtype argument to `gamma` must be a float"):
        jr.gamma(k, 1.0, dtype=np.int32)
    with pytest.raises(ValueError, match="dtype argument to `poisson` must be an int"):
        jr.poisson(k, 1.0, dtype=np.float32)
    with pytest.raises(ValueError, match="broadcast"):
        jr.beta(k, np.ones(3), 1.0, (3, 2))
    with pytest.raises(ValueError, match="method must be one of"):
        jr.multivariate_normal(k, np.zeros(2), np.eye(2), method="lu")
    with pytest.raises(ValueError, match="cov.shape"):
        jr.multivariate_normal(k, np.zeros(2), np.eye(3))
    with pytest.raises(TypeError, match="static Python int"):
        jr.orthogonal(k, 2.5)
    with pytest.raises(TypeError, match="uint32"):
        jr.gamma(np.zeros(3, np.uint32), 1.0)
    # as JAX: a strongly typed parameter must convert to dtype without losing precision
    assert jr.pareto(k, 2.0, dtype=np.float16).dtype == np.float16
    with pytest.raises(ValueError, match="cannot safely cast argument of type float32"):
        jr.pareto(k, np.float32(2.0), dtype=np.float16)
    with jx.enable_x64(), pytest.raises(ValueError, match="In arguments to beta"):
        jr.beta(k, np.ones(2), 1.0, dtype=np.float32)


def test_key_utilities():
    k = jr.PRNGKey(3)
    keys = jr.split(k, 4)
    np.testing.assert_array_equal(jr.key_data(keys), keys)
    np.testing.assert_array_equal(jr.wrap_key_data(jr.key_data(k)), k)
    np.testing.assert_array_equal(jr.clone(k), k)
    assert jr.key_impl(k) == "threefry2x32"
    assert jr.key_dtype() == np.uint32
    np.testing.assert_array_equal(jr.wrap_key_data(k, impl="threefry2x32"), k)
    with pytest.raises(ValueError, match="threefry2x32"):
        jr.wrap_key_data(k, impl="rbg")
    with pytest.raises(TypeError, match=r"\[\.\.\., 2\]"):
        jr.key_data(np.zeros(3, np.uint32))
