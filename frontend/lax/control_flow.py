"""Structured control flow: cond, switch, while_loop, fori_loop, scan, map.

Each user function is traced once (core.trace) on the abstract values of its
pytree arguments into a closed sub-Graph held by a control-flow primitive.
Tracers it captured from enclosing traces come back as consts and become the
primitive's leading operands. When no argument is traced, bind runs the
primitive's NumPy reference, so these also work eagerly on NumPy inputs;
once jx.eager is loaded (with jx's API) such eager calls run compiled instead
(EAGER_RUNNER below).

Carries follow JAX: a weakly typed init (a Python scalar) takes the dtype the
body gives it; any other change of a carry's shape or dtype is an error that
names the carry leaf and both types.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .. import dtypes, flags, tree
from ..core import Tracer, bind, get_aval, trace
from ..errors import JxError, ShapeError, user_location
from ..ir import Graph, ShapedArray, Var
from ..numpy._util import as_value, convert, is_scalar_const
from ..prims.control import cond_p, scan_p, while_p

# ---------------------------------------------------------------- eager hook

# Called as EAGER_RUNNER(prim, operands, params) -> list of outputs when a
# control-flow primitive is bound with no Tracer among its operands (captured
# tracers are operands too, so a closure over a traced value never lands here).
# jx.eager (API layer) fills it to compile the primitive once per signature;
# unfilled (jx.lax alone), bind runs the NumPy reference interpreter. This
# module sits below jx.jit, so it holds the hook and never imports its filler.
EAGER_RUNNER = None


def _bind(prim, *operands, **params) -> list:
    runner = EAGER_RUNNER
    if runner is not None and not any(isinstance(x, Tracer) for x in operands):
        return runner(prim, operands, params)
    return bind(prim, *operands, **params)


# ---------------------------------------------------------------- disable_jit

# With jax_disable_jit on, control flow on concrete values runs as Python (a
# Python `if`, `for`, `while`), as JAX's does: the functions see concrete values,
# so print() and breakpoints in a body work while debugging.


def _as_python(*values) -> bool:
    return flags.STATE.disable_jit and not any(
        isinstance(v, Tracer) for v in tree.tree_leaves(values))


def _python_scan(f, init, xs, length, reverse):
    leaves, td = tree.flatten(xs)
    n = length if length is not None else (np.shape(leaves[0])[0] if leaves else 0)
    carry, ys = init, []
    for i in (reversed(range(n)) if reverse else range(n)):
        carry, y = f(carry, tree.unflatten(td, [leaf[i] for leaf in leaves]))
        ys.append(y)
    if reverse:
        ys.reverse()
    from .. import numpy as jnp
    y_leaves = [tree.flatten(y)[0] for y in ys]
    stacked = [jnp.stack(column) for column in zip(*y_leaves)]
    return carry, tree.unflatten(tree.flatten(ys[0])[1], stacked)


# ---------------------------------------------------------------- helpers


def _leaf_names(td: tree.TreeDef, root: str) -> list:
    """A readable path per leaf (carry[0]['w'], carry.field) for error messages."""
    if td.kind is None:
        return [root]
    out: list = []
    fields = getattr(td.kind, "_fields", None)
    for i, child in enumerate(td.children):
        if td.kind is dict:
            key = f"[{td.aux[i]!r}]"
        elif fields is not None:
            key = f".{fields[i]}"
        else:
            key = f"[{i}]"
        out.extend(_leaf_names(child, root + key))
    return out


def _flat_values(x) -> tuple:
    """Leaves as values (Tracers, NumPy arrays, Python scalars) and the treedef."""
    leaves, td = tree.flatten(x)
    return [_value(v, "argument") for v in leaves], td


def _value(x, what: str):
    if isinstance(x, Tracer) or is_scalar_const(x):
        return x
    try:
        return as_value(x)
    except (TypeError, ValueError):
        raise JxError(f"{what} {type(x).__name__} {x!r} is not an array or a number; "
                      "control-flow functions take and return pytrees of arrays") from None


def _trace_flat(fun: Callable, in_tree, in_avals, what: str) -> tuple:
    """Trace fun(unflattened args) -> (Graph, consts, out treedef).

    `fun` receives the pytree rebuilt from in_tree; captured outer tracers are
    the consts, matching the graph's leading inputs.
    """
    box: list = []

    def flat_fun(*args):
        out = fun(tree.unflatten(in_tree, args))
        leaves, out_td = tree.flatten(out)
        box.append(out_td)
        return [_value(v, f"{what} returned") for v in leaves]

    graph, consts = trace(flat_fun, in_avals, name=what)
    return graph, consts, box[0]


def _with_consts(graph: Graph, own: Sequence, all_consts: Sequence) -> Graph:
    """graph (taking its own consts first) re-typed to take all_consts first."""
    mine = {id(c): v for c, v in zip(own, graph.inputs)}
    ins = [mine.get(id(c)) or Var(c.aval) for c in all_consts]
    return Graph(tuple(ins) + tuple(graph.inputs[len(own):]), graph.eqns, graph.outputs)


def _union_consts(const_lists) -> list:
    seen: dict = {}
    for consts in const_lists:
        for c in consts:
            seen.setdefault(id(c), c)  # keyed like core's captures: by tracer
    return list(seen.values())


def _promote_weak(in_avals, out_avals) -> list | None:
    """New carry avals where a weak init must take the body's dtype (JAX's rule)."""
    new, changed = list(in_avals), False
    for i, (a, b) in enumerate(zip(in_avals, out_avals)):
        if a.weak_type and a.shape == b.shape and a.dtype != b.dtype:
            dt, weak = dtypes.result_type((a.dtype, True), (b.dtype, b.weak_type))
            if dt != a.dtype:
                new[i], changed = ShapedArray(a.shape, dt, weak), True
    return new if changed else None


def _check_carry(what: str, names, in_avals, out_avals) -> None:
    for name, a, b in zip(names, in_avals, out_avals):
        if not a.same_type(b):
            which = "shapes" if a.shape != b.shape else "dtypes"
            raise ShapeError(
                f"{what} output and input must have identical types: the input carry "
                f"component {name} has type {a} but the corresponding output carry "
                f"component has type {b}, so the {which} do not match. Keep each carry's "
                "shape and dtype fixed across iterations (cast with .astype(...) or "
                "jx.lax.convert_element_type)" + _at())


def _check_tree(what: str, got, want, want_label: str) -> None:
    if got != want:
        raise ShapeError(f"{what} must return the same pytree structure as {want_label}: "
                         f"got {got}, expected {want}" + _at())


def _at() -> str:
    """Where the user called the loop or cond: these errors are found after their
    function returned, so the traceback no longer shows its lines."""
    where = user_location()
    return f" (at {where})" if where else ""


def _fun_name(f, default: str) -> str:
    return getattr(f, "__name__", default)


# ---------------------------------------------------------------- cond / switch


def switch(index, branches: Sequence[Callable], *operands):
    """branches[clamp(index, 0, len(branches) - 1)](*operands), as one primitive."""
    branches = tuple(branches)
    if not branches or not all(callable(b) for b in branches):
        raise JxError("switch needs a non-empty sequence of callables as branches")
    index = _value(index, "switch index")
    aval = get_aval(index)
    if aval.shape != () or not dtypes.is_int(aval.dtype):
        raise ShapeError(f"switch index must be an integer scalar, got {aval}; use "
                         "jx.lax.cond for a bool predicate")
    if len(branches) == 1:
        return branches[0](*operands)
    n = len(branches)
    if _as_python(index, operands):
        return branches[int(np.clip(np.asarray(index), 0, n - 1))](*operands)
    if not isinstance(index, Tracer):
        index = np.int32(np.clip(np.asarray(index), 0, n - 1))  # clamp before narrowing
    elif aval.dtype != dtypes.int32:
        from .. import numpy as jnp
        index = convert(jnp.clip(index, 0, n - 1), dtypes.int32)
    return _cond_switch(index, branches, operands, "switch",
                        [f"branch {i}" for i in range(n)])


def cond(pred, true_fun, false_fun, *operands):
    """true_fun(*operands) if pred else false_fun(*operands); both are traced.

    Also accepts the old form cond(pred, true_operand, true_fun, false_operand, false_fun).
    """
    if not callable(true_fun) and callable(false_fun) and len(operands) == 2 \
            and callable(operands[1]):
        true_op, tf, false_op, ff = true_fun, false_fun, operands[0], operands[1]
        return cond(pred, lambda t, f: tf(t), lambda t, f: ff(f), true_op, false_op)
    if not (callable(true_fun) and callable(false_fun)):
        raise JxError("cond(pred, true_fun, false_fun, *operands): true_fun and false_fun "
                      "must be callables")
    pred = _value(pred, "cond predicate")
    aval = get_aval(pred)
    if aval.shape != ():
        raise ShapeError(f"cond predicate must be a scalar, got {aval}; use "
                         "jx.numpy.where for an elementwise choice")
    if _as_python(pred, operands):
        return (true_fun if bool(np.asarray(pred)) else false_fun)(*operands)
    if aval.dtype != dtypes.bool_:
        from .. import numpy as jnp
        pred = jnp.not_equal(pred, 0)
    index = convert(pred, dtypes.int32)
    return _cond_switch(index, (false_fun, true_fun), operands, "cond",
                        ("false_fun", "true_fun"))


def _cond_switch(index, branches, operands, what: str, labels):
    """Trace every branch on the operands' avals, give them common consts, bind cond."""
    leaves, in_tree = _flat_values(tuple(operands))
    in_avals = [get_aval(v) for v in leaves]
    traced = []
    for f, label in zip(branches, labels):
        name = f"{what} {label} ({_fun_name(f, 'branch')})"
        traced.append(_trace_flat(lambda ops, f=f: f(*ops), in_tree, in_avals, name))
    g0, _, td0 = traced[0]
    names = _leaf_names(td0, "output")
    for label, (g, _, td) in zip(labels[1:], traced[1:]):
        _check_tree(f"{what} {label}", td, td0, labels[0])
        for name, a, b in zip(names, g0.out_avals, g.out_avals):
            if not a.same_type(b):
                raise ShapeError(f"{what} branches must return identical types: {label} "
                                 f"{name} has type {b} but {labels[0]} {name} has type {a}; "
                                 "cast one of them (e.g. .astype) so they match" + _at())
    consts = _union_consts([c for _, c, _ in traced])
    graphs = tuple(_with_consts(g, c, consts) for g, c, _ in traced)
    outs = _bind(cond_p, index, *consts, *leaves, branches=graphs)
    return tree.unflatten(td0, outs)


