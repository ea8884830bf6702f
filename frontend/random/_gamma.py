"""gamma and loggamma: Marsaglia-Tsang rejection, bit-for-bit JAX's stream.

JAX splits the key into one key per element (split(key, a.size)) and runs
_gamma_one under vmap: a while_loop per element that draws a normal x (redrawn
while v = 1 + c x <= 0) and a uniform U from fresh subkeys until the squeeze or
log test accepts. Here the same per-element key streams advance together in
one vectorized loop that runs while any element is unaccepted and updates only
those, so each element sees exactly the draws its own JAX loop would.

The derivative in `a` is implicit reparameterization, as JAX's: with the
sample x fixed by its CDF level, dx/da = -(dP(a, x)/da) / p(x; a).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..custom import custom_jvp
from ..lax.control_flow import while_loop
from ..lax.ops import stop_gradient
from ..numpy import _util as u
from . import _common as c


def _c(v, dt):
    return np.asarray(v, dt)


def _active(dt, d, X, V, U):
    """JAX's rejection test: True while the element must draw again."""
    j = c.jnp()
    squeeze = j.greater_equal(U, j.subtract(_c(1, dt), j.multiply(_c(0.0331, dt),
                                                                j.multiply(X, X))))
    log_test = j.greater_equal(j.log(U), j.add(
        j.multiply(X, _c(0.5, dt)),
        j.multiply(d, j.add(j.subtract(_c(1, dt), V), j.log(V)))))
    return j.logical_and(squeeze, log_test)


def _marsaglia(kw, d, cc, dt):
    """V of each element's accepted draw (the sample is d * V)."""
    j = c.jnp()

    def normal_loop(kw_x, live):
        def cond(s):
            return j.any(j.logical_and(live, j.less_equal(s[3], _c(0, dt))))

        def body(s):
            k0, k1, x, v = s
            nxt, sub = c.split_words((k0, k1), 2)
            xn = c.scalar_normal(sub, dt)
            vn = j.add(_c(1, dt), j.multiply(xn, cc))
            redo = j.less_equal(v, _c(0, dt))
            return (j.where(redo, nxt[0], k0), j.where(redo, nxt[1], k1),
                    j.where(redo, xn, x), j.where(redo, vn, v))
        shape = u.shape_of(d)
        init = (kw_x[0], kw_x[1], j.zeros(shape, dt), j.full(shape, -1, dt))
        return while_loop(cond, body, init)

    def cond(s):
        return j.any(_active(dt, d, *s[2:]))

    def body(s):
        k0, k1, X, V, U = s
        live = _active(dt, d, X, V, U)
        nxt, kx, ku = c.split_words((k0, k1), 3)
        _, _, x, v = normal_loop(kx, live)
        Xn, Vn = j.multiply(x, x), j.multiply(j.multiply(v, v), v)
        Un = c.scalar_uniform(ku, dt)
        return (j.where(live, nxt[0], k0), j.where(live, nxt[1], k1),
                j.where(live, Xn, X), j.where(live, Vn, V), j.where(live, Un, U))

    shape = u.shape_of(d)
    init = (kw[0], kw[1], j.zeros(shape, dt), j.ones(shape, dt), j.full(shape, 2, dt))
    return while_loop(cond, body, init)[3]


def _gamma_flat(kw, a, dt, log_space: bool):
    """One sample per element of the 1-d a, element i under key words kw[i]."""
    j = c.jnp()
    one = _c(1, dt)
    boost = j.greater_equal(a, one)
    alpha = j.where(boost, a, j.add(a, one))
    d = j.subtract(alpha, _c(1 / 3, dt))
    cc = j.divide(_c(1 / 3, dt), j.sqrt(d))
    kmain, ksub = c.split_words(kw, 2)
    V = _marsaglia(kmain, d, cc, dt)
    if log_space:
        # log(U) as JAX draws it: -exponential = log1p(-u)
        log_u = j.log1p(j.negative(c.scalar_uniform(ksub, dt)))
        log_boost = j.where(j.logical_or(boost, j.equal(log_u, _c(0, dt))), _c(0, dt),
                            j.multiply(log_u, j.divide(one, a)))
        return j.add(j.add(j.log(d), j.log(V)), log_boost)
    s = j.subtract(one, c.scalar_uniform(ksub, dt))
    b = j.where(boost, one, j.power(s, j.divide(one, a)))
    return j.multiply(j.multiply(d, V), b)


# ---------------------------------------------------------------- gradient

