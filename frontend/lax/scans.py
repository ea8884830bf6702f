"""jax.lax's scans, selections and generic reductions: associative_scan,
cumlogsumexp, top_k, select_n, reduce, reduce_and/or/xor, optimization_barrier.

associative_scan is the classic log-depth odd/even scheme over strided slices (as
JAX's): combine neighbouring pairs, scan the half-length result recursively, then
fill in the remaining positions. Generic reductions combine halves pairwise (a
log-depth tree, in order, so an associative but not commutative combiner works)."""
from __future__ import annotations

import numpy as np

from .. import dtypes, tree
from ..core import Tracer, trace
from ..errors import ShapeError
from ..ir import ShapedArray
from ..numpy._util import broadcast_to, canonical_axis, shape_of
from ..numpy.creation import _wrap_public
from . import ops
from .extras import _kind, _value, operands
from .shapes import slice_in_dim


# ---------------------------------------------------------------- associative scan

def _interleave(evens, odds, axis):
    """e0 o0 e1 o1 ... along axis (evens has as many entries as odds, or one more)."""
    ne, no = shape_of(evens)[axis], shape_of(odds)[axis]
    if ne == no + 1:          # pad odds with any one entry, dropped after the merge
        odds = ops.concatenate([odds, slice_in_dim(evens, 0, 1, 1, axis)], axis)
    both = ops.concatenate([ops.expand_dims(evens, (axis + 1,)),
                            ops.expand_dims(odds, (axis + 1,))], axis + 1)
    s = shape_of(evens)
    merged = ops.reshape(both, s[:axis] + (2 * s[axis],) + s[axis + 1:])
    return slice_in_dim(merged, 0, ne + no, 1, axis)


def _flat_combine(fn, td, who: str, like: str):
    """fn on two pytrees of td's structure, as a function of flat leaf lists."""
    def combine(a, b):
        flat, out_td = tree.flatten(fn(tree.unflatten(td, a), tree.unflatten(td, b)))
        if out_td != td:
            raise ShapeError(f"jx.lax.{who} must return a pytree like {like} ({td}), "
                             f"got {out_td}")
        return [_value(v) for v in flat]
    return combine


def associative_scan(fn, elems, reverse: bool = False, axis: int = 0):
    """Inclusive scan of elems (a pytree of arrays of one length along axis) with
    the associative fn(a, b) -> c on pytrees like elems, applied to whole slices."""
    leaves, td = tree.flatten(elems)
    if not leaves:
        raise ValueError("jx.lax.associative_scan: elems has no arrays")
    leaves = [_value(v) for v in leaves]
    ax = canonical_axis(axis, len(shape_of(leaves[0])))
    lengths = {shape_of(v)[ax] if len(shape_of(v)) > ax else None for v in leaves}
    if len(lengths) != 1 or None in lengths:
        raise ValueError(f"jx.lax.associative_scan: every array of elems must have one "
                         f"length along axis {axis}, got shapes "
                         f"{[shape_of(v) for v in leaves]}")

    combine = _flat_combine(fn, td, "associative_scan: fn", "elems")

    def sl(xs, start, stop, stride=1):
        return [slice_in_dim(x, start, stop, stride, ax) for x in xs]

    def scan(xs):
        n = shape_of(xs[0])[ax]
        if n < 2:
            return xs
        pairs = combine(sl(xs, 0, n - 1, 2), sl(xs, 1, n, 2))    # x0+x1, x2+x3, ...
        odd = scan(pairs)                                          # prefixes ending odd
        if n % 2 == 0:
            even = combine(sl(odd, 0, shape_of(odd[0])[ax] - 1), sl(xs, 2, n, 2))
        else:
            even = combine(odd, sl(xs, 2, n, 2))
        even = [ops.concatenate([first, e], ax) for first, e in zip(sl(xs, 0, 1), even)]
        return [_interleave(e, o, ax) for e, o in zip(even, odd)]

    if reverse:
        leaves = [ops.rev(v, (ax,)) for v in leaves]
    out = scan(leaves)
    if reverse:
        out = [ops.rev(v, (ax,)) for v in out]
    return tree.unflatten(td, out)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """log(cumsum(exp(operand))) along axis, without overflow (float operands)."""
    from .. import numpy as jnp
    (x,) = operands("cumlogsumexp", [operand])
    ax = canonical_axis(axis, len(shape_of(x)))
    return associative_scan(jnp.logaddexp, x, reverse=reverse, axis=ax)


# ---------------------------------------------------------------- top_k

