"""Primitives, bind, tracers and the graph builder.

Every operation in jx ends in `bind(prim, *args, **params)`. If no argument is
a Tracer, bind runs the primitive's NumPy reference implementation (eager
mode). Otherwise it records an equation in the innermost GraphBuilder among
the arguments. Builders are ordered by a level taken at creation: a nested
trace (a cond branch, a loop body, a function being differentiated) always has
a higher level than the traces around it, so tracers from an enclosing trace
are lifted into the inner graph as captured inputs (closure conversion). No
global trace stack is needed: the arguments say where an operation belongs.
"""
from __future__ import annotations

import itertools
from typing import Callable, Sequence

import numpy as np

from . import dtypes
from .errors import (EscapedTracerError, OutOfMemoryError, ShapeError, TracerConversionError,
                     user_location)
from .ir import Eqn, Graph, Literal, ShapedArray, Var, aval_of, extent_problem

PRIMITIVES: dict = {}


class Primitive:
    """A primitive: a name, a shape/dtype rule and a NumPy reference.

    Both rules take and return lists (multi-output primitives need no special
    case); `declare` adapts single-output rules.
    """

    def __init__(self, name: str, abstract_eval: Callable, impl: Callable,
                 multiple_results: bool = False):
        self.name = name
        self.abstract_eval = abstract_eval
        self.impl = impl
        self.multiple_results = multiple_results

    def bind(self, *args, **params):
        outs = bind(self, *args, **params)
        return outs if self.multiple_results else outs[0]

    def __repr__(self) -> str:
        return self.name


def declare(name: str, shape_rule: Callable, impl: Callable,
            multiple_results: bool = False) -> Primitive:
    """Declare a primitive once; its rules live here, every pass keys on it."""
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name!r} declared twice")
    if multiple_results:
        prim = Primitive(name, shape_rule, impl, True)
    else:
        prim = Primitive(name, lambda *a, **p: [shape_rule(*a, **p)],
                         lambda *a, **p: [impl(*a, **p)])
    PRIMITIVES[name] = prim
    return prim


# ---------------------------------------------------------------- tracing

class GraphBuilder:
    """Collects the equations of one trace."""

    _levels = itertools.count(1)

    def __init__(self, name: str = "function"):
        self.level = next(self._levels)
        self.name = name
        self.inputs: list = []
        self.eqns: list = []
        self.captured: dict = {}      # id(outer tracer) -> (outer tracer, inner Var)
        self.done = False

    def new_input(self, aval: ShapedArray) -> "Tracer":
        var = Var(aval)
        self.inputs.append(var)
        return Tracer(self, var)

    def lift(self, x):
        """The atom for x in this trace: own var, captured outer tracer, or Literal."""
        if isinstance(x, Tracer):
            if x.builder is self:
                return x.ir_var
            if x.builder.done or x.builder.level > self.level:
                raise EscapedTracerError(
                    f"a value traced inside {x.builder.name} ({x.aval}) was used after "
                    f"that trace finished (at {user_location()}). Return it from the "
                    "function instead of storing it in a global or closure.")
            key = id(x)
            if key not in self.captured:
                self.captured[key] = (x, Var(x.aval))
            return self.captured[key][1]
        return Literal(x) if isinstance(x, (bool, int, float)) else Literal(np.asarray(x))

    def add_eqn(self, prim: Primitive, args: Sequence, params: dict,
                out_avals: Sequence) -> list:
        inputs = tuple(self.lift(a) for a in args)
        outs = tuple(Var(a) for a in out_avals)
        self.eqns.append(Eqn(prim, inputs, params, outs, user_location()))
        return [Tracer(self, v) for v in outs]

    def finish(self, outs: Sequence) -> tuple:
        """Close the trace: (Graph, captured outer tracers). Captured come first."""
        out_atoms = tuple(self.lift(x) for x in outs)
        self.done = True
        consts = [t for t, _ in self.captured.values()]
        const_vars = [v for _, v in self.captured.values()]
        graph = Graph(tuple(const_vars + self.inputs), tuple(self.eqns), out_atoms)
        return graph, consts


def _innermost(args) -> GraphBuilder | None:
    best = None
    for a in args:
        if isinstance(a, Tracer) and (best is None or a.builder.level > best.level):
            best = a.builder
    return best


def bind(prim: Primitive, *args, **params) -> list:
    return bind_like((), prim, *args, **params)


def bind_like(like: Sequence, prim: Primitive, *args, **params) -> list:
    """bind, staged into the innermost trace among args *and* `like`.

    Used where an operation on constants only (broadcasting a Python scalar)
    belongs in the trace of the tracer it is about to meet.
    """
    builder = _innermost(list(args) + list(like))
    if builder is None:
        return _eager(prim, args, params)
    in_avals = [a.aval if isinstance(a, Tracer) else aval_of(a) for a in args]
    out_avals = _abstract_eval(prim, in_avals, params)
    return builder.add_eqn(prim, args, params, out_avals)


