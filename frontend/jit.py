"""jx.jit: trace once per (static args, argument tree, shapes, dtypes), run the
pass pipeline, fuse, compile to native code in-process, and call it.

Called with tracers (inside grad, vmap or another jit) it is transparent: the
function is traced into the enclosing graph, so every composition works.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable, Iterable, Sequence

import numpy as np

from . import flags, gc_pause, nan_checks, timings, tree
from .array import Array
from .api import (clear_registered_caches, leaf_aval, make_jaxpr, merge_static,
                  register_caches, split_static, _static_key)
from .core import Tracer, forget_known
from .dispatch import MISS, make_plan
from .errors import JxError, MaskedArrayError, reject_masked
from .staging import finish, stage
from .staging import trace as trace_staged

# Argument types the fast path keys by (shape, dtype) alone: arrays and NumPy
# scalars (strongly typed, so a float32 scalar traces exactly as a 0-d array) and
# jx.Arrays (traced strongly typed too, see api.leaf_aval).
_MAX_PLANS = 8            # signatures per jitted function with a specialised call path
_FAST_TYPES = frozenset({np.ndarray, Array} | {t for t in np.sctypeDict.values()
                                               if issubclass(t, np.generic)})


class _Compiled:
    __slots__ = ("fn", "out_tree", "unflatten", "_program")

    def __init__(self, fn, out_tree, program=None):
        self.fn, self.out_tree, self._program = fn, out_tree, program
        self.unflatten = _fast_unflatten(out_tree)

    @property
    def program(self):
        """The fused program (on the CPU, built now if the code was found by the
        traced graph's key)."""
        return self._program if self._program is not None else self.fn.program

    @property
    def graph(self):
        """The graph after the pass pipeline (for inspection)."""
        return self.program.graph


def _fast_unflatten(out_tree):
    """Rebuilding the result is on every call's path: special-case the common trees."""
    if out_tree.kind is None:
        return lambda outs: outs[0]
    if out_tree.kind is tuple and all(c.kind is None for c in out_tree.children):
        return tuple
    return lambda outs: tree.unflatten(out_tree, outs)


def jit(fun: Callable | None = None, /, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Iterable[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Iterable[str] | None = None, keep_unused: bool = False,
        device=None, backend: str | None = None, inline: bool = False,
        abstracted_axes=None, in_shardings=None, out_shardings=None,
        compiler_options: dict | None = None):
    """Compile fun for the CPU (or, with backend="cuda", an NVIDIA GPU through CuPy:
    CuPy or NumPy arrays in, CuPy arrays out) on first call per input signature.
    On the CPU the results are jx.Arrays. The default backend is the first platform
    jax_platforms (jx.config) names, else the CPU.

    The forms of jax.jit: `@jx.jit`, `@jx.jit(static_argnums=1)`,
    `functools.partial(jx.jit, static_argnames="n")`. static_argnums (negative ones
    count from the end of each call's positional arguments) and static_argnames
    complete each other through fun's signature, as in JAX: a static argument may
    be passed by position or by keyword; static values key the compilation cache.
    donate_argnums/donate_argnames are checked and otherwise ignored: compiled
    functions return fresh buffers and never reuse an argument's. keep_unused,
    inline (a jitted function called inside a trace is always inlined) and
    compiler_options (XLA's flags) are accepted and have no effect. device: None or
    one of jx.devices(). Shardings (one device) are refused unless None.

    abstracted_axes (JAX's name; CPU): compile once for a family of shapes. A
    tuple over the positional arguments, each entry None (fixed shapes), or for
    every array of that argument its symbolic axes: a dict {axis: name} or a tuple
    of names and Nones, a name being a string or jx.dims.dim(...) with constraints,
    e.g. `jx.jit(loss, abstracted_axes=(None, {0: "B"}, {0: "B"}))`: every batch
    size runs the one compiled function, its sizes read off the arguments.
    """
    if fun is None:                    # @jx.jit(static_argnums=...): a decorator
        opts = dict(static_argnums=static_argnums, static_argnames=static_argnames,
                    donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                    keep_unused=keep_unused, device=device, backend=backend, inline=inline,
                    abstracted_axes=abstracted_axes, in_shardings=in_shardings,
                    out_shardings=out_shardings, compiler_options=compiler_options)
        return lambda f: jit(f, **opts)
    if not callable(fun):
        raise TypeError(f"jx.jit: expected a function to compile, got {type(fun).__name__} "
                        f"{fun!r:.60}; static arguments go in static_argnums=")
    _refuse_unsupported(in_shardings, out_shardings)
    backend = _backend_of(device, backend)
    if abstracted_axes is not None and backend != "cpu":
        raise JxError("jx.jit: abstracted_axes (symbolic sizes) compile for the CPU only; "
                      "on the CUDA backend drop it (each shape compiles once and is cached)")
    argnums, argnames = argnums_and_argnames(fun, static_argnums, static_argnames,
                                             "static_argnums", "static_argnames")
    donums, donames = argnums_and_argnames(fun, donate_argnums, donate_argnames,
                                           "donate_argnums", "donate_argnames")
    _check_disjoint(argnums, donums, argnames, donames)
    static_names = frozenset(argnames)
    cache: dict = {}
    state = flags.STATE
    fast_types, aval_of = _FAST_TYPES, leaf_aval
    if backend == "cuda":             # device arrays key and trace by shape and dtype
        from jx.codegen.cuda.jit import array_type, leaf_aval as aval_of
        fast_types = frozenset({array_type()})

    def compile_for(args, kwargs, static_kw, key):
        with gc_pause.paused():          # (a third of code generation's time otherwise)
            return _compile(args, kwargs, static_kw, key)

    def _compile(args, kwargs, static_kw, key):
        if backend == "cuda":
            from jx.codegen.cuda.jit import CompiledFunction, abstract
            args, kwargs = abstract(args), abstract(kwargs)
            arrays = {}
        else:
            with timings.stage("import"):
                from jx.codegen.cpu.jit import CompiledFunction
            arrays = {"arrays": True}
            from .autotune import ensure
            ensure()                 # the host's tuned constants, measured at first use
        if state.log_compiles:
            _log_compile(fun, args, {**static_kw, **kwargs})
        traced = trace_staged(_with_keywords(fun, static_kw), args, kwargs, argnums)
        # the CPU backend mangles the name itself and shows it unmangled in errors
        name = getattr(fun, "__name__", "fn") if backend == "cpu" else _symbol(fun)
        if arrays:
            # the passes and fusion run only if the traced graph's code is not
            # found in the cache (codegen/cpu/program_cache.py's graph keys)
            fn = CompiledFunction(lambda: finish(traced).program, name, **arrays,
                                  out_weak=traced.out_weak,
                                  traced=(traced.graph, traced.constraints))
            compiled = _Compiled(fn, traced.out_tree)
        else:
            program = finish(traced).program
            compiled = _Compiled(CompiledFunction(program, name), traced.out_tree, program)
        cache[key] = compiled
        return compiled

    quick: dict = {}          # calls with static or keyword arguments -> compiled
    static_at: dict = {}      # number of positional args -> static positions

    plans: list = []          # call plans specialised to signatures seen (jx.dispatch)
    planned: set = set()      # the cache keys they were made for

    sym_quick: dict = {}      # abstracted_axes: concrete signature -> compiled

    def plain_key(args) -> tuple:
        """The cache key of a call on plain arrays: its mode and signature."""
        return state.mode, tuple([(type(a), a.shape, a.dtype) for a in args])

    def symbolic_call(args, kwargs):
        """A call with abstracted_axes: the arguments' leaves with the named axes
        made symbolic key the cache, so each family of shapes compiles once."""
        if not kwargs and not argnums:       # plain arrays: their signature is the key
            try:
                compiled = sym_quick.get(plain_key(args))
            except AttributeError:
                compiled = None
            if compiled is not None:
                return compiled.unflatten(compiled.fn(*args))
        static, dynamic = split_static(args, argnums)
        static_kw = {k: v for k, v in kwargs.items() if k in static_names}
        kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
        leaves, in_tree = tree.flatten((tuple(dynamic), kwargs))
        if any(isinstance(x, Tracer) for x in leaves):      # inside a trace: inline
            return fun(*args, **static_kw, **kwargs)
        try:        # a signature seen before: no abstraction to redo
            quick_key = (state.mode, in_tree, tuple(sorted(static.items())),
                         tuple(sorted(static_kw.items())),
                         tuple([(type(x), getattr(x, "shape", None), getattr(x, "dtype", None))
                                for x in leaves]))
            compiled = sym_quick.get(quick_key)
        except TypeError:                                  # an unhashable static
            quick_key = compiled = None
        if compiled is not None:
            return compiled.unflatten(compiled.fn(*leaves))
        specs = _abstract_leaves(fun, args, argnums, abstracted_axes)
        specs += [None] * (len(leaves) - len(specs))      # keyword arguments: fixed
        abstract = [_abstract_leaf(x, spec) for x, spec in zip(leaves, specs)]
        key = ("abstracted", state.mode,
               tuple(sorted((i, _static_key(v)) for i, v in static.items())),
               tuple(sorted((k, _static_kw_key(k, v)) for k, v in static_kw.items())),
               in_tree, tuple((a.aval, a.constraints) for a in abstract))
        compiled = cache.get(key)
        if compiled is None:
            sym_dynamic, sym_kwargs = tree.unflatten(in_tree, abstract)
            compiled = compile_for(merge_static(static, sym_dynamic, len(args)), sym_kwargs,
                                   static_kw, key)
            compiled.fn.leaf_names = _leaf_names(fun, args, argnums, kwargs)
        if quick_key is not None:
            sym_quick[quick_key] = compiled
            if not kwargs and not argnums and all(type(a) in fast_types for a in args):
                sym_quick[plain_key(args)] = compiled
        return compiled.unflatten(compiled.fn(*leaves))

    @functools.wraps(fun)
    def jitted(*args, **kwargs):
        if abstracted_axes is not None and not state.special:
            return symbolic_call(args, kwargs)
        for plan in plans:                         # pytrees, Python scalars, statics
            out = plan(args, kwargs)
            if out is not MISS:
                return out
        if not state.special:
            if not kwargs and not argnums:         # the fast path: plain NumPy arrays
                try:
                    key = tuple([(a.shape, a.dtype) for a in args if type(a) in fast_types])
                except AttributeError:
                    key = None
                if key is not None and len(key) == len(args):
                    key = (state.mode, key)        # (float64 data is float32 when x64 is off)
                    compiled = cache.get(key)
                    if compiled is None:
                        compiled = compile_for(args, kwargs, {}, key)
                    return compiled.unflatten(compiled.fn(*args))
            else:                                  # static or keyword arguments, arrays
                found = quick_lookup(args, kwargs)
                if found is not None:
                    compiled, leaves = found
                    return compiled.unflatten(compiled.fn(*leaves))
        elif state.disable_jit:
            return fun(*args, **kwargs)
        else:                                      # debug_nans/infs
            return nan_checks.checked_call(general, fun, args, kwargs)
        return general(*args, **kwargs)

    def quick_lookup(args, kwargs):
        """(compiled, its flat arguments) when every traced argument is an array of
        the fast types, keyed without flattening: static values, keyword names,
        shapes and dtypes. None sends the call the general way."""
        n = len(args)
        at = static_at.get(n)
        if at is None:
            at = static_at[n] = frozenset(split_static(range(n), argnums)[0])
        statics, leaves, sig = [], [], []
        for i, a in enumerate(args):
            if i in at:
                statics.append(a)
            elif type(a) in fast_types:
                leaves.append(a)
                sig.append((a.shape, a.dtype))
            else:
                return None
        for k in sorted(kwargs):                   # the order tree.flatten gives a dict
            v = kwargs[k]
            if k in static_names:
                statics.append((k, v))
            elif type(v) in fast_types:
                leaves.append(v)
                sig.append((k, v.shape, v.dtype))
            else:
                return None
        key = (state.mode, n, tuple(statics), tuple(sig))
        try:
            compiled = quick.get(key)
        except TypeError:                          # an unhashable static: general's error
            return None
        if compiled is None:
            compiled = resolve(args, kwargs)[0]
            quick[key] = compiled
        return compiled, leaves

    def general(*args, **kwargs):
        compiled, leaves, traced_result = resolve(args, kwargs)
        if compiled is None:
            return traced_result
        return compiled.unflatten(compiled.fn(*leaves))

    def resolve(args, kwargs):
        """(compiled, flat arguments, None), or (None, None, fun's traced result)
        inside another trace."""
        static, dynamic = split_static(args, argnums)
        static_kw = {}
        if kwargs and static_names:
            static_kw = {k: v for k, v in kwargs.items() if k in static_names}
            kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
        leaves, in_tree = tree.flatten((tuple(dynamic), kwargs))
        if any(isinstance(x, Tracer) for x in leaves):
            # inside another trace: staged inline, with its inputs abstract as JAX's
            # jit makes them (no branching on the values a derivative point carries)
            dynamic, kwargs = tree.unflatten(in_tree, [forget_known(x) for x in leaves])
            return None, None, fun(*merge_static(static, dynamic, len(args)), **static_kw,
                                   **kwargs)
        try:
            avals = tuple(aval_of(x) for x in leaves)
        except MaskedArrayError:
            _refuse_masked(fun, args, {**static_kw, **kwargs})
            raise
        key = (state.mode, tuple(sorted((i, _static_key(v)) for i, v in static.items())),
               tuple(sorted((k, _static_kw_key(k, v)) for k, v in static_kw.items())),
               in_tree, avals)
        compiled = cache.get(key) or compile_for(args, kwargs, static_kw, key)
        if len(planned) < _MAX_PLANS and key not in planned and backend == "cpu" and \
                not state.special:
            planned.add(key)
            plan = make_plan(compiled.fn, in_tree, leaves, static, static_kw, len(args),
                             tuple(kwargs) + tuple(static_kw), compiled.out_tree, state.mode,
                             (dynamic, kwargs))
            if plan is not None:
                plans.append(plan)
        return compiled, leaves, None

    def lower(*args, **kwargs):
        """The fused program jit would compile for these arguments (for inspection)."""
        static_kw = {k: v for k, v in kwargs.items() if k in static_names}
        kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
        return stage(_with_keywords(fun, static_kw), args, kwargs, argnums,
                     check=True).program

    def trace(*args, **kwargs):
        """fun's graph at these arguments, as jx.make_jaxpr shows it."""
        static_kw = {k: v for k, v in kwargs.items() if k in static_names}
        kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
        return make_jaxpr(_with_keywords(fun, static_kw), argnums)(*args, **kwargs)

    def eval_shape(*args, **kwargs):
        """The ShapeDtypeStructs of fun's results at these arguments, compiling nothing."""
        return trace(*args, **kwargs).out_shapes

    jitted.lower, jitted.trace, jitted.eval_shape = lower, trace, eval_shape
    jitted._cache = cache
    register_caches(jitted, cache, quick, plans, planned, sym_quick)
    return jitted


def argnums_and_argnames(fun, argnums, argnames, nums_what: str, names_what: str,
                         who: str = "jx.jit") -> tuple:
    """(argnums, argnames) completed from each other through fun's signature as
    JAX does: given only argnums, the positional-or-keyword parameters at those
    positions are named too; given only argnames, their positions are added. Both
    are checked against the signature (when it has one)."""
    argnums = _index_tuple(argnums, nums_what, who)
    argnames = _name_tuple(argnames, names_what, who)
    if not argnums and not argnames:
        return (), ()
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):      # builtins and the like: taken as given
        return argnums, argnames
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if argnums and not any(p.kind == p.VAR_POSITIONAL for p in params):
        n = len(positional)
        bad = [i for i in argnums if not -n <= i < n]
        if bad:
            raise ValueError(f"{who}: {nums_what}={argnums} but {_name(fun)} takes only {n} "
                             f"positional argument{'s' * (n != 1)}; give positions "
                             f"from {-n} to {n - 1}")
    if argnames:
        by_name = {p.name: p for p in params}
        posonly = sorted(k for k in argnames if k in by_name
                         and by_name[k].kind == by_name[k].POSITIONAL_ONLY)
        if posonly:
            raise ValueError(f"{who}: {names_what} names {posonly}, positional-only "
                             f"parameters of {_name(fun)}; use {nums_what} for them")
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            unknown = sorted(k for k in argnames if k not in by_name)
            if unknown:
                raise ValueError(f"{who}: {names_what} names {unknown}, which "
                                 f"{_name(fun)} does not take (its parameters: "
                                 f"{[p.name for p in params]})")
    if argnums and not argnames:
        argnames = tuple(p.name for i, p in enumerate(params)
                         if p.kind == p.POSITIONAL_OR_KEYWORD and i in argnums)
    elif argnames and not argnums:
        argnums = tuple(i for i, p in enumerate(params)
                        if p.kind == p.POSITIONAL_OR_KEYWORD and p.name in argnames)
    return argnums, argnames


def _index_tuple(v, what: str, who: str) -> tuple:
    if v is None:
        return ()
    items = (v,) if isinstance(v, (int, np.integer)) else v
    try:
        items = tuple(items)
    except TypeError:
        items = (v,)
    for i in items:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"{who}: {what} must be an int or a sequence of ints, got {v!r}")
    return tuple(int(i) for i in items)


