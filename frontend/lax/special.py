"""jax.lax's special functions: jx.scipy.special's algorithms behind lax's strict
typing (float operands of one dtype, Python scalars float32/float64 and weak)."""
from __future__ import annotations

import numpy as np

from ..numpy.creation import _wrap_public
from .extras import _reweak, operands, weak_of


def _special(name, sp_name, arity=1):
    def fn(*args):
        if len(args) != arity:
            raise TypeError(f"jx.lax.{name} takes {arity} argument(s), got {len(args)}")
        from ..scipy import special as sp
        vals = operands(name, args)
        return _reweak(getattr(sp, sp_name)(*vals), weak_of(vals))
    fn.__name__ = name
    fn.__doc__ = f"lax.{name}: jx.scipy.special.{sp_name} on float operands of one dtype."
    return fn


def erfc(x):
    return _erfc(x)


def erf_inv(x):
    return _erf_inv(x)


def lgamma(x):
    return _lgamma(x)


def digamma(x):
    return _digamma(x)


def bessel_i0e(x):
    return _i0e(x)


def bessel_i1e(x):
    return _i1e(x)


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    return _igamma(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _igammac(a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    return _betainc(a, b, x)


def polygamma(m, x):
    """The m-th derivative of digamma at x; m is a float array of x's dtype, NaN
    where it is not a whole number >= 0 (JAX's lax.polygamma)."""
    from .. import numpy as jnp
    from ..scipy import special as sp
    mv, xv = operands("polygamma", [m, x])
    ok = jnp.logical_and(jnp.equal(mv, jnp.floor(mv)), jnp.greater_equal(mv, 0))
    # jx.scipy's polygamma takes integer orders: whole ones, capped (n! overflows far
    # below the cap), converted; the others give NaN below
    n = jnp.minimum(jnp.where(ok, mv, jnp.zeros_like(mv)), 4096).astype(jnp.int32)
    out = jnp.where(ok, sp.polygamma(n, xv), jnp.full_like(xv, np.nan))
    return _reweak(out, weak_of([mv, xv]))


def zeta(x, q):
    """The Hurwitz zeta function sum_k (k + q) ** -x."""
    return _zeta(x, q)


_erfc, _erf_inv, _lgamma, _digamma = (_special(n, s) for n, s in [
    ("erfc", "erfc"), ("erf_inv", "erfinv"), ("lgamma", "gammaln"), ("digamma", "digamma")])
_i0e, _i1e = _special("bessel_i0e", "i0e"), _special("bessel_i1e", "i1e")
_igamma, _igammac = _special("igamma", "gammainc", 2), _special("igammac", "gammaincc", 2)
_betainc = _special("betainc", "betainc", 3)
_zeta = _special("zeta", "zeta", 2)

__all__ = ["erfc", "erf_inv", "lgamma", "digamma", "bessel_i0e", "bessel_i1e", "igamma",
           "igammac", "betainc", "polygamma", "zeta"]
_wrap_public(globals(), __all__)
