"""jx.runtime.load(path) -> Artifact: open a compiled shared object, check it,
and expose its entries as Python callables.

Checks, in order, each with an error naming the file: it is a regular file (a
FIFO, directory or symbolic-link loop is named as such), a shared object for this
platform (magic, ELF headers inside the file), its seal matches (the sha256 of
every byte, manifest included, recorded by `jx compile`: all of these before
dlopen, so a damaged or foreign file runs none of its code), the dynamic loader
accepts it, it exports P_abi_version, P_manifest and P_manifest_sha256 (P: the
prefix recorded in the file's abi.PREFIX_SECTION, "jx" for a file built before
prefixes), the manifest matches that checksum and records the same prefix, its
ABI version is the one this runtime reads, the manifest parses and agrees with
that version, every entry symbol is exported, and (optionally) its content hash
is the one the caller pinned.
"""
from __future__ import annotations

import ctypes
import errno
import hashlib
import io
import os
import struct

from . import abi, elf, host, interrupts, manifest as manifest_mod
from .artifact import Artifact, _symbol
from .errors import (AbiVersionError, ArtifactLoadError, HashMismatchError, IntegrityError,
                     ManifestError)

# Leading bytes of the shared-object formats a dynamic loader accepts.
_MAGICS = (b"\x7fELF", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe",
           b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"MZ")


def _runtime_version() -> str:
    from .version import __version__      # the runtime's own (it installs alone)
    return __version__


_opened: dict = {}        # absolute path -> the file's identity when it was opened


def _dlopen_current(path: str, data: bytes, ident: tuple) -> ctypes.CDLL:
    """dlopen the file at path, whose verified bytes are data. The dynamic loader hands
    back the library it already mapped for a path, so a file rebuilt since this
    process opened it is opened through a private copy (loaded, then unlinked) to
    get the new code; so is one replaced between the check and dlopen (the copy
    holds exactly the bytes that were checked)."""
    mode = getattr(os, "RTLD_LOCAL", 0)  # older artifacts all export jx_manifest
    if _opened.setdefault(path, ident) == ident:
        lib = ctypes.CDLL(path, mode=mode)
        if _identity(os.stat(path)) == ident:
            return lib
    import tempfile
    try:                    # beside it (a tmp mount may forbid mapping code), else tmp
        fd, copy = tempfile.mkstemp(suffix=".so", dir=os.path.dirname(path))
    except OSError:
        fd, copy = tempfile.mkstemp(suffix=".so")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return ctypes.CDLL(copy, mode=mode)
    finally:
        os.unlink(copy)


def _identity(st) -> tuple:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _read_artifact(path: str) -> tuple:
    """(bytes, identity) of the file at path; ArtifactLoadError saying what the path
    is when it is no regular file (never waiting on a FIFO)."""
    try:
        st = os.stat(path)
        data = elf.read_regular(path)
    except elf.NotRegularFile as e:
        hint = ("pass the shared object inside it (the .so written by `jx compile`)"
                if e.kind == "a directory" else "pass the .so file written by `jx compile`")
        raise ArtifactLoadError(f"{path} is {e.kind}, not a shared object file; {hint}") \
            from None
    except FileNotFoundError:
        if os.path.islink(path):
            raise ArtifactLoadError(f"{path} is a symbolic link to {os.readlink(path)}, which "
                                    "does not exist; build it with `jx compile MODEL.py` or "
                                    "point the link at the .so") from None
        raise ArtifactLoadError(f"{path}: no such file; build it with `jx compile MODEL.py`") \
            from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ArtifactLoadError(f"{path} is a symbolic link that loops (it resolves to "
                                    "itself); point it at the .so written by `jx compile`") \
                from None
        raise ArtifactLoadError(f"{path}: cannot read the file ({e.strerror})") from None
    return data, _identity(st)


def artifact_prefix(data: bytes, path: str = "the artifact") -> str:
    """The prefix of a shared artifact's symbols, read from its bytes (no dlopen)."""
    raw = elf.section(data, abi.PREFIX_SECTION)
    if raw is None:
        return abi.LEGACY_PREFIX
    prefix = raw.split(b"\0", 1)[0].decode("ascii", "replace")
    if not manifest_mod._IDENT.match(prefix):
        raise ArtifactLoadError(f"{path}: its symbol prefix {prefix!r} is not a C identifier; "
                                "the file is damaged: rebuild it with `jx compile`")
    return prefix