def _name_tuple(v, what: str, who: str) -> tuple:
    if v is None:
        return ()
    items = (v,) if isinstance(v, str) else v
    try:
        items = tuple(items)
    except TypeError:
        items = (v,)
    for k in items:
        if not isinstance(k, str):
            raise TypeError(f"{who}: {what} must be a str or a sequence of str, got {v!r}")
    return items


def _check_disjoint(argnums, donums, argnames, donames) -> None:
    both = sorted(set(argnums) & set(donums))
    if both:
        raise ValueError(f"jx.jit: arguments {both} are in both static_argnums and "
                         "donate_argnums; a static argument is a Python value and has no "
                         "buffer to donate")
    both = sorted(set(argnames) & set(donames))
    if both:
        raise ValueError(f"jx.jit: arguments {both} are in both static_argnames and "
                         "donate_argnames; a static argument is a Python value and has no "
                         "buffer to donate")


def _leaf_names(fun, args, argnums, kwargs) -> list:
    """Each dynamic leaf's name for messages: the parameter's name and its path."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    statics = set(split_static(range(len(args)), argnums)[0])
    names = []
    for i, a in enumerate(args):
        if i in statics:
            continue
        base = params[i] if i < len(params) else f"args[{i}]"
        names += [base + tree.keystr(path) for path, _ in tree.flatten_with_path(a)[0]]
    for k in sorted(kwargs):
        names += [k + tree.keystr(path) for path, _ in tree.flatten_with_path(kwargs[k])[0]]
    return names


def _abstract_leaves(fun, args, argnums, axes) -> list:
    """The axes spec of each dynamic positional leaf (abstracted_axes: a tuple over
    the positional arguments; see jit), in tree.flatten's order."""
    if not isinstance(axes, (tuple, list)):       # one argument's dict
        axes = (axes,)
    if len(axes) > len(args):
        raise JxError(f"jx.jit({_name(fun)}): abstracted_axes has {len(axes)} entries for "
                      f"{len(args)} positional arguments; give one per argument (None for "
                      "an argument of fixed shapes)")
    statics = set(split_static(range(len(args)), argnums)[0])
    out = []
    for i, a in enumerate(args):
        if i in statics:
            continue
        spec = axes[i] if i < len(axes) else None
        out += [spec] * len(tree.flatten(a)[0])
    return out


