"""jx.Array, JAX's jax.Array for concrete values: immutable, zero-copy over a
read-only NumPy buffer, operators with JAX's promotion and weak types, the same
method table as tracers, `.at` updates, repr, pickling; jit and pmap return it,
artifacts loaded by jx.runtime keep returning NumPy arrays."""
from __future__ import annotations

import copy
import operator
import pickle
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import core
from jx.array import Array

SHAPES = [(), (3,), (2, 3)]
DTYPES = ["bool", "int8", "uint8", "int32", "float16", "float32"]


def rand(rng, shape, dtype):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(1, 6, shape).astype(dt)          # positive: no 0 divisors
    return (rng.random(shape) * 4 + 0.5).astype(dt)


def concrete(x) -> Array:
    out = jnp.asarray(x)
    assert type(out) is Array
    return out


def jax_or_skip():
    return pytest.importorskip("jax")


# ---------------------------------------------------------------- immutability

def test_setitem_is_an_error_pointing_to_at(rng):
    x = concrete(rand(rng, (3,), "float32"))
    with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
        x[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(x)[0] = 1.0
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_inplace_operators_rebind(rng, dtype):
    a = rand(rng, (4,), dtype)
    x = concrete(a)
    y = x
    y += 1
    y *= 2
    assert y is not x
    np.testing.assert_array_equal(np.asarray(x), a)            # the original untouched
    np.testing.assert_array_equal(np.asarray(y), (a + 1) * 2)

    def step(pos, vel):
        pos += vel * 0.5            # rebinding a parameter never reaches the caller's value
        return pos
    pos = concrete(rand(rng, (4,), "float32"))
    before = np.array(pos)
    for _ in range(3):
        out = step(pos, pos)
    np.testing.assert_array_equal(np.asarray(pos), before)
    np.testing.assert_allclose(np.asarray(out), before * 1.5, rtol=1e-6)


def test_eager_results_are_immutable_even_over_a_callers_numpy_array(rng):
    a = rand(rng, (2, 3), "float32")
    r = jnp.reshape(a, (3, 2))               # NumPy's reshape would be a view of a
    assert type(r) is Array
    a[0, 0] = 100.0                          # the caller keeps a writable array ...
    assert np.asarray(r)[0, 0] != 100.0      # ... and the Array does not see the write
    assert a.flags.writeable


# ---------------------------------------------------------------- zero copy

def test_numpy_views_share_the_buffer(rng):
    x = jnp.arange(12.0).reshape(3, 4) * 2.0
    a = np.asarray(x)
    assert a is np.asarray(x) and np.shares_memory(a, x._value)
    assert not a.flags.writeable
    assert np.shares_memory(np.array(x, copy=False), a)
    c = x.__array__(copy=True)
    assert not np.shares_memory(c, a) and c.flags.writeable
    with pytest.raises(ValueError, match="copy=False"):
        x.__array__(np.int32, copy=False)
    np.testing.assert_array_equal(x.__array__(np.int32), a.astype(np.int32))
    d = np.from_dlpack(x)
    assert np.shares_memory(d, a) and not d.flags.writeable
    assert x.__dlpack_device__() == a.__dlpack_device__()
    m = x.__buffer__(0)
    assert m.readonly and m.tobytes() == a.tobytes()


def test_jit_results_are_read_only_views_and_arguments():
    f = jx.jit(lambda x: x * 2.0 + 1.0)
    x = np.arange(3, dtype=np.float32)
    y = f(x)
    assert type(y) is Array and y.dtype == np.float32 and not y.weak_type
    a = np.asarray(y)
    assert not a.flags.writeable and a is y._value
    np.testing.assert_array_equal(a, x * 2 + 1)
    z = f(y)                                   # an Array argument: the same compiled entry
    assert len(f._cache) == 1
    np.testing.assert_array_equal(np.asarray(z), (x * 2 + 1) * 2 + 1)


# ---------------------------------------------------------------- promotion

# (left, right) -> result dtype and weak type in JAX's default (32-bit) mode;
# "py:float" etc. are Python scalars, the rest jx.Arrays of that dtype.
PROMOTION = [
    (("int32", "py:float"), ("float32", True)),
    (("int32", "py:int"), ("int32", False)),
    (("uint8", "py:int"), ("uint8", False)),
    (("int8", "uint8"), ("int16", False)),
    (("float16", "py:float"), ("float16", False)),
    (("float16", "int32"), ("float16", False)),
    (("bool", "py:int"), ("int32", True)),
    (("bool", "py:float"), ("float32", True)),
    (("bool", "int8"), ("int8", False)),
    (("uint8", "int32"), ("int32", False)),
    (("float16", "float32"), ("float32", False)),
]


def _operand(rng, spec, shape):
    if spec == "py:float":
        return 1.5
    if spec == "py:int":
        return 3
    return concrete(rand(rng, shape, spec))


@pytest.mark.parametrize("pair,expected", PROMOTION)
def test_promotion_table(rng, pair, expected):
    a, b = (_operand(rng, s, (2, 3)) for s in pair)
    for x, y in ((a, b), (b, a)):
        out = x + y
        assert type(out) is Array
        assert (out.dtype.name, out.weak_type) == expected, (pair, out.dtype, out.weak_type)


def test_jax_semantics_the_issue_names():
    m = 1 / 2 ** jnp.arange(1, 9)
    assert m.dtype == np.float32
    np.testing.assert_allclose(np.asarray(m), 0.5 ** np.arange(1, 9), rtol=1e-6)
    i = jnp.arange(5)
    assert i.dtype == np.int32
    assert i.mean().dtype == np.float32 and float(i.mean()) == 2.0
    assert (i / i).dtype == np.float32
    assert (i + 1.5).dtype == np.float32
    n = np.arange(3, dtype=np.int8)
    out = n + jnp.asarray(np.array([1, 2, 3], np.uint8))     # NumPy's left operand: jx's rule
    assert type(out) is Array and out.dtype == np.int16


BINOPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.lt, operator.le, operator.eq, operator.ne,
          operator.gt, operator.ge]
