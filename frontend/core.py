"""Primitives, bind, tracers and the graph builder.

Every operation in jx ends in `bind(prim, *args, **params)`. If no argument is
a Tracer, bind runs the primitive's NumPy reference implementation (eager
mode) and returns jx.Arrays (jx.array; inputs may be jx.Arrays, NumPy arrays or
Python scalars). Otherwise it records an equation in the innermost GraphBuilder among
the arguments. Builders are ordered by a level taken at creation: a nested
trace (a cond branch, a loop body, a function being differentiated) always has
a higher level than the traces around it, so tracers from an enclosing trace
are lifted into the inner graph as captured inputs (closure conversion). No
global trace stack is needed: the arguments say where an operation belongs.

A builder made with `known=True` (differentiation at a concrete point) also
computes each equation's value with its NumPy reference when all inputs have
known values, so its tracers answer bool()/float()/int()/item() with the
concrete answer and Python control flow on primals follows the branch taken,
as in JAX. Other builders (jit, vmap, loop bodies) stay abstract: a value is
only known inside the known trace that computed it.
"""
from __future__ import annotations

import contextlib
import contextvars
import itertools
import operator
import threading
from typing import Callable, Sequence

import numpy as np

from . import dtypes, flags
from .array import Array
from .errors import (EscapedTracerError, OutOfMemoryError, ShapeError, TracerConversionError,
                     user_location)
from .dims import Dim, InconclusiveDimensionError, where
from .ir import Eqn, Graph, Literal, ShapedArray, Var, aval_of, extent_problem
from . import printer  # noqa: F401  (installs str(graph): every traced graph prints)

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

    def __init__(self, name: str = "function", known: bool = False):
        self.level = next(self._levels)
        self.name = name
        self.known = known            # compute concrete values as equations are added
        self.inputs: list = []
        self.eqns: list = []
        self.captured: dict = {}      # id(outer tracer) -> (outer tracer, inner Var)
        self.done = False

    def new_input(self, aval: ShapedArray, value=None) -> "Tracer":
        var = Var(aval)
        self.inputs.append(var)
        return Tracer(self, var, value if self.known else None)

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
        if type(x) is Array:
            return Literal(x._value, x.aval)
        return Literal(x) if isinstance(x, (bool, int, float)) else Literal(np.asarray(x))

    def add_eqn(self, prim: Primitive, args: Sequence, params: dict,
                out_avals: Sequence) -> list:
        inputs = tuple(self.lift(a) for a in args)
        outs = tuple(Var(a) for a in out_avals)
        source = getattr(_LOCAL, "source", None) or user_location()
        self.eqns.append(Eqn(prim, inputs, params, outs, source))
        vals = self._known_values(prim, args, params, out_avals) if self.known else None
        if vals is None:
            return [Tracer(self, v) for v in outs]
        return [Tracer(self, v, x) for v, x in zip(outs, vals)]

    def _known_values(self, prim, args, params, out_avals):
        """The equation's outputs by the NumPy reference, or None when an input's
        value is unknown (an abstract outer tracer) or the reference cannot run."""
        vals = [known_value(a) for a in args]
        if any(v is None for v in vals):
            return None
        try:
            return _reference(prim, vals, params, out_avals)
        except Exception:            # the value stays unknown: the trace goes on abstractly
            return None

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
        if not _symbolic(params):
            return _eager(prim, args, params)
        active = _active()
        if not active:
            raise InconclusiveDimensionError(
                f"{prim.name} of a symbolic size outside a trace{where()}: symbolic sizes "
                "exist only while tracing (jx.jit with abstracted_axes, jx.export, "
                "jx.eval_shape)")
        builder = active[-1]
    in_avals = [get_aval(a) for a in args]
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
    except InconclusiveDimensionError as e:      # a symbolic size the rule cannot decide
        raise InconclusiveDimensionError(f"{prim.name}: {e}") from None   # (names the line)


def _reference(prim: Primitive, vals, params, out_avals) -> list:
    """The primitive's NumPy reference on NumPy values, as the shape rule types it
    (eager calls and the values of a known trace alike)."""
    outs = prim.impl(*vals, **params)
    return [np.asarray(o).astype(av.dtype, copy=False).reshape(av.shape)
            for o, av in zip(outs, out_avals)]