def _abstract_eval(prim: Primitive, in_avals, params) -> list:
    try:
        out_avals = prim.abstract_eval(*in_avals, **params)
        for a in out_avals:
            problem = extent_problem(a.shape, a.dtype)
            if problem:
                raise ShapeError(problem)
        return out_avals
    except ShapeError as e:
        where = user_location()
        raise ShapeError(f"{prim.name}: {e}" + (f" (at {where})" if where else "")) from None


def _eager(prim: Primitive, args, params) -> list:
    """Eager mode: the NumPy reference, checked against the shape rule."""
    in_avals = [aval_of(a) for a in args]
    out_avals = _abstract_eval(prim, in_avals, params)
    vals = [np.asarray(a, dtype=av.dtype) for a, av in zip(args, in_avals)]
    try:
        outs = prim.impl(*vals, **params)
    except MemoryError:
        raise _eager_memory_error(prim.name, out_avals) from None
    return [np.asarray(o).astype(av.dtype, copy=False).reshape(av.shape)
            for o, av in zip(outs, out_avals)]


def _eager_memory_error(what: str, out_avals) -> OutOfMemoryError:
    """Operations on constants alone run eagerly in NumPy, even while tracing, so
    their results are stored in full."""
    where = user_location()
    shapes = ", ".join(map(str, out_avals))
    return OutOfMemoryError(
        f"{what} on constants ({shapes}){f' at {where}' if where else ''} could not be "
        "allocated: with no traced input it is computed now, in full; make it depend on "
        "a traced argument (e.g. broadcast a traced value) so it is fused into the "
        "compiled code, or use smaller shapes")


def trace(fun: Callable, in_avals: Sequence, name: str = "function") -> tuple:
    """Trace fun(*tracers) -> flat list of outputs. Returns (Graph, consts)."""
    builder = GraphBuilder(name)
    tracers = [builder.new_input(a) for a in in_avals]
    try:
        outs = fun(*tracers)
    except BaseException:
        builder.done = True
        raise
    return builder.finish(list(outs))


def get_aval(x) -> ShapedArray:
    return x.aval if isinstance(x, Tracer) else aval_of(x)


# ---------------------------------------------------------------- tracers

def _control_flow_error(what: str, aval) -> TracerConversionError:
    where = user_location()
    return TracerConversionError(
        f"{what} of a traced value ({aval}) at {where}: its value is not known while "
        "tracing. Use jx.lax.cond or jx.numpy.where for branches, jx.lax.while_loop, "
        "fori_loop or scan for loops, or mark the argument static "
        "(static_argnums) if it is a compile-time constant.")


def _numpy():
    from . import numpy as jnp  # the operator overloads are jx.numpy functions
    return jnp