def _is_axes(spec) -> bool:
    """One array's axes: {axis: name} or a tuple of names and Nones."""
    from .dims import DimSpec
    if isinstance(spec, dict):
        return all(isinstance(k, int) for k in spec)
    return isinstance(spec, (tuple, list)) and bool(spec) and \
        all(x is None or isinstance(x, (str, DimSpec)) for x in spec)


def named_axes(spec) -> dict:
    """{axis: name} of one array's abstracted_axes entry (None: {})."""
    if spec is None:
        return {}
    if not _is_axes(spec):
        raise JxError(f"jx.jit: abstracted_axes entry {spec!r} is neither None, a dict "
                      "{axis: name} nor a tuple of names and Nones")
    return dict(spec) if isinstance(spec, dict) else \
        {i: n for i, n in enumerate(spec) if n is not None}


def _abstract_leaf(x, spec):
    """x as a ShapeDtypeStruct whose axes named by `spec` are symbols."""
    from .api import ShapeDtypeStruct
    a = leaf_aval(x)
    shape = list(a.shape)
    for axis, name in named_axes(spec).items():
        if not -len(shape) <= axis < len(shape):
            raise JxError(f"jx.jit: abstracted_axes names axis {axis} of an argument of "
                          f"shape {a.shape}, which has {len(shape)} axes")
        shape[axis] = name
    return ShapeDtypeStruct(tuple(shape), a.dtype)


