"""jx.numpy / jx.lax / jx.random / jx.nn on concrete inputs give JAX's values at
JAX's dtypes (and weak types), through the same primitives as traced code: no
NumPy shortcut (NumPy's promotion, bounds errors, mutable results).

Each case runs on NumPy inputs of several shapes and dtypes; against jax (when
installed) and against NumPy references otherwise. 64-bit inputs are left out
of the JAX comparisons: jx keeps explicit float64/int64 (JAX's 32-bit mode
narrows them), which issue 17's 64-bit mode will settle.
"""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as lax
import jx.nn as jnn
import jx.numpy as jnp
import jx.random as jr
from jx import dtypes

F16, F32, F64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
I8, I32, U8, BOOL = np.dtype("int8"), np.dtype("int32"), np.dtype("uint8"), np.dtype(bool)
HALF = [F16] + ([dtypes.bfloat16] if dtypes.bfloat16 is not None else [])
SHAPES = [(), (5,), (3, 4), (2, 3, 4)]


def jax_or_skip():
    return pytest.importorskip("jax")


def is_jx_array(r) -> bool:
    """The type eager results have: jx.Array once it exists, NumPy before."""
    if hasattr(jx, "Array"):
        return type(r) is jx.Array
    return isinstance(r, np.ndarray)


def rnd(rng, shape, dt, lo=-4, hi=4):
    dt = np.dtype(dt)
    if dt == BOOL:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = max(lo, np.iinfo(dt).min)
        return rng.integers(lo, hi, shape).astype(dt)
    return rng.uniform(lo, hi, shape).astype(dt)


def leaves(x):
    return [y for e in x for y in leaves(e)] if isinstance(x, (list, tuple)) else [x]


def same(got, want, exact=True, tol=None, weak=True):
    """got (jx) equals want (jax or NumPy): type, dtype, shape, weak type, values."""
    gs, ws = leaves(got), leaves(want)
    assert len(gs) == len(ws)
    for g, w in zip(gs, ws):
        assert is_jx_array(g), type(g)
        wv = np.asarray(w)
        assert g.dtype == wv.dtype, (g.dtype, wv.dtype)
        assert g.shape == wv.shape, (g.shape, wv.shape)
        if weak and hasattr(w, "weak_type") and hasattr(g, "weak_type"):
            assert g.weak_type == w.weak_type, (g, w)
        gv = np.asarray(g)
        if exact or wv.dtype.kind not in "f" and wv.dtype.name != "bfloat16":
            np.testing.assert_array_equal(gv, wv)
        else:
            r = tol or {2: 2e-3, 4: 2e-6}.get(wv.dtype.itemsize, 1e-12)
            np.testing.assert_allclose(gv.astype(F64), wv.astype(F64), rtol=r, atol=r)


def both(fn, *args, **kw):
    """fn(jx module namespace) vs fn(jax's), on the same NumPy arguments. Without
    JAX: the values against NumPy's (as jx.numpy = numpy) where NumPy has the
    function and does not raise (an out-of-range index), dtypes aside (NumPy's
    int64 defaults); the results' type always."""
    try:
        import jax
    except ImportError:
        return _against_numpy(fn, args)
    import jax.numpy as jjnp
    mods = {"jnp": jnp, "lax": lax, "nn": jnn, "random": jr}
    jmods = {"jnp": jjnp, "lax": jax.lax, "nn": jax.nn, "random": jax.random}
    same(fn(mods, *args), fn(jmods, *args), **kw)


def _against_numpy(fn, args):
    got = fn({"jnp": jnp, "lax": lax, "nn": jnn, "random": jr}, *args)
    for g in leaves(got):
        assert is_jx_array(g), type(g)
    try:
        want = fn({"jnp": np}, *args)
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        return          # not NumPy's (lax, nn, random), or NumPy's bounds error
    for g, w in zip(leaves(got), leaves(want)):
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        r = 2e-2 if g.dtype.itemsize <= 2 else 1e-5
        np.testing.assert_allclose(np.asarray(g).astype(F64), w.astype(F64), rtol=r, atol=r)


# ---------------------------------------------------------------- creation