def top_k(operand, k: int, *, axis: int = -1):
    """The k largest entries along axis, in descending order, and their int32
    indices; NaNs count as largest and ties keep the lower index first (JAX's)."""
    from ..numpy.sorting import sort_along
    x = _value(operand)
    s = shape_of(x)
    if not s:
        raise ValueError("jx.lax.top_k needs an operand of rank 1 or more")
    ax = canonical_axis(axis, len(s))
    k = int(k)
    if not 0 <= k <= s[ax]:
        raise ValueError(f"jx.lax.top_k: k must be in [0, {s[ax]}] (the size of axis "
                         f"{ax}), got {k}")
    # a stable ascending sort of the reversed array, read backwards: descending,
    # with equal keys in their original order
    idx = ops.broadcasted_iota(np.int32, s, ax)
    keys, pos = sort_along([ops.rev(x, (ax,)), ops.rev(idx, (ax,))], ax, 1, True)
    keys, pos = ops.rev(keys, (ax,)), ops.rev(pos, (ax,))
    return [slice_in_dim(keys, 0, k, 1, ax), slice_in_dim(pos, 0, k, 1, ax)]   # a list, as JAX


# ---------------------------------------------------------------- select_n

def select_n(which, *cases):
    """cases[which], elementwise: which is bool (two cases) or an integer array,
    a scalar or of the cases' shape; cases share one shape and dtype. Out-of-range
    integers pick the first or last case, as XLA's binary tree of selects does."""
    if not cases:
        raise ValueError("jx.lax.select_n needs at least one case")
    w = _value(which)
    vals = operands("select_n", list(cases), ("int", "float", "bool"), broadcast=False)
    shapes = {shape_of(v) for v in vals}
    if len(shapes) > 1:
        raise ShapeError(f"jx.lax.select_n: cases must have the same shapes, got "
                         f"{[shape_of(v) for v in vals]}")
    shape = shapes.pop()
    if _kind(w.dtype) == "float":
        raise ShapeError(f"jx.lax.select_n: which must be boolean or integer, got "
                         f"{np.dtype(w.dtype).name}")
    if shape_of(w) not in ((), shape):
        raise ShapeError(f"jx.lax.select_n: which must be a scalar or have the cases' "
                         f"shape {shape}, got {shape_of(w)}")
    if w.dtype == dtypes.bool_ and len(vals) > 2:
        raise ShapeError(f"jx.lax.select_n: a boolean which selects between two cases, "
                         f"got {len(vals)}")
    if len(vals) == 1:
        return vals[0]
    w = broadcast_to(w, shape, [v for v in [w, *vals] if isinstance(v, Tracer)])

    def pick(lo, hi):
        if hi - lo == 1:
            return vals[lo]
        mid = (lo + hi) // 2
        low = ops.bitwise_not(w) if w.dtype == dtypes.bool_ else ops.lt(w, mid)
        return ops.select(low, pick(lo, mid), pick(mid, hi))
    return pick(0, len(vals))


# ---------------------------------------------------------------- reductions

def _move_last(x, axes):
    """x with axes flattened into one last axis."""
    s = shape_of(x)
    keep = [d for d in range(len(s)) if d not in axes]
    y = ops.transpose(x, tuple(keep) + tuple(axes))
    return ops.reshape(y, tuple(s[d] for d in keep) + (int(np.prod([s[d] for d in axes])),))


def _tree_reduce(combine, xs, axes, inits):
    """combine folded over axes of the arrays xs (flat lists), pairwise in order,
    then applied once to the init values: combine(init, total)."""
    ys = [_move_last(x, axes) for x in xs]
    last = len(shape_of(ys[0])) - 1
    n = shape_of(ys[0])[last]
    out_shape = shape_of(ys[0])[:-1]
    if n == 0:
        tracers = [v for v in [*xs, *inits] if isinstance(v, Tracer)]
        return [broadcast_to(i, out_shape, tracers) for i in inits]
    while n > 1:
        m = n // 2
        a = [slice_in_dim(y, 0, 2 * m, 2, last) for y in ys]
        b = [slice_in_dim(y, 1, 2 * m, 2, last) for y in ys]
        pair = combine(a, b)
        if n % 2:
            pair = [ops.concatenate([p, slice_in_dim(y, n - 1, n, 1, last)], last)
                    for p, y in zip(pair, ys)]
        ys, n = pair, m + n % 2
    total = [ops.squeeze(y, (last,)) for y in ys]
    tracers = [v for v in [*total, *inits] if isinstance(v, Tracer)]
    return combine([broadcast_to(i, out_shape, tracers) for i in inits], total)


def _logical(name, prim_name):
    def fn(operand, axes):
        from .. import numpy as jnp
        (x,) = operands(name, [operand], ("bool", "int"))
        ax = tuple(canonical_axis(a, len(shape_of(x))) for a in axes)
        if x.dtype == dtypes.bool_ and prim_name != "xor":
            return (jnp.all if prim_name == "and" else jnp.any)(x, axis=ax)
        op = {"and": ops.bitwise_and, "or": ops.bitwise_or, "xor": ops.bitwise_xor}[prim_name]
        init = np.asarray(_MONOIDS["and"][0](x.dtype) if prim_name == "and" else 0, x.dtype)
        (out,) = _tree_reduce(lambda a, b: [op(a[0], b[0])], [x], ax, [init])
        return out
    fn.__name__ = name
    fn.__doc__ = f"Bitwise (or logical, for bools) {prim_name} over axes."
    return fn


