"""jx.numpy.fft: the sample-frequency and shift helpers, as jax.numpy.fft's.

The transforms themselves (fft, rfft, fftn, ...) return or take complex arrays,
which jx does not have yet: asking for one says so.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes
from ..errors import missing_name
from ._util import has_tracer
from .creation import arange, asarray
from .manipulation import roll


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


_JAX_ONLY = frozenset("""fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn
    hfft ihfft""".split())


def __getattr__(name: str):
    raise missing_name("jx.numpy.fft", name, _JAX_ONLY, {},
                       "not implemented yet: the transforms need complex dtypes, which "
                       "come with their issue")


__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]
