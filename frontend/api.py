"""Tracing entry points: make_graph, shape specs, and the trace cache."""
from __future__ import annotations

import contextlib
import functools
import inspect
import weakref
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from . import dims, dtypes, flags, tree
from . import numpy as _jnp  # noqa: F401  (declares the primitives, installs Tracer's methods)
from .array import Array
from .core import Tracer, known_value, trace
from .errors import JxError, ShapeError, user_location
from .ir import ShapedArray, aval_of, extent_problem
from .numpy._util import _from_python


def _spec_error(text: str):
    where = user_location()
    raise ShapeError(text + (f" (at {where})" if where else ""))


@dataclass(frozen=True)
class ShapeDtypeStruct:
    """An abstract argument: a shape and a dtype, no data (JAX's name). A dimension
    is an int, or symbolic: a name ('B'), an expression ('2*B') or jx.dims.dim(...)
    with constraints, kept in `constraints` (jx.dims.DimSpec each)."""
    shape: tuple
    dtype: np.dtype
    constraints: tuple = ()

    def __post_init__(self):
        shape, specs = [], list(self.constraints)
        for d in self.shape:      # 3.7 or True would silently become 3 or 1
            if isinstance(d, (str, dims.DimSpec, dims.Dim)):
                if isinstance(d, dims.DimSpec):
                    specs.append(d)
                try:
                    shape.append(dims.parse(d))
                except dims.DimensionSpecError as e:
                    _spec_error(f"shape {tuple(self.shape)!r}: {e}")
                continue
            if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 \
                    or d >= 1 << 48:
                _spec_error(f"shape {tuple(self.shape)!r}: each dimension must be an int "
                            f"from 0 to 2**48 - 1 or a symbol's name such as 'B', got {d!r}")
            shape.append(int(d))
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "constraints", tuple(specs))
        # a declaration: float64 stays float64 in either mode (its trace runs with
        # 64-bit mode on, see trace_pytree); Python's float/int take the mode's
        dt = self.dtype
        object.__setattr__(self, "dtype", dtypes.canonicalize(dt) if any(dt is t for t in (float, int, bool))
                           else dtypes.check_supported(dt))
        problem = extent_problem(self.shape, self.dtype)
        if problem:
            _spec_error(problem)

    @property
    def aval(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __str__(self) -> str:
        return str(self.aval)


class _DTypeSpecMaker:
    """`jx.f32[128, 784]` -> ShapeDtypeStruct((128, 784), float32)."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def __getitem__(self, shape) -> ShapeDtypeStruct:
        if shape == () or shape is Ellipsis:
            shape = ()
        elif not isinstance(shape, tuple):
            shape = (shape,)
        return ShapeDtypeStruct(shape, self.dtype)

    def __repr__(self) -> str:
        return f"jx.{dtypes.short_name(self.dtype)}"


def leaf_aval(x) -> ShapedArray:
    """Abstract value of one argument leaf: a spec (as declared), a tracer or a
    concrete value in the mode's dtypes. A Python scalar traces weakly typed, as in
    JAX (jit(f)(2.0) multiplies an f16 array as f16); a jx.Array with its own
    weak type (jnp.full(3, 2.0) stays weak through jit, as in JAX)."""
    if type(x) is Array:
        return ShapedArray(x.shape, x.dtype, x._weak)
    if isinstance(x, ShapeDtypeStruct):
        return x.aval
    if isinstance(x, Tracer):
        return x.aval.strip_weak()
    if isinstance(x, (np.ndarray, np.generic)):   # (before float: np.float64 is one)
        a = aval_of(x)          # (refuses masked arrays)
        return ShapedArray(a.shape, dtypes.canonical(a.dtype))
    if isinstance(x, (bool, int, float)):
        return aval_of(x)
    try:
        return aval_of(_from_python(x))
    except (TypeError, ValueError) as e:
        raise JxError(f"argument {x!r} is not an array, a number or a jx.ShapeDtypeStruct "
                      f"({e}); pass arrays or mark it static with static_argnums") from None


def _static_key(v):
    try:
        hash(v)
        return v
    except TypeError:
        raise JxError(f"static argument {v!r} must be hashable (it keys the trace cache); "
                      "pass a tuple instead of a list, or make it a traced argument") from None


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def split_static(args, static_argnums: Sequence[int]) -> tuple:
    static = {i % max(len(args), 1): args[i] for i in static_argnums if -len(args) <= i < len(args)}
    dynamic = [a for i, a in enumerate(args) if i not in static]
    return static, dynamic


def merge_static(static: dict, dynamic: Sequence, n: int) -> list:
    it = iter(dynamic)
    return [static[i] if i in static else next(it) for i in range(n)]


def declared_constraints(leaves) -> dims.Constraints:
    """The constraints the specs among `leaves` declare on their symbolic sizes."""
    return dims.constraints_of(x.constraints for x in leaves if isinstance(x, ShapeDtypeStruct))


def trace_pytree(f: Callable, args: Sequence, kwargs: dict | None = None,
                 static_argnums: Sequence[int] = (), name: str | None = None,
                 known: bool = False):
    """Trace f on abstract versions of args; returns a Graph (cached).

    Static arguments are passed to f as they are; the rest are flattened to
    leaves, each becoming a graph input. The graph's in_tree/out_tree rebuild
    the pytrees. Captured tracers from an enclosing trace become leading inputs
    (returned as consts).

    known=True (differentiation at a point): if every leaf's value is known (concrete,
    or a tracer of a known trace), f is traced with tracers carrying those values,
    so Python control flow on them follows the branch taken. Such a graph holds for
    these values only and is not cached.
    """
    kwargs = kwargs or {}
    static, dynamic = split_static(args, static_argnums)
    leaves, in_tree = tree.flatten((tuple(dynamic), kwargs))
    if not flags.STATE.x64 and any(isinstance(x, ShapeDtypeStruct) and dtypes.is_wide(x.dtype)
                                   for x in leaves):
        # a declared 64-bit input makes a 64-bit program: traced as JAX would need
        # (64-bit mode on), so the library's defaults inside are 64-bit too
        with flags.enable_x64():
            return trace_pytree(f, args, kwargs, static_argnums, name, known)
    in_avals = tuple(leaf_aval(x) for x in leaves)
    # symbolic dimensions: shape rules decide under the arguments' declared constraints
    cons = declared_constraints(leaves)
    key = (flags.STATE.mode, tuple(sorted((i, _static_key(v)) for i, v in static.items())),
           in_tree, in_avals, cons.symbols_key())
    per_fun = _CACHE.setdefault(f, {}) if _weakrefable(f) else {}
    if key in per_fun and not any(isinstance(x, Tracer) for x in leaves):
        return per_fun[key], []
    out_tree_box: list = []

    def flat_fun(*flat):
        dyn, kw = tree.unflatten(in_tree, flat)
        out = f(*merge_static(static, dyn, len(args)), **kw)
        out_leaves, out_tree = tree.flatten(out)
        out_tree_box.append(out_tree)
        return [_check_output(o, f) for o in out_leaves]

    values = _known_leaves(leaves, in_avals) if known else None
    with dims.scope(cons) if cons.specs else contextlib.nullcontext():
        graph, consts = trace(flat_fun, in_avals, name=getattr(f, "__name__", "function"),
                              values=values)
    graph = type(graph)(graph.inputs, graph.eqns, graph.outputs, in_tree, out_tree_box[0])
    if not consts and values is None:
        per_fun[key] = graph
    return graph, consts


def _known_leaves(leaves, in_avals) -> list | None:
    """The leaves' concrete values at the trace's dtypes, or None if one is unknown."""
    values = []
    for x, a in zip(leaves, in_avals):
        if isinstance(x, ShapeDtypeStruct):
            return None
        v = known_value(x)
        if v is None:
            return None
        values.append(np.asarray(v, dtype=a.dtype).reshape(a.shape))
    return values


def _weakrefable(f) -> bool:
    try:
        weakref.ref(f)
        return True
    except TypeError:
        return False


def _check_output(o, f):
    if isinstance(o, (Tracer, Array, np.ndarray, np.generic, bool, int, float)):
        return o
    raise JxError(f"{getattr(f, '__name__', 'function')} returned {type(o).__name__} "
                  f"{o!r}: outputs must be arrays or pytrees of arrays")


def make_graph(f: Callable, static_argnums: int | Sequence[int] = ()) -> Callable:
    """make_graph(f)(*args) -> the Graph of f at the shapes/dtypes of args.

    Args may be arrays, Python numbers or jx.ShapeDtypeStruct (e.g. jx.f32[3, 4]).
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)

    @functools.wraps(f)
    def graph_of(*args, **kwargs):
        graph, consts = trace_pytree(f, args, kwargs, static_argnums)
        if consts:
            raise JxError("make_graph was called inside another trace and the function "
                          "closes over traced values; pass them as arguments instead")
        return graph
    return graph_of


