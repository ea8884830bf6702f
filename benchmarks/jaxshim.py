"""Import a jx model with jx's API names bound to JAX's, to run it with jax.jit.

While the model file (and any sibling module it imports) executes,
sys.modules['jx'] is a stand-in whose numpy/lax/nn/random/tree_util/grad/vmap/...
are JAX's; shape specs and @jx.export stay jx's, so the entries keep their
declarations. The model's functions hold the stand-in in their globals, so they
keep calling JAX after the real jx is back in sys.modules.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types

import jx

# jx attribute -> "module:attribute" in JAX ("module" alone: the module itself).
JAX_NAMES = {
    "numpy": "jax.numpy", "lax": "jax.lax", "nn": "jax.nn", "random": "jax.random",
    "tree_util": "jax.tree_util", "tree": "jax.tree_util",
    "grad": "jax:grad", "value_and_grad": "jax:value_and_grad", "vmap": "jax:vmap",
    "jit": "jax:jit", "jvp": "jax:jvp", "vjp": "jax:vjp", "linearize": "jax:linearize",
    "jacfwd": "jax:jacfwd", "jacrev": "jax:jacrev", "hessian": "jax:hessian",
    "custom_jvp": "jax:custom_jvp", "custom_vjp": "jax:custom_vjp",
    "checkpoint": "jax:checkpoint", "remat": "jax:remat",
    "stop_gradient": "jax.lax:stop_gradient", "float0": "jax.dtypes:float0",
    "register_pytree_node": "jax.tree_util:register_pytree_node",
    "register_pytree_node_class": "jax.tree_util:register_pytree_node_class",
}
# Submodules a model may import by name (`import jx.numpy as jnp`), and where a name
# missing from the first JAX module is looked up next (jx.numpy.rsqrt is jax.lax.rsqrt).
SUBMODULES = {"numpy": ("jax.numpy", "jax.lax", "jax.nn"), "lax": ("jax.lax", "jax.numpy"),
              "nn": ("jax.nn", "jax.numpy"), "random": ("jax.random",),
              "tree_util": ("jax.tree_util",),
              # jx.scipy's names (samples/gp.py imports jx.scipy.linalg)
              "scipy": ("jax.scipy",), "scipy.linalg": ("jax.scipy.linalg",)}


class JaxUnavailable(Exception):
    """JAX cannot be imported here; the JAX column is skipped."""


def import_jax():
    """The jax module, or JaxUnavailable with the reason."""
    try:
        import jax
        import jax.numpy  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means "no JAX"
        raise JaxUnavailable(f"JAX is not importable ({type(e).__name__}: {e}); "
                             "`pip install jax` (or jx[bench]) adds the JAX column") from None
    return jax


def _resolve(target: str):
    mod, _, attr = target.partition(":")
    m = importlib.import_module(mod)
    return getattr(m, attr) if attr else m


def _chained(name: str, sources: tuple) -> types.ModuleType:
    """A module whose attributes come from the first of `sources` that has them."""
    mods = [importlib.import_module(m) for m in sources]
    sub = types.ModuleType(f"jx.{name}", f"{sources[0]} for jx bench")

    def lookup(attr):
        for m in mods:
            if hasattr(m, attr):
                value = getattr(m, attr)
                setattr(sub, attr, value)      # found once, then a plain attribute
                return value
        raise AttributeError(f"neither jx's JAX stand-in nor {', '.join(sources)} has "
                             f"{attr!r} (jx.{name}.{attr} has no JAX equivalent)")
    sub.__getattr__ = lookup
    return sub


def make_shim() -> types.ModuleType:
    shim = types.ModuleType("jx", "jx's API names bound to JAX's (jx bench)")
    for name, target in JAX_NAMES.items():
        try:
            setattr(shim, name, _resolve(target))
        except (ImportError, AttributeError):
            pass            # an older JAX without it: the real jx name is used instead
    for name, sources in SUBMODULES.items():
        setattr(shim, name, _chained(name, sources))
    shim.tree = shim.tree_util

    def fallback(name):     # specs, export, errors, dtypes...: jx's own
        return getattr(jx, name)
    shim.__getattr__ = fallback
    shim.__jx_jax_shim__ = True
    return shim


def _in_folder(module, folder: str) -> bool:
    f = getattr(module, "__file__", None)
    return bool(f) and os.path.dirname(os.path.abspath(f)) == folder


@contextlib.contextmanager
def jax_names(folder: str):
    """Within the block, `import jx...` gives the shim; modules from `folder` (the
    model's siblings) are imported afresh and forgotten afterwards."""
    import_jax()
    shim = make_shim()
    names = ["jx"] + [f"jx.{s}" for s in SUBMODULES]
    saved = {n: sys.modules.get(n) for n in names}
    siblings = {n: m for n, m in list(sys.modules.items()) if _in_folder(m, folder)}
    for n in siblings:
        del sys.modules[n]
    sys.modules["jx"] = shim
    for s in SUBMODULES:
        sys.modules[f"jx.{s}"] = getattr(shim, s)
    try:
        yield shim
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
        for n, m in list(sys.modules.items()):
            if _in_folder(m, folder):
                del sys.modules[n]
        sys.modules.update(siblings)


def load_model_with_jax(path: str) -> types.ModuleType:
    """The model file executed under jax_names (a separate module object)."""
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = types.ModuleType("_jxbench_jax_" + os.path.splitext(os.path.basename(path))[0])
    module.__file__ = path
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    with jax_names(folder):
        sys.modules[module.__name__] = module
        try:
            exec(code, module.__dict__)
        finally:
            sys.modules.pop(module.__name__, None)
    return module


def jax_entries(path: str) -> tuple:
    """({entry name: function running on JAX}, None) or ({}, why JAX is skipped)."""
    try:
        module = load_model_with_jax(path)
    except JaxUnavailable as e:
        return {}, str(e)
    except Exception as e:  # noqa: BLE001 - the jx engines still run
        return {}, (f"JAX skipped: importing the model with JAX names failed "
                    f"({type(e).__name__}: {e})")
    return {e.name: e.fn for e in jx.entries_of(module)}, None


def enable_x64_if_needed(arrays) -> None:
    """JAX truncates 64-bit inputs unless x64 is on; jx keeps them (dtype policy)."""
    if any(np_dtype_bits(a) == 64 for a in arrays):
        import jax
        jax.config.update("jax_enable_x64", True)


def np_dtype_bits(a) -> int:
    import numpy as np
    return np.asarray(a).dtype.itemsize * 8 if hasattr(a, "dtype") else 0
