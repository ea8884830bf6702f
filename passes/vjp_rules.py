"""vjp rules of the elementwise, structural, reduction and linalg families.

The elementwise rules reuse the derivative formulas of jvp_rules (one source
of truth for d/dx); the structural ones are the transposes of linear maps.
"""
from __future__ import annotations

import numpy as np

import jx.numpy as jnp
from jx import dtypes
from jx.core import bind, get_aval
from jx.prims import elementwise as ew
from jx.prims import linalg as la
from jx.prims import reductions as rd
from jx.prims import structural as st

from . import jvp_rules as J
from .interpreters import NotDifferentiable
from .vjp import vjp_function, vjp_rules
from .zeros import zeros_like


def _one(prim, *args, **params):
    return bind(prim, *args, **params)[0]


def _mul(ct, g):
    return jnp.multiply(ct, g)


# --- elementwise
def _unary_vjp(deriv):
    return lambda cts, ins, outs, **p: [_mul(cts[0], deriv(ins[0], outs[0]))]


def _binary_vjp(ga, gb):
    return lambda cts, ins, outs, **p: [_mul(cts[0], ga(ins[0], ins[1], outs[0])),
                                        _mul(cts[0], gb(ins[0], ins[1], outs[0]))]


for _p, _d in J._UNARY.items():
    vjp_rules[_p.name] = _unary_vjp(_d)
for _p, (_ga, _gb) in J._BINARY.items():
    vjp_rules[_p.name] = _binary_vjp(_ga, _gb)

vjp_rules["add"] = lambda cts, ins, outs: [cts[0], cts[0]]
vjp_rules["sub"] = lambda cts, ins, outs: [cts[0], jnp.negative(cts[0])]
vjp_rules["neg"] = lambda cts, ins, outs: [jnp.negative(cts[0])]
vjp_rules["mul"] = lambda cts, ins, outs: [_mul(cts[0], ins[1]), _mul(cts[0], ins[0])]


def _abs_vjp(cts, ins, outs):
    (ct,), (x,), (y,) = cts, ins, outs
    if not dtypes.is_complex(get_aval(x).dtype):
        return [_mul(ct, J._UNARY[ew.abs_](x, y))]
    return [_mul(ct, J.abs_slope(x, y))]      # the transpose of t -> Re(slope * t)


def _complex_vjp(cts, ins, outs):
    ct = cts[0]
    return [_one(ew.real, ct), jnp.negative(_one(ew.imag, ct))]


vjp_rules["abs"] = _abs_vjp
# the transposes under the pairing Re(ct * t): real's is ct + 0j, imag's -ct * 1j
vjp_rules["real"] = lambda cts, ins, outs: [_one(ew.complex_, cts[0], zeros_like(cts[0]))]
vjp_rules["imag"] = lambda cts, ins, outs: [
    _one(ew.complex_, zeros_like(cts[0]), jnp.negative(cts[0]))]
vjp_rules["conj"] = lambda cts, ins, outs: [_one(ew.conj, cts[0])]
vjp_rules["complex"] = _complex_vjp


def _convert_vjp(cts, ins, outs, new_dtype, weak_type=False):
    dtype = getattr(ins[0], "dtype", None) or jnp.asarray(ins[0]).dtype   # Python scalars too
    if not dtypes.is_inexact(dtype):
        return [None]           # an integer or bool input takes no cotangent
    # complex -> real is the transpose of real -> complex: the real part (as the primitive)
    return [_one(ew.convert_element_type, cts[0], new_dtype=dtype, weak_type=False)]


def _select_vjp(cts, ins, outs):
    (ct,), (pred, a, _) = cts, ins
    z = zeros_like(ct)
    pred = pred if pred.shape == ct.shape else jnp.broadcast_to(pred, ct.shape)
    return [None, _one(ew.select, pred, ct, z), _one(ew.select, pred, z, ct)]


vjp_rules["convert_element_type"] = _convert_vjp
vjp_rules["select"] = _select_vjp
for _name, _rule in J.jvp_rules.items():
    if isinstance(_rule, NotDifferentiable):
        vjp_rules[_name] = _rule


# --- structural (transposes of linear maps)
def _broadcast_vjp(cts, ins, outs, shape, broadcast_dimensions):
    (ct,), (x,) = cts, ins
    new = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    stretched = [d for i, d in enumerate(broadcast_dimensions)
                 if x.shape[i] == 1 and shape[d] != 1]
    summed = _one(rd.reduce_sum, ct, axes=tuple(sorted(new + stretched))) \
        if new or stretched else ct
    return [_one(st.reshape, summed, new_sizes=x.shape)]


def _pad_vjp(cts, ins, outs, padding_config):
    (ct,), (x, pv) = cts, ins
    # undo the edges (a negative edge was a crop: pad it back with zeros), then stride
    unpadded = _one(st.pad, ct, np.zeros((), ct.dtype),
                    padding_config=tuple((-lo, -hi, 0) for lo, hi, _ in padding_config))
    t_x = _one(st.slice_, unpadded, start_indices=(0,) * x.ndim,
               limit_indices=unpadded.shape, strides=tuple(i + 1 for _, _, i in padding_config))
    t_pv = jnp.subtract(jnp.sum(ct), jnp.sum(t_x))
    return [t_x, t_pv]


