"""Edge cases of jx.numpy semantics checked against JAX (default 32-bit mode) and
NumPy: bool arithmetic, dtype-keeping pads, bfloat16 limits, empty reductions,
0-size gathers and scatters, out-of-range static indices, masked arrays and the
argument checks of jit and compiled artifacts."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import dtypes


def _jax():
    jax = pytest.importorskip("jax")
    return jax, jax.numpy


def assert_same(got, want):
    """Equal values, dtype and shape (NaNs equal)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got.astype(np.float64) if got.dtype == dtypes.bfloat16
                                  else got,
                                  want.astype(np.float64) if want.dtype == dtypes.bfloat16
                                  else want)


B1 = np.array([True, False, True, False])
B2 = np.array([True, True, False, False])


# ---------------------------------------------------------------- bool arithmetic

@pytest.mark.parametrize("name", ["add", "multiply", "floor_divide", "remainder", "fmod",
                                  "power", "maximum", "minimum", "hypot"])
@pytest.mark.parametrize("shape", [(4,), (2, 2)])
def test_bool_binary_matches_jax(name, shape):
    jax, jjnp = _jax()
    a, b = B1.reshape(shape), B2.reshape(shape)
    if name in ("floor_divide", "remainder", "fmod"):
        b = np.ones(shape, bool)       # integer division by zero is backend-defined
    want = getattr(jjnp, name)(a, b)
    assert_same(jx.jit(getattr(jnp, name))(a, b), want)
    assert_same(getattr(jnp, name)(a, b), want)


@pytest.mark.parametrize("f", [lambda x, y: x + y, lambda x, y: x * y,
                               lambda x, y: x + True, lambda x, y: x * False,
                               lambda x, y: x + np.bool_(True), lambda x, y: True * y,
                               lambda x, y: x + 1, lambda x, y: x * np.int8(3)],
                         ids=["add", "mul", "add_true", "mul_false", "add_np_bool",
                              "rmul_true", "add_int", "mul_int8"])
def test_bool_operators_match_jax(f):
    jax, _ = _jax()
    assert_same(jx.jit(f)(B1, B2), jax.jit(f)(B1, B2))


@pytest.mark.parametrize("f", [lambda m, x: x ** 2, lambda m, x: x ** 3,
                               lambda m, x: x ** 0, lambda m, x: x ** 2.0,
                               lambda m, x: x ** True, lambda m, x: m.square(x),
                               lambda m, x: m.power(x, x)],
                         ids=["pow2", "pow3", "pow0", "pow2f", "pow_true", "square",
                              "power"])
def test_bool_powers_match_jax(f):
    """No bool meaning: JAX counts bools as int32 (jnp.square(True) is 1)."""
    jax, jjnp = _jax()
    want = jax.jit(lambda x: f(jjnp, x))(B1)
    assert_same(jx.jit(lambda x: f(jnp, x))(B1), want)


def test_bool_arithmetic_under_vmap():
    """vmap of bool arithmetic batches the logical primitive."""
    jax, _ = _jax()
    a, b = np.stack([B1, B2]), np.stack([B2, B1])
    f = lambda x, y: x * y + x        # noqa: E731
    assert_same(jx.vmap(f)(a, b), jax.vmap(f)(a, b))


# ---------------------------------------------------------------- pad keeps dtype

@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.float16,
                                   np.float32])
@pytest.mark.parametrize("const", [0, 1, 2.7])
def test_pad_keeps_dtype(dtype, const):
    _, jjnp = _jax()
    x = np.array([[1, 0, 1], [0, 1, 1]]).astype(dtype)
    want = jjnp.pad(x, ((1, 0), (2, 1)), constant_values=const)
    assert_same(jx.jit(lambda v: jnp.pad(v, ((1, 0), (2, 1)), constant_values=const))(x),
                want)
    assert_same(jnp.pad(x, ((1, 0), (2, 1)), constant_values=const), want)
    if const != 2.7 or dtype != np.bool_:       # NumPy casts the constant the same way
        np.testing.assert_array_equal(
            np.asarray(want), np.pad(x, ((1, 0), (2, 1)), constant_values=const))


# ---------------------------------------------------------------- bfloat16 limits

@pytest.mark.parametrize("dtype", ["bfloat16", np.float16, np.float32])
def test_nan_to_num_low_precision(dtype):
    _, jjnp = _jax()
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -0.25], np.float32).astype(dtype)
    assert_same(jnp.nan_to_num(x), jjnp.nan_to_num(x))
    assert_same(jx.jit(jnp.nan_to_num)(x), jjnp.nan_to_num(x))
    kw = dict(nan=1.0, posinf=2.0, neginf=-3.0)
    assert_same(jx.jit(lambda v: jnp.nan_to_num(v, **kw))(x), jjnp.nan_to_num(x, **kw))


# ---------------------------------------------------------------- empty max/min

