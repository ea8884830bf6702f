"""jax.lax.reduce_window: reductions over sliding windows (pooling), with JAX's
signature, padding strings and errors.

A single operand reduced by add, mul, max or min (lax's, jax.numpy's, operator's,
or any function that traces to the one primitive) becomes one of the primitives
reduce_window_{sum,prod,max,min}; an init value other than the monoid's identity
is combined once with the window's result (the padding and the holes of base
dilation are skipped, as XLA skips them). Any other computation (a function of
two scalars, or of two pytrees like the operand) is folded over the window's taps
in row-major order, starting from the init value, as XLA's reduce_window does:
acc = computation(acc, tap), skipping padding and holes. The computation is
traced once on scalars, as JAX calls it, and that scalar program is applied to
whole arrays of taps: it may use any elementwise operation (every jax.lax and
jax.numpy elementwise function), and anything else is an error naming it.

The helpers below (dilate_pad, taps, full) stage windows out of pads and strided
slices; the expand pass and the transformation rules build on them.
"""
from __future__ import annotations

import itertools
import operator

import numpy as np

from .. import dtypes, tree
from ..core import Primitive, Tracer, bind_like, known_value, trace
from ..ir import Literal, ShapedArray
from ..numpy._util import bind1, shape_of
from ..numpy.creation import _wrap_public
from ..prims import elementwise as ew
from ..prims import structural as st
from ..prims import windowed as wp
from .convolution import padtype_to_pads
from .extras import _value
from .scans import _monoid

# computation (as its primitive) -> (the primitive's kind, its window primitive)
_WINDOW_MONOIDS = {"add": ("sum", wp.reduce_window_sum), "mul": ("prod", wp.reduce_window_prod),
                   "max": ("max", wp.reduce_window_max), "min": ("min", wp.reduce_window_min)}
_COMBINE = {"sum": ew.add, "prod": ew.mul, "max": ew.max_, "min": ew.min_}


# ------------------------------------------------------------------ params

def _int_tuple(name, values):
    try:
        out = tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"reduce_window {name} must be a sequence of integers, got "
                        f"{values!r}") from None
    return out


def window_params(shape, window_dimensions, window_strides=None, padding="VALID",
                  base_dilation=None, window_dilation=None) -> dict:
    """The primitives' params (tuples, one entry per dim) from reduce_window's
    arguments, checked with JAX's errors."""
    n = len(shape)
    wd = _int_tuple("window_dimensions", window_dimensions)
    if len(wd) != n:
        raise TypeError(f"reduce_window got the wrong number of window_dimensions for "
                        f"operand: got operand shape {tuple(shape)} with window_dimensions "
                        f"{wd}.")
    named = {}
    for name, v in (("window_strides", window_strides), ("base_dilation", base_dilation),
                    ("window_dilation", window_dilation)):
        named[name] = (1,) * n if v is None else _int_tuple(name, v)
        if len(named[name]) != n:
            raise TypeError(f"reduce_window got inconsistent {name} and window_dimensions: "
                            f"got {name} {named[name]} and window_dimensions {wd}.")
    for name, v in (("window_dimensions", wd), *named.items()):
        if any(d < 1 for d in v):
            raise TypeError(f"reduce_window {name} must have every element be positive, "
                            f"got {v}.")
    if isinstance(padding, str):
        span = [(w - 1) * r + 1 for w, r in zip(wd, named["window_dilation"])]
        pads = tuple(tuple(p) for p in padtype_to_pads(shape, span, named["window_strides"],
                                                       padding))
    else:
        try:
            pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise TypeError(f"reduce_window padding must be 'VALID', 'SAME', 'SAME_LOWER' or "
                            f"a sequence of (low, high) integer pairs, got {padding!r}") from None
        if len(pads) != n:
            raise TypeError(f"reduce_window padding needs one (low, high) pair per operand "
                            f"dim ({n}), got {padding!r}")
    return dict(window_dimensions=wd, window_strides=named["window_strides"], padding=pads,
                base_dilation=named["base_dilation"],
                window_dilation=named["window_dilation"])


