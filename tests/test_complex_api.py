"""Complex numbers through jx.numpy, jx.lax and jx.random, as JAX has them.

Every case runs three ways on random complex64 inputs: eagerly, traced
(make_graph -> eval_graph) and jit-compiled, each checked against jax.numpy
(values, dtype, weak type). The complex inverse functions are also checked on
their branch cuts against NumPy (which follows C99 there; JAX does not), and
the functions JAX refuses for complex inputs are refused. complex128 runs in
test_complex_api_x64.py, which imports these tables."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as lax
import jx.numpy as jnp

jax = pytest.importorskip("jax")
jjnp, jlax = jax.numpy, jax.lax

C64, F32, I32 = np.dtype("complex64"), np.dtype("float32"), np.dtype("int32")
TOL = {C64: 2e-5, F32: 2e-5, np.dtype("complex128"): 1e-12, np.dtype("float64"): 1e-12}
MODES = ["eager", "traced", "jit"]


def crand(rng, shape, dt=C64, scale=2.0):
    """Random complex values, parts standard normal times scale."""
    out = np.empty(shape, dt)
    out.real, out.imag = (rng.standard_normal(shape) * scale for _ in range(2))
    return out


def parts(re, im, dt=C64):
    """A complex array from exact parts (re + 1j * im would lose an imaginary -0.0)."""
    out = np.empty(np.shape(re), dt)
    out.real, out.imag = re, im
    return out


def run(mode, fn, args):
    """fn(jx.numpy, *args) eagerly, traced or compiled: (values, dtype, weak_type)."""
    f = lambda *xs: fn(jnp, *xs)        # noqa: E731
    if mode == "eager":
        out = f(*map(jnp.asarray, args))
        return np.asarray(out), out.dtype, out.weak_type
    if mode == "traced":
        graph = jx.make_graph(f)(*[jx.ShapeDtypeStruct(np.shape(a), a.dtype) for a in args])
        jx.verify(graph)
        (out,) = jx.eval_graph(graph, *args)
        aval = graph.out_avals[0]
        return np.asarray(out), aval.dtype, aval.weak_type
    out = jx.jit(f)(*args)
    return np.asarray(out), out.dtype, out.weak_type


def check(mode, fn, args, tol=1.0, want=None):
    """fn on jx against fn on jax.numpy (or `want`, a NumPy value of JAX's dtype)."""
    got, dt, weak = run(mode, fn, args)
    ref = fn(jjnp, *map(jjnp.asarray, args)) if want is None else want
    ref_weak = getattr(ref, "weak_type", False) if want is None else False
    ref = np.asarray(ref)
    assert (dt, weak) == (ref.dtype, ref_weak), (mode, dt, weak, ref.dtype, ref_weak)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if ref.dtype.kind in "fc":
        r = TOL[ref.dtype] * tol
        np.testing.assert_allclose(got, ref, rtol=r, atol=r * max(1.0, np.abs(ref).max(initial=0)
                                                                    if ref.size else 1.0),
                                   equal_nan=True, err_msg=mode)
    else:
        np.testing.assert_array_equal(got, ref, err_msg=mode)


# ---------------------------------------------------------------- elementwise

UNARY = ["abs", "absolute", "sign", "square", "reciprocal", "exp", "exp2", "log", "log2",
         "log10", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
         "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "negative",
         "positive", "conj", "conjugate", "real", "imag", "angle", "isnan", "isinf",
         "isfinite", "rint", "round", "around", "nan_to_num", "sinc", "deg2rad", "rad2deg",
         "iscomplex", "isreal", "logical_not", "acos", "asin", "atan", "acosh", "asinh",
         "atanh", "sort_complex"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, mode, rng):
    x = crand(rng, (3, 7))
    tol = 8 if name in ("tan", "sinc") else 1   # (cancellation near the poles)
    check(mode, lambda m, x: getattr(m, name)(x), [x], tol)


SPECIAL = parts(np.array([np.inf, -np.inf, np.nan, 1.0, np.inf, 0.0, -0.0, 3e38], F32),
                np.array([0.0, 1.0, 1.0, np.nan, np.nan, -np.inf, 0.0, 3e38], F32))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "nan_to_num", "real", "imag",
                                  "conj", "abs", "iscomplex", "isreal"])