def _slice_vjp(cts, ins, outs, start_indices, limit_indices, strides):
    (ct,), (x,) = cts, ins
    config = []
    for n, s, l, k, m in zip(x.shape, start_indices, limit_indices, strides, ct.shape):
        used = s + (m - 1) * k + 1 if m else s
        config.append((s, n - used, k - 1) if m else (s, n - s, 0))
    return [_one(st.pad, ct, np.zeros((), ct.dtype), padding_config=tuple(config))]


def _concat_vjp(cts, ins, outs, dimension):
    (ct,) = cts
    out, start = [], 0
    for x in ins:
        lo = [0] * ct.ndim
        hi = list(ct.shape)
        lo[dimension], hi[dimension] = start, start + x.shape[dimension]
        out.append(_one(st.slice_, ct, start_indices=tuple(lo), limit_indices=tuple(hi),
                        strides=(1,) * ct.ndim))
        start += x.shape[dimension]
    return out


vjp_rules["broadcast_in_dim"] = _broadcast_vjp
vjp_rules["reshape"] = lambda cts, ins, outs, new_sizes: [
    _one(st.reshape, cts[0], new_sizes=ins[0].shape)]
vjp_rules["transpose"] = lambda cts, ins, outs, permutation: [
    _one(st.transpose, cts[0], permutation=tuple(int(i) for i in np.argsort(permutation)))]
vjp_rules["squeeze"] = lambda cts, ins, outs, dimensions: [
    _one(st.reshape, cts[0], new_sizes=ins[0].shape)]
vjp_rules["expand_dims"] = lambda cts, ins, outs, dimensions: [
    _one(st.reshape, cts[0], new_sizes=ins[0].shape)]
vjp_rules["slice"] = _slice_vjp
vjp_rules["pad"] = _pad_vjp
vjp_rules["concatenate"] = _concat_vjp
vjp_rules["rev"] = lambda cts, ins, outs, dimensions: [
    _one(st.rev, cts[0], dimensions=dimensions)]


# --- reductions
def _unreduce(ct, x, axes):
    """Broadcast a reduced cotangent back over the reduced axes of x."""
    kept = tuple(d for d in range(x.ndim) if d not in axes)
    return _one(st.broadcast_in_dim, ct, shape=x.shape, broadcast_dimensions=kept)


def _reduce_sum_vjp(cts, ins, outs, axes):
    return [_unreduce(cts[0], ins[0], axes)]


def _reduce_chosen_vjp(cts, ins, outs, axes):
    (ct,), (x,), (y,) = cts, ins, outs
    mask = jnp.equal(x, _unreduce(y, x, axes)).astype(x.dtype)
    count = _unreduce(jnp.sum(mask, axis=axes), x, axes)
    return [jnp.multiply(_unreduce(ct, x, axes), jnp.divide(mask, count))]


def _reduce_prod_vjp(cts, ins, outs, axes):
    (ct,), (x,) = cts, ins
    return [jnp.multiply(_unreduce(ct, x, axes), J.prod_of_others(x, axes))]


vjp_rules["reduce_sum"] = _reduce_sum_vjp
vjp_rules["reduce_max"] = _reduce_chosen_vjp
vjp_rules["reduce_min"] = _reduce_chosen_vjp
vjp_rules["reduce_prod"] = _reduce_prod_vjp
vjp_rules["cumsum"] = lambda cts, ins, outs, axis, reverse=False: [
    _one(rd.cumsum, cts[0], axis=axis, reverse=not reverse)]


# --- dot_general: each operand's cotangent is another dot_general, then a transpose
def _ranges(*lengths):
    start, out = 0, []
    for n in lengths:
        out.append(list(range(start, start + n)))
        start += n
    return out


def _free(ndim, *used):
    taken = set().union(*map(set, used))
    return [d for d in range(ndim) if d not in taken]


def _dot_ct_lhs(ct, x, y, dimension_numbers, preferred_element_type, swap_ans=False):
    (xc, yc), (xb, yb) = dimension_numbers
    x_kept = _free(x.ndim, xc, xb)
    y_kept = _free(y.ndim, yc, yb)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges(len(xb), len(y_kept), len(x_kept))
    else:
        ans_batch, _, ans_y = _ranges(len(xb), len(x_kept), len(y_kept))
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(yb)))
    xc_by_y = [xc[i] for i in np.argsort(yc)]
    out_axes = tuple(int(i) for i in np.argsort(list(xb) + x_kept + xc_by_y))
    ct = jnp.asarray(ct, dtype=y.dtype)
    prod = _one(la.dot_general, ct, y, dimension_numbers=dims)
    return jnp.transpose(prod, out_axes).astype(x.dtype)


def _dot_vjp(cts, ins, outs, dimension_numbers, preferred_element_type=None):
    (ct,), (x, y) = cts, ins
    (xc, yc), (xb, yb) = dimension_numbers
    swapped = ((yc, xc), (yb, xb))
    return [_dot_ct_lhs(ct, x, y, dimension_numbers, preferred_element_type),
            _dot_ct_lhs(ct, y, x, swapped, preferred_element_type, swap_ans=True)]


vjp_rules["dot_general"] = _dot_vjp


def _cumulative_vjp(name):
    def rule(cts, ins, outs, axis, reverse=False):
        _, _, (x,), pullback = vjp_function(
            lambda v: J.doubling_scan(v, axis, reverse, name), (ins[0],))
        (ct,) = pullback([cts[0]])
        # an integer input takes no cotangent: backward drops whatever comes back
        return [zeros_like(x) if ct is None and dtypes.is_inexact(get_aval(x).dtype) else ct]
    return rule


for _name in J._CUMULATIVE:
    vjp_rules[_name] = _cumulative_vjp(_name)
