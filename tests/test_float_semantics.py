"""Floating-point semantics of fused CPU kernels: 16-bit floats round after every
operation (as NumPy and XLA's CPU backend do), and reductions reorder only their
own partial sums, so no infinity, NaN or zero sign is lost to fast-math rewrites."""
from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import dtypes

# float64 data and references, as in JAX's own tests with jax_enable_x64
pytestmark = pytest.mark.x64

bf16 = dtypes.bfloat16
f16, f32, f64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
HALVES = [f16] + ([bf16] if bf16 is not None else [])
FLOATS = HALVES + [f32, f64]
# sizes around the vector widths (8, 16 lanes) and the reductions' blocks (64)
SHAPES = [(0,), (1,), (7,), (17,), (64,), (131,), (4, 33), (3, 5, 19)]


def bits_equal(got, want):
    """Equal bit for bit, except that any NaN matches any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                want.dtype, want.shape)
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    same = (g == w) & (np.signbit(g) == np.signbit(w))
    bad = ~(both_nan | same)
    assert not bad.any(), f"differs at {np.argwhere(bad)[:5].tolist()}: " \
                          f"got {g[bad][:5]}, want {w[bad][:5]}"


def quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


def jax_or_skip():
    jax = pytest.importorskip("jax")
    return jax, jax.numpy


# ------------------------------------------------------------- 16-bit rounding

@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_half_sum_rounds_before_the_next_op(dt):
    a, b = np.full(5, 2048, dt), np.full(5, 0.5, dt)
    got = jx.jit(lambda a, b: (a + b) - a)(a, b)
    bits_equal(got, (a + b) - a)
    if dt == f16:
        assert not got.any()                       # 2048.5 is 2048 in float16


def test_half_round_trip_is_not_elided():
    x = np.array([1.0001, 2.0003, 3.0007, 65519.0, 65520.0, 1e-8], f32)
    got = jx.jit(lambda x: x.astype(jnp.float16).astype(jnp.float32))(x)
    bits_equal(got, quiet(lambda: x.astype(f16).astype(f32)))
    assert got[0] == 1.0 and np.isinf(got[4])


def _chain(m, r=lambda v: v):
    """Rounding-sensitive arithmetic with exactly rounded ops only. The NumPy
    reference rounds each result to the dtype with r (ml_dtypes' bfloat16 promotes
    with Python floats), computing in float32 as NumPy's float16 ops do."""
    def f(a, b):
        s = r(a + b)
        d = r(r(s - a) * b)
        q = r(d / r(b + 1.5))
        t = r(m.sqrt(r(m.abs(r(r(q * 3.0) + a)))))
        return m.where(a > 0, r(t - 0.1), m.maximum(q, r(s * 0.25)))
    return f


def _reference_chain(dt):
    up = f32 if dt.itemsize < 4 else dt
    return _chain(np, lambda v: np.asarray(np.asarray(v, up).astype(dt), up))