def test_special_values(name, mode):
    # |inf + nan j| is inf, as C99's hypot and NumPy (XLA, hence JAX, gives nan)
    want = np.abs(SPECIAL) if name == "abs" else None
    check(mode, lambda m, x: getattr(m, name)(x), [SPECIAL], want=want)


def test_angle_degrees_and_real_inputs():
    x = crand(np.random.default_rng(1), (5,))
    check("eager", lambda m, x: m.angle(x, deg=True), [x])
    for v in (3, True, -3.0, np.float32(-2), np.float32([-3, 2]), np.int32([1, -1])):
        assert_like_jax(lambda m: m.angle(v))
        assert_like_jax(lambda m: m.angle(v, deg=True))


def assert_like_jax(fn, tol=1.0):
    """fn(jx.numpy) == fn(jax.numpy): value, dtype and weak type (no arguments)."""
    got, want = fn(jnp), fn(jjnp)
    assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), (got, want)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=TOL.get(
        np.dtype(want.dtype), 0) * tol, equal_nan=True)


# branch cuts: the side a cut's value comes from is the sign of the zero part
CUTS = parts(np.array([2, 2, -2, -2, 0, -0.0, 0, -0.0, 0.5, 0.5, 5, -5, 1, -1, 0, 1e-6, 3e10],
                      F32),
             np.array([0, -0.0, 0, -0.0, 2, 2, -2, -2, 0, -0.0, 1e-30, -1e-30, 0, 0, 1, 1e-7,
                       1], F32))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["arcsin", "arccos", "arctan", "arcsinh", "arccosh",
                                  "arctanh", "sqrt", "log"])
def test_branch_cuts_as_numpy(name, mode):
    want = getattr(np, name)(CUTS.astype(np.complex128)).astype(C64)
    check(mode, lambda m, x: getattr(m, name)(x), [CUTS], want=want)


BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "power", "float_power",
          "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "maximum",
          "minimum", "fmax", "fmin", "logaddexp", "isclose", "logical_and", "logical_or"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", BINARY)
def test_binary(name, mode, rng):
    x, y = crand(rng, (4, 5)), crand(rng, (5,))
    # ties in the real parts: the order of complex numbers falls to the imaginary parts
    x[0] = y.real + 1j * (y.imag + np.float32(rng.choice([-1, 0, 1])))
    check(mode, lambda m, a, b: getattr(m, name)(a, b), [x, y], tol=3)


