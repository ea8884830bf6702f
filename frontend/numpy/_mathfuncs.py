"""Elementwise math of jax.numpy over jx.numpy: gcd and lcm, the float
decompositions (frexp, ldexp, modf, spacing), sinc and i0, and the bit counts
and packing (bitwise_count, packbits, unpackbits)."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..prims import bitcast as bc
from . import creation as cr
from . import manipulation as mp
from . import reductions as rd
from . import ufuncs as uf
from ._util import bind1, canonical_axis, has_tracer, promote, promote_dtypes, shape_of
from .creation import _wrap_public, asarray


def _uint_of(dt) -> np.dtype:
    return np.dtype(f"uint{np.dtype(dt).itemsize * 8}")


def _bits(x):
    """x's bit pattern as the unsigned int of its width."""
    return bind1(bc.bitcast_convert_type, x, new_dtype=_uint_of(x.dtype))


# -------------------------------------------------------------- gcd and lcm


def gcd(x1, x2):
    """The greatest common divisor of |x1| and |x2| (gcd(0, 0) = 0)."""
    a, b = promote(x1, x2)
    if not dtypes.is_int(asarray(a).dtype):
        raise TypeError(f"gcd: the arguments must be integers, got {asarray(a).dtype} "
                        "(round and astype(int32) first)")
    a, b = uf.abs(a), uf.abs(b)
    # Euclid, unrolled: jx.lax.while_loop sits above jx.numpy. Remainder steps at
    # least halve every other value (Lame), so 1.45 * bits + 3 steps always finish.
    for _ in range(int(1.45 * asarray(a).dtype.itemsize * 8) + 3):
        live = uf.not_equal(b, 0)
        a, b = uf.where(live, b, a), uf.where(live, uf.remainder(a, uf.where(live, b, 1)), 0)
    return a


def lcm(x1, x2):
    """The least common multiple of |x1| and |x2| (0 if either is 0)."""
    a, b = promote(x1, x2)
    if not dtypes.is_int(asarray(a).dtype):
        raise TypeError(f"lcm: the arguments must be integers, got {asarray(a).dtype}")
    a, b = uf.abs(a), uf.abs(b)
    d = gcd(a, b)
    return uf.where(uf.equal(d, 0), 0, a * uf.floor_divide(b, uf.where(uf.equal(d, 0), 1, d)))


# --------------------------------------------------------- float anatomy


def _pow2(k, dt, fi):
    """2.0**k in dt for int k in the normal exponent range, built from its bits."""
    ut = _uint_of(dt)
    field = (k + (1 - int(fi.minexp))).astype(ut)
    return bind1(bc.bitcast_convert_type, uf.left_shift(field, np.array(int(fi.nmant), ut)),
                 new_dtype=dt)


def frexp(x, /):
    """(mantissa, exponent) with x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1
    (x itself and exponent 0 for 0, inf and NaN); exponent is int32. The exponent
    is read off the bits; the mantissa is x scaled by 2**-exponent (exact), so its
    derivative is 2**-exponent, as JAX's."""
    (x,) = promote_dtypes(x, to_float=True)
    x = asarray(x)
    dt = x.dtype
    fi = dtypes.finfo(dt)
    nmant, bias = int(fi.nmant), 1 - int(fi.minexp)
    ut = _uint_of(dt)
    # subnormals: scale into the normal range first, and count the scaling back
    sub = uf.logical_and(uf.less(uf.abs(x), float(fi.tiny)), uf.not_equal(x, 0))
    xs = uf.where(sub, x * float(2.0 ** nmant), x)
    field = np.array((1 << int(fi.nexp)) - 1, ut)
    expo = uf.bitwise_and(uf.right_shift(_bits(xs), np.array(nmant, ut)), field)
    special = uf.logical_or(uf.logical_not(uf.isfinite(x)), uf.equal(x, 0))
    e = uf.where(special, 0, expo.astype(dtypes.int32) - (bias - 1) - uf.where(sub, nmant, 0))
    # two factors: 2**-e alone leaves the float range at the extremes
    half = uf.right_shift(-e, np.int32(1))
    m = x * _pow2(half, dt, fi) * _pow2(-e - half, dt, fi)
    return uf.where(special, x, m), e.astype(dtypes.int32)


