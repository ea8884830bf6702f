"""Shared machinery of the transformation passes.

Every transformation walks a Graph equation by equation, looks the primitive
up in its own rule table and calls the rule on *values*: NumPy arrays when run
eagerly, tracers when building a new graph. Turning a walk into a Graph -> Graph
pass is therefore just tracing it (`transform_graph`).
"""
from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np

from jx import core, tree
from jx.api import trace_pytree
from jx.errors import MissingRuleError
from jx.ir import Graph, Literal


class RuleTable(dict):
    """A transformation's rule table (jvp, vjp, vmap), keyed by primitive name. The
    rule families (jx.passes.*_rules) fill the tables when first imported; jx.passes
    sets RuleTable.fill to the function importing them all, which runs on the first
    read of any table, so a program that jits without transforming never loads them
    and a reader (a pass, a coverage test) always sees the tables complete."""

    fill = None              # set by jx.passes: imports every rule family
    _state = "pending"       # pending -> loading (this thread, re-entrant) -> done
    _lock = threading.RLock()

    @classmethod
    def load(cls) -> None:
        if cls._state == "done" or cls.fill is None:
            return
        with cls._lock:      # other threads wait until the families are in
            if cls._state != "pending":
                return       # done, or this thread is filling (a family reads a table)
            cls._state = "loading"
            try:
                cls.fill()
            except BaseException:
                cls._state = "pending"
                raise
            cls._state = "done"

    def get(self, key, default=None):
        RuleTable.load()
        return super().get(key, default)

    def copy(self):
        RuleTable.load()
        return dict(super().items())


def _after_load(method):
    """dict's `method`, reading the table once the families are in."""
    def read(self, *args):
        RuleTable.load()
        return method(self, *args)
    read.__name__ = method.__name__
    return read


for _name in ("__getitem__", "__contains__", "__iter__", "__len__", "keys", "values",
              "items"):
    setattr(RuleTable, _name, _after_load(getattr(dict, _name)))


def rule_for(table: dict, prim, pass_name: str, eqn=None) -> Callable:
    rule = table.get(prim.name)
    if rule is None:
        where = f" (from {eqn.source})" if eqn is not None and eqn.source else ""
        raise MissingRuleError(
            f"{pass_name}: no rule for primitive '{prim.name}'{where}. The {pass_name} "
            "transformation does not support it yet; restructure the code to avoid it "
            "or add a rule to the pass's table.")
    return rule


def read(env: dict, atom, like=()):
    """The value of an atom. With `like` (the walk's inputs), a literal becomes a
    value of their trace: rules that combine it with other constants then stay
    staged instead of running eagerly into big literal arrays."""
    if isinstance(atom, Literal):
        if like:
            from .zeros import stage_like
            return stage_like(atom.val, like)
        return atom.val
    return env[id(atom)]


def transform_graph(walk: Callable, in_avals: Sequence, name: str) -> Graph:
    """Trace `walk(*values) -> list` into a Graph (the pass's output)."""
    graph, consts = core.trace(walk, list(in_avals), name=name)
    assert not consts, "transformed graphs are closed"
    return graph


def trace_function(f: Callable, args: Sequence, name: str, known: bool = False) -> tuple:
    """(graph, consts, leaves) of the Python function f at the pytree args: the
    walk's inputs are consts (outer tracers the trace captured) then leaves.
    known=True: traced at the args' values when they are all known (the public
    jvp/vjp at a concrete point: Python control flow on primals works)."""
    graph, consts = trace_pytree(f, tuple(args), name=name, known=known)
    ins = graph.inputs[len(consts):]
    leaves = [as_traced(x, v.aval) for x, v in zip(tree.tree_leaves((tuple(args), {})), ins)]
    return graph, list(consts), leaves


def as_traced(x, aval):
    """A concrete leaf as the array its trace saw: Python numbers as 0-d arrays
    (so the rules meet arrays with a dtype: grad(jnp.logaddexp)(1.0, 2.0)), NumPy
    data in the mode's dtypes (float64 data is float32 with x64 off)."""
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return np.asarray(x, aval.dtype)
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype != aval.dtype:
        return np.asarray(x, aval.dtype)
    return x


def as_weak(v):
    """v weakly typed, its dtype kept: a concrete value as a weak jx.Array, a
    tracer through a no-op conversion that marks it weak."""
    from jx.array import Array
    from jx.prims import elementwise as ew
    if isinstance(v, core.Tracer):
        return v if v.weak_type else core.bind_like(
            (v,), ew.convert_element_type, v, new_dtype=v.dtype, weak_type=True)[0]
    if type(v) is Array and v._weak:
        return v
    return Array(np.asarray(v._value if type(v) is Array else v), True)


def with_weak(values: Sequence, avals: Sequence) -> list:
    """Concrete results with the weak types their graph gave them (an evaluation
    on NumPy data drops them; JAX's jvp/vjp at a Python float return weak floats).
    Tracers carry their graph's avals already."""
    return [as_weak(v) if av.weak_type and v is not None and not isinstance(v, core.Tracer)
            else v for v, av in zip(values, avals)]


class NotDifferentiable:
    """Marks a primitive whose outputs carry no derivative (integer results,
    random bits): the coverage test accepts it as a rule."""

    def __init__(self, reason: str):
        self.reason = reason
