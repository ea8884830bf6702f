"""Regularized incomplete gamma and beta functions, private to jx.scipy.stats until
jx.scipy.special has its own (stats uses special's where it exists: _util.special_fn).

Each is a fixed number of series / continued-fraction steps in a jx.lax.fori_loop,
both branches computed everywhere on masked-safe inputs and the right one selected,
so they trace, jit, vmap and differentiate (by differentiating the iteration).
Accurate to the dtype for moderate parameters (a, b up to a few thousand)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from ...numpy import _util


def _steps(dtype) -> int:
    return 400 if np.dtype(dtype).itemsize == 8 else 200


def _tiny(dtype):
    return float(np.finfo(dtype).tiny) * 1e3


def _promote(*args):
    return [jnp.asarray(a) for a in _util.promote(*args, to_float=True)]


def _gamma_prefix(a, x, gammaln):
    """log(x^a e^-x / Gamma(a))."""
    return a * jnp.log(x) - x - gammaln(a)


def _gamma_series(a, x, n):
    """sum_k x^k / (a (a+1) ... (a+k)): P(a, x) times Gamma(a) e^x x^-a."""
    def step(k, carry):
        term, total = carry
        term = term * x / (a + k)
        return term, total + term
    first = 1 / a
    return lax.fori_loop(1, n, step, (first, first))[1]


def _gamma_cf(a, x, n, tiny):
    """The continued fraction of Q(a, x) times Gamma(a) e^x x^-a (modified Lentz)."""
    b = x + 1 - a
    c = jnp.full_like(x, 1 / tiny)
    d = 1 / jnp.where(jnp.abs(b) < tiny, tiny, b)

    def step(i, carry):
        b, c, d, h = carry
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = 1 / jnp.where(jnp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = jnp.where(jnp.abs(c) < tiny, tiny, c)
        return b, c, d, h * d * c
    return lax.fori_loop(1, n, step, (b, c, d, d))[3]


def _gamma_both(a, x):
    """(P, Q) with JAX's edge values: nan for a < 0, x < 0 or nan; a = 0 gives P = 1."""
    from .. import special
    a, x = _promote(a, x)
    dt = x.dtype
    n, tiny = _steps(dt), _tiny(dt)
    bad = (a < 0) | (x < 0) | jnp.isnan(a) | jnp.isnan(x) | jnp.isinf(a)
    edge = bad | (a == 0) | (x == 0) | jnp.isinf(x)
    # safe stand-ins where the edge values apply, so no nan reaches the gradients
    a_s = jnp.where(edge, 1.0, a)
    x_s = jnp.where(edge, 1.0, x)
    use_series = x_s < a_s + 1
    pref = jnp.exp(_gamma_prefix(a_s, x_s, special.gammaln))
    # each branch evaluated at a point inside its own region only
    p_series = pref * _gamma_series(a_s, jnp.where(use_series, x_s, 0.5 * a_s), n)
    q_cf = pref * _gamma_cf(a_s, jnp.where(use_series, a_s + 2, x_s), n, tiny)
    p = jnp.where(use_series, p_series, 1 - q_cf)
    q = jnp.where(use_series, 1 - p_series, q_cf)
    one_at = (a == 0) | jnp.isinf(x)                        # P = 1 there (x > 0)
    p = jnp.where(x == 0, 0.0, jnp.where(one_at, 1.0, p))
    q = jnp.where(x == 0, 1.0, jnp.where(one_at, 0.0, q))
    return jnp.where(bad, np.nan, p), jnp.where(bad, np.nan, q)


def gammainc(a, x):
    """P(a, x), the regularized lower incomplete gamma function."""
    return _gamma_both(a, x)[0]


def gammaincc(a, x):
    """Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function."""
    return _gamma_both(a, x)[1]


def _beta_cf(a, b, x, n, tiny):
    """The continued fraction of I_x(a, b) times a B(a, b) x^-a (1-x)^-b (Lentz)."""
    qab, qap, qam = a + b, a + 1, a - 1
    c = jnp.ones_like(x)
    d = 1 - qab * x / qap
    d = 1 / jnp.where(jnp.abs(d) < tiny, tiny, d)

    def half(aa, c, d):
        d = 1 + aa * d
        d = 1 / jnp.where(jnp.abs(d) < tiny, tiny, d)
        c = 1 + aa / c
        c = jnp.where(jnp.abs(c) < tiny, tiny, c)
        return c, d, d * c

    def step(m, carry):
        c, d, h = carry
        m2 = 2 * m
        c, d, f = half(m * (b - m) * x / ((qam + m2) * (a + m2)), c, d)
        h = h * f
        c, d, f = half(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)), c, d)
        return c, d, h * f
    return lax.fori_loop(1, n, step, (c, d, d))[2]


def betainc(a, b, x):
    """I_x(a, b), the regularized incomplete beta function, with JAX's edge values:
    nan for a or b < 0 or x outside [0, 1]; a = 0 gives 1, b = 0 gives 0."""
    from .. import special
    a, b, x = _promote(a, b, x)
    dt = x.dtype
    n, tiny = _steps(dt), _tiny(dt)
    bad = (a < 0) | (b < 0) | (x < 0) | (x > 1) | jnp.isnan(a) | jnp.isnan(b) | jnp.isnan(x)
    edge = bad | (a == 0) | (b == 0) | (x == 0) | (x == 1)
    a_s = jnp.where(edge, 1.0, a)
    b_s = jnp.where(edge, 1.0, b)
    x_s = jnp.where(edge, 0.5, x)
    # the fraction converges fast below the mean; above it use I_x(a,b) = 1 - I_{1-x}(b,a)
    flip = x_s > (a_s + 1) / (a_s + b_s + 2)
    a2, b2 = jnp.where(flip, b_s, a_s), jnp.where(flip, a_s, b_s)
    x2 = jnp.where(flip, 1 - x_s, x_s)
    log_front = a2 * jnp.log(x2) + b2 * jnp.log1p(-x2) - special.betaln(a2, b2)
    part = jnp.exp(log_front) * _beta_cf(a2, b2, x2, n, tiny) / a2
    out = jnp.where(flip, 1 - part, part)
    out = jnp.where((x == 0) | (b == 0), 0.0, jnp.where((x == 1) | (a == 0), 1.0, out))
    return jnp.where(bad, np.nan, out)
