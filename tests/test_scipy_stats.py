"""jx.scipy.stats against scipy.stats (and jax.scipy.stats where JAX is installed):
values eager and under jx.jit in float32 and float64 (the float64 cases run in 64-bit
mode, see conftest), broadcasting of parameters, out-of-support and invalid
parameters, gradients against finite differences, vmap."""
import numpy as np
import pytest

ss = pytest.importorskip("scipy.stats")

import jx                                   # noqa: E402
import jx.numpy as jnp                      # noqa: E402
from jx.scipy import stats                  # noqa: E402

FLOATS = [np.float32, np.float64]


def _need(*names):
    """Skip where jx.scipy.special lacks a function these cases use."""
    try:
        from jx.scipy import special
    except ImportError:
        pytest.skip("jx.scipy.special is not there yet")
    missing = [n for n in names if not hasattr(special, n)]
    if missing:
        pytest.skip(f"jx.scipy.special lacks {', '.join(missing)}")


def _tol(dtype, loose=False):
    if dtype == np.float32:
        return dict(rtol=5e-4 if loose else 5e-5, atol=1e-5 if loose else 2e-6)
    return dict(rtol=1e-8 if loose else 1e-11, atol=1e-12)


def _check(got, want, dtype, loose=False):
    got = np.asarray(got)
    assert got.dtype == dtype, (got.dtype, dtype)
    np.testing.assert_allclose(got, want, **_tol(dtype, loose))


def _eager_and_jit(fn, args, want, dtype, loose=False):
    _check(fn(*args), want, dtype, loose)
    _check(jx.jit(fn)(*args), want, dtype, loose)


# --- continuous families with loc and scale -------------------------------------------
# name: (functions, number of positive shape parameters, support of (x - loc) / scale as
#        a range to draw from (wider than the support, so some draws fall outside), the
#        special functions they need, loose tolerance)
CONTINUOUS = {
    "norm": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"], 0, (-4, 4),
             ("ndtr", "log_ndtr", "ndtri"), True),
    "uniform": (["logpdf", "pdf", "cdf", "ppf"], 0, (-0.5, 1.5), (), False),
    "expon": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"], 0, (-1, 5), (), False),
    "cauchy": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"], 0, (-6, 6),
               (), False),
    "laplace": (["logpdf", "pdf", "cdf"], 0, (-5, 5), (), False),
    "logistic": (["logpdf", "pdf", "cdf", "sf", "ppf", "isf"], 0, (-6, 6),
                 ("expit", "logit"), False),
    "t": (["logpdf", "pdf"], 1, (-5, 5), ("gammaln",), True),
    "gamma": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], 1, (-1, 6),
              ("gammaln", "xlogy", "gammainc", "gammaincc"), True),
    "chi2": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], 1, (-1, 8),
             ("gammaln", "gammainc", "gammaincc"), True),
    "beta": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], 2, (-0.2, 1.2),
             ("gammaln", "betaln", "xlogy", "xlog1py", "betainc"), True),
    "pareto": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"], 1, (0.5, 6), (),
               True),
    "gumbel_r": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"], 0, (-3, 6), (),
                 True),
    "gumbel_l": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"], 0, (-6, 3), (),
                 True),
}
CONT_CASES = [(name, fn) for name, spec in CONTINUOUS.items() for fn in spec[0]]
_PROB_ARG = ("ppf", "isf")


def _continuous_args(name, fn, dtype, rng):
    """(x, *shapes, loc, scale) of broadcasting shapes (3, 4), (1, 4), (4,), (3, 1)."""
    _, nshape, (lo, hi), _, _ = CONTINUOUS[name]
    loc = rng.normal(size=(4,)).astype(dtype)
    scale = rng.uniform(0.5, 2.0, size=(3, 1)).astype(dtype)
    shapes = [rng.uniform(0.7, 4.0, size=(1, 4)).astype(dtype) for _ in range(nshape)]
    if fn in _PROB_ARG:
        x = rng.uniform(0.02, 0.98, size=(3, 4)).astype(dtype)
    else:
        x = (loc + scale * rng.uniform(lo, hi, size=(3, 4))).astype(dtype)
    return (x, *shapes, loc, scale)


