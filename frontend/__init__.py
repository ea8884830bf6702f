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
           "Tracer", "f16", "f32", "f64", "c64", "c128", "i8", "i32", "i64", "u8", "u32", "bool_"]
__all__ += ["nn", "random"]

# jx's functions named like the submodule that defines them (jx.jit is the function
# in jx/jit.py): the import system binds a submodule on its package when it first
# loads it, which must not replace the function (see _Package).
_FUNCTIONS_NAMED_LIKE_MODULES = frozenset({"export", "jit", "pmap", "verify", "vmap"})
_loaded = False
# names of the API whose module loads on their first use, not with the namespace
# (a first jx.jit needs none of them)
_LAZY_NAMES = {"export": "export", "Entry": "export", "EntryError": "export",
               "entries_of": "export"}


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
    if name in _LAZY_NAMES and name not in globals():
        module = _importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}")
        globals()[name] = getattr(module, name)
    try:
        return globals()[name]
    except KeyError:
        from .errors import missing_name
        raise missing_name("jx", name, _JAX_ONLY, _NEAREST) from None


# jax's top-level names jx does not have yet (JAX 0.10.2), with the nearest jx
# function where there is one
_JAX_ONLY = frozenset("""
    NamedSharding P Ref Shard checkpoint_policies closure_convert copy_to_host_async
    custom_batching custom_gradient debug distributed dlpack effects_barrier
    ensure_compile_time_eval ffi host_count host_id host_ids linear_transpose live_arrays
    make_array_from_callback make_array_from_process_local_data
    make_array_from_single_device_arrays make_mesh named_call named_scope
    print_environment_info profiler pure_callback set_mesh shard_map sharding smap typeof
    allow_f16_reductions array_garbage_collection_guard auto_pcast check_tracer_leaks
    checking_leaks custom_derivatives debug_key_reuse default_device default_prng_impl ds
    empty_ref enable_checks enable_custom_prng explain_cache_misses free_ref freeze
    fwd_and_bwd jax2tf_associative_scan_reductions legacy_prng_key make_user_context
    new_ref no_execution no_tracing process_indices ref remove_size_one_mesh_axis_from_type
    reshard softmax_custom_jvp thread_guard threefry_partitionable transfer_guard
    transfer_guard_device_to_device transfer_guard_device_to_host
    transfer_guard_host_to_device
""".split())
_NEAREST = {"shard_map": "jx.pmap (one device per core, or MPI ranks)",
            "smap": "jx.vmap", "named_call": "calling the function itself",
            "named_scope": "no scope (jx's IR names values by position)",
            "debug": "print() outside jit, or jx.config.update('jax_disable_jit', True)",
            "pure_callback": "computing the value outside jit and passing it in",
            "custom_gradient": "jx.custom_vjp", "host_count": "jx.process_count",
            "host_id": "jx.process_index", "typeof": "jx.eval_shape or x.aval",
            "checkpoint_policies": "jx.checkpoint (without a policy)",
            "ensure_compile_time_eval": "computing the value with NumPy",
            "custom_derivatives": "jx.custom_jvp and jx.custom_vjp",
            "process_indices": "range(jx.process_count())",
            **{n: f"jx.config.update('jax_{n}', ...)" for n in (
                "check_tracer_leaks", "debug_key_reuse", "default_device", "default_prng_impl",
                "enable_checks", "enable_custom_prng", "explain_cache_misses",
                "legacy_prng_key", "softmax_custom_jvp", "threefry_partitionable",
                "transfer_guard", "allow_f16_reductions")}}


def __dir__():
    _load_namespace()
    return sorted(set(globals()) | set(_LAZY_NAMES) | {"nn", "random"})


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
