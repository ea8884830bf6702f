"""jx.numpy against NumPy on the same inputs, each function run twice: eagerly on
NumPy arrays and traced (make_graph -> verify -> eval_graph). Values follow
NumPy; result dtypes follow JAX (weak Python scalars, int32/float32 defaults,
explicit 64-bit inputs kept), written out in each test."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import jx
import jx.numpy as jnp

F16, F32, F64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
I8, I32, I64, U8, U32 = (np.dtype(t) for t in ("int8", "int32", "int64", "uint8", "uint32"))
BOOL = np.dtype(bool)
TOL = {F16: 3e-3, F32: 2e-6, F64: 1e-12}


def leaves(x):
    return [y for e in x for y in leaves(e)] if isinstance(x, (list, tuple)) else [x]


def run(f, *args, eager=True):
    """(eager leaves, traced leaves, graph): f on NumPy arrays, and on tracers.
    eager=False for Python operators, which on NumPy arrays are NumPy's own."""
    graph = jx.verify(jx.make_graph(f)(*args))
    traced = jx.eval_graph(graph, *args)
    if not eager:
        return traced, traced, graph
    outs = leaves(f(*args))
    # eager results are jx arrays (JAX's jax.Array), never NumPy's own
    assert all(type(e) is jx.Array if hasattr(jx, "Array") else isinstance(e, np.ndarray)
               for e in outs), [type(e) for e in outs]
    return [np.asarray(e) for e in outs], traced, graph


def check(f, want, *args, dtype=None, tol=1.0, eager=True):
    """f eager and traced equals `want` (a NumPy result, or list); dtype is jx's, when
    it differs from NumPy's (int32 default, weak scalars)."""
    eager, traced, graph = run(f, *args, eager=eager)
    want = [np.asarray(w) for w in leaves(want)]
    assert len(eager) == len(traced) == len(want)
    for e, t, w, aval in zip(eager, traced, want, graph.out_avals):
        dt = np.dtype(dtype) if dtype is not None else w.dtype
        assert (e.dtype, t.dtype, aval.dtype) == (dt, dt, dt), (e.dtype, t.dtype, aval, dt)
        assert e.shape == t.shape == aval.shape == w.shape, (e.shape, t.shape, w.shape)
        for got in (e, t):
            if dt.kind == "f":
                r = TOL[dt] * tol
                np.testing.assert_allclose(got.astype(F64), w.astype(F64), rtol=r, atol=r,
                                           equal_nan=True)
            else:
                np.testing.assert_array_equal(got, w)
    return graph


def _default_float():
    return F64 if jx.config.jax_enable_x64 else F32


def rnd(rng, shape, dt, lo=None, hi=None):
    dt = np.dtype(dt)
    if dt == BOOL:
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        lo, hi = (-3.0, 3.0) if lo is None else (lo, hi)
        return np.asarray(rng.uniform(lo, hi, shape), dtype=dt)
    lo, hi = (-9 if dt.kind == "i" else 0, 10) if lo is None else (lo, hi)
    return np.asarray(rng.integers(lo, hi, shape), dtype=dt)


# ---------------------------------------------------------------- promotion

PROMOTIONS = [   # (lhs dtype or Python scalar, rhs, jx result dtype)
    (F32, 2.0, F32), (I32, 2.0, F32), (I32, F32, F32), (F32, F64, F64), (BOOL, 1, I32),
    (BOOL, I32, I32), (3, F16, F16), (F16, 2.5, F16), (I64, 2, I64), (I8, 3, I8),
    (U8, I8, np.dtype("int16")), (U32, I32, I32), (I64, F16, F16), (F64, 2.0, F64),
    (2, 3.0, F32), (True, 2, I32),
]


@pytest.mark.parametrize("op", ["add", "multiply", "subtract"])
@pytest.mark.parametrize("a,b,want", PROMOTIONS, ids=[f"{a}-{b}" for a, b, _ in PROMOTIONS])
def test_binary_promotion(op, a, b, want, rng):
    def arg(x, shape):
        return x if not isinstance(x, np.dtype) else rnd(rng, shape, x, 0, 5)
    x, y = arg(a, (3, 1)), arg(b, (4,))
    arrays = [v for v in (x, y) if isinstance(v, np.ndarray)]
    fn, ref = getattr(jnp, op), getattr(np, op)
    want_val = ref(np.asarray(x, F64) if a is not BOOL else x,
                   np.asarray(y, F64) if b is not BOOL else y).astype(want)
    if len(arrays) == 2:
        check(fn, want_val, x, y, dtype=want)
    elif len(arrays) == 1:   # the scalar stays a Python scalar: closed over, weak
        if isinstance(x, np.ndarray):
            check(lambda u: fn(u, y), want_val, x, dtype=want)
        else:
            check(lambda v: fn(x, v), want_val, y, dtype=want)
    else:
        out = fn(x, y)
        assert np.asarray(out).dtype == want and out == ref(x, y)


def test_to_float_promotions(rng):
    i = rnd(rng, (3, 4), I32, 1, 9)
    check(jnp.true_divide, np.true_divide(i, i[::-1]).astype(F32), i, i[::-1], dtype=F32)
    check(jnp.sqrt, np.sqrt(i).astype(F32), i, dtype=F32)
    check(jnp.exp, np.exp(i.astype(F64)).astype(F32), i, dtype=F32, tol=5)
    check(jnp.sin, np.sin(i.astype(F16)), i.astype(F16))
    check(lambda v: jnp.arctan2(v, 2), np.arctan2(i, 2).astype(F32), i, dtype=F32)
    h = i.astype(F16)
    check(lambda v: v / 3, (h.astype(F64) / 3).astype(F16), h, eager=False)


