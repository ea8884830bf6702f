"""Discrete samplers: poisson, binomial, multinomial, geometric, rademacher.

poisson and binomial are JAX's loops over whole-array draws (one key stream for
the array, split once per round), so they follow JAX's draws exactly: Knuth's
product of uniforms for small rates, Hormann's transformed rejection (PTRS) for
poisson rates of 10 and up, BTRS for binomials with n * min(p, 1-p) above 10.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..lax.control_flow import while_loop
from ..numpy import _util as u
from . import _common as c
from ._core import _check_key, _split2, bernoulli, split, uniform

# XLA's lgamma: Lanczos with g = 7 and these coefficients
_LANCZOS_G = 7.0
_LANCZOS_BASE = 0.99999999999980993227684700473478
_LANCZOS = (676.520368121885098567009190444019, -1259.13921672240287047156078755283,
            771.3234287776530788486528258894, -176.61502916214059906584551354,
            12.507343278686904814458936853, -0.13857109526572011689554707,
            9.984369578019570859563e-6, 1.50563273514931155834e-7)


def lgamma_pos(x):
    """log Gamma(x) for x >= 0.5, in XLA's operation order (no reflection branch)."""
    j = c.jnp()
    dt = x.dtype

    def k(v):
        return np.asarray(v, dt)
    z = j.subtract(x, k(1))
    s = k(_LANCZOS_BASE)
    for i, coef in enumerate(_LANCZOS):
        s = j.add(s, j.divide(k(coef), j.add(z, k(i + 1))))
    half = _LANCZOS_G + 0.5
    t = j.add(k(half), z)
    log_t = j.add(k(math.log(half)), j.log1p(j.divide(z, k(half))))
    body = j.multiply(j.subtract(j.add(z, k(0.5)), j.divide(t, log_t)), log_t)
    return j.add(j.add(k(0.5 * math.log(2 * math.pi)), body), j.log(s))



def _split3(kk):
    j = c.jnp()
    ks = split(kk, 3)
    return tuple(j.take(ks, i, axis=0) for i in range(3))


# ---------------------------------------------------------------- poisson

def _poisson_knuth(kk, lam, shape):
    j = c.jnp()
    f32 = dtypes.float32
    neg_lam = j.negative(lam)

    def cond(s):
        return j.any(j.greater(s[3], neg_lam))

    def body(s):
        kk, k0, k1, log_prod = s
        kk, sub = _split2(kk)
        k0 = j.where(j.greater(log_prod, neg_lam), j.add(k0, np.float32(1)), k0)
        return kk, k0, k1, j.add(log_prod, j.log(uniform(sub, shape, f32)))
    init = (kk, j.zeros(shape, f32), j.zeros(shape, f32), j.zeros(shape, f32))
    return j.subtract(while_loop(cond, body, init)[1], np.float32(1))


def _poisson_rejection(kk, lam, shape):
    j = c.jnp()
    f = np.float32
    log_lam = j.log(lam)
    b = j.add(f(0.931), j.multiply(f(2.53), j.sqrt(lam)))
    a = j.add(f(-0.059), j.multiply(f(0.02483), b))
    inv_alpha = j.add(f(1.1239), j.divide(f(1.1328), j.subtract(b, f(3.4))))
    v_r = j.subtract(f(0.9277), j.divide(f(3.6224), j.subtract(b, f(2))))

    def body(s):
        kk, k_out, accepted = s
        kk, s0, s1 = _split3(kk)
        uu = j.subtract(uniform(s0, shape, lam.dtype), f(0.5))
        v = uniform(s1, shape, lam.dtype)
        us = j.subtract(f(0.5), j.abs(uu))
        k = j.floor(j.add(j.add(j.multiply(j.add(j.divide(j.multiply(f(2), a), us), b), uu),
                                lam), f(0.43)))
        s_ = j.log(j.divide(j.multiply(v, inv_alpha),
                            j.add(j.divide(a, j.multiply(us, us)), b)))
        t = j.subtract(j.add(j.negative(lam), j.multiply(k, log_lam)),
                       lgamma_pos(j.maximum(j.add(k, f(1)), f(0.5))))
        accept1 = j.logical_and(j.greater_equal(us, f(0.07)), j.less_equal(v, v_r))
        reject = j.logical_or(j.less(k, f(0)),
                              j.logical_and(j.less(us, f(0.013)), j.greater(v, us)))
        accept = j.logical_or(accept1, j.logical_and(j.logical_not(reject),
                                                     j.less_equal(s_, t)))
        # as JAX: a later acceptance overwrites an earlier one
        return kk, j.where(accept, k, k_out), j.logical_or(accepted, accept)

    def cond(s):
        return j.any(j.logical_not(s[2]))
    init = (kk, j.full(shape, -1, lam.dtype), j.zeros(shape, bool))
    return while_loop(cond, body, init)[1]


def poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) counts (lam >= 0), computed in float32 as JAX does."""
    kk = _check_key(key, "poisson")
    dt = c.int_dtype(dtype, "poisson")
    j = c.jnp()
    lv = u.as_value(lam)
    shape = u.shape_of(lv) if shape is None else c.shape_tuple(shape)
    lam = j.broadcast_to(u.convert(lv, dtypes.float32), shape)
    use_knuth = j.logical_or(j.isnan(lam), j.less(lam, np.float32(10)))
    lam_knuth = j.where(use_knuth, lam, np.float32(0))
    # the rejection loop's acceptance rate is best at large rates: 1e5 where unused
    lam_rej = j.where(use_knuth, np.float32(1e5), lam)
    out = j.where(use_knuth, _poisson_knuth(kk, lam_knuth, shape),
                  _poisson_rejection(kk, lam_rej, shape))
    out = u.convert(out, dt)
    return j.where(j.equal(lam, np.float32(0)), np.zeros((), dt), out)


# ---------------------------------------------------------------- binomial

_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
    """The tail of Stirling's series for log k!: a table for k <= 9, else the series
    (at k clamped to 9, exactly as JAX computes it)."""
    j = c.jnp()
    dt = k.dtype
    use_table = j.less_equal(k, 9)
    k = j.clip(k, np.asarray(0, dt), np.asarray(9, dt))
    kp1sq = j.multiply(j.add(k, 1), j.add(k, 1))
    approx = j.divide(j.subtract(1.0 / 12, j.divide(j.subtract(1.0 / 360, j.divide(
        1.0 / 1260, kp1sq)), kp1sq)), j.add(k, 1))
    kf = j.floor(k)
    table = np.zeros((), dt)
    for i, v in enumerate(_STIRLING_TAIL):
        table = j.where(j.equal(kf, np.asarray(i, dt)), np.asarray(v, dt), table)
    return j.where(use_table, table, approx)


def _binomial_inversion(kk, count, prob, shape):
    j = c.jnp()
    dt = prob.dtype
    log1mp = j.log1p(j.negative(prob))

    def cond(s):
        return j.any(j.less_equal(s[2], count))

    def body(s):
        kk, num, total = s
        sub, kk = _split2(kk)
        num = j.where(j.less_equal(total, count), j.add(num, 1), num)
        geom = j.ceil(j.divide(j.log(uniform(sub, shape, dt)), log1mp))
        return kk, num, j.add(total, geom)
    init = (kk, j.zeros(shape, dt), j.zeros(shape, dt))
    return j.subtract(while_loop(cond, body, init)[1], 1)


def _btrs(kk, count, prob, shape):
    j = c.jnp()
    dt = prob.dtype
    stddev = j.sqrt(j.multiply(j.multiply(count, prob), j.subtract(1, prob)))
    b = j.add(1.15, j.multiply(2.53, stddev))
    a = j.add(j.add(-0.0873, j.multiply(0.0248, b)), j.multiply(0.01, prob))
    cc = j.add(j.multiply(count, prob), 0.5)
    v_r = j.subtract(0.92, j.divide(4.2, b))
    r = j.divide(prob, j.subtract(1, prob))
    alpha = j.multiply(j.add(2.83, j.divide(5.1, b)), stddev)
    m = j.floor(j.multiply(j.add(count, 1), prob))
    st = _stirling_tail
    ub_const = j.multiply(j.add(m, 0.5), j.log(j.divide(
        j.add(m, 1), j.multiply(r, j.add(j.subtract(count, m), 1)))))

    def body(s):
        kk, k_out, accepted = s
        kk, s0, s1 = _split3(kk)
        uu = j.subtract(uniform(s0, shape, dt), 0.5)
        v = uniform(s1, shape, dt)
        us = j.subtract(0.5, j.abs(uu))
        accept1 = j.logical_and(j.greater_equal(us, 0.07), j.less_equal(v, v_r))
        k = j.floor(j.add(j.multiply(j.add(j.divide(j.multiply(2, a), us), b), uu), cc))
        reject = j.logical_or(j.less(k, 0), j.greater(k, count))
        v = j.log(j.divide(j.multiply(v, alpha), j.add(j.divide(a, j.multiply(us, us)), b)))
        cmk1 = j.add(j.subtract(count, k), 1)
        ub = j.add(ub_const, j.multiply(j.add(count, 1), j.log(j.divide(
            j.add(j.subtract(count, m), 1), cmk1))))
        ub = j.add(ub, j.multiply(j.add(k, 0.5), j.log(j.divide(j.multiply(r, cmk1),
                                                                j.add(k, 1)))))
        ub = j.subtract(j.subtract(j.add(j.add(ub, st(m)), st(j.subtract(count, m))), st(k)),
                        st(j.subtract(count, k)))
        accept = j.logical_or(accept1, j.logical_and(j.logical_not(reject),
                                                     j.less_equal(v, ub)))
        return kk, j.where(accept, k, k_out), j.logical_or(accepted, accept)

    def cond(s):
        return j.any(j.logical_not(s[2]))
    init = (kk, j.full(shape, -1, dt), j.zeros(shape, bool))
    return while_loop(cond, body, init)[1]


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats: inversion (n * min(p, 1-p) <= 10) or BTRS."""
    kk = _check_key(key, "binomial")
    dt = c.float_dtype(dtype, "binomial")
    j = c.jnp()
    nv, pv = u.as_value(n), u.as_value(p)
    shape = c.param_shape("binomial", shape, nv, pv)
    (prob,) = u.promote_dtypes(pv, to_float=True)
    count = j.broadcast_to(u.convert(nv, prob.dtype), shape)
    prob = j.broadcast_to(prob, shape)
    p_lt_half = j.less(prob, 0.5)
    q = j.where(p_lt_half, prob, j.subtract(1.0, prob))
    bad_count = j.logical_or(j.isnan(count), j.less(count, 0.0))
    count_inf = j.isinf(count)
    q_nan, q_neg = j.isnan(q), j.less(q, 0.0)
    q = j.where(j.logical_or(q_nan, q_neg), j.full_like(q, 0.01), q)
    use_inv = j.logical_or(bad_count, j.less_equal(j.multiply(count, q), 10.0))
    count = j.floor(count)
    count_inv = j.where(use_inv, count, j.zeros_like(count))
    count_btrs = j.where(use_inv, j.full_like(count, 1e4), count)
    q_btrs = j.where(use_inv, j.full_like(q, 0.5), q)
    out = u.convert(j.where(use_inv, _binomial_inversion(kk, count_inv, q, shape),
                            _btrs(kk, count_btrs, q_btrs, shape)), dt)
    invalid = j.logical_or(j.logical_or(q_neg, q_nan), bad_count)
    out = j.where(invalid, np.asarray(np.nan, dt), out)
    out = j.where(j.logical_and(count_inf, j.logical_not(invalid)), np.asarray(np.inf, dt), out)
    keep = j.logical_or(j.logical_or(p_lt_half, bad_count), j.logical_or(q_nan, count_inf))
    return j.where(keep, out, j.subtract(u.convert(count, dt), out))


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Counts of n draws over the categories of p's last axis: a binomial per
    category on what the earlier ones left, with JAX's per-category keys."""
    kk = _check_key(key, "multinomial")
    del unroll      # a scan's unrolling: the categories are a static loop here
    j = c.jnp()
    nv, pv = u.promote_dtypes(u.as_value(n), u.as_value(p), to_float=True)
    shape = u.shape_of(pv) if shape is None else c.shape_tuple(shape)
    if not shape:
        raise ValueError("multinomial needs p (or shape) with at least one axis, the "
                         "categories")
    nv = j.broadcast_to(nv, shape[:-1])
    pv = j.moveaxis(j.broadcast_to(pv, shape), -1, 0)
    rest = j.flip(j.cumsum(j.flip(pv, 0), axis=0), 0)
    ratios = j.divide(pv, j.where(j.equal(rest, 0), j.ones_like(rest), rest))
    keys = split(kk, shape[-1])
    counts = []
    for i in range(shape[-1]):
        ratio = j.clip(j.take(ratios, i, axis=0), 0, 1)
        cnt = binomial(j.take(keys, i, axis=0), nv, ratio, dtype=nv.dtype)
        nv = j.subtract(nv, cnt)
        counts.append(cnt)
    out = j.stack(counts, axis=-1)
    return u.convert(out, dtypes.canonicalize(float if dtype is None else dtype))


# ---------------------------------------------------------------- simple ones

def geometric(key, p, shape=None, dtype=None):
    """Trials up to the first success: floor(log(u) / log1p(-p)) + 1."""
    kk = _check_key(key, "geometric")
    dt = c.int_dtype(dtype, "geometric")
    j = c.jnp()
    pv = u.as_value(p)
    shape = c.param_shape("geometric", shape, pv)
    (pv,) = u.promote_dtypes(pv, to_float=True)
    uu = uniform(kk, shape, pv.dtype)
    uu = j.where(j.equal(uu, 0), j.ones_like(uu), uu)
    g = j.add(j.floor(j.divide(j.log(uu), j.broadcast_to(j.log1p(j.negative(pv)), shape))), 1)
    return u.convert(g, dt)


def rademacher(key, shape=(), dtype=None):
    """-1 or +1 with equal probability."""
    kk = _check_key(key, "rademacher")
    dt = dtypes.canonicalize(int if dtype is None else dtype)
    j = c.jnp()
    b = u.convert(bernoulli(kk, 0.5, c.shape_tuple(shape)), dt)
    return u.convert(j.subtract(j.multiply(2, b), 1), dt)
