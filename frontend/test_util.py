"""jx.test_util: check_grads, check_jvp, check_vjp, as JAX's jax.test_util.

Derivatives from jx.jvp / jx.vjp are compared with central finite differences
along one random direction (NumPy's RandomState(0), as JAX), so the check costs
two evaluations of f whatever the sizes. Tolerances default per dtype to JAX's
and are scaled by the size of the compared arrays, as JAX's are.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from . import dtypes, tree
from .transforms import float0, jvp as _jvp, linearize as _linearize, vjp as _vjp

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4

# JAX's default_gradient_tolerance (for the dtypes jx has)
_GRAD_TOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3,
             np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-3,
             np.dtype(np.complex128): 1e-5}
_EXACT = 0          # integers and bools compare exactly


def _dtype(x) -> np.dtype:
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    return np.asarray(x).dtype      # a Python scalar: its 64-bit NumPy type, as JAX


def _canonical(dt) -> np.dtype:
    """dt as jx computes it in the current mode (float64 -> float32 in 32-bit mode)."""
    dt = np.dtype(dt)
    return dt if dt.kind == "c" else dtypes.canonical(dt)


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _tol(dt: np.dtype, tol) -> float:
    if tol is not None and not isinstance(tol, dict):
        return tol
    table = dict(_GRAD_TOL)
    if tol:
        table.update({np.dtype(k): v for k, v in tol.items()})
    return table.get(_canonical(dt), _EXACT)


def _close(a, b, atol, rtol, err_msg):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{err_msg}: shapes {a.shape} and {b.shape} differ"
    if float0 in (a.dtype, b.dtype):      # tangents of integer inputs: nothing to compare
        return
    at = max(_tol(a.dtype, atol), _tol(b.dtype, atol))
    rt = max(_tol(a.dtype, rtol), _tol(b.dtype, rtol))
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(a, b, atol=at * a.size, rtol=rt * b.size,
                                   err_msg=err_msg)


def _check_close(xs, ys, atol, rtol, err_msg):
    tree.tree_map(lambda x, y: _close(x, y, atol, rtol, err_msg), xs, ys)


def _check_dtypes(xs, ys):
    def same(x, y):
        dx, dy = _canonical(_dtype(x)), _canonical(_dtype(y))
        assert dx == dy, f"dtypes differ: {dx} and {dy}"
    tree.tree_map(same, xs, ys)


def _keep_type(f):
    """Apply f in NumPy, keeping the first argument's dtype (and Python scalars
    as Python scalars), so perturbed arguments trace as the originals."""
    def wrapped(*args):
        out = np.array(f(*(np.asarray(a) for a in args)), dtype=_dtype(args[0]))
        return out.item() if all(_is_scalar(a) for a in args) else out
    return wrapped


_add = functools.partial(tree.tree_map, _keep_type(operator.add))
_sub = functools.partial(tree.tree_map, _keep_type(operator.sub))
_conj = functools.partial(tree.tree_map, _keep_type(np.conj))


def _safe_sub(xs, ys):
    """x - y with inf - inf = 0 (an output at inf on both sides has no change)."""
    def sub(x, y):
        dt = _dtype(x)
        with np.errstate(invalid="ignore"):
            return np.where(np.equal(x, y), np.array(0, dt), np.subtract(x, y, dtype=dt))
    return tree.tree_map(sub, xs, ys)


def _scale(xs, a):
    def mul(x):
        dt = _dtype(x)
        out = np.multiply(np.asarray(x), np.array(a, dtype=dt), dtype=dt)
        return out.item() if _is_scalar(x) else out
    return tree.tree_map(mul, xs)


def _rand_like(rng, x):
    shape, dt = np.shape(x), _dtype(x)
    out = np.asarray(rng.randn(*shape), dtype=dt)
    if np.issubdtype(dt, np.complexfloating):
        out = out + dt.type(1j) * np.asarray(rng.randn(*shape), dtype=dt)
    return out.item() if _is_scalar(x) else out


def _inner(xs, ys):
    def contract(x, y):
        return np.real(np.dot(np.conj(np.asarray(x)).reshape(-1), np.asarray(y).reshape(-1)))
    return functools.reduce(np.add, tree.tree_leaves(tree.tree_map(contract, xs, ys)))


def numerical_jvp(f, primals, tangents, eps=EPS):
    """(f(x + eps t) - f(x - eps t)) / (2 eps)."""
    delta = _scale(tangents, eps)
    f_pos = f(*_add(primals, delta))
    f_neg = f(*_sub(primals, delta))
    return _scale(_safe_sub(_numpy_tree(f_pos), _numpy_tree(f_neg)), 0.5 / eps)


def _numpy_tree(xs):
    return tree.tree_map(np.asarray, xs)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Checks f_jvp (typically functools.partial(jx.jvp, f)) against finite
    differences of f at args along one random direction."""
    rng = np.random.RandomState(0)
    tangent = tree.tree_map(functools.partial(_rand_like, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    _check_dtypes(v_out, t_out)
    v_expected = f(*args)
    _check_dtypes(v_out, v_expected)
    t_expected = numerical_jvp(f, args, tangent, eps=eps)
    _check_close(v_out, v_expected, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    _check_close(t_out, t_expected, atol, rtol, f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Checks f_vjp (typically functools.partial(jx.vjp, f)) against finite
    differences: <t, vjp(c)> must equal <jvp_numerical(t), c>."""
    rand = functools.partial(_rand_like, np.random.RandomState(0))
    v_out, vjpfun = f_vjp(*args)
    v_expected = f(*args)
    _check_close(v_out, v_expected, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    tangent = tree.tree_map(rand, args)
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tree.tree_map(rand, _numpy_tree(v_out))
    cotangent_out = _conj(_numpy_tree(vjpfun(_conj(cotangent))))
    ip = _inner(tangent, cotangent_out)
    ip_expected = _inner(tangent_out, cotangent)
    _check_close(ip, ip_expected, atol, rtol,
                 f"{err_msg} cotangent projection" if err_msg else "cotangent projection")


def _jvp_from_lin(f, primals, tangents):
    out, f_lin = _linearize(f, *primals)
    return out, f_lin(*tangents)


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Checks forward ('fwd'), reverse ('rev') and linearize ('lin') derivatives
    of f at args, up to `order`, against finite differences.

    Raises AssertionError when they differ.
    """
    args = tuple(args)
    eps = eps or EPS
    jvp_check = functools.partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
    vjp_check = functools.partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

    def check(f, args, order, msg=""):
        if "fwd" in modes:
            m = f"JVP of {msg}" if msg else "JVP"
            jvp_check(f, functools.partial(_jvp, f), args, err_msg=m)
            if order > 1:
                check(functools.partial(_jvp, f), (args, args), order - 1, m)
        if "rev" in modes:
            m = f"VJP of {msg}" if msg else "VJP"
            vjp_check(f, functools.partial(_vjp, f), args, err_msg=m)
            if order > 1:
                def f_vjp(*primals):
                    out, pullback = _vjp(f, *primals)
                    return pullback(out)
                check(f_vjp, args, order - 1, m)
        if "lin" in modes:
            m = f"LIN of {msg}" if msg else "LIN"
            jvp_check(f, functools.partial(_jvp_from_lin, f), args, err_msg=m)
            if order > 1:
                check(functools.partial(_jvp_from_lin, f), (args, args), order - 1, m)

    check(f, args, order)