def test_tracer_operators(rng):
    x, y = rnd(rng, (3, 4), F32), rnd(rng, (4,), F32)
    i, j = rnd(rng, (3, 4), I32), rnd(rng, (4,), I32, 1, 4)
    b = rnd(rng, (3, 4), BOOL)
    check(lambda u, v: [u + v, u - v, u * v, u / v, -u, +u, abs(u), u ** 2, 2.0 ** v,
                        1 - u, 2 * v, 1 / v, u > v, u <= 0.5, u == v, u != v],
          [x + y, x - y, x * y, x / y, -x, x, abs(x), x ** 2, 2.0 ** y, 1 - x, 2 * y, 1 / y,
           x > y, x <= 0.5, x == y, x != y], x, y, eager=False)
    check(lambda u, v: [u // v, u % v, u & v, u | v, u ^ v, ~u, u << v, u >> v, 7 // v,
                        -7 % v, u ** 3],
          [i // j, i % j, i & j, i | j, i ^ j, ~i, i << j, i >> j, 7 // j, -7 % j, i ** 3],
          i, j, eager=False)
    check(lambda c: [c & True, ~c, c | c, c ^ True], [b & True, ~b, b | b, b ^ True], b,
          eager=False)
    m = rnd(rng, (4, 5), F32)
    check(lambda u, v: [u @ v, u.T, u.sum(), u.mean(axis=0), u.reshape(2, -1), u.astype(I32),
                        u.max(axis=1, keepdims=True), u.ravel(), u.clip(0, 1)],
          [x @ m, x.T, x.sum(), x.mean(axis=0), x.reshape(2, -1), x.astype(I32),
           x.max(axis=1, keepdims=True), x.ravel(), x.clip(0, 1)], x, m, tol=10, eager=False)


def test_numpy_array_meets_tracer(rng):
    c, x = rnd(rng, (3, 4), F32), rnd(rng, (4, 2), F32)
    check(lambda v: c @ v, c @ x, x, eager=False)
    check(lambda v: [c[:2] * v.T, c[:2] - v.T, np.float32(2) * v, v.T < c[:2]],
          [c[:2] * x.T, c[:2] - x.T, 2 * x, x.T < c[:2]], x, eager=False)


# ---------------------------------------------------------------- elementwise

UNARY = [   # (jnp name, NumPy oracle, input range)
    ("exp", np.exp, (-3, 3)), ("exp2", np.exp2, (-3, 3)), ("expm1", np.expm1, (-3, 3)),
    ("log", np.log, (0.1, 5)), ("log2", np.log2, (0.1, 5)), ("log10", np.log10, (0.1, 5)),
    ("log1p", np.log1p, (-0.5, 5)), ("sqrt", np.sqrt, (0, 5)),
    ("rsqrt", lambda v: 1 / np.sqrt(v), (0.1, 5)),
    ("sin", np.sin, (-6, 6)), ("cos", np.cos, (-6, 6)), ("tan", np.tan, (-1.4, 1.4)),
    ("arcsin", np.arcsin, (-0.99, 0.99)), ("arccos", np.arccos, (-0.99, 0.99)),
    ("arctan", np.arctan, (-5, 5)), ("sinh", np.sinh, (-3, 3)), ("cosh", np.cosh, (-3, 3)),
    ("tanh", np.tanh, (-4, 4)), ("arcsinh", np.arcsinh, (-30, 30)),
    ("arccosh", np.arccosh, (1, 30)), ("arctanh", np.arctanh, (-0.95, 0.95)),
    ("floor", np.floor, (-5, 5)), ("ceil", np.ceil, (-5, 5)), ("trunc", np.trunc, (-5, 5)),
    ("negative", np.negative, (-5, 5)), ("abs", np.abs, (-5, 5)), ("sign", np.sign, (-5, 5)),
    ("square", np.square, (-5, 5)), ("reciprocal", np.reciprocal, (0.5, 5)),
    ("cbrt", np.cbrt, (-8, 8)), ("deg2rad", np.deg2rad, (-360, 360)),
    ("rad2deg", np.rad2deg, (-7, 7)), ("fabs", np.fabs, (-5, 5)),
    ("signbit", np.signbit, (-5, 5)),
]


@pytest.mark.parametrize("dt", [F32, F64, F16])
@pytest.mark.parametrize("name,ref,dom", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, ref, dom, dt, rng):
    x = rnd(rng, (3, 5), dt, *dom)
    want = np.asarray(ref(x.astype(F64)))
    want = want.astype(dt) if want.dtype != BOOL else want
    check(getattr(jnp, name), want, x, tol=20 if dt == F32 else 2)


@pytest.mark.x64
def test_rounding_is_half_to_even(rng):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49, -0.51, 7.0], F32)
    check(jnp.round, np.round(x), x)
    check(jnp.rint, np.rint(x), x)
    check(jnp.around, np.around(x), x)
    y = rnd(rng, (20,), F64, -50, 50)
    check(lambda v: jnp.round(v, 1), np.round(y, 1), y)
    check(lambda v: jnp.round(v, -1), np.round(y, -1), y)
    i = np.array([-3, 7, 12, 15, 25, -15, -25, 14, 150, -250], I32)
    check(lambda v: [jnp.round(v), jnp.round(v, -1), jnp.round(v, -2), jnp.floor(v),
                     jnp.ceil(v), jnp.trunc(v)],
          [i, np.round(i, -1), np.round(i, -2), i, i, i], i)


