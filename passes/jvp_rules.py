"""jvp rules of the elementwise, structural, reduction and linalg families.

Derivatives are written with jx.numpy, so the same rule runs eagerly on NumPy
values and stages into a graph on tracers (and can be differentiated again).
"""
from __future__ import annotations

import numpy as np

import jx.numpy as jnp
from jx import dtypes
from jx.core import PRIMITIVES, bind, get_aval
from jx.prims import elementwise as ew
from jx.prims import reductions as rd

from .interpreters import NotDifferentiable
from .jvp import jvp_function, jvp_rules
from .zeros import add_any, zeros_like


def _one(prim, *args, **params):
    return bind(prim, *args, **params)[0]


def _instantiate(ps, ts):
    return [zeros_like(p) if t is None else t for p, t in zip(ps, ts)]


def linear(prim):
    """prim is linear in every operand: its tangent is prim of the tangents."""
    def rule(ps, ts, **params):
        return bind(prim, *ps, **params), bind(prim, *_instantiate(ps, ts), **params)
    return rule


def _register_unary(prim, deriv):
    def rule(ps, ts, **params):
        (x,), (t,) = ps, ts
        y = _one(prim, x, **params)
        return [y], [jnp.multiply(t, deriv(x, y))]
    jvp_rules[prim.name] = rule


def bilinear(prim):
    def rule(ps, ts, **params):
        (a, b), (ta, tb) = ps, ts
        out = _one(prim, a, b, **params)
        t1 = None if ta is None else _one(prim, ta, b, **params)
        t2 = None if tb is None else _one(prim, a, tb, **params)
        return [out], [add_any(t1, t2)]
    return rule


def binary(grad_a, grad_b):
    """grad_x(a, b, y) -> dy/dx for an elementwise binary primitive."""
    def make(prim):
        def rule(ps, ts, **params):
            (a, b), (ta, tb) = ps, ts
            y = _one(prim, a, b, **params)
            t1 = None if ta is None else jnp.multiply(ta, grad_a(a, b, y))
            t2 = None if tb is None else jnp.multiply(tb, grad_b(a, b, y))
            return [y], [add_any(t1, t2)]
        return rule
    return make


# --- elementwise
for _p in (ew.neg, ew.add, ew.sub, ew.convert_element_type):
    jvp_rules[_p.name] = linear(_p)
jvp_rules["mul"] = bilinear(ew.mul)

_SQRT_PI = float(2 / np.sqrt(np.pi))
_UNARY = {
    # +1 at 0 (and -0), as JAX: sign(x) would stop the gradient at a kink
    ew.abs_: lambda x, y: jnp.where(jnp.greater_equal(x, 0), jnp.ones_like(x),
                                    jnp.negative(jnp.ones_like(x))),
    ew.exp: lambda x, y: y,
    ew.log: lambda x, y: jnp.reciprocal(x),
    ew.log1p: lambda x, y: jnp.reciprocal(jnp.add(x, 1.0)),
    ew.expm1: lambda x, y: jnp.add(y, 1.0),
    ew.sqrt: lambda x, y: jnp.divide(0.5, y),
    ew.rsqrt: lambda x, y: jnp.divide(jnp.multiply(-0.5, y), x),
    ew.tanh: lambda x, y: jnp.subtract(1.0, jnp.square(y)),
    ew.logistic: lambda x, y: jnp.multiply(y, jnp.subtract(1.0, y)),
    ew.sin: lambda x, y: jnp.cos(x),
    ew.cos: lambda x, y: jnp.negative(jnp.sin(x)),
    ew.tan: lambda x, y: jnp.add(1.0, jnp.square(y)),
    ew.erf: lambda x, y: jnp.multiply(_SQRT_PI, jnp.exp(jnp.negative(jnp.square(x)))),
}
for _p, _d in _UNARY.items():
    _register_unary(_p, _d)
