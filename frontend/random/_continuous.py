"""Continuous samplers that transform uniform, normal and gamma draws, in JAX's
operation order and key splits so they give JAX's bits."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..numpy import _util as u
from . import _common as c
from ._core import _check_key, _split2, exponential, normal, split, uniform
from ._discrete import rademacher
from ._gamma import gamma, loggamma


def _k(name, key):
    return _check_key(key, name)


# ---------------------------------------------------------------- location/scale free

def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy: tan(pi * (u - 1/2)), u uniform in [eps, 1)."""
    kk, dt = _k("cauchy", key), c.float_dtype(dtype, "cauchy")
    j = c.jnp()
    v = uniform(kk, c.shape_tuple(shape), dt, float(dtypes.finfo(dt).eps), 1.0)
    return j.tan(j.multiply(np.asarray(np.pi, dt), j.subtract(v, np.asarray(0.5, dt))))


def laplace(key, shape=(), dtype=None):
    """Standard Laplace: sign(u) * log1p(-|u|), u uniform in (-1, 1)."""
    kk, dt = _k("laplace", key), c.float_dtype(dtype, "laplace")
    j = c.jnp()
    lo = -1.0 + float(dtypes.finfo(dt).epsneg)
    v = uniform(kk, c.shape_tuple(shape), dt, lo, 1.0)
    return j.multiply(j.sign(v), j.log1p(j.negative(j.abs(v))))


def logistic(key, shape=(), dtype=None):
    """Standard logistic: log(u) - log1p(-u), u uniform in [tiny, 1)."""
    kk, dt = _k("logistic", key), c.float_dtype(dtype, "logistic")
    j = c.jnp()
    x = uniform(kk, c.shape_tuple(shape), dt, float(dtypes.finfo(dt).tiny), 1.0)
    return j.subtract(j.log(x), j.log1p(j.negative(x)))


def maxwell(key, shape=(), dtype=None):
    """Maxwell: the length of a 3-d standard normal vector."""
    kk, dt = _k("maxwell", key), c.float_dtype(dtype, "maxwell")
    j = c.jnp()
    z = normal(kk, c.shape_tuple(shape) + (3,), dt)
    return j.sqrt(j.sum(j.multiply(z, z), axis=-1))


# ---------------------------------------------------------------- one parameter

def pareto(key, b, shape=None, dtype=None):
    """Pareto with shape b (scale 1): exp(exponential / b)."""
    kk, dt = _k("pareto", key), c.float_dtype(dtype, "pareto")
    shape = c.param_shape("pareto", shape, b)
    c.check_safe_cast("pareto", dt, b)
    j = c.jnp()
    return j.exp(j.divide(exponential(kk, shape, dt), c.param(b, dt)))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    """exp(sigma * normal)."""
    kk, dt = _k("lognormal", key), c.float_dtype(dtype, "lognormal")
    shape = c.param_shape("lognormal", shape, sigma)
    c.check_safe_cast("lognormal", dt, sigma)
    j = c.jnp()
    return j.exp(j.multiply(normal(kk, shape, dt), c.param(sigma, dt)))


def rayleigh(key, scale, shape=None, dtype=None):
    """scale * sqrt(-2 log u)."""
    kk, dt = _k("rayleigh", key), c.float_dtype(dtype, "rayleigh")
    shape = c.param_shape("rayleigh", shape, scale)
    c.check_safe_cast("rayleigh", dt, scale)
    j = c.jnp()
    v = uniform(kk, shape, dt)
    s = c.param(scale, dt, shape)
    return j.multiply(s, j.sqrt(j.multiply(j.log(v), np.asarray(-2, dt))))


def wald(key, mean, shape=None, dtype=None):
    """Inverse Gaussian (Wald) with the given mean and unit shape (Michael et al.)."""
    kk, dt = _k("wald", key), c.float_dtype(dtype, "wald")
    shape = c.param_shape("wald", shape, mean)
    c.check_safe_cast("wald", dt, mean)
    j = c.jnp()
    k1, k2 = _split2(kk)
    m = c.param(mean, dt, shape)
    v = normal(k1, shape, dt)
    z = uniform(k2, shape, dt)
    y = j.multiply(v, v)
    m2 = j.multiply(m, m)
    root = j.sqrt(j.add(j.multiply(j.multiply(4, m), y), j.multiply(m2, j.multiply(y, y))))
    x = j.subtract(j.add(m, j.divide(j.multiply(m2, y), 2)), j.multiply(j.divide(m, 2), root))
    return j.where(j.less_equal(z, j.divide(m, j.add(m, x))), x, j.divide(m2, x))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull: scale * (-log1p(-u)) ** (1 / concentration)."""
    kk, dt = _k("weibull_min", key), c.float_dtype(dtype, "weibull_min")
    j = c.jnp()
    v = uniform(kk, c.shape_tuple(shape), dt)
    inv = j.divide(1.0, u.as_value(concentration))
    return j.multiply(j.power(j.negative(j.log1p(j.negative(v))), inv), u.as_value(scale))


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular on [left, right] peaking at mode (inverse CDF)."""
    kk, dt = _k("triangular", key), c.float_dtype(dtype, "triangular")
    shape = c.param_shape("triangular", shape, left, mode, right)
    c.check_safe_cast("triangular", dt, left, mode, right)
    j = c.jnp()
    lo, md, hi = (c.param(v, dt, shape) for v in (left, mode, right))
    fc = j.divide(j.subtract(md, lo), j.subtract(hi, lo))
    v = uniform(kk, shape, dt)
    out1 = j.add(lo, j.sqrt(j.multiply(j.multiply(v, j.subtract(hi, lo)), j.subtract(md, lo))))
    out2 = j.subtract(hi, j.sqrt(j.multiply(j.multiply(j.subtract(1, v), j.subtract(hi, lo)),
                                            j.subtract(hi, md))))
    return j.where(j.less(v, fc), out1, out2)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """loc + scale * (random sign) * maxwell. As JAX, the result shape is
    shape + broadcast(loc, scale) (shape alone when the parameters are scalars)."""
    kk, dt = _k("double_sided_maxwell", key), c.float_dtype(dtype, "double_sided_maxwell")
    j = c.jnp()
    loc, scale = u.as_value(loc), u.as_value(scale)
    pshape = u.broadcast_shapes(u.shape_of(loc), u.shape_of(scale))
    shape = c.shape_tuple(shape) or pshape
    shape = shape + pshape
    km, kr = _split2(kk)
    m = maxwell(km, shape, dt)
    sign = rademacher(kr, shape, dt)
    return j.add(j.multiply(j.multiply(sign, m), scale), loc)