class Tracer:
    """A traced value: an abstract value in a trace, with NumPy-style methods."""

    __slots__ = ("builder", "ir_var")
    __array_priority__ = 1000     # numpy_array * tracer defers to Tracer.__rmul__

    def __init__(self, builder: GraphBuilder, var: Var):
        self.builder = builder
        self.ir_var = var

    aval = property(lambda self: self.ir_var.aval)
    shape = property(lambda self: self.ir_var.aval.shape)
    dtype = property(lambda self: self.ir_var.aval.dtype)
    ndim = property(lambda self: self.ir_var.aval.ndim)
    size = property(lambda self: self.ir_var.aval.size)
    weak_type = property(lambda self: self.ir_var.aval.weak_type)

    def __repr__(self) -> str:
        return f"Tracer<{self.aval}>"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __bool__(self):
        raise _control_flow_error("Python `if`/`while`/`and`/`or` (bool conversion)", self.aval)

    def __int__(self):
        raise _control_flow_error("int()", self.aval)

    def __float__(self):
        raise _control_flow_error("float()", self.aval)

    def __index__(self):
        raise _control_flow_error("Using as a Python index (__index__)", self.aval)

    def __array__(self, *a, **k):
        raise _control_flow_error("Conversion to a NumPy array", self.aval)

    def __hash__(self):
        raise TypeError("traced values are not hashable")

    # Arithmetic and comparison: jx.numpy functions, so promotion rules match.
    def __neg__(self): return _numpy().negative(self)
    def __pos__(self): return self
    def __abs__(self): return _numpy().abs(self)
    def __invert__(self): return _numpy().invert(self)
    def __add__(self, o): return _numpy().add(self, o)
    def __radd__(self, o): return _numpy().add(o, self)
    def __sub__(self, o): return _numpy().subtract(self, o)
    def __rsub__(self, o): return _numpy().subtract(o, self)
    def __mul__(self, o): return _numpy().multiply(self, o)
    def __rmul__(self, o): return _numpy().multiply(o, self)
    def __truediv__(self, o): return _numpy().true_divide(self, o)
    def __rtruediv__(self, o): return _numpy().true_divide(o, self)
    def __floordiv__(self, o): return _numpy().floor_divide(self, o)
    def __rfloordiv__(self, o): return _numpy().floor_divide(o, self)
    def __mod__(self, o): return _numpy().remainder(self, o)
    def __rmod__(self, o): return _numpy().remainder(o, self)
    def __pow__(self, o): return _numpy().power(self, o)
    def __rpow__(self, o): return _numpy().power(o, self)
    def __matmul__(self, o): return _numpy().matmul(self, o)
    def __rmatmul__(self, o): return _numpy().matmul(o, self)
    def __and__(self, o): return _numpy().bitwise_and(self, o)
    def __rand__(self, o): return _numpy().bitwise_and(o, self)
    def __or__(self, o): return _numpy().bitwise_or(self, o)
    def __ror__(self, o): return _numpy().bitwise_or(o, self)
    def __xor__(self, o): return _numpy().bitwise_xor(self, o)
    def __rxor__(self, o): return _numpy().bitwise_xor(o, self)
    def __lshift__(self, o): return _numpy().left_shift(self, o)
    def __rshift__(self, o): return _numpy().right_shift(self, o)
    def __lt__(self, o): return _numpy().less(self, o)
    def __le__(self, o): return _numpy().less_equal(self, o)
    def __gt__(self, o): return _numpy().greater(self, o)
    def __ge__(self, o): return _numpy().greater_equal(self, o)
    def __eq__(self, o): return _numpy().equal(self, o)
    def __ne__(self, o): return _numpy().not_equal(self, o)

    def __getitem__(self, idx): return _numpy().getitem(self, idx)

    def __setitem__(self, idx, value):
        raise TypeError("jx arrays are immutable: `x[i] = v` cannot update a traced value; "
                        "write `x = x.at[i].set(v)` (or .add, .mul, .min, .max) instead")

    @property
    def at(self):
        return _numpy().IndexUpdateHelper(self)

    @property
    def T(self): return _numpy().transpose(self)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _numpy().reshape(self, shape)

    def astype(self, dtype): return _numpy().asarray(self, dtype=dtype)
    def transpose(self, *axes): return _numpy().transpose(self, axes or None)
    def sum(self, axis=None, dtype=None, keepdims=False, initial=None):
        return _numpy().sum(self, axis, dtype=dtype, keepdims=keepdims, initial=initial)

    def prod(self, axis=None, dtype=None, keepdims=False, initial=None):
        return _numpy().prod(self, axis, dtype=dtype, keepdims=keepdims, initial=initial)

    def max(self, axis=None, keepdims=False, initial=None):
        return _numpy().max(self, axis, keepdims=keepdims, initial=initial)

    def min(self, axis=None, keepdims=False, initial=None):
        return _numpy().min(self, axis, keepdims=keepdims, initial=initial)

    def mean(self, axis=None, dtype=None, keepdims=False):
        return _numpy().mean(self, axis, dtype=dtype, keepdims=keepdims)

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False):
        return _numpy().var(self, axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, ddof=0, keepdims=False):
        return _numpy().std(self, axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def any(self, axis=None, keepdims=False): return _numpy().any(self, axis, keepdims=keepdims)
    def all(self, axis=None, keepdims=False): return _numpy().all(self, axis, keepdims=keepdims)
    def cumprod(self, axis=None): return _numpy().cumprod(self, axis)
    def round(self, decimals=0): return _numpy().round(self, decimals)

    def nonzero(self):
        raise _control_flow_error("nonzero() (its result shape depends on the values)",
                                  self.aval)

    def argmax(self, axis=None): return _numpy().argmax(self, axis)
    def argmin(self, axis=None): return _numpy().argmin(self, axis)
    def cumsum(self, axis=None): return _numpy().cumsum(self, axis)
    def dot(self, o): return _numpy().dot(self, o)
    def squeeze(self, axis=None): return _numpy().squeeze(self, axis)
    def ravel(self): return _numpy().ravel(self)
    def flatten(self): return _numpy().ravel(self)
    def clip(self, a_min=None, a_max=None): return _numpy().clip(self, a_min, a_max)
    def swapaxes(self, a, b): return _numpy().swapaxes(self, a, b)
    def item(self): raise _control_flow_error("item()", self.aval)
    def tolist(self): raise _control_flow_error("tolist()", self.aval)


def is_tracer(x) -> bool:
    return isinstance(x, Tracer)


def check_dtype_equal(name: str, *avals) -> np.dtype:
    """Primitives take operands of one dtype; promotion is the frontend's job."""
    dts = {a.dtype for a in avals}
    if len(dts) > 1:
        raise ShapeError(f"operands of {name} must share one dtype, got "
                         f"{', '.join(str(a) for a in avals)}; convert with astype first")
    return avals[0].dtype


__all__ = ["Primitive", "declare", "bind", "trace", "Tracer", "GraphBuilder", "PRIMITIVES",
           "get_aval", "is_tracer", "ShapedArray", "Graph", "Var", "Literal", "Eqn",
           "dtypes", "check_dtype_equal"]
