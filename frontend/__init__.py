"""jx: trace, transform, fuse and compile pure JAX-style numeric Python.

`import jx` loads no other module of jx but jx.version: the package's names
(jx.numpy, jx.jit, jx.grad, jx.f32, ...) are jx._namespace's, loaded together on
the first use of any of them (PEP 562), so `import jx.runtime` needs only the
runtime. Neither loads llvmlite or cupy: the backends do, when something is
compiled.
"""
import importlib as _importlib
import importlib.util as _importlib_util
import sys as _sys
import types as _types

from .version import __version__  # noqa: F401

__all__ = ["numpy", "lax", "make_graph", "ShapeDtypeStruct", "export", "eval_graph",
           "verify", "format_graph", "Graph", "ShapedArray", "Primitive", "PRIMITIVES",
           "Tracer", "f16", "f32", "f64", "i8", "i32", "i64", "u8", "u32", "bool_"]
__all__ += ["nn", "random"]

# jx's functions named like the submodule that defines them (jx.jit is the function
# in jx/jit.py): the import system binds a submodule on its package when it first
# loads it, which must not replace the function (see _Package).
_FUNCTIONS_NAMED_LIKE_MODULES = frozenset({"export", "jit", "pmap", "verify", "vmap"})
_loaded = False


def _load_namespace() -> None:
    global _loaded
    if not _loaded:
        from . import _namespace
        globals().update({k: v for k, v in vars(_namespace).items() if not k.startswith("__")})
        _loaded = True


def _asked_by_a_program() -> bool:
    """Whether the code asking the package for a name (past the import machinery)
    is a program rather than one of jx's own modules."""
    frame = _sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(
            ("importlib", "_frozen_importlib")):
        frame = frame.f_back
    caller = frame.f_globals.get("__name__", "") if frame is not None else ""
    return caller != __name__ and not caller.startswith(__name__ + ".")


def __getattr__(name: str):
    if name.startswith("__"):          # probes (__wrapped__, ...) load nothing
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # A submodule (jx.numpy, jx.dtypes, jx.runtime; `from .. import dtypes` inside jx
    # asks for it here) is imported alone: the runtime must not load the frontend.
    if name not in _FUNCTIONS_NAMED_LIKE_MODULES and \
            _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        module = _importlib.import_module(f"{__name__}.{name}")
        # A program asking for jx.lax, jx.random, ... gets the whole API with it
        # (the hooks the API layer fills, e.g. eager loops compiled); jx's own
        # modules and the runtime get the module alone.
        if name != "runtime" and _asked_by_a_program():
            _load_namespace()
        return module
    _load_namespace()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    _load_namespace()
    return sorted(globals())


class _Package(_types.ModuleType):
    """Package jx: keeps jx.jit (and the others named like their module) the function
    when its submodule is first imported by another route (`from jx.pmap import
    bind_axis` binds the module jx.pmap on jx), as when `import jx` loaded everything
    and bound the functions last."""

    def __setattr__(self, name, value):
        if name in _FUNCTIONS_NAMED_LIKE_MODULES and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
