"""Eager control flow, compiled: jx.lax.scan / fori_loop / while_loop / cond /
switch / map called outside jit on concrete values run as native code, as in JAX.

jx.lax builds the control-flow primitive (its body traced into a sub-graph) and,
when no operand is a Tracer, hands it to the hook jx.lax.control_flow.EAGER_RUNNER,
which importing this module fills. `run` compiles a function binding that one
primitive with jx.jit, once per signature, and calls it.

The signature is structural, not the identity of the traced body: a sampler that
calls `lax.scan(step, ...)` in a Python loop re-traces `step` on every call, into
a new but identical graph. The key is the primitive, its params with every
sub-graph written out (primitives, params, types, wiring, source lines) and the
values of the scalar literals. Array literals (arrays the body, or a loop or cond
inside it, closed over) become operands of the compiled call instead of constants
of its code, so new data reuses the compiled code and big arrays are neither
hashed nor built into the object. Scalars stay constants (codegen folds them):
one computed from closed-over data while tracing (`jnp.sum(w)` in the body runs
then, on constants) compiles again when the data changes; passing such a value
in the carry or xs avoids that.

A primitive the CPU backend cannot compile (NotImplementedError) is remembered
and interpreted as before, so nothing that ran eagerly stops running.
"""
from __future__ import annotations

import collections
import contextlib
import hashlib
import threading

import numpy as np

from .core import bind, get_aval
from .ir import Eqn, Graph, Literal, Var
from .jit import jit
from .lax import control_flow
from .prims.control import cond_p, scan_p, while_p

# Compiled callers kept, least recently used dropped first: each holds native code.
MAX_CACHED = 256

# counts since import (or reset_stats): compiles, hits (compiled code reused),
# interpreted (fallbacks, or calls while disabled)
STATS = collections.Counter()

_CACHE: "collections.OrderedDict" = collections.OrderedDict()
_INTERPRET = object()        # cache value: this signature runs in the interpreter
_LOCK = threading.Lock()
_enabled = True


def reset_stats() -> None:
    STATS.clear()


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()


@contextlib.contextmanager
def disabled():
    """Run eager control flow in the NumPy reference interpreter inside the block
    (what the NumPy engine of `jx bench` measures)."""
    global _enabled
    old, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = old


def run(prim, operands, params) -> list:
    """The outputs of prim(*operands, **params), operands all concrete, compiled."""
    if not _enabled:
        STATS["interpreted"] += 1
        return bind(prim, *operands, **params)
    hoist = _HOIST.get(prim)
    if hoist is None:                    # not one of jx.lax's control-flow primitives
        return bind(prim, *operands, **params)
    lits, params = hoist(params)
    operands = _place(prim, params, lits, operands)
    try:
        key = (prim, _params_key(params))
    except _Uncacheable:
        STATS["interpreted"] += 1
        return bind(prim, *operands, **params)
    with _LOCK:                      # calls from several threads share the cache
        fn = _CACHE.get(key)
        if fn is None:
            fn = _CACHE[key] = _caller(prim, params)
            STATS["compiles"] += 1
            while len(_CACHE) > MAX_CACHED:
                _CACHE.popitem(last=False)
            fresh = True
        else:
            _CACHE.move_to_end(key)
            fresh = False
            STATS["hits" if fn is not _INTERPRET else "interpreted"] += 1
    if fn is _INTERPRET:
        return bind(prim, *operands, **params)
    if not fresh:
        return list(fn(*_arrays(operands)))
    try:
        return list(fn(*_arrays(operands)))      # jx.jit compiles on this first call
    except NotImplementedError:          # the backend lacks a lowering: interpret
        with _LOCK:
            _CACHE[key] = _INTERPRET
            STATS["compiles"] -= 1
            STATS["interpreted"] += 1
        return bind(prim, *operands, **params)


def _caller(prim, params):
    def eager_control_flow(*operands):
        return tuple(bind(prim, *operands, **params))    # core's bind: no hook again
    eager_control_flow.__name__ = f"eager_{prim.name}"
    return jit(eager_control_flow)


def _arrays(operands) -> list:
    """Python scalars as arrays of their (weak) type, so jit takes its fast path."""
    return [x if isinstance(x, (np.ndarray, np.generic)) else
            np.asarray(x, get_aval(x).dtype) for x in operands]


# ---------------------------------------------------------------- hoisting