reduce_and = _logical("reduce_and", "and")
reduce_or = _logical("reduce_or", "or")
reduce_xor = _logical("reduce_xor", "xor")

# the monoids jx reduces natively: primitive name -> (identity(dtype), reducer)
_MONOIDS = {
    "add": (lambda dt: 0, ops.reduce_sum),
    "mul": (lambda dt: 1, ops.reduce_prod),
    "max": (lambda dt: -np.inf if dtypes.is_float(dt) else
            False if dt == dtypes.bool_ else np.iinfo(dt).min, ops.reduce_max),
    "min": (lambda dt: np.inf if dtypes.is_float(dt) else
            True if dt == dtypes.bool_ else np.iinfo(dt).max, ops.reduce_min),
    "and": (lambda dt: True if dt == dtypes.bool_ else -1 if np.dtype(dt).kind == "i"
            else np.iinfo(dt).max, reduce_and),
    "or": (lambda dt: False if dt == dtypes.bool_ else 0, reduce_or),
}


def _monoid(computation, dt):
    """The primitive name when computation(a, b) on scalars of dtype dt is one
    monoid primitive applied to a and b (in either order), else None."""
    try:
        graph, consts = trace(lambda a, b: [computation(a, b)],
                              [ShapedArray((), dt), ShapedArray((), dt)], name="reduce")
    except Exception:       # not a scalar computation: the generic path reports it
        return None
    if consts or len(graph.eqns) != 1:
        return None
    eqn = graph.eqns[0]
    name = eqn.prim.name
    if name not in _MONOIDS or set(map(id, eqn.inputs)) != set(map(id, graph.inputs)) or \
            len(eqn.inputs) != 2 or graph.outputs[0] is not eqn.outputs[0]:
        return None
    return name


def reduce(operands_, init_values, computation, dimensions, out_sharding=None):
    """operands (a pytree of arrays of one shape) reduced over dimensions with
    computation(acc, x) -> acc (pytrees like operands) starting from init_values.

    A single operand whose computation is add, mul, max, min, and or or with that
    monoid's identity as init uses jx's reduction; any other associative
    computation is folded pairwise in a log-depth tree (init applied once)."""
    from ..core import known_value
    xs, td = tree.flatten(operands_)
    inits, itd = tree.flatten(init_values)
    if td != itd:
        raise ValueError(f"jx.lax.reduce: operands ({td}) and init_values ({itd}) must "
                         "have one tree structure")
    xs = [_value(x) for x in xs]
    inits = [_value(i) for i in inits]
    for i in inits:
        if shape_of(i) != ():
            raise ShapeError(f"jx.lax.reduce: init values must be scalars, got shape "
                             f"{shape_of(i)}")
    shapes = {shape_of(x) for x in xs}
    if len(shapes) != 1:
        raise ShapeError(f"jx.lax.reduce: operands must have one shape, got {sorted(shapes)}")
    nd = len(shapes.pop())
    axes = tuple(canonical_axis(d, nd) for d in dimensions)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"jx.lax.reduce: repeated dimension in {dimensions}")
    if len(xs) == 1:
        name = _monoid(computation, xs[0].dtype)
        init = known_value(inits[0])
        if name is not None and init is not None:
            ident, reducer = _MONOIDS[name]
            if np.asarray(init).item() == ident(xs[0].dtype) and \
                    not (name in ("and", "or") and dtypes.is_float(xs[0].dtype)):
                return tree.unflatten(td, [reducer(xs[0], axes)])
    for x, i in zip(xs, inits):        # (the monoids above take any identity, as JAX)
        if np.dtype(x.dtype) != np.dtype(i.dtype):
            raise ShapeError(f"jx.lax.reduce: each init value must have its operand's "
                             f"dtype, got {np.dtype(i.dtype).name} for "
                             f"{np.dtype(x.dtype).name} (Python scalars are int32/float32)")

    combine = _flat_combine(computation, td, "reduce: computation", "the operands")
    return tree.unflatten(td, _tree_reduce(combine, xs, axes, inits))


def optimization_barrier(operand, /):
    """The operand (any pytree) unchanged: jx has no cross-barrier scheduling to stop."""
    return tree.tree_map(lambda v: v if isinstance(v, Tracer) else _value(v), operand)


__all__ = ["associative_scan", "cumlogsumexp", "top_k", "select_n", "reduce", "reduce_and",
           "reduce_or", "reduce_xor", "optimization_barrier"]
_wrap_public(globals(), __all__)
