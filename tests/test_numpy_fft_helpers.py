"""jx.numpy.fft's frequency and shift helpers against their definitions and JAX (the
transforms: tests/test_fft_api.py)."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.numpy as jnp

try:
    import jax.numpy as jjnp
except ImportError:          # JAX is only a test oracle
    jjnp = None


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 16])
def test_frequencies(n):
    for d in (1.0, 0.1, 3):
        want = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)]) / (d * n)
        np.testing.assert_allclose(np.asarray(jnp.fft.fftfreq(n, d)), want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(jnp.fft.rfftfreq(n, d)),
                                   np.arange(n // 2 + 1) / (d * n), rtol=1e-6)
        if jjnp is not None:
            for name in ("fftfreq", "rfftfreq"):
                got, ref = getattr(jnp.fft, name)(n, d), getattr(jjnp.fft, name)(n, d)
                assert np.asarray(got).dtype == np.asarray(ref).dtype
                # (1 ulp: XLA multiplies by the spacing's reciprocal, jx divides)
                np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=2e-7)
    # a traced spacing, compiled
    np.testing.assert_allclose(np.asarray(jx.jit(lambda d: jnp.fft.fftfreq(n, d))(0.5)),
                               np.fft.fftfreq(n, 0.5), rtol=1e-6)
    assert jnp.fft.fftfreq(n, dtype=np.float16).dtype == np.float16


@pytest.mark.parametrize("axes", [None, 1, (0, 2), [-1]])
def test_shifts_match_numpy(axes):
    x = np.arange(2 * 5 * 6).reshape(2, 5, 6)
    for name in ("fftshift", "ifftshift"):
        got = jx.jit(lambda v: getattr(jnp.fft, name)(v, axes))(x)
        np.testing.assert_array_equal(np.asarray(got), getattr(np.fft, name)(x, axes))
    back = jnp.fft.ifftshift(jnp.fft.fftshift(x, axes), axes)
    np.testing.assert_array_equal(np.asarray(back), x)


def test_errors():
    with pytest.raises(ValueError, match="only takes an int"):
        jnp.fft.fftfreq([4])
    with pytest.raises(ValueError, match="single value"):
        jnp.fft.rfftfreq(4, [1.0, 2.0])
    with pytest.raises(TypeError, match="static int"):
        jx.jit(lambda n: jnp.fft.fftfreq(n))(4)
    with pytest.raises(AttributeError, match="no attribute 'fftx'"):
        jnp.fft.fftx