@pytest.mark.parametrize("dt", [I32, I64])
def test_floor_divide_and_remainder_ints(dt):
    a = np.array([7, -7, 7, -7, 0, 6, -6, 1, -1], dt)
    b = np.array([2, 2, -2, -2, 3, -3, 4, -4, 3], dt)
    check(jnp.floor_divide, np.floor_divide(a, b), a, b)
    check(jnp.remainder, np.remainder(a, b), a, b)
    check(jnp.mod, np.mod(a, b), a, b)
    check(jnp.fmod, np.fmod(a, b), a, b)
    check(lambda u: jnp.divmod(u, -3), list(np.divmod(a, -3)), a)
    # by zero, JAX's formulas over XLA's division (x / 0 = -1): floor_divide is -1
    # for x == 0 and -2 otherwise, remainder is 0 (NumPy: 0 and 0, with a warning)
    zero = np.zeros_like(a)
    check(jnp.floor_divide, np.where(a == 0, -1, -2).astype(dt), a, zero)
    check(jnp.remainder, np.zeros_like(a), a, zero)


@pytest.mark.x64
def test_floor_divide_and_remainder_floats(rng):
    a = np.concatenate([rnd(rng, (30,), F64, -10, 10), [1.0, -1.0, 5.5, -5.5, 0.0]])
    b = np.concatenate([rnd(rng, (30,), F64, -3, 3), [0.1, 0.1, -2.0, 2.0, -3.0]])
    check(jnp.floor_divide, np.floor_divide(a, b), a, b)
    check(jnp.remainder, np.remainder(a, b), a, b)
    check(jnp.fmod, np.fmod(a, b), a, b)
    f = a.astype(F32), b.astype(F32)
    check(jnp.floor_divide, np.floor_divide(*f), *f)
    check(jnp.remainder, np.remainder(*f), *f, tol=10)


BINARY = [
    ("maximum", np.maximum), ("minimum", np.minimum), ("power", np.power),
    ("arctan2", np.arctan2), ("hypot", np.hypot), ("logaddexp", np.logaddexp),
    ("logaddexp2", np.logaddexp2), ("copysign", np.copysign), ("equal", np.equal),
    ("not_equal", np.not_equal), ("less", np.less), ("greater_equal", np.greater_equal),
    ("heaviside", np.heaviside), ("float_power", np.float_power),
]


@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcasting(name, ref, rng):
    shapes = [((3, 1, 4), (5, 1)), ((), (3,)), ((2, 3), (2, 3)), ((4,), ())]
    for sa, sb in shapes:
        x = rnd(rng, sa, F32, 0.2, 3) if name in ("power", "float_power") else rnd(rng, sa, F32)
        y = rnd(rng, sb, F32)
        want = np.asarray(ref(x.astype(F64), y.astype(F64)))
        want = want if want.dtype == BOOL else want.astype(F32)
        check(getattr(jnp, name), want, x, y, tol=10)


def test_logaddexp_infinities():
    x = np.array([-np.inf, np.inf, -np.inf, 1.0, np.nan, 0.0], F32)
    y = np.array([-np.inf, np.inf, 2.0, -np.inf, 1.0, 0.0], F32)
    with np.errstate(invalid="ignore"):
        want, want2 = np.logaddexp(x, y), np.logaddexp2(x, y)
    check(jnp.logaddexp, want, x, y)
    check(jnp.logaddexp2, want2, x, y)


def test_isnan_isinf_nan_to_num():
    x = np.array([np.nan, np.inf, -np.inf, 1.0, -0.0, 3e38], F32)
    check(lambda v: [jnp.isnan(v), jnp.isinf(v), jnp.isfinite(v), jnp.isposinf(v),
                     jnp.isneginf(v)],
          [np.isnan(x), np.isinf(x), np.isfinite(x), np.isposinf(x), np.isneginf(x)], x)
    check(jnp.nan_to_num, np.nan_to_num(x), x)
    check(lambda v: jnp.nan_to_num(v, nan=-1.0, posinf=9.0, neginf=-9.0),
          np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), x)
    i = np.array([1, -2], I32)
    check(lambda v: [jnp.isnan(v), jnp.isinf(v), jnp.isfinite(v), jnp.nan_to_num(v)],
          [np.isnan(i), np.isinf(i), np.isfinite(i), i], i)


def test_where_and_clip(rng):
    c, x, y = rnd(rng, (3, 1), BOOL), rnd(rng, (3, 4), F32), rnd(rng, (4,), I32)
    check(jnp.where, np.where(c, x, y).astype(F32), c, x, y)
    check(lambda u, v: jnp.where(u, v, 0.5), np.where(c, x, 0.5).astype(F32), c, x)
    check(lambda v: jnp.where(v > 0, v, 0), np.where(y > 0, y, 0).astype(I32), y)
    check(lambda v: jnp.where(v, 1, 2), np.where(y, 1, 2).astype(I32), y)
    check(lambda v: jnp.clip(v, -1, 1), np.clip(x, -1, 1), x)
    check(lambda v: jnp.clip(v, None, 0.5), np.clip(x, None, 0.5), x)
    check(lambda v: jnp.clip(v, min=-2), np.clip(x, -2, None), x)
    check(lambda v: jnp.clip(v, 2, 5), np.clip(y, 2, 5), y)
    check(lambda u, v: jnp.clip(u, v, 1.0), np.clip(x, y, 1.0).astype(F32), x, y)
    with pytest.raises(TypeError, match="needs x and y"):
        jnp.where(c)


