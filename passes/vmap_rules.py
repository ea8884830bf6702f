"""Batching rules of the elementwise, structural, reduction and linalg families.

Most rules move the batch axis to the front and shift the primitive's axis
params by one; unbatched operands of n-ary ops are broadcast only when the
primitive needs equal shapes.
"""
from __future__ import annotations

import numpy as np

import jx.numpy as jnp
from jx.core import PRIMITIVES, bind, get_aval
from jx.prims import elementwise as ew
from jx.prims import structural as st

from .vmap import batch_rules, move_to_front


def _one(prim, *args, **params):
    return bind(prim, *args, **params)[0]


def _front(xs, ds, axis_size):
    return [move_to_front(x, d, axis_size) for x, d in zip(xs, ds)]


def elementwise(prim):
    def rule(xs, ds, axis_size, **params):
        return bind(prim, *_front(xs, ds, axis_size), **params), [0]
    return rule


def _aval(x):
    return get_aval(x)


_ELEMENTWISE = (
    "neg", "abs", "sign", "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2",
    "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "logistic", "sin", "cos", "tan",
    "erf", "floor", "ceil", "round", "is_finite", "eq", "ne", "lt", "le", "gt", "ge", "and",
    "or", "xor", "not", "shift_left", "shift_right_logical", "shift_right_arithmetic",
    "convert_element_type", "bitcast_convert_type", "real", "imag", "conj", "complex")
for _name in _ELEMENTWISE:
    batch_rules[_name] = elementwise(PRIMITIVES[_name])


def _select_rule(xs, ds, axis_size):
    pred = xs[0]
    a, b = _front(xs[1:], ds[1:], axis_size)
    shape = _aval(a).shape
    if ds[0] is None and _aval(pred).shape == ():
        p = pred
    else:
        p = move_to_front(pred, ds[0], axis_size)
        if _aval(p).shape != shape:
            p = _one(st.broadcast_in_dim, p, shape=shape, broadcast_dimensions=(0,))
    return [_one(ew.select, p, a, b)], [0]


batch_rules["select"] = _select_rule


# --- structural: batch axis first, params shifted by one
def _unary_front(fn):
    def rule(xs, ds, axis_size, **params):
        (x,) = _front(xs, ds, axis_size)
        return [fn(x, **params)], [0]
    return rule


def _shift(t):
    return tuple(int(d) + 1 for d in t)


batch_rules["broadcast_in_dim"] = _unary_front(
    lambda x, shape, broadcast_dimensions: _one(
        st.broadcast_in_dim, x, shape=(_aval(x).shape[0],) + tuple(shape),
        broadcast_dimensions=(0,) + _shift(broadcast_dimensions)))
batch_rules["reshape"] = _unary_front(
    lambda x, new_sizes: _one(st.reshape, x, new_sizes=(_aval(x).shape[0],) + tuple(new_sizes)))
batch_rules["transpose"] = _unary_front(
    lambda x, permutation: _one(st.transpose, x, permutation=(0,) + _shift(permutation)))
batch_rules["squeeze"] = _unary_front(
    lambda x, dimensions: _one(st.squeeze, x, dimensions=_shift(dimensions)))
batch_rules["expand_dims"] = _unary_front(
    lambda x, dimensions: _one(st.expand_dims, x, dimensions=_shift(dimensions)))
batch_rules["slice"] = _unary_front(
    lambda x, start_indices, limit_indices, strides: _one(
        st.slice_, x, start_indices=(0,) + tuple(start_indices),
        limit_indices=(_aval(x).shape[0],) + tuple(limit_indices), strides=(1,) + tuple(strides)))
batch_rules["rev"] = _unary_front(
    lambda x, dimensions: _one(st.rev, x, dimensions=_shift(dimensions)))


def _pad_rule(xs, ds, axis_size, padding_config):
    (x, pv), (dx, dpv) = xs, ds
    x = move_to_front(x, dx, axis_size)
    config = ((0, 0, 0),) + tuple(padding_config)
    if dpv is None:
        return [_one(st.pad, x, pv, padding_config=config)], [0]
    # a per-example padding value: pad with zeros, then select the padding positions
    zero = np.zeros((), _aval(x).dtype)
    padded = _one(st.pad, x, zero, padding_config=config)
    inside = _one(st.pad, jnp.ones(_aval(x).shape, bool), np.zeros((), bool),
                  padding_config=config)
    pv = move_to_front(pv, dpv, axis_size)
    shape = _aval(padded).shape
    pvb = _one(st.broadcast_in_dim, pv, shape=shape, broadcast_dimensions=(0,))
    return [_one(ew.select, inside, padded, pvb)], [0]


batch_rules["pad"] = _pad_rule


def _concat_rule(xs, ds, axis_size, dimension):
    return [_one(st.concatenate, *_front(xs, ds, axis_size), dimension=dimension + 1)], [0]


batch_rules["concatenate"] = _concat_rule


# --- reductions and scans
def _axes_rule(prim):
    def rule(xs, ds, axis_size, axes):
        (x,) = _front(xs, ds, axis_size)
        return [_one(prim, x, axes=_shift(axes))], [0]
    return rule


for _name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
    batch_rules[_name] = _axes_rule(PRIMITIVES[_name])


def _axis_rule(prim):
    def rule(xs, ds, axis_size, axis, **params):
        (x,) = _front(xs, ds, axis_size)
        return [_one(prim, x, axis=axis + 1, **params)], [0]
    return rule


for _name in ("argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin"):
    batch_rules[_name] = _axis_rule(PRIMITIVES[_name])


# --- dot_general: a batch axis on both sides becomes a batch dim; on one side a free dim
def _dot_rule(xs, ds, axis_size, dimension_numbers, preferred_element_type=None):
    (lhs, rhs), (dl, dr) = xs, ds
    (lc, rc), (lb, rb) = dimension_numbers
    params = {} if preferred_element_type is None else dict(
        preferred_element_type=preferred_element_type)
    if dl is not None and dr is not None:
        lhs, rhs = move_to_front(lhs, dl, axis_size), move_to_front(rhs, dr, axis_size)
        dn = ((_shift(lc), _shift(rc)), ((0,) + _shift(lb), (0,) + _shift(rb)))
        return [_one(PRIMITIVES["dot_general"], lhs, rhs, dimension_numbers=dn, **params)], [0]
    if dl is not None:
        lhs = move_to_front(lhs, dl, axis_size)
        dn = ((_shift(lc), rc), (_shift(lb), rb))
        return [_one(PRIMITIVES["dot_general"], lhs, rhs, dimension_numbers=dn, **params)], \
            [len(lb)]
    rhs = move_to_front(rhs, dr, axis_size)
    dn = ((lc, _shift(rc)), (lb, _shift(rb)))
    n_lhs_free = _aval(lhs).ndim - len(lc) - len(lb)
    return [_one(PRIMITIVES["dot_general"], lhs, rhs, dimension_numbers=dn, **params)], \
        [len(lb) + n_lhs_free]


batch_rules["dot_general"] = _dot_rule


# iota and dimension_size have no operands, so they are never batched; the rules
# exist for the coverage test
for _name in ("iota", "dimension_size"):
    batch_rules[_name] = lambda xs, ds, axis_size, _name=_name, **params: (
        bind(PRIMITIVES[_name], **params), [None])