@pytest.mark.parametrize("dt", HALVES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_half_chain_matches_per_op_rounding(dt, shape, rng):
    a = (rng.uniform(-3000, 3000, shape)).astype(dt)
    b = (rng.uniform(-1, 1, shape)).astype(dt)
    got = jx.jit(_chain(jnp))(a, b)
    want = quiet(_reference_chain(dt), a.astype(f32), b.astype(f32)).astype(dt)
    bits_equal(got, want)
    if dt == f16:       # NumPy's own float16 arithmetic agrees
        bits_equal(got, quiet(_chain(np), a, b))


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_half_chain_matches_jax(dt, rng):
    jax, jjnp = jax_or_skip()
    a = (rng.uniform(-3000, 3000, (4, 33))).astype(dt)
    b = (rng.uniform(-1, 1, (4, 33))).astype(dt)
    bits_equal(jx.jit(_chain(jnp))(a, b), np.asarray(jax.jit(_chain(jjnp))(a, b)))


@pytest.mark.skipif(bf16 is None, reason="needs ml_dtypes")
def test_bfloat16_conversions_round_to_nearest_even_and_keep_nan():
    halfway = [1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -30]
    x64 = np.array(halfway + [np.nan, -np.nan, np.inf, -np.inf, 3.4e38, -0.0, 1e-40], f64)
    x32 = x64.astype(f32)
    bits_equal(jx.jit(lambda x: x.astype(bf16))(x32), x32.astype(bf16))
    # float64 -> bfloat16 rounds through float32, as ml_dtypes and XLA do
    bits_equal(jx.jit(lambda x: x.astype(bf16))(x64), x64.astype(bf16))
    got = jx.jit(lambda x: x.astype(bf16).astype(jnp.float32) * 1.0)(x32)
    bits_equal(got, x32.astype(bf16).astype(f32))
    assert np.isnan(got[3:5]).all()


@pytest.mark.skipif(bf16 is None, reason="needs ml_dtypes")
@pytest.mark.parametrize("src,dst", [(f16, bf16), (bf16, f16), (np.dtype("int32"), bf16),
                                     (np.dtype("int32"), f16), (f64, f16)], ids=str)
def test_conversions_between_narrow_types_round(src, dst, rng):
    x = rng.uniform(-70000, 70000, 257)
    x[:4] = [2 ** 30 + 2 ** 22 + 1, 2049, 2051, 0.1]
    x = quiet(lambda: x.astype(src))
    got = jx.jit(lambda x: (x.astype(dst) + 0).astype(jnp.float32))(x)
    bits_equal(got, quiet(lambda: x.astype(dst).astype(f32)))


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_half_constants_and_iota_are_in_the_dtype(dt):
    x = np.arange(300, dtype=dt)
    want = (x.astype(f32) + np.asarray(0.1, dt).astype(f32)).astype(dt)
    bits_equal(jx.jit(lambda x: x + 0.1)(x), want)
    got = jx.jit(lambda x: jnp.arange(3000, dtype=dt) * 1 + x[0])(x)
    bits_equal(got, np.arange(3000).astype(dt))


# ------------------------------------------------------------------ reductions

def test_sum_of_infinite_products_is_not_finite():
    """Every product is infinite: a fast-math rewrite to s * sum(a) gave 0."""
    a, s = np.array([1e38, -1e38], f32), np.float32(1e10)
    got = jx.jit(lambda a, s: jnp.sum(a * s))(a, s)
    bits_equal(got, quiet(lambda: np.sum(a * s)))          # inf + -inf: NaN
    x = np.ones(7, f32)
    got = jx.jit(lambda x: jnp.sum(x * 1e30 * 1e30 - x * 1e30 * 1e30))(x)
    assert np.isnan(got)                                    # inf - inf per term


def test_sum_of_infinite_products_against_jax():
    jax, jjnp = jax_or_skip()
    a, s = np.array([1e38, -1e38], f32), np.float32(1e10)
    want = np.asarray(jax.jit(lambda a, s: jjnp.sum(a * s))(a, s))
    got = jx.jit(lambda a, s: jnp.sum(a * s))(a, s)
    assert not np.isfinite(want) and not np.isfinite(got)


def _with_specials(shape, dt, rng, where):
    x = rng.uniform(-1, 1, shape).astype(dt)      # sums of 100k stay float16
    flat = x.reshape(-1)
    for pos, val in where:
        if flat.size:
            flat[pos % flat.size] = val
    return x


# element positions: the first, one in the middle, the last (a block's tail)
SPOTS = [0, 37, -1]
BIG = [(100_003,), (3, 70_001)]       # parallel partial reductions, ragged chunks


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES[1:] + BIG, ids=str)
def test_sums_of_squares_with_infinities(dt, shape, rng):
    total = jx.jit(lambda x: jnp.sum(x * x))
    rows = jx.jit(lambda x: jnp.sum(x * x, axis=-1))
    plain = jx.jit(lambda y: jnp.sum(y))
    for spot in SPOTS:
        x = _with_specials(shape, dt, rng, [(spot, -np.inf)])
        bits_equal(total(x), np.asarray(np.inf, dt))
        r = rows(x).astype(f64)
        assert np.isinf(r).sum() == 1 and (r > 0).all()
        y = _with_specials(shape, dt, rng, [(spot, np.inf), (spot + 1, -np.inf)])
        if y.size > 1:          # inf + -inf
            assert np.isnan(plain(y))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES[1:] + BIG, ids=str)
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
def test_nan_propagates_through_reductions(dt, shape, op, rng):
    fn = getattr(jnp, op)
    total, rows = jx.jit(fn), jx.jit(lambda x: fn(x, axis=-1))
    for spot in SPOTS:
        x = _with_specials(shape, dt, rng, [(spot, np.nan)])
        assert np.isnan(total(x))
        r = rows(x).astype(f64)
        assert np.isnan(r).sum() == 1
        bits_equal(np.isnan(r), np.isnan(quiet(getattr(np, op), x.astype(f64), -1)))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3, 17, 64, 100])