def ldexp(x1, x2, /):
    """x1 * 2**x2 for integer x2, without overflowing early for small x1."""
    d2 = asarray(x2).dtype
    if dtypes.is_float(d2):
        raise TypeError(f"ldexp: the exponent x2 must be an integer, got {d2} "
                        "(astype(int32) first)")
    (x1,) = promote_dtypes(x1, to_float=True)
    x1 = asarray(x1)
    m, e = frexp(x1)
    e = e.astype(x1.dtype) + asarray(x2).astype(x1.dtype)
    # the exponent may overflow by one and the result still be finite
    pos = uf.greater(e, 0)
    m, e = uf.where(pos, m * 2, m), uf.where(pos, e - 1, e)
    x, e = mp.broadcast_arrays(x1, e)
    out = m * uf.power(np.array(2, x1.dtype), e)
    return uf.where(uf.logical_or(uf.isinf(x), uf.equal(x, 0)), x, out)


def modf(x, /, out=None):
    """(fractional part, integral part), both with x's sign."""
    if out is not None:
        raise NotImplementedError("modf: out= is not supported (jx arrays are immutable)")
    (x,) = promote_dtypes(x, to_float=True)
    whole = uf.where(uf.greater_equal(x, 0), uf.floor(x), uf.ceil(x))
    return x - whole, whole


def spacing(x, /):
    """The distance from x to the next float away from zero."""
    from ._standard import nextafter
    (x,) = promote_dtypes(x, to_float=True)
    x = asarray(x)
    if x.dtype == dtypes.float16:        # NumPy's float16 spacing steps towards +inf
        return nextafter(x, np.array(np.inf, x.dtype)) - x
    out = nextafter(x, uf.copysign(np.array(np.inf, x.dtype), x)) - x
    tiny = np.array(dtypes.finfo(x.dtype).smallest_subnormal, x.dtype)
    return uf.where(uf.equal(out, 0), uf.copysign(tiny, x), out)


# ------------------------------------------------------------- sinc and i0


def sinc(x, /):
    """sin(pi x) / (pi x), 1 at 0. At 0 the Maclaurin polynomial is used instead,
    so derivatives of every order up to 8 are the true ones there (JAX's
    custom rule gives them all)."""
    (x,) = promote_dtypes(x, to_float=True)
    zero = uf.equal(x, 0)
    px = x * np.pi
    safe = uf.where(zero, 1, px)
    s = px * px
    series = 1 + s * (-1 / 6 + s * (1 / 120 + s * (-1 / 5040 + s / 362880)))
    return uf.where(zero, series, uf.sin(safe) / safe)


_I0_SPLIT = 20.0


def i0(x):
    """The modified Bessel function of the first kind, order 0: its power series
    up to |x| = 20, the asymptotic series beyond (both accurate to float64)."""
    (x,) = promote_dtypes(x, to_float=True)
    x = asarray(x)
    dt = x.dtype
    if not dtypes.is_float(dt):
        raise TypeError(f"i0: unsupported input dtype {dt}")
    half = dtypes.is_half(dt)           # summed in float32: the terms overflow 16 bits
    if half:
        x = x.astype(dtypes.float32)
    ax = uf.abs(x)
    big = uf.greater(ax, _I0_SPLIT)
    xs = uf.where(big, 0, x)
    q = xs * xs / 4                     # sum_k (x^2/4)^k / (k!)^2; even in x: no abs
    term, total = cr.ones_like(q), cr.ones_like(q)
    for k in range(1, 60):
        term = term * q / float(k * k)
        total = total + term
    xa = uf.where(big, ax, 2 * _I0_SPLIT)
    term, asym = cr.ones_like(xa), cr.ones_like(xa)
    for k in range(1, 26):              # terms shrink until k ~ 2x > 40
        term = term * float((2 * k - 1) ** 2) / (8.0 * k * xa)
        asym = asym + term
    asym = uf.exp(xa) / uf.sqrt(2 * np.pi * xa) * asym
    out = uf.where(big, asym, total)
    return out.astype(dt) if half else out


# ---------------------------------------------------------------- bits


