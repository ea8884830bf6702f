"""convolve, correlate and jax.numpy's polynomial helpers over jx.numpy
(coefficient arrays, highest power first). polyfit and roots need a
least-squares solver and a non-symmetric eigensolver, which jx does not have yet."""
from __future__ import annotations

import operator

import numpy as np

from ..errors import ShapeError
from . import creation as cr
from . import manipulation as mp
from . import ufuncs as uf
from ._util import broadcast_shapes, has_tracer, promote_dtypes, shape_of
from .creation import _wrap_public, asarray


def _order(m, what: str) -> int:
    if has_tracer(m):
        raise TypeError(f"{what} must be a static int, not traced")
    try:
        return operator.index(m)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {m!r}") from None


def _vector(p, name):
    if len(shape_of(p)) != 1:
        raise ShapeError(f"{name}: coefficients must be 1-d, got shape {shape_of(p)}")
    return p


# -------------------------------------------------------------- convolution


def _conv(x, y, mode, op, precision, preferred_element_type):
    if len(shape_of(x)) != 1 or len(shape_of(y)) != 1:
        raise ShapeError(f"{op}: only 1-d inputs are supported, got shapes {shape_of(x)} "
                         f"and {shape_of(y)}")
    x, y = promote_dtypes(x, y, to_float=preferred_element_type is None)
    if op == "correlate":       # sum a[n + k] conj(v[n]), as NumPy and JAX
        from ._standard import conjugate
        y = conjugate(y)
    nx, ny = shape_of(x)[0], shape_of(y)[0]
    if nx == 0 or ny == 0:
        raise ValueError(f"{op}: inputs cannot be empty, got shapes {shape_of(x)} and "
                         f"{shape_of(y)}")
    reverse = False
    if nx < ny:
        x, y, nx, ny = y, x, ny, nx
        reverse = op == "correlate"
    if op == "convolve":
        y = mp.flip(y)
    pads = {"valid": (0, 0), "same": (ny // 2, ny - ny // 2 - 1),
            "full": (ny - 1, ny - 1)}
    if mode not in pads:
        raise ValueError(f"{op}: mode must be one of 'full', 'same', 'valid', got {mode!r}")
    from ..prims.convolution import conv_general_dilated
    from ._util import bind1
    from .. import dtypes
    pet = None if preferred_element_type is None else \
        dtypes.canonicalize(preferred_element_type, op)
    # out[k] = sum_j xp[k + j] y[j]: a one-channel 1-d convolution (lax's correlation)
    out = bind1(conv_general_dilated, mp.reshape(x, (1, 1, nx)), mp.reshape(y, (1, 1, ny)),
                window_strides=(1,), padding=(pads[mode],), lhs_dilation=(1,),
                rhs_dilation=(1,), dimension_numbers=((0, 1, 2),) * 3, feature_group_count=1,
                batch_group_count=1, preferred_element_type=pet)
    out = mp.reshape(out, (-1,))
    return mp.flip(out) if reverse else out


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """The discrete linear convolution of the 1-d a and v."""
    return _conv(a, v, mode, "convolve", precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation of the 1-d a and v: c[k] = sum_n a[n + k] conj(v[n])."""
    return _conv(a, v, mode, "correlate", precision, preferred_element_type)



def polyval(p, x, *, unroll=16):
    """p[0] * x**(n-1) + ... + p[n-1] by Horner's rule (p's leading axis is the
    coefficients; the rest broadcasts with x)."""
    p, x = promote_dtypes(p, x)
    p, x = asarray(p), asarray(x)
    if len(shape_of(p)) == 0:
        raise ShapeError("polyval: p must have at least one axis (the coefficients)")
    shape = broadcast_shapes(shape_of(p)[1:], shape_of(x))
    y = cr.zeros(shape, x.dtype)
    for k in range(shape_of(p)[0]):
        y = y * x + p[k]
    return y


def polyadd(a1, a2):
    """The sum of two polynomials (aligned at the constant term)."""
    a1, a2 = promote_dtypes(a1, a2)
    a1, a2 = asarray(a1), asarray(a2)
    if shape_of(a2)[0] > shape_of(a1)[0]:
        a1, a2 = a2, a1
    n = shape_of(a2)[0]
    return a1 if n == 0 else a1.at[shape_of(a1)[0] - n:].add(a2)


def polysub(a1, a2):
    """The difference of two polynomials."""
    a1, a2 = promote_dtypes(a1, a2)
    return polyadd(a1, uf.negative(a2))


def _trim_leading(a, name, tol=None):
    """a without its leading zeros (|a| < tol), on concrete values only."""
    if has_tracer(a):
        raise TypeError(f"{name}: trim_leading_zeros=True needs concrete coefficients (the "
                        "result's length depends on them); leave it False under jit")
    v = np.asarray(a)
    nz = np.abs(v) >= tol if tol is not None else v != 0
    if not nz.any():
        return a[:0]
    return a[int(np.argmax(nz)):]


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (the convolution of their coefficients)."""
    a1, a2 = promote_dtypes(a1, a2, to_float=True)
    a1, a2 = _vector(asarray(a1), "polymul"), _vector(asarray(a2), "polymul")
    if trim_leading_zeros and (shape_of(a1)[0] > 1 or shape_of(a2)[0] > 1):
        a1, a2 = _trim_leading(a1, "polymul"), _trim_leading(a2, "polymul")
    if shape_of(a1)[0] == 0:
        a1 = cr.zeros((1,), a2.dtype)
    if shape_of(a2)[0] == 0:
        a2 = cr.zeros((1,), a1.dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """(quotient, remainder) of the polynomial division u / v; the remainder keeps
    u's length unless trim_leading_zeros."""
    from .. import dtypes
    u, v = promote_dtypes(u, v, to_float=True)
    u, v = _vector(asarray(u), "polydiv"), _vector(asarray(v), "polydiv")
    m, n = shape_of(u)[0] - 1, shape_of(v)[0] - 1
    scale = 1.0 / v[0]
    q = cr.zeros((max(m - n + 1, 1),), u.dtype)
    for k in range(m - n + 1):
        d = scale * u[k]
        q = q.at[k].set(d)
        u = u.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        u = _trim_leading(u, "polydiv", float(np.sqrt(dtypes.finfo(u.dtype).eps)))
    return q, u


def polyder(p, m=1):
    """The m-th derivative of the polynomial p."""
    m = _order(m, "polyder: m")
    (p,) = promote_dtypes(p, to_float=True)
    p = _vector(asarray(p), "polyder")
    if m < 0:
        raise ValueError(f"polyder: the order m must be non-negative, got {m}")
    if m == 0:
        return p
    n = shape_of(p)[0]
    # the coefficient of x**j gains the factor j (j-1) ... (j-m+1)
    coeff = np.array([np.prod(np.arange(j - m + 1, j + 1, dtype=np.float64))
                      for j in range(n - 1, m - 1, -1)], p.dtype)
    return p[:max(n - m, 0)] * coeff


def polyint(p, m=1, k=None):
    """The m-th antiderivative of p, with integration constants k (a scalar for
    all, or one per integration, the first constant last in the result)."""
    m = _order(m, "polyint: m")
    p, k = promote_dtypes(p, 0 if k is None else k, to_float=True)
    p = _vector(asarray(p), "polyint")
    if m < 0:
        raise ValueError(f"polyint: the order m must be non-negative (see polyder), got {m}")
    k = mp.atleast_1d(asarray(k))
    if shape_of(k)[0] == 1:
        k = cr.full((m,), k[0], p.dtype)
    if shape_of(k) != (m,):
        raise ShapeError(f"polyint: k must be a scalar or have length 1 or m={m}, got shape "
                         f"{shape_of(k)}")
    if m == 0:
        return p
    n = shape_of(p)[0] + m
    # entry i (power n-1-i) divides by (n-1-i)!/(n-1-i-m)! (at least 1 each factor)
    grid = np.arange(n, dtype=np.float64)[None, :] - np.arange(m, dtype=np.float64)[:, None]
    coeff = np.maximum(1, grid).prod(0)[::-1].astype(p.dtype)
    return uf.true_divide(mp.concatenate([p, k.astype(p.dtype)]), coeff)


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (1-d only:
    a matrix's characteristic polynomial needs eigvals, which jx lacks)."""
    (z,) = promote_dtypes(seq_of_zeros, to_float=True)
    z = mp.atleast_1d(asarray(z))
    s = shape_of(z)
    if len(s) == 2 and s[0] == s[1] and s[0] != 0:
        raise NotImplementedError("poly of a square matrix needs its eigenvalues "
                                  "(jx.numpy.linalg.eigvals, not available yet); pass the "
                                  "roots as a 1-d array")
    if len(s) != 1:
        raise ShapeError(f"poly: input must be 1-d (the roots), got shape {s}")
    if s[0] == 0:
        return cr.ones((), z.dtype)
    a = cr.ones((1,), z.dtype)
    for i in range(s[0]):
        a = convolve(a, mp.stack([cr.ones((), z.dtype), -z[i]]), mode="full")
    return a


__all__ = ["convolve", "correlate", "polyval", "polyadd", "polysub", "polymul", "polydiv",
           "polyder", "polyint", "poly"]
_wrap_public(globals(), __all__)
