"""The CPU backend's sort and threefry2x32 kernels against the eager (NumPy) reference:
sort/argsort/sort_key_val/multi-key sort over dtypes, axes, sizes and special floats;
Threefry known answers; jx.random under jx.jit bit for bit."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax
from jx import random as jr
from jx.prims import random_bits as rb

pytest.importorskip("llvmlite")

COVERED = {"sort", "threefry2x32"}

SIZES = [0, 1, 2, 17, 1000]


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f":      # bit for bit: -0.0 keeps its sign, NaNs their place
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def _data(rng, shape, dt, hi=4):
    """Many ties; floats also get NaN, +-inf and both zeros."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind == "u":
        return rng.integers(0, 2 * hi, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(-hi, hi, shape).astype(dt)
    x = (rng.integers(-hi, hi, shape) / 2).astype(dt)
    flat = x.reshape(-1)
    if flat.size >= 2:
        k = min(flat.size, 8)
        picks = rng.choice(flat.size, k, replace=False)
        flat[picks] = np.array([np.nan, -0.0, np.inf, -np.inf, 0.0, -np.nan, -0.0, 0.0],
                               dt)[:k]
    return x


def _flat(out) -> list:
    return [x for o in out for x in _flat(o)] if isinstance(out, (tuple, list)) else [out]


def _check(fn, *args):
    """fn(*args) compiled vs eager, every output bit for bit."""
    want = _flat(fn(*args))
    got = _flat(jx.jit(fn)(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


def _check_groups(fn, groups):
    """fn over each group of arguments, all compiled as one program (one compile)."""
    sizes = [len(g) for g in groups]

    def many(*flat):
        out, i = [], 0
        for n in sizes:
            out.append(fn(*flat[i:i + n]))
            i += n
        return tuple(_flat(out))

    _check(many, *[a for g in groups for a in g])


def _sort_and_argsort(axis):
    """Sorted values and argsort from one kernel: the array sorted with an iota,
    exactly what jnp.argsort binds."""
    def fn(v):
        ax = axis % v.ndim
        return lax.sort((v, lax.broadcasted_iota(np.int32, v.shape, ax)), dimension=ax)
    return fn


# ---------------------------------------------------------------- sort

@pytest.mark.parametrize("dt", ["float32", "float64", "int32", "int64", "uint8", "bool"])
def test_sort_argsort_sizes(dt):
    rng = np.random.default_rng(10)
    xs = [_data(rng, (n,), dt) for n in SIZES]
    _check_groups(_sort_and_argsort(-1), [(x,) for x in xs])
    _check(jnp.sort, xs[-1])                      # a lone operand
    got = jx.jit(jnp.argsort)(xs[-1])             # and against NumPy itself
    np.testing.assert_array_equal(got, np.argsort(xs[-1], kind="stable"))


@pytest.mark.parametrize("dt", ["float32", "float64", "int32", "bool"])
def test_sort_along_each_axis_of_2d_and_3d(dt):
    rng = np.random.default_rng(11)
    xs, axes = [], []
    for shape, shape_axes in [((17, 5), (0, -1)), ((4, 19, 3), (0, 1, 2))]:
        for ax in shape_axes:
            xs.append(_data(rng, shape, dt))
            axes.append(ax)
    _check(lambda *v: tuple(_flat([_sort_and_argsort(a)(x) for x, a in zip(v, axes)])), *xs)


def test_sort_empty_and_unit_dims():
    rng = np.random.default_rng(12)
    xs, axes = [], []
    for shape in [(0, 3), (3, 0), (1, 5), (5, 1), (2, 0, 4), (1, 1)]:
        for ax in range(len(shape)):
            xs.append(_data(rng, shape, np.float32))
            axes.append(ax)
    _check(lambda *v: tuple(_flat([_sort_and_argsort(a)(x) for x, a in zip(v, axes)])), *xs)


def test_sort_special_floats_and_stability():
    x = np.array([3, np.nan, -0.0, 0.0, -np.nan, 1, np.inf, -np.inf, 0.0, -0.0] * 3,
                 np.float32)
    vs = [x.astype(dt) for dt in (np.float32, np.float64, np.float16)]
    # extremes of the integer orders (sign flips, unsigned tops)
    for dt in (np.int32, np.int64, np.uint8, np.uint32, np.int8, np.uint64):
        info = np.iinfo(dt)
        vs.append(np.array([0, info.max, info.min, 1, info.max, info.min, 0], dt))
    groups = [(v,) for v in vs]
    _check_groups(_sort_and_argsort(0), groups)
    # the general (multi-key) comparison on the same values
    _check_groups(lambda v: lax.sort((v, v), num_keys=2), groups[:4])
    for v in vs[:3]:
        idx = np.asarray(_sort_and_argsort(0)(v)[1])
        np.testing.assert_array_equal(idx, np.argsort(v, kind="stable"))
        assert np.isnan(v[idx[-6:]]).all() and not np.isnan(v[idx[:-6]]).any()


def test_sort_key_val_stable_with_ties():
    rng = np.random.default_rng(13)
    for kdt, vdt in [("float32", "int32"), ("int64", "float64"), ("bool", "float32"),
                     ("float64", "uint8")]:
        groups = [(_data(rng, (2, n), kdt, hi=2), _data(rng, (2, n), vdt, hi=100))
                  for n in SIZES]
        _check_groups(lambda a, b: lax.sort_key_val(a, b, dimension=-1), groups)
        k, v = groups[3]
        _check(lambda a, b: lax.sort_key_val(a, b, dimension=0), k.T.copy(), v.T.copy())


@pytest.mark.parametrize("kdts", [("float32", "int32"), ("int32", "float64", "uint8"),
                                  ("bool", "float32"), ("float64", "int64")])
def test_multi_key_sort(kdts):
    rng = np.random.default_rng(14)
    groups = []
    for n in SIZES:
        keys = [_data(rng, (3, n), dt, hi=2) for dt in kdts]
        ride = np.arange(3 * n, dtype=np.int32).reshape(3, n)    # shows the permutation
        groups.append((*keys, ride))
    _check_groups(lambda *ops: lax.sort(ops, dimension=1, num_keys=len(kdts)), groups)
    # fewer keys (the rest ride along), along axis 0 of a (17, 3) array
    ops = [_data(rng, (17, 3), dt, hi=2) for dt in kdts]
    _check(lambda *o: [lax.sort(o, dimension=0, num_keys=nk) for nk in range(1, len(o))],
           *ops)


def test_multi_key_sort_3d_middle_axis():
    rng = np.random.default_rng(15)
    a = _data(rng, (4, 33, 5), np.float32, hi=2)
    c = _data(rng, (4, 33, 5), np.int64, hi=3)
    _check(lambda x, y: (lax.sort((x, y), dimension=1, num_keys=2),
                         lax.sort((y, x), dimension=1, num_keys=2)), a, c)


def test_sort_large_random_rows():
    rng = np.random.default_rng(16)
    x = rng.standard_normal((3, 5000))
    i = rng.integers(-2**62, 2**62, 4097)
    _check(lambda v, w, j: (_sort_and_argsort(1)(v),
                            lax.sort((w, -w), num_keys=2),          # the general path
                            _sort_and_argsort(0)(j)),
           x.astype(np.float32), x, i)


@pytest.mark.x64
def test_grad_through_sort_under_jit():
    rng = np.random.default_rng(17)
    x = rng.standard_normal((4, 9))
    w = rng.standard_normal((4, 9))

    def loss(v):
        return jnp.sum(jnp.sort(v, axis=1) * w) + jnp.sum(jnp.sort(v, axis=0) ** 2)

    g = jx.jit(jx.grad(loss))(x)
    np.testing.assert_allclose(g, jx.grad(loss)(x), rtol=1e-12)
    # d/dx of sum(sort(x) * w) routes w back through the permutation
    order = np.argsort(x, axis=1, kind="stable")
    want = np.zeros_like(x)
    np.put_along_axis(want, order, w, axis=1)
    want += 2 * x
    np.testing.assert_allclose(g, want, rtol=1e-12)


# ---------------------------------------------------------------- threefry2x32

KATS = [  # Random123 known-answer vectors for Threefry-2x32, 20 rounds
    ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 2, (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


def test_threefry_known_answers_compiled():
    args = [np.array([kat[0][0] for kat in KATS], np.uint32),
            np.array([kat[0][1] for kat in KATS], np.uint32),
            np.array([kat[1][0] for kat in KATS], np.uint32),
            np.array([kat[1][1] for kat in KATS], np.uint32)]
    o0, o1 = jx.jit(lambda *a: tuple(rb.threefry2x32.bind(*a)))(*args)
    np.testing.assert_array_equal(o0, [kat[2][0] for kat in KATS])
    np.testing.assert_array_equal(o1, [kat[2][1] for kat in KATS])


@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 1031), (0, 4)])
def test_threefry_random_inputs_vs_reference(shape):
    rng = np.random.default_rng(18)
    args = [rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32) for _ in range(4)]
    _check(lambda *a: tuple(rb.threefry2x32.bind(*a)), *args)
    # the key broadcast from a scalar inside the program, as jx.random does
    _check(lambda k0, k1, x0, x1: tuple(rb.threefry2x32.bind(
        jnp.broadcast_to(k0, x0.shape), jnp.broadcast_to(k1, x0.shape), x0, x1)),
        args[0].reshape(-1)[:1].reshape(()) if args[0].size else np.uint32(5),
        np.uint32(0xDEADBEEF), args[2], args[3])


# ---------------------------------------------------------------- jx.random under jit

def _random_zoo(key):
    k1, k2, k3, k4 = jr.split(key, 4)
    return (jr.uniform(k1, (5, 7)), jr.uniform(k2, (33,), dtype=np.float64),
            jr.split(k3, 3), jr.fold_in(k3, 17), jr.permutation(k4, 50),
            jr.permutation(k4, jnp.arange(12.0)), jr.randint(k2, (9,), -5, 20),
            jr.random_bits(k1, (4,)), jr.bernoulli(k2, 0.3, (20,)))


@pytest.mark.x64
def test_random_functions_jit_bit_identical():
    keys = [jr.PRNGKey(s) for s in (0, 42, 2**31 - 1)]
    _check_groups(_random_zoo, [(k,) for k in keys])


@pytest.mark.x64
def test_uniform_with_bounds_within_rounding_of_the_product():
    # f * (maxval - minval) + minval: the fused loop may contract it into an FMA
    # (scalar.FAST), so bounded draws can differ from eager by one rounding of the
    # product, an absolute error below eps * |bound|
    key = jr.PRNGKey(5)
    fn = lambda k: (jr.uniform(k, (64,), dtype=np.float64, minval=-2.0, maxval=3.0),  # noqa
                    jr.uniform(k, (64,), minval=1.0, maxval=1.5))
    for g, w, bound in zip(jx.jit(fn)(key), fn(key), (3.0, 1.5)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=np.finfo(w.dtype).eps * bound)


@pytest.mark.x64
def test_normal_under_jit():
    if importlib.util.find_spec("jx.codegen.cpu.mathlib") is None:
        pytest.skip("the CPU backend has no transcendental lowering yet (mathlib)")
    keys = [jr.PRNGKey(s) for s in (0, 3)]

    def fn(k):
        return jr.normal(k, (50,)), jr.normal(k, (7,), dtype=np.float64)

    got = _flat(jx.jit(lambda a, b: (fn(a), fn(b)))(*keys))
    want = _flat([fn(k) for k in keys])
    for g, w in zip(got, want):     # erfinv goes through log: allow a few ulp
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=8 * np.finfo(w.dtype).eps, atol=0)


def test_vmap_uniform_over_split_keys_under_jit():
    keys = jr.split(jr.PRNGKey(7), 6)
    fn = jx.vmap(lambda k: jr.uniform(k, (4, 3)))
    got = jx.jit(fn)(keys)
    _same(got, fn(keys))
    for i in range(keys.shape[0]):          # each row is that key's own draw
        _same(got[i], jr.uniform(keys[i], (4, 3)))