_EMPTY_CASES = [((3, 0), 1), ((3, 0), None), ((0,), 0), ((0, 0), 1), ((2, 0, 3), (1, 2))]


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin", "nanmax", "nanmin", "ptp"])
@pytest.mark.parametrize("shape,axis", _EMPTY_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8])
def test_empty_max_raises_like_jax(name, shape, axis, dtype):
    _, jjnp = _jax()
    x = np.zeros(shape, dtype)
    with pytest.raises(ValueError, match="zero-size array to reduction operation") as want:
        getattr(jjnp, name)(x, axis=axis)
    op = "max" if "max" in want.value.args[0] else "min"
    for f in (getattr(jnp, name), jx.jit(getattr(jnp, name), static_argnums=1)):
        with pytest.raises(jx.errors.EmptyReductionError,
                           match=f"reduction operation {op} which has no identity"
                           ".*has size 0.*initial="):
            f(x, axis)
    assert jx.EmptyReductionError is jx.errors.EmptyReductionError
    assert issubclass(jx.EmptyReductionError, jx.JxError)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("shape,axis", _EMPTY_CASES + [((3, 0), 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_empty_max_with_initial_matches_jax(name, shape, axis, dtype):
    _, jjnp = _jax()
    x = np.zeros(shape, dtype)
    init = {np.float32: -2.5, np.int32: 7, np.bool_: True}[dtype]
    want = getattr(jjnp, name)(x, axis=axis, initial=init, keepdims=True)
    f = lambda v: getattr(jnp, name)(v, axis=axis, initial=init, keepdims=True)  # noqa
    assert_same(f(x), want)
    assert_same(jx.jit(f)(x), want)
    if dtype != np.bool_:
        np.testing.assert_array_equal(want, getattr(np, name)(x, axis=axis, initial=init,
                                                                keepdims=True))


def test_empty_reductions_with_identity_still_work():
    """sum/prod/any/all, an empty axis kept, lax.reduce_max and the nn shifts: as JAX."""
    jax, jjnp = _jax()
    x = np.zeros((3, 0), np.float32)
    for name in ("sum", "prod", "any", "all"):
        assert_same(jx.jit(getattr(jnp, name), static_argnums=1)(x, 1),
                    getattr(jjnp, name)(x, axis=1))
    assert_same(jx.jit(lambda v: jnp.max(v, axis=0))(x), jjnp.max(x, axis=0))
    assert_same(jx.jit(lambda v: jx.lax.reduce_max(v, (1,)))(x),
                jax.lax.reduce_max(x, (1,)))
    for name in ("logsumexp", "softmax", "log_softmax"):
        f = getattr(jax.nn, name)
        assert_same(jx.jit(lambda v: getattr(jx.nn, name)(v, axis=1))(x), f(x, axis=1))
    g = jx.grad(lambda v: jnp.max(v, axis=1, initial=0.0).sum())(x)
    assert_same(g, jax.grad(lambda v: jjnp.max(v, axis=1, initial=0.0).sum())(x))


# ---------------------------------------------------------------- hypot

_HYPOT_POINTS = [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-1.0, 0.0), (0.0, -2.0), (3.0, 4.0),
                 (-3.0, 4.0), (2.0, 2.0), (-2.0, 2.0), (0.5, -7.0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_hypot_derivatives_match_jax(dtype):
    """At (0, 0) JAX's derivative is 1/2 to each side (its scaled formula's tie in
    maximum), not the 0/0 of sqrt(x*x + y*y)."""
    jax, jjnp = _jax()
    xs, ys = (np.array(c, dtype) for c in zip(*_HYPOT_POINTS))
    for argnums in (0, 1, (0, 1)):
        want = jax.vmap(jax.grad(jjnp.hypot, argnums))(xs, ys)
        got = jx.vmap(jx.grad(jnp.hypot, argnums))(xs, ys)
        jax.tree_util.tree_map(lambda g, w: np.testing.assert_allclose(
            np.asarray(g), np.asarray(w), rtol=2e-3), got, want)
    tx, ty = np.ones_like(xs), np.full_like(ys, -0.5)
    want = jax.jvp(jjnp.hypot, (xs, ys), (tx, ty))
    got = jx.jit(lambda *a: jx.jvp(jnp.hypot, a[:2], a[2:]))(xs, ys, tx, ty)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-3)
    g00 = jx.grad(jnp.hypot, argnums=(0, 1))(dtype(0), dtype(0))
    assert [float(g) for g in g00] == [0.5, 0.5]


def test_hypot_values_do_not_overflow():
    _, jjnp = _jax()
    x = np.array([1e30, 3e-30, 0.0, np.inf, np.nan, -np.inf, 3.0, 1e19], np.float32)
    y = np.array([1e30, 4e-30, 0.0, np.nan, -np.inf, 1.0, -4.0, 1e19], np.float32)
    got = jx.jit(jnp.hypot)(x, y)
    np.testing.assert_allclose(got, np.hypot(x, y), rtol=1e-6)
    np.testing.assert_allclose(got, jjnp.hypot(x, y), rtol=1e-6)
    assert got.dtype == np.float32


# ---------------------------------------------------------------- derivatives of empty products

@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (0,), (2, 0, 4), (0, 0)])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_prod_derivatives_over_empty_match_jax(shape, axis):
    jax, jjnp = _jax()
    x = np.zeros(shape, np.float32)
    want = jax.grad(lambda v: jjnp.prod(v, axis=axis).sum())(x)
    f = lambda v: jnp.prod(v, axis=axis).sum()        # noqa: E731
    assert_same(jx.grad(f)(x), want)
    assert_same(jx.jit(jx.grad(f))(x), want)
    xs = np.zeros((2,) + shape, np.float32)
    assert_same(jx.vmap(jx.grad(f))(xs), jax.vmap(jax.grad(
        lambda v: jjnp.prod(v, axis=axis).sum()))(xs))
    _, want_t = jax.jvp(lambda v: jjnp.prod(v, axis=axis), (x,), (x + 1,))
    _, got_t = jx.jvp(lambda v: jnp.prod(v, axis=axis), (x,), (x + 1,))
    assert_same(got_t, want_t)


@pytest.mark.parametrize("name", ["cumprod", "cumsum"])
def test_cumulative_derivatives_over_empty(name):
    jax, jjnp = _jax()
    x = np.zeros((3, 0), np.float32)
    want = jax.grad(lambda v: getattr(jjnp, name)(v, axis=1).sum())(x)
    assert_same(jx.jit(jx.grad(lambda v: getattr(jnp, name)(v, axis=1).sum()))(x), want)


# ---------------------------------------------------------------- static ints out of range

_X35 = np.arange(15, dtype=np.float32).reshape(3, 5)

_OOB_READS = {
    "x[10]": lambda x: x[0][10], "x[-10]": lambda x: x[0][-10], "x[5]": lambda x: x[0][5],
    "x[-6]": lambda x: x[0][-6], "X[7]": lambda x: x[7], "X[1,10]": lambda x: x[1, 10],
    "X[:,10]": lambda x: x[:, 10], "X[10,::2]": lambda x: x[10, ::2],
    "X[None,10]": lambda x: x[None, 10], "X[10,[0,1]]": lambda x: x[10, np.array([0, 1])],
    "X[[0,1],10]": lambda x: x[np.array([0, 1]), 10], "X[-7,-2]": lambda x: x[-7, -2],
    "get": lambda x: x.at[1, 10].get(),
    "get_fill": lambda x: x.at[1, 10].get(mode="fill", fill_value=-7.0),
    "get_fill_neg": lambda x: x.at[-4].get(mode="fill", fill_value=-7.0),
}


@pytest.mark.parametrize("name", list(_OOB_READS))
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8])
def test_static_out_of_range_read_clamps_like_jax(name, dtype):
    """On traced arrays JAX clamps static ints as it clamps traced indices."""
    jax, _ = _jax()
    f, x = _OOB_READS[name], _X35.astype(dtype)
    if name.startswith("get_fill") and dtype != np.float32:
        pytest.skip("fill value -7.0 is a float")
    assert_same(jx.jit(f)(x), jax.jit(f)(x))
    assert_same(jx.vmap(f)(np.stack([x, x + 1])), jax.vmap(f)(np.stack([x, x + 1])))


