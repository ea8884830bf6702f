"""jx.numpy.fft, as jax.numpy.fft: the transforms over any axes, and the sample-frequency
and shift helpers.

Every transform is one jx.lax.fft over trailing axes: the chosen axes are moved to
the end (and back after), zero-padded or truncated to the lengths asked for, and
transformed; more than 3 axes are split into transforms of at most 3, as JAX does.
norm scales the result: "backward" (or None) leaves the forward transforms
unscaled and the inverse ones by 1/n, "forward" the reverse, "ortho" both by
1/sqrt(n).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import dtypes
from ..prims import structural as st
from ..prims.fft import FftType
from ._standard import conj
from ._util import bind1, has_tracer
from .creation import _wrap_public, arange, asarray
from .manipulation import moveaxis, pad, roll

_NORMS = (None, "backward", "ortho", "forward")


def _operand(a, full_name: str):
    if isinstance(a, (list, tuple)):     # jax.numpy.fft takes arrays only, as JAX
        raise TypeError(f"{full_name} requires ndarray or scalar arguments, got "
                        f"{type(a)} at position 0.")
    return asarray(a)


def _static_ints(values, what: str, full_name: str) -> tuple:
    if has_tracer(values):
        raise TypeError(f"{full_name}: {what} must be static ints (they set the result's "
                        "shape), not traced values")
    return tuple(operator.index(v) for v in values)


def _axes(axes, ndim: int, full_name: str) -> tuple:
    axes = _static_ints(axes, "axes", full_name)
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise np.exceptions.AxisError(ax, ndim)
    canonical = tuple(ax % ndim for ax in axes)
    if len(set(canonical)) != len(canonical):
        raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
    return canonical


def _scale(func_name: str, norm, lengths) -> float | None:
    """The factor norm applies to an unnormalised transform (None for backward: the
    primitive's own scaling, 1/n on the inverse transforms)."""
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or '
                         '"forward".')
    size = math.prod(lengths)
    if norm in (None, "backward") or size == 0:      # (an empty result needs no scaling)
        return None
    inverse = func_name.startswith("i")
    if norm == "ortho":
        return math.sqrt(size) if inverse else 1 / math.sqrt(size)
    return size if inverse else 1 / size


def _transform(x, fft_type: FftType, lengths: tuple):
    """lax.fft over the trailing len(lengths) axes, any number of them: beyond 3, the
    last 2 or 3 axes are transformed by one call and the others by a recursive one
    (first for the forward transforms, last for the inverse ones, whose final
    call may be the complex-to-real one)."""
    from ..lax.fft import fft as _lax_fft     # (jx.lax imports jx.numpy as it loads)
    if len(lengths) <= 3:
        return _lax_fft(x, fft_type, lengths)
    n = 2 if len(lengths) == 4 else 3
    ndim = len(x.shape)
    src = tuple(range(ndim - len(lengths), ndim - n))
    dst = tuple(range(ndim - len(lengths) + n, ndim))
    if fft_type in (FftType.FFT, FftType.RFFT):
        x = moveaxis(_lax_fft(x, fft_type, lengths[-n:]), src, dst)
        return moveaxis(_transform(x, FftType.FFT, lengths[:-n]), dst, src)
    x = moveaxis(_transform(moveaxis(x, src, dst), FftType.IFFT, lengths[:-n]), dst, src)
    return _lax_fft(x, fft_type, lengths[-n:])