def _eager(prim: Primitive, args, params) -> list:
    """Eager mode: the NumPy reference, checked against the shape rule; the
    results are jx.Arrays carrying the rule's weak types."""
    in_avals = [get_aval(a) for a in args]
    out_avals = _abstract_eval(prim, in_avals, params)
    vals = [a._value if type(a) is Array else np.asarray(a, dtype=av.dtype)
            for a, av in zip(args, in_avals)]
    try:
        outs = _reference(prim, vals, params, out_avals)
    except MemoryError:
        raise _eager_memory_error(prim.name, out_avals) from None
    # an output that views a caller's writable NumPy array is copied: the
    # Array must not change when the caller later writes to that array
    mutable = [v for v, a in zip(vals, args) if type(a) is not Array
               and isinstance(v, np.ndarray) and v.flags.writeable]
    if flags.STATE.debug_nans or flags.STATE.debug_infs:
        check_finite(prim.name, outs)
    results = []
    for o, av in zip(outs, out_avals):
        if mutable and any(np.may_share_memory(o, v) for v in mutable):
            o = o.copy()
        results.append(Array(o, av.weak_type))
    return results


def check_finite(what: str, values) -> None:
    """jax_debug_nans / jax_debug_infs: FloatingPointError if a float value holds a
    NaN (or an inf), naming what produced it and the user's line."""
    for v in values:
        v = v._value if type(v) is Array else v
        if not isinstance(v, (np.ndarray, np.generic)) or not dtypes.is_float(v.dtype):
            continue
        wide = np.asarray(v, np.float32) if dtypes.is_half(v.dtype) else v
        for flag, bad, kind in ((flags.STATE.debug_nans, np.isnan, "invalid value (nan)"),
                                (flags.STATE.debug_infs, np.isinf, "divide by zero (inf)")):
            if flag and bad(wide).any():
                where = user_location()
                raise FloatingPointError(f"{kind} encountered in {what}"
                                         + (f" (at {where})" if where else ""))


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


def trace(fun: Callable, in_avals: Sequence, name: str = "function",
          values: Sequence | None = None) -> tuple:
    """Trace fun(*tracers) -> flat list of outputs. Returns (Graph, consts).

    With `values` (one concrete NumPy value per input), the trace is a known one:
    every equation whose inputs are known gets its value too (see the module doc)."""
    builder = GraphBuilder(name, known=values is not None)
    vals = values if values is not None else [None] * len(in_avals)
    tracers = [builder.new_input(a, v) for a, v in zip(in_avals, vals)]
    active = _active()
    active.append(builder)
    try:
        outs = fun(*tracers)
    except BaseException:
        builder.done = True
        raise
    finally:
        active.remove(builder)
    return builder.finish(list(outs))


# The traces this thread is building, innermost last: a value of a symbolic size
# made from no operand (jnp.zeros(x.shape), jnp.arange(B)) cannot be a constant,
# so it is staged into the innermost of them (bind_like).
_LOCAL = threading.local()


def _active() -> list:
    stack = getattr(_LOCAL, "traces", None)
    if stack is None:
        stack = _LOCAL.traces = []
    return stack


@contextlib.contextmanager
def attributed(source: str | None):
    """Equations staged inside are attributed to `source` (file:line): a pass that
    re-traces a user's equation into others keeps pointing errors at the user's line."""
    saved = getattr(_LOCAL, "source", None)
    _LOCAL.source = source or saved
    try:
        yield
    finally:
        _LOCAL.source = saved


def _symbolic(params: dict) -> bool:
    """Whether a primitive's params hold a symbolic size (a shape or a dim)."""
    for v in params.values():
        if isinstance(v, Dim) or (isinstance(v, tuple) and any(isinstance(d, Dim) for d in v)):
            return True
    return False


def get_aval(x) -> ShapedArray:
    return x.aval if type(x) is Array or isinstance(x, Tracer) else aval_of(x)


# ---------------------------------------------------------------- tracers

def known_value(x):
    """The concrete NumPy value of x if it is known now (a concrete array or number,
    or a tracer of a known trace), else None."""
    if isinstance(x, Tracer):
        return x.known
    if type(x) is Array:
        return x._value
    return np.asarray(x, dtype=get_aval(x).dtype)


def forget_known(x):
    """x as an abstract value of its own trace: a tracer of a known trace becomes one
    with the same variable and no value (what jit does to its arguments inside
    differentiation at a point, as JAX's jit abstracts its inputs); else x."""
    if isinstance(x, Tracer) and x.known is not None:
        return Tracer(x.builder, x.ir_var)
    return x


