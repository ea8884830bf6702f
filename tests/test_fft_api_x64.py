"""jx.numpy.fft in 64-bit mode: float64/complex128 transforms against NumPy (eager and
compiled), dtypes against JAX, and the fft primitive's jvp/vjp/vmap rules through the
shared harness (finite differences in float64, <vjp(u), v> == <u, jvp(v)>, loops),
on real functions of real inputs: complex operands are built with lax.complex and
complex results split into their parts. Finite differences of complex losses
against jax.grad too."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as L
import jx.numpy as jnp
from test_fft_api import _close, _jax
from transform_harness import Case, case_tests

pytestmark = pytest.mark.x64

F64, C128 = np.dtype(np.float64), np.dtype(np.complex128)


def _parts(z):
    return jnp.concatenate([jnp.real(z), jnp.imag(z)], axis=-1)


def _c(a, b):
    return L.complex(a, b)


TRANSFORM_CASES = {
    "fft": Case(lambda a, b: _parts(jnp.fft.fft(_c(a, b))), [(3, 8), (3, 8)]),
    "fft/ifft_n_axis0": Case(lambda a, b: _parts(jnp.fft.ifft(_c(a, b), n=6, axis=0)),
                             [(4, 3), (4, 3)]),
    "fft/fft2_ortho": Case(lambda a, b: _parts(jnp.fft.fft2(_c(a, b), axes=(0, 2),
                                                             norm="ortho")),
                           [(3, 2, 4), (3, 2, 4)]),
    "fft/rfft_even": Case(lambda x: _parts(jnp.fft.rfft(x)), [(2, 8)]),
    "fft/rfft_odd_axis0": Case(lambda x: _parts(jnp.fft.rfft(x, n=7, axis=0)), [(5, 3)]),
    "fft/rfftn_3d": Case(lambda x: _parts(jnp.fft.rfftn(x)), [(2, 3, 4)]),
    "fft/irfft_even": Case(lambda a, b: jnp.fft.irfft(_c(a, b), n=8), [(3, 5), (3, 5)]),
    "fft/irfft_odd": Case(lambda a, b: jnp.fft.irfft(_c(a, b), n=7), [(2, 4), (2, 4)]),
    "fft/irfftn_2d": Case(lambda a, b: jnp.fft.irfftn(_c(a, b), s=(3, 6)),
                          [(2, 3, 4), (2, 3, 4)]),
    "fft/fftn_5d": Case(lambda a, b: _parts(jnp.fft.fftn(_c(a, b))),
                        [(2, 1, 2, 3, 2), (2, 1, 2, 3, 2)], vmap_axes=(0, -1)),
    "fft/hfft": Case(lambda a, b: jnp.fft.hfft(_c(a, b), n=6), [(2, 4), (2, 4)]),
    "fft/ihfft": Case(lambda x: _parts(jnp.fft.ihfft(x, norm="forward")), [(3, 5)]),
}

(test_jvp_matches_finite_differences, test_vjp_consistent_with_jvp_and_fd,
 test_vmap_matches_loop) = case_tests(TRANSFORM_CASES)


CASES = [("fft", (3, 10), {}), ("ifft", (4, 7), {"n": 9, "axis": 0}),
         ("rfft", (5, 12), {"n": 10}), ("irfft", (3, 6), {"n": 11}),
         ("hfft", (2, 5), {}), ("ihfft", (2, 9), {}),
         ("fft2", (3, 4, 5), {"axes": (0, 2)}), ("irfft2", (4, 5), {"s": (3, 6)}),
         ("rfftn", (2, 3, 4, 5), {}), ("ifftn", (2, 3, 2, 4, 3), {}),
         ("irfftn", (3, 4, 3), {"axes": (2, 0)})]
REAL_IN = {"rfft", "ihfft", "rfftn"}


def _input(rng, name, shape):
    x = rng.standard_normal(shape)
    return x if name in REAL_IN else x + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("name,shape,kw", CASES)
def test_double_precision_matches_numpy(name, shape, kw, rng):
    x = _input(rng, name, shape)
    want = getattr(np.fft, name)(x, **kw)
    got = getattr(jnp.fft, name)(x, **kw)
    assert got.dtype == want.dtype
    _close(got, want, 1e-12)
    got = jx.jit(lambda v: getattr(jnp.fft, name)(v, **kw))(x)
    assert got.dtype == want.dtype
    _close(got, want, 1e-12)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fftn", "irfftn", "ihfft"])
@pytest.mark.parametrize("dt", ["int64", "float32", "float64", "complex64", "complex128"])
def test_dtypes_match_jax(name, dt):
    jax = _jax()
    x = (np.arange(12) % 5).reshape(3, 4).astype(dt)
    with jax.enable_x64(True):
        try:
            want = getattr(jax.numpy.fft, name)(x)
        except Exception as e:      # noqa: BLE001 (the error type is what is compared)
            with pytest.raises(type(e)):
                getattr(jnp.fft, name)(x)
            return
    got = getattr(jnp.fft, name)(x)
    assert got.dtype == want.dtype and got.weak_type == want.weak_type
    _close(got, want, 1e-5 if dt in ("float32", "complex64") else 1e-12)


def test_grad_of_complex_losses_matches_jax(rng):
    jax = _jax()

    def loss(m):
        return lambda z: m.sum(m.abs(m.fft.fft2(z * m.sin(z))) ** 2) + m.real(
            m.sum(m.fft.ifft(z, n=7) ** 2))
    z = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))
    got = jx.grad(loss(jnp))(z)
    with jax.enable_x64(True):
        want = jax.grad(loss(jax.numpy))(z)
    assert got.dtype == C128
    _close(got, want, 1e-10)
    x = rng.standard_normal((4, 6))

    def real_loss(m):
        return lambda x: m.sum(m.cos(m.fft.irfft(m.fft.rfft(x, axis=0) ** 2, n=4, axis=0)))
    got = jx.grad(real_loss(jnp))(x)
    with jax.enable_x64(True):
        want = jax.grad(real_loss(jax.numpy))(x)
    assert got.dtype == F64
    _close(got, want, 1e-10)