BITOPS = [operator.and_, operator.or_, operator.xor]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", DTYPES + ["py:int", "py:float", "numpy"])
def test_operators_match_jax(rng, shape, da, db):
    jax = jax_or_skip()
    jjnp = jax.numpy
    a = rand(rng, shape, da)
    if db == "py:int":
        b = 2
    elif db == "py:float":
        b = 1.5
    elif db == "numpy":
        b = rand(rng, shape, da)                # a plain NumPy operand on either side
    else:
        b = rand(rng, shape[1:], db)            # broadcasting too
    xa = concrete(a)
    xb = concrete(b) if db in DTYPES else b
    ja = jjnp.asarray(a)
    jb = jjnp.asarray(b) if db in DTYPES else b
    ops = BINOPS + (BITOPS if a.dtype.kind in "biu" and np.asarray(b).dtype.kind in "biu" else [])
    problems = []
    for op in ops:
        if op is operator.pow and (a.dtype == np.bool_ or np.asarray(b).dtype == np.bool_):
            continue
        for (x, y), (jx_, jy) in (((xa, xb), (ja, jb)), ((xb, xa), (jb, ja))):
            if op is operator.pow and np.ndim(y) == 0 and np.asarray(y).dtype.kind in "iu":
                continue        # JAX: a concrete integer exponent is lax.integer_pow (x's dtype)
            try:
                want = op(jx_, jy)
            except (TypeError, ValueError):
                continue                          # JAX refuses it (e.g. int ** negative)
            got = op(x, y)
            assert type(got) is Array, (op, da, db)
            what = (op.__name__, np.asarray(x).dtype.name, np.asarray(y).dtype.name)
            if got.dtype != want.dtype:
                problems.append(("dtype",) + what + (got.dtype.name, want.dtype.name))
                continue
            if got.weak_type != want.weak_type:
                problems.append(("weak",) + what)
            tol = 1e-2 if want.dtype == np.float16 else 1e-5
            g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
            if not np.allclose(g, w, rtol=tol, atol=tol, equal_nan=True):
                problems.append(("value",) + what)
    unexplained = [p for p in problems if _known_deviation(p) is None]
    assert not unexplained, unexplained
    if problems:
        pytest.xfail("; ".join(sorted({_known_deviation(p) for p in problems})))


