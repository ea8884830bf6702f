"""jx.scipy.signal: jax.scipy.signal's direct convolutions and detrend, on
lax.conv_general_dilated (one channel, the arrays' dims as spatial dims), and its
FFT-based functions on jx.numpy.fft: fftconvolve (and method="fft"), the
short-time transforms stft and istft, and the spectral estimates csd and welch.

Windows: "hann" (JAX's default), "hamming", "blackman", "bartlett" and "boxcar" by
name, periodic as scipy.signal.get_window makes them, or any 1-D array."""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from .. import dtypes, lax
from .. import numpy as jnp
from ..numpy._util import has_tracer

_MODES = ("full", "same", "valid")


def _convolve_nd(in1, in2, mode, precision):
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}, got {mode!r}")
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions, got "
                         f"shapes {in1.shape} and {in2.shape}")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"zero-size arrays not supported in convolutions, got shapes "
                         f"{in1.shape} and {in2.shape}.")
    dt = jnp.result_type(in1, in2, jnp.float32) if not (
        jnp.issubdtype(in1.dtype, jnp.inexact) or jnp.issubdtype(in2.dtype, jnp.inexact)) \
        else jnp.result_type(in1, in2)
    in1, in2 = in1.astype(dt), in2.astype(dt)
    no_swap = all(a >= b for a, b in zip(in1.shape, in2.shape))
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise ValueError("One input must be smaller than the other in every dimension, got "
                         f"shapes {in1.shape} and {in2.shape}.")
    shape_o = in2.shape
    if swap:
        in1, in2 = in2, in1
    shape = in2.shape
    in2 = jnp.flip(in2)
    if mode == "valid":
        padding = [(0, 0)] * len(shape)
    elif mode == "same":
        padding = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2) for s, so in zip(shape, shape_o)]
    else:
        padding = [(s - 1, s - 1) for s in shape]
    out = lax.conv_general_dilated(in1[None, None], in2[None, None], (1,) * len(shape), padding,
                                   precision=precision)
    return out[0, 0]


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The n-d convolution of in1 and in2 (direct, or by FFTs with method='fft')."""
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method not in ("auto", "direct"):
        raise ValueError(f"Got method={method}; expected 'auto', 'fft', or 'direct'.")
    if jnp.ndim(in1) == 0 or jnp.ndim(in2) == 0:
        return jnp.asarray(in1) * jnp.asarray(in2)
    return _convolve_nd(in1, in2, mode, precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The n-d cross-correlation of in1 and in2: the convolution with in2 reversed and
    conjugated (direct, or by FFTs with method='fft')."""
    return convolve(in1, jnp.flip(jnp.conj(jnp.asarray(in2))), mode, method, precision)