def out_shape(shape, p) -> tuple:
    return wp.window_shape(shape, p["window_dimensions"], p["window_strides"], p["padding"],
                           p["base_dilation"], p["window_dilation"])


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The shape reduce_window gives an operand of operand_shape (padding as pairs)."""
    p = window_params(tuple(operand_shape), window_dimensions, window_strides, padding,
                      base_dilation, window_dilation)
    return out_shape(tuple(operand_shape), p)


# ------------------------------------------------------------------ staged helpers

def full(like, shape, value, dtype):
    """value (a scalar, traced or not) broadcast to shape, staged with `like`."""
    if isinstance(value, Tracer):
        return bind1(st.broadcast_in_dim, value, shape=tuple(shape), broadcast_dimensions=())
    return bind_like((like,), st.broadcast_in_dim, np.asarray(value, dtype),
                     shape=tuple(shape), broadcast_dimensions=())[0]


def dilate_pad(x, fill, padding, base_dilation):
    """x with base_dilation - 1 holes between elements and the edge padding
    (negative crops), the new places holding fill (a scalar, traced or not)."""
    if all(lo == hi == 0 for lo, hi in padding) and all(b == 1 for b in base_dilation):
        return x
    if not isinstance(fill, Tracer):
        fill = np.asarray(fill, x.dtype)
    return bind1(st.pad, x, fill, padding_config=tuple(
        (lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)))


def tap_positions(window_dimensions) -> list:
    """The window's taps in row-major order (XLA's order of reduction)."""
    return list(itertools.product(*[range(w) for w in window_dimensions]))


def tap(xp, pos, out, window_strides, window_dilation):
    """The strided slice of the padded xp holding tap `pos` of every window (out
    must have no zero dims)."""
    start = tuple(j * r for j, r in zip(pos, window_dilation))
    limit = tuple(b + (m - 1) * s + 1 for b, m, s in zip(start, out, window_strides))
    if start == (0,) * len(start) and limit == tuple(shape_of(xp)) and \
            all(s == 1 for s in window_strides):
        return xp
    return bind1(st.slice_, xp, start_indices=start, limit_indices=limit,
                 strides=tuple(window_strides))


def fold_taps(x, kind, p):
    """The windowed reduction `kind` of x as pads, strided slices and the
    elementwise op, folded tap by tap in XLA's order (one fused loop)."""
    shape = out_shape(shape_of(x), p)
    ident = wp.identity(kind, x.dtype)
    if 0 in shape:
        return full(x, shape, ident, x.dtype)
    xp = dilate_pad(x, ident, p["padding"], p["base_dilation"])
    acc = None
    for pos in tap_positions(p["window_dimensions"]):
        t = tap(xp, pos, shape, p["window_strides"], p["window_dilation"])
        acc = t if acc is None else bind1(_COMBINE[kind], acc, t)
    return acc


# ------------------------------------------------------------------ reduce_window

def _init_value(init, x):
    """init as a scalar of x's dtype: Python scalars convert (as JAX's weak types
    do), arrays must have x's dtype."""
    dt = np.dtype(x.dtype)
    if isinstance(init, (bool, int, float)) and not isinstance(init, np.generic):
        if isinstance(init, float) and not dtypes.is_float(dt):
            raise TypeError(f"reduce_window got inconsistent dtypes for operands and "
                            f"init_values: a float init_value {init!r} for an operand of "
                            f"{dt.name}")
        if isinstance(init, int) and not isinstance(init, bool) and dtypes.is_int(dt):
            info = np.iinfo(dt)
            if not info.min <= init <= info.max:
                raise OverflowError(f"reduce_window init_value {init} does not fit in "
                                    f"{dt.name}, the operand's dtype")
        return np.asarray(init, dt)
    v = _value(init)
    if shape_of(v) != ():
        raise TypeError(f"reduce_window expected init_values to be scalars but init_values "
                        f"have shapes {[shape_of(v)]}.")
    if np.dtype(v.dtype) != dt:
        if getattr(v, "weak_type", False) or getattr(v, "_weak", False):
            return bind1(ew.convert_element_type, v, new_dtype=dt)
        raise TypeError(f"reduce_window got inconsistent dtypes for operands and "
                        f"init_values: got operand dtypes [{dt.name}] and init_value dtypes "
                        f"[{np.dtype(v.dtype).name}].")
    return v


def _monoid_kind(computation, dt):
    name = _monoid(computation, dt)
    if dt == dtypes.bool_:           # on bools jnp.maximum / | trace to or, minimum / & to and
        name = {"or": "max", "and": "min", "add": None, "mul": None}.get(name, name)
    return _WINDOW_MONOIDS.get(name)


def _reduce_monoid(x, init, kind, prim, p):
    out = bind1(prim, x, **p)
    if not isinstance(init, Tracer) and np.array_equal(
            known_value(init), wp.identity(kind, x.dtype), equal_nan=True):
        return out
    # a non-identity init joins every window once (padding and holes skipped)
    return bind1(_COMBINE[kind], full(out, shape_of(out), init, x.dtype), out)


_ELEMENTWISE = frozenset(v.name for v in vars(ew).values() if isinstance(v, Primitive))
# on scalars these are the identity (jnp.sum of a scalar, a reshape to ())
_SCALAR_IDENTITY = frozenset({"reshape", "squeeze", "expand_dims", "broadcast_in_dim",
                              "reduce_sum", "reduce_max", "reduce_min", "reduce_prod",
                              "stop_gradient", "transpose"})


