"""jx.scipy.signal's direct convolutions and detrend: compiled, against SciPy's
definitions (NumPy loops here) and JAX's results."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import jx
import jx.scipy.signal as signal

try:
    import jax.scipy.signal as jsignal
except ImportError:          # JAX is only a test oracle
    jsignal = None


def full_convolve(a, b):
    """The full n-d convolution by direct loops: out[i + j] += a[i] b[j]."""
    out = np.zeros(tuple(p + q - 1 for p, q in zip(a.shape, b.shape)))
    for i in itertools.product(*map(range, a.shape)):
        for j in itertools.product(*map(range, b.shape)):
            out[tuple(p + q for p, q in zip(i, j))] += a[i] * b[j]
    return out


def cut(full, s1, s2, mode):
    """SciPy's 'same' (centred on in1) and 'valid' windows of the full result."""
    if mode == "full":
        return full
    if mode == "same":
        starts = [(f - s) // 2 for f, s in zip(full.shape, s1)]
        return full[tuple(slice(st, st + s) for st, s in zip(starts, s1))]
    big = [max(p, q) for p, q in zip(s1, s2)]
    small = [min(p, q) for p, q in zip(s1, s2)]
    return full[tuple(slice(m - 1, b) for m, b in zip(small, big))]


SHAPES = [((9,), (4,)), ((4,), (9,)), ((6, 5), (3, 2)), ((3, 2), (6, 5)), ((4, 5, 3), (2, 3, 2))]


@pytest.mark.parametrize("s1, s2", SHAPES)
def test_convolve_and_correlate_match_loops(s1, s2):
    rng = np.random.default_rng(len(s1) * 10 + s1[0])
    a, b = rng.standard_normal(s1), rng.standard_normal(s2)
    for mode in ("full", "same", "valid"):
        conv = jx.jit(lambda a, b: signal.convolve(a, b, mode=mode))(a, b)
        np.testing.assert_allclose(np.asarray(conv), cut(full_convolve(a, b), s1, s2, mode),
                                   rtol=1e-4, atol=1e-4)
        corr = np.asarray(jx.jit(lambda a, b: signal.correlate(a, b, mode=mode))(a, b))
        flipped = b[tuple(slice(None, None, -1) for _ in s2)]
        np.testing.assert_allclose(corr, cut(full_convolve(a, flipped), s1, s2, mode),
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(jsignal is None, reason="JAX is not installed (test oracle)")
@pytest.mark.parametrize("s1, s2", [s for s in SHAPES if len(s[0]) == 2] + [((4, 4), (4, 4))])
def test_2d_forms_match_jax(s1, s2):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(s1).astype(np.float32), rng.standard_normal(s2).astype(np.float32)
    for mode in ("full", "same", "valid"):
        for name in ("convolve2d", "correlate2d"):
            got = jx.jit(lambda a, b: getattr(signal, name)(a, b, mode=mode))(a, b)
            want = getattr(jsignal, name)(a, b, mode=mode)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_detrend():
    rng = np.random.default_rng(1)
    t = np.arange(50.0)
    x = np.stack([3 + 0.5 * t + rng.standard_normal(50) * 0.1, -2 * t])
    out = np.asarray(signal.detrend(x))
    for row in out:                          # nothing linear is left
        assert abs(np.polyfit(t, row, 1)[0]) < 1e-4
    np.testing.assert_allclose(np.asarray(signal.detrend(x, type="constant")),
                               x - x.mean(-1, keepdims=True), atol=1e-4)
    pieces = np.asarray(signal.detrend(x, bp=[20]))
    for seg in (slice(0, 20), slice(20, 50)):
        assert abs(np.polyfit(t[seg], pieces[0, seg], 1)[0]) < 1e-4


def test_errors():
    with pytest.raises(ValueError, match="same number of dimensions"):
        signal.convolve(np.ones((3, 3)), np.ones(3))
    with pytest.raises(ValueError, match="smaller than the other"):
        signal.convolve(np.ones((3, 5)), np.ones((5, 3)))
    with pytest.raises(NotImplementedError, match="boundary='fill'"):
        signal.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap")
    with pytest.raises(NotImplementedError, match="FFT"):
        signal.convolve(np.ones(3), np.ones(2), method="fft")
    with pytest.raises(jx.errors.NotInJx, match="FFT"):
        signal.welch
