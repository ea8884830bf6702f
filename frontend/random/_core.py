"""jx.random's core: JAX's counter-based PRNG on the threefry2x32 primitive.

A key is a uint32[2] array (JAX's raw keys): PRNGKey(0) is [0, 0]. Functions
are pure: the same key always gives the same numbers, and a fresh stream comes
from `split` or `fold_in`. The algorithms follow JAX with
`jax_threefry_partitionable` on (the default since JAX 0.5): element i of a
draw encrypts the 64-bit counter i, split as (hi, lo), under the key, and
random_bits xors the two output words. uniform fills the mantissa with the top
random bits; normal is sqrt(2) * erfinv(uniform(-1, 1)); permutation sorts by
random keys. Everything is jx.numpy / primitives, so it traces, transforms and
compiles like user code, and runs eagerly on NumPy keys.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..core import Tracer, bind_like
from ..errors import ShapeError
from ..numpy import _util as u
from ..numpy.creation import _wrap_public
from ..prims import elementwise as ew
from ..prims import random_bits as rb
from ..prims import structural as st

_U32_MASK = 0xFFFFFFFF
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
         64: np.dtype(np.uint64)}


def _jnp():
    from .. import numpy as jnp
    return jnp


def _shape(shape) -> tuple:
    if shape is None:
        return ()
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)


# ---------------------------------------------------------------- keys

def PRNGKey(seed) -> np.ndarray:
    """A key from an integer seed: [hi, lo] words of the seed, like JAX: with x64
    off, [0, seed mod 2**32] (64-bit seeds narrow first); with x64 on, a Python int
    or an int64/uint64 seed fills the high word too."""
    if isinstance(seed, (bool, np.bool_)) or isinstance(seed, float):
        raise TypeError(f"PRNGKey needs an integer seed, got {seed!r}")
    if isinstance(seed, int):
        if not -2**63 <= seed < 2**63:
            raise OverflowError(f"seed {seed} does not fit in int64")
        hi = (seed >> 32) & _U32_MASK if dtypes.x64() else 0
        return np.array([hi, seed & _U32_MASK], dtype=np.uint32)
    s = u.as_value(seed)
    if u.shape_of(s) != () or not dtypes.is_int(s.dtype):
        raise TypeError(f"PRNGKey needs a scalar integer seed, got {s.dtype}{u.shape_of(s)}")
    jnp = _jnp()
    if s.dtype.itemsize == 8:
        hi = u.convert(jnp.bitwise_and(jnp.right_shift(
            u.convert(s, dtypes.uint64), np.uint64(32)), np.uint64(_U32_MASK)), dtypes.uint32)
        lo = u.convert(jnp.bitwise_and(u.convert(s, dtypes.uint64), np.uint64(_U32_MASK)),
                       dtypes.uint32)
    else:
        hi = bind_like([s], st.broadcast_in_dim, np.uint32(0), shape=(),
                       broadcast_dimensions=())[0]
        lo = u.convert(s, dtypes.uint32)
    return jnp.stack([hi, lo])


key = PRNGKey


def _check_key(key, name: str):
    k = u.as_value(key)
    aval = k.aval if isinstance(k, Tracer) else None
    shape, dt = (aval.shape, aval.dtype) if aval else (np.shape(k), np.asarray(k).dtype)
    if tuple(shape) != (2,) or dt != dtypes.uint32:
        raise ShapeError(f"jx.random.{name} takes one key, a uint32[2] array, got "
                         f"{dtypes.short_name(dt)}{list(shape)}; make keys with "
                         "jx.random.PRNGKey(seed) and split them with jx.random.split")
    return k


def _key_words(k) -> tuple:
    def word(i):
        w = bind_like([k], st.slice_, k, start_indices=(i,), limit_indices=(i + 1,),
                      strides=(1,))[0]
        return bind_like([k], st.reshape, w, new_sizes=())[0]
    return word(0), word(1)


def _threefry(k, x0, x1) -> list:
    """threefry2x32 of counter arrays (x0, x1) under key k (broadcast to their shape)."""
    shape = u.shape_of(x0)
    like = [k, x0, x1]
    k0, k1 = (u.broadcast_to(w, shape, like) for w in _key_words(k))
    return bind_like(like, rb.threefry2x32, k0, k1, x0, x1)


def _counters(k, shape: tuple) -> tuple:
    """(hi, lo) words of a row-major uint64 iota of the given shape."""
    n = math.prod(shape)
    if n >= 2**32:
        raise ValueError(f"jx.random draws of {n} elements (2**32 or more) are not supported")
    lo = bind_like([k], st.iota, dtype=dtypes.uint32, shape=(n,), dimension=0)[0]
    if shape != (n,):
        lo = bind_like([k], st.reshape, lo, new_sizes=shape)[0]
    hi = bind_like([k], st.broadcast_in_dim, np.uint32(0), shape=shape,
                   broadcast_dimensions=())[0]
    return hi, lo


def threefry_2x32(key, count):
    """JAX's threefry_2x32(keypair, count): encrypt a uint32 array of counters.

    The flattened counters are cut in two halves that form the (x0, x1) pairs
    (padded with one zero when odd); the outputs are joined the same way.
    """
    k = _check_key(key, "threefry_2x32")
    jnp = _jnp()
    from ..numpy.manipulation import slice_axis
    count = u.as_value(count)
    c = jnp.ravel(u.convert(count, dtypes.uint32, [k]))
    n = u.shape_of(c)[0]
    if n % 2:
        c = jnp.concatenate([c, np.zeros(1, np.uint32)])
    half = (n + 1) // 2
    x0, x1 = slice_axis(c, 0, 0, half), slice_axis(c, 0, half, 2 * half)
    out = jnp.concatenate(_threefry(k, x0, x1))
    return jnp.reshape(slice_axis(out, 0, 0, n), u.shape_of(count))


def split(key, num=2):
    """num new keys (an int or a shape) -> uint32[*shape, 2]."""
    k = _check_key(key, "split")
    shape = _shape(num)
    b0, b1 = _threefry(k, *_counters(k, shape))
    return _jnp().stack([b0, b1], axis=len(shape))


def _split2(k) -> tuple:
    """split(k) as two separate keys."""
    keys = split(k)

    def row(i):
        r = bind_like([keys], st.slice_, keys, start_indices=(i, 0), limit_indices=(i + 1, 2),
                      strides=(1, 1))[0]
        return bind_like([keys], st.reshape, r, new_sizes=(2,))[0]
    return row(0), row(1)


def fold_in(key, data):
    """A new key mixing the integer `data` into `key` (its low 32 bits)."""
    k = _check_key(key, "fold_in")
    d = u.as_value(data)
    if u.is_scalar_const(d):
        d = np.uint32(int(d) & _U32_MASK)
    if u.shape_of(d) != ():
        raise ShapeError(f"fold_in data must be a scalar, got shape {u.shape_of(d)}")
    d = u.convert(d, dtypes.uint32, [k])
    zero = bind_like([k, d], st.broadcast_in_dim, np.uint32(0), shape=(1,),
                     broadcast_dimensions=())[0]
    d = bind_like([k, d], st.reshape, d, new_sizes=(1,))[0]
    return _jnp().concatenate(_threefry(k, zero, d))


# ---------------------------------------------------------------- bits

def random_bits(key, shape=(), dtype=np.uint32):
    """Uniform random bits: an unsigned integer array of the given shape."""
    k = _check_key(key, "bits")
    dt = np.dtype(dtype)
    if dt.kind != "u" or dt.itemsize * 8 not in _UINT:
        raise TypeError(f"jx.random.bits needs an unsigned dtype (uint8/16/32/64), got {dt}")
    return _bits(k, dt.itemsize * 8, _shape(shape))


bits = random_bits


def _bits(k, width: int, shape: tuple):
    return _word_bits(*_threefry(k, *_counters(k, shape)), width)


def _word_bits(b0, b1, width: int):
    """The random bits of a draw from its two threefry output words."""
    jnp = _jnp()
    if width == 64:
        hi = u.convert(b0, dtypes.uint64)
        return jnp.bitwise_or(jnp.left_shift(hi, np.uint64(32)),
                              u.convert(b1, dtypes.uint64))
    word = jnp.bitwise_xor(b0, b1)
    if width == 32:
        return word
    # keep the low bits, so the narrowing conversion never goes out of range
    word = jnp.bitwise_and(word, np.uint32((1 << width) - 1))
    return u.convert(word, _UINT[width])


# ---------------------------------------------------------------- floats

def _float_dtype(dtype, name: str) -> np.dtype:
    dt = dtypes.canonicalize(dtype)
    if not dtypes.is_float(dt):
        raise TypeError(f"jx.random.{name} needs a floating dtype, got {dt}")
    return dt


def _bounds(shape, dt, *vals):
    """Convert bounds to dt and check they broadcast to shape."""
    out = []
    for v in vals:
        v = u.convert(u.as_value(v), dt)
        if u.broadcast_shapes(u.shape_of(v), shape) != shape:
            raise ShapeError(f"bound of shape {u.shape_of(v)} does not broadcast to the "
                             f"requested shape {shape}")
        out.append(v)
    return out


def _float_bits(dt) -> int:
    """How many random bits a draw of float dtype dt uses."""
    return dt.itemsize * 8 if int(dtypes.finfo(dt).nmant) >= 8 else 8


def _unit_floats(k, shape, dt):
    return _bits_to_unit(_bits(k, _float_bits(dt), shape), dt)


def _bits_to_unit(b, dt):
    """Floats in [0, 1): the top random bits as the mantissa of a number in [1, 2), minus 1.

    m * 2**-nmant is that value exactly, so no bitcast is needed.
    """
    nbits, nmant = dt.itemsize * 8, int(dtypes.finfo(dt).nmant)
    rng_bits = _float_bits(dt)
    if rng_bits != nbits:
        b = u.convert(b, _UINT[nbits])
    jnp = _jnp()
    m = jnp.right_shift(b, np.asarray(rng_bits - nmant, _UINT[nbits]))
    return jnp.multiply(u.convert(m, dt), np.asarray(2.0 ** -nmant, dt))


def _scale_unit(f, lo, hi):
    """uniform's map of unit floats f onto [lo, hi)."""
    jnp = _jnp()
    return jnp.maximum(lo, jnp.add(jnp.multiply(f, jnp.subtract(hi, lo)), lo))