# ---------------------------------------------------------------- JAX's inspection API

class ClosedGraph:
    """What jx.make_jaxpr returns: jx's graph with the names of JAX's ClosedJaxpr.
    str() is the graph's text (as str(jx.make_graph(f)(*args))); .jaxpr and .graph
    are the Graph; .consts the values of captured tracers (empty at top level)."""

    def __init__(self, graph, consts):
        self.graph, self.consts = graph, list(consts)

    jaxpr = property(lambda self: self.graph)
    eqns = property(lambda self: self.graph.eqns)
    in_avals = property(lambda self: self.graph.in_avals)
    out_avals = property(lambda self: self.graph.out_avals)
    literals = property(lambda self: self.consts)

    @property
    def out_shapes(self):
        """The outputs as a pytree of ShapeDtypeStructs (make_jaxpr's return_shape)."""
        return tree.unflatten(self.graph.out_tree, [ShapeDtypeStruct(a.shape, a.dtype)
                                                    for a in self.graph.out_avals])

    def __str__(self) -> str:
        return str(self.graph)

    def __repr__(self) -> str:
        return str(self.graph)

    def pretty_print(self, **_) -> str:
        return str(self.graph)


def make_jaxpr(f: Callable, static_argnums: int | Sequence[int] = (), axis_env=None,
               return_shape: bool = False) -> Callable:
    """make_jaxpr(f)(*args) -> f's traced graph as a ClosedGraph (JAX's ClosedJaxpr
    names: .jaxpr, .consts, .in_avals, .out_avals; str() prints jx's IR). With
    return_shape=True, (graph, the outputs' ShapeDtypeStructs). Nothing compiles."""
    if axis_env is not None:
        raise JxError("make_jaxpr: axis_env is not supported; trace the collectives "
                      "inside jx.vmap(f, axis_name=...) instead")
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    static_argnums = tuple(static_argnums)

    @functools.wraps(f)
    def jaxpr_of(*args, **kwargs):
        graph, consts = trace_pytree(f, args, kwargs, static_argnums)
        closed = ClosedGraph(graph, consts)
        return (closed, closed.out_shapes) if return_shape else closed
    return jaxpr_of


