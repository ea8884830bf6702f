"""quantile, percentile, median and the nan- variants against NumPy (and JAX)."""
import numpy as np
import pytest

import jx
import jx.numpy as jnp

METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("method", METHODS)
def test_quantile_matches_numpy(dtype, method):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(4, 5, 6)) * 10).astype(dtype)
    q = np.array([0.0, 0.1, 0.5, 0.77, 1.0])
    for axis in [None, 0, 1, (0, 2), -1]:
        for keepdims in (False, True):
            want = np.quantile(x, q, axis=axis, method=method, keepdims=keepdims)
            for f in (jnp.quantile, jx.jit(jnp.quantile, static_argnames=("axis", "method",
                                                                       "keepdims"))):
                got = np.asarray(f(x, q, axis=axis, method=method, keepdims=keepdims))
                assert got.shape == want.shape
                tol = 1e-12 if dtype == np.float64 else 2e-6
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_median_percentile_and_nans():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 7)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jnp.median(x, axis=0)), np.median(x, axis=0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.percentile(x, [10, 90], axis=1)),
                               np.percentile(x, [10, 90], axis=1), rtol=1e-6)
    xn = x.copy()
    xn[0, 1], xn[:, 3] = np.nan, np.nan
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanmedian(xn, axis=0)
    np.testing.assert_allclose(np.asarray(jnp.nanmedian(xn, axis=0)), want, rtol=1e-6)
    assert np.isnan(np.asarray(jnp.median(xn, axis=0))[[1, 3]]).all()
    np.testing.assert_allclose(np.asarray(jnp.nanpercentile(xn, 25.0, axis=1)),
                               np.nanpercentile(xn, 25.0, axis=1), rtol=1e-6)
    assert jnp.median(np.arange(4)).dtype == np.float32 and float(jnp.median(np.arange(4))) == 1.5
    # the gradient of the median flows to the middle element(s)
    np.testing.assert_array_equal(np.asarray(jx.grad(jnp.median)(np.arange(5.0))), [0, 0, 1, 0, 0])
    np.testing.assert_allclose(np.asarray(jx.vmap(jnp.median)(x)), np.median(x, axis=1), rtol=1e-6)
    with pytest.raises(ValueError, match="method"):
        jnp.quantile(x, 0.5, method="weibull")


def test_quantiles_match_jax():
    jax = pytest.importorskip("jax")
    x = np.random.default_rng(2).normal(size=(5, 8)).astype(np.float32)
    for name, args in [("median", ()), ("quantile", (0.3,)), ("percentile", (40.0,)),
                       ("nanmedian", ()), ("nanquantile", (np.array([0.2, 0.8]),))]:
        got = getattr(jnp, name)(x, *args, axis=1)
        want = getattr(jax.numpy, name)(x, *args, axis=1)
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-7)
