"""jx.lax.fft and jx.numpy.fft's transforms, in 32-bit mode: the primitive against
np.fft (eager and through a verified graph), every jnp.fft transform against NumPy
over shapes, n/s, axes and norm, eagerly and compiled, dtypes and errors against
JAX, the vjp against the jvp (JAX's unconjugated pairing Re(sum(ct * t))), vmap
against a Python loop, and grad against jax.grad. float64/complex128 and finite
differences: tests/test_fft_api_x64.py.

The compiled (jx.jit) checks skip while the complex lowering has no rule for the
fft primitive, and only for that error."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as L
import jx.numpy as jnp
from jx import core
from jx.prims import fft as fp

COVERED = {"fft"}

F32, C64 = np.dtype(np.float32), np.dtype(np.complex64)
FftType = L.FftType


def _jax():
    return pytest.importorskip("jax")


def _rand(rng, shape, dt):
    dt = np.dtype(dt)
    x = rng.standard_normal(shape)
    if dt.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def _close(got, want, rtol=2e-5):
    """Relative to the largest magnitude: FFT errors spread over the whole output."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


# ------------------------------------------------------------------ the primitive
# (fft type, operand shape, fft_lengths)
PRIM_CASES = [
    (FftType.FFT, (8,), (8,)), (FftType.FFT, (3, 5), (5,)), (FftType.FFT, (2, 3, 4), (3, 4)),
    (FftType.IFFT, (2, 3, 4, 6), (3, 4, 6)), (FftType.IFFT, (7,), (7,)),
    (FftType.RFFT, (3, 8), (8,)), (FftType.RFFT, (2, 5, 7), (5, 7)),
    (FftType.RFFT, (4, 3, 2, 9), (3, 2, 9)),
    (FftType.IRFFT, (3, 5), (8,)), (FftType.IRFFT, (3, 5), (9,)),
    (FftType.IRFFT, (2, 4, 3), (4, 5)), (FftType.IRFFT, (2, 3, 2, 4), (3, 2, 6)),
]
_NP = {FftType.FFT: np.fft.fftn, FftType.IFFT: np.fft.ifftn, FftType.RFFT: np.fft.rfftn,
       FftType.IRFFT: np.fft.irfftn}


def _prim_input(rng, typ, shape):
    return _rand(rng, shape, F32 if typ == FftType.RFFT else C64)


def _prim_want(x, typ, lengths):
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    return _NP[typ](x.astype(np.complex128 if x.dtype.kind == "c" else np.float64),
                    s=lengths, axes=axes)


@pytest.mark.parametrize("typ,shape,lengths", PRIM_CASES)
def test_primitive_eager_and_traced(typ, shape, lengths, rng):
    x = _prim_input(rng, typ, shape)
    want = _prim_want(x, typ, lengths)
    out_dt = F32 if typ == FftType.IRFFT else C64
    got = core.bind(fp.fft, x, fft_type=typ, fft_lengths=lengths)[0]
    assert got.dtype == out_dt
    _close(got, want)
    graph = jx.make_graph(lambda v: core.bind(fp.fft, v, fft_type=typ,
                                              fft_lengths=lengths)[0])(x)
    jx.verify(graph)
    assert [e.prim.name for e in graph.eqns] == ["fft"]
    (out,) = jx.eval_graph(graph, x)
    _close(out, want)
    assert f"fft_type={typ.name}" in str(graph)


def test_empty_transforms_as_jax():
    jax = _jax()
    for norm in (None, "ortho", "forward"):
        got = jnp.fft.irfft(np.ones(1, C64), norm=norm)
        want = jax.numpy.fft.irfft(np.ones(1, C64), norm=norm)
        assert got.shape == want.shape == (0,) and got.dtype == want.dtype
    for v in (2.0, 2j):
        got, want = jnp.fft.fftn(v, axes=()), jax.numpy.fft.fftn(v, axes=())
        assert got.dtype == want.dtype and got.weak_type == want.weak_type
        assert got.shape == () and complex(got) == v


def test_primitive_empty_transforms_as_jax():
    # irfft of a single bin is an empty signal (JAX: f32[0]); empty batches stay empty
    out = core.bind(fp.fft, np.ones((3, 1), C64), fft_type=FftType.IRFFT, fft_lengths=(0,))[0]
    assert out.shape == (3, 0) and out.dtype == F32
    out = core.bind(fp.fft, np.ones((0, 4), C64), fft_type=FftType.FFT, fft_lengths=(4,))[0]
    assert out.shape == (0, 4)


