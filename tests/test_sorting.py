"""sort primitive, jx.numpy sort/argsort/lexsort and lax.sort against NumPy."""
import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax

COVERED = {"sort"}

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint32, np.bool_]
SHAPES = [(7,), (3, 5), (2, 3, 4), (0,), (4, 0)]


def _index_dtype():
    """argsort's indices: the mode's default int (int64 with x64 on, as JAX)."""
    return np.int64 if jx.config.jax_enable_x64 else np.int32


def _data(rng, shape, dtype, special=True):
    """Values with many ties; floats also get NaN, +-inf and -0.0."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -3
        return rng.integers(lo, 4, shape).astype(dtype)
    x = rng.integers(-3, 4, shape).astype(dtype) / 2
    if special and x.size:
        flat = x.reshape(-1)
        picks = rng.choice(flat.size, min(flat.size, 4), replace=False)
        flat[picks] = [np.nan, -0.0, np.inf, -np.nan][:len(picks)]
    return x


def _eq(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sort_argsort_vs_numpy(rng, dtype, shape):
    x = _data(rng, shape, dtype)
    for axis in list(range(-len(shape), len(shape))) + [None]:
        _eq(jnp.sort(x, axis=axis), np.sort(x, axis=axis))
        ref = np.argsort(x, axis=axis, kind="stable").astype(_index_dtype())
        _eq(jnp.argsort(x, axis=axis), ref)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_sorted_floats_put_nans_last_and_ignore_zero_sign(dtype):
    x = np.array([3, np.nan, -0.0, 0.0, -np.nan, 1, np.inf, -np.inf, 0.0, -0.0], np.float32)
    x = x.astype(dtype) if dtype == np.float32 else np.array([5, -2, 5, 0, -2], dtype)
    idx = jnp.argsort(x)
    _eq(idx, np.argsort(x, kind="stable").astype(_index_dtype()))
    out = jnp.sort(x)
    _eq(out, np.sort(x))
    # the sign of zero travels with its element (stable among equal zeros)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(x[idx]))


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_descending(rng, dtype):
    x = rng.integers(-4, 4, (3, 9)).astype(dtype)
    _eq(jnp.sort(x, descending=True), np.sort(x)[:, ::-1])
    # ties keep their original order, as a stable descending sort should
    _eq(jnp.argsort(x, descending=True), np.argsort(-x, kind="stable").astype(_index_dtype()))
    _eq(jnp.argsort(x, axis=0, descending=True),
        np.argsort(-x, axis=0, kind="stable").astype(_index_dtype()))


@pytest.mark.x64
@pytest.mark.parametrize("num_keys", [1, 2, 3])
def test_multi_operand_sort_is_lexicographic(rng, num_keys):
    shape = (4, 11)
    ops = [rng.integers(0, 3, shape).astype(_index_dtype()),
           rng.integers(0, 3, shape).astype(np.float32),
           rng.integers(0, 2, shape).astype(bool), rng.standard_normal(shape)]
    for axis in (0, 1):
        outs = lax.sort(ops, dimension=axis, num_keys=num_keys)
        perm = np.lexsort(ops[:num_keys][::-1], axis=axis)
        assert isinstance(outs, tuple) and len(outs) == len(ops)
        for o, x in zip(outs, ops):
            _eq(o, np.take_along_axis(x, perm, axis))


@pytest.mark.x64
def test_lax_sort_single_and_sort_key_val(rng):
    k = rng.integers(0, 5, (6, 8)).astype(np.int64)
    v = rng.standard_normal((6, 8)).astype(np.float32)
    _eq(lax.sort(k), np.sort(k, axis=-1))
    ks, vs = lax.sort_key_val(k, v, dimension=0)
    perm = np.argsort(k, axis=0, kind="stable")
    _eq(ks, np.take_along_axis(k, perm, 0))
    _eq(vs, np.take_along_axis(v, perm, 0))


def test_lexsort(rng):
    a = rng.integers(0, 3, 20).astype(_index_dtype())
    b = rng.integers(0, 3, 20).astype(np.float64)
    c = rng.integers(0, 2, 20).astype(bool)
    _eq(jnp.lexsort([a, b, c]), np.lexsort([a, b, c]).astype(_index_dtype()))
    m = rng.integers(0, 3, (3, 10))
    n = rng.integers(0, 3, (3, 10))
    _eq(jnp.lexsort([m, n], axis=0), np.lexsort([m, n], axis=0).astype(_index_dtype()))


def test_traced_sort_matches_eager(rng):
    def f(x, y):
        s0 = jnp.sort(x, axis=0)
        i1 = jnp.argsort(x, axis=1)
        keys, vals = lax.sort_key_val(x, y, dimension=1)
        return s0, i1, keys, vals, jnp.lexsort([y, x])

    g = jx.verify(jx.make_graph(f)(jx.f32[5, 6], jx.i32[5, 6]))
    assert g.op_counts()["sort"] == 4
    x = _data(rng, (5, 6), np.float32)
    y = rng.integers(0, 9, (5, 6)).astype(_index_dtype())
    for got, want in zip(jx.eval_graph(g, x, y), f(x, y)):
        _eq(got, want)
    eqn = next(e for e in g.eqns if e.prim.name == "sort" and len(e.inputs) == 3)
    assert eqn.params == {"dimension": 1, "is_stable": True, "num_keys": 2}


def test_shape_errors():
    sort = jx.PRIMITIVES["sort"]
    a = np.zeros((3, 4), np.float32)
    with pytest.raises(jx.ShapeError, match="one shape"):
        sort.bind(a, np.zeros((4, 3), np.float32), dimension=0, is_stable=True, num_keys=1)
    with pytest.raises(jx.ShapeError, match="num_keys"):
        sort.bind(a, dimension=0, is_stable=True, num_keys=2)
    with pytest.raises(jx.ShapeError, match="dimension"):
        sort.bind(a, dimension=2, is_stable=True, num_keys=1)
    with pytest.raises(jx.ShapeError, match="0-d"):
        sort.bind(np.float32(1), dimension=0, is_stable=True, num_keys=1)
    with pytest.raises(jx.ShapeError, match="axis=None"):
        jnp.sort(np.float32(1.0))
    np.testing.assert_array_equal(jnp.sort(np.float32(1.0), axis=None), [1.0])


def test_searchsorted_is_int32_in_both_modes():
    """As JAX: searchsorted's indices are int32 even with x64 on."""
    for x64 in (False, True):
        with jx.enable_x64(x64):
            a = jnp.arange(10.0)
            assert jnp.searchsorted(a, 3.5).dtype == np.int32
            assert jx.jit(jnp.searchsorted)(a, jnp.arange(3.0)).dtype == np.int32
            np.testing.assert_array_equal(np.asarray(jnp.searchsorted(a, [0.5, 9.5, -1.0])),
                                          [1, 10, 0])