@pytest.mark.parametrize("index", [10, -10, 5, -6])
def test_static_out_of_range_in_vmap_and_grad(index):
    jax, _ = _jax()
    f = lambda r: r[index] * 2        # noqa: E731
    assert_same(jx.vmap(f)(_X35), jax.vmap(f)(_X35))
    assert_same(jx.jit(jx.vmap(f))(_X35), jax.vmap(f)(_X35))
    assert_same(jx.grad(f)(_X35[1]), jax.grad(f)(_X35[1]))
    assert_same(jx.vmap(jx.grad(f))(_X35), jax.vmap(jax.grad(f))(_X35))


# Gradients of reads at out-of-range array indices: x[i] and .get() drop what an
# out-of-range index read (JAX's promise_in_bounds gather, transposed by XLA's
# scatter), .get(mode="clip") and take(mode="clip") credit the clamped element, and
# a scalar index (a dynamic slice) credits it too.
_OOB_READ_GRADS = {   # (np-like module, vmap) -> function of (x, i)
    "getitem": lambda m, vmap: lambda x, i: m.sum(x[i] * 2.0),
    "get": lambda m, vmap: lambda x, i: m.sum(x.at[i].get() ** 2),
    "get_clip": lambda m, vmap: lambda x, i: m.sum(x.at[i].get(mode="clip") * 3.0),
    "rows": lambda m, vmap: lambda x, i: m.sum(x.reshape(2, 3)[i % 3 - 1, 1:]),
    "cols": lambda m, vmap: lambda x, i: m.sum(x.reshape(2, 3)[:, i] ** 2),
    "scalar": lambda m, vmap: lambda x, i: x[i[1]] * 5.0,
    "vmapped": lambda m, vmap: lambda x, i: m.sum(vmap(lambda k: x[k])(i)),
}
_OOB_INDEX = np.array([1, 7, -9, 2], np.int32)


@pytest.mark.parametrize("name", list(_OOB_READ_GRADS))
def test_out_of_range_read_gradients_match_jax(name):
    jax, jjnp = _jax()
    x = np.arange(1, 7, dtype=np.float32)
    want = jax.grad(_OOB_READ_GRADS[name](jjnp, jax.vmap))(x, _OOB_INDEX)
    f = _OOB_READ_GRADS[name](jnp, jx.vmap)
    assert_same(jx.grad(f)(x, _OOB_INDEX), want)
    assert_same(jx.jit(jx.grad(f))(x, _OOB_INDEX), want)


def test_out_of_range_gather_gradient_drops():
    """Without JAX: the rule itself (index 7 and -9 read x[5] and x[0] clamped;
    their cotangents go nowhere)."""
    x = np.arange(1, 7, dtype=np.float32)
    g = jx.jit(jx.grad(lambda x, i: jnp.sum(x[i] * 2.0)))(x, _OOB_INDEX)
    np.testing.assert_array_equal(g, [0, 2, 2, 0, 0, 0])
    g = jx.grad(lambda x, i: jnp.sum(x.at[i].get(mode="clip")))(x, _OOB_INDEX)
    np.testing.assert_array_equal(g, [1, 1, 1, 0, 0, 1])


_OOB_UPDATES = {
    "set10": lambda x: x.at[0, 10].set(-1), "set-10": lambda x: x.at[0, -10].set(-1),
    "add10": lambda x: x.at[1, 10].add(5), "mul": lambda x: x.at[5].multiply(3),
    "max": lambda x: x.at[-4, 1].max(99), "rows": lambda x: x.at[10, 1:3].set(-1),
    "col": lambda x: x.at[:, 10].set(-1), "mixed": lambda x: x.at[np.array([0, 2]), 7].set(-1),
    "clip": lambda x: x.at[0, 10].set(-1, mode="clip"),
    "clip_neg": lambda x: x.at[-10, 2].set(-1, mode="clip"),
    "clip_add": lambda x: x.at[7].add(1, mode="clip"),
}