def test_zero_signs_of_sums_and_products_match_numpy(dt, n):
    neg = np.full(n, -0.0, dt)
    for fn, ref in [(lambda x: jnp.sum(x), np.sum),
                    (lambda x: jnp.sum(x * -1.0), lambda x: np.sum(-x)),
                    (lambda x: jnp.sum(x.reshape(1, -1), axis=1), lambda x: np.sum(x, keepdims=True)),
                    (lambda x: jnp.prod(x - 1.0), lambda x: np.prod(x - 1)),
                    (lambda x: jnp.prod(x * 0.0 - 1.0), lambda x: np.prod(x * 0 - 1))]:
        bits_equal(jx.jit(fn)(neg), np.asarray(ref(neg.astype(f64))).astype(dt))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_max_and_min_order_zeros_as_jax(dt):
    """XLA's max/min take -0 < +0 (NumPy's answer depends on the order)."""
    for x in ([-0.0, 0.0], [0.0, -0.0], [-0.0] * 9 + [0.0] + [-0.0] * 70):
        x = np.array(x, dt)
        bits_equal(jx.jit(jnp.max)(x), np.asarray(0.0, dt))
        bits_equal(jx.jit(jnp.min)(-x), np.asarray(-0.0, dt))
    jax, jjnp = jax_or_skip()
    x = np.array([-0.0, 0.0, -0.0], f32)
    bits_equal(jx.jit(jnp.max)(x), np.asarray(jax.jit(jjnp.max)(x)))
    bits_equal(jx.jit(jnp.min)(x), np.asarray(jax.jit(jjnp.min)(x)))


def _tolerance(dt, x):
    """Error bound of a reordered sum: a few ulps of the dtype on sum(|x|)."""
    eps = 2.0 ** -7 if dt == bf16 else np.finfo(dt).eps
    return 4 * eps * np.sum(np.abs(x.astype(f64)), axis=-1) + np.finfo(f32).tiny


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES + BIG, ids=str)
def test_sums_match_numpy(dt, shape, rng):
    x = rng.uniform(-1, 1, shape).astype(dt)
    got = jx.jit(lambda x: jnp.sum(x * x - 0.25, axis=-1))(x).astype(f64)
    ref = np.sum((x * x - 0.25).astype(f64), axis=-1)      # terms rounded as jx's
    assert np.all(np.abs(got - ref) <= _tolerance(dt, x)), np.max(np.abs(got - ref))
    got = jx.jit(lambda x: jnp.sum(x))(x).astype(f64)
    assert abs(got - np.sum(x.astype(f64))) <= 4 * _tolerance(dt, x.reshape(-1)), got
    if x.size:
        bits_equal(jx.jit(lambda x: jnp.max(x, axis=-1))(x), np.max(x, axis=-1))
        bits_equal(jx.jit(jnp.min)(x), np.min(x))