CREATION = [
    lambda m: m["jnp"].zeros((2, 3)),
    lambda m: m["jnp"].zeros(4, dtype=m["jnp"].int8),
    lambda m: m["jnp"].ones((3,), m["jnp"].float16),
    lambda m: m["jnp"].full((2, 2), 2.5),
    lambda m: m["jnp"].full(3, 7),
    lambda m: m["jnp"].full((2, 3), np.float16(1.5)),
    lambda m: m["jnp"].full((2, 3), np.arange(3, dtype=np.int8)),
    lambda m: m["jnp"].full(3, True),
    lambda m: m["jnp"].full((), 2.0),
    lambda m: m["jnp"].zeros_like(2.0),
    lambda m: m["jnp"].ones_like(3),
    lambda m: m["jnp"].full_like(np.zeros(2, np.float16), 3),
    lambda m: m["jnp"].full_like(np.zeros((2, 2), np.int32), 2.7),
    lambda m: m["jnp"].zeros_like(np.ones((3, 1), np.uint8), dtype=m["jnp"].float32),
    lambda m: m["jnp"].ones_like(np.ones((3, 1), np.bool_), shape=(2, 5)),
    lambda m: m["jnp"].arange(7),
    lambda m: m["jnp"].arange(2, 9),
    lambda m: m["jnp"].arange(10, -3, -3),
    lambda m: m["jnp"].arange(0, 1, 0.1),
    lambda m: m["jnp"].arange(-1.3, 7.7, 0.37),
    lambda m: m["jnp"].arange(2.5),
    lambda m: m["jnp"].arange(1.5, 4),
    lambda m: m["jnp"].arange(0, 2, 0.25, dtype=m["jnp"].float16),
    lambda m: m["jnp"].arange(5, dtype=m["jnp"].float32),
    lambda m: m["jnp"].arange(3.0, dtype=m["jnp"].int32),
    lambda m: m["jnp"].linspace(0, 1, 7),
    lambda m: m["jnp"].linspace(-3.3, 11.1, 13),
    lambda m: m["jnp"].linspace(0, 1, 7, endpoint=False),
    lambda m: m["jnp"].linspace(0, 10, 7, dtype=m["jnp"].int32),
    lambda m: m["jnp"].linspace(-5, 10, 7, dtype=m["jnp"].int8),
    lambda m: m["jnp"].linspace(0, 1, 5, dtype=m["jnp"].float16),
    lambda m: m["jnp"].linspace(2.0, 3.0, 1),
    lambda m: m["jnp"].linspace(2.0, 3.0, 0),
    lambda m: m["jnp"].linspace(np.zeros(3, np.float32), np.arange(3, dtype=np.float32), 4),
    lambda m: m["jnp"].linspace(np.zeros(2, np.float32), 1.0, 3, axis=-1),
    lambda m: m["jnp"].linspace(0.0, 1.0, 5, retstep=True),
    lambda m: m["jnp"].eye(3),
    lambda m: m["jnp"].eye(3, 5, k=2, dtype=m["jnp"].int32),
    lambda m: m["jnp"].eye(4, 2, k=-1, dtype=m["jnp"].bool_),
    lambda m: m["jnp"].identity(2, m["jnp"].float16),
    lambda m: m["jnp"].tri(3, 4, k=1),
    lambda m: m["jnp"].asarray(1.0),
    lambda m: m["jnp"].asarray(3),
    lambda m: m["jnp"].asarray(True),
    lambda m: m["jnp"].asarray(1.0, m["jnp"].float32),
    lambda m: m["jnp"].asarray(2, dtype=float),
    lambda m: m["jnp"].asarray([1.0, 2]),
    lambda m: m["jnp"].asarray([[1, 2], [3, 4]]),
    lambda m: m["jnp"].asarray([1, 2], dtype=m["jnp"].float16),
    lambda m: m["jnp"].asarray([0.1, 0.7], dtype=m["jnp"].float16),
    lambda m: m["jnp"].asarray(np.float32(2.5)),
    lambda m: m["jnp"].asarray(np.arange(4, dtype=np.int8)),
    lambda m: m["jnp"].array([True, False]),
    lambda m: m["jnp"].array(5.0, ndmin=2),
    lambda m: m["jnp"].array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=m["jnp"].int32),
]


@pytest.mark.parametrize("k", range(len(CREATION)))
def test_creation_matches_jax(k):
    # linspace follows JAX's formula; XLA's compiled arithmetic (a reciprocal for
    # the division, fused multiply-adds) may round its interior points 1-2 ulp away
    inexact = "linspace" in CREATION[k].__code__.co_names
    both(CREATION[k], exact=not inexact, tol=1e-6 if inexact else None)


def test_creation_bfloat16_promotes_as_jax():
    """0.5 + zeros(3, bfloat16) stays bfloat16 (a weak Python scalar), as in JAX:
    NumPy's own promotion would have given float32 or float64."""
    if dtypes.bfloat16 is None:
        pytest.skip("no ml_dtypes")
    for make in (lambda m: m.zeros(3, "bfloat16"), lambda m: m.ones((2, 2), "bfloat16"),
                 lambda m: m.full(4, 1.5, "bfloat16"), lambda m: m.eye(2, dtype="bfloat16"),
                 lambda m: m.arange(3, dtype="bfloat16")):
        z = make(jnp)
        for r in (0.5 + z, z * 2, z - 1.0, 3 / (z + 1)):
            assert r.dtype.name == "bfloat16", r.dtype
        assert (0.5 + z).dtype.name == "bfloat16"
        jax_numpy = pytest.importorskip("jax.numpy")
        same(0.5 + make(jnp), 0.5 + make(jax_numpy))