@pytest.mark.parametrize("name", list(_OOB_UPDATES))
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int16])
def test_static_out_of_range_update_drops_like_jax(name, dtype):
    jax, _ = _jax()
    f, x = _OOB_UPDATES[name], _X35.astype(dtype)
    assert_same(jx.jit(f)(x), jax.jit(f)(x))
    xs = np.stack([x, x + 1])
    assert_same(jx.vmap(f)(xs), jax.vmap(f)(xs))


def test_int_index_into_size_zero_axis_raises():
    jax, _ = _jax()
    for f, x in [(lambda v: v[0], np.zeros(0, np.float32)),
                 (lambda v: v[:, 1], np.zeros((3, 0), np.float32)),
                 (lambda v: v.at[0].set(1.0), np.zeros(0, np.float32)),
                 (lambda v: v.at[:, 0].add(1.0), np.zeros((3, 0), np.float32))]:
        with pytest.raises(IndexError):
            jax.jit(f)(x)
        with pytest.raises(IndexError, match="out of bounds for axis . with size 0"):
            jx.jit(f)(x)
    with pytest.raises(IndexError, match="size 0"):
        jx.jit(lambda v, i: v.at[i].set(1.0))(np.zeros(0, np.float32), np.int32(0))


# ---------------------------------------------------------------- 0-size gathers and scatters

_EMPTY_UPDATES = {
    "set": (lambda x: x.at[np.array([0, 1])].set(1), (0,)),
    "add": (lambda x: x.at[np.array([0, 1])].add(np.array([1, 2])), (0,)),
    "rows": (lambda x: x.at[np.array([0, 1])].set(1), (0, 3)),
    "rows_max": (lambda x: x.at[np.array([0, 1]), 1].max(2), (0, 3)),
    "cols": (lambda x: x.at[:, np.array([1])].set(2), (0, 3)),
    "static_col": (lambda x: x.at[:, 1].set(2), (0, 3)),
    "int_then_array": (lambda x: x.at[1, np.array([0])].set(1), (3, 0)),
    "int_dropped": (lambda x: x.at[5].set(1), (3, 0)),
    "slice": (lambda x: x.at[1:3].set(1), (0,)),
}


@pytest.mark.filterwarnings("ignore::FutureWarning")      # JAX: int updates into bools
@pytest.mark.parametrize("name", list(_EMPTY_UPDATES))
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_scatter_into_size_zero_is_a_no_op(name, dtype):
    jax, _ = _jax()
    f, shape = _EMPTY_UPDATES[name]
    x = np.zeros(shape, dtype)
    assert_same(jx.jit(f)(x), jax.jit(f)(x))
    xs = np.zeros((2,) + shape, dtype)
    assert_same(jx.vmap(f)(xs), jax.vmap(f)(xs))


def test_scatter_into_size_zero_with_traced_indices():
    jax, _ = _jax()
    f = lambda x, i: x.at[i].add(1.0)        # noqa: E731
    x, i = np.zeros((0, 2), np.float32), np.array([0, 3, -1], np.int32)
    assert_same(jx.jit(f)(x, i), jax.jit(f)(x, i))
    assert_same(jx.grad(lambda x: f(x, i).sum())(x), jax.grad(lambda x: f(x, i).sum())(x))


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_, "bfloat16"])
def test_size_zero_gather_is_a_traced_result(dtype):
    """Inside a trace x[empty] is a traced value (with .at), and jit returns it as it
    returns every result: a jx.Array over a fresh C-contiguous buffer of the right
    dtype and shape."""
    jax, _ = _jax()
    x = np.arange(10).reshape(5, 2).astype(dtype)
    empty = np.zeros(0, np.int32)
    fns = [lambda m, v: v[empty],
           lambda m, v: v[empty].at[np.array([0])].set(np.ones((), v.dtype)),
           lambda m, v: m.take(v, empty, axis=1),
           lambda m, v: m.take_along_axis(v, np.zeros((5, 0), np.int32), axis=1),
           lambda m, v: (v[empty], v[0] + v[1])]
    result_type = type(jx.jit(lambda v: v * 1)(x))
    for f in fns:
        got = jx.jit(lambda v: f(jnp, v))(x)
        want = jax.jit(lambda v: f(jax.numpy, v))(x)
        for g, w in zip(*((got, want) if isinstance(got, tuple) else ((got,), (want,)))):
            assert type(g) is result_type is jx.Array
            assert np.asarray(g).flags.c_contiguous
            assert_same(g, w)
    seen = []
    jx.make_graph(lambda v: seen.append(v[empty]) or v)(x)
    assert isinstance(seen[0], jx.Tracer)
    f = lambda v, i: v[i].sum(axis=0)         # noqa: E731
    assert_same(jx.grad(lambda v: f(v, empty).sum().astype(np.float32))(x.astype(np.float32)),
                jax.grad(lambda v: f(v, empty).sum())(x.astype(np.float32)))


# ---------------------------------------------------------------- masked arrays

_MASKED = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0], dtype=np.float32)


@pytest.mark.parametrize("call", [
    lambda m, x: m.asarray(x), lambda m, x: m.sin(x), lambda m, x: m.add(x, 1.0),
    lambda m, x: m.sum(x), lambda m, x: m.where(x > 1, x, 0.0),
    lambda m, x: m.asarray(np.ma.array([1, 2]))],
    ids=["asarray", "sin", "add", "sum", "where", "unmasked_ma"])
