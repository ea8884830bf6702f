"""jvp, vjp and batching rules of the user-facing FFT primitive (jx.prims.fft, JAX's
lax.fft_p).

The FFT is linear, so its tangent is the FFT of the tangent. Cotangents pair with
tangents through JAX's unconjugated Re(sum(ct * t)), so a vjp is the plain transpose:

  FFT / IFFT: the DFT matrix is symmetric, so each is its own transpose.
  RFFT (real x -> half spectrum X): x_j collects Re(sum_k ct_k exp(-2 pi i jk/n)) over
    the n//2 + 1 kept bins only. An IRFFT of conj(ct) sums each interior bin twice
    (itself and its Hermitian mirror, 2 Re(.)) and the DC and Nyquist bins once, and
    scales by 1/N: so the cotangent is N * irfft(conj(ct) / mask), mask 2 on the
    interior bins and 1 on DC (and Nyquist when n is even).
  IRFFT (half spectrum Z -> real x): x = (1/N) sum over the full spectrum of the
    Hermitian completion, in which every interior bin appears twice; so the
    cotangent of Z is conj(mask * rfft(ct)) / N, the conj from the unconjugated
    pairing (JAX's complex-gradient convention).

Batching keeps a batch axis that already sits before the transformed axes, and moves
any other to the front.
"""
from __future__ import annotations

import math

import numpy as np

from jx import dtypes
from jx.core import bind, get_aval
from jx.prims import elementwise as ew
from jx.prims import fft as fp
from jx.prims.fft import FftType

from .jvp import jvp_rules
from .jvp_rules import linear
from .vjp import vjp_rules
from .vmap import batch_rules, move_to_front

NAME = "fft"


def _fft(x, fft_type, fft_lengths):
    return bind(fp.fft, x, fft_type=fft_type, fft_lengths=fft_lengths)[0]


def _mask(fft_lengths, dtype) -> np.ndarray:
    """1 on the DC bin (and the Nyquist bin of an even length), 2 on the interior bins
    of the half spectrum: how often each appears in the full Hermitian spectrum."""
    n = fft_lengths[-1]
    mask = np.full(n // 2 + 1, 2, dtype)
    mask[0] = 1
    if n % 2 == 0:
        mask[-1] = 1
    return mask


# ------------------------------------------------------------------ jvp
jvp_rules[NAME] = linear(fp.fft)


# ------------------------------------------------------------------ vjp
def _fft_vjp(cts, ins, outs, *, fft_type, fft_lengths):
    (ct,) = cts
    if ct is None:
        return [None]
    size = math.prod(fft_lengths)
    if fft_type == FftType.RFFT:
        half = bind(ew.conj, ct)[0] / _mask(fft_lengths, dtypes.real_dtype(get_aval(ct).dtype))
        return [size * _fft(half, FftType.IRFFT, fft_lengths)]
    if fft_type == FftType.IRFFT:
        spectrum = _fft(ct, FftType.RFFT, fft_lengths)
        scaled = spectrum * (_mask(fft_lengths, get_aval(ct).dtype) / size)
        return [bind(ew.conj, scaled)[0]]
    return [_fft(ct, fft_type, fft_lengths)]


vjp_rules[NAME] = _fft_vjp


# ------------------------------------------------------------------ vmap
def _fft_batch(xs, dims, axis_size, *, fft_type, fft_lengths):
    (x,), (d,) = xs, dims
    ndim = len(get_aval(x).shape)
    if d is not None and d % ndim < ndim - len(fft_lengths):
        return [_fft(x, fft_type, fft_lengths)], [d % ndim]
    x = move_to_front(x, d, axis_size)
    return [_fft(x, fft_type, fft_lengths)], [0]


batch_rules[NAME] = _fft_batch
