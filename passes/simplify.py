"""Simplification: algebraic rewrites, constant folding, CSE and DCE.

Transformed graphs are full of identities (x*1 from seeds, broadcasts of
broadcasts, transposes of transposes); these passes keep them small. Every
primitive is pure, so any equation whose outputs are unused can go.
"""
from __future__ import annotations

import numpy as np

from jx.core import PRIMITIVES
from jx.ir import Eqn, Graph, Literal, ShapedArray, Var, map_subgraphs, subgraphs

# ---------------------------------------------------------------- helpers


def _const_value(atom, defs: dict):
    """The scalar constant an atom is (seeing through broadcasts of literals), else None."""
    if isinstance(atom, Literal):
        return atom.val if atom.val.ndim == 0 else None
    eqn = defs.get(id(atom))
    if eqn is not None and eqn.prim.name == "broadcast_in_dim" and \
            isinstance(eqn.inputs[0], Literal) and eqn.inputs[0].val.ndim == 0:
        return eqn.inputs[0].val
    return None


def _is(atom, defs, value) -> bool:
    c = _const_value(atom, defs)
    return c is not None and bool(np.all(c == value))


# ---------------------------------------------------------------- algebraic rules
# rule(eqn, defs) -> an atom that replaces the (single) output, or None.

def _same_type(atom, eqn) -> bool:
    return atom.aval.same_type(eqn.outputs[0].aval)


def _identity_unless(pred):
    def rule(eqn, defs):
        x = eqn.inputs[0]
        return x if pred(eqn) and _same_type(x, eqn) else None
    return rule


def _right_unit(unit):
    def rule(eqn, defs):
        a, b = eqn.inputs
        return a if _is(b, defs, unit) and _same_type(a, eqn) else None
    return rule


def _both_unit(unit):
    def rule(eqn, defs):
        a, b = eqn.inputs
        if _is(b, defs, unit) and _same_type(a, eqn):
            return a
        if _is(a, defs, unit) and _same_type(b, eqn):
            return b
        return None
    return rule


def _neg_neg(eqn, defs):
    inner = defs.get(id(eqn.inputs[0]))
    if inner is not None and inner.prim.name == "neg":
        return inner.inputs[0]
    return None


ALGEBRAIC = {
    "add": _both_unit(0),
    "sub": _right_unit(0),
    "mul": _both_unit(1),
    "div": _right_unit(1),
    "neg": _neg_neg,
    "reshape": _identity_unless(lambda e: True),
    "transpose": _identity_unless(
        lambda e: tuple(e.params["permutation"]) == tuple(range(len(e.params["permutation"])))),
    "broadcast_in_dim": _identity_unless(lambda e: True),
    "convert_element_type": _identity_unless(lambda e: True),
    "squeeze": _identity_unless(lambda e: True),
    "expand_dims": _identity_unless(lambda e: True),
}


# Fusing rewrites: rule(eqn, defs) -> (inputs, params) of a cheaper equation of
# the same primitive, or None.
def _compose_transpose(eqn, defs):
    inner = defs.get(id(eqn.inputs[0]))
    if inner is None or inner.prim.name != "transpose":
        return None
    p_in, p_out = inner.params["permutation"], eqn.params["permutation"]
    return (inner.inputs[0],), {"permutation": tuple(p_in[i] for i in p_out)}


def _compose_reshape(eqn, defs):
    # squeeze and expand_dims are reshapes too
    inner = defs.get(id(eqn.inputs[0]))
    if inner is None or inner.prim.name not in ("reshape", "squeeze", "expand_dims"):
        return None
    return (inner.inputs[0],), dict(eqn.params)


def _compose_broadcast(eqn, defs):
    inner = defs.get(id(eqn.inputs[0]))
    if inner is None or inner.prim.name != "broadcast_in_dim":
        return None
    outer_dims = eqn.params["broadcast_dimensions"]
    dims = tuple(outer_dims[d] for d in inner.params["broadcast_dimensions"])
    return (inner.inputs[0],), {"shape": eqn.params["shape"], "broadcast_dimensions": dims}


def _free_dims(ndim, *used):
    taken = set(used[0]) | set(used[1])
    return [d for d in range(ndim) if d not in taken]