def _refuse_unsupported(in_shardings, out_shardings) -> None:
    for what, v in (("in_shardings", in_shardings), ("out_shardings", out_shardings)):
        if v is not None:
            raise JxError(f"jx.jit: {what}={v!r} is not supported: jx.jit runs on one "
                          "device; drop it (use jx.pmap to run over several)")


def _backend_of(device, backend) -> str:
    if device is not None:
        platform = getattr(device, "platform", None)
        if platform not in ("cpu", "cuda", "gpu"):
            raise JxError(f"jx.jit: device={device!r} is not a device; give one of "
                          "jx.devices() or None")
        if backend is not None:
            raise JxError("jx.jit: give device= or backend=, not both")
        backend = "cuda" if platform in ("cuda", "gpu") else "cpu"
    if backend is None:
        backend = default_backend()
    if backend == "gpu":
        backend = "cuda"
    if backend not in ("cpu", "cuda"):
        raise ValueError(f"jx.jit: unknown backend {backend!r}; use 'cpu' or 'cuda'")
    return backend


def _with_keywords(fun, static_kw: dict):
    """fun with its static keyword arguments bound (they are Python values)."""
    if not static_kw:
        return fun

    def bound(*args, **kwargs):
        return fun(*args, **static_kw, **kwargs)
    bound.__name__ = getattr(fun, "__name__", "fn")
    bound.__qualname__ = getattr(fun, "__qualname__", bound.__name__)
    return bound


