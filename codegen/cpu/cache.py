"""The persistent compilation cache: object code keyed by
sha256(IR text, target triple, cpu, jx version, llvmlite version, jx's sources).

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

Size cap: $JX_CACHE_MAX (e.g. 500M, 2G; K/M/G/T are powers of 1024; 0 or "none"
for no cap), default 1 GiB. The entries (objects/ and artifacts/, an artifact's .so
and .h being one entry) are least-recently-used first to go: a hit touches an
entry's mtime. A running total kept in the file `size` spares each store a walk of
the cache; when a store takes the total past the cap, the cache is walked (the
total made exact again) and the oldest entries are deleted until it is 10% under.
The parallel runtime (runtime/) and measured records (*.json) are never evicted.
"""
from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import struct
import time
import warnings

from jx.runtime import elf
from jx.runtime.store import (cache_dir, make_dir, read_json, record_path, replace_file,
                              write_json)
from jx.version import __version__


SOURCES_FILE = "sources.json"      # the last source digest, beside the host's records


@functools.lru_cache(maxsize=None)
def sources_fingerprint() -> str:
    """sha256 of the sources of every jx layer code generation depends on (the
    package's top: dtypes, dims, the IR; the passes; the runtime's ABI; this
    backend): a changed code generator must miss the cache even while jx's version
    stays the same. Once per process. Reading them all takes ~5 ms, their sizes and
    modification times ~1 ms, so the digest is kept in sources.json with a stamp of
    those and read again while no file has changed."""
    files = _source_files()
    stamp = hashlib.sha256(repr([(p, st.st_size, st.st_mtime_ns) for p, _, st in files])
                           .encode()).hexdigest()
    record = read_json(record_path(SOURCES_FILE))
    if record.get("stamp") == stamp and isinstance(record.get("sources"), str):
        return record["sources"]
    h = hashlib.sha256()
    for path, name, _ in files:
        with open(path, "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    digest = h.hexdigest()
    try:
        write_json(record_path(SOURCES_FILE), {"stamp": stamp, "sources": digest})
    except OSError:
        pass                  # a read-only cache only costs speed
    return digest


def _source_files() -> list:
    """[(path, name within its layer, stat)] of the sources sources_fingerprint
    covers (found without importing the packages)."""
    from importlib.util import find_spec
    here = os.path.dirname(os.path.abspath(__file__))
    roots = [os.path.abspath(find_spec(name).submodule_search_locations[0])
             for name in ("jx", "jx.passes", "jx.runtime")]
    out = []
    for root in roots + [here]:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".c", ".h")):
                    path = os.path.join(folder, name)
                    out.append((path, path[len(root) + 1:], os.stat(path)))
    return out


def cache_key(ir_text: str, cpu: str, triple: str) -> str:
    import llvmlite
    h = hashlib.sha256()
    for part in (ir_text, cpu, triple, __version__, llvmlite.__version__,
                 sources_fingerprint()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _path(key: str, folder: str = "objects", suffix: str = ".o") -> str:
    return os.path.join(cache_dir(), folder, key[:2], key + suffix)


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
    else:
        _touch(path)
    return data


def load(key: str, folder: str = "objects") -> bytes | None:
    """The object stored under key, or None; also None (and the entry deleted) for one
    whose ELF tables do not lie inside it, which LLVM would read past. Objects of
    jx's own runtime (folder RUNTIME_OBJECTS) are kept like the C runtime's build."""
    path = _path(key, folder)
    data = _read_entry(path, key)
    if data is not None and elf.check_object(data) is not None:
        _discard(path)
        return None
    return data


def load_record(key: str, folder: str) -> dict | None:
    """The JSON record stored under key (store_record), or None."""
    data = _read_entry(_path(key, folder, ".json"), key)
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def store_record(key: str, data: bytes, folder: str) -> None:
    store(key, data, folder, ".json")


def store(key: str, data: bytes, folder: str = "objects", suffix: str = ".o") -> None:
    path = _path(key, folder, suffix)
    try:
        make_dir(os.path.dirname(path))
        replace_file(path, _wrap(key, data))
        if folder in ENTRY_FOLDERS:
            _added([path])
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
        _added([f"{base}.{sfx}" for sfx in sources])
    except OSError:
        pass


# -- the size cap (see the module docstring) ----------------------------------------------
DEFAULT_MAX = 1 << 30
# evictable (programs/: the records leading from a fused program to its object,
# program_cache.py; jit/: jx.jit's shared objects, native.py); runtime/ and the
# host's records are kept
ENTRY_FOLDERS = ("objects", "artifacts", "programs", "jit")
RUNTIME_OBJECTS = os.path.join("runtime", "objects")   # libcalls, routines: kept
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE_FILE = "size"


def parse_size(text: str) -> int | None:
    """'500M' -> 524288000, '2G', '1.5g', '4096', '64KiB'; '0', 'none', 'off' or
    'unlimited' -> None (no cap). ValueError for anything else."""
    t = text.strip().upper()
    if t in ("0", "NONE", "OFF", "UNLIMITED"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]?)(?:I?B)?", t)
    if not m:
        raise ValueError(f"{text!r} is not a size: write a number of bytes with an optional "
                         "unit K, M, G or T (powers of 1024), e.g. 500M or 2G; 0 or 'none' "
                         "for no cap")
    value = float(m.group(1)) * _UNITS[m.group(2)]
    return None if value == 0 else max(1, int(value))