def test_creation_results_have_at_and_are_immutable():
    for z in (jnp.zeros(3), jnp.ones((2, 2)), jnp.full(3, 2.0), jnp.zeros_like(np.ones(3)),
              jnp.arange(4.0), jnp.linspace(0, 1, 3), jnp.eye(3)[0], jnp.asarray([1.0, 2, 3])):
        assert is_jx_array(z)
        y = z.at[0].set(9)
        assert float(np.asarray(y).ravel()[0]) == 9 and float(np.asarray(z).ravel()[0]) != 9
        if hasattr(jx, "Array"):
            with pytest.raises(TypeError):
                z[0] = 1


@pytest.mark.x64
def test_asarray_of_a_list_converts_straight_to_the_dtype():
    """The list's Python floats become float64 without a float32 detour
    (16777217 is not a float32), and explicit float64 stays float64."""
    got = jnp.asarray([16777217.0], dtype=jnp.float64)
    assert got.dtype == F64 and float(np.asarray(got)[0]) == 16777217.0
    got = jnp.array([[16777217.0, 0.1]], dtype="float64")
    np.testing.assert_array_equal(got, np.array([[16777217.0, 0.1]]))
    # float16 and int targets: one rounding from the Python values, as np.asarray
    vals = [0.1, 1 / 3, 2049.0, 65519.0, -7.5]
    np.testing.assert_array_equal(jnp.asarray(vals, dtype=jnp.float16),
                                  np.asarray(vals, dtype=F16))
    np.testing.assert_array_equal(jnp.asarray([2**40, -3], dtype="int64"), [2**40, -3])
    with pytest.raises(OverflowError):
        jnp.asarray([300], dtype=jnp.uint8)
    with pytest.raises(OverflowError):
        jnp.asarray(300, dtype=jnp.uint8)


def test_asarray_and_array_copy_semantics():
    """JAX: asarray/array of a NumPy array copy it (a later write to the NumPy
    array does not show); asarray of a jx array is the array itself, array copies
    it unless copy=False; copy=False never raises (JAX copies NumPy buffers)."""
    for copy in (None, False, True):
        src = np.arange(4, dtype=np.float32)
        a = jnp.asarray(src, copy=copy)
        b = jnp.array(src, copy=bool(copy))
        src[0] = 100
        assert float(np.asarray(a)[0]) == 0 and float(np.asarray(b)[0]) == 0
    x = jnp.arange(3.0)
    assert jnp.asarray(x) is x and jnp.asarray(x, copy=False) is x
    assert jnp.array(x, copy=False) is x
    y, z = jnp.asarray(x, copy=True), jnp.array(x)
    assert y is not x and z is not x
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(z, x)
    w = jnp.asarray(x, dtype=jnp.int32, copy=False)       # a conversion: a new array
    assert w.dtype == I32 and w is not x
    jax = pytest.importorskip("jax")
    jx_ = jax.numpy.arange(3.0)
    assert jax.numpy.asarray(jx_) is jx_ and jax.numpy.array(jx_) is not jx_


def test_creation_inside_jit_matches_eager():
    f = lambda x: x + jnp.zeros(3) + jnp.arange(3.0) + jnp.linspace(0, 1, 3) \
        + jnp.full(3, 0.5) + jnp.eye(3)[1]                               # noqa: E731
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(jx.jit(f)(x), f(x))
    g = jx.make_graph(lambda v: jnp.linspace(v, v + 1, 4))(jx.f32[()])
    np.testing.assert_allclose(jx.eval_graph(g, np.float32(2))[0],
                               jnp.linspace(2.0, 3.0, 4), rtol=1e-6)


# ---------------------------------------------------------------- indexing

INDICES = [
    0, -1, 10, -10, (1, 2), (10, -10), slice(1, None), slice(None, None, -2),
    (slice(None), 3), (Ellipsis, 0), (None, 1), True, False, (Ellipsis, True),
    (0, True), (), np.array([1, 7]), np.array([-1, -9, 2]), (np.array([0, 2]), 1),
    (slice(None), np.array([0, 9, -1])), (np.array([[0], [2]]), np.array([1, 3])),
    np.int64(-2), np.array(5), (1, slice(None), np.array([1, 0]))
]