# The formulas above are holomorphic, so they serve complex operands unchanged:
# the tangent is t * f'(z). abs and the complex parts are not holomorphic.


def abs_slope(x, y):
    """conj(z) / |z| (0 at z = 0, as JAX), of z = x's dtype: d|z| = Re(slope * dz)."""
    safe = jnp.where(jnp.equal(y, 0), jnp.ones_like(y), y)
    return jnp.divide(_one(ew.conj, x), safe)


def _abs_rule(ps, ts):
    (x,), (t,) = ps, ts
    y = _one(ew.abs_, x)
    if not dtypes.is_complex(get_aval(x).dtype):
        return [y], [jnp.multiply(t, _UNARY[ew.abs_](x, y))]
    return [y], [_one(ew.real, jnp.multiply(t, abs_slope(x, y)))]


jvp_rules["abs"] = _abs_rule
# real, imag, conj and complex are linear over the reals: each maps the tangents
for _p in (ew.real, ew.imag, ew.conj, ew.complex_):
    jvp_rules[_p.name] = linear(_p)


def _max_grads(pick_a):
    """max/min: the tangent follows the chosen operand; ties split it evenly (as JAX)."""
    def ga(a, b, y):
        return jnp.where(pick_a(a, b), 1.0, jnp.where(jnp.equal(a, b), 0.5, 0.0)).astype(a.dtype)

    def gb(a, b, y):
        return jnp.subtract(1.0, ga(a, b, y))
    return ga, gb


def _trunc(q):
    return jnp.where(jnp.less(q, 0), jnp.ceil(q), jnp.floor(q))


_POW_A = lambda a, b, y: jnp.multiply(b, jnp.power(a, jnp.subtract(b, 1.0)))  # noqa: E731
_POW_B = lambda a, b, y: jnp.where(jnp.equal(a, 0.0), 0.0,  # noqa: E731
                                   jnp.multiply(jnp.log(jnp.where(jnp.equal(a, 0.0), 1.0, a)),
                                                y))
_BINARY = {
    ew.div: (lambda a, b, y: jnp.reciprocal(b), lambda a, b, y: jnp.negative(jnp.divide(y, b))),
    ew.rem: (lambda a, b, y: jnp.ones_like(a),
             lambda a, b, y: jnp.negative(_trunc(jnp.divide(a, b)))),
    ew.pow_: (_POW_A, _POW_B),
    ew.max_: _max_grads(jnp.greater),
    ew.min_: _max_grads(jnp.less),
    ew.atan2: (lambda a, b, y: jnp.divide(b, jnp.add(jnp.square(a), jnp.square(b))),
               lambda a, b, y: jnp.divide(jnp.negative(a), jnp.add(jnp.square(a),
                                                                    jnp.square(b)))),
}
for _p, (_ga, _gb) in _BINARY.items():
    jvp_rules[_p.name] = binary(_ga, _gb)(_p)


def _select_rule(ps, ts, **params):
    (pred, a, b), (_, ta, tb) = ps, ts
    out = _one(ew.select, pred, a, b)
    if ta is None and tb is None:
        return [out], [None]
    ta, tb = _instantiate([a, b], [ta, tb])
    return [out], [_one(ew.select, pred, ta, tb)]


jvp_rules["select"] = _select_rule

_PIECEWISE_CONSTANT = NotDifferentiable("derivative is zero almost everywhere")
_NON_FLOAT = NotDifferentiable("integer or boolean result")
for _name in ("sign", "floor", "ceil", "round"):
    jvp_rules[_name] = _PIECEWISE_CONSTANT
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "not", "shift_left",
              "shift_right_logical", "shift_right_arithmetic", "is_finite", "argmax",
              "argmin", "iota", "dimension_size"):
    jvp_rules[_name] = _NON_FLOAT
# JAX: a zero tangent (defjvp_zero), also where the result is a float
jvp_rules["bitcast_convert_type"] = NotDifferentiable("reinterprets bits")

