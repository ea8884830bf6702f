"""jax.lax.fft: the FFT primitive with JAX's signature, string types and dtype
conversion (RFFT takes its operand to a float dtype, the others to complex)."""
from __future__ import annotations

import operator

from .. import dtypes
from ..numpy._util import as_value, bind1, dtype_weak
from ..numpy.creation import _wrap_public
from ..prims import elementwise as ew
from ..prims import fft as _fp
from ..prims.fft import FftType

_NAMES = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT,
          "irfft": FftType.IRFFT}


def _fft_type(fft_type) -> FftType:
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str):
        if fft_type.lower() in _NAMES and fft_type in (fft_type.lower(), fft_type.upper()):
            return _NAMES[fft_type.lower()]
        raise ValueError(f"Unknown FFT type '{fft_type}'")
    raise TypeError(f"Unknown FFT type value '{fft_type}'")


def fft(x, fft_type, fft_lengths):
    """The FFT of x over its trailing len(fft_lengths) axes (jax.lax.fft)."""
    typ = _fft_type(fft_type)
    x = as_value(x)
    dt, weak = dtype_weak(x)
    if typ == FftType.RFFT:
        if dtypes.is_complex(dt):
            raise ValueError("only real valued inputs supported for rfft")
        want = dtypes.inexact(dt)
    else:
        want = dtypes.complex_dtype(dt)
    if want != dt or weak:          # (the result is strongly typed, as JAX's)
        x = bind1(ew.convert_element_type, x, new_dtype=want)
    lengths = tuple(operator.index(n) for n in fft_lengths)
    if not lengths:
        return x
    return bind1(_fp.fft, x, fft_type=typ, fft_lengths=lengths)


__all__ = ["fft", "FftType"]
_wrap_public(globals(), __all__)