@pytest.mark.parametrize("k", range(len(INDICES)))
@pytest.mark.parametrize("dt", [F32, I32, BOOL, F16])
def test_getitem_matches_jax(rng, k, dt):
    """Out-of-range ints and index arrays clamp on reads (JAX), negatives wrap once,
    bool scalars add an axis: x[idx] on concrete arrays equals JAX's."""
    idx = INDICES[k]
    for shape in ((3, 4), (3, 4, 2)):
        if isinstance(idx, tuple) and sum(i is not None and i is not Ellipsis and
                                          not isinstance(i, bool) for i in idx) > len(shape):
            continue
        x = rnd(rng, shape, dt)
        both(lambda m, x: m["jnp"].asarray(x)[idx], x)
        both(lambda m, x: m["jnp"].asarray(x).at[idx].get(), x)


def test_getitem_bool_masks_match_jax(rng):
    x = rnd(rng, (4, 5), F32)
    for mask in (x > 0, (x > 0)[:, 0], np.zeros((4, 5), bool), np.ones(4, bool)):
        both(lambda m, x: m["jnp"].asarray(x)[mask], x)
        both(lambda m, x: m["jnp"].asarray(x)[m["jnp"].asarray(mask)], x)
    np.testing.assert_array_equal(jnp.asarray(x)[x > 0], x[x > 0])


def test_getitem_out_of_range_clamps_instead_of_raising(rng):
    x = rnd(rng, (5,), F32)
    assert float(jnp.asarray(x)[7]) == x[4]
    assert float(jnp.getitem(x, -8)) == x[0]
    np.testing.assert_array_equal(jnp.getitem(x, np.array([9, -9, 1])), x[[4, 0, 1]])
    with pytest.raises(IndexError):
        jnp.zeros((0, 3))[0]                # no element to stand in for it


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
def test_at_updates_match_jax(rng, op):
    x = rnd(rng, (4, 3), F32)
    v = rnd(rng, (3,), F32)
    for idx in (0, -1, 7, (slice(None), 1), np.array([0, 9, 2]), (np.array([1, 1]), 0)):
        vals = v if not isinstance(idx, tuple) or idx[0] is not slice(None) else v[0]
        both(lambda m, x: getattr(m["jnp"].asarray(x).at[idx], op)(
            vals[0] if isinstance(idx, tuple) else vals), x)


def test_take_and_take_along_axis_match_jax(rng):
    a = rnd(rng, (4, 5), F32)
    for mode in (None, "clip", "wrap", "fill"):
        idx = np.array([[0, 7], [-2, -9]])
        both(lambda m, a: m["jnp"].take(a, idx, axis=1, mode=mode), a)
        both(lambda m, a: m["jnp"].take(a, idx, mode=mode), a)
    ind = rng.integers(0, 5, (4, 2))
    both(lambda m, a: m["jnp"].take_along_axis(a, ind, axis=1), a)


# ---------------------------------------------------------------- manipulation, reductions

MANIP = [
    lambda m, x: m.reshape(x, x.shape),
    lambda m, x: m.reshape(x, (-1,)),
    lambda m, x: m.ravel(x),
    lambda m, x: m.transpose(x),
    lambda m, x: m.squeeze(x),
    lambda m, x: m.expand_dims(x, 0),
    lambda m, x: m.flip(x),
    lambda m, x: m.atleast_1d(x),
    lambda m, x: m.atleast_2d(x),
    lambda m, x: m.broadcast_to(x, (2,) + x.shape),
    lambda m, x: m.concatenate([m.atleast_1d(x), m.atleast_1d(x)]),
    lambda m, x: m.stack([x, x], axis=-1),
    lambda m, x: m.tile(x, 2),
    lambda m, x: m.repeat(x, 2),
    lambda m, x: m.roll(x, 1),
    lambda m, x: m.pad(m.atleast_1d(x), 1),
    lambda m, x: m.pad(m.atleast_1d(x), (2, 1), mode="edge"),
    lambda m, x: m.diff(m.atleast_1d(x)) if x.dtype != np.bool_ else m.atleast_1d(x),
    lambda m, x: m.split(m.atleast_1d(x), [1]),
    lambda m, x: m.where(x, x, 0) if x.dtype == np.bool_ else m.where(x > 0, x, 0),
]


@pytest.mark.parametrize("k", range(len(MANIP)))
@pytest.mark.parametrize("dt", [F32, I8, BOOL, F16])
def test_manipulation_matches_jax(rng, k, dt):
    for shape in SHAPES:
        x = rnd(rng, shape, dt)
        both(lambda m, x: MANIP[k](m["jnp"], x), x)


REDUCE = [
    lambda m, x: m.sum(x), lambda m, x: m.sum(x, axis=0), lambda m, x: m.prod(x),
    lambda m, x: m.max(x), lambda m, x: m.min(x, axis=-1, keepdims=True),
    lambda m, x: m.mean(x), lambda m, x: m.var(x), lambda m, x: m.std(x, axis=0),
    lambda m, x: m.argmax(x), lambda m, x: m.argmin(x, axis=0),
    lambda m, x: m.cumsum(x), lambda m, x: m.cumprod(x, axis=0),
    lambda m, x: m.any(x), lambda m, x: m.all(x, axis=0),
    lambda m, x: m.count_nonzero(x), lambda m, x: m.ptp(x),
    lambda m, x: m.average(x, axis=0), lambda m, x: m.nansum(x),
]