def test_masked_arrays_refused_by_jnp_like_jax(call):
    """JAX refuses masked arrays (its jnp.sum only on some paths: after other tests
    warmed its caches it has summed the data, so JAX is not asked here); jx always."""
    with pytest.raises(jx.errors.MaskedArrayError, match="masked array.*filled"):
        call(jnp, _MASKED)


def test_masked_arrays_refused_by_jit_and_transformations():
    jax, _ = _jax()
    f = lambda x, y: x * y          # noqa: E731
    with pytest.raises(ValueError, match="masked arrays"):
        jax.jit(f)(np.ones(3, np.float32), _MASKED)
    for args, kwargs, name in [((np.ones(3, np.float32), _MASKED), {}, "argument 1"),
                               (({"w": _MASKED}, 2.0), {}, "argument 0"),
                               ((np.ones(3, np.float32),), {"y": _MASKED}, "argument 'y'")]:
        with pytest.raises(jx.errors.MaskedArrayError, match=f"{name} of jx.jit\\(<lambda>\\)"):
            jx.jit(f)(*args, **kwargs)
    for transform in (jx.grad(lambda x: (x * 2).sum()), jx.vmap(lambda x: x * 2),
                      lambda x: jx.lax.add(x, x), jx.make_graph(lambda x: x)):
        with pytest.raises(jx.errors.MaskedArrayError):
            transform(_MASKED)
    assert issubclass(jx.MaskedArrayError, jx.JxError)
    assert issubclass(jx.MaskedArrayError, ValueError)


# ---------------------------------------------------------------- artifact argument kinds

@pytest.fixture(scope="module")
def gather_artifact(tmp_path_factory):
    import shutil
    import subprocess
    import sys
    if shutil.which("cc") is None:
        pytest.skip("needs a C compiler (cc)")
    d = tmp_path_factory.mktemp("gather")
    (d / "gather.py").write_text(
        "import jx\n\n@jx.export(x=jx.f32[5], idx=jx.i32[2], scale=jx.f32[()])\n"
        "def pick(x, idx, scale):\n    return x[idx] * scale\n")
    r = subprocess.run([sys.executable, "-m", "jx.cli.main", "compile", str(d / "gather.py"),
                        "-o", str(d / "out")], capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "JX_CACHE_DIR": str(d / "cache")})
    assert r.returncode == 0, r.stderr
    import jx.runtime as rt
    return rt.load(str(d / "out" / "libgather.so"))


def test_artifact_refuses_bools_and_floats_for_int_arguments(gather_artifact):
    from jx.runtime.errors import ArgumentError, DtypeMismatchError
    x = np.arange(5, dtype=np.float32) * 10
    pick = gather_artifact.pick
    np.testing.assert_array_equal(pick(x, [3, 1], 2), [60.0, 20.0])      # ints, exact
    np.testing.assert_array_equal(pick(x, np.array([4, 0], np.int32), 1.0), [40.0, 0.0])
    for idx in ([True, False], np.array([True, False]), [1.0, 2.0], [1.5, 2.0],
                np.array([1, 2], np.float32), np.array([1, 2], np.int64)):
        with pytest.raises(DtypeMismatchError, match="argument idx"):
            pick(x, idx, 1.0)
    with pytest.raises(DtypeMismatchError, match="argument scale.*bools are not converted"):
        pick(x, [0, 1], True)
    with pytest.raises(ArgumentError, match="argument x is a NumPy masked array"):
        pick(np.ma.array(x, mask=[0, 0, 1, 0, 0]), [0, 1], 1.0)
    # jx.jit sees the same bool list as a (traced) mask, not as indices: refused too
    with pytest.raises(IndexError, match="boolean mask"):
        jx.jit(lambda v, i: v[i])(x, [True, False])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis", [((0, 3), 0), ((3, 0), 1), ((0, 3), None),
                                        ((3, 0), -1), ((0,), 0)])
def test_empty_arg_reductions_raise_like_jax(name, shape, axis):
    _, jjnp = _jax()
    x = np.zeros(shape, np.float32)
    with pytest.raises(ValueError, match=f"attempt to get {name} of an empty sequence"):
        getattr(jjnp, name)(x, axis=axis)
    with pytest.raises(jx.errors.EmptyReductionError,
                       match=f"attempt to get {name} of an empty sequence"):
        jx.jit(lambda v: getattr(jnp, name)(v, axis=axis))(x)


def test_arg_reduction_over_nonempty_axis_of_empty_array():
    _, jjnp = _jax()
    x = np.zeros((0, 3), np.float32)
    assert_same(jx.jit(lambda v: jnp.argmax(v, axis=1))(x), jjnp.argmax(x, axis=1))


# ---------------------------------------------------------------- bool products

_RNG = np.random.default_rng(7)
_BA, _BB = _RNG.random((3, 4)) < 0.3, _RNG.random((4, 2)) < 0.3
_BV, _BW = _RNG.random(4) < 0.5, _RNG.random(4) < 0.5
_BC, _BD = _RNG.random((2, 3, 4)) < 0.4, _RNG.random((2, 4, 3)) < 0.4