@pytest.mark.parametrize("typ,dt,shape,lengths,match", [
    (FftType.FFT, F32, (4,), (4,), "FFT input must be complex64 or complex128, got float32"),
    (FftType.FFT, C64, (4,), (5,), r"minor dimensions must be equal to fft_lengths \(5,\)"),
    (FftType.FFT, C64, (4,), (1, 4), "at least as many input dimensions"),
    (FftType.RFFT, C64, (4,), (4,), "RFFT input must be float32 or float64"),
    (FftType.RFFT, F32, (4,), (6,), "RFFT input shape"),
    (FftType.IRFFT, F32, (4,), (6,), "IRFFT input must be complex64"),
    (FftType.IRFFT, C64, (3, 4), (2, 6), "all except the last fft_length"),
    (FftType.IRFFT, C64, (4,), (8,), r"fft_length\[-1\]/2\+1. Got: 4 but fft_length is 8"),
    (FftType.FFT, C64, (2, 2, 2, 2), (2, 2, 2, 2), "1 to 3 static ints"),
])
def test_primitive_errors(typ, dt, shape, lengths, match):
    with pytest.raises(ValueError, match=match):
        core.bind(fp.fft, np.ones(shape, dt), fft_type=typ, fft_lengths=lengths)
    with pytest.raises(ValueError, match=match):
        jx.make_graph(lambda v: core.bind(fp.fft, v, fft_type=typ, fft_lengths=lengths))(
            np.ones(shape, dt))


# ------------------------------------------------------------------ jx.lax.fft
@pytest.mark.parametrize("dt", ["int32", "bool", "float16", "bfloat16", "float32", "complex64"])
@pytest.mark.parametrize("typ", ["fft", "IFFT", FftType.RFFT, FftType.IRFFT])
def test_lax_fft_dtypes_match_jax(dt, typ):
    jax = _jax()
    lengths = (6,) if typ != FftType.IRFFT else (10,)
    x = np.arange(6).astype(jnp.dtype(dt)) if dt != "bool" else np.arange(6) % 2 == 0
    try:
        want = jax.lax.fft(x, typ if isinstance(typ, str) else jax.lax.FftType(int(typ)),
                           lengths)
    except Exception as e:          # noqa: BLE001 (the error type is what is compared)
        with pytest.raises(type(e)):
            L.fft(x, typ, lengths)
        return
    got = L.fft(x, typ, lengths)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.weak_type == want.weak_type
    _close(got, want, 1e-2 if dt in ("float16", "bfloat16") else 2e-5)


def test_lax_fft_types_and_errors():
    x = np.arange(8, dtype=F32)
    _close(L.fft(x, "RFFT", (8,)), np.fft.rfft(x))
    _close(L.fft(x, "ifft", (8,)), np.fft.ifft(x))
    assert L.fft(x, FftType.FFT, ()).dtype == C64          # no axes: converted only
    with pytest.raises(ValueError, match="Unknown FFT type 'bogus'"):
        L.fft(x, "bogus", (8,))
    with pytest.raises(TypeError, match="Unknown FFT type value '5'"):
        L.fft(x, 5, (8,))
    with pytest.raises(ValueError, match="only real valued inputs supported for rfft"):
        L.fft(x.astype(C64), "rfft", (8,))
    assert str(FftType.IRFFT) == "IRFFT" and int(FftType.IRFFT) == 3