@pytest.mark.parametrize("k", range(len(REDUCE)))
@pytest.mark.parametrize("dt", [F32, I32, I8, U8, BOOL, F16])
def test_reductions_match_jax(rng, k, dt):
    for shape in SHAPES[1:]:
        x = rnd(rng, shape, dt, 0 if dt == U8 else -3, 4)
        if dt == BOOL and k in (4, 15):      # bool max/min/ptp: JAX's own choices differ
            continue
        both(lambda m, x: REDUCE[k](m["jnp"], x), x, exact=False)


def test_reductions_of_weak_values_are_strong_as_in_jax():
    """jnp.sum(2.0), x.max() of asarray(2.0), cumsum of a weak value: strongly
    typed results, as JAX's reductions give (float32, not weak)."""
    for f in (lambda m: m.sum(2.0), lambda m: m.mean(3), lambda m: m.max(m.asarray(2.0)),
              lambda m: m.prod(m.full(3, 2.0)), lambda m: m.cumsum(m.full(3, 2.0)),
              lambda m: m.min(m.full((2, 2), 1), axis=0), lambda m: m.var(m.full(3, 1.5)),
              lambda m: m.sum(m.full(3, 2.0), initial=1.0)):
        r = f(jnp)
        assert is_jx_array(r) and r.dtype in (F32, I32)
        if hasattr(r, "weak_type"):
            assert not r.weak_type, r
        jax_numpy = pytest.importorskip("jax.numpy")
        same(r, f(jax_numpy))


def test_integer_mean_and_division_are_float32():
    """x.mean() on ints, int32 / int32 and int32 + 1.5 are float32 (JAX), not
    NumPy's float64, eagerly as under jit."""
    i = jnp.arange(6)
    for r in (i.mean(), jnp.mean(i), i / i, i + 1.5, 1 / 2 ** jnp.arange(1, 9), i.var()):
        assert r.dtype == F32, r.dtype
    np.testing.assert_allclose(1 / 2 ** jnp.arange(1, 9), 1 / 2 ** np.arange(1, 9), rtol=1e-7)


# ---------------------------------------------------------------- sorting, linalg

@pytest.mark.parametrize("dt", [F32, I32, I8, F16])
def test_sorting_matches_jax(rng, dt):
    for shape in SHAPES[1:]:
        x = rnd(rng, shape, dt)
        both(lambda m, x: m["jnp"].sort(x), x)
        both(lambda m, x: m["jnp"].sort(x, axis=0), x)
        both(lambda m, x: m["jnp"].argsort(x, stable=True), x)
        both(lambda m, x: m["jnp"].argsort(x, axis=None, stable=True), x)
        both(lambda m, x: m["lax"].sort(x), x)
        both(lambda m, x: m["lax"].sort_key_val(x, -x), x)
    k = rnd(rng, (2, 6), I32, 0, 3)
    both(lambda m, k: m["jnp"].lexsort(k), k)


@pytest.mark.parametrize("dt", [F32, I32, F16])
def test_linalg_matches_jax(rng, dt):
    a, b = rnd(rng, (3, 4), dt), rnd(rng, (4, 2), dt)
    v, w = rnd(rng, (4,), dt), rnd(rng, (4,), dt)
    tol = {"exact": False, "tol": 2e-2 if dt == F16 else None}
    both(lambda m, a, b: m["jnp"].matmul(a, b), a, b, **tol)
    both(lambda m, a, b: m["jnp"].dot(a, b), a, b, **tol)
    both(lambda m, a, v: m["jnp"].dot(a, v), a, v, **tol)
    both(lambda m, v, w: m["jnp"].vdot(v, w), v, w, **tol)
    both(lambda m, v, w: m["jnp"].outer(v, w), v, w, **tol)
    both(lambda m, v, w: m["jnp"].inner(v, w), v, w, **tol)
    both(lambda m, a, b: m["jnp"].einsum("ij,jk->ik", a, b), a, b, **tol)
    both(lambda m, a, b: m["jnp"].tensordot(a, b, 1), a, b, **tol)
    both(lambda m, a: m["jnp"].trace(a), a, **tol)
    both(lambda m, v, w: m["jnp"].kron(v, w), v, w, **tol)
    both(lambda m, a, b: a @ m["jnp"].asarray(b), a, b, **tol)


# ---------------------------------------------------------------- lax

