"""The loaded-artifact object: loader.py returns one for a CPU build and cuda.py's
CudaArtifact derives from it. It has a module of its own, below both, because
loader.py dispatches to cuda.py and so cuda.py cannot import it from there."""
from __future__ import annotations

import ctypes

from . import abi
from .entry import CompiledEntry, bind_function
from .errors import EntryAttributeError, EntryNotFoundError, IntegrityError, MissingSymbolError


def _symbol(lib, name: str, path: str, what: str):
    try:
        return getattr(lib, name)
    except AttributeError:
        raise MissingSymbolError(f"{path} does not export {name} ({what}); it was not built "
                                 "by `jx compile`, or by an incompatible version: rebuild "
                                 "it with this jx") from None


class Artifact:
    """A loaded artifact. Each entry is a callable: `art.predict(params, x)` or
    `art["predict"](params, x)`; `art.entries` maps names to them in manifest
    order; `art.manifest` is the parsed manifest."""

    def __init__(self, path: str, lib: ctypes.CDLL, manifest: dict, specs: list):
        self.path = path
        self.manifest = manifest
        self._lib = lib
        entries = {}
        for spec in specs:
            _symbol(lib, spec.symbol, path, f"entry {spec.name!r}")  # clear error if absent
            _check_signature(lib, spec, path)
            if spec.dims is not None:
                from .symbolic import SymbolicEntry, bind_symbolic
                shapes = spec.symbol + abi.SHAPES_SUFFIX
                _symbol(lib, shapes, path, f"entry {spec.name!r}'s shapes")
                entries[spec.name] = SymbolicEntry(spec, bind_symbolic(lib, spec.symbol, shapes),
                                                   path, owner=self)
                continue
            entries[spec.name] = CompiledEntry(spec, bind_function(lib, spec.symbol), path,
                                               owner=self)
        self.entries = entries

    @property
    def content_hash(self) -> str:
        return self.manifest["content_hash"]

    @property
    def jx_version(self) -> str:
        return self.manifest["jx_version"]

    @property
    def target(self) -> str:
        return self.manifest["target"]

    def _missing(self, name: str) -> str:
        names = ", ".join(self.entries) or "none"
        return f"{self.path} has no entry {name!r} (entries: {names})"

    def __getitem__(self, name: str) -> CompiledEntry:
        try:
            return self.entries[name]
        except KeyError:
            raise EntryNotFoundError(self._missing(name)) from None

    def __getattr__(self, name: str) -> CompiledEntry:
        entries = self.__dict__.get("entries")
        if entries is None or name.startswith("__"):
            raise AttributeError(name)
        try:
            return entries[name]
        except KeyError:
            raise EntryAttributeError(self._missing(name)) from None

    def __contains__(self, name) -> bool:
        return name in self.entries

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.entries))

    def __repr__(self) -> str:
        return (f"<jx Artifact {self.path} (jx {self.jx_version}, {self.target}): "
                f"{', '.join(self.entries) or 'no entries'}>")


def _check_signature(lib, spec, path: str) -> None:
    """The manifest's leaves for an entry against those its code was built for (the
    code generator wrote them beside the entry): a manifest that promises other
    shapes would have the code write past the buffers the loader allocates."""
    fn = _symbol(lib, spec.symbol + abi.SIGNATURE_SUFFIX, path, f"entry {spec.name!r}'s signature")
    fn.restype, fn.argtypes = ctypes.c_char_p, []
    built = (fn() or b"").decode("utf-8", "replace")
    leaves = lambda ls: [(leaf.dtype.name, leaf.shape) for leaf in ls]  # noqa: E731
    declared = abi.signature(leaves(spec.inputs), leaves(spec.outputs))
    if built != declared:
        raise IntegrityError(
            f"{path}: the manifest declares entry {spec.name!r} as {declared}, but its code "
            f"was built for {built}: the manifest was edited after the build. Rebuild the "
            "artifact with `jx compile` instead of editing it")