def _known_deviation(problem):
    """Differences from JAX jx keeps on purpose."""
    kind, op = problem[0], problem[1]
    if kind == "value" and op == "truediv" and problem[2] == problem[3] == "bool":
        # XLA's CPU backend gives 0 for False / False where the divisor is
        # broadcast (its simplifier), NaN where it is not; jx gives NaN (IEEE)
        return "bool / bool: 0 / 0 under XLA's broadcast simplification"
    return None


def test_weak_types_match_jax():
    jax = jax_or_skip()
    jjnp = jax.numpy
    cases = [
        (lambda m: m.asarray(2.0), "asarray(2.0)"),
        (lambda m: m.asarray(2), "asarray(2)"),
        (lambda m: m.arange(3) * 2.0, "int32 * 2.0"),
        (lambda m: m.ones(3, m.int32) * 2, "int32 * 2"),
        (lambda m: m.asarray(m.float32(2)), "asarray(float32(2))"),
        (lambda m: m.asarray(2.0) * 3, "weak * 3"),
        (lambda m: m.asarray(2.0) + m.ones(3, m.float16), "weak f32 + f16"),
        (lambda m: m.sin(2.0), "sin(2.0)"),
        (lambda m: m.zeros(3), "zeros"),
    ]
    for make, what in cases:
        got, want = make(jnp), make(jjnp)
        assert type(got) is Array, what
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), what
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


# ---------------------------------------------------------------- .at

AT_INDICES = [1, -1, slice(1, 3), (np.array([0, 2, 2]),), np.array([4, -5, 1]), 7]


@pytest.mark.parametrize("idx", AT_INDICES, ids=str)
@pytest.mark.parametrize("mode", [None, "clip", "drop", "promise_in_bounds"])
@pytest.mark.parametrize("method", ["set", "add", "multiply", "min", "max"])
def test_at_updates_match_jax(rng, idx, mode, method):
    jax = jax_or_skip()
    a = rand(rng, (5,), "float32")
    v = rand(rng, (), "float32")
    xa, ja = concrete(a), jax.numpy.asarray(a)
    if mode == "promise_in_bounds":
        if isinstance(idx, int) and not -5 <= idx < 5:
            return                         # out of range with that promise: undefined
        if isinstance(idx, np.ndarray):
            return
    try:
        want = getattr(ja.at[idx], method)(v, mode=mode)
    except (IndexError, ValueError):
        with pytest.raises((IndexError, ValueError)):
            getattr(xa.at[idx], method)(v, mode=mode)
        return
    got = getattr(xa.at[idx], method)(v, mode=mode)
    assert type(got) is Array and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(xa), a)           # the original unchanged


AT_MORE_INDICES = [1, -1, 9, slice(1, 4), np.array([0, 2, 2, 7]), np.array([-1, -7, 3, 3, 3]),
                   (np.array([[0], [2]]),)]


@pytest.mark.parametrize("idx", AT_MORE_INDICES, ids=str)
@pytest.mark.parametrize("mode", [None, "drop", "clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_at_divide_power_subtract_apply_match_jax(rng, idx, mode, dtype):
    """Repeated indices divide by / raise to the product of their values and apply
    func once per occurrence; int arrays divided give floats; x unchanged."""
    jax = jax_or_skip()
    in_range = isinstance(idx, slice) or isinstance(idx, int) and -6 <= idx < 6
    if mode == "promise_in_bounds" and not in_range:
        return                             # out of range with that promise: undefined
    a = rand(rng, (6,), dtype)
    a[a == 0] = 1
    xa, ja = concrete(a), jax.numpy.asarray(a)
    vals = [("divide", rand(rng, (), dtype) if dtype == "float32" else 2),
            ("power", 2), ("subtract", rand(rng, (), dtype)),
            ("apply", None)]
    for method, v in vals:
        kw = dict(mode=mode, unique_indices=False, indices_are_sorted=False)
        if method == "apply":
            want = ja.at[idx].apply(lambda t: t * 3 + 1, mode=mode)
            got = xa.at[idx].apply(lambda t: t * 3 + 1, **kw)
        else:
            want = getattr(ja.at[idx], method)(v, mode=mode)
            got = getattr(xa.at[idx], method)(v, **kw)
        assert type(got) is Array, method
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), method
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, err_msg=method)
    np.testing.assert_array_equal(np.asarray(xa), a)