def _elementwise(computation, td, dts):
    """computation traced once on scalars (as JAX calls it), returned as a function
    applying that scalar program to whole arrays of taps: combine(acc, elems, shape)
    on flat lists. Only elementwise primitives may appear in it."""
    n = len(dts)

    def flat(*leaves):
        out, out_td = tree.flatten(computation(tree.unflatten(td, leaves[:n]),
                                               tree.unflatten(td, leaves[n:])))
        if out_td != td:
            raise TypeError(f"reduce_window computation must return a pytree like the "
                            f"operands ({td}), got {out_td}")
        return [_value(v) for v in out]
    avals = [ShapedArray((), dt) for dt in dts]
    graph, consts = trace(flat, avals + avals, name="reduce_window computation")
    for eqn in graph.eqns:
        name = eqn.prim.name
        scalar = all(a.aval.shape == () for a in (*eqn.inputs, *eqn.outputs))
        if not scalar or (name not in _ELEMENTWISE and name not in _SCALAR_IDENTITY):
            raise TypeError(f"reduce_window computation must be a function of scalars made "
                            f"of elementwise operations; it uses {name} on "
                            f"{', '.join(str(a.aval) for a in eqn.inputs)}")
    for o, dt in zip(graph.outputs, dts):
        if np.dtype(o.aval.dtype) != np.dtype(dt) or o.aval.shape != ():
            raise TypeError(f"reduce_window computation must return scalars of the operands' "
                            f"dtypes, got {o.aval} for {np.dtype(dt).name}")

    def combine(acc, elems, shape, like):
        env = {id(v): c for v, c in zip(graph.inputs, [*consts, *acc, *elems])}

        def read(a):
            if isinstance(a, Literal):
                return full(like, shape, a.val, a.aval.dtype)
            v = env[id(a)]
            return v if tuple(shape_of(v)) == tuple(shape) else full(like, shape, v, a.aval.dtype)
        for eqn in graph.eqns:
            ins = [read(a) for a in eqn.inputs]
            if eqn.prim.name in _ELEMENTWISE:
                outs = bind_like((like,), eqn.prim, *ins, **eqn.params)
            else:
                outs = ins[:1]
            env.update({id(v): o for v, o in zip(eqn.outputs, outs)})
        return [read(a) for a in graph.outputs]
    return combine


def _generic(xs, inits, combine, p):
    """XLA's reduce_window for any computation: acc = computation(acc, tap) over
    the window's taps in row-major order from the init values, skipping padding
    and the holes of base dilation."""
    shape = out_shape(shape_of(xs[0]), p)
    if 0 in shape:
        return [full(x, shape, i, x.dtype) for x, i in zip(xs, inits)]
    xps = [dilate_pad(x, i, p["padding"], p["base_dilation"]) for x, i in zip(xs, inits)]
    holes = any(lo > 0 or hi > 0 for lo, hi in p["padding"]) or \
        any(b > 1 for b in p["base_dilation"])
    if holes:
        # where the padded operand holds data: known at trace time
        shape_x = shape_of(xs[0])
        mask = wp._dilated_padded(np.ones(shape_x, bool), np.array(False), p["padding"],
                                  p["base_dilation"])
        real = full(xs[0], shape_x, True, np.bool_)
        real = dilate_pad(real, False, p["padding"], p["base_dilation"])
    acc = [full(x, shape, i, x.dtype) for x, i in zip(xs, inits)]
    for pos in tap_positions(p["window_dimensions"]):
        elems = [tap(xp, pos, shape, p["window_strides"], p["window_dilation"]) for xp in xps]
        new = combine(acc, elems, shape, xs[0])
        if holes:
            start = [j * r for j, r in zip(pos, p["window_dilation"])]
            sel = mask[tuple(slice(b, b + (m - 1) * s + 1, s) for b, m, s in
                             zip(start, shape, p["window_strides"]))]
            if not sel.all():
                keep = tap(real, pos, shape, p["window_strides"], p["window_dilation"])
                new = [bind1(ew.select, keep, v, a) for v, a in zip(new, acc)]
        acc = new
    return acc


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduce each window of operand (an array or pytree of arrays of one shape)
    with computation from init_value (a scalar or pytree like operand), as
    jax.lax.reduce_window: windows of window_dimensions taps every
    window_strides, padding 'VALID', 'SAME', 'SAME_LOWER' or (low, high) pairs,
    base_dilation (holes between operand elements) and window_dilation (holes
    between taps)."""
    xs, td = tree.flatten(operand)
    inits, itd = tree.flatten(init_value)
    if td != itd:
        raise ValueError(f"Operands must have the same tree structure as init_values: "
                         f"{td} vs. {itd}")
    if not xs:
        raise ValueError("reduce_window must have at least one operand.")
    xs = [_value(x) for x in xs]
    shapes = {tuple(shape_of(x)) for x in xs}
    if len(shapes) != 1:
        raise TypeError(f"reduce_window operands must have one shape, got {sorted(shapes)}")
    shape = shapes.pop()
    p = window_params(shape, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation)
    inits = [_init_value(i, x) for i, x in zip(inits, xs)]
    if len(xs) == 1:
        found = _monoid_kind(computation, np.dtype(xs[0].dtype))
        if found is not None and not (found[0] in ("sum", "prod") and
                                      xs[0].dtype == dtypes.bool_):
            kind, prim = found
            return tree.unflatten(td, [_reduce_monoid(xs[0], inits[0], kind, prim, p)])
    combine = _elementwise(computation, td, [np.dtype(x.dtype) for x in xs])
    return tree.unflatten(td, _generic(xs, inits, combine, p))


__all__ = ["reduce_window", "reduce_window_shape_tuple"]
_wrap_public(globals(), __all__)