# ---------------------------------------------------------------- gamma family

def generalized_normal(key, p, shape=(), dtype=None):
    """Density proportional to exp(-|x|^p): sign * Gamma(1/p) ** (1/p)."""
    kk, dt = _k("generalized_normal", key), c.float_dtype(dtype, "generalized_normal")
    shape = c.shape_tuple(shape)
    j = c.jnp()
    keys = split(kk)
    inv = j.divide(1, u.as_value(p))
    g = gamma(j.take(keys, 0, axis=0), inv, shape, dt)
    r = rademacher(j.take(keys, 1, axis=0), shape, dt)
    return j.multiply(r, j.power(g, inv))


def ball(key, d, p=2, shape=(), dtype=None):
    """Uniform points in the d-dimensional unit p-ball (Barthe et al.)."""
    kk, dt = _k("ball", key), c.float_dtype(dtype, "ball")
    shape = c.shape_tuple(shape)
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
        raise TypeError(f"ball's dimension d must be a static Python int, got {d!r}")
    j = c.jnp()
    keys = split(kk)
    g = generalized_normal(j.take(keys, 0, axis=0), p, shape + (int(d),), dt)
    e = exponential(j.take(keys, 1, axis=0), shape, dt)
    pv = u.as_value(p)
    norm = j.power(j.add(j.sum(j.power(j.abs(g), pv), axis=-1), e), j.divide(1, pv))
    return j.divide(g, j.expand_dims(norm, -1))


def t(key, df, shape=None, dtype=None):
    """Student's t: normal * sqrt((df / 2) / Gamma(df / 2))."""
    kk, dt = _k("t", key), c.float_dtype(dtype, "t")
    shape = c.param_shape("t", shape, df)
    c.check_safe_cast("t", dt, df)
    j = c.jnp()
    kn, kg = _split2(kk)
    n = normal(kn, shape, dt)
    half = j.divide(c.param(df, dt), np.asarray(2, dt))
    g = gamma(kg, half, shape, dt)
    return j.multiply(n, j.sqrt(j.divide(half, g)))


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square: 2 * Gamma(df / 2), drawn in log space."""
    kk, dt = _k("chisquare", key), c.float_dtype(dtype, "chisquare")
    shape = c.param_shape("chisquare", shape, df)
    c.check_safe_cast("chisquare", dt, df)
    j = c.jnp()
    half = j.divide(c.param(df, dt), np.asarray(2, dt))
    return j.multiply(j.exp(loggamma(kk, half, shape, dt)), np.asarray(2, dt))


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F distribution: (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden)."""
    kk, dt = _k("f", key), c.float_dtype(dtype, "f")
    shape = c.param_shape("f", shape, dfnum, dfden)
    c.check_safe_cast("f", dt, dfnum, dfden)
    j = c.jnp()
    dn, dd = c.param(dfnum, dt), c.param(dfden, dt)
    k_den, k_num = _split2(kk)
    num = j.divide(chisquare(k_num, dn, shape, dt), dn)
    den = j.divide(chisquare(k_den, dd, shape, dt), dd)
    return j.divide(num, den)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) from two log-gammas, normalized without overflow."""
    kk, dt = _k("beta", key), c.float_dtype(dtype, "beta")
    shape = c.param_shape("beta", shape, a, b)
    c.check_safe_cast("beta", dt, a, b)
    j = c.jnp()
    ka, kb = _split2(kk)
    la = loggamma(ka, c.param(a, dt, shape), shape, dt)
    lb = loggamma(kb, c.param(b, dt, shape), shape, dt)
    top = j.maximum(la, lb)
    ga, gb = j.exp(j.subtract(la, top)), j.exp(j.subtract(lb, top))
    return j.divide(ga, j.add(ga, gb))