def test_at_apply_traced_and_weak(rng):
    a = rand(rng, (5,), "float32")
    i = np.array([0, 2, 2])
    want = a.copy()
    for k in i:
        want[k] = want[k] * 3 + 1                      # once per occurrence
    f = jx.jit(lambda x, j: x.at[j].apply(lambda t: t * 3 + 1))
    np.testing.assert_allclose(np.asarray(f(a, i)), want, rtol=1e-6)
    g = jx.jit(lambda x, j: x.at[j].divide(2.0))
    want = a.copy()
    want[0] /= 2
    want[2] /= 4
    np.testing.assert_allclose(np.asarray(g(a, i)), want, rtol=1e-6)
    w = jnp.asarray(2.0)
    for got in (w.at[()].divide(2), w.at[()].power(2), w.at[()].apply(jnp.sin)):
        assert got.weak_type and got.dtype == np.float32
    with pytest.raises(jx.JxError, match="unique_indices"):
        jx.jit(lambda x, j: x.at[j].apply(jnp.sin))(np.zeros(100, np.float32),
                                                      np.arange(100))
    out = jx.jit(lambda x, j: x.at[j].apply(jnp.sin, unique_indices=True))(
        np.zeros(100, np.float32) + 1, np.arange(100))
    np.testing.assert_allclose(np.asarray(out), np.sin(np.ones(100, np.float32)), rtol=1e-6)


@pytest.mark.parametrize("idx", [2, -1, 9, np.array([0, 9, -7])], ids=str)
@pytest.mark.parametrize("mode,fill", [(None, None), ("clip", None), ("fill", -1.0),
                                       ("fill", None)])
def test_at_get_matches_jax(rng, idx, mode, fill):
    jax = jax_or_skip()
    a = rand(rng, (5,), "float32")
    want = jax.numpy.asarray(a).at[idx].get(mode=mode, fill_value=fill)
    got = concrete(a).at[idx].get(mode=mode, fill_value=fill)
    assert type(got) is Array
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_at_without_jax(rng):
    a = rand(rng, (2, 4), "int32")
    x = concrete(a)
    want = a.copy()
    want[1, 1:3] = 7
    np.testing.assert_array_equal(np.asarray(x.at[1, 1:3].set(7)), want)
    want = a.copy()
    np.add.at(want, (np.array([0, 0, 1]), np.array([2, 2, 3])), 5)
    got = x.at[np.array([0, 0, 1]), np.array([2, 2, 3])].add(5)
    np.testing.assert_array_equal(np.asarray(got), want)
    want = a.copy()
    want[:, 0] = np.maximum(a[:, 0], 3)
    np.testing.assert_array_equal(np.asarray(x.at[:, 0].max(3)), want)


# ---------------------------------------------------------------- repr, pickling

REPRS = [
    (lambda: jnp.arange(3.0), "Array([0., 1., 2.], dtype=float32)"),
    (lambda: jnp.arange(3), "Array([0, 1, 2], dtype=int32)"),
    (lambda: jnp.asarray(2.0), "Array(2., dtype=float32, weak_type=True)"),
    (lambda: jnp.ones((2, 3)), "Array([[1., 1., 1.],\n       [1., 1., 1.]], dtype=float32)"),
    (lambda: jnp.asarray(np.array([True, False])), "Array([ True, False], dtype=bool)"),
    (lambda: jnp.zeros((0, 3)), "Array([], shape=(0, 3), dtype=float32)"),
]


@pytest.mark.parametrize("make,text", REPRS)
def test_repr(make, text):
    assert repr(make()) == text


