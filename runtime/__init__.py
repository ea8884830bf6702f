"""Load compiled artifacts and call them (NumPy + ctypes only; CuPy for CUDA).

    import jx.runtime                        # or, installed alone: import jx_runtime
    art = jx.runtime.load("build/libmlp.so")
    logits = art.predict(params, x)          # or art["predict"](params, x)

This package imports nothing from jx's frontend or compiler, and inside itself
only relatively, so the same folder is `jx.runtime` in the jx distribution and
the top-level `jx_runtime` in its own (runtime/pyproject.toml: numpy only).
Errors derive from ArtifactError. The names below load on first use, so the
frontend can import the pytree core (`pytree`) without the loader and NumPy.
"""
import importlib as _importlib

from .version import __version__  # noqa: F401

# public name -> the submodule defining it
_NAMES = {
    "ABI_VERSION": "abi", "STATUS": "abi",
    "header_text": "cheader",
    "CompiledEntry": "entry",
    "Artifact": "loader", "load": "loader",
    "content_hash": "manifest", "manifest_json": "manifest",
    **{name: "errors" for name in (
        "ArtifactError", "ArtifactLoadError", "MissingSymbolError", "AbiVersionError",
        "ManifestError", "HashMismatchError", "IntegrityError", "EntryNotFoundError",
        "EntryAttributeError", "ArgumentError", "TreeMismatchError", "DtypeMismatchError",
        "ShapeMismatchError", "EntryStatusError", "ArtifactMemoryError")},
}

__all__ = list(_NAMES)


def __getattr__(name: str):
    sub = _NAMES.get(name)
    if sub is None:                  # a submodule, e.g. jx_runtime.pool.clear()
        try:
            return _importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f".{sub}", __name__), name)
    globals()[name] = value          # later lookups skip this hook
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_NAMES))