def _check_2d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if jnp.ndim(in1) != 2 or jnp.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-d convolution of in1 and in2 (zero boundary, as JAX's)."""
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd(in1, in2, mode, precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-d cross-correlation of in1 and in2 (zero boundary), with SciPy's (and
    JAX's) output orientation when in2 is the larger input."""
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    same = tuple(in1.shape) == tuple(in2.shape)
    if mode in ("same",) or (mode == "valid" and (not swap or same)) or \
            (mode == "full" and not swap):
        return jnp.flip(_convolve_nd(jnp.flip(in1), in2, mode, precision))
    return _convolve_nd(jnp.flip(in2), in1, mode, precision)


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
    """data less its least-squares constant or linear trend (piecewise between the
    breakpoints bp) along axis."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    x = jnp.asarray(data)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    if type == "constant":
        return x - x.mean(axis, keepdims=True)
    n = x.shape[axis]
    bps = np.sort(np.unique(np.r_[0, bp, n]))
    if bps[0] < 0 or bps[-1] > n:
        raise ValueError("Breakpoints must be non-negative and less than length of data along "
                         "given axis.")
    x = jnp.moveaxis(x, axis, 0)
    shape = x.shape
    x = x.reshape(n, -1)
    pieces = []
    for lo, hi in zip(bps[:-1], bps[1:]):
        m = int(hi - lo)
        t = np.arange(1, m + 1, dtype=np.float64) / m
        a = jnp.asarray(np.stack([np.ones(m), t], axis=1), dtype=x.dtype)
        seg = x[int(lo):int(hi)]
        coef = jnp.linalg.lstsq(a, seg)[0]
        pieces.append(seg - a @ coef)
    out = jnp.concatenate(pieces, axis=0) if len(pieces) > 1 else pieces[0]
    return jnp.moveaxis(out.reshape(shape), 0, axis)


# ------------------------------------------------------------------ by FFTs

def _axis(axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < max(ndim, 1):
        raise np.exceptions.AxisError(axis, ndim)
    return axis % max(ndim, 1)


def _static_int(v, what: str) -> int:
    if has_tracer(v):
        raise TypeError(f"{what} must be a static int (it sets the result's shape), not a "
                        "traced value")
    return int(v)


def _inexact(*arrays):
    """The arrays in their common dtype, made inexact (int -> float, as JAX's
    promote_dtypes_inexact)."""
    arrays = [jnp.asarray(a) for a in arrays]
    dt = dtypes.inexact(jnp.result_type(*arrays))
    return [a.astype(dt) for a in arrays]


def fftconvolve(in1, in2, mode="full", axes=None):
    """The n-d convolution of in1 and in2 by FFTs, over axes (default all); the other
    axes must match and are mapped over."""
    in1, in2 = _inexact(in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError("mode must be one of ['same', 'full', 'valid']")
    ndim = in1.ndim
    if axes is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(_axis(a, ndim) for a in ((axes,) if np.ndim(axes) == 0 else axes))
        if any(in1.shape[i] != in2.shape[i] for i in range(ndim) if i not in axes):
            raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape!r} "
                             f"in2.shape={in2.shape!r} axes={axes!r}")
        axes = tuple(sorted(set(axes)))
    s1, s2 = [in1.shape[a] for a in axes], [in2.shape[a] for a in axes]
    if mode == "valid":
        if all(a <= b for a, b in zip(s1, s2)):
            in1, in2, s1, s2 = in2, in1, s2, s1
        elif not all(a >= b for a, b in zip(s1, s2)):
            raise ValueError("For 'valid' mode, One input must be at least as large as the "
                             "other in every dimension.")
    full = tuple(a + b - 1 for a, b in zip(s1, s2))
    if all(a == 1 or b == 1 for a, b in zip(s1, s2)):      # a product: no FFT needed
        conv = in1 * in2
    else:
        complex_ = dtypes.is_complex(in1.dtype)
        fwd = jnp.fft.fftn if complex_ else jnp.fft.rfftn
        inv = jnp.fft.ifftn if complex_ else jnp.fft.irfftn
        conv = inv(fwd(in1, full, axes) * fwd(in2, full, axes), full, axes)
    out = {"full": full, "same": s1, "valid": [a - b + 1 for a, b in zip(s1, s2)]}[mode]
    index = [slice(None)] * ndim
    for a, f, o in zip(axes, full, out):
        index[a] = slice((f - o) // 2, (f - o) // 2 + o)
    return conv[tuple(index)]


def _cosine_window(coefficients, n: int) -> np.ndarray:
    k = 2 * np.pi * np.arange(n) / n
    return sum(c * np.cos(j * k) for j, c in enumerate(coefficients))


_WINDOWS = {   # periodic windows of length n (scipy.signal.get_window, fftbins=True)
    "hann": lambda n: np.sin(np.pi * np.arange(n) / n) ** 2,
    "hamming": lambda n: _cosine_window((0.54, -0.46), n),
    "blackman": lambda n: _cosine_window((0.42, -0.5, 0.08), n),
    "bartlett": lambda n: 1 - np.abs(2 * np.arange(n) / n - 1),
    "boxcar": np.ones,
}
_ALIASES = {"hanning": "hann", "han": "hann", "hamm": "hamming", "ham": "hamming",
            "black": "blackman", "blk": "blackman", "bart": "bartlett", "brt": "bartlett",
            "box": "boxcar", "ones": "boxcar", "rect": "boxcar", "rectangular": "boxcar"}


def _named_window(window, n: int, dtype):
    name = _ALIASES.get(window, window) if isinstance(window, str) else None
    if name not in _WINDOWS:
        raise NotImplementedError(
            f"window {window!r} is not built into jx.scipy.signal (it has "
            f"{', '.join(sorted(_WINDOWS))}); pass the window's values as a 1-D array, "
            "e.g. scipy.signal.get_window(window, nperseg)")
    return jnp.asarray(np.ones(1) if n == 1 else _WINDOWS[name](n), dtype=dtype)


def _triage_segments(window, nperseg, input_length: int, dtype):
    """(window array, segment length) from a window name or array and nperseg, as
    JAX's: a named window defaults to (and is cut to) the whole signal."""
    if isinstance(window, (str, tuple)):
        n = input_length if nperseg is None else int(nperseg)
        if n > input_length:
            warnings.warn(f"nperseg={n} is greater than input_length={input_length}, using "
                          f"nperseg={input_length}")
            n = input_length
        return _named_window(window, n, dtype), n
    win = jnp.asarray(window, dtype=dtype)
    n = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < win.size:
        raise ValueError("window is longer than input signal")
    if n != win.size:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, n


def _odd_ext(x, n: int):
    """x extended by n samples at each end of its last axis, point-reflected about the
    end values."""
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {x.shape[-1] - 1}.")
    left = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], -1)
    right = 2 * x[..., -1:] - jnp.flip(x[..., -(n + 1):-1], -1)
    return jnp.concatenate((left, x, right), axis=-1)