def test_repr_matches_jax():
    jax = jax_or_skip()
    for make in [lambda m: m.arange(100.0), lambda m: m.arange(24).reshape(2, 3, 4),
                 lambda m: m.arange(7.0) / 8, lambda m: m.full((2, 2), -1.5),
                 lambda m: m.zeros((2, 0)), lambda m: m.asarray(np.uint8(3)),
                 lambda m: m.arange(20000.0)]:
        assert repr(make(jnp)) == repr(make(jax.numpy))
        assert str(make(jnp)) == str(make(jax.numpy))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_pickle_round_trip(rng, dtype, shape):
    x = concrete(rand(rng, shape, dtype))
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x), copy.copy(x), x.copy()):
        assert type(y) is Array and y.dtype == x.dtype and y.shape == x.shape
        assert y.weak_type == x.weak_type
        np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
        with pytest.raises(TypeError):
            y[()] = 0
    w = pickle.loads(pickle.dumps(jnp.asarray(2.0)))
    assert w.weak_type and float(w) == 2.0
    assert not np.asarray(pickle.loads(pickle.dumps(x))).flags.writeable


# ---------------------------------------------------------------- the value's protocol

def test_scalar_conversions_and_format():
    x = jnp.asarray(np.float32(2.5))
    assert float(x) == 2.5 and int(x) == 2 and complex(x) == 2.5 and bool(x)
    assert f"{x:.3f}" == "2.500" and format(jnp.arange(3)) == "[0 1 2]"
    assert [1, 2, 3, 4][jnp.asarray(2)] == 3 and operator.index(jnp.asarray(2)) == 2
    with pytest.raises(TypeError, match="integer"):
        operator.index(x)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(jnp.arange(3))
    with pytest.raises(TypeError, match="format"):
        f"{jnp.arange(3):.2f}"