def _scipy_continuous(name, fn, args):
    x, *shapes, loc, scale = [np.asarray(a, np.float64) for a in args]
    with np.errstate(all="ignore"):
        return getattr(getattr(ss, name), fn)(x, *shapes, loc=loc, scale=scale)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,fn", CONT_CASES)
def test_continuous_against_scipy(name, fn, dtype, rng):
    _need(*CONTINUOUS[name][3])
    args = _continuous_args(name, fn, dtype, rng)
    want = _scipy_continuous(name, fn, args)
    _eager_and_jit(getattr(getattr(stats, name), fn), args, want, dtype, CONTINUOUS[name][4])


@pytest.mark.parametrize("name,fn", CONT_CASES)
def test_continuous_defaults_and_ints(name, fn):
    """Default loc/scale, integer x promoted to the default float; a weak result from
    Python scalars only."""
    _need(*CONTINUOUS[name][3])
    f = getattr(getattr(stats, name), fn)
    shapes = (2.5,) * CONTINUOUS[name][1]
    x = np.array([0, 1, 2], np.int32) if fn not in _PROB_ARG else np.array([0.25, 0.5])
    out = f(x, *shapes)
    assert out.dtype == np.float32
    want = getattr(getattr(ss, name), fn)(x.astype(np.float64), *shapes)
    np.testing.assert_allclose(np.asarray(out), want, **_tol(np.float32, True))


# --- discrete families ----------------------------------------------------------------
def _discrete_args(name, dtype, rng):
    k = rng.integers(-1, 9, size=(3, 4)).astype(dtype)
    loc = np.array([0, 1, 0, 2], dtype)
    if name == "poisson":
        return (k, rng.uniform(0.5, 5.0, size=(3, 1)).astype(dtype), loc)
    if name == "bernoulli":
        return (np.clip(k, -1, 3), rng.uniform(0.05, 0.95, size=(3, 1)).astype(dtype), loc)
    if name == "binom":
        n = rng.integers(0, 8, size=(1, 4)).astype(dtype)
        return (k, n, rng.uniform(0.05, 0.95, size=(3, 1)).astype(dtype), loc)
    if name == "geom":
        return (k, rng.uniform(0.05, 0.95, size=(3, 1)).astype(dtype), loc)
    if name == "betabinom":
        n = rng.integers(0, 8, size=(1, 4)).astype(dtype)
        a = rng.uniform(0.5, 4.0, size=(3, 1)).astype(dtype)
        return (k, n, a, rng.uniform(0.5, 4.0, size=(1, 4)).astype(dtype), loc)
    if name == "nbinom":
        n = rng.uniform(0.5, 6.0, size=(1, 4)).astype(dtype)
        return (k, n, rng.uniform(0.05, 0.95, size=(3, 1)).astype(dtype), loc)
    raise AssertionError(name)


