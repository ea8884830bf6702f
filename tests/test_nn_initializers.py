"""jx.nn.initializers: shapes, dtypes, statistics, and JAX's numbers for the same key
(bit for bit where the draw is uniform-based; within a few ulp where it goes through
jx.random.normal/truncated_normal, whose erfinv rounds slightly differently)."""
import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.nn import initializers as init

KEY = jx.random.PRNGKey(0)
SHAPES = [(3, 4), (5, 2), (3, 3, 4, 5), (64, 32)]

# name -> (builder args, bit-exact against JAX)
RANDOM = {
    "uniform": ((), True), "normal": ((), False), "truncated_normal": ((), False),
    "glorot_uniform": ((), True), "glorot_normal": ((), False),
    "xavier_uniform": ((), True), "xavier_normal": ((), False),
    "lecun_uniform": ((), True), "lecun_normal": ((), False),
    "he_uniform": ((), True), "he_normal": ((), False),
    "kaiming_uniform": ((), True), "kaiming_normal": ((), False),
    "orthogonal": ((), False),
}


def test_nn_still_has_activations():
    assert float(jx.nn.relu(-1.0)) == 0.0
    assert jx.nn.initializers is init


def test_constant_initializers():
    z = init.zeros(KEY, (2, 3))
    assert z.dtype == np.float32 and z.shape == (2, 3) and not np.asarray(z).any()
    o = init.ones(KEY, (4,), jnp.float16)
    assert o.dtype == np.float16 and (np.asarray(o) == 1).all()
    c = init.constant(-7.0)(KEY, (2, 2))
    np.testing.assert_array_equal(c, np.full((2, 2), -7.0, np.float32))
    assert init.constant(3, dtype=jnp.int32)(KEY, (2,)).dtype == np.int32


@pytest.mark.parametrize("name", sorted(RANDOM))
@pytest.mark.parametrize("shape", SHAPES)
def test_shape_dtype(name, shape):
    args, _ = RANDOM[name]
    out = getattr(init, name)(*args)(KEY, shape)
    assert out.shape == shape and out.dtype == np.float32
    out16 = getattr(init, name)(*args)(KEY, shape, jnp.float16)
    assert out16.dtype == np.float16


@pytest.mark.x64
@pytest.mark.parametrize("name", ["uniform", "normal", "glorot_uniform", "he_normal",
                                  "orthogonal"])
def test_float64(name):
    out = getattr(init, name)()(KEY, (6, 5), jnp.float64)
    assert out.dtype == np.float64


@pytest.mark.parametrize("name", sorted(RANDOM))
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_jax(name, shape):
    jax = pytest.importorskip("jax")
    import jax.nn.initializers as J
    args, exact = RANDOM[name]
    ours = np.asarray(getattr(init, name)(*args)(KEY, shape))
    theirs = np.asarray(getattr(J, name)(*args)(jax.random.PRNGKey(0), shape))
    if exact:
        np.testing.assert_array_equal(ours, theirs)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(scale=2.0, mode="fan_out", distribution="normal"),
                                dict(scale=0.5, mode="fan_geo_avg", distribution="uniform"),
                                dict(scale=1.0, mode="fan_in", distribution="truncated_normal",
                                     in_axis=(0, 1), out_axis=-1, batch_axis=2)])
def test_variance_scaling_matches_jax(kw):
    jax = pytest.importorskip("jax")
    import jax.nn.initializers as J
    shape = (3, 4, 5, 6)
    ours = np.asarray(init.variance_scaling(**kw)(KEY, shape))
    theirs = np.asarray(J.variance_scaling(**kw)(jax.random.PRNGKey(0), shape))
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(3, 2, 4, 4), (3, 3, 3, 5), (5, 4, 6)])
def test_delta_orthogonal_matches_jax(shape):
    jax = pytest.importorskip("jax")
    import jax.nn.initializers as J
    ours = np.asarray(init.delta_orthogonal()(KEY, shape))
    theirs = np.asarray(J.delta_orthogonal()(jax.random.PRNGKey(0), shape))
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def _fans(shape):
    rf = int(np.prod(shape[:-2]))
    return shape[-2] * rf, shape[-1] * rf