def test_properties_and_methods(rng):
    a = rand(rng, (2, 3), "float32")
    x = concrete(a)
    assert (x.shape, x.dtype, x.ndim, x.size, x.nbytes, x.itemsize) == \
        (a.shape, a.dtype, a.ndim, a.size, a.nbytes, a.itemsize)
    assert x.aval == jx.ShapedArray((2, 3), np.float32)
    assert len(x) == 2 and [r.tolist() for r in x] == a.tolist()
    assert all(type(r) is Array for r in x)
    assert x.tolist() == a.tolist() and x.item(1, 2) == a.item(1, 2)
    assert x.block_until_ready() is x
    assert x.device.platform == "cpu" and x.devices() == {x.device}
    assert x.device == jx.devices()[0]
    for got, want in [(x.T, a.T), (x.mT, np.swapaxes(a, -1, -2)), (x.reshape(3, 2), a.reshape(3, 2)),
                      (x.reshape((6,)), a.ravel()), (x.repeat(2, axis=1), a.repeat(2, axis=1)),
                      (x.clip(1.0, 2.0), a.clip(1.0, 2.0)), (x.round(1), a.round(1)),
                      (x.astype(jnp.int32), a.astype(np.int32)), (x.sum(0), a.sum(0)),
                      (x.max(), a.max()), (x.mean(1), a.mean(1)), (x.cumsum(1), a.cumsum(1)),
                      (x.argsort(1), a.argsort(1, kind="stable")), (x.sort(0), np.sort(a, 0)),
                      (x.ptp(), np.ptp(a)), (round(x), np.round(a)),
                      (divmod(x, 2.0)[0], a // 2), (divmod(x, 2.0)[1], a % 2)]:
        assert type(got) is Array
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    v = x.view(np.int32)
    assert type(v) is Array and np.shares_memory(np.asarray(v), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(v), a.view(np.int32))
    nz = concrete(np.array([0, 3, 0, 4])).nonzero()
    assert [n.dtype for n in nz] == [np.int32] and nz[0].tolist() == [1, 3]
    with pytest.raises(TypeError, match="0-d"):
        len(jnp.asarray(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(jnp.asarray(1.0))


def test_methods_match_jax(rng):
    jax = jax_or_skip()
    a = rand(rng, (3, 4), "int32")
    x, j = concrete(a), jax.numpy.asarray(a)
    for name, args in [("mean", ()), ("var", ()), ("std", (0,)), ("sum", (1,)),
                       ("prod", ()), ("argmax", (1,)), ("cumprod", (0,)), ("any", ()),
                       ("all", (1,)), ("trace", ()), ("diagonal", ()), ("ravel", ()),
                       ("squeeze", ()), ("transpose", ()), ("swapaxes", (0, 1)),
                       ("take", (np.array([0, 5]),)), ("astype", (jnp.float16,))]:
        got, want = getattr(x, name)(*args), getattr(j, name)(*args)
        assert type(got) is Array
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), name
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=1e-5, err_msg=name)


# ---------------------------------------------------------------- one method table

def test_tracers_and_arrays_share_one_method_table():
    assert core.ARRAY_METHODS
    for name, fn in core.ARRAY_METHODS.items():
        assert Array.__dict__[name] is fn, name
        assert core.Tracer.__dict__[name] is fn, name


def test_tracers_are_arrays():
    seen = []

    @jx.jit
    def f(x):
        seen.append((isinstance(x, jx.Array), type(x) is Array))
        return x + 1

    f(np.ones(3, np.float32))
    assert seen == [(True, False)]
    assert isinstance(jnp.ones(2), jnp.ndarray) and jnp.ndarray is jx.Array
    assert not isinstance(np.ones(2), jx.Array)


# ---------------------------------------------------------------- inputs, results

def test_mixed_inputs_everywhere(rng):
    a = rand(rng, (3,), "float32")
    x = concrete(a)
    for args in [(x, a), (a, x), (x, 2.0), (a, 2.0), (x, x)]:
        out = jnp.add(*args)
        assert type(out) is Array
        np.testing.assert_allclose(np.asarray(out), np.add(*[np.asarray(v) for v in args]))
    g = jx.grad(lambda v: (v * v).sum())(x)
    assert type(g) is Array
    np.testing.assert_allclose(np.asarray(g), 2 * a, rtol=1e-6)
    leaves = jx.tree_util.tree_leaves({"a": x, "b": [x, 1.0]})
    assert leaves[0] is x and leaves[1] is x
    out = jx.jit(lambda d: d["a"] * d["b"][1])({"a": x, "b": [x, 3.0]})
    assert type(out) is Array
    np.testing.assert_allclose(np.asarray(out), a * 3, rtol=1e-6)


def test_pmap_results_are_arrays(rng):
    n = min(2, jx.local_device_count())
    a = rand(rng, (n, 3), "float32")
    f = jx.pmap(lambda v: v * 2.0)
    for arg in (a, concrete(a)):
        out = f(arg)
        assert type(out) is Array and out.dtype == np.float32
        np.testing.assert_allclose(np.asarray(out), a * 2, rtol=1e-6)
        assert not np.asarray(out).flags.writeable


ARTIFACT = textwrap.dedent('''
    import jx
    import jx.numpy as jnp

    @jx.export(x=jx.f32[3])
    def twice(x):
        return x * 2.0 + 1.0
''')


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
def test_artifacts_still_return_numpy(tmp_path):
    (tmp_path / "art.py").write_text(ARTIFACT)
    r = subprocess.run([sys.executable, "-m", "jx.cli.main", "compile", tmp_path / "art.py",
                        "-o", tmp_path / "out"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    import jx.runtime as rt
    art = rt.load(tmp_path / "out" / "libart.so")
    x = np.arange(3, dtype=np.float32)
    out = art.twice(x)
    assert type(out) is np.ndarray
    jitted = jx.jit(lambda v: v * 2.0 + 1.0)(x)
    assert type(jitted) is Array
    np.testing.assert_array_equal(out, np.asarray(jitted))


def test_transpose_method_takes_axes_as_numpy_does():
    """x.transpose(1, 0), x.transpose((1, 0)), x.transpose([1, 0]) and
    x.transpose(None) are NumPy's spellings; traced and concrete alike."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for axes in [((0, 2, 1),), ([2, 0, 1],), (1, 0, 2), (None,), ()]:
        want = x.transpose(*axes)
        np.testing.assert_array_equal(jnp.asarray(x).transpose(*axes), want)
        np.testing.assert_array_equal(jx.jit(lambda v: v.transpose(*axes))(x), want)
