"""The persistent compilation cache: object code keyed by
sha256(IR text, target triple, cpu, jx version, llvmlite version, backend sources).

Location: $JX_CACHE_DIR, else $XDG_CACHE_HOME/jx, else ~/.cache/jx (the folder
and its atomic, private files are jx.runtime.store's). Writes are atomic (temp
file + rename), so concurrent builds never see partial files; an unreadable
cache is ignored, never fatal. compiler.cached_object compiles through it.

Every entry is stored behind a header holding the sha256 of the key it was stored
under and of its bytes. A disk that filled up, a process killed mid-write by
something other than jx, or a file copied under another key would otherwise hand
LLVM a damaged or wrong object on every later run; an entry that fails the check
is a miss: deleted, rebuilt and stored again. Folders are created private (0o700,
whatever the umask): code loaded from here must not be writable by others.
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import struct

from jx.runtime import elf
from jx.runtime.store import cache_dir, make_dir, replace_file
from jx.version import __version__


@functools.lru_cache(maxsize=None)
def backend_fingerprint() -> str:
    """Hash of this backend's own sources: a changed code generator (or LLVM option)
    must miss the cache even while jx's version stays the same."""
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
    for part in (ir_text, cpu, triple, __version__, llvmlite.__version__,
                 backend_fingerprint()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _path(key: str) -> str:
    return os.path.join(cache_dir(), "objects", key[:2], key + ".o")


_MAGIC = b"jx-cache-v1\0"
_HEADER = len(_MAGIC) + 32 + 32 + 8


def _wrap(key: str, data: bytes) -> bytes:
    return (_MAGIC + hashlib.sha256(key.encode()).digest() + hashlib.sha256(data).digest()
            + struct.pack("<Q", len(data)) + data)


def _unwrap(key: str, blob: bytes) -> bytes | None:
    """The entry's bytes if blob is intact and was stored under key, else None."""
    if len(blob) < _HEADER or not blob.startswith(_MAGIC):
        return None
    at = len(_MAGIC)
    size, = struct.unpack_from("<Q", blob, at + 64)
    data = blob[_HEADER:]
    if (blob[at:at + 32] != hashlib.sha256(key.encode()).digest() or size != len(data)
            or blob[at + 32:at + 64] != hashlib.sha256(data).digest()):
        return None
    return data


def _discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _read_entry(path: str, key: str) -> bytes | None:
    """An entry's verified bytes; a damaged one is deleted (None: rebuild it)."""
    try:
        blob = elf.read_regular(path)
    except FileNotFoundError:
        return None
    except OSError:
        _discard(path)          # a FIFO or the like in the cache: never wait on it
        return None
    data = _unwrap(key, blob)
    if data is None:
        _discard(path)
    return data


def load(key: str) -> bytes | None:
    """The object stored under key, or None; also None (and the entry deleted) for one
    whose ELF tables do not lie inside it, which LLVM would read past."""
    path = _path(key)
    data = _read_entry(path, key)
    if data is not None and elf.check_object(data) is not None:
        _discard(path)
        return None
    return data


def store(key: str, data: bytes) -> None:
    path = _path(key)
    try:
        make_dir(os.path.dirname(path))
        replace_file(path, _wrap(key, data))
    except OSError:
        pass            # a read-only or full cache only costs speed


def ensure_file(path: str, data: bytes) -> None:
    """Make the cache file at path hold exactly data (files used by path, such as
    objects handed to cc, whose name is their content's hash)."""
    try:
        if elf.read_regular(path) == data:
            return
    except OSError:
        pass
    make_dir(os.path.dirname(path))
    replace_file(path, data)


def _digest_path(path: str) -> str:
    return path + ".sha256"


def is_intact(path: str) -> bool:
    """Whether the file at path has the sha256 recorded beside it by record_digest (a
    built runtime object: linked or dlopen'ed by path, so it cannot carry a header)."""
    try:
        want = elf.read_regular(_digest_path(path))[:64]
        data = elf.read_regular(path)
    except OSError:
        return False
    if hashlib.sha256(data).hexdigest().encode() != want:
        return False
    if path.endswith(".o"):
        return elf.check_object(data) is None
    try:
        return elf.check(io.BytesIO(data), len(data)) is None
    except struct.error:
        return False


def record_digest(path: str) -> None:
    """Record the sha256 of the file now at path beside it (see is_intact)."""
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    replace_file(_digest_path(path), digest.encode() + b"\n", 0o600)


def load_files(key: str, dests: dict) -> bool:
    """Copy cached files {suffix: destination} out of the cache; False on a miss (a
    damaged entry is one: deleted, so the build that follows stores it again)."""
    base = os.path.join(cache_dir(), "artifacts", key[:2], key)
    datas = {}
    for sfx in dests:
        datas[sfx] = _read_entry(f"{base}.{sfx}", f"{key}.{sfx}")
        if datas[sfx] is None:
            return False
    try:
        for sfx, dst in dests.items():
            replace_file(dst, datas[sfx], 0o755 if sfx == "so" else 0o644)
    except OSError:
        return False
    return True


def store_files(key: str, sources: dict) -> None:
    """Store files {suffix: path} under key (atomically, best effort)."""
    base = os.path.join(cache_dir(), "artifacts", key[:2], key)
    try:
        make_dir(os.path.dirname(base))
        for sfx, src in sources.items():
            with open(src, "rb") as f:
                replace_file(f"{base}.{sfx}", _wrap(f"{key}.{sfx}", f.read()))
    except OSError:
        pass
