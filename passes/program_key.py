"""A fused program as a canonical, stable digest: the object cache's key before
any code is generated (codegen/cpu/program_cache.py), so a cache hit costs no LLVM
IR. Two programs get the same digest exactly when code generation sees the same
thing: the graph (every equation, param, shape, dtype, weak type and constant
value, sub-graphs included), the partition into kernels and which values get
buffers, and the symbolic constraints. Vars are numbered by first appearance,
floats written by their bits and arrays hashed by their bytes, so the digest does
not depend on object ids, dict order or Python's hash seed. Source locations are
left out: they only appear in errors raised while generating code.

A param holding something with no canonical form (a Python function, an opaque
object) makes the program unkeyable (digest None): its callers fall back to
keying the generated IR.
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib

import numpy as np

from jx.dims import Dim
from jx.ir import Graph, Literal

VERSION = 1          # bump when the serialisation changes


class Unkeyable(Exception):
    """A value with no canonical serialisation."""


def program_digest(program) -> str | None:
    """sha256 (hex) of the program's canonical form, or None when a param has none."""
    try:
        text = repr(_Writer().program(program))
    except Unkeyable:
        return None
    return hashlib.sha256(f"jx-program-v{VERSION}\0{text}".encode()).hexdigest()


def graph_digest(graph, constraints=None) -> str | None:
    """sha256 (hex) of a traced graph's canonical form and its symbolic
    constraints (what the pass pipeline and fusion read: the same graph always
    gives the same program), or None when a param has none."""
    try:
        text = repr(_Writer().graph(graph))
    except Unkeyable:
        return None
    cons = None if constraints is None else repr(constraints.symbols_key())
    return hashlib.sha256(f"jx-graph-v{VERSION}\0{text}\0{cons}".encode()).hexdigest()


def _array(arr) -> tuple:
    arr = np.ascontiguousarray(arr)
    data = arr.tobytes()
    return (tuple(arr.shape), arr.dtype.str,
            data if len(data) <= 64 else hashlib.sha256(data).digest())


def _dim(d):
    return ("dim", str(d)) if type(d) is Dim else int(d)


class _Writer:
    def __init__(self):
        self.ids: dict = {}
        self.keep: list = []      # every numbered Var/Eqn stays alive: ids stay unique
        self.written: dict = {}   # id(eqn) -> its number, once written whole
        self.avals: dict = {}

    def var(self, v) -> int:
        n = self.ids.get(id(v))
        if n is None:
            n = self.ids[id(v)] = len(self.ids)
            self.keep.append(v)
        return n

    def aval(self, a) -> tuple:
        t = self.avals.get(a)
        if t is None:
            t = self.avals[a] = (tuple(_dim(d) for d in a.shape), a.dtype.str,
                                 bool(a.weak_type))
        return t

    def atom(self, a):
        if isinstance(a, Literal):
            return ("lit", self.aval(a.aval), _array(np.asarray(a.val, dtype=a.aval.dtype)))
        return self.var(a)

    def binder(self, v) -> tuple:
        return (self.var(v), self.aval(v.aval))

    def graph(self, g: Graph) -> tuple:
        ins = tuple(self.binder(v) for v in g.inputs)
        eqns = tuple(self.eqn(e) for e in g.eqns)
        return ("graph", ins, eqns, tuple(self.atom(a) for a in g.outputs))

    def eqn(self, e) -> tuple:
        """An equation written whole the first time, by its number after that."""
        n = self.written.get(id(e))
        if n is not None:
            return ("eqn", n)
        self.written[id(e)] = len(self.written)
        self.keep.append(e)
        params = tuple((k, self.value(e.params[k])) for k in sorted(e.params))
        return (e.prim.name, params, tuple(self.atom(a) for a in e.inputs),
                tuple(self.binder(v) for v in e.outputs))

    def value(self, v):
        # bool before int (a subclass); enums before their int/str bases
        if v is None or isinstance(v, (bool, str, bytes)):
            return v
        if isinstance(v, enum.Enum):
            return ("enum", type(v).__qualname__, v.name)
        if isinstance(v, int):
            return ("i", int(v))
        if isinstance(v, float):
            return ("f", float(v).hex())
        if isinstance(v, complex):
            return ("c", v.real.hex(), v.imag.hex())
        if isinstance(v, np.dtype):
            return ("dtype", v.str)
        if isinstance(v, type) and issubclass(v, np.generic):
            return ("dtype", np.dtype(v).str)
        if isinstance(v, np.generic):
            return ("scalar", v.dtype.str, v.tobytes())
        if isinstance(v, np.ndarray):
            return ("array", _array(v))
        if type(v) is Dim:
            return ("dim", str(v))
        if isinstance(v, Graph):
            return self.graph(v)
        if isinstance(v, (tuple, list)):
            items = tuple(self.value(x) for x in v)
            return items if type(v) in (tuple, list) else (type(v).__qualname__, items)
        if isinstance(v, dict):
            return ("dict", tuple(sorted((repr(self.value(k)), self.value(x))
                                         for k, x in v.items())))
        if isinstance(v, (set, frozenset)):
            return ("set", tuple(sorted(repr(self.value(x)) for x in v)))
        if isinstance(v, slice):
            return ("slice", self.value(v.start), self.value(v.stop), self.value(v.step))
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return (type(v).__qualname__,
                    tuple((f.name, self.value(getattr(v, f.name)))
                          for f in dataclasses.fields(v)))
        raise Unkeyable(type(v).__qualname__)

    def kernel(self, k) -> tuple:
        subs = []
        for label in sorted(k.subprograms):
            sub = k.subprograms[label]
            subs.append((label, tuple(self.program(p) for p in sub)
                         if isinstance(sub, tuple) else self.program(sub)))
        # (a kernel's equations are the graph's, by number, or its own copies,
        # written whole: fusion may recompute a cheap value where it is read)
        return (k.kind, self.eqn(k.root), tuple(self.eqn(e) for e in k.eqns),
                tuple(self.atom(a) for a in k.inputs), tuple(self.var(v) for v in k.outputs),
                tuple(subs), None if k.epilogue is None else self.kernel(k.epilogue),
                tuple(self.eqn(e) for e in k.siblings))

    def program(self, p) -> tuple:
        graph = self.graph(p.graph)
        kernels = tuple(self.kernel(k) for k in p.kernels)
        mat = tuple(sorted(self.ids[i] for i in p.materialised if i in self.ids))
        cons = p.constraints
        return ("program", graph, kernels, mat,
                None if cons is None else repr(cons.symbols_key()))