def uniform(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
    """Floats uniform in [minval, maxval)."""
    k = _check_key(key, "uniform")
    dt = _float_dtype(dtype, "uniform")
    shape = _shape(shape)
    lo, hi = _bounds(shape, dt, minval, maxval)
    jnp = _jnp()
    return jnp.broadcast_to(_scale_unit(_unit_floats(k, shape, dt), lo, hi), shape)


def normal(key, shape=(), dtype=float):
    """Standard normal samples: sqrt(2) * erfinv(u), u uniform in (-1, 1). A complex
    dtype draws the real and imaginary parts from the two halves of split(key),
    each of variance 1/2, as JAX."""
    k = _check_key(key, "normal")
    dt = dtypes.canonicalize(dtype)
    if dtypes.is_complex(dt):
        rt = dtypes.real_dtype(dt)
        re, im = (normal(half, shape, rt) for half in _split2(k))
        scale = np.asarray(np.sqrt(0.5), rt)
        return bind_like([re, im], ew.complex_, *(_jnp().multiply(p, scale)
                                                  for p in (re, im)))[0]
    dt = _float_dtype(dtype, "normal")
    lo = np.nextafter(np.asarray(-1.0, dt), np.asarray(0.0, dt))
    v = uniform(key, shape, dt, lo, 1.0)
    return _jnp().multiply(np.asarray(np.sqrt(2.0), dt), erfinv(v))


def truncated_normal(key, lower, upper, shape=None, dtype=float):
    """Normal samples restricted to (lower, upper)."""
    _check_key(key, "truncated_normal")
    dt = _float_dtype(dtype, "truncated_normal")
    jnp = _jnp()
    lower, upper = (u.convert(u.as_value(b), dt) for b in (lower, upper))
    if shape is None:
        shape = u.broadcast_shapes(u.shape_of(lower), u.shape_of(upper))
    sqrt2 = np.asarray(np.sqrt(2.0), dt)
    from ..lax.ops import erf
    a = erf(jnp.divide(lower, sqrt2))
    b = erf(jnp.divide(upper, sqrt2))
    out = jnp.multiply(sqrt2, erfinv(uniform(key, shape, dt, a, b)))
    # rounding (or drawing a itself) must not land on or outside the bounds
    lo, hi = lower, upper
    if not isinstance(lower, Tracer):
        lo = np.nextafter(lower, np.asarray(np.inf, dt))
    if not isinstance(upper, Tracer):
        hi = np.nextafter(upper, np.asarray(-np.inf, dt))
    return jnp.clip(out, lo, hi)


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): the
# polynomials XLA uses for ErfInv, in w = -log(1 - x^2), highest degree first.
_ERFINV32_W_LT_5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                    0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV32_W_GE_5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                    0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_ERFINV64_W_LT_6_25 = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356)
_ERFINV64_W_LT_16 = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635)
_ERFINV64_W_GE_16 = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221)