DISCRETE = {
    "poisson": (["logpmf", "pmf", "cdf"], ("gammaln", "xlogy", "gammaincc")),
    "bernoulli": (["logpmf", "pmf"], ("xlogy", "xlog1py")),
    "binom": (["logpmf", "pmf"], ("gammaln", "xlogy", "xlog1py")),
    "geom": (["logpmf", "pmf"], ("xlog1py",)),
    "nbinom": (["logpmf", "pmf"], ("gammaln", "xlogy")),
    "betabinom": (["logpmf", "pmf"], ("betaln",)),
}
DISC_CASES = [(name, fn) for name, spec in DISCRETE.items() for fn in spec[0]]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,fn", DISC_CASES)
def test_discrete_against_scipy(name, fn, dtype, rng):
    _need(*DISCRETE[name][1])
    *args, loc = _discrete_args(name, dtype, rng)
    f = getattr(getattr(stats, name), fn)
    if fn == "cdf" and name == "poisson":
        want = ss.poisson.cdf(*[np.asarray(a, np.float64) for a in args], loc=loc)
    else:
        want = getattr(getattr(ss, name), fn)(*[np.asarray(a, np.float64) for a in args],
                                              loc=loc)
    _eager_and_jit(f, (*args, loc), want, dtype, loose=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_poisson_non_integer_k(dtype):
    _need("gammaln", "xlogy")
    out = np.asarray(stats.poisson.logpmf(np.array([1.5, 2.0, -0.5], dtype), dtype(3)))
    assert np.isneginf(out[0]) and np.isneginf(out[2]) and np.isfinite(out[1])


@pytest.mark.parametrize("dtype", FLOATS)
def test_bernoulli_cdf_ppf(dtype, rng):
    k = np.array([-1, 0, 0.5, 1, 2, np.nan], dtype)
    p = np.array([0.3, 0.3, 0.7, 0.2, 1.5, 0.5], dtype)
    _eager_and_jit(stats.bernoulli.cdf, (k, p), ss.bernoulli.cdf(k, p), dtype)
    q = np.array([0.05, 0.2, 0.5, 1.0, 1.2, 0.5], dtype)
    _eager_and_jit(stats.bernoulli.ppf, (q, p), ss.bernoulli.ppf(q, p), dtype)
    # JAX (not SciPy, which gives -1) puts ppf(0) at 0
    assert float(stats.bernoulli.ppf(dtype(0), dtype(0.3))) == 0


# --- out of support, invalid parameters -----------------------------------------------
def test_out_of_support_and_invalid():
    _need("gammaln", "betaln", "xlogy", "xlog1py")
    assert np.isneginf(stats.expon.logpdf(-1.0))
    assert stats.expon.pdf(-1.0) == 0
    assert np.isneginf(stats.uniform.logpdf(1.5, 0, 1))
    assert np.isneginf(stats.gamma.logpdf(-0.1, 2.0))
    assert np.isneginf(stats.beta.logpdf(1.5, 2.0, 3.0))
    assert np.isnan(stats.beta.logpdf(0.5, -1.0, 3.0))
    assert np.isnan(stats.beta.logpdf(0.5, 1.0, 3.0, 0, -1))
    assert np.isneginf(stats.binom.logpmf(5, 4, 0.5))
    assert np.isneginf(stats.geom.logpmf(0, 0.5))
    assert np.isnan(stats.uniform.ppf(1.5))
    assert np.isnan(stats.expon.ppf(-0.5))
    # binom with p at the edges: all mass on one end, exactly
    assert stats.binom.pmf(0, 5, 0.0) == 1 and stats.binom.pmf(5, 5, 1.0) == 1
    assert stats.bernoulli.pmf(1, 1.0) == 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_gennorm_wrapcauchy(dtype, rng):
    _need("gammaln", "gammainc")
    x = rng.normal(size=(3, 4)).astype(dtype) * 2
    beta = rng.uniform(0.5, 3.0, size=(4,)).astype(dtype)
    for fn in ["logpdf", "pdf", "cdf"]:
        want = getattr(ss.gennorm, fn)(x.astype(np.float64), beta)
        _eager_and_jit(getattr(stats.gennorm, fn), (x, beta), want, dtype, True)
    theta = rng.uniform(-0.5, 7.0, size=(3, 4)).astype(dtype)      # some outside [0, 2 pi]
    c = rng.uniform(0.05, 0.95, size=(3, 1)).astype(dtype)
    inside = (theta >= 0) & (theta <= 2 * np.pi)
    want = np.where(inside, ss.wrapcauchy.logpdf(theta.astype(np.float64), c), -np.inf)
    _eager_and_jit(stats.wrapcauchy.logpdf, (theta, c), want, dtype, True)
    _eager_and_jit(stats.wrapcauchy.pdf, (theta, c), np.exp(want), dtype, True)
    assert np.isnan(stats.wrapcauchy.logpdf(1.0, 1.5))
    assert np.isnan(stats.gumbel_r.logpdf(1.0, 0.0, -1.0))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn", ["logpdf", "pdf", "logcdf", "cdf", "logsf", "sf"])
def test_truncnorm(fn, dtype, rng):
    _need("ndtr", "log_ndtr")
    a = rng.uniform(-3, 1.5, size=(3, 4)).astype(dtype)
    b = (a + rng.uniform(0.2, 3, size=(1, 4))).astype(dtype)
    a[0, 0], b[0, 0] = 2.5, 4.0                                    # both in the right tail
    loc = rng.normal(size=(4,)).astype(dtype)
    scale = rng.uniform(0.5, 2, size=(3, 1)).astype(dtype)
    x = (loc + scale * rng.uniform(-4, 4, size=(3, 4))).astype(dtype)
    args = (x, a, b, loc, scale)
    want = getattr(ss.truncnorm, fn)(*[v.astype(np.float64) for v in args])
    _eager_and_jit(getattr(stats.truncnorm, fn), args, want, dtype, True)
    assert np.isnan(getattr(stats.truncnorm, fn)(0.5, 1.0, 1.0))   # a >= b


@pytest.mark.parametrize("dtype", FLOATS)
def test_vonmises(dtype, rng):
    _need("i0e")
    x = rng.uniform(-4, 4, size=(3, 4)).astype(dtype)
    kappa = np.array([0.1, 1.0, 20.0, 300.0], dtype)
    want = ss.vonmises.logpdf(x.astype(np.float64), kappa.astype(np.float64))
    _eager_and_jit(stats.vonmises.logpdf, (x, kappa), want, dtype, True)
    _eager_and_jit(stats.vonmises.pdf, (x, kappa), np.exp(want), dtype, True)
    assert np.isnan(stats.vonmises.logpdf(0.5, 0.0))


@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial(dtype, rng):
    _need("gammaln", "xlogy")
    p = rng.dirichlet(np.ones(4)).astype(dtype)
    x = rng.multinomial(7, p.astype(np.float64) / p.astype(np.float64).sum()).astype(np.int32)
    want = ss.multinomial.logpmf(x, 7, p.astype(np.float64) / p.astype(np.float64).sum())
    _eager_and_jit(stats.multinomial.logpmf, (x, np.int32(7), p), want, dtype, True)
    _eager_and_jit(stats.multinomial.pmf, (x, np.int32(7), p), np.exp(want), dtype, True)
    assert np.isneginf(stats.multinomial.logpmf(x, np.int32(8), p))
    with pytest.raises(ValueError, match="integer"):
        stats.multinomial.logpmf(x.astype(np.float32), 7.0, p)


# --- dirichlet, multivariate_normal ---------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_dirichlet(dtype, rng):
    _need("gammaln", "xlogy")
    alpha = rng.uniform(0.5, 3.0, size=4).astype(dtype)
    x = rng.dirichlet(np.ones(4), size=5).T.astype(dtype)          # (4, 5), on axis 0
    x = (x / x.sum(0)).astype(dtype)
    want = np.array([ss.dirichlet.logpdf(x[:, i].astype(np.float64) /
                                         x[:, i].astype(np.float64).sum(), alpha)
                     for i in range(5)])
    _eager_and_jit(stats.dirichlet.logpdf, (x, alpha), want, dtype, loose=True)
    _eager_and_jit(stats.dirichlet.logpdf, (x[:3], alpha), want, dtype, loose=True)
    _eager_and_jit(stats.dirichlet.pdf, (x, alpha), np.exp(want), dtype, loose=True)
    off = x.copy()
    off[0, 0] += 0.1                                                 # off the simplex
    assert np.isneginf(np.asarray(stats.dirichlet.logpdf(off, alpha))[0])
    with pytest.raises(ValueError, match="alpha"):
        stats.dirichlet.logpdf(x, alpha[None])
    with pytest.raises(ValueError, match="x.shape"):
        stats.dirichlet.logpdf(x[:2], alpha)


def _spd(rng, n, batch=()):
    m = rng.normal(size=batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 3, 5])
