"""jx.nn: activations, softmax and friends, written in jx.numpy.

Each is a plain function of arrays, so autodiff sees ordinary primitives and a
custom_jvp wrapper can be attached later without changing callers. Reductions
subtract the maximum first so large inputs (1e4) neither overflow nor give NaN.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import numpy as jnp
from ..numpy import _util as u
from ..numpy.creation import _wrap_public
from ..custom import custom_jvp
from ..prims import elementwise as ew


def _float(x):
    """x as a float array; a weak value (a Python scalar) stays weak, as JAX's
    activations keep it (relu(2.0), softplus(1) are weak float32)."""
    x = u.as_value(x)
    dt, weak = u.dtype_weak(x)
    ft = dt if dtypes.is_float(dt) else dtypes.default_float()
    if weak:
        return u.bind1(ew.convert_element_type, x, new_dtype=ft, weak_type=True)
    (v,) = u.promote_dtypes(x, to_float=True)
    return v


def _float_as(x, c):
    """x as a float array typed as JAX's formula makes it when x meets the Python
    scalar c: an int array with a float scalar, or a bool array with any scalar,
    gives weak float (JAX's elu(int32 array) is weak float32, soft_sign(int32)
    strong); a float x is unchanged."""
    x = u.as_value(x)
    own = u.dtype_weak(x)[0]
    if dtypes.is_float(own):
        return x
    dt, weak = u.result_dtype(x, c)
    ft = dt if dtypes.is_float(dt) else u.promote_dtypes(x, to_float=True)[0].dtype
    return u.bind1(ew.convert_element_type, x, new_dtype=ft, weak_type=weak)


def _c(v, x):
    """A constant in x's dtype (a NumPy scalar, so it does not widen x)."""
    return np.asarray(v, x.dtype)


@custom_jvp
def relu(x):
    """max(x, 0). Its derivative is 1 where x > 0 and 0 elsewhere, at 0 too (as
    JAX): maximum's tie rule would give 1/2 there."""
    x = u.as_value(x)
    return jnp.maximum(x, 0)


@relu.defjvp
def _relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return relu(x), jnp.where(jnp.greater(x, 0), t, jnp.zeros_like(t))


@custom_jvp
def relu6(x):
    """min(max(x, 0), 6); derivative 1 strictly inside (0, 6), else 0 (as JAX)."""
    return jnp.minimum(jnp.maximum(u.as_value(x), 0), 6.0)   # ints give floats, as JAX


@relu6.defjvp
def _relu6_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    inside = jnp.logical_and(jnp.greater(x, 0), jnp.less(x, 6))
    return relu6(x), jnp.where(inside, t, jnp.zeros_like(t))


def sigmoid(x):
    """1 / (1 + exp(-x)), computed without overflow."""
    return u.bind1(ew.logistic, _float(x))


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x)."""
    return jnp.negative(softplus(jnp.negative(_float(x))))


def softplus(x):
    """log(1 + exp(x)), stable for large |x|."""
    return jnp.logaddexp(_float_as(x, 0), 0.0)


def soft_sign(x):
    """x / (1 + |x|)."""
    x = _float_as(x, 1)
    return jnp.divide(x, jnp.add(jnp.abs(x), 1.0))


def silu(x):
    """x * sigmoid(x)."""
    x = _float(x)
    return jnp.multiply(x, sigmoid(x))


swish = silu


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit; the tanh form by default, the erf form when exact."""
    x = _float(x)
    if approximate:
        inner = jnp.multiply(_c(np.sqrt(2 / np.pi), x),
                             jnp.add(x, jnp.multiply(_c(0.044715, x),
                                                     jnp.multiply(x, jnp.square(x)))))
        return jnp.multiply(jnp.multiply(x, 0.5), jnp.add(jnp.tanh(inner), 1.0))
    erf = u.bind1(ew.erf, jnp.multiply(x, _c(1 / np.sqrt(2), x)))
    return jnp.multiply(jnp.multiply(x, 0.5), jnp.add(erf, 1.0))


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    x = _float_as(x, 0.0)
    safe = jnp.where(jnp.greater(x, 0), 0.0, x)   # expm1 of large x would overflow unused
    return jnp.where(jnp.greater(x, 0), x, jnp.multiply(alpha, jnp.expm1(safe)))


def celu(x, alpha=1.0):
    """max(x, 0) + alpha * min(exp(x / alpha) - 1, 0)."""
    x = _float_as(x, 0.0)
    neg = jnp.multiply(alpha, jnp.expm1(jnp.divide(jnp.minimum(x, 0.0), alpha)))
    return jnp.where(jnp.greater(x, 0), x, neg)


def selu(x):
    """scale * elu(x, alpha) with the self-normalising constants."""
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return jnp.multiply(scale, elu(x, alpha))


def leaky_relu(x, negative_slope=1e-2):
    """x for x >= 0, negative_slope * x otherwise."""
    x = _float_as(x, 0.0)
    return jnp.where(jnp.greater_equal(x, 0), x, jnp.multiply(negative_slope, x))