def test_logical_and_bitwise(rng):
    a, b = rnd(rng, (10,), I32), rnd(rng, (10,), I32)
    check(lambda u, v: [jnp.logical_and(u, v), jnp.logical_or(u, v), jnp.logical_xor(u, v),
                        jnp.logical_not(u)],
          [np.logical_and(a, b), np.logical_or(a, b), np.logical_xor(a, b), np.logical_not(a)],
          a, b)
    s = rnd(rng, (10,), I32, 0, 8)
    check(lambda u, v: [jnp.bitwise_and(u, v), jnp.bitwise_or(u, v), jnp.bitwise_xor(u, v),
                        jnp.invert(u), jnp.left_shift(u, v), jnp.right_shift(u, v)],
          [a & s, a | s, a ^ s, ~a, a << s, a >> s], a, s)
    u = rnd(rng, (10,), U32)
    check(lambda v: jnp.right_shift(v, 1), u >> 1, u)


# ---------------------------------------------------------------- reductions

def jx_sum_dtype(dt):
    dt = np.dtype(dt)
    if dt == BOOL or (dt.kind == "i" and dt.itemsize < 4):
        return I32
    return U32 if dt.kind == "u" and dt.itemsize < 4 else dt


REDUCERS = [   # (name, NumPy oracle, jx result dtype from the input dtype)
    ("sum", np.sum, jx_sum_dtype), ("prod", np.prod, jx_sum_dtype),
    ("max", np.max, lambda d: d), ("min", np.min, lambda d: d),
    ("mean", np.mean, lambda d: d if d.kind == "f" else _default_float()),
    ("var", np.var, lambda d: d if d.kind == "f" else _default_float()),
    ("std", np.std, lambda d: d if d.kind == "f" else _default_float()),
    ("any", np.any, lambda d: BOOL), ("all", np.all, lambda d: BOOL),
]
AXES = [None, 0, -1, 1, (0, 2), (2, 0, 1), ()]


@pytest.mark.parametrize("dt", [F32, F64, I32, I64, U8, BOOL, F16])
@pytest.mark.parametrize("name,ref,rdt", REDUCERS, ids=[r[0] for r in REDUCERS])
def test_reductions(name, ref, rdt, dt, rng):
    x = rnd(rng, (2, 3, 4), dt, *((0.5, 1.5) if name == "prod" and dt.kind == "f" else
                                  (1, 3) if name == "prod" else (None, None)))
    for axis in AXES:
        for keepdims in (False, True):
            if name in ("var", "std", "mean") and axis == ():
                continue
            wide = x.astype(F64) if dt.kind == "f" or name in ("mean", "var", "std") else x
            want = np.asarray(ref(wide, axis=axis, keepdims=keepdims)).astype(rdt(dt))
            check(lambda v: getattr(jnp, name)(v, axis=axis, keepdims=keepdims), want, x,
                  tol=30)


def test_reduction_options(rng):
    x = rnd(rng, (3, 4), F32)
    check(lambda v: jnp.max(v, axis=1, initial=0.5), np.max(x, axis=1, initial=0.5), x)
    with jx.enable_x64():
        check(lambda v: jnp.sum(v, axis=0, dtype=jnp.float64), np.sum(x.astype(F64), axis=0), x)
    check(lambda v: jnp.var(v, axis=1, ddof=1), np.var(x.astype(F64), 1, ddof=1).astype(F32),
          x, tol=5)
    check(lambda v: jnp.std(v, ddof=1, keepdims=True),
          np.std(x.astype(F64), ddof=1, keepdims=True).astype(F32), x, tol=5)
    check(jnp.amax, np.amax(x), x)
    check(jnp.amin, np.amin(x), x)
    i = rnd(rng, (3, 4), I8)
    check(jnp.sum, np.sum(i).astype(I32), i, dtype=I32)


@pytest.mark.parametrize("dt", [F32, I32, BOOL])
def test_argmax_argmin(dt, rng):
    x = rnd(rng, (2, 3, 4), dt, *((-2, 3) if dt == I32 else (None, None)))
    for axis in (None, 0, 1, -1):
        for keepdims in (False, True):
            for name in ("argmax", "argmin"):
                want = getattr(np, name)(x, axis=axis, keepdims=keepdims).astype(I32)
                check(lambda v: getattr(jnp, name)(v, axis=axis, keepdims=keepdims), want, x)


@pytest.mark.parametrize("dt", [F32, I32, BOOL, U8])
def test_cumulative(dt, rng):
    x = rnd(rng, (2, 3, 4), dt, *((1, 3) if dt.kind in "iu" else (None, None)))
    out = I32 if dt == BOOL else dt      # as JAX: running sums keep narrow ints (wrapping)
    for axis in (None, 0, 1, -1):
        for name in ("cumsum", "cumprod"):
            wide = x.astype(F64) if dt.kind == "f" else x.astype(I64)
            want = getattr(np, name)(wide, axis=axis).astype(out)
            check(lambda v: getattr(jnp, name)(v, axis=axis), want, x, tol=10)


# ---------------------------------------------------------------- creation