@pytest.mark.parametrize("name,scale,mode", [
    ("glorot_uniform", 1.0, "avg"), ("glorot_normal", 1.0, "avg"),
    ("lecun_uniform", 1.0, "in"), ("lecun_normal", 1.0, "in"),
    ("he_uniform", 2.0, "in"), ("he_normal", 2.0, "in")])
def test_variance_statistics(name, scale, mode):
    shape = (5, 400, 300)
    fan_in, fan_out = _fans(shape)
    n = (fan_in + fan_out) / 2 if mode == "avg" else fan_in
    x = np.asarray(getattr(init, name)()(KEY, shape), np.float64)
    assert abs(x.mean()) < 0.01 * np.sqrt(scale / n) * 10
    np.testing.assert_allclose(x.std(), np.sqrt(scale / n), rtol=0.02)
    if "uniform" in name:
        assert np.abs(x).max() <= np.sqrt(3 * scale / n) + 1e-7
    else:       # truncated at 2 (pre-correction) standard deviations
        assert np.abs(x).max() <= 2 * np.sqrt(scale / n) / .87962566103423978 + 1e-6


def test_distribution_statistics():
    x = np.asarray(init.uniform(3.0)(KEY, (100000,)), np.float64)
    assert x.min() >= 0 and x.max() < 3.0 and abs(x.mean() - 1.5) < 0.02
    y = np.asarray(init.normal(2.0)(KEY, (100000,)), np.float64)
    assert abs(y.mean()) < 0.03 and abs(y.std() - 2.0) < 0.03
    t = np.asarray(init.truncated_normal(0.5, lower=-1.0, upper=1.5)(KEY, (100000,)))
    assert t.min() > -0.5 and t.max() < 0.75


@pytest.mark.parametrize("shape,axis", [((6, 4), -1), ((4, 6), -1), ((3, 4, 5), -1),
                                        ((5, 3), 0), ((2, 3, 8), 1)])
def test_orthogonal_is_orthogonal(shape, axis):
    q = np.asarray(init.orthogonal(scale=2.0, column_axis=axis)(KEY, shape), np.float64) / 2
    q = np.moveaxis(q, axis, -1).reshape(-1, shape[axis])
    small = min(q.shape)
    gram = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)


def test_orthogonal_zero_size_and_errors():
    assert init.orthogonal()(KEY, (0, 3)).shape == (0, 3)
    with pytest.raises(ValueError, match="2D"):
        init.orthogonal()(KEY, (3,))
    with pytest.raises(ValueError, match="3D, 4D or 5D"):
        init.delta_orthogonal()(KEY, (3, 3))
    with pytest.raises(ValueError, match="fan_in"):
        init.delta_orthogonal()(KEY, (3, 5, 4))


def test_errors():
    with pytest.raises(ValueError, match="in_axis"):
        init.glorot_uniform()(KEY, (5,))
    with pytest.raises(ValueError, match="mode"):
        init.variance_scaling(1.0, "fan_sideways", "normal")
    with pytest.raises(ValueError, match="distribution"):
        init.variance_scaling(1.0, "fan_in", "cauchy")


def test_under_jit_and_vmap():
    f = jx.jit(lambda k: init.glorot_uniform()(k, (4, 3)))
    np.testing.assert_array_equal(f(KEY), init.glorot_uniform()(KEY, (4, 3)))
    keys = jx.random.split(KEY, 3)
    out = jx.vmap(lambda k: init.normal(1.0)(k, (2,)))(keys)
    for i in range(3):
        np.testing.assert_allclose(out[i], init.normal(1.0)(keys[i], (2,)), rtol=1e-6)