def hard_tanh(x):
    """clip(x, -1, 1); integers stay integers, as in JAX."""
    x = u.as_value(x)
    return jnp.where(jnp.greater(x, 1), 1, jnp.where(jnp.less(x, -1), -1, x))


def hard_sigmoid(x):
    """relu6(x + 3) / 6."""
    return jnp.divide(relu6(jnp.add(_float_as(x, 3.0), 3.0)), 6.0)


def hard_silu(x):
    """x * hard_sigmoid(x)."""
    x = _float_as(x, 3.0)
    return jnp.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def _axes(x, axis):
    return u.canonical_axes(axis, len(u.shape_of(x)))


def _shift(x, axes):
    """The max used to shift exponents; over a size-0 axis (where jnp.max raises) the
    result is empty or a sum of nothing, so any shift does: -inf, as JAX's."""
    shape = u.shape_of(x)
    empty = any(shape[a] == 0 for a in axes)
    return jnp.max(x, axis=axes, keepdims=True, initial=-np.inf if empty else None)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) over axis, shifted by the maximum so it cannot overflow.

    With return_sign, returns (log|sum|, sign(sum)), so negative weights b work;
    without it a negative sum gives NaN.
    """
    a = _float(a)
    if b is not None:
        a, b = u.promote(a, b, to_float=True)
        a = jnp.where(jnp.not_equal(b, 0), a, -np.inf)   # zero weight drops the term
    axes = _axes(a, axis)
    amax = _shift(a, axes)
    # an all -inf (or +inf) slice keeps a finite shift: the result is then -inf (+inf)
    amax = jnp.where(jnp.isfinite(amax), amax, 0.0)
    e = jnp.exp(jnp.subtract(a, amax))
    if b is not None:
        e = jnp.multiply(e, b)
    s = jnp.sum(e, axis=axes, keepdims=keepdims)
    if not keepdims and axes:
        amax = jnp.squeeze(amax, axis=axes)
    sign = jnp.sign(s)
    out = jnp.add(jnp.log(jnp.abs(s)), amax)
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(jnp.less(sign, 0), np.nan, out)
    return out


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along axis, shifted by the maximum."""
    x = _float(x)
    axes = _axes(x, axis)
    e = jnp.exp(jnp.subtract(x, _shift(x, axes)))
    return jnp.divide(e, jnp.sum(e, axis=axes, keepdims=True))


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along axis, shifted by the maximum."""
    x = _float(x)
    axes = _axes(x, axis)
    shifted = jnp.subtract(x, _shift(x, axes))
    return jnp.subtract(shifted, jnp.log(jnp.sum(jnp.exp(shifted), axis=axes, keepdims=True)))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5):
    """(x - mean) / sqrt(variance + epsilon), statistics over axis unless given."""
    x = _float(x)
    axes = _axes(x, axis)
    if mean is None:
        mean = jnp.mean(x, axis=axes, keepdims=True)
    if variance is None:
        # E[x^2] - E[x]^2 as JAX computes it
        variance = jnp.subtract(jnp.mean(jnp.square(x), axis=axes, keepdims=True),
                                jnp.square(mean))
    return jnp.multiply(jnp.subtract(x, mean), jnp.rsqrt(jnp.add(variance, epsilon)))


normalize = standardize


def glu(x, axis=-1):
    """First half of x times sigmoid of the second half, along axis."""
    x = _float(x)
    ax = u.canonical_axis(axis, len(u.shape_of(x)))
    n = u.shape_of(x)[ax]
    if n % 2:
        raise ValueError(f"glu needs an even size along axis {axis}, got {n}")
    a, b = jnp.split(x, 2, axis=ax)
    return jnp.multiply(a, sigmoid(b))


def tanh(x):
    return jnp.tanh(x)


def identity(x):
    """x as an array (jax.nn.identity)."""
    return jnp.asarray(x)


def mish(x):
    """x * tanh(softplus(x))."""
    x = _float(x)
    return jnp.multiply(x, jnp.tanh(softplus(x)))


def squareplus(x, b=4):
    """(x + sqrt(x^2 + b)) / 2: a smooth ReLU made of algebraic operations."""
    x = _float(x)
    return jnp.multiply(jnp.add(x, jnp.sqrt(jnp.add(jnp.square(x), _c(b, x)))), _c(0.5, x))


def sparse_plus(x):
    """0 below -1, x above 1, (x + 1)^2 / 4 between (jax.nn.sparse_plus)."""
    x = _float(x)
    mid = jnp.multiply(jnp.square(jnp.add(x, _c(1.0, x))), _c(0.25, x))
    return jnp.where(x <= -1.0, jnp.zeros_like(x), jnp.where(x >= 1.0, x, mid))


def sparse_sigmoid(x):
    """0 below -1, 1 above 1, (x + 1) / 2 between: the derivative of sparse_plus."""
    x = _float(x)
    return jnp.clip(jnp.multiply(jnp.add(x, _c(1.0, x)), _c(0.5, x)), 0.0, 1.0)


def log1mexp(x):
    """log(1 - exp(-x)) for x > 0, by log1p or log(-expm1) whichever is accurate."""
    x = _float(x)
    small = x < _c(float(np.log(2.0)), x)
    return jnp.where(small, jnp.log(jnp.negative(jnp.expm1(jnp.negative(x)))),
                     jnp.log1p(jnp.negative(jnp.exp(jnp.negative(x)))))


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """log(mean(exp(x))) along axis: logsumexp minus the log of the count."""
    x = _float(x)
    if where is not None:
        n = jnp.sum(jnp.asarray(where, bool) & jnp.ones(u.shape_of(x), bool), axis=axis,
                    keepdims=keepdims)
        x = jnp.where(where, x, -jnp.inf)
    else:
        axes = _axes(x, axis)
        n = int(np.prod([u.shape_of(x)[a] for a in axes], dtype=np.int64))
    return jnp.subtract(logsumexp(x, axis=axis, keepdims=keepdims),
                        jnp.log(jnp.asarray(n, x.dtype)))


def one_hot(x, num_classes: int, dtype=float, axis=-1):
    """1 where x equals the class index along a new axis, else 0 (all 0 when out of range)."""
    x = u.as_value(x)
    nd = len(u.shape_of(x)) + 1
    ax = u.canonical_axis(axis, nd)
    idt = np.dtype(np.int32) if x.dtype == dtypes.bool_ else x.dtype
    shape = [1] * nd
    shape[ax] = int(num_classes)
    classes = np.arange(int(num_classes), dtype=idt).reshape(shape)
    hit = jnp.equal(jnp.expand_dims(x, ax), classes)
    return u.convert(hit, dtypes.canonicalize(dtype, "one_hot"), [hit])


__all__ = ["relu", "relu6", "sigmoid", "log_sigmoid", "softplus", "soft_sign", "silu",
           "swish", "gelu", "elu", "celu", "selu", "leaky_relu", "hard_tanh", "hard_sigmoid",
           "hard_silu", "hard_swish", "logsumexp", "softmax", "log_softmax", "standardize",
           "normalize", "glu", "one_hot", "tanh", "identity", "mish", "squareplus",
           "sparse_plus", "sparse_sigmoid", "log1mexp", "logmeanexp"]

# jax.nn's names jx.nn does not have yet (JAX 0.10.2)
_JAX_ONLY = frozenset({"dot_product_attention", "get_scaled_dot_general_config",
                       "scaled_dot_general", "scaled_matmul"})


def __getattr__(name):
    from ..errors import missing_name
    raise missing_name("jx.nn", name, _JAX_ONLY, {
        "dot_product_attention": "softmax(q @ k.T / sqrt(d)) @ v written with jx.numpy"})


# ---- numerically stable derivatives (custom_jvp): the rules use the closed forms
# (sigmoid, softmax) instead of differentiating through max-shifts and where().

_softplus_plain = softplus
_logsumexp_plain = logsumexp
_log_softmax_plain = log_softmax


@custom_jvp
def softplus(x):
    """log(1 + exp(x)), computed without overflow; derivative sigmoid(x)."""
    return _softplus_plain(x)


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), jnp.multiply(t, sigmoid(x))


def _lse_simple(a, axes, keepdims):
    return _logsumexp_plain(a, axes, keepdims=keepdims)


_lse = custom_jvp(_lse_simple, nondiff_argnums=(1, 2))


@_lse.defjvp
def _lse_jvp(axes, keepdims, primals, tangents):
    (a,), (t,) = primals, tangents
    out = _lse(a, axes, keepdims)
    kept = out if keepdims else _logsumexp_plain(a, axes, keepdims=True)
    weights = jnp.exp(jnp.subtract(a, kept))            # softmax along axes
    return out, jnp.sum(jnp.multiply(weights, t), axis=axes, keepdims=keepdims)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) over axis, shifted by the maximum so it cannot overflow.

    With return_sign, returns (log|sum|, sign(sum)), so negative weights b work;
    without it a negative sum gives NaN. The unweighted form has a custom
    derivative (softmax times the tangent).
    """
    if b is not None or return_sign:
        return _logsumexp_plain(a, axis, b=b, keepdims=keepdims, return_sign=return_sign)
    a = _float(a)
    return _lse(a, tuple(_axes(a, axis)), keepdims)


def _log_softmax_simple(x, axes):
    return _log_softmax_plain(x, axes)


_log_softmax = custom_jvp(_log_softmax_simple, nondiff_argnums=(1,))


@_log_softmax.defjvp
def _log_softmax_jvp(axes, primals, tangents):
    (x,), (t,) = primals, tangents
    out = _log_softmax(x, axes)
    p = jnp.exp(out)
    return out, jnp.subtract(t, jnp.sum(jnp.multiply(p, t), axis=axes, keepdims=True))


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along axis, shifted by the maximum; derivative t - sum(softmax*t)."""
    x = _float(x)
    return _log_softmax(x, tuple(_axes(x, axis)))


_wrap_public(globals(), __all__)


from . import initializers  # noqa: E402,F401  (jx.nn.initializers, as JAX)