# ---------------------------------------------------------------- while


def _trace_loop(body: Callable, carry_tree, carry_avals, what: str, carry_of: Callable,
                extra_avals=()) -> tuple:
    """Trace body(carry, extra) until weak inits settle; carry_of(out treedef) must
    equal carry_tree. Returns (graph, consts, out treedef, carry avals)."""
    in_tree = tree.TreeDef(tuple, 2, (carry_tree, tree.TreeDef(
        tuple, len(extra_avals), (tree.LEAF,) * len(extra_avals))))
    while True:  # each round only moves a weak carry up the dtype lattice: it ends
        graph, consts, out_td = _trace_flat(lambda a: body(*a), in_tree,
                                            list(carry_avals) + list(extra_avals), what)
        _check_tree(what, carry_of(out_td), carry_tree, "the carry init")
        new = _promote_weak(carry_avals, graph.out_avals[:len(carry_avals)])
        if new is None:
            break
        carry_avals = new
    return graph, consts, out_td, carry_avals


def _init_operands(leaves, avals) -> list:
    return [convert(v, a.dtype) if get_aval(v).dtype != a.dtype else v
            for v, a in zip(leaves, avals)]


def _while(cond_fun, body_fun, init_val, label: str = "while_loop", names=None):
    leaves, td = _flat_values(init_val)
    avals = [get_aval(v) for v in leaves]
    names = names or _leaf_names(td, "init_val")
    what = f"{label} body_fun ({_fun_name(body_fun, 'body_fun')})"
    body_graph, bconsts, _, avals = _trace_loop(
        lambda c, extra: body_fun(c), td, avals, what, lambda out_td: out_td)
    _check_carry(f"{label} body_fun", names, avals, body_graph.out_avals)
    cwhat = f"{label} cond_fun ({_fun_name(cond_fun, 'cond_fun')})"
    cond_graph, cconsts, cond_td = _trace_flat(cond_fun, td, avals, cwhat)
    couts = cond_graph.out_avals
    if cond_td != tree.LEAF or couts[0].shape != () or couts[0].dtype != dtypes.bool_:
        got = ", ".join(str(a) for a in couts) if cond_td.num_leaves else str(cond_td)
        raise ShapeError(f"{label} cond_fun must return a bool[] scalar, got {got}; "
                         "reduce it (e.g. jx.numpy.all) or compare to get a scalar bool"
                         + _at())
    outs = _bind(while_p, *cconsts, *bconsts, *_init_operands(leaves, avals),
                 cond_graph=cond_graph, body_graph=body_graph,
                 cond_nconsts=len(cconsts), body_nconsts=len(bconsts))
    return tree.unflatten(td, outs)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """val = init_val; while cond_fun(val): val = body_fun(val); return val."""
    if _as_python(init_val):
        val = init_val
        while bool(np.asarray(cond_fun(val))):
            val = body_fun(val)
        return val
    return _while(cond_fun, body_fun, init_val)