def _fold_dot_transpose(eqn, defs):
    """dot_general of a transposed operand reads the operand directly with remapped
    dimension numbers (when its free dims keep their order, so the output is the
    same), instead of materialising the transpose."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    dims = [[lc, lb], [rc, rb]]
    ins = list(eqn.inputs)
    changed = False
    for side in (0, 1):
        inner = defs.get(id(ins[side]))
        if inner is None or inner.prim.name != "transpose":
            continue
        perm = inner.params["permutation"]
        c, b = dims[side]
        free = _free_dims(len(perm), c, b)
        mapped_free = [perm[d] for d in free]
        if mapped_free != sorted(mapped_free):
            continue
        dims[side] = [tuple(perm[d] for d in c), tuple(perm[d] for d in b)]
        ins[side] = inner.inputs[0]
        changed = True
    if not changed:
        return None
    params = dict(eqn.params)
    params["dimension_numbers"] = ((tuple(dims[0][0]), tuple(dims[1][0])),
                                   (tuple(dims[0][1]), tuple(dims[1][1])))
    return tuple(ins), params


COMPOSE = {
    "dot_general": _fold_dot_transpose,
    "transpose": _compose_transpose,
    "reshape": _compose_reshape,
    "broadcast_in_dim": _compose_broadcast,
}


# Rewrites into another primitive: rule(eqn, defs) -> a replacement Eqn with the
# same outputs, or None.
def _transpose_of_dot(eqn, defs):
    """transpose(dot_general(a, b)) that swaps the two free-dim groups is
    dot_general(b, a): the product is written in the wanted layout directly
    (gradients of matmuls produce exactly this pattern)."""
    inner = defs.get(id(eqn.inputs[0]))
    if inner is None or inner.prim.name != "dot_general":
        return None
    lhs, rhs = inner.inputs
    (lc, rc), (lb, rb) = inner.params["dimension_numbers"]
    nb = len(lb)
    n_lf = lhs.aval.ndim - len(lc) - nb
    n_rf = rhs.aval.ndim - len(rc) - nb
    swapped = list(range(nb)) + [nb + n_lf + i for i in range(n_rf)] + \
        [nb + i for i in range(n_lf)]
    if tuple(eqn.params["permutation"]) != tuple(swapped):
        return None
    params = dict(inner.params)
    params["dimension_numbers"] = ((tuple(rc), tuple(lc)), (tuple(rb), tuple(lb)))
    return Eqn(inner.prim, (rhs, lhs), params, eqn.outputs, eqn.source)


def _outer_dot(eqn, defs):
    """dot_general with nothing to contract is an elementwise product of the two
    operands broadcast to the output (vmap of an outer product or of a scalar times
    a vector makes these): as mul it fuses with its neighbours instead of running
    as a batch of one-deep matrix products."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    out = eqn.outputs[0].aval
    lhs, rhs = eqn.inputs
    if lc or rc or lhs.aval.dtype != out.dtype or rhs.aval.dtype != out.dtype:
        return None
    nb = len(lb)
    lf, rf = _free_dims(lhs.aval.ndim, lb, ()), _free_dims(rhs.aval.ndim, rb, ())
    placed = []
    new = []
    for x, batch, free, first in ((lhs, lb, lf, nb), (rhs, rb, rf, nb + len(lf))):
        perm = tuple(batch) + tuple(free)
        if perm != tuple(range(x.aval.ndim)):
            t = Var(ShapedArray(tuple(x.aval.shape[d] for d in perm), x.aval.dtype))
            new.append(Eqn(PRIMITIVES["transpose"], (x,), {"permutation": perm}, (t,),
                           eqn.source))
            x = t
        dims = tuple(range(nb)) + tuple(first + i for i in range(len(free)))
        b = Var(ShapedArray(out.shape, out.dtype))
        new.append(Eqn(PRIMITIVES["broadcast_in_dim"], (x,),
                       {"shape": out.shape, "broadcast_dimensions": dims}, (b,), eqn.source))
        placed.append(b)
    return new + [Eqn(PRIMITIVES["mul"], tuple(placed), {}, eqn.outputs, eqn.source)]


# A rule returns one Eqn, or a list whose last Eqn defines the original outputs.
REWRITE = {"transpose": _transpose_of_dot, "dot_general": _outer_dot}


# ---------------------------------------------------------------- the passes

def _substituted(eqn: Eqn, subst: dict, sub_pass) -> Eqn:
    """eqn with replaced inputs and its sub-graphs run through sub_pass."""
    ins = tuple(subst.get(id(a), a) if isinstance(a, Var) else a for a in eqn.inputs)
    return Eqn(eqn.prim, ins, map_subgraphs(eqn.params, sub_pass), eqn.outputs, eqn.source)