@pytest.mark.parametrize("f,args", [
    (lambda m, a, b: m.dot(a, b), (_BA, _BB)), (lambda m, a, b: m.dot(a, b), (_BV, _BW)),
    (lambda m, a, b: a @ b, (_BC, _BD)), (lambda m, a, b: a @ b, (_BA, _BV)),
    (lambda m, a, b: m.tensordot(a, b, 1), (_BA, _BB)),
    (lambda m, a, b: m.inner(a, b), (_BV, _BW)), (lambda m, a, b: m.vdot(a, b), (_BV, _BW)),
    (lambda m, a, b: m.einsum("ij,jk->ik", a, b), (_BA, _BB)),
    (lambda m, a, b: m.einsum("bij,bjk->bk", a, b), (_BC, _BD)),
    (lambda m, a, b: m.einsum("ij,j->", a, b), (_BA, _BV)),
    (lambda m, a, b: m.dot(a, b), (np.zeros((2, 0), bool), np.zeros((0, 3), bool)))],
    ids=["dot", "dot1d", "bmm", "mv", "tensordot", "inner", "vdot", "einsum", "einsum_b",
         "einsum_sum", "empty"])
def test_bool_products_match_jax(f, args):
    """JAX multiplies bool matrices as logic: or over the ands, dtype bool."""
    jax, jjnp = _jax()
    want = jax.jit(lambda *a: f(jjnp, *a))(*args)
    assert_same(jx.jit(lambda *a: f(jnp, *a))(*args), want)
    assert_same(f(jnp, *args), want)


_WX = np.arange(6, dtype=np.float32).reshape(2, 3)
_WM = np.array([[True, False, True], [False, False, False]])


@pytest.mark.parametrize("call", [
    lambda m, x: m.sum(x, axis=1, where=_WM), lambda m, x: m.prod(x + 1, axis=1, where=_WM),
    lambda m, x: m.max(x, axis=1, where=_WM, initial=-1.0),
    lambda m, x: m.min(x, axis=1, where=_WM, initial=10.0),
    lambda m, x: m.sum(x, where=_WM), lambda m, x: m.sum(x, axis=1, where=_WM[0]),
    lambda m, x: m.max(x.astype(np.int8), axis=0, where=_WM, initial=-3, keepdims=True),
    lambda m, x: m.sum(x.astype(np.int8), axis=1, where=_WM, initial=3)],
    ids=["sum", "prod", "max", "min", "sum_all", "sum_bcast", "max_int8", "sum_int8"])
def test_reductions_with_where_match_jax(call):
    jax, jjnp = _jax()
    want = jax.jit(lambda x: call(jjnp, x))(_WX)
    assert_same(jx.jit(lambda x: call(jnp, x))(_WX), want)
    assert_same(call(jnp, _WX), want)


def test_max_with_where_needs_initial():
    _, jjnp = _jax()
    with pytest.raises(ValueError, match="does not have an identity"):
        jjnp.max(_WX, axis=1, where=_WM)
    with pytest.raises(jx.errors.EmptyReductionError, match="specify 'initial'"):
        jx.jit(lambda x: jnp.max(x, axis=1, where=_WM))(_WX)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.float16, np.float32])
def test_rint_is_float_like_jax(dtype):
    _, jjnp = _jax()
    x = np.array([0, 1, 2, 3]).astype(dtype)
    if dtypes.is_float(x.dtype):
        x = x + np.asarray(0.5, dtype)
    assert_same(jx.jit(jnp.rint)(x), jjnp.rint(x))
    if dtype != np.bool_:                # JAX's around refuses bools
        assert_same(jx.jit(jnp.around)(x), jjnp.around(x))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.bool_,
                                   np.float16])
def test_cumulative_dtypes_match_jax(name, dtype):
    """Running sums keep narrow ints (wrapping like JAX), unlike sum/prod."""
    _, jjnp = _jax()
    x = np.array([[100, 100, 3], [1, 0, 2]]).astype(dtype)
    want = getattr(jjnp, name)(x, axis=1)
    assert_same(jx.jit(lambda v: getattr(jnp, name)(v, axis=1))(x), want)
    assert_same(getattr(jnp, name)(x, axis=1), want)
    assert_same(jx.jit(lambda v: getattr(jnp, name)(v, dtype=np.int32))(x),
                getattr(jjnp, name)(x, dtype=np.int32))


@pytest.mark.parametrize("name", ["uniform", "normal", "gumbel"])
@pytest.mark.parametrize("dtype", ["bfloat16", np.float16])
def test_random_low_precision_floats_match_jax(name, dtype):
    """bfloat16 limits come from ml_dtypes (np.finfo does not know the type)."""
    jax, _ = _jax()
    got = getattr(jx.random, name)(jx.random.PRNGKey(3), (2, 5), dtype=dtype)
    want = getattr(jax.random, name)(jax.random.PRNGKey(3), (2, 5), dtype=dtype)
    if name == "uniform":                # the same bits: exactly JAX's values
        assert_same(got, want)
    else:                                # log/erf-inverse may differ in the last bit
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.astype(np.float32), np.asarray(want, np.float32),
                                   rtol=1e-2, atol=1e-2)


# ---------------------------------------------------------------- Python numbers into transforms

@pytest.mark.parametrize("name", ["logaddexp", "maximum", "minimum", "hypot", "arctan2",
                                  "power", "copysign"])
