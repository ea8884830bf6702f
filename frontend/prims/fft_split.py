"""The FFT on split complex arrays: a real-part array and an imaginary-part array.

Internal primitives: the complex lowering pass stages them after every user
transformation (complex values become pairs of real arrays there), so they have
batching rules but no derivatives (passes/fft_rules.py). Each transforms one axis
(the last, or fft_c2c's `axis`) and batches over the others; operands are float32
or float64, the transformed length static and at least 1.

    fft_c2c(re, im, inverse, axis=-1)
                              -> (re, im)  X_k = sum_j x_j exp(-+2 pi i jk/n),
                                           the inverse scaled by 1/n (np.fft.ifft);
                                           along `axis` (the last by default: fft2's
                                           second pass needs no transposes)
    fft_r2c(x)                -> (re, im)  np.fft.rfft: n//2 + 1 outputs
    fft_c2r(re, im, n)        -> x         np.fft.irfft to length n from n//2 + 1
                                           inputs (the imaginary parts of the DC and,
                                           for even n, Nyquist terms are ignored)

    fft_z(z, inverse)         -> z         fft_c2c along the last axis of a complex
                                           array in its interleaved layout: for the
                                           transform of a program's complex input,
                                           each row split into the kernel's scratch
                                           and its result interleaved back there
                                           (no passes over memory before and after)
The references run np.fft in the operands' precision (NumPy 2 keeps complex64).
"""
from __future__ import annotations

import numpy as np

from ..core import declare
from ..errors import ShapeError
from ..ir import ShapedArray

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _operand(x, what: str):
    if x.ndim < 1:
        raise ShapeError(f"{what} of an FFT must have at least 1 dim (the transformed "
                         f"last axis), got {x}")
    if x.dtype not in _FLOATS:
        raise ShapeError(f"{what} of an FFT must be float32 or float64, got {x}")
    n = x.shape[-1]
    if not isinstance(n, (int, np.integer)):
        raise NotImplementedError(f"the FFT length (last axis of {what}) must be static, "
                                  f"got {x}; give it as a number")
    return x


def _pair(re, im, what: str):
    _operand(re, f"the real part of {what}")
    _operand(im, f"the imaginary part of {what}")
    if re.shape != im.shape or re.dtype != im.dtype:
        raise ShapeError(f"the real and imaginary parts of {what} must have one shape and "
                         f"dtype, got {re} and {im}")


def _nonempty(n: int):
    if n == 0:
        raise ShapeError("an FFT of length 0 is undefined; give the transformed axis at "
                         "least 1 element")


def _complex(re, im):
    ct = np.complex64 if re.dtype == np.float32 else np.complex128
    return re.astype(ct) + im.astype(ct) * ct(1j)


def _split(z, dt):
    return [np.ascontiguousarray(z.real, dt), np.ascontiguousarray(z.imag, dt)]


# ------------------------------------------------------------------ fft_c2c

def _c2c_rule(re, im, *, inverse, axis=-1):
    _pair(re, im, "fft_c2c's operand")
    if not isinstance(axis, (int, np.integer)) or not -re.ndim <= axis < re.ndim:
        raise ShapeError(f"fft_c2c's axis must be an int in [-{re.ndim}, {re.ndim}) for "
                         f"{re}, got {axis!r}")
    n = re.shape[axis]
    if not isinstance(n, (int, np.integer)):
        raise NotImplementedError(f"the FFT length (axis {axis} of {re}) must be static; "
                                  "give it as a number")
    _nonempty(n)
    return [ShapedArray(re.shape, re.dtype), ShapedArray(re.shape, re.dtype)]


def _c2c(re, im, *, inverse, axis=-1):
    z = _complex(re, im)
    return _split(np.fft.ifft(z, axis=axis) if inverse else np.fft.fft(z, axis=axis),
                  re.dtype)


fft_c2c = declare("fft_c2c", _c2c_rule, _c2c, multiple_results=True)


# ------------------------------------------------------------------ fft_r2c

def _r2c_rule(x):
    _operand(x, "fft_r2c's operand")
    _nonempty(x.shape[-1])
    out = x.shape[:-1] + (x.shape[-1] // 2 + 1,)
    return [ShapedArray(out, x.dtype), ShapedArray(out, x.dtype)]


def _r2c(x):
    return _split(np.fft.rfft(x), x.dtype)


fft_r2c = declare("fft_r2c", _r2c_rule, _r2c, multiple_results=True)


# ------------------------------------------------------------------ fft_c2r

def _c2r_rule(re, im, *, n):
    _pair(re, im, "fft_c2r's operand")
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ShapeError(f"fft_c2r's output length n must be a static int >= 1, got {n!r}")
    _nonempty(n)
    if re.shape[-1] != n // 2 + 1:
        raise ShapeError(f"fft_c2r to length {n} takes n//2 + 1 = {n // 2 + 1} inputs along "
                         f"the last axis, got {re}")
    return ShapedArray(re.shape[:-1] + (n,), re.dtype)


def _c2r(re, im, *, n):
    return np.ascontiguousarray(np.fft.irfft(_complex(re, im), n), re.dtype)


fft_c2r = declare("fft_c2r", _c2r_rule, _c2r)


# ------------------------------------------------------------------ fft_z

_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))


def _z_rule(z, *, inverse):
    if z.ndim < 1 or z.dtype not in _COMPLEX:
        raise ShapeError(f"fft_z's operand must be a complex64 or complex128 array of at "
                         f"least 1 dim, got {z}")
    n = z.shape[-1]
    if not isinstance(n, (int, np.integer)):
        raise NotImplementedError(f"the FFT length (last axis of {z}) must be static; "
                                  "give it as a number")
    _nonempty(n)
    return ShapedArray(z.shape, z.dtype)


def _z(z, *, inverse):
    out = np.fft.ifft(z, axis=-1) if inverse else np.fft.fft(z, axis=-1)
    return out.astype(z.dtype, copy=False)


fft_z = declare("fft_z", _z_rule, _z)