def test_creation_functions():
    const = [   # (jx result, NumPy equivalent with jx's dtype)
        (jnp.zeros((2, 3)), np.zeros((2, 3), F32)),
        (jnp.zeros(4, dtype=jnp.int32), np.zeros(4, I32)),
        (jnp.ones((2,), dtype=bool), np.ones(2, bool)),
        (jnp.ones(3, dtype=float), np.ones(3, F32)),
        (jnp.full((2, 2), 7), np.full((2, 2), 7, I32)),
        (jnp.full((2,), 1.5), np.full(2, 1.5, F32)),
        (jnp.full(3, 2, dtype=jnp.float16), np.full(3, 2, F16)),
        (jnp.empty((0, 2)), np.empty((0, 2), F32)),
        (jnp.arange(5), np.arange(5, dtype=I32)),
        (jnp.arange(2, 11, 3), np.arange(2, 11, 3, dtype=I32)),
        (jnp.arange(0, 1, 0.25), np.arange(0, 1, 0.25).astype(F32)),
        (jnp.arange(5.0), np.arange(5, dtype=F32)),
        (jnp.arange(10, 0, -3), np.arange(10, 0, -3, dtype=I32)),
        (jnp.linspace(0, 1, 5), np.linspace(0, 1, 5, dtype=F32)),
        (jnp.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, False, dtype=F32)),
        (jnp.linspace(-3, 10, 6, dtype=jnp.int32), np.linspace(-3, 10, 6, dtype=I32)),
        (jnp.eye(3), np.eye(3, dtype=F32)),
        (jnp.eye(2, 4, k=1, dtype=jnp.int32), np.eye(2, 4, k=1, dtype=I32)),
        (jnp.identity(2), np.identity(2, F32)),
        (jnp.tri(3, k=-1), np.tri(3, k=-1, dtype=F32)),
        (jnp.array([1, 2, 3]), np.array([1, 2, 3], I32)),
        (jnp.array([1.0, 2]), np.array([1, 2], F32)),
        (jnp.array([[True, False]]), np.array([[True, False]])),
        (jnp.array(np.arange(3, dtype=I64)), np.arange(3, dtype=I32)),    # 32-bit mode
        (jnp.asarray(3.0), np.asarray(3.0, F32)),
        (jnp.asarray(7), np.asarray(7, I32)),
        (jnp.asarray([1, 2], dtype=jnp.float16), np.array([1, 2], F16)),
    ]
    with jx.enable_x64():
        const += [(jnp.asarray(2**40), np.asarray(2**40, I64)),
                  (jnp.arange(4, dtype=jnp.float64), np.arange(4, dtype=F64)),
                  (jnp.array(np.arange(3, dtype=I64)), np.arange(3, dtype=I64))]
    for got, want in const:
        # jx arrays, as JAX's jax.Array (not NumPy's: .at works, promotion is JAX's)
        assert type(got) is jx.Array if hasattr(jx, "Array") else isinstance(got, np.ndarray)
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        np.testing.assert_array_equal(got, want)


@pytest.mark.x64
def test_like_functions(rng):
    for dt in (F16, F32, F64, I32, I64, BOOL):
        x = rnd(rng, (2, 3), dt)
        check(lambda v: [jnp.zeros_like(v), jnp.ones_like(v), jnp.full_like(v, 1),
                         jnp.empty_like(v).shape == (2, 3) and jnp.zeros_like(v)],
              [np.zeros_like(x), np.ones_like(x), np.full_like(x, 1), np.zeros_like(x)], x)
        check(lambda v: [jnp.zeros_like(v, dtype=jnp.int32), jnp.ones_like(v, shape=(4,)),
                         jnp.full_like(v, 2.5, dtype=jnp.float32)],
              [np.zeros((2, 3), I32), np.ones(4, dt), np.full((2, 3), 2.5, F32)], x)


def test_creation_from_traced_values(rng):
    x, s = rnd(rng, (3,), F32), np.float32(2.5)
    check(lambda v: jnp.array([v, v * 2]), np.array([x, x * 2]), x)
    check(lambda v: jnp.stack([v, 1 - v], axis=1), np.stack([x, 1 - x], axis=1), x)
    check(lambda v: jnp.asarray(v, dtype=jnp.int32), x.astype(I32), x)
    check(lambda v: jnp.full((2, 3), v), np.full((2, 3), s), s)
    check(lambda v: jnp.linspace(0.0, v, 5), np.linspace(0, s, 5, dtype=F32), s)
    check(lambda v: jnp.linspace(v, 2 * v, 4, endpoint=False),
          np.linspace(s, 2 * s, 4, endpoint=False, dtype=F32), s)
    check(lambda v: jnp.zeros(3) + v, np.zeros(3, F32) + x, x)
    with pytest.raises(TypeError, match="static"):
        jx.make_graph(lambda n: jnp.arange(n))(jx.i32[()])


# ---------------------------------------------------------------- products