# ---------------------------------------------------------------- scan


def _check_unroll(unroll) -> None:
    # unroll is a code-generation hint only; the primitive does not carry it
    if isinstance(unroll, bool) or (isinstance(unroll, (int, np.integer)) and unroll >= 1):
        return
    raise JxError(f"scan unroll must be a positive int or a bool, got {unroll!r}")


def _scan(f, init, xs, length, reverse, what: str, names=None):
    carry, carry_td = _flat_values(init)
    xs_leaves, xs_td = _flat_values(xs)
    x_avals = []
    for k, x in enumerate(xs_leaves):
        a = get_aval(x)
        if a.ndim == 0:
            raise ShapeError(f"{what} xs leaf {k} is a scalar ({a}); every xs leaf needs a "
                             "leading axis to scan over")
        x_avals.append(a.update(shape=a.shape[1:], weak_type=False))
    lengths = sorted({get_aval(x).shape[0] for x in xs_leaves})
    if length is not None:
        if not isinstance(length, (int, np.integer)) or isinstance(length, bool) or length < 0:
            raise JxError(f"{what} length must be a non-negative int, got {length!r}")
        length = int(length)
    if len(lengths) > 1 or (lengths and length is not None and lengths[0] != length):
        given = f" and length={length}" if length is not None else ""
        raise ShapeError(f"{what} got xs with leading axis sizes {lengths}{given}; all xs "
                         "leaves must share one leading axis length")
    if length is None:
        if not lengths:
            raise JxError(f"{what} needs length= when xs is None or has no leaves")
        length = lengths[0]
    c_avals = [get_aval(v) for v in carry]
    names = names or _leaf_names(carry_td, "carry")
    fname = f"{what} body ({_fun_name(f, 'f')})"

    def body(c, x_flat):
        out = f(c, tree.unflatten(xs_td, x_flat))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise JxError(f"{fname} must return a pair (new_carry, y), got {out!r}")
        return tuple(out)

    graph, consts, out_td, c_avals = _trace_loop(body, carry_td, c_avals, fname,
                                                 lambda td: td.children[0], x_avals)
    _check_carry(f"{what} body", names, c_avals, graph.out_avals[:len(c_avals)])
    outs = _bind(scan_p, *consts, *_init_operands(carry, c_avals), *xs_leaves,
                 body=graph, num_consts=len(consts), num_carry=len(carry), length=length,
                 reverse=bool(reverse))
    return (tree.unflatten(carry_td, outs[:len(carry)]),
            tree.unflatten(out_td.children[1], outs[len(carry):]))


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1):
    """Loop f(carry, x) -> (carry, y) over the leading axis of xs.

    Returns (final carry, ys stacked on a new leading axis). With reverse=True
    the loop runs from the end and ys[i] is still the result for xs[i].
    """
    _check_unroll(unroll)
    if _as_python(init, xs) and (length or tree.tree_leaves(xs)):
        n = length if length is not None else np.shape(tree.tree_leaves(xs)[0])[0]
        if n:          # (an empty scan still needs the trace for its ys' types)
            return _python_scan(f, init, xs, length, reverse)
    return _scan(f, init, xs, length, reverse, "scan")


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """val = init_val; for i in range(lower, upper): val = body_fun(i, val).

    Static (Python or NumPy) bounds lower to a scan of length upper - lower, so
    the loop stays reverse-differentiable; traced bounds lower to while.
    """
    if unroll is not None:
        _check_unroll(unroll)
    lower, upper = _value(lower, "fori_loop lower"), _value(upper, "fori_loop upper")
    for b in (lower, upper):
        if get_aval(b).shape != () or not dtypes.is_int(get_aval(b).dtype):
            raise ShapeError(f"fori_loop bounds must be integer scalars, got {get_aval(b)}")
    if _as_python(lower, upper, init_val):
        val = init_val
        for i in range(int(np.asarray(lower)), int(np.asarray(upper))):
            val = body_fun(i, val)
        return val
    from .. import numpy as jnp
    val_names = _leaf_names(tree.tree_structure(init_val), "init_val")
    names = ["loop index"] + val_names
    if not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
        dt, _ = dtypes.result_type(*[(get_aval(b).dtype, get_aval(b).weak_type)
                                     for b in (lower, upper)])
        lo, hi = int(np.asarray(lower)), int(np.asarray(upper))

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None
        (_, val), _ = _scan(step, (np.asarray(lo, dt), init_val), None, max(0, hi - lo),
                            False, "fori_loop", names)
        return val
    lower, upper = jnp.asarray(lower), jnp.asarray(upper)
    dt, _ = dtypes.result_type((lower.dtype, False), (upper.dtype, False))
    lower, upper = convert(lower, dt), convert(upper, dt)

    def body(carry):
        i, val = carry
        return i + 1, body_fun(i, val)
    _, val = _while(lambda c: c[0] < upper, body, (lower, init_val), "fori_loop", names)
    return val


def map(f: Callable, xs):  # noqa: A001  (lax.map shadows the builtin, as in JAX)
    """[f(x) for x in xs] along the leading axis, as a scan."""
    if _as_python(xs) and tree.tree_leaves(xs) and np.shape(tree.tree_leaves(xs)[0])[0]:
        return _python_scan(lambda c, x: (c, f(x)), None, xs, None, False)[1]
    _, ys = _scan(lambda c, x: (c, f(x)), None, xs, None, False, "map")
    return ys


__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map"]