def test_sums_match_jax(rng):
    jax, jjnp = jax_or_skip()
    x = rng.uniform(-2, 2, (5, 131)).astype(f32)
    for fn in (lambda m, x: m.sum(x * x, axis=1), lambda m, x: m.max(x, axis=0)):
        want = np.asarray(jax.jit(lambda x: fn(jjnp, x))(x))
        np.testing.assert_allclose(jx.jit(lambda x: fn(jnp, x))(x), want, rtol=1e-6)


COLUMN_CASES = [((3, 17), 0), ((1, 16), 0), ((131, 64), 0), ((0, 20), 0), ((4, 7), 0),
                ((5, 6, 40), 1), ((5, 6, 40), (0, 1)), ((2000, 257), 0)]


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("shape,axis", COLUMN_CASES, ids=str)
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
def test_reductions_keeping_the_last_dim(dt, shape, axis, op, rng):
    """Column reductions accumulate row by row: NumPy's order, and its specials."""
    if op in ("max", "min") and 0 in shape:
        return
    spread = 0.05 if op == "prod" else 0.5            # products of 2000 stay normal
    x = rng.uniform(1 - spread, 1 + spread, shape).astype(dt)
    flat = x.reshape(-1)
    if flat.size > 40:
        flat[3], flat[-1], flat[-2] = np.nan, np.inf, -0.0
    got = jx.jit(lambda x: getattr(jnp, op)(x, axis=axis))(x)
    want = quiet(getattr(np, op), x.astype(f64), axis)
    g, w = got.astype(f64), want
    assert got.shape == want.shape and (np.isnan(g) == np.isnan(w)).all()
    assert np.allclose(g, w, rtol=4 * (2.0 ** -7 if dt == bf16 else np.finfo(dt).eps)
                       * max(shape), atol=0, equal_nan=True), np.max(np.abs(g - w))
    if dt in (f32, f64) and op in ("max", "min", "sum"):
        bits_equal(got, quiet(getattr(np, op), x, axis))      # the same order as NumPy


@pytest.mark.parametrize("shape", [(4, 7), (6, 100), (3, 1000)], ids=str)
def test_row_fused_softmax_keeps_specials(shape, rng):
    """max, then sum of exp, row by row in one fused group (the reduced values
    spilled for the next member): a NaN or +inf in a row makes the row NaN."""
    x = rng.standard_normal(shape).astype(f32)
    x[1, 2], x[2, -1] = np.nan, np.inf
    x[0, :] = -np.inf
    got = jx.jit(lambda x: jnp.exp(x - jnp.max(x, axis=1, keepdims=True)).sum(axis=1))(x)
    want = quiet(lambda: np.exp(x - np.max(x, axis=1, keepdims=True)).sum(axis=1))
    assert (np.isnan(got) == np.isnan(want)).all() and np.isnan(got[:3]).all()
    np.testing.assert_allclose(got[3:], want[3:], rtol=1e-5)