def test_multivariate_normal(dtype, n, rng):
    cov = _spd(rng, n).astype(dtype)
    mean = rng.normal(size=n).astype(dtype)
    x = rng.normal(size=(6, n)).astype(dtype)
    want = ss.multivariate_normal.logpdf(x.astype(np.float64), mean, cov)
    _eager_and_jit(stats.multivariate_normal.logpdf, (x, mean, cov), want, dtype, True)
    _eager_and_jit(stats.multivariate_normal.pdf, (x, mean, cov), np.exp(want), dtype, True)
    # a scalar (isotropic) covariance, and the univariate case
    want = ss.multivariate_normal.logpdf(x.astype(np.float64), mean, 1.7 * np.eye(n))
    _eager_and_jit(stats.multivariate_normal.logpdf, (x, mean, dtype(1.7)), want, dtype, True)
    want = ss.norm.logpdf(x[:, 0].astype(np.float64), 0.3, np.sqrt(2.0))
    _eager_and_jit(stats.multivariate_normal.logpdf, (x[:, 0], dtype(0.3), dtype(2.0)), want,
                   dtype, True)


def test_multivariate_normal_batched_cov_and_errors(rng):
    cov = _spd(rng, 3, (2,)).astype(np.float32)
    mean = rng.normal(size=(2, 3)).astype(np.float32)
    x = rng.normal(size=(2, 3)).astype(np.float32)
    got = stats.multivariate_normal.logpdf(x, mean, cov)
    want = [ss.multivariate_normal.logpdf(x[i], mean[i], cov[i]) for i in range(2)]
    np.testing.assert_allclose(np.asarray(got), want, **_tol(np.float32, True))
    got = jx.vmap(stats.multivariate_normal.logpdf)(x, mean, cov)
    np.testing.assert_allclose(np.asarray(got), want, **_tol(np.float32, True))
    with pytest.raises(ValueError, match="incompatible shapes"):
        stats.multivariate_normal.logpdf(x, mean, cov[:, :2])
    with pytest.raises(NotImplementedError, match="allow_singular"):
        stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)


