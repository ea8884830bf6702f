"""Errors raised by the runtime. Each names the artifact or entry, says what was
wrong and what to do instead.

They derive from a runtime-local ArtifactError (not jx.errors), so a deployed
runtime needs nothing else from jx. Built-in bases (OSError, TypeError, ...) are
mixed in where a caller would naturally catch those.
"""
from __future__ import annotations


class ArtifactError(Exception):
    """Base class of every error the runtime raises on purpose."""


class ArtifactLoadError(ArtifactError, OSError):
    """The file is missing, not a shared object, truncated, or not loadable here."""


class MissingSymbolError(ArtifactLoadError):
    """A symbol the ABI requires (jx_manifest, jx_abi_version, an entry) is absent."""


class AbiVersionError(ArtifactLoadError):
    """The artifact was built for a different ABI version than this runtime reads."""


class ManifestError(ArtifactLoadError):
    """The embedded manifest is not valid JSON or does not follow the manifest format."""


class HashMismatchError(ArtifactLoadError):
    """The artifact's content hash differs from the one the caller pinned."""


class IntegrityError(ArtifactLoadError):
    """The file's bytes are not the ones `jx compile` wrote (its seal does not match, or
    it has none), or its manifest disagrees with the checksum built beside it."""


class EntryNotFoundError(ArtifactError, LookupError):
    """No entry of that name in the artifact. (Attribute access raises
    EntryAttributeError, which is also an AttributeError, so hasattr works.)"""

    def __str__(self) -> str:  # LookupError/KeyError would print the repr
        return str(self.args[0]) if self.args else ""


class EntryAttributeError(EntryNotFoundError, AttributeError):
    """`artifact.name` for a name that is neither an attribute nor an entry."""


class ArgumentError(ArtifactError, TypeError):
    """Arguments that do not match the entry's declared inputs."""


class TreeMismatchError(ArgumentError):
    """The arguments' pytree structure differs from the compiled one."""


class DtypeMismatchError(ArgumentError):
    """A leaf of the wrong dtype that cannot be converted without loss."""


class ShapeMismatchError(ArgumentError, ValueError):
    """A leaf of the wrong shape (artifacts are compiled for fixed shapes)."""


class EntryStatusError(ArtifactError, RuntimeError):
    """The compiled function returned a nonzero status code."""

    def __init__(self, message: str, entry: str, status: int):
        super().__init__(message)
        self.entry = entry
        self.status = status


class ArtifactMemoryError(EntryStatusError, MemoryError):
    """Status 1: the compiled code could not allocate its scratch memory."""
