"""jx's cache folder and the files in it: where it is, folders made private, files
replaced atomically, and the JSON records of what is measured on a host.

Location: $JX_CACHE_DIR, else $XDG_CACHE_HOME/jx, else ~/.cache/jx. It lives in
the runtime (stdlib only) because the records here are read by every layer: the
code generator's object cache and tuned constants, and `jx bench`'s machine limits.
"""
from __future__ import annotations

import json
import os
import tempfile


def cache_dir() -> str:
    root = os.environ.get("JX_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        root = os.path.join(base, "jx")
    return root


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


def record_path(name: str) -> str:
    """The file of a family of measured records (tuning.json, machine.json)."""
    return os.path.join(cache_dir(), name)


def read_record(name: str, key: str):
    """The record stored under `key` (a fingerprint of what it depends on) in the
    file `name`, or None."""
    return read_json(record_path(name)).get(key)


def save_record(name: str, key: str, record: dict) -> None:
    """Store `record` under `key`, keeping the other hosts' and settings' records."""
    path = record_path(name)
    data = read_json(path)
    data[key] = record
    write_json(path, data)