# --- gaussian_kde ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("d,bw,weighted", [(1, None, False), (2, "silverman", True),
                                           (3, 0.4, False)])
def test_gaussian_kde(dtype, d, bw, weighted, rng):
    data = rng.normal(size=(d, 25)).astype(dtype)
    w = rng.uniform(0.5, 2.0, size=25).astype(dtype) if weighted else None
    ours = stats.gaussian_kde(data, bw_method=bw, weights=w)
    ref = ss.gaussian_kde(data.astype(np.float64), bw_method=bw,
                          weights=None if w is None else w.astype(np.float64))
    pts = rng.normal(size=(d, 7)).astype(dtype)
    _check(ours.evaluate(pts), ref.evaluate(pts), dtype, True)
    _check(ours(pts), ref(pts), dtype, True)
    _check(ours.pdf(pts), ref.pdf(pts), dtype, True)
    _check(ours.logpdf(pts), ref.logpdf(pts), dtype, True)
    _check(jx.jit(lambda k, p: k.logpdf(p))(ours, pts), ref.logpdf(pts), dtype, True)
    np.testing.assert_allclose(np.asarray(ours.covariance), ref.covariance, **_tol(dtype, True))
    np.testing.assert_allclose(np.asarray(ours.inv_cov), ref.inv_cov, **_tol(dtype, True))
    np.testing.assert_allclose(float(ours.neff), ref.neff, **_tol(dtype, True))
    mean, cov = np.full(d, 0.2), 0.5 * np.eye(d)
    np.testing.assert_allclose(float(ours.integrate_gaussian(mean, cov)),
                               ref.integrate_gaussian(mean, cov), **_tol(dtype, True))
    other = rng.normal(size=(d, 9)).astype(dtype)
    np.testing.assert_allclose(float(ours.integrate_kde(stats.gaussian_kde(other))),
                               ref.integrate_kde(ss.gaussian_kde(other.astype(np.float64))),
                               **_tol(dtype, True))
    if d == 1:
        _need("ndtr")
        np.testing.assert_allclose(float(ours.integrate_box_1d(-0.5, 1.0)),
                                   ref.integrate_box_1d(-0.5, 1.0), **_tol(dtype, True))