MIXED = {
    "x_f32 * 1j": lambda m, x, f, i: m.multiply(f, 1j),
    "1j * x_i32": lambda m, x, f, i: 1j * m.asarray(i),
    "x + 2.5": lambda m, x, f, i: x + 2.5,
    "x * i32": lambda m, x, f, i: m.multiply(x, i),
    "x / f32": lambda m, x, f, i: x / f,
    "f32 ** x": lambda m, x, f, i: m.power(m.abs(f) + 0.5, x),
    "x ** 3": lambda m, x, f, i: m.asarray(x) ** 3,
    "x ** -2": lambda m, x, f, i: m.asarray(x) ** -2,
    "x ** 0.5": lambda m, x, f, i: m.asarray(x) ** 0.5,
    "x ** (1+1j)": lambda m, x, f, i: m.asarray(x) ** (1 + 1j),
    "x == 1j": lambda m, x, f, i: m.equal(x, 1j),
    "where(f > 0, x, 1j)": lambda m, x, f, i: m.where(f > 0, x, 1j),
    "where(f > 0, f, 1j)": lambda m, x, f, i: m.where(f > 0, f, 1j),
    "isclose(x, x + 1e-6)": lambda m, x, f, i: m.isclose(x, x + 1e-6j),
    "allclose": lambda m, x, f, i: m.allclose(x, x * (1 + 1e-7)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(MIXED))
def test_mixed_with_real_and_scalars(name, mode, rng):
    x, f = crand(rng, (6,)), rng.standard_normal(6).astype(F32)
    i = rng.integers(-5, 6, 6).astype(I32)
    check(mode, MIXED[name], [x, f, i], tol=3)


def test_python_complex_scalars_are_weak():
    for fn in (lambda m: m.asarray(1j), lambda m: m.sqrt(1j), lambda m: m.abs(3 + 4j),
               lambda m: m.square(m.asarray(1j)), lambda m: 1j * m.arange(3),
               lambda m: m.arange(3.0) * 1j, lambda m: m.float16(2) + 1j,
               lambda m: m.power(1j, 2), lambda m: m.full(2, 1 + 1j),
               lambda m: m.zeros_like(2j), lambda m: m.real(1 + 2j), lambda m: m.imag(1 + 2j),
               lambda m: m.sinh(0.5 + 1j), lambda m: m.cosh(1j), lambda m: m.log2(1j),
               lambda m: m.log10(1 + 1j), lambda m: m.arcsin(0.5 + 1j), lambda m: m.round(1j),
               lambda m: m.isnan(1j), lambda m: m.angle(1j), lambda m: m.maximum(1j, 2)):
        assert_like_jax(fn)


# ---------------------------------------------------------------- reductions, products

REDUCE = {
    "sum": lambda m, x: m.sum(x), "sum0": lambda m, x: m.sum(x, 0),
    "prod1": lambda m, x: m.prod(x, 1), "mean": lambda m, x: m.mean(x),
    "mean0": lambda m, x: m.mean(x, 0, keepdims=True), "var": lambda m, x: m.var(x),
    "var1": lambda m, x: m.var(x, 1, ddof=1), "std0": lambda m, x: m.std(x, 0),
    "max": lambda m, x: m.max(x), "min0": lambda m, x: m.min(x, 0),
    "max1k": lambda m, x: m.max(x, 1, keepdims=True),
    "max_initial": lambda m, x: m.max(x, 1, initial=0.5 + 0j),
    "ptp1": lambda m, x: m.ptp(x, 1), "cumsum1": lambda m, x: m.cumsum(x, 1),
    "cumprod0": lambda m, x: m.cumprod(x, 0), "nansum": lambda m, x: m.nansum(x),
    "trace": lambda m, x: m.trace(x), "diff": lambda m, x: m.diff(x),
    "norm": lambda m, x: m.linalg.norm(x), "norm_ax1": lambda m, x: m.linalg.norm(x, axis=1),
    "norm_1": lambda m, x: m.linalg.norm(x[0], 1), "norm_inf": lambda m, x: m.linalg.norm(
        x[0], np.inf), "norm_fro": lambda m, x: m.linalg.norm(x, "fro"),
    "average": lambda m, x: m.average(x, 1, weights=m.arange(1.0, 6.0)),
    "cov": lambda m, x: m.cov(x), "corrcoef": lambda m, x: m.corrcoef(x),
    "count_nonzero": lambda m, x: m.count_nonzero(x), "any": lambda m, x: m.any(x),
    "nanvar": lambda m, x: m.nanvar(x, 1), "nanstd": lambda m, x: m.nanstd(x),
    "nanmean": lambda m, x: m.nanmean(x, 0), "nanmax": lambda m, x: m.nanmax(x, 1),
    "sort1": lambda m, x: m.sort(x, 1), "sort0": lambda m, x: m.sort(x, 0),
    "sort_desc": lambda m, x: m.sort(x, 1, descending=True),
    "argsort": lambda m, x: m.argsort(x, 1), "lexsort": lambda m, x: m.lexsort([x[0], x[1]]),
    "unique": lambda m, x: m.unique(x[2], size=5),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(REDUCE))
def test_reductions(name, mode, rng):
    x = crand(rng, (4, 5))
    x[1, :3] = x[0, :3].real + 1j * rng.standard_normal(3)   # ties in real parts
    x[2, :] = x[2, 0].real + 1j * rng.standard_normal(5)
    check(mode, REDUCE[name], [x], tol=10)


NAN_REDUCE = ["nansum", "nanprod", "nanmax", "nanmin", "nancumsum", "nanmean", "nanvar"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAN_REDUCE)
def test_nan_reductions_skip_complex_nans(name, mode, rng):
    x = crand(rng, (3, 4))
    x[0, 1], x[2, 3] = complex(np.nan, 1), complex(2, np.nan)
    check(mode, lambda m, x: getattr(m, name)(x, axis=1), [x], tol=10)


PRODUCTS = {
    "dot": lambda m, a, b: m.dot(a, b), "matmul": lambda m, a, b: m.matmul(a, b),
    "@": lambda m, a, b: a @ b, "vdot": lambda m, a, b: m.vdot(a, b[:, :3].T),
    "inner": lambda m, a, b: m.inner(a, b.T), "outer": lambda m, a, b: m.outer(a[0], b[:, 0]),
    "tensordot": lambda m, a, b: m.tensordot(a, b, 1),
    "einsum": lambda m, a, b: m.einsum("ij,jk->ik", a, b),
    "einsum_conj": lambda m, a, b: m.einsum("ij,ij->i", a, m.conj(b[:, :3].T)),
    "kron": lambda m, a, b: m.kron(a[0, :2], b[:2, 0]),
    "cross": lambda m, a, b: m.cross(a[0, :3], b[:3, 0]),
    "vecdot": lambda m, a, b: m.vecdot(a, b[:, :3].T),
    "linalg_vecdot": lambda m, a, b: m.linalg.vecdot(a[0], b[:, 1]),
    "vecmat": lambda m, a, b: m.vecmat(a[:, 0], a), "matvec": lambda m, a, b: m.matvec(
        a, b[:, 0]), "correlate": lambda m, a, b: m.correlate(a[0], b[:3, 1], "full"),
    "correlate_short": lambda m, a, b: m.correlate(a[0, :2], b[:, 1]),
    "convolve": lambda m, a, b: m.convolve(a[0], b[:, 1], "same"),
    "dot_real": lambda m, a, b: m.dot(a, b.real), "matmul_int": lambda m, a, b: m.matmul(
        a, m.ones((5, 2), m.int32)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products(name, mode, rng):
    check(mode, PRODUCTS[name], [crand(rng, (3, 5)), crand(rng, (5, 4))], tol=10)


# ---------------------------------------------------------------- structure and indexing

STRUCTURE = {
    "reshape": lambda m, x: m.reshape(x, (5, 4)), "transpose": lambda m, x: x.T,
    "concatenate": lambda m, x: m.concatenate([x, x.real]),
    "stack": lambda m, x: m.stack([x[0], x[1]], 1), "flip": lambda m, x: m.flip(x, 1),
    "roll": lambda m, x: m.roll(x, 2), "pad": lambda m, x: m.pad(x, 1),
    "tile": lambda m, x: m.tile(x, (1, 2)), "triu": lambda m, x: m.triu(x),
    "diag": lambda m, x: m.diag(x), "broadcast": lambda m, x: m.broadcast_to(x[0], (3, 5)),
    "slice": lambda m, x: x[1:3, ::2], "int_index": lambda m, x: x[m.array([2, 0])],
    "take": lambda m, x: m.take(x, m.array([1, 3]), axis=1),
    "take_along": lambda m, x: m.take_along_axis(x, m.argsort(x.real, 1), 1),
    "at_set": lambda m, x: x.at[1].set(1j), "at_add": lambda m, x: x.at[m.array([0, 0, 2])]
    .add(1 + 1j), "at_mul": lambda m, x: x.at[:, 1].multiply(2j),
    "at_set_real": lambda m, x: x.at[0, 0].set(3.0),
    "at_max": lambda m, x: x.at[1:3].max(x[0]), "at_min": lambda m, x: x.at[:, 2].min(0.1j),
    "at_divide": lambda m, x: x.at[0].divide(2j), "at_get": lambda m, x: x.at[m.array(
        [3, 0])].get(), "where": lambda m, x: m.where(
        x.real > 0, x, x.conj()), "select": lambda m, x: m.select([x.real > 1, x.imag > 0],
                                                                   [x, 2 * x], 1j),
    "real_attr": lambda m, x: x.real, "imag_attr": lambda m, x: x.imag,
    "conj_method": lambda m, x: x.conj(), "conjugate_method": lambda m, x: x.conjugate(),
    "astype_f32": lambda m, x: x.astype(m.float32), "astype_i32": lambda m, x: x.astype(
        m.int32), "astype_bool": lambda m, x: x.astype(bool),
    "complex64_of": lambda m, x: m.complex64(x.real), "zeros_like": lambda m, x: m.zeros_like(x),
    "ones_like": lambda m, x: m.ones_like(x), "full_like": lambda m, x: m.full_like(x, 1j),
    "lax_complex": lambda m, x: _lax(m).complex(x.real, x.imag),
    "lax_real": lambda m, x: _lax(m).real(x), "lax_imag": lambda m, x: _lax(m).imag(x),
    "lax_conj": lambda m, x: _lax(m).conj(x), "lax_conj_real": lambda m, x: _lax(m).conj(
        x.real), "lax_mul": lambda m, x: _lax(m).mul(x, x),
    "lax_abs": lambda m, x: _lax(m).abs(x), "lax_max": lambda m, x: _lax(m).max(x, x[::-1]),
    "lax_min": lambda m, x: _lax(m).min(x, x.conj()),
    "lax_dynamic_slice": lambda m, x: _lax(m).dynamic_slice(x, (1, 2), (2, 2)),
    "lax_dynamic_update_slice": lambda m, x: _lax(m).dynamic_update_slice(
        x, x[:2, :2] * 1j, (2, 1)),
    "lax_cond": lambda m, x: _lax(m).cond(x[0, 0].real > 0, lambda v: v * 1j,
                                          lambda v: v.conj(), x),
    "lax_scan": lambda m, x: _lax(m).scan(lambda c, r: (c * r, c + r), x[0], x)[1],
    "lax_while": lambda m, x: _lax(m).while_loop(lambda c: c[0] < 3, lambda c: (
        c[0] + 1, c[1] * x[0] + 1j), (0, x[1]))[1], "lax_select": lambda m, x: _lax(m).select(
        x.real > 0, x, x * 2),
}


def _lax(m):
    return lax if m is jnp else jlax


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(STRUCTURE))
def test_structure_and_indexing(name, mode, rng):
    check(mode, STRUCTURE[name], [crand(rng, (4, 5))])


def test_scan_and_fori_loop_carry_complex(rng):
    z0 = crand(rng, (6,), scale=0.3)

    def mandel(m, c):           # the Mandelbrot iteration, in a fori_loop
        lx = lax if m is jnp else jlax
        return lx.fori_loop(0, 8, lambda i, z: z * z + c, m.zeros_like(c))
    for mode in MODES:
        check(mode, mandel, [z0])


# ---------------------------------------------------------------- names and creation

def test_dtype_names():
    assert jnp.complex64.dtype == np.complex64 and jnp.complex128.dtype == np.complex128
    assert jnp.csingle is jnp.complex64 and jnp.cdouble is jnp.complex128
    assert jnp.complex_ is jnp.complex128 and jnp.complexfloating is np.complexfloating
    assert jnp.ComplexWarning is jjnp.ComplexWarning
    assert np.dtype(jnp.complex64) == np.complex64 and jnp.complex64 == np.complex64
    assert jnp.issubdtype(jnp.complex64, jnp.complexfloating)
    assert jnp.issubdtype(jnp.complex64, jnp.inexact)
    assert not jnp.issubdtype(jnp.float32, jnp.complexfloating)
    assert jnp.isdtype(jnp.complex64, "complex floating") and jnp.isdtype(jnp.complex64,
                                                                         "numeric")
    assert jnp.result_type(jnp.float32, jnp.complex64) == np.complex64
    assert jnp.promote_types(np.float64, np.complex64) == np.complex128
    assert jnp.iscomplexobj(jnp.ones(2, jnp.complex64)) and not jnp.isrealobj(jnp.asarray(1j))
    assert jnp.isrealobj(jnp.ones(2)) and not jnp.iscomplexobj(jnp.ones(2))
    for name in ("angle", "sort_complex", "complex64", "csingle"):
        assert name not in dir(jnp) or getattr(jnp, name) is not None
    for name in ("complex", "conj", "real", "imag"):
        assert callable(getattr(lax, name))


CREATE = {
    "array": lambda m: m.array([1 + 2j, 3]), "array_dtype": lambda m: m.array([1, 2],
                                                                              m.complex64),
    "asarray_c128": lambda m: m.asarray(np.array([1 + 2j, -0.5j])),
    "asarray_weak": lambda m: m.asarray(2 - 1j), "c64_scalar": lambda m: m.complex64(3),
    "c64_of_complex": lambda m: m.complex64(1.5 - 2j), "zeros": lambda m: m.zeros(3,
                                                                                m.complex64),
    "ones": lambda m: m.ones((2, 2), m.complex64), "full": lambda m: m.full(3, 1 + 1j),
    "full_dtype": lambda m: m.full(3, 2, m.complex64), "empty": lambda m: m.empty(
        2, m.complex64) * 0, "eye": lambda m: m.eye(3, dtype=m.complex64),
    "identity": lambda m: m.identity(2, m.complex64), "arange": lambda m: m.arange(
        4, dtype=m.complex64), "linspace": lambda m: m.linspace(0, 1 + 1j, 5),
    "linspace_dtype": lambda m: m.linspace(0, 2, 5, dtype=m.complex64),
    "astype_complex": lambda m: m.arange(3.0).astype(complex),
    "astype_c64": lambda m: m.arange(3).astype(m.complex64),
    "zeros_like_dtype": lambda m: m.zeros_like(m.arange(3.0), dtype=m.complex64),
    "one_j_times": lambda m: 1j * m.arange(3.0), "real_of_real": lambda m: m.real(
        m.arange(3)), "imag_of_real": lambda m: m.imag(m.arange(3.0)),
    "conj_of_int": lambda m: m.conj(m.arange(3)), "lax_complex_weak": lambda m: _lax(
        m).complex(1.0, 2.0),
}


@pytest.mark.parametrize("name", list(CREATE))
def test_creation(name):
    assert_like_jax(CREATE[name])


def test_python_conversions():
    z = jnp.asarray(np.complex64(1.5 - 2j))
    assert complex(z) == 1.5 - 2j and isinstance(complex(z), complex)
    assert complex(jnp.sum(jnp.asarray([1j, 2]))) == 2 + 1j
    assert z.item() == 1.5 - 2j and jnp.asarray([1j]).tolist() == [1j]
    assert "complex64" in repr(jnp.asarray([1j]))
    g = jx.make_graph(lambda x: x.real + x.imag * 2)(jx.ShapeDtypeStruct((2,), C64))
    assert g.out_avals[0].dtype == F32


# ---------------------------------------------------------------- random

def test_random_normal_complex_as_jax():
    for seed, shape in ((0, (3, 4)), (1, ()), (7, (50,))):
        got = jx.random.normal(jx.random.key(seed), shape, jnp.complex64)
        want = jax.random.normal(jax.random.key(seed), shape, jjnp.complex64)
        assert got.dtype == want.dtype == C64 and got.shape == shape and not got.weak_type
        # the float normals themselves may differ from JAX's by an ulp (erfinv)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=4e-7, atol=4e-7)
        k_re, k_im = jx.random.split(jx.random.key(seed))
        half = np.float32(np.sqrt(0.5))
        exact = parts(np.asarray(jx.random.normal(k_re, shape)) * half,
                      np.asarray(jx.random.normal(k_im, shape)) * half)
        np.testing.assert_array_equal(np.asarray(got), exact)
    big = np.asarray(jx.random.normal(jx.random.key(3), (20000,), jnp.complex64))
    assert abs(big.real.var() - 0.5) < 0.03 and abs(big.imag.var() - 0.5) < 0.03
    assert abs(np.corrcoef(big.real, big.imag)[0, 1]) < 0.03
    traced = jx.jit(lambda k: jx.random.normal(k, (3, 4), jnp.complex64))(jx.random.key(0))
    np.testing.assert_array_equal(np.asarray(traced), np.asarray(
        jx.random.normal(jx.random.key(0), (3, 4), jnp.complex64)))


@pytest.mark.parametrize("name", ["uniform", "laplace", "truncated_normal", "exponential"])
def test_random_real_samplers_refuse_complex(name):
    fn = getattr(jx.random, name)
    args = (-1.0, 1.0, (3,)) if name == "truncated_normal" else ((3,),)
    with pytest.raises((TypeError, ValueError), match="float.* dtype"):
        fn(jx.random.key(0), *args, dtype=jnp.complex64)


# ---------------------------------------------------------------- refusals

REFUSED = {
    "clip": (lambda x: jnp.clip(x, 0, 1), ValueError, "Complex values have no ordering"),
    "floor_divide": (lambda x: jnp.floor_divide(x, x), TypeError, "floor_divide"),
    "remainder": (lambda x: jnp.remainder(x, x), TypeError, "rem"),
    "argmax": (lambda x: jnp.argmax(x), TypeError, "argmax"),
    "argmin": (lambda x: jnp.argmin(x), TypeError, "argmin"),
    "floor": (lambda x: jnp.floor(x), TypeError, "floor"),
    "ceil": (lambda x: jnp.ceil(x), TypeError, "ceil"),
    "trunc": (lambda x: jnp.trunc(x), TypeError, "trunc"),
    "hypot": (lambda x: jnp.hypot(x, x), ValueError, "hypot"),
    "copysign": (lambda x: jnp.copysign(x, x), TypeError, "copysign"),
    "signbit": (lambda x: jnp.signbit(x), ValueError, "signbit"),
    "cbrt": (lambda x: jnp.cbrt(x), TypeError, "cbrt"),
    "fabs": (lambda x: jnp.fabs(x), TypeError, "fabs"),
    "heaviside": (lambda x: jnp.heaviside(x, x), TypeError, "heaviside"),
    "arctan2": (lambda x: jnp.arctan2(x, x), TypeError, "atan2"),
    "lax.real of float": (lambda x: lax.real(x.real), TypeError, "real"),
    "nextafter": (lambda x: jnp.nextafter(x, x), TypeError, "nextafter"),
    "isposinf": (lambda x: jnp.isposinf(x), ValueError, "isposinf"),
    "isneginf": (lambda x: jnp.isneginf(x), ValueError, "isneginf"),
    "lax.add(float, 1j)": (lambda x: lax.add(x.real, 1j), TypeError, "Python complex 1j"),
    "asarray(1j, float32)": (lambda x: jnp.asarray(1j, jnp.float32) + x, TypeError,
                             "Python complex"),
}


def test_linalg():
    rng = np.random.default_rng(3)
    for n in (1, 2, 3):     # det's closed forms take complex matrices
        a = crand(rng, (2, n, n))
        check("eager", lambda m, a: m.linalg.det(a), [a], tol=10)
        check("jit", lambda m, a: m.linalg.det(a), [a], tol=10)
    a = crand(rng, (3, 3))
    check("eager", lambda m, a: m.linalg.matrix_power(a, 3), [a], tol=10)
    check("eager", lambda m, a: m.linalg.multi_dot([a, a.T, a]), [a], tol=10)
    for name in ("inv", "solve", "cholesky", "qr", "eigh", "svd", "slogdet", "pinv", "lstsq"):
        args = (a, a) if name in ("solve", "lstsq") else (a,)
        with pytest.raises(NotImplementedError, match=f"linalg.{name}: complex matrices"):
            getattr(jnp.linalg, name)(*args)
    with pytest.raises(NotImplementedError, match="complex matrices"):
        jnp.linalg.det(crand(rng, (4, 4)))


def test_scatter_max_at_array_indices_not_yet():
    x = jnp.asarray(crand(np.random.default_rng(4), (4,)))
    with pytest.raises(NotImplementedError, match="at array indices"):
        x.at[jnp.array([0, 2])].max(1j)


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_for_complex(name):
    fn, err, msg = REFUSED[name]
    x = jnp.asarray(crand(np.random.default_rng(2), (3,)))
    with pytest.raises(err, match=msg):
        fn(x)
    with pytest.raises(err, match=msg):
        jx.make_graph(fn)(jx.ShapeDtypeStruct((3,), C64))