def _static_kw_key(name: str, v):
    try:
        hash(v)
        return v
    except TypeError:
        raise JxError(f"static argument {name}={v!r} must be hashable (it keys the "
                      "compilation cache); pass a tuple instead of a list, or make it a "
                      "traced argument") from None


def _name(fun) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def clear_caches() -> None:
    """Forget every compiled and traced function (jax.clear_caches): the next call
    of each jitted or pmapped function traces and compiles again."""
    clear_registered_caches()


def default_backend() -> str:
    """The first of jax_platforms' entries this machine can run: 'cuda' (or 'gpu')
    needs CuPy; nothing set means the CPU."""
    import importlib.util
    wanted = [p.strip() for p in flags.STATE.platforms.split(",") if p.strip()]
    for p in wanted:
        if p == "cpu":
            return "cpu"
        if importlib.util.find_spec("cupy") is not None:
            return "cuda"
    if wanted:
        raise JxError(f"jax_platforms={flags.STATE.platforms!r} asks for a GPU, but CuPy is "
                      "not installed (pip install 'jx[cuda]'); add 'cpu' to the list or "
                      "set jax_platforms to 'cpu'")
    return "cpu"


def _log_compile(fun, args, kwargs) -> None:
    import logging
    def shown(x):
        try:
            return str(leaf_aval(x))
        except Exception:       # a static argument
            return repr(x)
    logging.getLogger("jx").warning(
        "Compiling %s with arguments %s", getattr(fun, "__name__", "function"),
        ", ".join(shown(x) for x in tree.tree_leaves((args, kwargs))))


def _refuse_masked(fun, args, kwargs):
    """The masked-array error again, naming the argument that holds the array."""
    named = [(f"argument {i}", a) for i, a in enumerate(args)]
    named += [(f"keyword argument {k!r}", a) for k, a in kwargs.items()]
    for what, a in named:
        for leaf in tree.tree_leaves(a):
            reject_masked(leaf, f"{what} of jx.jit({getattr(fun, '__name__', 'function')})"
                          + ("" if leaf is a else " (a leaf inside it)"))


def _symbol(fun) -> str:
    name = getattr(fun, "__name__", "fn")
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_"
                   for c in name) or "fn"
