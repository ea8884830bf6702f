"""Structured control flow: cond, while, scan.

Each primitive holds closed sub-Graphs in its params. Values a user function
captured from an enclosing trace are not free variables of the sub-graph:
the frontend (jx.lax) passes them as leading operands ("consts"), so every
sub-graph is self-contained and passes can transform it on its own.

Param names (printed, verified, and keyed on by jvp/vjp/vmap/codegen):
  cond  (index, *operands)               branches=(Graph, ...)
  while (*cond_consts, *body_consts, *carry)
        cond_graph, body_graph, cond_nconsts, body_nconsts
  scan  (*consts, *carry_init, *xs)      body, num_consts, num_carry, length, reverse
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import declare
from ..dims import Dim
from ..errors import ShapeError
from ..ir import Graph, ShapedArray


def _types(avals) -> str:
    return "(" + ", ".join(str(a) for a in avals) + ")"


def _check_inputs(what: str, graph: Graph, avals) -> None:
    """graph must take exactly `avals` (shape and dtype; weak typing is a hint)."""
    if not isinstance(graph, Graph):
        raise ShapeError(f"{what} must be a Graph, got {type(graph).__name__}")
    ins = graph.in_avals
    if len(ins) != len(avals) or not all(a.same_type(b) for a, b in zip(ins, avals)):
        raise ShapeError(f"{what} takes {_types(ins)} but is given {_types(avals)}")


def _join_weak(avals) -> ShapedArray:
    """One aval for several of the same type: weak only if all are weak."""
    return avals[0].update(weak_type=all(a.weak_type for a in avals))


def _carry_out(ins, outs) -> list:
    """Loop results: the carry types, weak only where both ends of the body are."""
    return [a.update(weak_type=a.weak_type and b.weak_type) for a, b in zip(ins, outs)]


# ---------------------------------------------------------------- cond

def _cond_rule(index, *operands, branches):
    if not isinstance(branches, tuple) or not branches:
        raise ShapeError("cond needs a non-empty tuple of branch graphs")
    if index.shape != () or index.dtype != dtypes.int32:
        raise ShapeError(f"cond index must be an i32[] scalar, got {index}; convert a bool "
                         "predicate or other integer with convert_element_type first")
    for i, br in enumerate(branches):
        _check_inputs(f"cond branch {i}", br, operands)
    outs0 = branches[0].out_avals
    for i, br in enumerate(branches[1:], 1):
        outs = br.out_avals
        if len(outs) != len(outs0):
            raise ShapeError(f"cond branch {i} returns {len(outs)} outputs {_types(outs)} "
                             f"but branch 0 returns {len(outs0)} {_types(outs0)}; every "
                             "branch must return the same types")
        for k, (a, b) in enumerate(zip(outs0, outs)):
            if not a.same_type(b):
                raise ShapeError(f"cond branch {i} output {k} has type {b} but branch 0 "
                                 f"output {k} has type {a}; every branch must return the "
                                 "same types")
    return [_join_weak([br.out_avals[k] for br in branches]) for k in range(len(outs0))]


def _cond_impl(index, *operands, branches):
    from ..interpret import eval_graph
    i = int(np.clip(int(index), 0, len(branches) - 1))  # out-of-range indices clamp
    return eval_graph(branches[i], *operands)


cond_p = declare("cond", _cond_rule, _cond_impl, multiple_results=True)


# ---------------------------------------------------------------- while

def _while_rule(*operands, cond_graph, body_graph, cond_nconsts, body_nconsts):
    if cond_nconsts < 0 or body_nconsts < 0 or cond_nconsts + body_nconsts > len(operands):
        raise ShapeError(f"while has {len(operands)} operands, fewer than cond_nconsts="
                         f"{cond_nconsts} + body_nconsts={body_nconsts}")
    cconsts = operands[:cond_nconsts]
    bconsts = operands[cond_nconsts:cond_nconsts + body_nconsts]
    carry = operands[cond_nconsts + body_nconsts:]
    _check_inputs("while cond_graph", cond_graph, cconsts + carry)
    _check_inputs("while body_graph", body_graph, bconsts + carry)
    couts = cond_graph.out_avals
    if len(couts) != 1 or couts[0].shape != () or couts[0].dtype != dtypes.bool_:
        raise ShapeError(f"while cond_graph must return one bool[] scalar, returns "
                         f"{_types(couts)}")
    bouts = body_graph.out_avals
    if len(bouts) != len(carry) or not all(a.same_type(b) for a, b in zip(bouts, carry)):
        raise ShapeError(f"while body_graph must return the carry types {_types(carry)}, "
                         f"returns {_types(bouts)}")
    return _carry_out(body_graph.in_avals[body_nconsts:], bouts)


def _while_impl(*operands, cond_graph, body_graph, cond_nconsts, body_nconsts):
    from ..interpret import eval_graph
    cconsts = operands[:cond_nconsts]
    bconsts = operands[cond_nconsts:cond_nconsts + body_nconsts]
    carry = list(operands[cond_nconsts + body_nconsts:])
    while bool(np.asarray(eval_graph(cond_graph, *cconsts, *carry)[0])):
        carry = eval_graph(body_graph, *bconsts, *carry)
    return carry


while_p = declare("while", _while_rule, _while_impl, multiple_results=True)


# ---------------------------------------------------------------- scan

def _scan_split(operands, num_consts, num_carry):
    return (operands[:num_consts], operands[num_consts:num_consts + num_carry],
            operands[num_consts + num_carry:])


def _scan_rule(*operands, body, num_consts, num_carry, length, reverse):
    if num_consts < 0 or num_carry < 0 or num_consts + num_carry > len(operands):
        raise ShapeError(f"scan has {len(operands)} operands, fewer than num_consts="
                         f"{num_consts} + num_carry={num_carry}")
    if not isinstance(length, (int, Dim)) or isinstance(length, bool) or length < 0:
        raise ShapeError(f"scan length must be a non-negative int or a symbolic size, "
                         f"got {length!r}")
    if not isinstance(reverse, bool):
        raise ShapeError(f"scan reverse must be a bool, got {reverse!r}")
    consts, carry, xs = _scan_split(operands, num_consts, num_carry)
    for k, x in enumerate(xs):
        if x.ndim == 0 or x.shape[0] != length:
            raise ShapeError(f"scan xs operand {k} has type {x} but every xs operand needs "
                             f"a leading axis of length {length}")
    x_slices = tuple(x.update(shape=x.shape[1:]) for x in xs)
    _check_inputs("scan body", body, consts + carry + x_slices)
    outs = body.out_avals
    if len(outs) < num_carry or \
            not all(a.same_type(b) for a, b in zip(outs[:num_carry], carry)):
        raise ShapeError(f"scan body must return the carry types {_types(carry)} first, "
                         f"returns {_types(outs)}")
    ys = [y.update(shape=(length,) + y.shape) for y in outs[num_carry:]]
    return _carry_out(body.in_avals[num_consts:num_consts + num_carry], outs) + ys


def _scan_impl(*operands, body, num_consts, num_carry, length, reverse):
    from ..interpret import eval_graph
    consts, carry, xs = _scan_split(operands, num_consts, num_carry)
    carry = list(carry)
    y_avals = body.out_avals[num_carry:]
    ys = [np.empty((length,) + y.shape, y.dtype) for y in y_avals]
    for i in (reversed(range(length)) if reverse else range(length)):
        outs = eval_graph(body, *consts, *carry, *[x[i] for x in xs])
        carry = outs[:num_carry]
        for buf, y in zip(ys, outs[num_carry:]):
            buf[i] = y
    return carry + ys


scan_p = declare("scan", _scan_rule, _scan_impl, multiple_results=True)

__all__ = ["cond_p", "while_p", "scan_p"]