def _open_library(path: str) -> tuple:
    """Every check that needs only the file's bytes, then dlopen: nothing in a file
    that fails them (a foreign or damaged .so) ever runs, constructors included.
    Returns (library, symbol prefix)."""
    data, ident = _read_artifact(path)
    head = data[:4]
    if not head:
        raise ArtifactLoadError(f"{path} is empty; rebuild it with `jx compile`")
    if data.startswith(b"!<arch>\n"):
        raise ArtifactLoadError(f"{path} is a static library (`jx compile --static`), which C "
                                "programs link; to load the model from Python build the shared "
                                "object: `jx compile` without --static")
    if not any(head.startswith(m) for m in _MAGICS):
        raise ArtifactLoadError(f"{path} is not a shared object (it starts with {head!r}); "
                                "pass the .so written by `jx compile`")
    try:
        problem = elf.check(io.BytesIO(data), len(data)) if head == b"\x7fELF" else None
    except struct.error:
        problem = "its ELF headers are malformed"
    if problem is not None:
        # Checked before dlopen: mapping a truncated file can kill the process (SIGBUS).
        raise ArtifactLoadError(f"{path} cannot be loaded: {problem}; rebuild it with "
                                "`jx compile` (--target for another machine)")
    problem = elf.check_seal(data)
    if problem is not None:
        raise IntegrityError(f"{path} is refused before loading: {problem}. Rebuild it with "
                             "`jx compile` and load that file")
    prefix = artifact_prefix(data, path)
    try:
        return _dlopen_current(os.path.abspath(path), data, ident), prefix
    except OSError as e:
        raise ArtifactLoadError(
            f"{path} could not be loaded as a shared object ({e}); the file may be truncated "
            "or damaged, or built for another platform: rebuild it with `jx compile` "
            "(--target for other machines)") from None


def _check_manifest_checksum(lib, text: bytes, path: str, symbol: str) -> None:
    """The manifest against the checksum built beside it. Required: without it an
    artifact whose symbol was renamed would skip the comparison."""
    fn = _symbol(lib, symbol, path, "the manifest's checksum")
    fn.restype, fn.argtypes = ctypes.c_char_p, []
    want = fn()
    if want is None or hashlib.sha256(text).hexdigest().encode() != want:
        raise ManifestError(f"{path}: its manifest does not match the checksum built with it: "
                            "the file was modified or corrupted after `jx compile`; rebuild it")


def load(path, expected_hash: str | None = None) -> Artifact:
    """Load a jx artifact. expected_hash, if given, must equal the manifest's
    content_hash (pin the exact build a deployment was tested with)."""
    path = os.fspath(path)
    if path.endswith(".cuda.json"):           # a CUDA build: PTX/cubin + launch plans
        from .cuda import load_cuda
        return load_cuda(path, expected_hash)
    lib, prefix = _open_library(path)
    names = abi.artifact_symbols(prefix)
    version_fn = _symbol(lib, names["abi_version"], path, "the ABI version")
    version_fn.restype, version_fn.argtypes = ctypes.c_uint32, []
    version = version_fn()
    if version != abi.ABI_VERSION:
        raise AbiVersionError(
            f"{path} uses artifact ABI version {version}, but this runtime (jx "
            f"{_runtime_version()}) reads version {abi.ABI_VERSION}: recompile the model with "
            "this jx (`jx compile`), or load it with the jx version that built it")
    manifest_fn = _symbol(lib, names["manifest"], path, "the manifest")
    manifest_fn.restype, manifest_fn.argtypes = ctypes.c_char_p, []
    text = manifest_fn()
    if text is None:
        raise ManifestError(f"{path}: {names['manifest']}() returned NULL; rebuild it with "
                            "`jx compile`")
    _check_manifest_checksum(lib, text, path, names["manifest_sha256"])
    manifest, specs = manifest_mod.parse(text, path)
    if manifest["abi_version"] != version:
        raise ManifestError(f"{path}: manifest says ABI version {manifest['abi_version']} but "
                            f"{names['abi_version']}() returns {version}; the file is "
                            "inconsistent: rebuild it with `jx compile`")
    if manifest_mod.prefix_of(manifest) != prefix:
        raise ManifestError(f"{path}: manifest says symbol prefix "
                            f"{manifest_mod.prefix_of(manifest)!r} but the file's symbols use "
                            f"{prefix!r}; the file is inconsistent: rebuild it with `jx compile`")
    lacking = host.missing(manifest.get("cpu_features", ()))
    if lacking:
        raise ArtifactLoadError(
            f"{path} was built for CPU {manifest['cpu']!r}, whose instructions this CPU "
            f"lacks ({', '.join(lacking)}): its code would stop with an illegal "
            "instruction. Rebuild it on this machine, or with `jx compile --cpu NAME` for "
            "the oldest CPU it must run on")
    if expected_hash is not None and manifest["content_hash"] != expected_hash:
        raise HashMismatchError(f"{path} has content hash {manifest['content_hash']}, expected "
                                f"{expected_hash}: it is not the build you pinned")
    interrupts.watch(lib, names["install_interrupt_handler"])   # Ctrl-C reaches long calls
    return Artifact(path, lib, manifest, specs)
