"""The FFT primitive, as JAX's lax.fft_p: fft(x, fft_type, fft_lengths) transforms the
trailing len(fft_lengths) axes (1 to 3) of x.

    FFT    complex -> complex   np.fft.fftn
    IFFT   complex -> complex   np.fft.ifftn (scaled by 1 / prod(fft_lengths))
    RFFT   float -> complex     np.fft.rfftn: the last axis n becomes n // 2 + 1
    IRFFT  complex -> float     np.fft.irfftn: the last axis n // 2 + 1 becomes n

Shapes, dtypes and errors are JAX's (its ValueErrors, its wording); IRFFT's last axis
must hold n // 2 + 1 entries (StableHLO's rule, which XLA enforces when lowering).
The reference runs np.fft in the operand's precision (NumPy 2 keeps complex64).
"""
from __future__ import annotations

import enum

import numpy as np

from .. import dtypes
from ..core import declare
from ..ir import ShapedArray


class FftType(enum.IntEnum):
    """Which FFT to perform (jax.lax.FftType)."""
    FFT = 0      # forward complex-to-complex
    IFFT = 1     # inverse complex-to-complex
    RFFT = 2     # forward real-to-complex
    IRFFT = 3    # inverse complex-to-real

    def __str__(self):          # graphs print fft_type=RFFT, not 2
        return self.name


_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def _lengths(fft_lengths) -> tuple:
    if not isinstance(fft_lengths, tuple) or not 1 <= len(fft_lengths) <= 3 or any(
            not isinstance(n, (int, np.integer)) or n < 0 for n in fft_lengths):
        raise ValueError(f"fft_lengths must be a tuple of 1 to 3 static ints >= 0 (the "
                         f"lengths of the trailing axes to transform), got {fft_lengths!r}")
    return tuple(int(n) for n in fft_lengths)


def _fft_rule(x, *, fft_type, fft_lengths):
    lengths = _lengths(fft_lengths)
    k = len(lengths)
    if k > x.ndim:
        raise ValueError(f"FFT input shape {x.shape} must have at least as many input "
                         f"dimensions as fft_lengths {lengths}.")
    minor = tuple(x.shape[-k:])
    if fft_type == FftType.RFFT:
        if x.dtype not in _REAL:
            raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
        if minor != lengths:
            raise ValueError(f"RFFT input shape {x.shape} minor dimensions must be equal to "
                             f"fft_lengths {lengths}")
        shape = x.shape[:-k] + lengths[:-1] + (lengths[-1] // 2 + 1,)
        dtype = dtypes.complex_dtype(x.dtype)
    elif fft_type == FftType.IRFFT:
        if not dtypes.is_complex(x.dtype):
            raise ValueError(f"IRFFT input must be complex64 or complex128, got {x.dtype}")
        if minor[:-1] != lengths[:-1]:
            raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal "
                             f"to all except the last fft_length, got fft_lengths={lengths}")
        if minor[-1] != lengths[-1] // 2 + 1:
            raise ValueError(f"IRFFT requires innermost dimension to be compatible with "
                             f"fft_length[-1]/2+1. Got: {minor[-1]} but fft_length is "
                             f"{lengths[-1]}.")
        shape = x.shape[:-k] + lengths
        dtype = dtypes.real_dtype(x.dtype)
    elif fft_type in (FftType.FFT, FftType.IFFT):
        if not dtypes.is_complex(x.dtype):
            raise ValueError(f"FFT input must be complex64 or complex128, got {x.dtype}")
        if minor != lengths:
            raise ValueError(f"FFT input shape {x.shape} minor dimensions must be equal to "
                             f"fft_lengths {lengths}")
        shape, dtype = x.shape, x.dtype
    else:
        raise TypeError(f"Unknown FFT type value '{fft_type}'; use a jx.lax.FftType")
    return ShapedArray(shape, dtype)


_NUMPY = {FftType.FFT: "fftn", FftType.IFFT: "ifftn",     # np.fft's, looked up at use:
          FftType.RFFT: "rfftn", FftType.IRFFT: "irfftn"}    # numpy loads np.fft then


def _fft(x, *, fft_type, fft_lengths):
    out = _fft_rule(ShapedArray(x.shape, x.dtype), fft_type=fft_type, fft_lengths=fft_lengths)
    if 0 in fft_lengths or 0 in x.shape:      # np.fft refuses empty transforms
        return np.zeros(out.shape, out.dtype)
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    return getattr(np.fft, _NUMPY[fft_type])(x, s=fft_lengths, axes=axes).astype(out.dtype, copy=False)


fft = declare("fft", _fft_rule, _fft)
