"""Load compiled artifacts and call them (NumPy + ctypes only; CuPy for CUDA).

    import jx.runtime
    art = jx.runtime.load("build/libmlp.so")
    logits = art.predict(params, x)          # or art["predict"](params, x)

Nothing here imports llvmlite or the rest of jx's compiler, so a deployment
needs only NumPy and this package. Errors derive from ArtifactError.
"""
from .abi import ABI_VERSION, STATUS
from .cheader import header_text
from .entry import CompiledEntry
from .errors import (AbiVersionError, ArgumentError, ArtifactError, ArtifactLoadError,
                     ArtifactMemoryError, DtypeMismatchError, EntryAttributeError,
                     EntryNotFoundError, EntryStatusError, HashMismatchError, IntegrityError,
                     ManifestError,
                     MissingSymbolError, ShapeMismatchError, TreeMismatchError)
from .loader import Artifact, load
from .manifest import content_hash, manifest_json

__all__ = ["load", "Artifact", "CompiledEntry", "header_text", "content_hash", "manifest_json",
           "ABI_VERSION", "STATUS", "ArtifactError", "ArtifactLoadError", "MissingSymbolError",
           "AbiVersionError", "ManifestError", "HashMismatchError", "IntegrityError", "EntryNotFoundError",
           "EntryAttributeError", "ArgumentError", "TreeMismatchError", "DtypeMismatchError",
           "ShapeMismatchError", "EntryStatusError", "ArtifactMemoryError"]
