"""jx.jit: trace once per (static args, argument tree, shapes, dtypes), run the
pass pipeline, fuse, compile to native code in-process, and call it.

Called with tracers (inside grad, vmap or another jit) it is transparent: the
function is traced into the enclosing graph, so every composition works.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from . import flags, nan_checks, tree
from .array import Array
from .api import leaf_aval, merge_static, split_static, _static_key
from .core import Tracer, forget_known
from .errors import JxError, MaskedArrayError, reject_masked
from .staging import stage

# Argument types the fast path keys by (shape, dtype) alone: arrays and NumPy
# scalars (strongly typed, so a float32 scalar traces exactly as a 0-d array) and
# jx.Arrays (traced strongly typed too, see api.leaf_aval).
_FAST_TYPES = frozenset({np.ndarray, Array} | {t for t in np.sctypeDict.values()
                                               if issubclass(t, np.generic)})


class _Compiled:
    __slots__ = ("fn", "out_tree", "graph", "program", "unflatten")

    def __init__(self, fn, out_tree, graph, program):
        self.fn, self.out_tree, self.graph, self.program = fn, out_tree, graph, program
        self.unflatten = _fast_unflatten(out_tree)


def _fast_unflatten(out_tree):
    """Rebuilding the result is on every call's path: special-case the common trees."""
    if out_tree.kind is None:
        return lambda outs: outs[0]
    if out_tree.kind is tuple and all(c.kind is None for c in out_tree.children):
        return tuple
    return lambda outs: tree.unflatten(out_tree, outs)


def jit(fun: Callable, static_argnums: int | Sequence[int] = (), backend: str | None = None):
    """Compile fun for the CPU (or, with backend="cuda", an NVIDIA GPU through CuPy:
    CuPy or NumPy arrays in, CuPy arrays out) on first call per input signature.
    On the CPU the results are jx.Arrays. The default backend is the first platform
    jax_platforms (jx.config) names, else the CPU."""
    if backend is None:
        backend = default_backend()
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    static_argnums = tuple(static_argnums)
    if backend not in ("cpu", "cuda"):
        raise ValueError(f"jx.jit: unknown backend {backend!r}; use 'cpu' or 'cuda'")
    cache: dict = {}
    state = flags.STATE
    fast_types, aval_of = _FAST_TYPES, leaf_aval
    if backend == "cuda":             # device arrays key and trace by shape and dtype
        from jx.codegen.cuda.jit import array_type, leaf_aval as aval_of
        fast_types = frozenset({array_type()})

    def compile_for(args, kwargs, key):
        if backend == "cuda":
            from jx.codegen.cuda.jit import CompiledFunction, abstract
            args, kwargs = abstract(args), abstract(kwargs)
            arrays = {}
        else:
            from jx.codegen.cpu.jit import CompiledFunction
            arrays = {"arrays": True}
            from .autotune import ensure
            ensure()                 # the host's tuned constants, measured at first use
        if state.log_compiles:
            _log_compile(fun, args, kwargs)
        staged = stage(fun, args, kwargs, static_argnums)
        # the CPU backend mangles the name itself and shows it unmangled in errors
        name = getattr(fun, "__name__", "fn") if backend == "cpu" else _symbol(fun)
        compiled = _Compiled(CompiledFunction(staged.program, name, **arrays), staged.out_tree,
                             staged.graph, staged.program)
        cache[key] = compiled
        return compiled

    @functools.wraps(fun)
    def jitted(*args, **kwargs):
        if not kwargs and not static_argnums and not state.special:
            try:                                   # the fast path: plain NumPy arrays
                key = tuple([(a.shape, a.dtype) for a in args if type(a) in fast_types])
            except AttributeError:
                key = None
            if key is not None and len(key) == len(args):
                key = (state.mode, key)            # (float64 data is float32 when x64 is off)
                compiled = cache.get(key)
                if compiled is None:
                    compiled = compile_for(args, kwargs, key)
                return compiled.unflatten(compiled.fn(*args))
        if state.special:                          # disable_jit, debug_nans/infs
            if state.disable_jit:
                return fun(*args, **kwargs)
            return nan_checks.checked_call(general, fun, args, kwargs)
        return general(*args, **kwargs)

    def general(*args, **kwargs):
        static, dynamic = split_static(args, static_argnums)
        leaves, in_tree = tree.flatten((tuple(dynamic), kwargs))
        if any(isinstance(x, Tracer) for x in leaves):
            # inside another trace: staged inline, with its inputs abstract as JAX's
            # jit makes them (no branching on the values a derivative point carries)
            dynamic, kwargs = tree.unflatten(in_tree, [forget_known(x) for x in leaves])
            return fun(*merge_static(static, dynamic, len(args)), **kwargs)
        try:
            avals = tuple(aval_of(x) for x in leaves)
        except MaskedArrayError:
            _refuse_masked(fun, args, kwargs)
            raise
        key = (state.mode, tuple(sorted((i, _static_key(v)) for i, v in static.items())),
               in_tree, avals)
        compiled = cache.get(key) or compile_for(args, kwargs, key)
        return compiled.unflatten(compiled.fn(*leaves))

    jitted.lower = lambda *a, **k: _lower(fun, static_argnums, a, k)
    jitted._cache = cache
    return jitted


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


def _lower(fun, static_argnums, args, kwargs):
    """The fused program jit would compile for these arguments (for inspection)."""
    return stage(fun, args, kwargs, static_argnums, check=True).program
