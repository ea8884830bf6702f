"""jx.scipy.signal's direct convolutions and detrend: compiled, against SciPy's
definitions (NumPy loops here) and JAX's results; its FFT-based functions (fftconvolve,
stft, istft, csd, welch), eager and compiled, against scipy.signal and JAX."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import jx
import jx.numpy as jnp
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
    with pytest.raises(ValueError, match="expected 'auto', 'fft', or 'direct'"):
        signal.convolve(np.ones(3), np.ones(2), method="fast")


# ------------------------------------------------------------------ by FFTs
sps = pytest.importorskip("scipy.signal")


def _close(got, want, tol=2e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


def _data(rng, shape, complex_=False):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


FFT_SHAPES = SHAPES + [((1, 6), (5, 1)), ((3,), (3,))]


@pytest.mark.parametrize("s1, s2", FFT_SHAPES)
@pytest.mark.parametrize("complex_", [False, True])
def test_fftconvolve_matches_scipy(s1, s2, complex_):
    rng = np.random.default_rng(len(s1) * 10 + s1[0])
    a, b = _data(rng, s1, complex_), _data(rng, s2, complex_)
    for mode in ("full", "same", "valid"):
        if mode == "valid" and not (all(p >= q for p, q in zip(s1, s2)) or
                                    all(p <= q for p, q in zip(s1, s2))):
            continue
        want = sps.fftconvolve(a, b, mode=mode)
        got = signal.fftconvolve(a, b, mode=mode)
        assert got.dtype == (np.complex64 if complex_ else np.float32)
        _close(got, want)
        _close(jx.jit(lambda a, b: signal.fftconvolve(a, b, mode=mode))(a, b), want)
        _close(signal.convolve(a, b, mode=mode, method="fft"), want)
        _close(signal.correlate(a, b, mode=mode, method="fft"),
               sps.correlate(a, b, mode=mode, method="fft"))


@pytest.mark.parametrize("s1, s2, axes", [((3, 8), (3, 5), 1), ((3, 8), (3, 5), [-1]),
                                          ((4, 6, 3), (2, 6, 3), (0,)),
                                          ((5, 2, 6), (3, 2, 4), (2, 0))])
def test_fftconvolve_over_axes_matches_scipy(s1, s2, axes):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(s1), rng.standard_normal(s2)
    for mode in ("full", "same", "valid"):
        want = sps.fftconvolve(a, b, mode=mode, axes=axes)
        _close(jx.jit(lambda a, b: signal.fftconvolve(a, b, mode=mode, axes=axes))(a, b), want)


def test_fftconvolve_errors_match_jax():
    jsig = pytest.importorskip("jax.scipy.signal")
    calls = [lambda m: m.fftconvolve(np.ones((3, 3)), np.ones(3)),
             lambda m: m.fftconvolve(np.ones(3), np.ones(2), mode="middle"),
             lambda m: m.fftconvolve(np.ones((3, 5)), np.ones((5, 3)), mode="valid"),
             lambda m: m.fftconvolve(np.ones((3, 5)), np.ones((2, 3)), axes=1)]
    for call in calls:
        with pytest.raises(ValueError) as want:
            call(jsig)
        with pytest.raises(ValueError) as got:
            call(signal)
        assert str(got.value) == str(want.value)


def test_fftconvolve_grad_matches_jax():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((3, 2)).astype(
        np.float32)

    def loss(sig, m):
        return lambda a, b: m.sum(m.sin(sig.fftconvolve(a, b, mode="same")))
    got = jx.jit(jx.grad(loss(signal, jnp), argnums=(0, 1)))(a, b)
    want = jax.grad(loss(jax.scipy.signal, jax.numpy), argnums=(0, 1))(a, b)
    for g, w in zip(got, want):
        _close(g, w, 1e-4)


# (signal shape, keyword arguments) for welch and csd
SPECTRAL = [((256,), dict(nperseg=64)),
            ((300,), dict(nperseg=50, noverlap=10, nfft=64, window="hamming")),
            ((3, 200), dict(nperseg=40, detrend="linear", scaling="spectrum")),
            ((200, 2), dict(nperseg=32, axis=0, window="blackman", average="median")),
            ((128,), dict(nperseg=33, detrend=False, return_onesided=False)),
            ((2, 100), dict(nperseg=20, window=np.linspace(0.5, 1.5, 20), fs=8.0)),
            ((160,), dict(nperseg=16, noverlap=0, window="boxcar", detrend=lambda d: d - 1.0)),
            ((160,), dict(nperseg=16, window="bartlett", nfft=31))]


@pytest.mark.parametrize("shape, kw", SPECTRAL)
def test_welch_and_csd_match_scipy(shape, kw):
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(shape), rng.standard_normal(shape)
    f, p = sps.welch(x, **kw)
    got_f, got_p = signal.welch(x, **kw)
    assert got_p.dtype == np.float32
    _close(got_f, f)
    _close(got_p, p)
    if not callable(kw.get("detrend")):
        _close(jx.jit(lambda v: signal.welch(v, **kw)[1])(x), p)
    f, p = sps.csd(x, y, **kw)
    got_f, got_p = signal.csd(x, y, **kw)
    assert got_p.dtype == np.complex64
    _close(got_p, p)


def test_welch_of_complex_and_x_y_lengths():
    rng = np.random.default_rng(6)
    z = _data(rng, (150,), True)
    with pytest.warns(UserWarning, match="switching to return_onesided=False"):
        f, p = signal.welch(z, nperseg=30)
    _close(p, sps.welch(z, nperseg=30)[1])
    x, y = rng.standard_normal(120), rng.standard_normal(100)
    _close(signal.csd(x, y, nperseg=25)[1], sps.csd(x, y, nperseg=25)[1])


STFT = [((300,), dict(nperseg=32)),
        ((3, 200), dict(nperseg=40, noverlap=30, window="hamming", nfft=64)),
        ((150, 2), dict(nperseg=25, axis=0, boundary="even", padded=False)),
        ((150,), dict(nperseg=24, boundary="odd", fs=100.0)),
        ((150,), dict(nperseg=24, boundary="constant", return_onesided=False)),
        ((151,), dict(nperseg=16, boundary=None, padded=False, detrend="constant"))]


@pytest.mark.parametrize("shape, kw", STFT)
def test_stft_matches_scipy(shape, kw):
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape)
    f, t, z = sps.stft(x, **kw)
    got = signal.stft(x, **kw)
    assert got[2].dtype == np.complex64
    for g, w in zip(got, (f, t, z)):
        _close(g, w)
    _close(jx.jit(lambda v: signal.stft(v, **kw)[2])(x), z)


ISTFT = [((300,), dict(nperseg=32)),
         ((3, 200), dict(nperseg=40, noverlap=30, window="hamming", nfft=64)),
         ((2, 150), dict(nperseg=25)),
         ((150,), dict(nperseg=24, window="blackman", noverlap=18, fs=10.0))]


@pytest.mark.parametrize("shape, kw", ISTFT)
def test_istft_matches_scipy(shape, kw):
    rng = np.random.default_rng(9)
    x = rng.standard_normal(shape)
    z = sps.stft(x, **kw)[2]
    t, want = sps.istft(z, **kw)
    got_t, got = signal.istft(z, **kw)
    assert got.dtype == np.float32
    _close(got_t, t)
    _close(got, want)
    _close(jx.jit(lambda v: signal.istft(v, **kw)[1])(z), want)
    _close(got[..., :shape[-1]], x, 1e-4)                # a round trip
    # time and frequency axes elsewhere
    moved = np.moveaxis(z, -1, 0)
    t, want = sps.istft(moved, time_axis=0, freq_axis=-1, **kw)
    _close(signal.istft(moved, time_axis=0, freq_axis=-1, **kw)[1], want)


def test_spectral_dtypes_match_jax():
    jsig = pytest.importorskip("jax.scipy.signal")
    x = np.arange(64) % 7
    for name, call in [("welch", lambda m: m.welch(x, nperseg=16)),
                       ("csd", lambda m: m.csd(x, x[::-1], nperseg=16)),
                       ("stft", lambda m: m.stft(x, nperseg=16)),
                       ("fftconvolve", lambda m: (m.fftconvolve(x, x[:5]),))]:
        got, want = call(signal), call(jsig)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype, name
            _close(g, w, 1e-4)


def test_spectral_errors():
    x = np.ones(64)
    with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
        signal.welch(x, nperseg=16, noverlap=16)
    with pytest.raises(ValueError, match="nfft must be greater than or equal to nperseg"):
        signal.stft(x, nperseg=16, nfft=8)
    with pytest.raises(ValueError, match="Unknown boundary option"):
        signal.stft(x, nperseg=16, boundary="wrap")
    with pytest.raises(ValueError, match="Unknown scaling"):
        signal.welch(x, nperseg=16, scaling="power")
    with pytest.raises(ValueError, match='average must be "median" or "mean"'):
        signal.welch(np.ones(64), nperseg=16, average="max")
    with pytest.raises(NotImplementedError, match="pass the window's values as a 1-D array"):
        signal.welch(x, nperseg=16, window=("tukey", 0.5))
    with pytest.raises(ValueError, match="Must specify differing time and frequency axes"):
        signal.istft(np.ones((9, 5), np.complex64), time_axis=0, freq_axis=0)
    with pytest.raises(TypeError, match="static int"):
        jx.jit(lambda v, n: signal.welch(v, nperseg=n))(x, 16)