def bitwise_count(x, /):
    """The number of 1 bits in |x|, as uint8."""
    x = asarray(x)
    if not (dtypes.is_int(x.dtype) or x.dtype == dtypes.bool_):
        raise TypeError(f"bitwise_count: x must be an integer or bool array, got {x.dtype}")
    if x.dtype == dtypes.bool_:
        return x.astype(dtypes.uint8)
    if x.dtype.kind == "i":
        x = uf.abs(x)
    v = _bits(x)
    ut = v.dtype
    width = ut.itemsize * 8

    def c(pattern):                     # the byte pattern repeated across the width
        return np.array(int.from_bytes(bytes([pattern]) * ut.itemsize, "little"), ut)

    def sh(n):
        return np.array(n, ut)
    v = v - uf.bitwise_and(uf.right_shift(v, sh(1)), c(0x55))
    v = uf.bitwise_and(v, c(0x33)) + uf.bitwise_and(uf.right_shift(v, sh(2)), c(0x33))
    v = uf.bitwise_and(v + uf.right_shift(v, sh(4)), c(0x0F))
    s = 8
    while s < width:                    # fold the byte counts into the low byte
        v = v + uf.right_shift(v, sh(s))
        s *= 2
    return uf.bitwise_and(v, np.array(0xFF, ut)).astype(dtypes.uint8)


def _bitorder(bitorder):
    if bitorder not in ("little", "big"):
        raise ValueError(f"bitorder must be 'little' or 'big', got {bitorder!r}")


def packbits(a, axis=None, bitorder="big"):
    """The elements of a (as bits: nonzero is 1) packed 8 to a uint8 along axis
    (the flattened a if None), the last byte padded with zeros."""
    arr = asarray(a)
    if not (dtypes.is_int(arr.dtype) or arr.dtype == dtypes.bool_):
        raise TypeError(f"packbits: a must be an integer or bool array, got {arr.dtype}")
    _bitorder(bitorder)
    arr = uf.not_equal(arr, 0).astype(dtypes.uint8)
    if axis is None:
        arr, axis = mp.ravel(arr), 0
    axis = canonical_axis(axis, len(shape_of(arr)))
    arr = mp.swapaxes(arr, axis, -1)
    n = shape_of(arr)[-1]
    if n % 8:
        arr = mp.pad(arr, [(0, 0)] * (len(shape_of(arr)) - 1) + [(0, 8 - n % 8)])
    arr = mp.reshape(arr, shape_of(arr)[:-1] + (shape_of(arr)[-1] // 8, 8))
    shifts = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1].copy()
    packed = rd.sum(uf.left_shift(arr, shifts), -1).astype(dtypes.uint8)
    return mp.swapaxes(packed, axis, -1)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of the uint8 array a along axis (the flattened a if None), 8 per
    byte; count: keep that many (padding with zeros past the end)."""
    arr = asarray(a)
    if arr.dtype != dtypes.uint8:
        raise TypeError(f"unpackbits: a must be a uint8 array, got {arr.dtype} "
                        "(astype(uint8) first)")
    _bitorder(bitorder)
    if count is not None and has_tracer(count):
        raise TypeError("unpackbits: count must be a static int")
    masks = (np.ones(8, np.uint8) << np.arange(8, dtype=np.uint8)).astype(np.uint8)
    if bitorder == "big":
        masks = masks[::-1].copy()
    if axis is None:
        arr, axis = mp.ravel(arr), 0
    axis = canonical_axis(axis, len(shape_of(arr)))
    arr = mp.swapaxes(arr, axis, -1)
    bits = uf.greater(uf.bitwise_and(mp.expand_dims(arr, -1), masks), 0).astype(dtypes.uint8)
    bits = mp.reshape(bits, shape_of(bits)[:-2] + (-1,))
    if count is not None:
        count, n = int(count), shape_of(bits)[-1]
        if count > n:
            bits = mp.pad(bits, [(0, 0)] * (len(shape_of(bits)) - 1) + [(0, count - n)])
        else:
            bits = bits[..., :count]
    return mp.swapaxes(bits, axis, -1)


__all__ = ["gcd", "lcm", "frexp", "ldexp", "modf", "spacing", "sinc", "i0", "bitwise_count",
           "packbits", "unpackbits"]
_wrap_public(globals(), __all__)