@pytest.mark.x64
def test_dot_and_matmul(rng):
    a, b = rnd(rng, (4,), F32), rnd(rng, (4,), F32)
    m, n = rnd(rng, (3, 4), F32), rnd(rng, (4, 5), F32)
    p, q = rnd(rng, (2, 1, 3, 4), F32), rnd(rng, (5, 4, 2), F32)
    t = rnd(rng, (2, 3, 4), F32)
    cases = [(a, b), (m, a), (a, n), (m, n), (p, q), (t, n), (np.float32(2.0), m)]
    for x, y in cases:
        check(jnp.dot, np.dot(x, y), x, y, tol=5)
        if x.ndim and y.ndim:
            check(jnp.matmul, np.matmul(x, y), x, y, tol=5)
            check(lambda u, v: u @ v, x @ y, x, y, tol=5, eager=False)
    check(jnp.dot, np.dot(t, q), t, q, tol=5)       # N-d dot: last dim with dim -2
    i, j = rnd(rng, (3, 4), I32), rnd(rng, (4, 2), I32)
    check(jnp.matmul, i @ j, i, j)
    check(jnp.matmul, (i @ m.T.astype(F64)).astype(F64), i, m.T.astype(F64), tol=5)
    check(jnp.vdot, np.vdot(m, m), m, m, tol=5)
    check(jnp.inner, np.inner(m, m), m, m, tol=5)
    check(jnp.outer, np.outer(m, a), m, a)
    with pytest.raises(jx.ShapeError, match="contraction"):
        jnp.matmul(m, m)
    with pytest.raises(jx.ShapeError):
        jx.make_graph(lambda u, v: u @ v)(jx.f32[3, 4], jx.f32[3, 4])


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ijk,jkl->il", [(2, 3, 4), (3, 4, 5)]),
    ("ij,jk,kl->li", [(2, 3), (3, 4), (4, 2)]), ("i,i", [(5,), (5,)]), ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]), ("ij->j", [(3, 4)]), ("ij->", [(3, 4)]), ("ji", [(3, 4)]),
    ("ij", [(3, 4)]), ("ijk->kji", [(2, 3, 4)]), ("ij,ik->ijk", [(3, 4), (3, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]), ("ab,cd->", [(2, 3), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("i...,i->...", [(3, 2, 2), (3,)]),
    ("b i, i j -> b j", [(2, 3), (3, 4)]),
]


@pytest.mark.x64
@pytest.mark.parametrize("spec,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum(spec, shapes, rng):
    ops = [rnd(rng, s, F64) for s in shapes]
    check(lambda *xs: jnp.einsum(spec, *xs), np.einsum(spec.replace(" ", ""), *ops), *ops)


def test_einsum_errors(rng):
    x = rnd(rng, (3, 4), F32)
    with pytest.raises(jx.ShapeError, match="subscript"):
        jnp.einsum("ijk,jk", x, x)
    with pytest.raises(jx.ShapeError):
        jnp.einsum("ij,ij->ij", x, x.T)


@pytest.mark.x64
def test_tensordot(rng):
    a, b = rnd(rng, (3, 4, 5), F64), rnd(rng, (4, 3, 2), F64)
    c = rnd(rng, (5, 2), F64)
    check(lambda u, v: jnp.tensordot(u, v, axes=([1, 0], [0, 1])),
          np.tensordot(a, b, axes=([1, 0], [0, 1])), a, b)
    check(lambda u, v: jnp.tensordot(u, v, axes=1), np.tensordot(a, c, axes=1), a, c)
    check(lambda u, v: jnp.tensordot(u, v, axes=0), np.tensordot(c, c, axes=0), c, c)
    check(lambda u, v: jnp.tensordot(u, v, axes=(2, 0)), np.tensordot(a, c, axes=(2, 0)),
          a, c)
    check(lambda u: jnp.tensordot(u, u, axes=2), np.tensordot(c, c, axes=2), c)


# ---------------------------------------------------------------- manipulation

def test_reshape_and_axes(rng):
    x = rnd(rng, (2, 3, 4), F32)
    check(lambda v: [jnp.reshape(v, (4, -1)), jnp.reshape(v, -1), jnp.reshape(v, (2, 3, 4)),
                     jnp.ravel(v), jnp.transpose(v), jnp.transpose(v, (1, 0, 2)),
                     jnp.transpose(v, (-1, 0, 1)), jnp.swapaxes(v, 0, 2),
                     jnp.moveaxis(v, 0, -1), jnp.moveaxis(v, [0, 1], [-1, 0]),
                     jnp.expand_dims(v, 1), jnp.expand_dims(v, (0, -1)),
                     jnp.squeeze(jnp.expand_dims(v, (0, 3))), jnp.atleast_2d(v[0, 0]),
                     jnp.flip(v), jnp.flip(v, 1), jnp.flip(v, (0, 2))],
          [x.reshape(4, -1), x.reshape(-1), x, x.ravel(), x.T, x.transpose(1, 0, 2),
           x.transpose(2, 0, 1), x.swapaxes(0, 2), np.moveaxis(x, 0, -1),
           np.moveaxis(x, [0, 1], [-1, 0]), x[:, None], x[None, ..., None], x,
           np.atleast_2d(x[0, 0]), np.flip(x), np.flip(x, 1), np.flip(x, (0, 2))], x)
    y = rnd(rng, (1, 3, 1), I32)
    check(lambda v: [jnp.squeeze(v), jnp.squeeze(v, 0), jnp.squeeze(v, (0, -1)),
                     jnp.atleast_1d(v[0, 0, 0])],
          [y.squeeze(), y.squeeze(0), y.squeeze((0, 2)), np.atleast_1d(y[0, 0, 0])], y)
    with pytest.raises(jx.ShapeError):
        jnp.reshape(x, (5, -1))
    with pytest.raises(jx.ShapeError):
        jnp.squeeze(x, 0)
    with pytest.raises(jx.ShapeError, match="out of bounds"):
        jnp.transpose(x, (0, 1, 3))


def test_join_and_split(rng):
    a, b = rnd(rng, (2, 3), F32), rnd(rng, (2, 3), I32)
    c = rnd(rng, (4, 3), F32)
    check(lambda u, v, w: [jnp.concatenate([u, v]), jnp.concatenate([u, v], axis=1),
                           jnp.concatenate([u, w], axis=0), jnp.concatenate([u, v], None),
                           jnp.stack([u, v]), jnp.stack([u, v], axis=-1),
                           jnp.hstack([u, v]), jnp.vstack([u, w]), jnp.concatenate([u])],
          [np.concatenate([a, b]).astype(F32), np.concatenate([a, b], 1).astype(F32),
           np.concatenate([a, c]), np.concatenate([a, b], None).astype(F32),
           np.stack([a, b]).astype(F32), np.stack([a, b], -1).astype(F32),
           np.hstack([a, b]).astype(F32), np.vstack([a, c]), a], a, b, c)
    x = rnd(rng, (6, 4), F32)
    check(lambda v: jnp.split(v, 3), np.split(x, 3), x)
    check(lambda v: jnp.split(v, [1, 3], axis=1), np.split(x, [1, 3], axis=1), x)
    check(lambda v: jnp.split(v, [2, 9]), np.split(x, [2, 9]), x)
    check(lambda v: jnp.array_split(v, 4), np.array_split(x, 4), x)
    with pytest.raises(jx.ShapeError, match="equal division"):
        jnp.split(x, 4)
    with pytest.raises(jx.ShapeError):
        jnp.stack([a, c])
    with pytest.raises(jx.ShapeError):
        jnp.concatenate([a, c], axis=1)


def test_pad_tile_repeat_roll(rng):
    x = rnd(rng, (2, 3), I32)
    check(lambda v: [jnp.pad(v, 1), jnp.pad(v, ((1, 2), (0, 1)), constant_values=7),
                     jnp.pad(v, (2, 1)), jnp.pad(v, ((1,), (2,))), jnp.pad(v, [[0, 0], [3, 0]])],
          [np.pad(x, 1), np.pad(x, ((1, 2), (0, 1)), constant_values=7), np.pad(x, (2, 1)),
           np.pad(x, ((1,), (2,))), np.pad(x, [[0, 0], [3, 0]])], x)
    for mode in ("edge", "reflect", "symmetric", "wrap"):
        check(lambda v: jnp.pad(v, ((1, 2), (2, 1)), mode=mode),
              np.pad(x, ((1, 2), (2, 1)), mode=mode), x)
    f = rnd(rng, (3,), F32)
    check(lambda v: jnp.pad(v, 2, constant_values=0.5), np.pad(f, 2, constant_values=0.5), f)
    check(lambda v: [jnp.tile(v, 2), jnp.tile(v, (2, 1)), jnp.tile(v, (2, 1, 3))],
          [np.tile(x, 2), np.tile(x, (2, 1)), np.tile(x, (2, 1, 3))], x)
    check(lambda v: [jnp.repeat(v, 2), jnp.repeat(v, 3, axis=0), jnp.repeat(v, 2, axis=-1),
                     jnp.repeat(v, [1, 0, 2], axis=1)],
          [np.repeat(x, 2), np.repeat(x, 3, axis=0), np.repeat(x, 2, axis=-1),
           np.repeat(x, [1, 0, 2], axis=1)], x)
    check(lambda v: [jnp.roll(v, 1), jnp.roll(v, -1, axis=1), jnp.roll(v, 5, axis=0),
                     jnp.roll(v, (1, 2), axis=(0, 1)), jnp.roll(v, 0, axis=1)],
          [np.roll(x, 1), np.roll(x, -1, axis=1), np.roll(x, 5, axis=0),
           np.roll(x, (1, 2), axis=(0, 1)), x], x)


def test_broadcast_functions(rng):
    x, y = rnd(rng, (3, 1), F32), rnd(rng, (4,), F32)
    check(lambda v: jnp.broadcast_to(v, (2, 3, 4)), np.broadcast_to(x, (2, 3, 4)), x)
    check(lambda u, v: jnp.broadcast_arrays(u, v), list(np.broadcast_arrays(x, y)), x, y)
    with pytest.raises(jx.ShapeError, match="broadcast"):
        jnp.broadcast_to(x, (3, 4, 2))
    with pytest.raises(jx.ShapeError, match="cannot be broadcast"):
        jnp.add(x, rnd(rng, (2, 4), F32)[:, None, :].reshape(2, 1, 4)[:, :, :3].repeat(2, 1))


@settings(max_examples=25, deadline=None)
@given(hs.lists(hs.integers(1, 3), min_size=0, max_size=3),
       hs.lists(hs.booleans(), min_size=3, max_size=3), hs.sampled_from(["add", "maximum"]))
def test_broadcasting_property(shape, drop, op):
    """Any pair of NumPy-broadcastable shapes gives NumPy's result, eager and traced."""
    other = [1 if d else s for s, d in zip(shape, drop)][int(drop[0]):]   # leading dim gone
    r = np.random.default_rng(len(shape))
    x = r.standard_normal(shape).astype(F32)
    y = r.standard_normal(other).astype(F32)
    check(getattr(jnp, op), getattr(np, op)(x, y), x, y)


# ---------------------------------------------------------------- more of the API

def test_nan_aware_and_closeness_reductions(rng):
    x = rnd(rng, (3, 4), F32)
    x[0, 1] = x[2, 3] = np.nan
    x[1] = np.nan
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        want_max, want_mean = np.nanmax(x, axis=1), np.nanmean(x, axis=1)
    check(lambda v: [jnp.nansum(v), jnp.nansum(v, axis=0), jnp.nanprod(v, axis=1),
                     jnp.nanmax(v, axis=1), jnp.nanmin(v), jnp.nanmean(v, axis=1)],
          [np.nansum(x), np.nansum(x, axis=0), np.nanprod(x, axis=1), want_max,
           np.nanmin(x), want_mean], x, tol=5)
    y = x + np.float32(1e-7)
    y[0, 0] = np.inf
    check(lambda u, v: [jnp.isclose(u, v), jnp.isclose(u, v, equal_nan=True),
                        jnp.isclose(u, v, rtol=0, atol=0), jnp.allclose(u, u, equal_nan=True),
                        jnp.allclose(u, v)],
          [np.isclose(x, y), np.isclose(x, y, equal_nan=True), np.isclose(x, y, 0, 0),
           np.allclose(x, x, equal_nan=True), np.allclose(x, y)], x, y)
    i = rnd(rng, (3, 4), I32, -1, 2)
    check(lambda v: [jnp.count_nonzero(v), jnp.count_nonzero(v, axis=0), jnp.ptp(v, axis=1)],
          [np.asarray(np.count_nonzero(i), I32), np.count_nonzero(i, axis=0).astype(I32),
           np.ptp(i, axis=1)], i)
    w = rnd(rng, (4,), F32, 0.1, 1)
    check(lambda v, u: [jnp.average(v), jnp.average(v, axis=1, weights=u),
                        jnp.average(v, axis=0, weights=v * 0 + 1)],
          [np.average(x[2:]), np.average(x[2:], axis=1, weights=w),
           np.average(x[2:], axis=0)], x[2:], w, tol=5)


def test_diagonals_and_triangles(rng):
    m, t = rnd(rng, (3, 5), F32), rnd(rng, (2, 4, 4), I32)
    check(lambda v: [jnp.diagonal(v), jnp.diagonal(v, 2), jnp.diagonal(v, -1),
                     jnp.diagonal(v, 7), jnp.trace(v), jnp.trace(v, 1), jnp.diag(v),
                     jnp.diag(v, -2), jnp.tril(v), jnp.triu(v, 1), jnp.tril(v, -1)],
          [np.diagonal(m), np.diagonal(m, 2), np.diagonal(m, -1), np.diagonal(m, 7),
           np.trace(m), np.trace(m, 1), np.diag(m), np.diag(m, -2), np.tril(m),
           np.triu(m, 1), np.tril(m, -1)], m)
    check(lambda v: [jnp.diagonal(v, 0, 1, 2), jnp.diagonal(v, 1, 2, 0), jnp.triu(v),
                     jnp.trace(v, 0, 1, 2)],
          [np.diagonal(t, 0, 1, 2), np.diagonal(t, 1, 2, 0), np.triu(t),
           np.trace(t, 0, 1, 2).astype(I32)], t)
    d = rnd(rng, (3,), F32)
    check(lambda v: [jnp.diag(v), jnp.diag(v, 1), jnp.diag(v, -2)],
          [np.diag(d), np.diag(d, 1), np.diag(d, -2)], d)
    sq = rnd(rng, (3, 3), F64)
    for spec, ops in [("ii", [sq]), ("ii->i", [sq]), ("bii->bi", [t.astype(F64)]),
                      ("ij,jj->i", [sq, sq]), ("iij->j", [np.stack([sq] * 3, 2)])]:
        with jx.enable_x64():
            check(lambda *xs: jnp.einsum(spec, *xs), np.einsum(spec, *ops), *ops)


@pytest.mark.x64
def test_more_manipulation(rng):
    x, b = rnd(rng, (3, 4), I32), rnd(rng, (5,), BOOL)
    check(lambda v: [jnp.diff(v), jnp.diff(v, 2), jnp.diff(v, axis=0),
                     jnp.diff(v, prepend=0, append=9), jnp.fliplr(v), jnp.flipud(v),
                     jnp.append(v, v), jnp.append(v, v[:1] * 0, axis=0), jnp.atleast_3d(v)],
          [np.diff(x), np.diff(x, 2), np.diff(x, axis=0),
           np.diff(x, prepend=0, append=9).astype(I32), np.fliplr(x), np.flipud(x),
           np.append(x, x), np.append(x, x[:1] * 0, axis=0), np.atleast_3d(x)], x)
    check(jnp.diff, np.diff(b), b)
    p, q, r = rnd(rng, (3,), F32), rnd(rng, (2,), F32), rnd(rng, (4,), F32)
    check(lambda *v: [*jnp.meshgrid(*v), *jnp.meshgrid(*v, indexing="ij"),
                      *jnp.meshgrid(v[0], v[1], sparse=True)],
          [*np.meshgrid(p, q, r), *np.meshgrid(p, q, r, indexing="ij"),
           *np.meshgrid(p, q, sparse=True)], p, q, r)
    check(lambda u, v: [jnp.column_stack([u, u]), jnp.dstack([u, u]), jnp.atleast_3d(u),
                        jnp.kron(u, v), jnp.kron(jnp.reshape(u, (3, 1)), jnp.reshape(v, (1, 2)))],
          [np.column_stack([p, p]), np.dstack([p, p]), np.atleast_3d(p), np.kron(p, q),
           np.kron(p.reshape(3, 1), q.reshape(1, 2))], p, q)
    u3, v3 = rnd(rng, (4, 3), F64), rnd(rng, (3,), F64)
    check(lambda u, v: [jnp.cross(u, v), jnp.cross(u[:, :2], v[:2]), jnp.cross(u, v[:2]),
                        jnp.cross(u.T, u.T, axis=0)],
          [np.cross(u3, v3), u3[:, 0] * v3[1] - u3[:, 1] * v3[0],   # 2-d: the z component
           np.cross(u3, np.append(v3[:2], 0)), np.cross(u3.T, u3.T, axis=0)], u3, v3)
    check(lambda v: jnp.kron(v, v), np.kron(x, x), x)


def test_python_int_too_big_for_the_array():
    with pytest.raises(OverflowError, match="too large to convert to int32"):
        jnp.add(np.ones(3, I32), 2**40)             # 32-bit mode: as JAX's
    with jx.enable_x64():
        with pytest.raises(OverflowError, match="does not fit in int32"):
            jnp.add(np.ones(3, I32), 2**40)
        check(lambda v: jnp.add(v, 2**40), np.ones(3, I64) + 2**40, np.ones(3, I64))