def _spec_of(x):
    """Duck-typed abstract arguments (anything with .shape and .dtype, as JAX's
    eval_shape takes) as ShapeDtypeStructs; arrays, numbers and tracers as given."""
    if isinstance(x, (Tracer, Array, ShapeDtypeStruct, np.ndarray, np.generic)) or \
            not (hasattr(x, "shape") and hasattr(x, "dtype")):
        return x
    return ShapeDtypeStruct(tuple(x.shape), np.dtype(x.dtype))


def eval_shape(f: Callable, *args, **kwargs):
    """The shapes and dtypes of f(*args, **kwargs) as a pytree of ShapeDtypeStructs,
    found by tracing: nothing runs and nothing compiles. Arguments may be arrays,
    numbers, ShapeDtypeStructs or anything with .shape and .dtype."""
    args, kwargs = tree.tree_map(_spec_of, (args, kwargs))
    graph, _ = trace_pytree(f, args, kwargs)
    return ClosedGraph(graph, ()).out_shapes


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Each leaf of x as a jx.Array (NumPy buffers are copied; a jx.Array comes back
    itself; tracers pass through). device: None or one of jx.devices(); src,
    donate and may_alias are accepted and have no effect on the CPU."""
    if device is not None and getattr(device, "platform", None) != "cpu":
        raise JxError(f"device_put: device={device!r} is not a CPU device; give one of "
                      "jx.devices() or None (shardings are not supported)")
    from .numpy import asarray

    def put(leaf):
        if isinstance(leaf, (Tracer, Array)):
            return leaf
        return asarray(leaf)
    return tree.tree_map(put, x)


def device_get(x):
    """x with each jx.Array leaf as a NumPy array (other leaves as they are)."""
    def get(leaf):
        if isinstance(leaf, Tracer):
            return leaf
        return np.asarray(leaf) if hasattr(leaf, "__array__") else leaf
    return tree.tree_map(get, x)


def block_until_ready(x):
    """Waits for every array leaf of x (jx's results are ready when returned); x."""
    for leaf in tree.tree_leaves(x):
        wait = getattr(leaf, "block_until_ready", None)
        if callable(wait) and not isinstance(leaf, Tracer):
            wait()
    return x


# ---------------------------------------------------------------- compilation caches
# jx.clear_caches empties these: each jitted/pmapped function registers its dicts
# (weakly: a function's caches go with it).
_OWNED_CACHES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def register_caches(owner, *caches: dict) -> None:
    _OWNED_CACHES[owner] = caches


def clear_registered_caches() -> None:
    for caches in list(_OWNED_CACHES.values()):
        for c in caches:
            c.clear()
    _CACHE.clear()


def signature_names(f: Callable) -> list:
    try:
        return [p.name for p in inspect.signature(f).parameters.values()]
    except (TypeError, ValueError):
        return []