def algebraic(graph: Graph) -> Graph:
    """Identity elimination and composition of layout ops; folds scalar constants."""
    subst: dict = {}
    defs: dict = {}
    eqns = []
    for eqn in graph.eqns:
        eqn = _substituted(eqn, subst, algebraic)
        rewrite = REWRITE.get(eqn.prim.name)
        new_eqn = rewrite(eqn, defs) if rewrite is not None else None
        if isinstance(new_eqn, list):
            for pre in new_eqn[:-1]:
                for v in pre.outputs:
                    defs[id(v)] = pre
                eqns.append(pre)
            new_eqn = new_eqn[-1]
        if new_eqn is not None:
            eqn = new_eqn
        compose = COMPOSE.get(eqn.prim.name)
        while compose is not None:
            new = compose(eqn, defs)
            if new is None:
                break
            eqn = Eqn(eqn.prim, new[0], new[1], eqn.outputs, eqn.source)
        rule = ALGEBRAIC.get(eqn.prim.name)
        repl = rule(eqn, defs) if rule is not None else None
        if repl is None:
            repl = _fold(eqn)
        if repl is not None:
            subst[id(eqn.outputs[0])] = repl
            continue
        for v in eqn.outputs:
            defs[id(v)] = eqn
        eqns.append(eqn)
    outs = tuple(subst.get(id(a), a) if isinstance(a, Var) else a for a in graph.outputs)
    return Graph(graph.inputs, tuple(eqns), outs, graph.in_tree, graph.out_tree)


def _fold(eqn: Eqn):
    """Evaluate scalar equations of literals (bigger results would bloat the graph)."""
    if not eqn.inputs or len(eqn.outputs) != 1 or eqn.outputs[0].aval.shape != () or \
            not all(isinstance(a, Literal) for a in eqn.inputs) or any(subgraphs(eqn)):
        return None
    (val,) = eqn.prim.impl(*[a.val for a in eqn.inputs], **eqn.params)
    return Literal(np.asarray(val, eqn.outputs[0].aval.dtype), eqn.outputs[0].aval.strip_weak())


def _atom_key(a):
    if isinstance(a, Literal):
        return ("lit", a.aval.dtype.str, a.val.shape, a.val.tobytes())
    return id(a)


def _param_key(v):
    if isinstance(v, np.ndarray):
        return ("arr", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, tuple):
        return tuple(_param_key(x) for x in v)
    if isinstance(v, Graph):
        return ("graph", id(v))
    return v


def cse(graph: Graph) -> Graph:
    """Common subexpression elimination: identical equations are computed once."""
    subst: dict = {}
    seen: dict = {}
    eqns = []
    for eqn in graph.eqns:
        eqn = _substituted(eqn, subst, cse)
        key = (eqn.prim.name, tuple(_atom_key(a) for a in eqn.inputs),
               tuple(sorted((k, _param_key(v)) for k, v in eqn.params.items())))
        try:
            prev = seen.get(key)
        except TypeError:       # an unhashable param: keep the equation as it is
            prev, key = None, None
        if prev is not None:
            for v, p in zip(eqn.outputs, prev.outputs):
                subst[id(v)] = p
            continue
        if key is not None:
            seen[key] = eqn
        eqns.append(eqn)
    outs = tuple(subst.get(id(a), a) if isinstance(a, Var) else a for a in graph.outputs)
    return Graph(graph.inputs, tuple(eqns), outs, graph.in_tree, graph.out_tree)


def dce(graph: Graph) -> Graph:
    """Dead code elimination (inputs and outputs are kept: they are the signature)."""
    live = {id(a) for a in graph.outputs if isinstance(a, Var)}
    kept = []
    for eqn in reversed(graph.eqns):
        if not any(id(v) in live for v in eqn.outputs):
            continue
        eqn = Eqn(eqn.prim, eqn.inputs, map_subgraphs(eqn.params, dce), eqn.outputs,
                  eqn.source)
        kept.append(eqn)
        live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    return Graph(graph.inputs, tuple(reversed(kept)), graph.outputs, graph.in_tree,
                 graph.out_tree)


def simplify(graph: Graph, max_rounds: int = 8) -> Graph:
    """algebraic + CSE + DCE to a fixed point."""
    for _ in range(max_rounds):
        before = len(graph.eqns)
        graph = dce(cse(algebraic(graph)))
        if len(graph.eqns) == before:
            break
    return graph