def _core(func_name: str, fft_type: FftType, a, s, axes, norm):
    full_name = f"jax.numpy.fft.{func_name}"
    arr = _operand(a, full_name)
    ndim = len(arr.shape)
    if s is not None:
        s = _static_ints(s, "s (the transform lengths)", full_name)
        if any(n <= 0 for n in s):
            raise ValueError("Shape should be positive.")
        if axes is not None and len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
        if axes is None and len(s) > ndim:
            raise ValueError(f"{full_name}: s={s} has more entries than the {ndim} axes of "
                             "the input; give as many as there are axes to transform")
    if axes is None:
        axes = tuple(range(0 if s is None else ndim - len(s), ndim))
    else:
        axes = _axes(axes, ndim, full_name)
    trailing = tuple(range(ndim - len(axes), ndim))
    if axes != trailing:
        arr = moveaxis(arr, axes, trailing)
    shape = tuple(arr.shape)
    if s is not None:
        want = shape[:ndim - len(s)] + s
        if fft_type == FftType.IRFFT:          # s[-1] is the output length
            want = want[:-1] + (want[-1] // 2 + 1,)
        if want != shape:
            kept = tuple(min(w, d) for w, d in zip(want, shape))
            if kept != shape:
                arr = bind1(st.slice_, arr, start_indices=(0,) * ndim,
                            limit_indices=kept, strides=(1,) * ndim)
            if kept != want:
                arr = pad(arr, [(0, w - k) for w, k in zip(want, kept)])
        lengths = s
    else:
        lengths = tuple(shape[ax] for ax in trailing)
        if fft_type == FftType.IRFFT and lengths:
            lengths = lengths[:-1] + (max(0, 2 * (lengths[-1] - 1)),)
    factor = _scale(func_name, norm, lengths)
    out = _transform(arr, fft_type, lengths)
    if factor is not None:
        out = out * factor
    if axes != trailing:
        out = moveaxis(out, trailing, axes)
    return out


def _check_1d(func_name: str, axis):
    if isinstance(axis, (list, tuple)):
        full_name = f"jax.numpy.fft.{func_name}"
        raise ValueError(f"{full_name} does not support multiple axes. Please use "
                         f"{full_name}n. Got axis = {axis!r}.")


def _core_1d(func_name: str, fft_type: FftType, a, n, axis, norm):
    _check_1d(func_name, axis)
    return _core(func_name, fft_type, a, None if n is None else [n],
                 None if axis is None else [axis], norm)


def _core_2d(func_name: str, fft_type: FftType, a, s, axes, norm):
    if axes is None or len(axes) != 2:
        raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. "
                         f"Got axes = {axes!r}.")
    return _core(func_name, fft_type, a, s, axes, norm)


def fft(a, n=None, axis=-1, norm=None):
    """The 1-D discrete Fourier transform along axis (zero-padded or cut to n)."""
    return _core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
    """The inverse of fft."""
    return _core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """The 1-D FFT of real input: the n // 2 + 1 non-negative frequencies."""
    return _core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of rfft: n real outputs (default 2 (m - 1)) from m frequencies."""
    return _core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """The FFT of a signal with Hermitian symmetry given by its first half: real."""
    conj_a = conj(_operand(a, "jax.numpy.fft.hfft"))
    _check_1d("hfft", axis)
    nn = (conj_a.shape[axis] - 1) * 2 if n is None else n
    return _core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm) * nn


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of hfft: the first half of a Hermitian spectrum from real input."""
    arr = _operand(a, "jax.numpy.fft.ihfft")
    _check_1d("ihfft", axis)
    nn = arr.shape[axis] if n is None else n
    return conj(_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)) * (1 / nn)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """The 2-D FFT over axes."""
    return _core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """The inverse of fft2."""
    return _core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """The 2-D FFT of real input, halved along the last of axes."""
    return _core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """The inverse of rfft2."""
    return _core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
    """The N-D FFT over axes (all of them by default, or the last len(s))."""
    return _core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The inverse of fftn."""
    return _core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """The N-D FFT of real input, halved along the last of axes."""
    return _core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of rfftn."""
    return _core("irfftn", FftType.IRFFT, a, s, axes, norm)


# ------------------------------------------------------------------ helpers

def _length(n, name: str) -> int:
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. "
                         f"Got n = {list(n)}.")
    if has_tracer(n):
        raise TypeError(f"jx.numpy.fft.{name}: n must be a static int (it sets the "
                        "result's shape), not a traced value")
    return operator.index(n)


def _spacing(d, n: int, dtype, name: str):
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of jax.numpy.fft.{name} only takes a single "
                         f"value. Got d = {list(d)}.")
    return asarray(d * n, dtype=dtype)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an n-point DFT with sample spacing d:
    [0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d n)."""
    n = _length(n, "fftfreq")
    dtype = dtypes.canonicalize(dtype or dtypes.default_float(), "fftfreq")
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return asarray(k, dtype=dtype) / _spacing(d, n, dtype, "fftfreq")


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an n-point real DFT: [0, 1, ..., n // 2] / (d n)."""
    n = _length(n, "rfftfreq")
    dtype = dtypes.canonicalize(dtype or dtypes.default_float(), "rfftfreq")
    return arange(0, n // 2 + 1, dtype=dtype) / _spacing(d, n, dtype, "rfftfreq")


def _shifts(x, axes, sign: int):
    x = asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
        shift = [sign * (n // 2) for n in x.shape]
    elif isinstance(axes, int):
        shift = sign * (x.shape[axes] // 2)
    else:
        shift = [sign * (x.shape[ax] // 2) for ax in axes]
    return roll(x, shift, axes)


def fftshift(x, axes=None):
    """x with the zero-frequency entry moved to the centre of each axis in axes."""
    return _shifts(x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of fftshift (they differ for odd lengths)."""
    return _shifts(x, axes, -1)


__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
           "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]
_wrap_public(globals(), __all__)