def _digamma_pos(x):
    """psi(x) for x > 0: recurrence up to x >= 6, then the asymptotic series."""
    j = c.jnp()
    acc = j.zeros_like(x)
    for _ in range(6):
        small = j.less(x, 6.0)
        acc = j.where(small, j.subtract(acc, j.reciprocal(x)), acc)
        x = j.where(small, j.add(x, 1.0), x)
    r2 = j.reciprocal(j.multiply(x, x))
    tail = j.multiply(r2, j.subtract(1 / 12, j.multiply(r2, j.subtract(
        1 / 120, j.multiply(r2, j.subtract(1 / 252, j.multiply(r2, 1 / 240)))))))
    return j.add(acc, j.subtract(j.subtract(j.log(x), j.divide(0.5, x)), tail))


def _lgamma_pos(x):
    """log Gamma(x) for x >= 0.5 (Lanczos, g = 7, the coefficients XLA uses)."""
    from ._discrete import lgamma_pos
    return lgamma_pos(x)


def gamma_grad(a, x):
    """dx/da of a Gamma(a) sample x: -dP(a, x)/da over the density.

    dP/da is the term-wise derivative of P = sum_n x^(a+n) e^-x / Gamma(a+n+1):
    sum_n T_n (log x - psi(a+n+1)). It runs until the terms have peaked (n past
    x - a) and fallen below eps of the running sum.
    """
    j = c.jnp()
    dt = x.dtype
    eps = float(dtypes.finfo(dt).eps)
    x = j.maximum(x, _c(dtypes.finfo(dt).tiny, dt))
    lx = j.log(x)
    log_t0 = j.subtract(j.subtract(j.multiply(a, lx), x), _lgamma_pos(j.add(a, 1.0)))
    psi0 = _digamma_pos(j.add(a, 1.0))
    n_min = j.add(j.subtract(x, a), 2.0)

    def term(n, psi, log_t):
        return j.multiply(j.exp(log_t), j.subtract(lx, psi))

    def cond(s):
        n, psi, log_t, total, last = s
        going = j.logical_or(j.less(n, n_min), j.greater(
            j.abs(last), j.multiply(eps, j.abs(total))))
        return j.logical_and(j.any(going), j.less(j.max(n), 1e5))

    def body(s):
        n, psi, log_t, total, last = s
        an = j.add(a, j.add(n, 1.0))
        log_t = j.add(log_t, j.subtract(lx, j.log(an)))
        psi = j.add(psi, j.reciprocal(an))
        t = term(n, psi, log_t)
        return j.add(n, 1.0), psi, log_t, j.add(total, t), t
    t0 = term(0, psi0, log_t0)
    init = (j.zeros_like(x), psi0, log_t0, t0, t0)
    dp = while_loop(cond, body, init)[3]
    # log Gamma(a) as lgamma(a + 1) - log(a): a may be below the Lanczos range
    lg_a = j.subtract(_lgamma_pos(j.add(a, 1.0)), j.log(a))
    log_pdf = j.subtract(j.subtract(j.multiply(j.subtract(a, 1.0), lx), x), lg_a)
    return j.negative(j.divide(dp, j.exp(log_pdf)))


def _identity(log_space, a, sample):
    return sample


_attach_grad = custom_jvp(_identity, nondiff_argnums=(0,))


@_attach_grad.defjvp
def _attach_grad_jvp(log_space, primals, tangents):
    a, sample = primals
    ta = tangents[0]
    j = c.jnp()
    if log_space:
        x = j.exp(sample)
        x = j.where(j.equal(x, 0), _c(dtypes.finfo(x.dtype).tiny, x.dtype), x)
        g = j.divide(gamma_grad(a, x), x)
    else:
        g = gamma_grad(a, sample)
    return sample, j.multiply(ta, g)


# ---------------------------------------------------------------- public

def _gamma(key, a, shape, dtype, name: str, log_space: bool):
    from ._core import _check_key, split
    k = _check_key(key, name)
    dt = c.float_dtype(dtype, name)
    av = u.as_value(a)
    if shape is None:
        shape = u.shape_of(av)
    else:
        shape = c.shape_tuple(shape)
        c.check_shape(name, shape, u.shape_of(av))
    j = c.jnp()
    a = c.param(av, dt, shape)
    n = c.size(shape)
    if n == 0:
        return j.zeros(shape, dt)
    flat = j.reshape(stop_gradient(a), (n,))
    kw = c.key_words(split(k, n))
    out = j.reshape(_gamma_flat(kw, flat, dt, log_space), shape)
    # the sample itself is not differentiated through the loop: its derivative in a
    # is attached (implicit reparameterization)
    return _attach_grad(log_space, a, stop_gradient(out))


def gamma(key, a, shape=None, dtype=None):
    """Standard Gamma(a) samples (unit scale): JAX's Marsaglia-Tsang stream."""
    return _gamma(key, a, shape, dtype, "gamma", False)


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a) samples, computed in log space (accurate for small a)."""
    return _gamma(key, a, shape, dtype, "loggamma", True)