def test_gaussian_kde_resample(rng):
    data = rng.normal(size=(2, 20)).astype(np.float32)
    w = rng.uniform(0.5, 2.0, size=20).astype(np.float32)
    kde = stats.gaussian_kde(data, weights=w)
    draws = kde.resample(jx.random.PRNGKey(3), (4000,))
    assert draws.shape == (2, 4000) and draws.dtype == np.float32
    # the draws follow the estimate: their mean and covariance are the weighted data's
    # plus the kernel's
    mean = (data * w).sum(1) / w.sum()
    np.testing.assert_allclose(np.asarray(draws).mean(1), mean, atol=0.08)
    jitted = jx.jit(lambda k, key: k.resample(key, (5,)))(kde, jx.random.PRNGKey(3))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(kde.resample(
        jx.random.PRNGKey(3), (5,))), rtol=1e-6)
    jax = pytest.importorskip("jax")
    import jax.scipy.stats as jst
    theirs = jst.gaussian_kde(data, weights=w).resample(jax.random.PRNGKey(3), (5,))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def test_gaussian_kde_errors(rng):
    kde = stats.gaussian_kde(rng.normal(size=(2, 10)))
    with pytest.raises(ValueError, match="dimension"):
        kde.evaluate(np.ones((3, 4)))
    with pytest.raises(ValueError, match="bw_method"):
        stats.gaussian_kde(rng.normal(size=10), bw_method="wide")
    with pytest.raises(ValueError, match="multiple elements"):
        stats.gaussian_kde(np.ones(1))
    with pytest.raises(ValueError, match="1D"):
        kde.integrate_box_1d(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="integrate_box_1d"):
        kde.integrate_box([0, 0], [1, 1])
    # a single d-dimensional point may be given flat
    np.testing.assert_allclose(np.asarray(kde(np.array([0.1, 0.2]))),
                               np.asarray(kde(np.array([[0.1], [0.2]]))))


# --- gradients against finite differences (64-bit) ------------------------------------
def _fd(f, args, i, eps=1e-6):
    plus = list(args)
    minus = list(args)
    plus[i] = args[i] + eps
    minus[i] = args[i] - eps
    return (float(f(*plus)) - float(f(*minus))) / (2 * eps)


GRADS = [
    ("norm.logpdf", lambda x, l, s: stats.norm.logpdf(x, l, s), (0.3, -0.2, 1.4), ()),
    ("norm.logcdf", lambda x, l, s: stats.norm.logcdf(x, l, s), (0.3, -0.2, 1.4),
     ("log_ndtr",)),
    ("t.logpdf", lambda x, df, l: stats.t.logpdf(x, df, l, 1.3), (0.7, 3.5, 0.1),
     ("gammaln",)),
    ("cauchy.logpdf", lambda x, l, s: stats.cauchy.logpdf(x, l, s), (0.3, -0.2, 1.4), ()),
    ("laplace.logpdf", lambda x, l, s: stats.laplace.logpdf(x, l, s), (0.3, -0.2, 1.4), ()),
    ("logistic.logpdf", lambda x, l, s: stats.logistic.logpdf(x, l, s), (0.3, -0.2, 1.4),
     ()),
    ("expon.logpdf", lambda x, l, s: stats.expon.logpdf(x, l, s), (1.3, -0.2, 1.4), ()),
    ("gamma.logpdf", lambda x, a, s: stats.gamma.logpdf(x, a, 0.0, s), (1.3, 2.2, 0.8),
     ("gammaln", "xlogy")),
    ("gamma.cdf", lambda x, a: stats.gamma.cdf(x, a, 0.0, 1.3), (1.3, 2.2), ("gammainc",)),
    ("chi2.sf", lambda x, df: stats.chi2.sf(x, df), (5.0, 2.5), ("gammaincc",)),
    ("beta.cdf", lambda x, a: stats.beta.cdf(x, a, 1.5), (0.4, 2.2), ("betainc",)),
    ("beta.logpdf", lambda x, a, b: stats.beta.logpdf(x, a, b), (0.3, 2.2, 1.7),
     ("betaln", "xlogy", "xlog1py")),
    ("poisson.logpmf", lambda mu: stats.poisson.logpmf(3.0, mu), (2.5,), ("gammaln", "xlogy")),
    ("binom.logpmf", lambda p: stats.binom.logpmf(2.0, 6.0, p), (0.35,),
     ("gammaln", "xlogy", "xlog1py")),
]