@pytest.mark.parametrize("point", [(1.0, 2.0), (1.0, 1.0), (0.0, 0.0), (-2.0, 3.0)])
def test_grad_of_python_numbers_matches_jax(name, point):
    """Python floats reach the derivative rules as float32 0-d arrays, as in JAX."""
    jax, jjnp = _jax()
    want = jax.grad(getattr(jjnp, name), (0, 1))(*point)
    got = jx.grad(getattr(jnp, name), (0, 1))(*point)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
        assert np.asarray(g).dtype == np.float32
    _, want_t = jax.jvp(getattr(jjnp, name), point, (1.0, 0.5))
    _, got_t = jx.jvp(getattr(jnp, name), point, (1.0, 0.5))
    np.testing.assert_allclose(got_t, want_t, rtol=1e-6)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_logaddexp_derivatives_at_ties_match_jax(name, dtype):
    """At a == b the derivative is 1/2 to each side (JAX), not (0, 1)."""
    jax, jjnp = _jax()
    a = np.array([0.0, 1.0, -3.0, 2.0, 5.0, -np.inf, 0.0], dtype)
    b = np.array([0.0, 1.0, -3.0, 1.0, -20.0, 0.0, -np.inf], dtype)
    want = jax.vmap(jax.grad(getattr(jjnp, name), (0, 1)))(a, b)
    got = jx.jit(jx.vmap(jx.grad(getattr(jnp, name), (0, 1))))(a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-3, atol=1e-6)
    np.testing.assert_allclose(jx.jit(getattr(jnp, name))(a, b), getattr(jjnp, name)(a, b),
                               rtol=2e-3)


# ---------------------------------------------------------------- hyperbolic functions

_HYP_POINTS = {
    "sinh": [0.0, -0.0, 1e-30, -1e-6, 1e-3, 0.5, -2.0, 30.0, -80.0, np.inf, -np.inf],
    "arcsinh": [0.0, 1e-30, -1e-6, 1e-3, 0.5, -2.0, 30.0, 5e3, -1e20, 3e38, np.inf, -np.inf],
    "arccosh": [1.0, 1.0 + 1e-6, 1.5, 2.0, 30.0, 5e3, 1e20, 3e38, np.inf],
    "arctanh": [0.0, 1e-30, -1e-6, 0.5, -0.9, 0.999, 1.0, -1.0],
}


@pytest.mark.parametrize("name", list(_HYP_POINTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bfloat16"])
def test_hyperbolic_values_and_slopes_match_jax(name, dtype):
    """Tiny inputs keep their value (no exp(x) - exp(-x) cancellation), huge ones do
    not overflow in x*x, and the slopes at the domain's ends are JAX's (0, inf)."""
    jax, jjnp = _jax()
    with np.errstate(over="ignore"):
        x = np.array(_HYP_POINTS[name], np.float32).astype(dtype)
    f, g = getattr(jnp, name), getattr(jjnp, name)
    tol = 1e-5 if dtype == np.float32 else 1e-2
    close = dict(rtol=tol, atol=1e-30 if dtype == np.float32 else 1e-6)
    want = np.asarray(g(x), np.float32)
    np.testing.assert_allclose(np.asarray(jx.jit(f)(x), np.float32), want, **close)
    want = np.asarray(jax.vmap(jax.grad(g))(x), np.float32)
    got = np.asarray(jx.jit(jx.vmap(jx.grad(f)))(x), np.float32)
    # JAX's slope 1/sqrt(x*x + 1) is 0 once x*x overflows (1e20; 5e3 in float16), jx's
    # keeps 1e-20 (2e-4)
    np.testing.assert_allclose(got, want, rtol=tol, atol=1e-12 if tol < 1e-2 else 1e-3)


# ---------------------------------------------------------------- binary functions at special points

_SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, np.inf, -np.inf, np.nan, 1e-30]
_PA, _PB = (np.array(p, np.float32) for p in zip(*[(a, b) for a in _SPECIAL for b in _SPECIAL]))


@pytest.mark.parametrize("name", ["fmax", "fmin", "heaviside", "floor_divide"])
def test_binary_special_points_match_jax(name):
    """Values (NaN handling, signed zeros) and slopes on every pair of special values:
    heaviside(NaN) is NaN, floor_divide's slope is 0 (not 0 * inf), fmax/fmin skip NaNs."""
    jax, jjnp = _jax()
    f, g = getattr(jnp, name), getattr(jjnp, name)
    want = np.asarray(jax.vmap(g)(_PA, _PB))
    got = jx.jit(jx.vmap(f))(_PA, _PB)
    assert_same(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    for gg, gw in zip(jx.vmap(jx.grad(f, (0, 1)))(_PA, _PB),
                      jax.vmap(jax.grad(g, (0, 1)))(_PA, _PB)):
        assert_same(gg, np.asarray(gw))
    if name != "floor_divide":           # NumPy's float floor_divide differs at infinities
        np.testing.assert_array_equal(want, getattr(np, name)(_PA, _PB))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.bool_])
def test_fmax_fmin_integer_dtypes(dtype):
    _, jjnp = _jax()
    a = np.array([0, 1, 1, 0]).astype(dtype)
    b = np.array([1, 1, 0, 0]).astype(dtype)
    for name in ("fmax", "fmin"):
        assert_same(jx.jit(getattr(jnp, name))(a, b), getattr(jjnp, name)(a, b))
        assert_same(getattr(jnp, name)(a, b), getattr(np, name)(a, b))