LAX = [
    lambda l, x: l.add(x, x), lambda l, x: l.mul(x, x), lambda l, x: l.max(x, l.neg(x)),
    lambda l, x: l.neg(x), lambda l, x: l.reshape(x, (x.size,)),
    lambda l, x: l.transpose(x, tuple(range(x.ndim))[::-1]),
    lambda l, x: l.rev(x, (0,)), lambda l, x: l.slice(x, (0,) * x.ndim, x.shape),
    lambda l, x: l.broadcast(x, (2,)), lambda l, x: l.reduce_sum(x, (0,)),
    lambda l, x: l.reduce_max(x, (0,)), lambda l, x: l.argmax(x, 0, np.int32),
    lambda l, x: l.cumsum(x, 0), lambda l, x: l.cummax(x, 0, reverse=True),
    lambda l, x: l.convert_element_type(x, np.float16),
    lambda l, x: l.convert_element_type(x, np.int32),
    lambda l, x: l.select(x > 0, x, l.neg(x)),
    lambda l, x: l.dynamic_slice(x, (1,) + (0,) * (x.ndim - 1), (2,) + x.shape[1:]),
    lambda l, x: l.dynamic_slice(x, (9,) + (0,) * (x.ndim - 1), (2,) + x.shape[1:]),
    lambda l, x: l.dynamic_update_slice(x, l.neg(x[:1]), (-1,) + (0,) * (x.ndim - 1)),
    lambda l, x: l.dynamic_index_in_dim(x, 2, 0, keepdims=False),
    lambda l, x: l.pad(x, np.array(0, x.dtype), [(1, 2, 0)] + [(0, 0, 0)] * (x.ndim - 1)),
    lambda l, x: l.concatenate([x, x], 0),
    lambda l, x: l.iota(np.int32, 5), lambda l, x: l.broadcasted_iota(np.float32, (2, 3), 1),
]


@pytest.mark.parametrize("k", range(len(LAX)))
@pytest.mark.parametrize("dt", [F32, I32])
def test_lax_matches_jax(rng, k, dt):
    for shape in SHAPES[1:]:
        if shape[0] < 3:
            continue
        x = rnd(rng, shape, dt)
        both(lambda m, x: LAX[k](m["lax"], x), x)


@pytest.mark.parametrize("dt", [F32, I32, U8, BOOL])
def test_lax_gather_and_scatter_match_jax(rng, dt):
    """Every gather mode (None is promise_in_bounds in JAX 0.10: XLA clamps; fill's
    default fill values per dtype) and scatter mode, with out-of-range and negative
    start indices."""
    jax = jax_or_skip()
    x = rnd(rng, (5, 4), dt, 0, 9)
    idx = np.array([[0], [3], [7], [-1], [4]], np.int32)
    gdn = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    sdn = dict(update_window_dims=(1,), inserted_window_dims=(0,),
               scatter_dims_to_operand_dims=(0,))
    for mode in (None, "clip", "fill", "promise_in_bounds"):
        same(lax.gather(x, idx, lax.GatherDimensionNumbers(**gdn), (1, 4), mode=mode),
             jax.lax.gather(x, idx, jax.lax.GatherDimensionNumbers(**gdn), (1, 4), mode=mode))
    u = rnd(rng, (5, 4), dt, 0, 9)
    names = ["scatter", "scatter_min", "scatter_max"] + \
        ([] if dt == BOOL else ["scatter_add", "scatter_mul"])
    for mode in (None, "clip", "drop"):
        for name in names:
            same(getattr(lax, name)(x, idx, u, lax.ScatterDimensionNumbers(**sdn), mode=mode),
                 getattr(jax.lax, name)(x, idx, u, jax.lax.ScatterDimensionNumbers(**sdn),
                                        mode=mode))


def test_lax_scalars_are_weak_as_in_jax():
    jax = jax_or_skip()
    for f in (lambda l: l.add(1.0, 2.0), lambda l: l.mul(3, 4), lambda l: l.neg(2.0),
              lambda l: l.convert_element_type(1.5, np.float32),
              lambda l: l.max(np.float32(1), 2.0)):
        same(f(lax), f(jax.lax))


# ---------------------------------------------------------------- random, nn