# --- structural
for _name in ("broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims", "slice",
              "pad", "concatenate", "rev", "reduce_sum", "cumsum"):
    jvp_rules[_name] = linear(PRIMITIVES[_name])

# --- linalg
jvp_rules["dot_general"] = bilinear(PRIMITIVES["dot_general"])


# --- reductions
def _keep(y, axes):
    return jnp.expand_dims(y, tuple(sorted(axes))) if axes else y


def _reduce_chosen_rule(prim):
    """max/min: average the tangents of the elements equal to the extremum."""
    def rule(ps, ts, axes):
        (x,), (t,) = ps, ts
        y = _one(prim, x, axes=axes)
        mask = jnp.equal(x, _keep(y, axes)).astype(x.dtype)
        count = jnp.sum(mask, axis=axes)
        return [y], [jnp.divide(jnp.sum(jnp.multiply(t, mask), axis=axes), count)]
    return rule


jvp_rules["reduce_max"] = _reduce_chosen_rule(rd.reduce_max)
jvp_rules["reduce_min"] = _reduce_chosen_rule(rd.reduce_min)


def prod_of_others(x, axes):
    """For each element, the product of the other elements in its reduction group,
    computed with exclusive cumulative products (exact where x has zeros)."""
    nd = x.ndim if hasattr(x, "ndim") else np.ndim(x)
    rest = [d for d in range(nd) if d not in axes]
    xt = jnp.transpose(x, rest + list(axes))
    lead = xt.shape[:len(rest)]
    group = int(np.prod(xt.shape[len(rest):], dtype=np.int64))   # not -1: lead may hold a 0
    flat = jnp.reshape(xt, lead + (group,))
    ones = jnp.ones_like(flat[..., :1]) if flat.shape[-1] else flat
    left = jnp.concatenate([ones, jnp.cumprod(flat, axis=-1)[..., :-1]], axis=-1)
    right = jnp.concatenate([jnp.cumprod(flat, axis=-1, reverse=True)[..., 1:], ones], axis=-1)
    others = jnp.reshape(jnp.multiply(left, right), xt.shape)
    return jnp.transpose(others, list(np.argsort(rest + list(axes))))


def _reduce_prod_rule(ps, ts, axes):
    (x,), (t,) = ps, ts
    y = _one(rd.reduce_prod, x, axes=axes)
    return [y], [jnp.sum(jnp.multiply(t, prod_of_others(x, axes)), axis=axes)]


jvp_rules["reduce_prod"] = _reduce_prod_rule


# --- cumulative products and extrema: differentiate a log-depth doubling scan
# made of pads, slices and the elementwise op (exact where x has zeros or ties)
_CUMULATIVE = {"cumprod": (jnp.multiply, 1.0), "cummax": (jnp.maximum, -np.inf),
               "cummin": (jnp.minimum, np.inf)}


def doubling_scan(x, axis, reverse, name):
    op, identity = _CUMULATIVE[name]
    if reverse:
        return jnp.flip(doubling_scan(jnp.flip(x, axis), axis, False, name), axis)
    n = x.shape[axis]
    k = 1
    while k < n:
        pad = [(0, 0)] * x.ndim
        pad[axis] = (k, 0)
        shifted = jnp.pad(x, pad, constant_values=identity)
        x = op(x, jnp.split(shifted, [n], axis=axis)[0])
        k *= 2
    return x


def _cumulative_jvp(name):
    def rule(ps, ts, axis, reverse=False):
        (x,), (t,) = ps, ts
        _, (ty,), _ = jvp_function(lambda v: doubling_scan(v, axis, reverse, name), (x,), [t])
        return [_one(PRIMITIVES[name], x, axis=axis, reverse=reverse)], [ty]
    return rule


for _name in _CUMULATIVE:
    jvp_rules[_name] = _cumulative_jvp(_name)