@pytest.mark.parametrize("name", ["sinh", "cosh"])
@pytest.mark.parametrize("dt", ["uint32", "int32", "float32", "float16", "bfloat16"])
def test_sinh_cosh_as_xla_computes_them(name, dt):
    """cosh negated an unsigned input before making it a float (cosh(uint32 5) was
    inf); both overflowed where the result is finite (|x| ~ 89 in float32), and
    16-bit inputs rounded between the steps XLA does in float32 (found by jx.fuzz)."""
    jax = pytest.importorskip("jax")
    dtype = dtypes.bfloat16 if dt == "bfloat16" else np.dtype(dt)
    if dtype is None:
        pytest.skip("no bfloat16 without ml_dtypes")
    vals = [0, 1, 3, 5, 10, 80] if np.dtype(dtype).kind in "iu" else \
        [0.0, -0.0, 1e-3, 0.7, 0.99, 1.0, -1.0, 2.5, -3.0, 10.0, 11.3, 88.0, 89.0, -89.0,
         np.inf, -np.inf, np.nan]
    x = np.array(vals).astype(dtype)
    got = jx.jit(getattr(jnp, name))(x)
    want = np.asarray(jax.jit(getattr(jax.numpy, name))(x))
    assert got.dtype == want.dtype
    g, w = got.astype(np.float64), want.astype(np.float64)
    close = np.isclose(g, w, rtol=2.5e-7 if got.dtype == np.float32 else 0, atol=0, equal_nan=True)
    assert close.all(), (x[~close], got[~close], want[~close])
    assert (np.signbit(g) == np.signbit(w)).all()


# --- weak types through the transformations ---------------------------------------
_WEAK_CASES = {
    "grad": lambda j: j.grad(lambda x: x * x)(3.0),
    "grad_of_grad": lambda j: j.grad(j.grad(lambda x: x * x * x))(3.0),
    "jit_grad": lambda j: j.jit(j.grad(lambda x: x * x))(3.0),
    "value_and_grad": lambda j: j.value_and_grad(lambda x: x * x)(3.0),
    "jvp": lambda j: j.jvp(lambda x: x * x, (3.0,), (1.0,)),
    "vjp": lambda j: j.vjp(lambda x: x * x, 3.0)[1](1.0),
    "mixed": lambda j: j.grad(lambda x, y: x * y, argnums=(0, 1))(3.0, np.float32(2)),
    "pytree": lambda j: j.grad(lambda p: p["a"] * p["b"])({"a": 1.0, "b": np.float32(2)}),
    "jit_astype": lambda j: j.jit(lambda x: x.astype(np.float32))(3.0),
    "jit_asarray": lambda j: j.jit(lambda x: j.numpy.asarray(x))(3.0),
    "jit_identity_pair": lambda j: j.jit(lambda x: (x * 2, x))(3.0),
}


def _weak_flags(tree_):
    return [bool(getattr(leaf, "weak_type", False)) for leaf in jx.tree_util.tree_leaves(tree_)]


@pytest.mark.parametrize("case", sorted(_WEAK_CASES))
def test_weak_types_through_transforms(case):
    """A derivative has its primal's type, weakness included: the gradient at a
    Python float is a weak float32 (it then promotes like the float it came from)."""
    got = _WEAK_CASES[case](jx)
    expected = {"grad": [True], "grad_of_grad": [True], "jit_grad": [True],
                "value_and_grad": [True, True], "jvp": [True, True], "vjp": [True],
                "mixed": [True, False], "pytree": [True, False], "jit_astype": [False],
                "jit_asarray": [True], "jit_identity_pair": [True, True]}[case]
    assert _weak_flags(got) == expected
    try:
        import jax
    except ImportError:
        return
    assert _weak_flags(_WEAK_CASES[case](jax)) == expected
    # the weak gradient promotes as a Python float would: bfloat16-free check with float16
    if case == "grad":
        assert (got * np.ones(2, np.float16)).dtype == np.float16


def _sin_times(y):
    return jx.lax.mul(jx.lax.sin(y), y)


def _wrapped_forms(lib):
    """checkpoint, custom_jvp and custom_vjp of one function, in `lib`'s API."""
    cj = lib.custom_jvp(_sin_times if lib is jx else lambda y: lib.lax.mul(lib.lax.sin(y), y))
    cj.defjvp(lambda p, t: (cj.fun(p[0]), t[0] * 2.0))
    cv = lib.custom_vjp(cj.fun)
    cv.defvjp(lambda y: (cj.fun(y), y), lambda y, c: (c * 3.0,))
    return {"checkpoint": lib.checkpoint(cj.fun), "custom_jvp": cj, "custom_vjp": cv}


@pytest.mark.parametrize("form", ["checkpoint", "custom_jvp", "custom_vjp"])
def test_float64_numpy_arguments_in_32bit_mode(form):
    """A NumPy float64 argument outside jit computes in float32 (the mode's dtype),
    as in JAX, value and gradient; it used to be refused by the call primitive."""
    x = np.random.default_rng(3).standard_normal((3, 4))
    f = _wrapped_forms(jx)[form]
    got, g = f(x), jx.grad(lambda v: f(v).sum())(x)
    assert got.dtype == np.float32 and g.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.sin(x) * x, rtol=1e-5)
    jax = pytest.importorskip("jax")
    jf = _wrapped_forms(jax)[form]
    want_g = jax.grad(lambda v: jf(v).sum())(x)
    assert np.asarray(want_g).dtype == np.float32
    np.testing.assert_allclose(np.asarray(g), np.asarray(want_g), rtol=1e-5, atol=1e-6)


def test_bitcast_target_dtype_follows_the_mode():
    """bitcast_convert_type(x, int64) in 32-bit mode reinterprets as int32, as JAX."""
    x = np.random.default_rng(4).standard_normal(5)
    got = jx.lax.bitcast_convert_type(x, np.int64)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), x.astype(np.float32).view(np.int32))
    with jx.enable_x64():
        assert jx.lax.bitcast_convert_type(x, np.int64).dtype == np.int64
    jax = pytest.importorskip("jax")
    np.testing.assert_array_equal(np.asarray(got),
                                  np.asarray(jax.lax.bitcast_convert_type(x, np.int64)))