def _horner(coeffs, w):
    jnp = _jnp()
    p = np.asarray(coeffs[0], w.dtype)
    for a in coeffs[1:]:
        p = jnp.add(np.asarray(a, w.dtype), jnp.multiply(p, w))
    return p


def erfinv(x):
    """Inverse error function: Giles' polynomials (float32 as XLA; float64 with its
    double-precision set, about 1 ulp); +-inf at +-1, NaN outside [-1, 1]."""
    jnp = _jnp()
    (x,) = u.promote_dtypes(x, to_float=True)
    dt = x.dtype
    if dt.itemsize < 4:      # half precision: compute in float32, as XLA does
        return u.convert(erfinv(u.convert(x, dtypes.float32)), dt)

    def c(v):
        return np.asarray(v, dt)

    if dt == dtypes.float64:
        # (1 - x)(1 + x) keeps 1 - x^2 accurate next to +-1, where the tails live
        w = jnp.negative(jnp.log(jnp.multiply(jnp.subtract(c(1), x), jnp.add(c(1), x))))
        root = jnp.sqrt(w)
        p = jnp.where(jnp.less(w, c(6.25)),
                      _horner(_ERFINV64_W_LT_6_25, jnp.subtract(w, c(3.125))),
                      jnp.where(jnp.less(w, c(16.0)),
                                _horner(_ERFINV64_W_LT_16, jnp.subtract(root, c(3.25))),
                                _horner(_ERFINV64_W_GE_16, jnp.subtract(root, c(5.0)))))
    else:
        w = jnp.negative(jnp.log1p(jnp.negative(jnp.multiply(x, x))))
        small = jnp.less(w, c(5.0))
        w = jnp.where(small, jnp.subtract(w, c(2.5)), jnp.subtract(jnp.sqrt(w), c(3.0)))
        p = jnp.where(small, c(_ERFINV32_W_LT_5[0]), c(_ERFINV32_W_GE_5[0]))
        for a, b in zip(_ERFINV32_W_LT_5[1:], _ERFINV32_W_GE_5[1:]):
            p = jnp.add(jnp.where(small, c(a), c(b)), jnp.multiply(p, w))
    y = jnp.multiply(p, x)
    return jnp.where(jnp.equal(jnp.abs(x), c(1.0)), jnp.multiply(x, c(np.inf)), y)