@pytest.mark.x64
@pytest.mark.parametrize("label,f,args,needs", GRADS, ids=[g[0] for g in GRADS])
def test_grad_against_finite_differences(label, f, args, needs):
    _need(*needs)
    argnums = tuple(range(len(args)))
    grads = jx.grad(f, argnums=argnums)(*args)
    for i in argnums:
        np.testing.assert_allclose(float(grads[i]), _fd(f, args, i), rtol=1e-6, atol=1e-8)
    jit_grads = jx.jit(jx.grad(f, argnums=argnums))(*args)
    np.testing.assert_allclose([float(g) for g in jit_grads], [float(g) for g in grads],
                               rtol=1e-12)


@pytest.mark.x64
def test_multivariate_normal_grad(rng):
    cov = _spd(rng, 3)
    mean = rng.normal(size=3)
    x = rng.normal(size=3)

    def f(mean, cov):
        return stats.multivariate_normal.logpdf(x, mean, cov)
    g_mean, g_cov = jx.grad(f, argnums=(0, 1))(mean, cov)
    prec = np.linalg.inv(cov)
    y = x - mean
    np.testing.assert_allclose(np.asarray(g_mean), prec @ y, rtol=1e-9)
    # d/dcov of the log density, symmetric: (P y y^T P - P) / 2
    np.testing.assert_allclose(np.asarray(g_cov), 0.5 * (np.outer(prec @ y, prec @ y) - prec),
                               rtol=1e-8, atol=1e-12)


@pytest.mark.x64
def test_kde_grad(rng):
    kde = stats.gaussian_kde(rng.normal(size=(1, 20)))
    f = lambda p: jnp.sum(kde.logpdf(p))                            # noqa: E731
    g = float(jx.grad(f)(np.array([0.3]))[0])
    np.testing.assert_allclose(g, _fd(lambda p: f(np.array([p])), (0.3,), 0), rtol=1e-6)


def test_vmap():
    _need("gammaln", "xlogy")
    mu = np.array([0.5, 2.0, 4.0], np.float32)
    got = jx.vmap(lambda m: stats.poisson.logpmf(np.arange(4.0, dtype=np.float32), m))(mu)
    want = ss.poisson.logpmf(np.arange(4.0)[None, :], mu[:, None])
    np.testing.assert_allclose(np.asarray(got), want, **_tol(np.float32, True))
    got = jx.vmap(stats.norm.logpdf, in_axes=(0, None, 0))(np.ones(3, np.float32), 0.5, mu)
    np.testing.assert_allclose(np.asarray(got), ss.norm.logpdf(1, 0.5, mu), rtol=1e-6)


# --- against jax.scipy.stats: dtypes, weak types and values ---------------------------
def _jax_cases():
    return [(name, fn) for name, fn in CONT_CASES] + [(n, f) for n, f in DISC_CASES]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,fn", _jax_cases())