# ------------------------------------------------------------------ jnp.fft vs NumPy
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
TWO_D = ["fft2", "ifft2", "rfft2", "irfft2"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn"]
REAL_IN = {"rfft", "ihfft", "rfft2", "rfftn"}

# (shape, keyword arguments) per family
CASES_1D = [((16,), {}), ((3, 7), {}), ((4, 5), {"axis": 0}), ((2, 6, 3), {"axis": 1}),
            ((5,), {"n": 8}), ((9,), {"n": 4}), ((3, 6), {"n": 11, "axis": -2}),
            ((1,), {"n": 1}), ((2, 3, 10), {"n": 7})]
CASES_2D = [((4, 6), {}), ((2, 5, 7), {}), ((3, 4, 5), {"axes": (0, 2)}),
            ((3, 4, 5), {"axes": (2, 0)}), ((4, 6), {"s": (3, 8)}),
            ((2, 5, 4), {"s": (6, 3), "axes": (-1, 1)})]
CASES_ND = [((4, 6), {}), ((2, 3, 4), {}), ((2, 3, 4, 5), {}),
            ((2, 3, 2, 2, 3), {}), ((3, 4, 5), {"axes": (1,)}), ((3, 4, 5), {"axes": (2, 0)}),
            ((3, 4, 5), {"s": (5, 6)}), ((3, 4, 5), {"s": (2, 7, 3), "axes": (1, 2, 0)}),
            ((2, 3, 4, 2), {"axes": (3, 0, 2, 1)}), ((3, 4), {"axes": ()})]

ALL = ([(f, sh, kw) for f in ONE_D for sh, kw in CASES_1D] +
       [(f, sh, kw) for f in TWO_D for sh, kw in CASES_2D] +
       [(f, sh, kw) for f in N_D for sh, kw in CASES_ND])


def _numpy_input(rng, name, shape, dt):
    if name in REAL_IN:
        return _rand(rng, shape, dt)
    return _rand(rng, shape, C64 if dt == F32 else dt)


def _want(name, x, kw, norm):
    x64 = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    if kw.get("axes") == ():            # no axes: the input, converted (JAX's lax.fft)
        return x64
    if "s" in kw and "axes" not in kw:  # (NumPy 2 deprecates s without axes)
        kw = dict(kw, axes=tuple(range(-len(kw["s"]), 0)))
    return getattr(np.fft, name)(x64, norm=norm, **kw)


def _out_dtype(name, kw):
    if kw.get("axes") == ():            # RFFT converts to float, the others to complex
        return F32 if name == "rfftn" else C64
    if name in ("irfft", "irfft2", "irfftn", "hfft"):
        return F32
    return C64


@pytest.mark.parametrize("name,shape,kw", ALL)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_transforms_match_numpy(name, shape, kw, norm, rng):
    x = _numpy_input(rng, name, shape, F32)
    got = getattr(jnp.fft, name)(x, norm=norm, **kw)
    assert got.dtype == _out_dtype(name, kw)
    _close(got, _want(name, x, kw, norm))


@pytest.mark.parametrize("name", ONE_D + TWO_D + N_D)
@pytest.mark.parametrize("norm", [None, "ortho"])
def test_transforms_compiled_match_numpy(name, norm, rng):
    family = CASES_1D if name in ONE_D else CASES_2D if name in TWO_D else CASES_ND
    for shape, kw in family[1:4]:
        x = _numpy_input(rng, name, shape, F32)
        got = jx.jit(lambda v: getattr(jnp.fft, name)(v, norm=norm, **kw))(x)
        assert got.dtype == _out_dtype(name, kw)
        _close(got, _want(name, x, kw, norm))


def test_round_trips_and_int_inputs():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    _close(jnp.fft.fft(x), np.fft.fft(x))
    _close(jnp.fft.rfft2(x), np.fft.rfft2(x))
    assert jnp.fft.fft(x).dtype == C64 and jnp.fft.rfft(x).dtype == C64
    y = np.random.default_rng(1).standard_normal((5, 6)).astype(F32)
    _close(jnp.fft.irfftn(jnp.fft.rfftn(y), y.shape), y)
    _close(jnp.fft.ifft2(jnp.fft.fft2(y)), y)
    _close(jnp.fft.hfft(jnp.fft.ihfft(y[0]), 6), y[0])


# ------------------------------------------------------------------ dtypes and errors vs JAX
@pytest.mark.parametrize("name", ONE_D + N_D)
@pytest.mark.parametrize("dt", ["int32", "bool", "float16", "float32", "complex64"])
def test_dtypes_match_jax(name, dt):
    jax = _jax()
    x = (np.arange(12) % 5).reshape(3, 4).astype(jnp.dtype(dt))
    try:
        want = getattr(jax.numpy.fft, name)(x)
    except Exception as e:          # noqa: BLE001 (the error type is what is compared)
        with pytest.raises(type(e)):
            getattr(jnp.fft, name)(x)
        return
    got = getattr(jnp.fft, name)(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.weak_type == want.weak_type
    _close(got, want, 1e-2 if dt == "float16" else 2e-5)


ERRORS = [
    ("fft", lambda m: m.fft.fft(np.ones(4, F32), norm="bad")),
    ("n < 1", lambda m: m.fft.fft(np.ones(4, F32), n=0)),
    ("negative s", lambda m: m.fft.rfftn(np.ones((4, 4), F32), s=(3, -1))),
    ("repeated axes", lambda m: m.fft.fftn(np.ones((4, 4), F32), axes=(0, 0))),
    ("2 axes", lambda m: m.fft.fft2(np.ones((4, 4), F32), axes=(0,))),
    ("multiple axes", lambda m: m.fft.fft(np.ones((4, 4), F32), axis=(0, 1))),
    ("s and axes", lambda m: m.fft.fftn(np.ones((4, 4), F32), s=(3,), axes=(0, 1))),
    ("0-d", lambda m: m.fft.fft(np.ones((), F32))),
    ("scalar", lambda m: m.fft.rfftn(3.0, axes=(0,))),
    ("axis out of bounds", lambda m: m.fft.ifft(np.ones((4, 4), F32), axis=2)),
    ("list", lambda m: m.fft.fft([1.0, 2.0])),
    ("complex rfft", lambda m: m.fft.rfft(np.ones(4, C64))),
    ("float16 rfft", lambda m: m.fft.rfft(np.ones(4, np.float16))),
]


@pytest.mark.parametrize("what,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_jax(what, call):
    jax = _jax()
    with pytest.raises(Exception) as want:
        call(jax.numpy)
    with pytest.raises(type(want.value)) as got:
        call(jnp)
    if isinstance(want.value, ValueError) and "out of bounds" not in str(want.value):
        assert str(got.value) == str(want.value)


def test_static_lengths_required():
    with pytest.raises(TypeError, match="static ints"):
        jx.jit(lambda x, n: jnp.fft.fft(x, n=n))(np.ones(4, C64), 4)


# ------------------------------------------------------------------ transformations
LINEAR = [   # (name, function of a complex or real operand, operand shape, operand dtype)
    ("fft", lambda z: jnp.fft.fft(z), (3, 8), C64),
    ("ifft_axis0_n", lambda z: jnp.fft.ifft(z, n=5, axis=0), (4, 3), C64),
    ("fft2_ortho", lambda z: jnp.fft.fft2(z, norm="ortho"), (2, 4, 6), C64),
    ("fftn_4d", lambda z: jnp.fft.fftn(z), (2, 3, 2, 4), C64),
    ("rfft_even", lambda x: jnp.fft.rfft(x), (3, 8), F32),
    ("rfft_odd_n", lambda x: jnp.fft.rfft(x, n=7, axis=0), (5, 2), F32),
    ("rfftn_3d", lambda x: jnp.fft.rfftn(x), (3, 4, 6), F32),
    ("irfft_even", lambda z: jnp.fft.irfft(z, n=8), (3, 5), C64),
    ("irfft_odd", lambda z: jnp.fft.irfft(z, n=9), (3, 5), C64),
    ("irfftn_2d", lambda z: jnp.fft.irfftn(z, s=(4, 6)), (2, 4, 4), C64),
    ("irfftn_4d", lambda z: jnp.fft.irfftn(z), (2, 3, 2, 3), C64),
    ("hfft", lambda z: jnp.fft.hfft(z, norm="forward"), (2, 5), C64),
    ("ihfft", lambda x: jnp.fft.ihfft(x), (2, 7), F32),
]


def _pair(a, b) -> float:
    """JAX's pairing of cotangents with tangents: Re(sum(a * b)), unconjugated."""
    return float(np.real(np.sum(np.asarray(a, np.complex128) * np.asarray(b, np.complex128))))


@pytest.mark.parametrize("name,f,shape,dt", LINEAR, ids=[c[0] for c in LINEAR])
def test_jvp_is_the_transform_and_vjp_its_transpose(name, f, shape, dt, rng):
    x, t = _rand(rng, shape, dt), _rand(rng, shape, dt)
    out, tout = jx.jvp(f, (x,), (t,))
    _close(out, f(x))
    _close(tout, f(t))                  # linear: the tangent is the transform of t
    ct = _rand(rng, np.shape(out), np.asarray(out).dtype)
    _, vjp_fn = jx.vjp(f, x)
    (cx,) = vjp_fn(ct)
    assert np.asarray(cx).dtype == dt
    lhs, rhs = _pair(cx, t), _pair(ct, tout)
    assert np.isclose(lhs, rhs, rtol=1e-4, atol=1e-4 * max(1.0, abs(rhs))), (lhs, rhs)


@pytest.mark.parametrize("name,f,shape,dt", LINEAR, ids=[c[0] for c in LINEAR])
def test_vjp_matches_jax(name, f, shape, dt, rng):
    jax = _jax()
    x = _rand(rng, shape, dt)
    out = f(x)
    ct = _rand(rng, np.shape(out), np.asarray(out).dtype)
    (got,) = jx.vjp(f, x)[1](ct)
    import jax.numpy as jjnp
    mod = {"jnp": jjnp}
    jf = _as_jax(f, mod)
    (want,) = jax.vjp(jf, x)[1](ct)
    _close(got, want, 1e-4)


def _as_jax(f, mod):
    """f with jx.numpy swapped for jax.numpy (the lambdas above name jnp only)."""
    import types
    return types.FunctionType(f.__code__, {**f.__globals__, **mod}, f.__name__,
                              f.__defaults__, f.__closure__)


@pytest.mark.parametrize("in_axes", [0, 1, -1])
@pytest.mark.parametrize("name,f,shape,dt", LINEAR, ids=[c[0] for c in LINEAR])
def test_vmap_matches_loop(name, f, shape, dt, in_axes, rng):
    xs = [_rand(rng, shape, dt) for _ in range(3)]
    batched = np.stack(xs, axis=in_axes % (len(shape) + 1))
    got = jx.vmap(f, in_axes=in_axes)(batched)
    _close(got, np.stack([np.asarray(f(x)) for x in xs]))


def test_vmap_keeps_a_leading_batch_axis():
    x = np.ones((4, 3, 8), C64)
    graph = jx.make_graph(jx.vmap(lambda v: L.fft(v, "fft", (8,)), in_axes=1))(x)
    first = graph.eqns[0]             # the operand is transformed where it lies
    assert first.prim.name == "fft" and first.inputs[0] is graph.inputs[0]


def _losses(np_mod):
    m = np_mod
    w = (np.arange(10) % 3 - 1).astype(F32)
    return {
        "power": (lambda z: m.sum(m.abs(m.fft.fft(z)) ** 2), (2, 6), C64),
        "power_real": (lambda x: m.sum(m.abs(m.fft.rfft(x, n=10)) ** 2), (3, 8), F32),
        "filter": (lambda x: m.sum(m.fft.irfft(m.fft.rfft(x) * m.fft.rfft(w)) ** 3),
                   (2, 10), F32),
        "spectral": (lambda z: m.real(m.sum(m.fft.fft2(z) * m.conj(m.fft.ifft2(z * z)))),
                     (3, 4), C64),
        "hermitian": (lambda z: m.sum(m.sin(m.fft.hfft(z, n=7))), (6,), C64),
    }


@pytest.mark.parametrize("name", sorted(_losses(np)))
def test_grad_matches_jax(name, rng):
    jax = _jax()
    f, shape, dt = _losses(jnp)[name]
    jf = _losses(jax.numpy)[name][0]
    x = _rand(rng, shape, dt)
    got = jx.grad(f)(x)
    want = jax.grad(jf)(x)
    assert got.dtype == want.dtype
    _close(got, want, 1e-4)


@pytest.mark.parametrize("name", ["power", "filter"])
def test_grad_compiled_matches_jax(name, rng):
    jax = _jax()
    f, shape, dt = _losses(jnp)[name]
    x = _rand(rng, shape, dt)
    got = jx.jit(jx.grad(f))(x)
    _close(got, jax.grad(_losses(jax.numpy)[name][0])(x), 1e-4)


def test_vmap_compiled_matches_loop(rng):
    xs = _rand(rng, (3, 4, 6), F32)
    got = jx.jit(jx.vmap(lambda x: jnp.fft.rfft2(x, s=(4, 5)), in_axes=2))(xs)
    _close(got, np.stack([np.fft.rfft2(xs[:, :, i], s=(4, 5)) for i in range(6)]))


def test_higher_order_and_holomorphic_match_jax(rng):
    jax = _jax()

    def loss(m):
        return lambda x: m.sum(m.abs(m.fft.rfft(m.sin(x))) ** 3)
    x = _rand(rng, (4, 8), F32)
    _close(jx.hessian(loss(jnp))(x[0]), jax.hessian(loss(jax.numpy))(x[0]), 1e-4)
    _close(jx.jit(jx.vmap(jx.grad(loss(jnp))))(x), jax.vmap(jax.grad(loss(jax.numpy)))(x), 1e-4)
    z = _rand(rng, (6,), C64)
    for jx_jac, jax_jac in ((jx.jacfwd, jax.jacfwd), (jx.jacrev, jax.jacrev)):
        got = jx_jac(jnp.fft.ifft, holomorphic=True)(z)
        _close(got, jax_jac(jax.numpy.fft.ifft, holomorphic=True)(z))