def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability p."""
    _check_key(key, "bernoulli")
    (p,) = u.promote_dtypes(p, to_float=True)
    shape = u.shape_of(p) if shape is None else _shape(shape)
    return _jnp().less(uniform(key, shape, p.dtype), p)


def gumbel(key, shape=(), dtype=float):
    """Standard Gumbel samples: -log(-log(u)), u uniform in [tiny, 1)."""
    _check_key(key, "gumbel")
    dt = _float_dtype(dtype, "gumbel")
    jnp = _jnp()
    v = uniform(key, shape, dt, float(dtypes.finfo(dt).tiny), 1.0)
    return jnp.negative(jnp.log(jnp.negative(jnp.log(v))))


def exponential(key, shape=(), dtype=float):
    """Standard exponential samples: -log1p(-u)."""
    _check_key(key, "exponential")
    dt = _float_dtype(dtype, "exponential")
    jnp = _jnp()
    return jnp.negative(jnp.log1p(jnp.negative(uniform(key, shape, dt))))


def categorical(key, logits, axis=-1, shape=None):
    """Class indices drawn with probabilities softmax(logits) (the Gumbel-max trick)."""
    _check_key(key, "categorical")
    jnp = _jnp()
    (lg,) = u.promote_dtypes(logits, to_float=True)
    nd = len(u.shape_of(lg))
    ax = u.canonical_axis(axis, nd)
    batch = tuple(s for i, s in enumerate(u.shape_of(lg)) if i != ax)
    shape = batch if shape is None else _shape(shape)
    if len(shape) < len(batch) or u.broadcast_shapes(shape[len(shape) - len(batch):],
                                                     batch) != shape[len(shape) - len(batch):]:
        raise ShapeError(f"categorical shape {shape} must end with the logits' batch "
                         f"shape {batch}")
    prefix = shape[:len(shape) - len(batch)]
    full = prefix + shape[len(prefix):len(prefix) + ax] + (u.shape_of(lg)[ax],) + \
        shape[len(prefix) + ax:]
    g = gumbel(key, full, lg.dtype)
    return jnp.argmax(jnp.add(g, lg), axis=len(prefix) + ax)


# ---------------------------------------------------------------- integers

def _clip_convert(v, dt):
    """v converted to integer dtype dt, saturating at dt's range."""
    jnp = _jnp()
    info = np.iinfo(dt)
    src = v.dtype
    if np.iinfo(src).min < info.min:
        v = jnp.maximum(v, np.asarray(max(info.min, np.iinfo(src).min), src))
    if np.iinfo(src).max > info.max:
        v = jnp.minimum(v, np.asarray(info.max, src))
    return u.convert(v, dt)