def _hoisted(graph: Graph) -> tuple:
    """(graph taking its array literals as leading inputs, their values). Those of a
    loop or cond inside come in through its operands (rewritten the same way)."""
    found: dict = {}             # id(value) -> (value, Var): a closed-over array once

    def atom(a):
        if isinstance(a, Literal) and a.val.ndim:
            entry = found.get(id(a.val))
            if entry is None:
                entry = found[id(a.val)] = (a.val, Var(a.aval.strip_weak()))
            return entry[1]
        return a
    eqns = []
    for e in graph.eqns:
        ins, params = e.inputs, e.params
        hoist = _HOIST.get(e.prim)
        if hoist is not None:
            lits, params = hoist(params)
            ins = _place(e.prim, params, _literals(lits), ins)
        eqns.append(Eqn(e.prim, tuple(atom(a) for a in ins), params, e.outputs, e.source))
    outs = tuple(atom(a) for a in graph.outputs)
    if not found:
        return graph, []
    vals, new = zip(*found.values())
    return Graph(tuple(new) + graph.inputs, tuple(eqns), outs), list(vals)


def _literals(lits):
    """Hoisted values as atoms of the enclosing graph (while's come as a pair)."""
    if isinstance(lits, tuple):
        return tuple(_literals(part) for part in lits)
    return [Literal(v) for v in lits]


def _hoist_scan(params):
    body, lits = _hoisted(params["body"])
    return lits, dict(params, body=body, num_consts=params["num_consts"] + len(lits))


def _hoist_while(params):
    cg, clits = _hoisted(params["cond_graph"])
    bg, blits = _hoisted(params["body_graph"])
    return (clits, blits), dict(params, cond_graph=cg, body_graph=bg,
                                cond_nconsts=params["cond_nconsts"] + len(clits),
                                body_nconsts=params["body_nconsts"] + len(blits))


def _hoist_cond(params):
    pairs = [_hoisted(g) for g in params["branches"]]
    lits = [v for _, vals in pairs for v in vals]
    branches, before = [], 0
    for (g, vals), old in zip(pairs, params["branches"]):
        # every branch takes all the hoisted values; its own sit at its offset
        own = g.inputs[:len(vals)]
        others = [Var(get_aval(v)) for v in lits]
        ins = tuple(others[:before]) + own + tuple(others[before + len(vals):])
        branches.append(Graph(ins + old.inputs, g.eqns, g.outputs))
        before += len(vals)
    return lits, dict(params, branches=tuple(branches))


_HOIST = {scan_p: _hoist_scan, while_p: _hoist_while, cond_p: _hoist_cond}


def _place(prim, params, lits, operands) -> tuple:
    """The operands with the hoisted values where the rewritten params expect them."""
    if prim is scan_p:
        return (*lits, *operands)
    if prim is cond_p:
        return (operands[0], *lits, *operands[1:])
    clits, blits = lits
    nc = params["cond_nconsts"] - len(clits)
    return (*clits, *operands[:nc], *blits, *operands[nc:])


# ---------------------------------------------------------------- the key

class _Uncacheable(Exception):
    pass


def _aval_key(a) -> tuple:
    return (a.shape, a.dtype.str, a.weak_type)


def _literal_key(lit: Literal) -> tuple:
    val = np.ascontiguousarray(lit.val)
    data = val.tobytes() if val.nbytes <= 64 else \
        hashlib.blake2b(val.view(np.uint8).reshape(-1), digest_size=20).digest()
    return ("lit", _aval_key(lit.aval), data)


def _graph_key(graph: Graph) -> tuple:
    """The graph written out: equal keys mean the same computation, value for value."""
    num: dict = {id(v): i for i, v in enumerate(graph.inputs)}

    def atom(a):
        if isinstance(a, Literal):
            return _literal_key(a)
        try:
            return num[id(a)]
        except KeyError:
            raise _Uncacheable from None     # a free variable: not a closed graph
    parts = [tuple(_aval_key(v.aval) for v in graph.inputs)]
    for e in graph.eqns:
        ins = tuple(atom(a) for a in e.inputs)
        for v in e.outputs:
            num[id(v)] = len(num)
        parts.append((e.prim, ins, _params_key(e.params),
                      tuple(_aval_key(v.aval) for v in e.outputs), e.source))
    parts.append(tuple(atom(a) for a in graph.outputs))
    return tuple(parts)


def _params_key(v):
    if isinstance(v, Graph):
        return ("graph", _graph_key(v))
    if isinstance(v, dict):
        return ("dict",) + tuple((k, _params_key(x)) for k, x in sorted(v.items()))
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(_params_key(x) for x in v)
    if isinstance(v, np.ndarray):
        return _literal_key(Literal(v))
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    try:
        hash(v)
    except TypeError:
        raise _Uncacheable from None
    return (type(v), v)        # 1, 1.0 and True differ; functions key by identity


control_flow.EAGER_RUNNER = run

__all__ = ["run", "STATS", "reset_stats", "clear_cache", "disabled", "MAX_CACHED"]
