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
from ._core import _check_key, split


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

def _digamma_pos(y):
    """psi(y) for y > 0: the recurrence up to y >= 8, then the asymptotic series."""
    j = c.jnp()
    acc = j.zeros_like(y)
    for _ in range(8):
        small = j.less(y, 8.0)
        acc = j.where(small, j.subtract(acc, j.reciprocal(y)), acc)
        y = j.where(small, j.add(y, 1.0), y)
    return j.add(acc, j.add(j.log(y), _psi_minus_log(y)))


def _psi_minus_log(y):
    """psi(y) - log(y) for y >= 8 (asymptotic series, error below 1e-9 there)."""
    j = c.jnp()
    r = j.reciprocal(y)
    r2 = j.multiply(r, r)
    tail = j.multiply(r2, j.subtract(1 / 12, j.multiply(r2, j.subtract(
        1 / 120, j.multiply(r2, j.subtract(1 / 252, j.multiply(r2, 1 / 240)))))))
    return j.negative(j.add(j.multiply(r, 0.5), tail))


def _log_minus_psi(x, y):
    """log(x) - psi(y), accurate when the two nearly cancel (x close to a large y)."""
    j = c.jnp()
    big = j.greater_equal(y, 8.0)
    yb = j.where(big, y, j.full_like(y, 8.0))
    rel = j.divide(j.subtract(x, yb), yb)
    log_ratio = j.where(j.less(j.abs(rel), 0.5), j.log1p(rel),
                        j.subtract(j.log(x), j.log(yb)))     # log1p(-1) when x << y
    near = j.subtract(log_ratio, _psi_minus_log(yb))
    return j.where(big, near, j.subtract(j.log(x), _digamma_pos(y)))


def _grad_series(a, x):
    """-dP/da / p for x < a + 1: P / p = sum_n w_n with w_n = prod_{i<=n} x / (a + i),
    and d/da brings each term a factor log(x) - psi(a + n + 1) (all of one sign here)."""
    j = c.jnp()
    eps = float(dtypes.finfo(x.dtype).eps)

    def going(total, last):
        return j.greater(j.abs(last), j.multiply(eps, j.abs(total)))

    def cond(s):
        n, w, total, last = s
        return j.logical_and(j.any(going(total, last)), j.less(n, 5000.0))

    def body(s):
        n, w, total, last = s
        live = going(total, last)
        n = j.add(n, 1.0)
        w = j.multiply(w, j.divide(x, j.add(a, n)))
        t = j.where(live, j.multiply(w, _log_minus_psi(x, j.add(a, j.add(n, 1.0)))), 0.0)
        return n, w, j.add(total, t), t
    w0 = j.divide(x, a)
    t0 = j.multiply(w0, _log_minus_psi(x, j.add(a, 1.0)))
    n0 = np.asarray(0.0, x.dtype)
    return j.negative(while_loop(cond, body, (n0, w0, t0, t0))[2])


def _grad_fraction(a, x):
    """dQ/da / p for x >= a + 1, Q = p x h with h Legendre's continued fraction
    1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)): x (h (log x -
    psi(a)) + dh/da), h and dh/da from Wallis' recurrences (rescaled each step)."""
    j = c.jnp()
    eps = float(dtypes.finfo(x.dtype).eps)
    one, zero = j.ones_like(x), j.zeros_like(x)

    def cond(s):
        n, A0, A1, B0, B1, dA0, dA1, dB0, dB1, h, dh, moving = s
        return j.logical_and(j.any(moving), j.less(n, 5000.0))

    def body(s):
        n, A0, A1, B0, B1, dA0, dA1, dB0, dB1, h, dh, live = s
        # term n: b = x + 2n - 1 - a (db/da = -1), a_n = -(n-1)(n-1-a) (da_n/da = n-1)
        an = j.where(j.equal(n, 1.0), one, j.negative(j.multiply(
            j.subtract(n, 1.0), j.subtract(j.subtract(n, 1.0), a))))
        dan = j.where(j.equal(n, 1.0), zero, j.multiply(j.subtract(n, 1.0), one))
        b = j.subtract(j.add(x, j.subtract(j.multiply(n, 2.0), 1.0)), a)
        A2 = j.add(j.multiply(b, A1), j.multiply(an, A0))
        B2 = j.add(j.multiply(b, B1), j.multiply(an, B0))
        dA2 = j.add(j.add(j.subtract(j.multiply(b, dA1), A1), j.multiply(an, dA0)),
                    j.multiply(dan, A0))
        dB2 = j.add(j.add(j.subtract(j.multiply(b, dB1), B1), j.multiply(an, dB0)),
                    j.multiply(dan, B0))
        scale = j.reciprocal(B2)
        A1, B1, dA1, dB1 = (j.multiply(v, scale) for v in (A1, B1, dA1, dB1))
        A2, dA2, dB2 = (j.multiply(v, scale) for v in (A2, dA2, dB2))
        h_new = A2                                       # A2 / B2 with B2 scaled to 1
        dh_new = j.subtract(dA2, j.multiply(A2, dB2))
        moving = j.logical_or(
            j.greater(j.abs(j.subtract(h_new, h)), j.multiply(eps, j.abs(h_new))),
            j.greater(j.abs(j.subtract(dh_new, dh)), j.multiply(eps, j.abs(dh_new))))
        # converged elements stop: more steps only add rounding drift
        new = (A1, A2, B1, one, dA1, dA2, dB1, dB2, h_new, dh_new)
        new = tuple(j.where(live, v, o) for v, o in zip(new, s[1:11]))
        return (j.add(n, 1.0),) + new + (j.logical_and(live, moving),)
    n0 = np.asarray(1.0, x.dtype)
    init = (n0, one, zero, zero, one, zero, zero, zero, zero, zero, zero,
            j.ones(u.shape_of(x), bool))
    out = while_loop(cond, body, init)
    h, dh = out[9], out[10]
    return j.multiply(x, j.add(j.multiply(h, _log_minus_psi(x, a)), dh))


def gamma_grad(a, x):
    """dx/da of a Gamma(a) sample x with its CDF level held fixed: -(dP/da) / p.
    P's series below x = a + 1, Q's continued fraction above, each evaluated on
    inputs moved into its own domain so both loops end."""
    j = c.jnp()
    dt = x.dtype
    x = j.maximum(x, np.asarray(dtypes.finfo(dt).tiny, dt))
    use_series = j.less(x, j.add(a, 1.0))
    xs = j.where(use_series, x, j.zeros_like(x))
    xc = j.where(use_series, j.add(a, 2.0), x)
    return j.where(use_series, _grad_series(a, xs), _grad_fraction(a, xc))


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