def test_random_matches_jax():
    jax = jax_or_skip()
    jrr = jax.random
    for seed in (0, 7, 2**31 - 1):
        k, jk = jr.PRNGKey(seed), jrr.PRNGKey(seed)
        same(k, jrr.key_data(jk))
        same(jr.split(k, 3), jrr.key_data(jrr.split(jk, 3)))
        same(jr.fold_in(k, 5), jrr.key_data(jrr.fold_in(jk, 5)))
        same(jr.bits(k, (4,)), jrr.bits(jk, (4,)))
        same(jr.uniform(k, (3, 2)), jrr.uniform(jk, (3, 2)))
        same(jr.uniform(k, (5,), jnp.float16, -2.0, 3.0), jrr.uniform(jk, (5,), "float16", -2., 3.))
        same(jr.normal(k, (6,)), jrr.normal(jk, (6,)), exact=False)
        same(jr.randint(k, (7,), 0, 10), jrr.randint(jk, (7,), 0, 10))
        same(jr.bernoulli(k, 0.3, (8,)), jrr.bernoulli(jk, 0.3, (8,)))
        same(jr.permutation(k, 6), jrr.permutation(jk, 6))
        same(jr.gumbel(k, (4,)), jrr.gumbel(jk, (4,)), exact=False)
    k = jr.PRNGKey(3)
    for r in (k, jr.split(k), jr.uniform(k), jr.normal(k, (2,))):
        assert is_jx_array(r)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "uint16", "int32"])
def test_randint_of_narrow_dtypes_matches_jax(dt):
    """8- and 16-bit randint draws in int32 with clipped bounds, as JAX does."""
    jax = jax_or_skip()
    info = np.iinfo(dt)
    for seed in (0, 5):
        k, jk = jr.PRNGKey(seed), jax.random.PRNGKey(seed)
        top = info.max + 1 if info.bits < 32 else info.max        # JAX: int32 overflows
        for lo, hi in ((0, 9), (-3, 9), (info.min, top), (-500, 70000), (5, 2)):
            same(jr.randint(k, (3, 4), lo, hi, dt), jax.random.randint(jk, (3, 4), lo, hi, dt))


def test_nn_scalars_and_integers_take_jax_dtypes():
    """Python scalars stay weak through the activations; hard_tanh keeps ints and
    relu6 makes floats of them, as in JAX."""
    cases = [("sigmoid", 2.0), ("silu", 2.0), ("gelu", 0.5), ("elu", -1.0), ("celu", -1.0),
             ("selu", 2.0), ("leaky_relu", -3.0), ("soft_sign", 2.0), ("hard_tanh", 3),
             ("hard_tanh", 0.5), ("hard_tanh", np.arange(-3, 3, dtype=np.int32)),
             ("relu6", np.arange(-3, 9, dtype=np.float32)), ("elu", 2), ("sigmoid", 1)]
    for name, arg in cases:
        r = getattr(jnn, name)(arg)
        assert is_jx_array(r)
        if isinstance(arg, (int, float)):      # gelu's NumPy constants make it strong
            assert r.weak_type == (name != "gelu"), (name, arg, r)
        if name == "hard_tanh":
            assert r.dtype == (F32 if isinstance(arg, float) else I32), (arg, r)
    jax = jax_or_skip()
    for name, arg in cases:
        if name == "sigmoid" and isinstance(arg, int):
            continue                     # JAX refuses ints there; jx converts them
        same(getattr(jnn, name)(arg), getattr(jax.nn, name)(arg), exact=False)
    same(jnn.relu6(np.arange(-3, 9, dtype=np.int32)).astype(np.float32),
         jax.nn.relu6(np.arange(-3, 9, dtype=np.int32)), weak=False)


