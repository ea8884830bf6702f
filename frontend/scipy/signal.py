"""jx.scipy.signal: jax.scipy.signal's direct convolutions and detrend, on
lax.conv_general_dilated (one channel, the arrays' dims as spatial dims). The
FFT-based functions (fftconvolve, stft, istft, csd, welch) need the FFT."""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..errors import missing_name

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
    """The n-d convolution of in1 and in2 (direct; method 'fft' needs the FFT)."""
    if method == "fft":
        raise NotImplementedError("convolve(method='fft') needs the FFT, which jx does not "
                                  "have yet; use method='direct' or 'auto'")
    if method not in ("auto", "direct"):
        raise ValueError(f"Got method={method}; expected 'auto', 'fft', or 'direct'.")
    if jnp.ndim(in1) == 0 or jnp.ndim(in2) == 0:
        return jnp.asarray(in1) * jnp.asarray(in2)
    return _convolve_nd(in1, in2, mode, precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The n-d cross-correlation of in1 and in2 (direct)."""
    if method == "fft":
        raise NotImplementedError("correlate(method='fft') needs the FFT, which jx does not "
                                  "have yet; use method='direct' or 'auto'")
    if method not in ("auto", "direct"):
        raise ValueError(f"Got method={method}; expected 'auto', 'fft', or 'direct'.")
    return _convolve_nd(in1, jnp.flip(jnp.asarray(in2)), mode, precision)


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


_JAX_ONLY = frozenset({"fftconvolve", "stft", "istft", "csd", "welch"})


def __getattr__(name: str):
    raise missing_name("jx.scipy.signal", name, _JAX_ONLY, {},
                       "not implemented yet: it needs the FFT, which comes with its issue")


__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "detrend"]
