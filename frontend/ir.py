"""The typed IR: abstract values, atoms, equations and graphs.

A Graph is a straight-line SSA program: input Vars, equations in order, output
atoms. Control-flow primitives carry sub-Graphs in their params. Objects are
immutable in spirit: passes build new graphs instead of editing old ones.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dtypes
from .dims import Dim
from .errors import reject_masked


@dataclass(frozen=True)
class ShapedArray:
    """An abstract value: shape and dtype, no data.

    weak_type marks values born from Python scalars: they adopt the dtype of
    the array they meet (JAX's weak typing), so `x * 2.0` stays float32.
    """
    shape: tuple
    dtype: np.dtype
    weak_type: bool = False

    def __post_init__(self):
        # a dimension is an int, or a symbol's expression (jx.dims: f32[B,784])
        object.__setattr__(self, "shape", tuple(d if type(d) is Dim else int(d)
                                                for d in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)      # exact: an int64 product wraps silently

    def strip_weak(self) -> "ShapedArray":
        return ShapedArray(self.shape, self.dtype) if self.weak_type else self

    def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def same_type(self, other: "ShapedArray") -> bool:
        """Equal shape and dtype; weak typing is a frontend hint, not a type."""
        return self.shape == other.shape and self.dtype == other.dtype

    def __str__(self) -> str:
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    __repr__ = __str__


# Generated code forms element and byte offsets in 64-bit integers; capping an
# array at 2**62 bytes keeps every offset (and offset + window) below 2**63.
MAX_ARRAY_BYTES = 1 << 62


def extent_problem(shape, dtype) -> str | None:
    """Why an array of this shape and dtype cannot be indexed with 64-bit offsets,
    or None when it can (or when its size is symbolic: known when the code runs)."""
    if any(type(d) is Dim for d in shape):
        return None
    count = math.prod(int(d) for d in shape)
    nbytes = count * max(np.dtype(dtype).itemsize, 1)
    if nbytes <= MAX_ARRAY_BYTES:
        return None
    name = f"{dtypes.short_name(dtype)}[{','.join(str(int(d)) for d in shape)}]"
    return (f"shape {name} has {_about(count)} elements ({_about(nbytes)} bytes), more "
            "than the 2**62 bytes jx can address with 64-bit offsets; use smaller "
            "dimensions (or split the computation, e.g. with jx.lax.scan over chunks)")


def _about(n: int) -> str:
    """A count for a message: exact when short, else a power of two (a float
    conversion would overflow for the largest products)."""
    return f"{n:,}" if n < 10**12 else f"about 2**{math.log2(n):.4g}"


def aval_of(x) -> ShapedArray:
    """The abstract value of a concrete value (NumPy array or Python scalar)."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return ShapedArray((), dtypes.python_scalar_dtype(x), weak_type=True)
    reject_masked(x, "a value given to a jx function or transformation")
    arr = np.asarray(x)
    dtypes.check_supported(arr.dtype)
    return ShapedArray(arr.shape, arr.dtype)


class Var:
    """A value defined once, by a graph input or an equation output.

    Identity is the object itself; names are given only by the printer.
    """
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval})"


class Literal:
    """A constant (a scalar, or an array captured from the tracing scope)."""
    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray | None = None):
        self.aval = aval if aval is not None else aval_of(val)
        self.val = np.asarray(val, dtype=self.aval.dtype)

    def __repr__(self) -> str:
        return f"Literal({self.val!r})"


Atom = Var | Literal


@dataclass(frozen=True, eq=False)
class Eqn:
    """outputs = prim(*inputs, **params); source is the user's file:line."""
    prim: Any                      # core.Primitive
    inputs: tuple
    params: dict
    outputs: tuple
    source: str | None = None


@dataclass(frozen=True, eq=False)
class Graph:
    inputs: tuple
    eqns: tuple
    outputs: tuple
    # Set by the tracer: how inputs/outputs rebuild the user's pytrees.
    in_tree: Any = field(default=None, compare=False)
    out_tree: Any = field(default=None, compare=False)

    @property
    def in_avals(self) -> list:
        return [v.aval for v in self.inputs]

    @property
    def out_avals(self) -> list:
        return [a.aval for a in self.outputs]

    def __str__(self) -> str:
        return _graph_text(self) if _graph_text is not None else repr(self)

    def op_counts(self) -> dict:
        """Number of equations per primitive, sub-graphs included."""
        counts: dict = {}
        for eqn in self.eqns:
            counts[eqn.prim.name] = counts.get(eqn.prim.name, 0) + 1
            for sub in subgraphs(eqn):
                for k, n in sub.op_counts().items():
                    counts[k] = counts.get(k, 0) + n
        return counts


# str(graph) is jx.printer's text. The printer imports this module, so it installs
# its formatter here when it is imported (jx.core imports it: every traced graph
# prints); this module never imports the printer.
_graph_text = None


def set_graph_text(format_graph) -> None:
    global _graph_text
    _graph_text = format_graph


def map_subgraphs(params: dict, fn) -> dict:
    """params with fn applied to every sub-graph they hold (a pass entering bodies)."""
    def one(v):
        if isinstance(v, Graph):
            return fn(v)
        if isinstance(v, tuple) and any(isinstance(g, Graph) for g in v):
            return tuple(fn(g) if isinstance(g, Graph) else g for g in v)
        return v
    return {k: one(v) for k, v in params.items()}


def subgraphs(eqn: Eqn):
    """Sub-graphs held in an equation's params (control flow)."""
    for v in eqn.params.values():
        if isinstance(v, Graph):
            yield v
        elif isinstance(v, tuple):
            yield from (g for g in v if isinstance(g, Graph))


def postorder(roots, children) -> list:
    """Every node reachable from `roots` through `children(node)`, once each,
    children before their parents (the order a recursive walk would give), by a
    depth-first search on an explicit stack: a graph of any depth, whatever
    Python's recursion limit. Nodes are told apart by identity."""
    out, seen = [], set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(children(root)))]
        while stack:
            node, pending = stack[-1]
            for child in pending:
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(children(child))))
                    break
            else:
                stack.pop()
                out.append(node)
    return out
