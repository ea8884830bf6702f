"""threefry2x32 and jx.random: known answers, JAX's algorithms, statistics, tracing."""
import numpy as np
import pytest

import jx
from jx import random as jr
from jx.prims import random_bits as rb

COVERED = {"threefry2x32"}

M32 = 0xFFFFFFFF
KATS = [  # Random123 known-answer vectors for Threefry-2x32, 20 rounds
    ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    ((M32, M32), (M32, M32), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


def _threefry_python(k0, k1, x0, x1):
    """An independent scalar reference in Python ints."""
    rot = [13, 15, 26, 6, 17, 29, 16, 24]
    ks = [k0, k1, k0 ^ k1 ^ 0x1BD11BDA]
    x = [(x0 + ks[0]) & M32, (x1 + ks[1]) & M32]
    for rnd in range(20):
        r = rot[rnd % 8]
        x[0] = (x[0] + x[1]) & M32
        x[1] = (((x[1] << r) | (x[1] >> (32 - r))) & M32) ^ x[0]
        if rnd % 4 == 3:
            j = rnd // 4 + 1
            x[0] = (x[0] + ks[j % 3]) & M32
            x[1] = (x[1] + ks[(j + 1) % 3] + j) & M32
    return x


def _u32(*vals):
    return [np.asarray(v, np.uint32) for v in vals]


@pytest.mark.parametrize("key,ctr,want", KATS)
def test_threefry_known_answers(key, ctr, want):
    for fn in (rb.threefry2x32.bind, rb.threefry2x32_expanded):
        out = fn(*_u32(*key, *ctr))
        assert [int(o) for o in out] == list(want)
    assert _threefry_python(*key, *ctr) == list(want)


@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
def test_threefry_arrays_vs_python_reference(rng, shape):
    args = [rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32) for _ in range(4)]
    o0, o1 = rb.threefry2x32.bind(*args)
    e0, e1 = rb.threefry2x32_expanded(*args)
    assert o0.dtype == o1.dtype == np.uint32 and o0.shape == shape
    np.testing.assert_array_equal(o0, e0)
    np.testing.assert_array_equal(o1, e1)
    flat = [a.reshape(-1) for a in args]
    for i in range(flat[0].size):
        ref = _threefry_python(*(int(a[i]) for a in flat))
        assert [int(o0.reshape(-1)[i]), int(o1.reshape(-1)[i])] == ref
    # traced: the primitive and its expansion give the same graph outputs
    spec = jx.ShapeDtypeStruct(shape, np.uint32)
    g = jx.verify(jx.make_graph(lambda *a: rb.threefry2x32_expanded(*a))(*[spec] * 4))
    assert "threefry2x32" not in g.op_counts()
    for got, want in zip(jx.eval_graph(g, *args), (o0, o1)):
        np.testing.assert_array_equal(got, want)


def test_threefry_shape_errors():
    a = np.zeros(3, np.uint32)
    with pytest.raises(jx.ShapeError, match="uint32"):
        rb.threefry2x32.bind(a, a, a, a.astype(np.int32))
    with pytest.raises(jx.ShapeError, match="one shape"):
        rb.threefry2x32.bind(a, a, a, np.zeros(4, np.uint32))


def test_keys_match_jax():
    np.testing.assert_array_equal(jr.PRNGKey(0), [0, 0])
    assert jr.PRNGKey(0).dtype == np.uint32
    np.testing.assert_array_equal(jr.key(42), [0, 42])
    np.testing.assert_array_equal(jr.PRNGKey(-1), [0, M32])
    np.testing.assert_array_equal(jr.PRNGKey(2**32 - 1), [0, M32])
    np.testing.assert_array_equal(jr.PRNGKey(2**40 + 5), [0, 5])       # x64 off: mod 2**32
    np.testing.assert_array_equal(jr.PRNGKey(np.int64(-2)), [0, M32 - 1])
    np.testing.assert_array_equal(jr.PRNGKey(np.uint32(7)), [0, 7])
    with jx.enable_x64():                                # the high word too
        np.testing.assert_array_equal(jr.PRNGKey(-1), [M32, M32])
        np.testing.assert_array_equal(jr.PRNGKey(2**40 + 5), [256, 5])
        np.testing.assert_array_equal(jr.PRNGKey(np.int64(-2)), [M32, M32 - 1])
        np.testing.assert_array_equal(jr.PRNGKey(np.int32(-1)), [0, M32])
    with pytest.raises(OverflowError):
        jr.PRNGKey(2**63)
    # jax.random.split(PRNGKey(0)) with jax_threefry_partitionable (JAX >= 0.5)
    np.testing.assert_array_equal(jr.split(jr.PRNGKey(0)),
                                  [[1797259609, 2579123966], [928981903, 3453687069]])
    # the original (non-partitionable) split is threefry_2x32 over iota(4)
    old = jr.threefry_2x32(jr.PRNGKey(0), np.arange(4, dtype=np.uint32)).reshape(2, 2)
    np.testing.assert_array_equal(old, [[4146024105, 967050713], [2718843009, 1272950319]])
    # fold_in(key, d) encrypts the counter pair (0, d)
    k = jr.PRNGKey(3)
    np.testing.assert_array_equal(jr.fold_in(k, 5), _threefry_python(0, 3, 0, 5))


def test_threefry_2x32_odd_count():
    k = jr.PRNGKey(9)
    c = np.arange(5, dtype=np.uint32)
    out = jr.threefry_2x32(k, c)
    # pairs (c[i], c[i+3]) of the zero-padded halves, as JAX does
    padded = np.concatenate([c, [0]]).astype(np.uint32)
    ref = [_threefry_python(0, 9, int(padded[i]), int(padded[i + 3])) for i in range(3)]
    np.testing.assert_array_equal(out, [r[0] for r in ref] + [r[1] for r in ref][:2])


def test_split_fold_in_shapes_and_independence():
    k = jr.PRNGKey(1)
    ks = jr.split(k, 4)
    assert ks.shape == (4, 2) and ks.dtype == np.uint32
    # keys are jx arrays, unhashable as in JAX: compare their words as tuples
    rows = {tuple(r.tolist()) for r in ks}
    assert len(rows) == 4 and tuple(k.tolist()) not in rows
    assert jr.split(k, (2, 3)).shape == (2, 3, 2)
    folds = {tuple(jr.fold_in(k, d).tolist()) for d in range(10)}
    assert len(folds) == 10
    np.testing.assert_array_equal(jr.fold_in(k, 2**32 + 3), jr.fold_in(k, 3))
    a, b = jr.split(k)
    assert not np.array_equal(jr.uniform(a, (8,)), jr.uniform(b, (8,)))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_bits_dtypes_and_partitionable_layout(dtype):
    k = jr.PRNGKey(11)
    b = jr.bits(k, (3, 5), dtype)
    assert b.shape == (3, 5) and b.dtype == dtype
    # element i encrypts counter (0, i) (row-major), the words combined per width
    words = np.array([_threefry_python(0, 11, 0, i) for i in range(15)], np.uint64)
    if dtype == np.uint64:
        want = (words[:, 0] << np.uint64(32)) | words[:, 1]
    else:
        want = (words[:, 0] ^ words[:, 1]) & np.uint64(np.iinfo(dtype).max)
    np.testing.assert_array_equal(b.reshape(-1), want.astype(dtype))
    assert jr.bits(k, (), dtype).shape == ()
    assert jr.bits(k, (0, 3), dtype).shape == (0, 3)


RANDOM_FNS = {
    "uniform": lambda k: jr.uniform(k, (4, 3), minval=-2.0, maxval=3.0),
    "uniform64": lambda k: jr.uniform(k, (5,), np.float64, np.array([0.0, 1, 2, 3, 4]), 10.0),
    "normal": lambda k: jr.normal(k, (6,)),
    "normal64": lambda k: jr.normal(k, (2, 3), np.float64),
    "split": lambda k: jr.split(k, 3),
    "fold_in": lambda k: jr.fold_in(k, 7),
    "randint": lambda k: jr.randint(k, (6,), -5, 5),
    "randint_u8": lambda k: jr.randint(k, (6,), 0, 256, np.uint8),
    "permutation": lambda k: jr.permutation(k, 20),
    "permutation2d": lambda k: jr.permutation(k, np.arange(12.0).reshape(3, 4), axis=1),
    "choice": lambda k: jr.choice(k, np.arange(5.0), (3,)),
    "choice_p": lambda k: jr.choice(k, 4, (5,), p=np.array([0.1, 0.2, 0.3, 0.4], np.float32)),
    "bernoulli": lambda k: jr.bernoulli(k, 0.5, (4,)),
    "bits8": lambda k: jr.bits(k, (3,), np.uint8),
    "truncated_normal": lambda k: jr.truncated_normal(k, -1.0, 2.0, (3,)),
    "categorical": lambda k: jr.categorical(k, np.zeros((2, 5), np.float32)),
    "gumbel": lambda k: jr.gumbel(k, (3,)),
    "exponential": lambda k: jr.exponential(k, (3,)),
}


@pytest.mark.parametrize("name", sorted(RANDOM_FNS))
def test_deterministic_eager_and_traced(name):
    f = RANDOM_FNS[name]
    k = jr.PRNGKey(42)
    eager = f(k)
    np.testing.assert_array_equal(f(k.copy()), eager)
    g = jx.verify(jx.make_graph(f)(jx.u32[2]))
    (traced,) = jx.eval_graph(g, k)
    assert traced.dtype == eager.dtype and traced.shape == eager.shape
    np.testing.assert_array_equal(traced, eager)
    other = f(jr.PRNGKey(43))
    assert not np.array_equal(other, eager) or name == "categorical"


def test_traced_seed_and_fold_in_data():
    g = jx.make_graph(lambda s, d: jr.fold_in(jr.PRNGKey(s), d))(jx.i32[()], jx.i32[()])
    (out,) = jx.eval_graph(jx.verify(g), np.int32(-3), np.int32(9))
    np.testing.assert_array_equal(out, jr.fold_in(jr.PRNGKey(-3), 9))
    g = jx.make_graph(lambda s: jr.PRNGKey(s))(jx.i64[()])
    np.testing.assert_array_equal(jx.eval_graph(g, np.int64(2**40 + 5))[0], [256, 5])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_uniform_range(dtype):
    k = jr.PRNGKey(5)
    x = jr.uniform(k, (20000,), dtype)
    assert x.dtype == dtype and x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.01
    y = jr.uniform(k, (4000,), dtype, minval=-3.0, maxval=-1.0)
    assert y.min() >= -3 and y.max() < -1
    # (a float16 draw near 101 may round up to maxval, as in JAX: wide types only)
    lo = np.array([0.0, 10.0, 100.0] if dtype != np.float16 else [0.0, -1.0, 0.5], dtype)
    z = jr.uniform(k, (1000, 3), dtype, minval=lo, maxval=lo + 1)
    assert np.all(z >= lo) and np.all(z < lo + 1)


def test_uniform_mantissa_construction():
    # JAX: bitcast((bits >> 9) | 0x3f800000) - 1, i.e. (bits >> 9) * 2**-23
    k = jr.PRNGKey(8)
    b = jr.bits(k, (50,))
    want = (b >> np.uint32(9)).view(np.int32).astype(np.float32) * np.float32(2.0 ** -23)
    np.testing.assert_array_equal(jr.uniform(k, (50,)), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_statistics(dtype):
    x = jr.normal(jr.PRNGKey(0), (100_000,), dtype)
    assert x.dtype == dtype and np.all(np.isfinite(x))
    assert abs(x.mean()) < 0.015 and abs(x.std() - 1) < 0.015
    # tails: P(|x| > 2) = 0.0455
    assert abs(np.mean(np.abs(x) > 2) - 0.0455) < 0.004


@pytest.mark.x64
def test_erfinv_matches_scipy():
    special = pytest.importorskip("scipy.special")
    body = np.linspace(-0.999999, 0.999999, 2001)
    tails = 1 - np.logspace(-15, -6, 30)      # all three float64 polynomial ranges
    x64 = np.concatenate([body, tails, -tails, [0.0, 1e-300]])
    np.testing.assert_allclose(jr.erfinv(x64), special.erfinv(x64), rtol=4e-15, atol=1e-300)
    x32 = body.astype(np.float32)
    np.testing.assert_allclose(jr.erfinv(x32), special.erfinv(x32.astype(np.float64)),
                               rtol=2e-6, atol=1e-6)
    assert np.isposinf(jr.erfinv(np.float32(1.0))) and np.isneginf(jr.erfinv(-1.0))


def test_truncated_normal_bounds():
    x = jr.truncated_normal(jr.PRNGKey(2), -0.5, 1.5, (20000,))
    assert x.min() > -0.5 and x.max() < 1.5
    special = pytest.importorskip("scipy.stats")
    want = special.truncnorm.mean(-0.5, 1.5)
    assert abs(x.mean() - want) < 0.02


def test_bernoulli_rate():
    x = jr.bernoulli(jr.PRNGKey(3), 0.3, (100_000,))
    assert x.dtype == np.bool_ and abs(x.mean() - 0.3) < 0.006
    p = np.array([0.0, 1.0, 0.5], np.float32)
    y = jr.bernoulli(jr.PRNGKey(4), p, (5000, 3))
    assert not y[:, 0].any() and y[:, 1].all() and abs(y[:, 2].mean() - 0.5) < 0.03
    assert jr.bernoulli(jr.PRNGKey(4), p).shape == (3,)


@pytest.mark.parametrize("dtype,lo,hi", [(np.int32, -7, 5), (np.int64, 0, 3), (np.int8, -128, 128),
                                         (np.uint8, 0, 256), (np.uint32, 10, np.uint32(2**32 - 1)),
                                         (np.int32, -2**31, 2**31 - 1)])
def test_randint_bounds(dtype, lo, hi):
    x = jr.randint(jr.PRNGKey(6), (30000,), lo, hi, dtype)
    assert x.dtype == dtype and x.shape == (30000,)
    top = min(int(hi), np.iinfo(dtype).max + 1)   # (a Python 2**32 - 1 overflows int32)
    assert int(x.min()) >= lo and int(x.max()) < top
    if top - lo <= 256:   # every value appears, about equally often
        counts = np.bincount(x.astype(np.int64) - lo, minlength=top - lo)
        assert counts.min() > 0.6 * counts.mean() and counts.max() < 1.4 * counts.mean()


def test_randint_degenerate_and_array_bounds():
    k = jr.PRNGKey(7)
    np.testing.assert_array_equal(jr.randint(k, (5,), 3, 3), [3] * 5)
    np.testing.assert_array_equal(jr.randint(k, (5,), 4, -2), [4] * 5)
    lo = np.array([0, 100, -50], np.int32)
    x = jr.randint(k, (1000, 3), lo, lo + 3)
    assert np.all(x >= lo) and np.all(x < lo + 3)
    with pytest.raises(TypeError, match="integer"):
        jr.randint(k, (2,), 0, 3, np.float32)


def test_permutation_is_a_permutation():
    k = jr.PRNGKey(8)
    for n in (1, 2, 10, 3000):      # 3000 elements take two sort rounds
        p = jr.permutation(k, n)
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    assert not np.array_equal(jr.permutation(k, 50), np.arange(50))
    x = np.arange(24.0).reshape(4, 6)
    rows = jr.permutation(k, x)          # permutes whole rows
    assert sorted(map(tuple, rows)) == sorted(map(tuple, x))
    cols = jr.permutation(k, x, axis=1)
    # one column order for every row
    np.testing.assert_array_equal(cols - cols[:, :1], np.broadcast_to(cols[0] - cols[0, 0],
                                                                      (4, 6)))
    np.testing.assert_array_equal(np.sort(cols, axis=1), x)
    ind = jr.permutation(k, x, axis=1, independent=True)
    np.testing.assert_array_equal(np.sort(ind, axis=1), x)


def test_choice():
    k = jr.PRNGKey(9)
    c = jr.choice(k, 10, (10,), replace=False)
    np.testing.assert_array_equal(np.sort(c), np.arange(10))
    a = np.array([1.5, -2.0, 7.0], np.float32)
    d = jr.choice(k, a, (2000,))
    assert d.dtype == np.float32 and set(np.unique(d)) == set(a)
    p = np.array([0.1, 0.0, 0.6, 0.3])
    e = jr.choice(k, 4, (20000,), p=p)
    np.testing.assert_allclose(np.bincount(e, minlength=4) / e.size, p, atol=0.015)
    f = jr.choice(k, 4, (3,), replace=False, p=p)
    assert len(set(f.tolist())) == 3 and 1 not in f
    rows = jr.choice(k, np.arange(12).reshape(6, 2), (3,), replace=False)
    assert rows.shape == (3, 2) and np.all(rows[:, 1] == rows[:, 0] + 1)
    with pytest.raises(ValueError, match="without replacement"):
        jr.choice(k, 3, (4,), replace=False)


def test_take1d_fallback():
    a = np.array([-0.0, np.nan, 3.0, -np.inf], np.float32)
    ind = np.array([[2, 0], [1, 3]], np.int32)
    np.testing.assert_array_equal(jr._take1d(a, ind), a[ind])
    b = np.array([True, False])
    np.testing.assert_array_equal(jr._take1d(b, np.array([1, 0, 1])), [False, True, False])


def test_gumbel_exponential_categorical_statistics():
    k = jr.PRNGKey(10)
    g = jr.gumbel(k, (50000,))
    assert abs(g.mean() - np.euler_gamma) < 0.03
    e = jr.exponential(k, (50000,), np.float64)
    assert e.min() >= 0 and abs(e.mean() - 1) < 0.02
    logits = np.log(np.array([0.2, 0.5, 0.3], np.float32))
    c = jr.categorical(k, logits, shape=(30000,))
    np.testing.assert_allclose(np.bincount(c, minlength=3) / c.size, [0.2, 0.5, 0.3], atol=0.015)
    assert jr.categorical(k, np.zeros((4, 3)), axis=0).shape == (3,)


def test_bad_keys():
    with pytest.raises(jx.ShapeError, match="uint32\\[2\\]"):
        jr.uniform(np.array([1, 2], np.int32), (3,))
    with pytest.raises(jx.ShapeError, match="one key"):
        jr.normal(jr.split(jr.PRNGKey(0), 3), (2,))
    with pytest.raises(TypeError, match="floating"):
        jr.uniform(jr.PRNGKey(0), (2,), np.int32)
    with pytest.raises(TypeError, match="integer seed"):
        jr.PRNGKey(1.5)