ACTIVATIONS = ["relu", "relu6", "softplus", "log_sigmoid", "hard_sigmoid", "hard_silu", "elu",
               "celu", "selu", "leaky_relu", "soft_sign", "silu", "gelu", "hard_tanh"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_nn_weak_types_match_jax(rng, name):
    """Python scalars, weak arrays, int and bool arrays: JAX's dtype and weak type
    (relu(2.0) weak through its custom_jvp; elu(int32 array) weak float32,
    soft_sign(int32 array) strong) and its values."""
    jax = jax_or_skip()
    args = [2.0, -1.5, 3, "weak", rnd(rng, (5,), I32), rnd(rng, (2, 3), BOOL),
            rnd(rng, (4,), F32), rnd(rng, (4,), F16)]
    for a in args:
        ga, wa = (jnp.asarray(-0.75), jax.numpy.asarray(-0.75)) if isinstance(a, str) else (a, a)
        try:
            want = getattr(jax.nn, name)(wa)
        except (TypeError, ValueError):
            continue                        # JAX refuses it (log_sigmoid of bools)
        got = getattr(jnn, name)(ga)
        same(got, want, exact=False, tol=2e-3 if want.dtype == F16 else 3e-6)


def test_custom_jvp_keeps_weak_types():
    @jx.custom_jvp
    def f(x):
        return x * 2

    @f.defjvp
    def f_jvp(p, t):
        return f(p[0]), t[0] * 2

    assert f(3.0).weak_type and f(3.0).dtype == F32
    assert not f(np.float32(3.0)).weak_type
    assert f(np.arange(3, dtype=np.float16)).dtype == F16
    np.testing.assert_allclose(float(jx.grad(f)(3.0)), 2.0)
    np.testing.assert_allclose(float(jx.grad(jnn.relu)(2.0)), 1.0)
    out = jnn.relu(jnp.asarray(2.0)) + np.ones(2, np.float16)      # weak meets f16
    assert out.dtype == F16


NN = ["relu", "relu6", "sigmoid", "softplus", "silu", "gelu", "elu", "leaky_relu",
      "log_sigmoid", "softmax", "log_softmax", "hard_tanh", "celu", "selu", "soft_sign"]


@pytest.mark.parametrize("name", NN)
@pytest.mark.parametrize("dt", [F32, F16])
def test_nn_matches_jax(rng, name, dt):
    for shape in SHAPES:
        x = rnd(rng, shape, dt)
        if name in ("softmax", "log_softmax") and not shape:
            continue
        both(lambda m, x: getattr(m["nn"], name)(x), x, exact=False,
             tol=1e-2 if dt == F16 else 3e-6)


def test_nn_one_hot_and_logsumexp_match_jax(rng):
    both(lambda m: m["nn"].one_hot(np.array([0, 2, 5, -1]), 4))
    x = rnd(rng, (3, 4), F32)
    both(lambda m, x: m["nn"].logsumexp(x, axis=1), x, exact=False)
    both(lambda m, x: m["nn"].logsumexp(x), x, exact=False)


# ---------------------------------------------------------------- no NumPy results anywhere

def test_results_are_jx_arrays_never_numpy(rng):
    """Functions that may return their input (a reshape to the same shape, a
    squeeze of nothing, a 0-d value) still hand back a jx array for NumPy input,
    so .at, JAX's promotion and immutability hold on every result."""
    if not hasattr(jx, "Array"):
        pytest.skip("jx.Array not there yet: eager results are NumPy arrays")
    x = rnd(rng, (3, 4), F32)
    outs = [jnp.reshape(x, (3, 4)), jnp.transpose(x, (0, 1)), jnp.squeeze(x), jnp.flip(x, ()),
            jnp.atleast_2d(x), jnp.broadcast_to(x, (3, 4)), jnp.concatenate([x]),
            jnp.roll(x, 0), jnp.asarray(x), jnp.array(x), jnp.squeeze(2.0),
            jnp.reshape(3, ()), lax.convert_element_type(1.0, np.float32),
            lax.convert_element_type(x, np.float32), jnp.asarray(x)[...], jnp.getitem(x, ()),
            jr.PRNGKey(0), jnp.average(x, returned=True)[1], jnp.split(x, 1)[0],
            jnp.atleast_1d(np.float32(2)), jnp.sort(x, axis=0)]
    for r in outs:
        assert type(r) is jx.Array, type(r)
    src = np.zeros(3, np.float32)
    r = jnp.reshape(src, (3,))
    src[0] = 1                     # the caller's array changes, the result does not
    assert float(r[0]) == 0


SCALAR_TYPES = ["bool_", "int8", "int16", "int32", "uint8", "uint32", "float16", "float32"]


@pytest.mark.parametrize("name", SCALAR_TYPES)
def test_scalar_types_make_strong_arrays_and_stand_for_dtypes(rng, name):
    """jnp.float32(2) is a strong 0-d jx array, jnp.float32(x) = x.astype(float32)
    (traced too), and jnp.float32 works wherever a dtype does, as in JAX."""
    t = getattr(jnp, name)
    nt = np.dtype(name).type
    for v in (2, 1.0, True):
        got = t(v)
        assert is_jx_array(got) and got.shape == () and got.dtype == np.dtype(nt)
        assert not got.weak_type
        assert got.item() == nt(v)
    x = rnd(rng, (2, 3), F32, 0, 4)
    np.testing.assert_array_equal(np.asarray(t(x)), x.astype(nt))
    np.testing.assert_array_equal(np.asarray(jx.jit(lambda v: t(v))(x)), x.astype(nt))
    assert jx.jit(lambda v: t(v))(x).dtype == np.dtype(nt)
    assert np.dtype(t) == np.dtype(nt) and t.dtype == np.dtype(nt)
    assert t == nt and nt == t and t != (np.float64 if nt is not np.float64 else np.int8)
    assert {nt: 1}[t] == 1 and {t: 1}[nt] == 1
    assert jnp.zeros(3, t).dtype == np.dtype(nt) and np.zeros(3, t).dtype == np.dtype(nt)
    assert jnp.asarray(x).astype(t).dtype == np.dtype(nt)
    assert isinstance(nt(1), t) and not isinstance(1.5j, t)
    assert (jnp.float32(2.0) * jnp.ones(2, jnp.float16)).dtype == F32   # strong, unlike 2.0
    try:
        import jax
    except ImportError:
        return
    want = getattr(jax.numpy, name)(x)
    same(t(x), want)
    same(t(2), getattr(jax.numpy, name)(2))