def max_bytes() -> int | None:
    """The cap from $JX_CACHE_MAX (None: no cap); a value that does not parse warns
    and keeps the default (a cache setting must never stop a compile)."""
    text = os.environ.get("JX_CACHE_MAX")
    if text is None or not text.strip():
        return DEFAULT_MAX
    try:
        return parse_size(text)
    except ValueError as e:
        warnings.warn(f"JX_CACHE_MAX: {e}; using the default cap of 1G", stacklevel=2)
        return DEFAULT_MAX


def _disk_bytes(st) -> int:
    """The space a file takes on disk (du's figure: small files fill whole blocks)."""
    blocks = getattr(st, "st_blocks", None)
    return max(st.st_size, blocks * 512) if blocks is not None else st.st_size


def _touch(path: str) -> None:
    """Mark an entry used now (its mtime: atime is often not updated, noatime)."""
    try:
        os.utime(path)
    except OSError:
        pass


def entries() -> list:
    """[(unit, newest mtime, bytes, [paths])] of every evictable entry, oldest first.
    A unit is a path without its suffix: an artifact's .so and .h go together."""
    units: dict = {}
    root = cache_dir()
    for folder in ENTRY_FOLDERS:
        try:
            shards = [d.path for d in os.scandir(os.path.join(root, folder)) if d.is_dir()]
        except OSError:
            continue
        for shard in shards:
            try:
                files = list(os.scandir(shard))
            except OSError:
                continue
            for f in files:
                if f.name.startswith(".jx-"):
                    continue          # a write in progress (or one killed mid-way)
                try:
                    st = f.stat(follow_symlinks=False)
                except OSError:
                    continue
                unit = units.setdefault(os.path.join(shard, f.name.split(".", 1)[0]),
                                        [0.0, 0, []])
                unit[0] = max(unit[0], st.st_mtime)
                unit[1] += _disk_bytes(st)
                unit[2].append(f.path)
    return sorted(((u, t, n, paths) for u, (t, n, paths) in units.items()),
                  key=lambda e: (e[1], e[0]))


def _read_total() -> int | None:
    try:
        with open(os.path.join(cache_dir(), _SIZE_FILE)) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _write_total(total: int) -> None:
    try:
        replace_file(os.path.join(cache_dir(), _SIZE_FILE), f"{max(total, 0)}\n".encode(),
                     0o600)
    except OSError:
        pass


def _added(paths: list) -> None:
    """Account for files just stored; evict past the cap. Concurrent stores may lose
    an update of the running total: each eviction walk makes it exact again."""
    cap = max_bytes()
    if cap is None:
        return
    total = _read_total()
    if total is None:
        total = sum(e[2] for e in entries())       # first store here: count once
    else:
        for p in paths:
            try:
                total += _disk_bytes(os.stat(p))
            except OSError:
                pass
    if total > cap:
        total = evict(int(cap * 0.9), keep=paths)
    _write_total(total)


def evict(limit: int, keep=()) -> int:
    """Delete least-recently-used entries until they take at most `limit` bytes (the
    files in `keep`, just stored, stay); returns the bytes left."""
    listed = entries()
    total = sum(e[2] for e in listed)
    keep = {os.path.abspath(p) for p in keep}
    for _, _, size, paths in listed:
        if total <= limit:
            break
        if any(os.path.abspath(p) in keep for p in paths):
            continue
        for p in paths:
            _discard(p)
        total -= size
    return total


def usage() -> dict:
    """What `jx cache info` shows: location, cap, entries and their bytes, the oldest
    and newest use, and the bytes of everything else in the folder."""
    root = cache_dir()
    listed = entries()
    other = 0
    for folder, _, files in os.walk(root):
        rel = os.path.relpath(folder, root).split(os.sep)[0]
        if rel in ENTRY_FOLDERS:
            continue
        for name in files:
            try:
                other += _disk_bytes(os.stat(os.path.join(folder, name), follow_symlinks=False))
            except OSError:
                pass
    by_folder = {f: {"entries": 0, "bytes": 0} for f in ENTRY_FOLDERS}
    for unit, _, size, _ in listed:
        folder = os.path.relpath(unit, root).split(os.sep)[0]
        by_folder[folder]["entries"] += 1
        by_folder[folder]["bytes"] += size
    entry_bytes = sum(e[2] for e in listed)
    return {"location": root, "exists": os.path.isdir(root), "max_bytes": max_bytes(),
            "entries": len(listed), "entry_bytes": entry_bytes, "other_bytes": other,
            "total_bytes": entry_bytes + other, "by_folder": by_folder,
            "oldest": listed[0][1] if listed else None,
            "newest": max(e[1] for e in listed) if listed else None, "now": time.time()}


def clear(records: bool = False) -> tuple:
    """Delete every entry and the built runtime (and, with records, the measured
    host records too); returns (files, bytes) removed. Only jx's own folders and
    files inside the cache folder are touched, never the folder itself."""
    root = cache_dir()
    names = list(ENTRY_FOLDERS) + ["runtime", _SIZE_FILE]
    if records:
        try:
            names += [n for n in os.listdir(root) if n.endswith(".json")]
        except OSError:
            pass
    files = freed = 0
    for name in names:
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            for folder, dirs, fnames in os.walk(path, topdown=False):
                for f in fnames:
                    full = os.path.join(folder, f)
                    try:
                        size = _disk_bytes(os.stat(full, follow_symlinks=False))
                        os.unlink(full)
                    except OSError:
                        continue
                    files, freed = files + 1, freed + size
                for d in dirs:
                    try:
                        os.rmdir(os.path.join(folder, d))
                    except OSError:
                        pass
            try:
                os.rmdir(path)
            except OSError:
                pass
        elif os.path.lexists(path):
            try:
                size = _disk_bytes(os.stat(path, follow_symlinks=False))
                os.unlink(path)
                files, freed = files + 1, freed + size
            except OSError:
                pass
    return files, freed
