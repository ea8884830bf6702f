"""The persistent compilation cache: object code keyed by
sha256(IR text, target triple, cpu, jx version, llvmlite version, backend sources).

Location: $JX_CACHE_DIR, else $XDG_CACHE_HOME/jx, else ~/.cache/jx. Writes are
atomic (temp file + rename), so concurrent builds never see partial files; an
unreadable cache is ignored, never fatal.
"""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile

import jx


def cache_dir() -> str:
    root = os.environ.get("JX_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        root = os.path.join(base, "jx")
    return root


@functools.lru_cache(maxsize=None)
def backend_fingerprint() -> str:
    """Hash of this backend's own sources: a changed code generator (or LLVM option)
    must miss the cache even while jx.__version__ stays the same."""
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for folder, _, files in sorted(os.walk(here)):
        for name in sorted(files):
            if name.endswith((".py", ".c", ".h")):
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def cache_key(ir_text: str, cpu: str, triple: str) -> str:
    import llvmlite
    h = hashlib.sha256()
    for part in (ir_text, cpu, triple, jx.__version__, llvmlite.__version__,
                 backend_fingerprint()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _path(key: str) -> str:
    return os.path.join(cache_dir(), "objects", key[:2], key + ".o")


def load(key: str) -> bytes | None:
    try:
        with open(_path(key), "rb") as f:
            return f.read()
    except OSError:
        return None


def store(key: str, data: bytes) -> None:
    path = _path(key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        replace_file(path, data)
    except OSError:
        pass            # a read-only or full cache only costs speed


def cached_object(ir_text: str, cpu: str, triple: str, reloc: str = "pic") -> tuple:
    """(object code, cache hit?) for the module, compiling with LLVM on a miss. The
    key has the LLVM feature string the object is built with: for a host build
    it is the host's exact set, which a VM can cut below its CPU name's."""
    from .target import llvm_features
    key = cache_key(ir_text + "\0" + reloc + "\0" + llvm_features(cpu), cpu, triple)
    data = load(key)
    if data is not None:
        return data, True
    from .compiler import emit_object
    data = emit_object(ir_text, cpu, triple, reloc=reloc)
    store(key, data)
    return data, False


def load_files(key: str, dests: dict) -> bool:
    """Copy cached files {suffix: destination} out of the cache; False on a miss."""
    base = os.path.join(cache_dir(), "artifacts", key[:2], key)
    if not all(os.path.exists(f"{base}.{sfx}") for sfx in dests):
        return False
    try:
        for sfx, dst in dests.items():
            with open(f"{base}.{sfx}", "rb") as f:
                replace_file(dst, f.read(), 0o755 if sfx == "so" else 0o644)
    except OSError:
        return False
    return True


def replace_file(path: str, data: bytes, mode: int | None = None) -> None:
    """Write path as a new file (temp file + rename, `mode` its permissions if given),
    never into the old one: a reader never sees a partial file, and a process that
    has the old shared object mapped is not crashed by rewriting it in place (the
    loader's own exit handlers run from it)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".jx-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def store_files(key: str, sources: dict) -> None:
    """Store files {suffix: path} under key (atomically, best effort)."""
    base = os.path.join(cache_dir(), "artifacts", key[:2], key)
    try:
        os.makedirs(os.path.dirname(base), exist_ok=True)
        for sfx, src in sources.items():
            with open(src, "rb") as f:
                replace_file(f"{base}.{sfx}", f.read())
    except OSError:
        pass