def _padder(mode, **kw):
    def pad(x, n):
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode, **kw)
    return pad


_BOUNDARIES = {"even": _padder("reflect"), "odd": _odd_ext, "constant": _padder("edge"),
               "zeros": _padder("constant", constant_values=0.0), None: lambda x, n: x}


def _zero_pad_end(x, n: int):
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n)]) if n else x


def _segment_spectra(x, win, detrend_func, nperseg: int, noverlap: int, nfft: int, sides):
    """The windowed FFTs of x's overlapping segments along its last axis, shape
    (..., segments, frequencies)."""
    step = nperseg - noverlap
    starts = np.arange(0, x.shape[-1] - nperseg + 1, step)
    segments = x[..., starts[:, None] + np.arange(nperseg)]
    segments = detrend_func(segments)
    if dtypes.is_complex(win.dtype):
        segments = segments.astype(dtypes.complex_dtype(segments.dtype))
    segments = win * segments
    if sides == "twosided":
        return jnp.fft.fft(segments, n=nfft)
    return jnp.fft.rfft(jnp.real(segments), n=nfft)


def _spectral_helper(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
                     detrend_type="constant", return_onesided=True, scaling="density",
                     axis=-1, mode="psd", boundary=None, padded=False):
    """(frequencies, segment times, spectra) of x (and the cross spectra with y), as
    scipy.signal's _spectral_helper and JAX's."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{list(_BOUNDARIES)}")
    x = jnp.asarray(x)
    axis = _axis(_static_int(axis, "axis of windowed-FFT"), x.ndim)
    if y is None:
        (x,) = _inexact(x)
        outer = x.shape[:axis] + x.shape[axis + 1:]
    else:
        if mode != "psd":
            raise ValueError("two-argument mode is available only when mode=='psd'")
        x, y = _inexact(x, y)
        if x.ndim != y.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
        try:
            outer = jnp.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:],
                                         y.shape[:axis] + y.shape[axis + 1:])
        except ValueError as err:
            raise ValueError("x and y cannot be broadcast together.") from err
    result_dtype = dtypes.complex_dtype(x.dtype)
    freq_dtype = dtypes.real_dtype(result_dtype)
    if nperseg is not None:
        nperseg = _static_int(nperseg, "nperseg of windowed-FFT")
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    win, nperseg = _triage_segments(window, nperseg, x.shape[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap,
                                                                  "noverlap of windowed-FFT")
    nfft = nperseg if nfft is None else _static_int(nfft, "nfft of windowed-FFT")
    if y is None and x.size == 0:
        empty = x.shape
    elif y is not None and (x.size == 0 or y.size == 0):
        empty = outer[:axis] + (min(x.shape[axis], y.shape[axis]),) + outer[axis:]
    else:
        empty = None
    if empty is not None:
        return (jnp.zeros(empty, freq_dtype), jnp.zeros(empty, freq_dtype),
                jnp.zeros(empty, result_dtype))
    x = jnp.moveaxis(x, axis, -1)
    if y is not None:
        y = jnp.moveaxis(y, axis, -1)
        if x.shape[-1] < y.shape[-1]:
            x = _zero_pad_end(x, y.shape[-1] - x.shape[-1])
        elif y.shape[-1] < x.shape[-1]:
            y = _zero_pad_end(y, x.shape[-1] - y.shape[-1])
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    step = nperseg - noverlap
    signals = [x] if y is None else [x, y]
    if boundary is not None:
        signals = [_BOUNDARIES[boundary](s, nperseg // 2) for s in signals]
    if padded:      # whole segments: zeros to the end of the last one
        signals = [_zero_pad_end(s, -(s.shape[-1] - nperseg) % step % nperseg)
                   for s in signals]
    length = signals[0].shape[-1]

    if isinstance(detrend_type, str):
        def detrend_func(d):
            return detrend(d, axis=-1, type=detrend_type)
    elif callable(detrend_type):
        if axis != x.ndim - 1:    # the function sees the data's own layout (SciPy's)
            def detrend_func(d):
                return jnp.moveaxis(detrend_type(jnp.moveaxis(d, -1, axis)), axis, -1)
        else:
            detrend_func = detrend_type
    elif not detrend_type:
        def detrend_func(d):
            return d
    else:
        raise ValueError(f"Unsupported detrend type: {detrend_type}")

    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = jnp.sqrt(scale)
    sides = "onesided" if return_onesided else "twosided"
    if return_onesided and any(dtypes.is_complex(s.dtype) for s in signals):
        sides = "twosided"
        warnings.warn("Input data is complex, switching to return_onesided=False")
    freqs = (jnp.fft.fftfreq if sides == "twosided" else jnp.fft.rfftfreq)(
        nfft, 1 / fs, dtype=freq_dtype)
    spectra = [_segment_spectra(s, win, detrend_func, nperseg, noverlap, nfft, sides)
               for s in signals]
    if y is not None:
        result = jnp.conj(spectra[0]) * spectra[1]
    elif mode == "psd":
        result = jnp.conj(spectra[0]) * spectra[0]
    else:
        result = spectra[0]
    result = result * scale
    if sides == "onesided" and mode == "psd":     # the folded negative frequencies
        double = np.full(result.shape[-1], 2.0)
        double[0] = 1.0
        if nfft % 2 == 0:
            double[-1] = 1.0
        result = result * double.astype(freq_dtype)
    time = jnp.asarray(np.arange(nperseg / 2, length - nperseg / 2 + 1, step),
                       dtype=freq_dtype) / fs
    if boundary is not None:
        time = time - nperseg / 2 / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = jnp.real(result)
    return freqs, time, jnp.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
    """The short-time Fourier transform of x: (frequencies, segment times, spectra with
    frequency at axis and time last)."""
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, scaling="spectrum", axis=axis, mode="stft",
                            boundary=boundary, padded=padded)


def _median_bias(n: int) -> float:
    """The median of n periodograms over their mean (Allen et al., FINDCHIRP, App. B)."""
    ii_2 = np.arange(2.0, n, 2)
    return 1 + float(np.sum(1.0 / (ii_2 + 1) - 1.0 / ii_2))


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1,
        average="mean"):
    """The cross power spectral density of x and y by Welch's method: (frequencies,
    Pxy)."""
    freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                     return_onesided, scaling, axis, mode="psd")
    if y is not None:
        pxy = pxy + 0j
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                bias = _median_bias(pxy.shape[-1])
                if dtypes.is_complex(pxy.dtype):
                    pxy = lax.complex(jnp.median(jnp.real(pxy), axis=-1),
                                      jnp.median(jnp.imag(pxy), axis=-1))
                else:
                    pxy = jnp.median(pxy, axis=-1)
                pxy = pxy / bias
            elif average == "mean":
                pxy = pxy.mean(axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = jnp.reshape(pxy, pxy.shape[:-1])
    return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
    """The power spectral density of x by Welch's method: (frequencies, Pxx)."""
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                     nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                     scaling=scaling, axis=axis, average=average)
    return freqs, jnp.real(pxx)