# How the error below tells the user to make an argument static: jit's option unless
# a caller tracing on behalf of another API (jx.export's static=) sets its own.
STATIC_HINT = contextvars.ContextVar("jx_static_hint", default="static_argnums")


def _control_flow_error(what: str, aval) -> TracerConversionError:
    where = user_location()
    return TracerConversionError(
        f"{what} of a traced value ({aval}) at {where}: its value is not known while "
        "tracing. Use jx.lax.cond or jx.numpy.where for branches, jx.lax.while_loop, "
        "fori_loop or scan for loops, or mark the argument static "
        f"({STATIC_HINT.get()}) if it is a compile-time constant.")


class Tracer:
    """A traced value: an abstract value in a trace, with NumPy-style methods."""

    __slots__ = ("builder", "ir_var", "known")
    __array_priority__ = 1000     # numpy_array * tracer defers to Tracer.__rmul__

    def __init__(self, builder: GraphBuilder, var: Var, known=None):
        self.builder = builder
        self.ir_var = var
        self.known = known            # concrete NumPy value (known traces only) or None

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

    # A tracer of a known trace (differentiation at a concrete point) converts to
    # its concrete value, as JAX's do; the rest have none while tracing.
    def __bool__(self):
        if self.known is not None:
            return bool(self.known)
        raise _control_flow_error("Python `if`/`while`/`and`/`or` (bool conversion)", self.aval)

    def __int__(self):
        if self.known is not None:
            return int(self.known)
        raise _control_flow_error("int()", self.aval)

    def __float__(self):
        if self.known is not None:
            return float(self.known)
        raise _control_flow_error("float()", self.aval)

    def __complex__(self):
        if self.known is not None:
            return complex(self.known)
        raise _control_flow_error("complex()", self.aval)

    def __index__(self):
        if self.known is not None:
            return operator.index(self.known)
        raise _control_flow_error("Using as a Python index (__index__)", self.aval)

    def __array__(self, *a, **k):
        raise _control_flow_error("Conversion to a NumPy array", self.aval)

    def __hash__(self):
        raise TypeError("traced values are not hashable")

    # Arithmetic, comparison, indexing, .at, .T and the NumPy methods (.sum,
    # .reshape, .astype, ...) are jx.numpy functions: jx.numpy installs them from
    # ARRAY_METHODS below when it is imported (core sits below it).
    def __pos__(self): return self

    def __setitem__(self, idx, value):
        raise TypeError("jx arrays are immutable: `x[i] = v` cannot update a traced value; "
                        "write `x = x.at[i].set(v)` (or .add, .mul, .min, .max) instead")

    def nonzero(self):
        raise _control_flow_error("nonzero() (its result shape depends on the values)",
                                  self.aval)

    def item(self, *args):
        if self.known is not None:
            return self.known.item(*args)
        raise _control_flow_error("item()", self.aval)

    def tolist(self):
        if self.known is not None:
            return self.known.tolist()
        raise _control_flow_error("tolist()", self.aval)


# The one method table of jx's array types (Tracer now; any later array class
# registers with array_type). jx.numpy fills it with install_array_methods when
# it is imported; every module that traces imports jx.numpy first.
ARRAY_METHODS: dict = {}
_ARRAY_TYPES: list = [Tracer, Array]
# isinstance(tracer, jx.Array) is True, as in JAX (a virtual subclass: code that
# needs a concrete Array tests `type(x) is Array`)
Array.register(Tracer)


def install_array_methods(methods: dict) -> None:
    """Add name -> function/property to the table and to every array type."""
    ARRAY_METHODS.update(methods)
    for cls in _ARRAY_TYPES:
        for name, fn in methods.items():
            setattr(cls, name, fn)


def array_type(cls):
    """Register cls as an array type: it gets the table's methods, now and later."""
    _ARRAY_TYPES.append(cls)
    for name, fn in ARRAY_METHODS.items():
        setattr(cls, name, fn)
    return cls


def is_concrete_array(x) -> bool:
    return type(x) is Array


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
           "get_aval", "is_tracer", "Array", "ShapedArray", "Graph", "Var", "Literal", "Eqn",
           "dtypes", "check_dtype_equal"]