@pytest.mark.parametrize("name", ["mean", "var", "std"])
def test_sixteen_bit_mean_and_var_compute_in_float32(name):
    """JAX averages float16/bfloat16 in float32 and rounds once: 535 of 2000 f16 row
    means differed when the sum was rounded to 16 bits before the division."""
    x = np.random.default_rng(1).uniform(0, 200, (2000, 5)).astype(np.float16)
    f = getattr(jnp, name)
    for dt in [np.float16] + ([dtypes.bfloat16] if dtypes.bfloat16 is not None else []):
        xd = x.astype(dt)
        got = jx.jit(lambda v: f(v, axis=1))(xd)
        if name == "std":         # the square root of the 16-bit variance, as JAX
            ref = np.sqrt(np.var(xd.astype(np.float32), axis=1).astype(dt).astype(np.float32))
        else:
            ref = getattr(np, name)(xd.astype(np.float32), axis=1)
        ref = ref.astype(dt)
        assert got.dtype == dt
        np.testing.assert_array_equal(got.astype(np.float32), ref.astype(np.float32))
        jax = pytest.importorskip("jax")
        want = np.asarray(jax.jit(lambda v: getattr(jax.numpy, name)(v, axis=1))(xd))
        np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_matrix_vector_products_keep_numpys_zero_signs_and_infinities():
    """The matvec kernel's sum reassociates (vectorised) but has no `nsz`: a row of
    -0.0 times ones is +0.0 as in NumPy (the flag folded the +0.0 start away)."""
    a = np.array([[-0.0, -0.0], [np.inf, 1.0], [np.inf, -np.inf], [1e38, 1e38]], np.float32)
    v = np.array([1.0, 1.0], np.float32)
    got = jx.jit(lambda m, u: m @ u)(a, v)
    want = a @ v
    bits_equal(got, want)


@pytest.mark.parametrize("dt", ["bool", "int32", "float32", "float16"])
def test_reductions_over_no_dims_are_the_operand(dt):
    """A sum/max over a 0-d array (axis=None) or over axis=() reduces nothing: the
    value itself, -0.0 included, as JAX (this used to be an IndexError in codegen)."""
    vals = np.array([-0.0, 3.0], dtype=np.float32).astype(dt)
    for v in vals:
        x = np.asarray(v)
        for f in (lambda a: jnp.sum(a), lambda a: jnp.max(a), lambda a: jnp.prod(a, axis=())):
            got, ref = jx.jit(f)(x), f(x)
            assert got.shape == ref.shape
            bits_equal(got, ref)
    m = np.full((3, 5), -0.0, np.float32)
    bits_equal(jx.jit(lambda a: jnp.sum(a, axis=()))(m), m)
    jax = pytest.importorskip("jax")
    bits_equal(jx.jit(jnp.sum)(np.float32(-0.0)), np.asarray(jax.jit(jax.numpy.sum)(np.float32(-0.0))))


def test_sixteen_bit_sums_and_products_accumulate_in_float32():
    """XLA reduces float16/bfloat16 in float32 and rounds once; the NumPy reference
    of reduce_prod did it in float16, where 300 * 300 overflowed on the way."""
    cases = [(lambda a: jnp.prod(a, axis=1), np.array([[300.0, 300.0, 1 / 300.0, 2.0]])),
             (lambda a: jnp.sum(a, axis=1), np.array([[60000.0, 60000.0, -60000.0]]))]
    jax = __import__("jax") if _has_jax() else None
    for f, x in cases:
        x = x.astype(np.float16)
        eager, compiled = f(x), jx.jit(f)(x)
        bits_equal(compiled, eager)
        assert np.isfinite(eager.astype(np.float32)).all()
        if jax is not None:
            g = types.FunctionType(f.__code__, {**f.__globals__, "jnp": jax.numpy})
            bits_equal(compiled, np.asarray(jax.jit(g)(x)))


def _has_jax() -> bool:
    import importlib.util
    return importlib.util.find_spec("jax") is not None


def test_sorting_sixteen_bit_floats_puts_nans_last():
    """The NumPy reference sorted bfloat16 NaNs among the numbers (found by jx.fuzz);
    the compiled sort and JAX put them after +inf."""
    if dtypes.bfloat16 is None:
        pytest.skip("no bfloat16 without ml_dtypes")
    for dt in (np.float16, dtypes.bfloat16):
        x = np.array([1.87, np.nan, -2.0, 0.08, np.inf, -0.5, np.nan, -np.inf]).astype(dt)
        want = np.sort(x.astype(np.float32)).astype(dt)
        bits_equal(jnp.sort(x), want)
        bits_equal(jx.jit(jnp.sort)(x), want)
        np.testing.assert_array_equal(jnp.argsort(x), np.argsort(x.astype(np.float32), kind="stable"))