def _rem_xla(a, b):
    """Unsigned remainder with XLA's a % 0 == a (jx's rem gives 0 there)."""
    jnp = _jnp()
    return jnp.where(jnp.equal(b, 0), a, jnp.fmod(a, b))


def randint(key, shape, minval, maxval, dtype=int):
    """Integers uniform in [minval, maxval) (minval when maxval <= minval)."""
    k = _check_key(key, "randint")
    dt = dtypes.canonicalize(dtype)
    if not dtypes.is_int(dt):
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    shape = _shape(shape)
    jnp = _jnp()
    if dt.itemsize < 4:
        # as JAX (0.10): 8- and 16-bit draws are sampled in int32 (less bias), the
        # bounds clipped to the dtype's range (maxval one past it), then narrowed
        info = np.iinfo(dt)
        lo, hi = (jnp.clip(u.convert(u.as_value(v), dtypes.int32), info.min, top)
                  for v, top in ((minval, info.max), (maxval, info.max + 1)))
        return u.convert(randint(k, shape, lo, hi, dtypes.int32), dt)
    lo, hi = u.as_value(minval), u.as_value(maxval)
    lo, hi = (jnp.asarray(v) if u.is_scalar_const(v) else v for v in (lo, hi))
    lo, hi = (v if dtypes.is_int(v.dtype) else u.convert(v, dtypes.default_int())
              for v in (lo, hi))
    for v in (lo, hi):
        if u.broadcast_shapes(u.shape_of(v), shape) != shape:
            raise ShapeError(f"randint bound of shape {u.shape_of(v)} does not broadcast to "
                             f"shape {shape}")
    # maxval beyond dt's range (randint(k, s, 0, 256, uint8)) widens the span by one
    hi_dt = hi.dtype
    top = np.iinfo(dt).max
    hi_out = (jnp.greater(hi, np.asarray(top, hi_dt)) if top <= np.iinfo(hi_dt).max
              else np.zeros(u.shape_of(hi), bool))
    lo, hi = _clip_convert(lo, dt), _clip_convert(hi, dt)
    nbits = dt.itemsize * 8
    udt = _UINT[nbits]
    k1, k2 = _split2(k)
    higher, lower = _bits(k1, nbits, shape), _bits(k2, nbits, shape)
    span = u.convert(jnp.subtract(hi, lo), udt)
    span = jnp.where(jnp.less_equal(hi, lo), np.asarray(1, udt), span)
    span = jnp.where(jnp.logical_and(hi_out, jnp.greater(hi, lo)),
                     jnp.add(span, np.asarray(1, udt)), span)
    # (a * 2**nbits + b) % span without overflow: (a % s) * (2**nbits % s) + b % s
    mult = _rem_xla(np.asarray(2 ** (nbits // 2), udt), span)
    mult = _rem_xla(jnp.multiply(mult, mult), span)
    off = jnp.add(jnp.multiply(_rem_xla(higher, span), mult), _rem_xla(lower, span))
    off = _rem_xla(off, span)
    return jnp.broadcast_to(jnp.add(lo, u.convert(off, dt)), shape)


# ---------------------------------------------------------------- permutations

def _shuffle(k, x, axis: int):
    """Shuffle x along axis: sort by fresh random keys, enough rounds to make ties rare.

    Sorting is parallel where Fisher-Yates is sequential; JAX's round count.
    """
    size = math.prod(u.shape_of(x))
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        k, sub = _split2(k)
        x = _sort_by(_bits(sub, 32, u.shape_of(x)), x, axis)
    return x


def _sort_by(keys, x, axis: int):
    from ..numpy.sorting import sort_along
    return sort_along([keys, x], axis)[1]


def _take_perm(x, ind, axis: int):
    """x permuted along axis by the permutation ind (out[i] = x[ind[i]]), by sorting on
    ind's inverse: no gather needed."""
    jnp = _jnp()
    inv = jnp.argsort(ind)
    inv = u.broadcast_to(jnp.reshape(inv, (-1,) + (1,) * (len(u.shape_of(x)) - axis - 1)),
                         u.shape_of(x), [x])
    return _sort_by(inv, x, axis)


def permutation(key, x, axis=0, independent=False):
    """A random permutation of range(x) (an int) or of x along axis."""
    k = _check_key(key, "permutation")
    jnp = _jnp()
    xv = u.as_value(x)
    if u.shape_of(xv) == ():
        if isinstance(xv, Tracer) or not dtypes.is_int(np.asarray(xv).dtype):
            raise TypeError("permutation(key, n) needs a static Python int n (or an array "
                            "to permute)")
        return _shuffle(k, jnp.arange(int(xv)), 0)
    ax = u.canonical_axis(axis, len(u.shape_of(xv)))
    if independent or len(u.shape_of(xv)) == 1:
        return _shuffle(k, xv, ax)
    ind = _shuffle(k, jnp.arange(u.shape_of(xv)[ax]), 0)
    return _take_perm(xv, ind, ax)


def _take1d(a, ind):
    """a[ind] for a 1-d a: a masked max over a one-hot of ind (works on every backend)."""
    jnp = _jnp()
    n = u.shape_of(a)[0]
    hit = jnp.equal(jnp.expand_dims(ind, -1), jnp.arange(n, dtype=u.as_value(ind).dtype))
    dt = a.dtype
    low = (False if dt == dtypes.bool_ else
           -np.inf if dtypes.is_float(dt) else np.iinfo(dt).min)
    return jnp.max(jnp.where(hit, a, np.asarray(low, dt)), axis=-1)


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Samples from range(a) (an int) or from a 1-d array a, optionally weighted by p."""
    k = _check_key(key, "choice")
    jnp = _jnp()
    av = u.as_value(a)
    shape = _shape(shape)
    nd = len(u.shape_of(av))
    if nd == 0:
        if isinstance(av, Tracer):
            raise TypeError("choice(key, n) needs a static Python int n")
        n = int(av)
    else:
        n = u.shape_of(av)[u.canonical_axis(axis, nd)]
    draws = math.prod(shape)
    if n <= 0 and draws:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and draws > n:
        raise ValueError(f"cannot take {draws} samples from {n} without replacement")
    if nd > 1 and (replace or p is not None):
        raise NotImplementedError("choice from an n-d array supports replace=False without "
                                  "p; flatten it or draw indices with randint")
    if p is None and not replace:
        perm = permutation(k, n if nd == 0 else av, axis)
        ax = 0 if nd == 0 else u.canonical_axis(axis, nd)
        from ..numpy.manipulation import slice_axis
        picked = slice_axis(perm, ax, 0, draws)
        if nd <= 1:
            return jnp.reshape(picked, shape)
        s = u.shape_of(av)
        return jnp.reshape(picked, s[:ax] + shape + s[ax + 1:])
    if p is None:
        ind = randint(k, shape, 0, n)
    else:
        (pv,) = u.promote_dtypes(p, to_float=True)
        if u.shape_of(pv) != (n,):
            raise ShapeError(f"p must have shape ({n},), got {u.shape_of(pv)}")
        if replace:
            from ..numpy.manipulation import slice_axis
            cum = jnp.cumsum(pv)
            total = jnp.reshape(slice_axis(cum, 0, n - 1, n), ())
            r = jnp.multiply(total, jnp.subtract(1, uniform(k, shape, pv.dtype)))
            # searchsorted(cum, r): how many cumulative weights lie below r
            below = jnp.less(cum, jnp.expand_dims(r, -1))
            ind = jnp.minimum(jnp.sum(below, axis=-1, dtype=np.int32), n - 1)
        else:
            # Gumbel top-k: the draws largest of log(p) + Gumbel noise
            from ..numpy.manipulation import slice_axis
            g = jnp.add(gumbel(k, (n,), pv.dtype), jnp.log(pv))
            ind = jnp.reshape(slice_axis(jnp.argsort(g, descending=True), 0, 0, draws), shape)
    return ind if nd == 0 else _take1d(av, ind)



PUBLIC = ["PRNGKey", "key", "split", "fold_in", "threefry_2x32", "bits", "random_bits",
          "uniform", "normal", "truncated_normal", "erfinv", "bernoulli", "gumbel",
          "exponential", "categorical", "randint", "permutation", "choice"]
_wrap_public(globals(), PUBLIC)
