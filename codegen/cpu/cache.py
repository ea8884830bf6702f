"""The persistent compilation cache: object code keyed by
sha256(IR text, target triple, cpu, jx version, llvmlite version, backend sources).

Location: $JX_CACHE_DIR, else $XDG_CACHE_HOME/jx, else ~/.cache/jx. Writes are
atomic (temp file + rename), so concurrent builds never see partial files; an
unreadable cache is ignored, never fatal.

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
import json
import os
import struct
import tempfile

import jx
from jx.runtime import elf


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


def make_dir(path: str) -> None:
    """os.makedirs with every folder it creates 0o700 (chmod after mkdir: mkdir's
    mode is cut by the umask, never widened, but a umask of 0 would leave group
    and others the right to swap the code this cache hands to LLVM and cc). Folders
    of jx's own below the cache root that an older jx left group- or world-writable
    are made private too; the root itself, perhaps chosen to be shared, is left."""
    path = os.path.abspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        make_dir(os.path.dirname(path))
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            return              # another process made it first
        os.chmod(path, 0o700)
        return
    root = os.path.abspath(cache_dir())
    if path.startswith(root + os.sep):
        make_dir(os.path.dirname(path))
        if st.st_mode & 0o022 and st.st_uid == os.getuid() and os.path.isdir(path):
            os.chmod(path, 0o700)


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


def read_json(path: str) -> dict:
    """A JSON object stored in the cache folder; {} if absent or unreadable (what
    is cached there is measured again, never fatal)."""
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def write_json(path: str, data: dict) -> None:
    """Store a JSON object atomically in a private folder; a read-only cache is
    skipped silently (the caller keeps its values for this process)."""
    try:
        make_dir(os.path.dirname(os.path.abspath(path)))
        replace_file(path, json.dumps(data, indent=1, sort_keys=True).encode())
    except OSError:
        pass


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
        make_dir(os.path.dirname(base))
        for sfx, src in sources.items():
            with open(src, "rb") as f:
                replace_file(f"{base}.{sfx}", _wrap(f"{key}.{sfx}", f.read()))
    except OSError:
        pass
