"""The CPU backend's gather, scatter family, dynamic_update_slice and cumulative
ops against the eager NumPy reference: dimension-number layouts (batching dims
included), modes, dtypes, out-of-bounds and repeated indices, empty and unit
dims, NumPy-style code that lowers to them, and a gradient under jx.jit.

Results must match exactly: the kernels apply updates and accumulate in the
reference's order, so even float sums agree bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as lax
import jx.numpy as jnp
from jx.prims.indexing import GatherDimensionNumbers as GDN
from jx.prims.indexing import ScatterDimensionNumbers as SDN
from transform_harness import random_array as _rand

pytest.importorskip("llvmlite")

COVERED = {"gather", "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max",
           "dynamic_update_slice", "cumsum", "cumprod", "cummax", "cummin"}

BIG = np.iinfo(np.int32).max


def _indices(rng, shape, high, dt=np.int32):
    """Mostly in [0, high), with some negatives and far out-of-bounds values."""
    idx = rng.integers(-2, high + 2, shape)
    far = rng.random(shape) < 0.1
    idx = np.where(far, rng.choice([-BIG, BIG, -1, high], shape), idx)
    return idx.astype(dt)


def _same(got, want):
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, \
        (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_array_equal(got, want)     # NaNs compare equal


def _check(f, *args):
    jf = jx.jit(f)
    _same(jf(*args), f(*args))
    return jf


# ---------------------------------------------------------------- gather

# (operand shape, indices shape, dimension numbers, slice sizes)
GATHERS = {
    "rows": ((5, 4), (3, 1), GDN((1,), (0,), (0,)), (1, 4)),
    "rows/partial": ((5, 4), (3, 1), GDN((1,), (0,), (0,)), (1, 3)),
    "points": ((4, 6), (2, 3, 2), GDN((), (0, 1), (0, 1)), (1, 1)),
    "windows": ((6, 5), (4, 2), GDN((1, 2), (), (0, 1)), (2, 3)),
    # offset dim ahead of the batch dims, index map reversed
    "offset-first": ((6, 5, 3), (4, 2), GDN((0,), (0, 2), (2, 0)), (1, 5, 1)),
    "batching": ((3, 5), (3, 4, 1), GDN((), (1,), (1,), (0,), (0,)), (1, 1)),
    "batching/window": ((3, 6, 2), (4, 3, 1), GDN((2,), (1,), (1,), (0,), (1,)),
                        (1, 1, 2)),
    "no-index": ((3, 4), (2, 0), GDN((1, 2), (), ()), (2, 3)),
    "scalar-batch": ((7,), (1,), GDN((0,), (), (0,)), (3,)),
    "unit": ((1, 1), (2, 1), GDN((1,), (0,), (0,)), (1, 1)),
    "empty-slice": ((4, 3), (2, 1), GDN((1,), (0,), (0,)), (1, 0)),
    "empty-batch": ((4, 3), (0, 1), GDN((1,), (0,), (0,)), (1, 3)),
}


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("name", sorted(GATHERS))
def test_gather_layouts(name, mode):
    rng = np.random.default_rng(10)
    xs, is_, dn, sizes = GATHERS[name]
    f = lambda x, i: lax.gather(x, i, dn, sizes, mode=mode)  # noqa: E731
    jf = jx.jit(f)
    for _ in range(3):
        x = _rand(rng, xs, np.float32)
        i = _indices(rng, is_, max(xs))
        _same(jf(x, i), f(x, i))


@pytest.mark.parametrize("dt", ["float64", "int32", "int64", "bool", "uint8", "float16"])
def test_gather_dtypes_and_fill_values(dt):
    rng = np.random.default_rng(11)
    dn = GDN((1,), (0,), (0, 1))
    x, i = _rand(rng, (6, 5), dt), _indices(rng, (7, 2), 6, np.int64)
    for mode, fv in (("clip", None), ("fill", None), ("fill", 3)):
        _check(lambda x, i: lax.gather(x, i, dn, (1, 2), mode=mode, fill_value=fv), x, i)


def test_gather_index_dtypes():
    rng = np.random.default_rng(12)
    x = _rand(rng, (9, 3), np.float32)
    dn = GDN((1,), (0,), (0,))
    for idt in (np.int8, np.uint32, np.uint64, np.int64):
        i = rng.integers(0, 12, (5, 1)).astype(idt)
        if idt == np.uint64:
            i[0, 0] = np.iinfo(np.uint64).max      # wraps to -1, as the reference's astype
        for mode in ("clip", "fill"):
            _check(lambda x, i: lax.gather(x, i, dn, (1, 3), mode=mode), x, i)


# ---------------------------------------------------------------- scatter

# (operand shape, indices shape, updates shape, dimension numbers)
SCATTERS = {
    "rows": ((5, 3), (6, 1), (6, 3), SDN((1,), (0,), (0,))),
    "points": ((4, 5), (3, 2, 2), (3, 2), SDN((), (0, 1), (0, 1))),
    "windows": ((6, 4), (3, 1), (3, 2, 4), SDN((1, 2), (), (0,))),
    # window dim before the scatter dim in updates; index map reversed
    "window-first": ((5, 6), (4, 2), (3, 4), SDN((0,), (1,), (1, 0))),
    "batching": ((3, 5), (3, 4, 1), (3, 4), SDN((), (1,), (1,), (0,), (0,))),
    "batching/window": ((4, 6, 3), (2, 4, 1), (2, 4, 3), SDN((2,), (1,), (1,), (0,), (1,))),
    "unit": ((1, 2), (3, 1), (3, 2), SDN((1,), (0,), (0,))),
    "empty-updates": ((4, 3), (0, 1), (0, 3), SDN((1,), (0,), (0,))),
    "empty-window": ((4, 0), (2, 1), (2, 0), SDN((1,), (0,), (0,))),
}
SCATTER_OPS = {"scatter": lax.scatter, "scatter_add": lax.scatter_add,
               "scatter_mul": lax.scatter_mul, "scatter_min": lax.scatter_min,
               "scatter_max": lax.scatter_max}


@pytest.mark.parametrize("mode", ["clip", "drop"])
@pytest.mark.parametrize("name", sorted(SCATTERS))
def test_scatter_layouts(name, mode):
    """Indices repeat (small range) and go out of bounds; every op, two draws."""
    rng = np.random.default_rng(13)
    xs, is_, us, dn = SCATTERS[name]
    for op in SCATTER_OPS.values():
        f = lambda x, i, u: op(x, i, u, dn, mode=mode)  # noqa: E731
        jf = jx.jit(f)
        for _ in range(2):
            x, u = _rand(rng, xs, np.float64), _rand(rng, us, np.float64)
            i = _indices(rng, is_, max(xs[0], 2))
            _same(jf(x, i, u), f(x, i, u))


@pytest.mark.parametrize("dt", ["float32", "int32", "int64", "bool", "uint8"])
def test_scatter_dtypes(dt):
    rng = np.random.default_rng(14)
    dn = SDN((1,), (0,), (0,))
    x, u = _rand(rng, (4, 3), dt), _rand(rng, (9, 3), dt)
    i = _indices(rng, (9, 1), 4, np.int64)
    ops = ["scatter", "scatter_min", "scatter_max"] + \
        ([] if dt == "bool" else ["scatter_add", "scatter_mul"])
    for name in ops:
        for mode in ("clip", "drop"):
            _check(lambda x, i, u: SCATTER_OPS[name](x, i, u, dn, mode=mode), x, i, u)


def test_scatter_duplicates_last_wins_and_float_order():
    """scatter keeps the last of repeated updates; float sums in update order are
    not associative, so exact agreement checks the order too."""
    dn = SDN((), (0,), (0,))
    x = np.zeros(3, np.float32)
    i = np.array([[1], [2], [1], [1], [0], [2]], np.int32)
    u = np.array([1e8, 5, 1, -1e8, 7, 6], np.float32)
    want = lax.scatter(x, i, u, dn)
    np.testing.assert_array_equal(want, [7, -1e8, 6])
    _check(lambda x, i, u: lax.scatter(x, i, u, dn), x, i, u)
    assert lax.scatter_add(x, i, u, dn)[1] == 0.0      # (1e8 + 1) - 1e8 in float32
    _check(lambda x, i, u: lax.scatter_add(x, i, u, dn), x, i, u)


def test_scatter_min_max_nan_propagates():
    dn = SDN((), (0,), (0,))
    x = np.array([1.0, np.nan, 3.0, 4.0])
    i = np.array([[0], [1], [2], [2], [3]], np.int32)
    u = np.array([np.nan, 0.0, 5.0, np.nan, 2.0])
    for op in (lax.scatter_min, lax.scatter_max):
        out = _check(lambda x, i, u: op(x, i, u, dn), x, i, u)(x, i, u)
        assert np.isnan(out[:3]).all() and out[3] == (2.0 if op is lax.scatter_min else 4.0)


# ---------------------------------------------------------------- dynamic_update_slice

@pytest.mark.parametrize("dt", ["float32", "float64", "int32", "int64", "bool"])
def test_dynamic_update_slice_clamps(dt):
    rng = np.random.default_rng(15)
    for xs, us in (((5, 4), (2, 3)), ((7,), (7,)), ((3, 1, 4), (1, 1, 2)), ((4, 3), (0, 2)),
                   ((2, 0), (1, 0))):
        f = lambda x, u, s: lax.dynamic_update_slice(x, u, list(s))  # noqa: E731
        jf = jx.jit(f)
        x, u = _rand(rng, xs, dt), _rand(rng, us, dt)
        for starts in ([0] * len(xs), [-3] * len(xs), [BIG] * len(xs),
                       list(rng.integers(-2, 6, len(xs)))):
            s = np.array(starts, np.int32)
            _same(jf(x, u, s), f(x, u, s))


@pytest.mark.x64
def test_dynamic_update_slice_literal_and_int64_starts():
    rng = np.random.default_rng(16)
    x, u = _rand(rng, (6, 5), np.float32), _rand(rng, (2, 2), np.float32)
    _check(lambda x, u: lax.dynamic_update_slice(x, u, (np.int32(4), np.int32(9))), x, u)
    s = np.array(2**40, np.int64)
    _check(lambda x, u, s: lax.dynamic_update_slice(x, u, (s, s - 2**40 + 1)), x, u, s)


# ---------------------------------------------------------------- cumulative ops

CUMS = {"cumsum": lax.cumsum, "cumprod": lax.cumprod, "cummax": lax.cummax,
        "cummin": lax.cummin}


@pytest.mark.parametrize("name", sorted(CUMS))
def test_cumulative_axes_reverse_dtypes(name):
    rng = np.random.default_rng(17)
    for shape, dts in (((4, 5, 3), ("float32", "int64")), ((7,), ("float64", "int32")),
                       ((1, 6), ("float32",)), ((3, 0, 2), ("float32",)), ((2, 1), ("int32",))):
        for dt in dts:
            x = _rand(rng, shape, dt)
            if name == "cumprod":
                x = (x / 40 + 1).astype(dt) if dt.startswith("f") else (x % 3 - 1).astype(dt)
            # every axis, both directions, in one compiled function
            _check(lambda v: [CUMS[name](v, a, reverse=r) for a in range(len(shape))
                              for r in (False, True)], x)


def test_cumulative_nans_and_float_order():
    x = np.array([[1.0, np.nan, 3.0, -1.0], [2.0, 0.5, np.nan, 4.0]], np.float32)
    for name, fn in CUMS.items():
        for reverse in (False, True):
            out = _check(lambda v: fn(v, 1, reverse=reverse), x)(x)
            assert np.isnan(out[0, 1 if not reverse else 0])
    s = np.array([1e8, 1, -1e8, 1, 1], np.float32)       # order-sensitive in float32
    _check(lambda v: lax.cumsum(v, 0), s)
    _check(lambda v: lax.cumsum(v, 0, reverse=True), s)


# ---------------------------------------------------------------- NumPy-style code

def test_numpy_indexing_lowers_and_matches():
    rng = np.random.default_rng(18)
    x = _rand(rng, (6, 4, 5), np.float32)
    i = rng.integers(-6, 6, (3,)).astype(np.int32)
    j = rng.integers(0, 5, (3,)).astype(np.int32)
    _check(lambda x, i: x[i], x, i)
    _check(lambda x, i, j: x[i, :, j], x, i, j)
    _check(lambda x, i: x[1:, i % 4, ::2], x, i)
    _check(lambda x, i: jnp.take(x, i, axis=1, mode="clip"), x, i)
    _check(lambda x, i: jnp.take(x, i * 3, axis=2), x, i)       # fill for out of range
    k = rng.integers(0, 5, (6, 4, 3)).astype(np.int32)
    _check(lambda x, k: jnp.take_along_axis(x, k, axis=2), x, k)
    ks = jx.jit(lambda x, k: jnp.take_along_axis(x, k, axis=2)).lower(x, k).kernels
    assert any(kk.kind == "opaque" and kk.root.prim.name == "gather" for kk in ks)


def _at(x):
    """x.at for NumPy arrays (eager reference) and tracers alike."""
    return jnp.IndexUpdateHelper(x)


def test_numpy_at_updates_with_duplicates():
    rng = np.random.default_rng(19)
    i = np.array([0, 3, 0, -1, 3, 3], np.int32)
    for dt in (np.float32, np.int32):
        x, u = _rand(rng, (5, 2), dt), _rand(rng, (6, 2), dt)
        _check(lambda x, i, u: _at(x)[i].add(u), x, i, u)
        _check(lambda x, i, u: _at(x)[i].set(u), x, i, u)
        _check(lambda x, i, u: _at(x)[i].multiply(u), x, i, u)
        _check(lambda x, i, u: _at(x)[i].min(u), x, i, u)
        _check(lambda x, i, u: _at(x)[i].max(u), x, i, u)
        _check(lambda x, i, u: _at(x)[i, 1].add(u[:, 0]), x, i, u)
    x = np.arange(10, dtype=np.float64)
    _check(lambda x: _at(x)[7:].set(x[:3] * 2.0), x)     # dynamic_update_slice, literal start
    for n in (-3, 4, 12):                                # scatter of a literal scalar update
        _check(lambda x, n: _at(x)[n].set(-1.0), x, np.array([n], np.int32))
    ones = np.ones(5, np.float32)
    _check(lambda x, i: _at(x)[i].add(1.0, mode="drop"), ones, np.array([9, 1, 1], np.int32))


def test_numpy_cumulative():
    rng = np.random.default_rng(20)
    x = _rand(rng, (3, 4), np.float32)
    _check(lambda v: jnp.cumsum(v), x)
    _check(lambda v: jnp.cumsum(v, axis=0), x)
    _check(lambda v: jnp.cumsum(v, axis=-1, reverse=True), x)
    _check(lambda v: jnp.cumprod(v, axis=1), np.where(x > 2, np.nan, x / 3 + 1))
    _check(lambda v: lax.cummax(v, 1), np.where(x > 2, np.nan, x))
    _check(lambda v: jnp.cumsum(v, axis=1), rng.integers(-5, 5, (3, 4)).astype(np.int32))


def test_grad_of_indexing_loss_under_jit():
    rng = np.random.default_rng(21)
    x = rng.standard_normal((6, 3))
    w = rng.standard_normal((4, 3))
    i = np.array([2, 0, 2, 5], np.int32)

    def loss(x, w, i):
        rows = x[i] * w                                  # gather; its vjp is scatter_add
        y = _at(x)[i].add(rows * 0.5)                      # scatter_add
        c = jnp.cumsum(y, axis=0, reverse=True)
        m = lax.cummax(y, 1)
        return jnp.sum(c * c) + jnp.sum(m * y) + jnp.sum(jnp.take_along_axis(
            y, np.array([[2], [0], [1], [1], [0], [2]], np.int32), axis=1) ** 2)

    g_ref = jx.grad(loss, argnums=(0, 1))(x, w, i)
    g_jit = jx.jit(jx.grad(loss, argnums=(0, 1)))(x, w, i)
    for a, b in zip(g_jit, g_ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