def _overlap_and_add(x, step: int):
    """The frames of x (..., frames, frame length) summed at offsets of step: shape
    (..., step (frames - 1) + frame length)."""
    *batch, frames, length = x.shape
    size = math.prod(batch)
    x = x.reshape((size, frames, length))
    out_size = step * (frames - 1) + length
    per_frame = 1 + (length - 1) // step           # steps a frame spans
    x = jnp.pad(x, ((0, 0), (0, 0), (0, per_frame * step - length)))
    x = jnp.transpose(x.reshape((size, frames, per_frame, step)), (0, 2, 1, 3))
    # shifting frame f by its step index: pad one extra frame, flatten, and re-cut
    x = jnp.pad(x, ((0, 0), (0, 0), (0, frames), (0, 0)))
    shrunk = x.shape[2] - 1
    x = x.reshape((size, -1))[:, :per_frame * shrunk * step]
    x = x.reshape((size, per_frame, shrunk * step)).sum(axis=1)[:, :out_size]
    return x.reshape(tuple(batch) + (-1,))


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
    """The inverse short-time Fourier transform: (times, signal), by windowed
    overlap-add of the segments' inverse FFTs."""
    if isinstance(Zxx, (list, tuple)):
        raise TypeError(f"istft requires ndarray or scalar arguments, got {type(Zxx)} at "
                        "position 0.")
    Zxx = jnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis, time_axis = _axis(freq_axis, Zxx.ndim), _axis(time_axis, Zxx.ndim)
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    Zxx = Zxx.astype(dtypes.complex_dtype(Zxx.dtype))
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    nperseg = _static_int(nperseg or n_default, "nperseg: segment length of STFT")
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = n_default + (1 if input_onesided and nperseg == n_default + 1 else 0)
    else:
        nfft = _static_int(nfft, "nfft of STFT")
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = _static_int(noverlap or nperseg // 2, "noverlap of STFT")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    step = nperseg - noverlap
    if time_axis != Zxx.ndim - 1 or freq_axis != Zxx.ndim - 2:
        outer = tuple(i for i in range(Zxx.ndim) if i not in (time_axis, freq_axis))
        Zxx = jnp.transpose(Zxx, outer + (freq_axis, time_axis))
    inverse = jnp.fft.irfft if input_onesided else jnp.fft.ifft
    xsubs = inverse(Zxx, axis=-2, n=nfft)[..., :nperseg, :]
    if isinstance(window, (str, tuple)):
        win = _named_window(window, nperseg, xsubs.dtype)
    else:
        win = jnp.asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if win.shape[0] != nperseg:
            raise ValueError(f"window must have length of {nperseg}")
    xsubs = xsubs * win.sum()
    win = jnp.reshape(win, (1,) * (xsubs.ndim - 2) + (nperseg, 1))
    x = _overlap_and_add(jnp.swapaxes(xsubs * win, -2, -1), step)
    win_squared = jnp.repeat(win * win, xsubs.shape[-1], axis=-1)
    norm = _overlap_and_add(jnp.swapaxes(win_squared, -2, -1), step)
    if boundary:
        x = x[..., nperseg // 2:-(nperseg // 2)]
        norm = norm[..., nperseg // 2:-(nperseg // 2)]
    x = x / jnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    time = jnp.arange(x.shape[0], dtype=dtypes.real_dtype(x.dtype)) / fs
    return time, x


__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "detrend", "fftconvolve",
           "stft", "istft", "csd", "welch"]