def test_against_jax(name, fn, dtype, rng):
    jax = pytest.importorskip("jax")
    import jax.scipy.stats as jst
    spec = CONTINUOUS.get(name) or DISCRETE[name]
    _need(*(spec[3] if name in CONTINUOUS else spec[1]))
    if name in CONTINUOUS:
        args = _continuous_args(name, fn, dtype, rng)
    else:
        args = _discrete_args(name, dtype, rng)
    with jax.enable_x64(dtype == np.float64):
        want = getattr(getattr(jst, name), fn)(*args)
        want_scalar = getattr(getattr(jst, name), fn)(*[float(np.ravel(a)[0]) for a in args])
        want_dtype, want_weak = want_scalar.dtype, want_scalar.weak_type
        want = np.asarray(want)
    got = getattr(getattr(stats, name), fn)(*args)
    if name == "betabinom" and dtype == np.float64:
        # JAX's float64 betaln is off by ~1e-6 for some arguments (jx's matches SciPy's)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    else:
        _check(got, want, dtype, loose=True)
    got_scalar = getattr(getattr(stats, name), fn)(*[float(np.ravel(a)[0]) for a in args])
    assert (got_scalar.dtype, got_scalar.weak_type) == (want_dtype, want_weak)


# --- mode, rankdata, sem --------------------------------------------------------------
@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_rankdata(method, axis, rng):
    y = rng.integers(0, 4, size=(3, 7)).astype(np.float32)
    want = ss.rankdata(y, method, axis=axis)
    for f in (stats.rankdata, jx.jit(lambda v: stats.rankdata(v, method, axis=axis))):
        got = f(y, method, axis=axis) if f is stats.rankdata else f(y)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(got), want)
    y[1, 2] = np.nan
    got = np.asarray(stats.rankdata(y, method, axis=axis))
    nan_part = got if axis is None else got[:, 2] if axis == 0 else got[1]
    assert np.isnan(nan_part).all() and np.isnan(got).sum() == nan_part.size
    with pytest.raises(ValueError, match="unknown method"):
        stats.rankdata(y, "mean")


@pytest.mark.parametrize("axis,keepdims", [(0, False), (1, True), (None, False)])
def test_mode(axis, keepdims, rng):
    x = rng.integers(0, 4, size=(5, 6)).astype(np.int32)
    want = ss.mode(x, axis=axis, keepdims=keepdims)
    for f in (stats.mode, jx.jit(lambda v: stats.mode(v, axis=axis, keepdims=keepdims))):
        got = f(x, axis=axis, keepdims=keepdims) if f is stats.mode else f(x)
        np.testing.assert_array_equal(np.asarray(got.mode), want.mode)
        np.testing.assert_array_equal(np.asarray(got.count), want.count)
        assert got.count.dtype == np.int32
    # NaNs count together, as jnp.unique does
    got = stats.mode(np.array([1.0, 2.0, np.nan, np.nan], np.float32))
    assert np.isnan(got.mode) and int(got.count) == 2
    with pytest.raises(NotImplementedError, match="omit"):
        stats.mode(x, nan_policy="omit")


@pytest.mark.parametrize("dtype", FLOATS)
def test_sem(dtype, rng):
    y = rng.normal(size=(4, 6)).astype(dtype)
    for axis in (0, 1, None):
        _eager_and_jit(lambda v: stats.sem(v, axis=axis), (y,), ss.sem(y, axis=axis), dtype)
    y[1, 2] = np.nan
    _eager_and_jit(lambda v: stats.sem(v, axis=1, nan_policy="omit"), (y,),
                   ss.sem(y, axis=1, nan_policy="omit"), dtype)


def test_core_against_jax(rng):
    pytest.importorskip("jax")
    import jax.scipy.stats as jst
    x = rng.integers(0, 4, size=(5, 6)).astype(np.int32)
    ours, theirs = stats.mode(x, axis=1), jst.mode(x, axis=1)
    np.testing.assert_array_equal(np.asarray(ours.mode), np.asarray(theirs.mode))
    assert ours.count.dtype == theirs.count.dtype
    for method in ["average", "min", "max", "dense", "ordinal"]:
        a, b = stats.rankdata(x, method, axis=0), jst.rankdata(x, method, axis=0)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    y = rng.normal(size=(4, 6)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(stats.sem(y)), np.asarray(jst.sem(y)), rtol=1e-6)
