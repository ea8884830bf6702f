"""Baked arguments: an entry's weights stored inside its artifact.

A deployed model usually calls its entry with the same parameters every time.
Baking an argument closes the entry over concrete arrays: the traced graph holds
them as constants (the backend writes them to the artifact's read-only data and
may fold them), the entry's signature loses that argument, and the manifest
records a checksum of what was baked so a deployment can tell which weights it
runs. Values come from the declaration (`@jx.export(..., bake={"params": load})`,
arrays or a zero-argument callable returning them) or from the command line
(`jx compile model.py --bake params=weights.npz`).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import replace

import numpy as np

from . import tree
from .array import Array
from .export import Entry, EntryError


def bake(entry: Entry, name: str, values, origin: str) -> Entry:
    """entry without argument `name`, closed over `values` (a pytree matching its
    declared spec). origin: where the values came from, for messages."""
    traced = [n for n in entry.arg_names if n not in entry.static]
    if name not in traced:
        raise EntryError(f"entry {entry.name!r} has no argument {name!r} to bake "
                         f"(arguments: {', '.join(traced) or 'none'})")
    spec = entry.args[traced.index(name)]
    arrays = _match(entry.name, name, spec, values, origin)
    consts = tree.tree_map(lambda a: Array(a), arrays)
    fn, names = entry.fn, list(entry.arg_names)
    at = names.index(name)

    def baked(*args, **kwargs):
        return fn(*args[:at], consts, *args[at:], **kwargs)

    baked.__name__ = getattr(fn, "__name__", entry.name)
    baked.__qualname__ = getattr(fn, "__qualname__", baked.__name__)
    baked.__module__ = getattr(fn, "__module__", None)
    record = {"arg": name, "origin": origin, "sha256": checksum(arrays),
              "leaves": [{"path": path, "shape": list(a.shape), "dtype": a.dtype.name}
                         for path, a in _with_paths(arrays)]}
    return replace(entry, fn=baked, arg_names=names[:at] + names[at + 1:],
                   args=[a for n, a in zip(traced, entry.args) if n != name],
                   baked=list(entry.baked) + [record])


def declared(entry: Entry) -> Entry:
    """entry with the bakes its declaration names applied (callables called now)."""
    for name, source in entry.bake_sources.items():
        values = source() if callable(source) else source
        entry = bake(entry, name, values, "the @jx.export declaration")
    return entry


def from_file(entry: Entry, name: str, path: str) -> Entry:
    """Bake `name` from a .npy file (an array argument) or a .npz file whose keys
    are the argument's leaf paths (`w`, `layers.0.b`; the whole argument: `.`)."""
    if not os.path.isfile(path):
        raise EntryError(f"--bake {name}={path}: no such file")
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.ndarray):         # a .npz archive (a .npy is an array)
            with data:
                arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError) as e:
        raise EntryError(f"--bake {name}={path}: not a NumPy .npy/.npz file ({e})") from None
    if isinstance(data, np.ndarray):
        return bake(entry, name, data, path)
    traced = [n for n in entry.arg_names if n not in entry.static]
    if name not in traced:
        raise EntryError(f"entry {entry.name!r} has no argument {name!r} to bake "
                         f"(arguments: {', '.join(traced) or 'none'})")
    spec = entry.args[traced.index(name)]
    paths, treedef = tree.flatten_with_path(spec)
    keys = [_path_text(p) or "." for p, _ in paths]
    if len(keys) == 1 and len(arrays) == 1 and keys[0] not in arrays:
        keys = list(arrays)                       # one array for one leaf: any key
    missing = [k for k in keys if k not in arrays]
    extra = sorted(set(arrays) - set(keys))
    if missing or extra:
        raise EntryError(f"--bake {name}={path}: the file's arrays do not match argument "
                         f"{name!r} of entry {entry.name!r}"
                         + (f"; missing {', '.join(missing)}" if missing else "")
                         + (f"; unexpected {', '.join(extra)}" if extra else "")
                         + f" (expected keys: {', '.join(keys)})")
    return bake(entry, name, tree.unflatten(treedef, [arrays[k] for k in keys]), path)


def save(path: str, values) -> None:
    """Write a pytree of arrays in the layout from_file reads (the inverse)."""
    paths, _ = tree.flatten_with_path(values)
    np.savez(path, **{(_path_text(p) or "."): np.asarray(a) for p, a in paths})


def checksum(arrays) -> str:
    """sha256 over every leaf's path, dtype, shape and bytes, in flatten order."""
    h = hashlib.sha256()
    for path, a in _with_paths(arrays):
        h.update(f"{path}|{a.dtype.str}|{a.shape}\n".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _with_paths(arrays) -> list:
    paths, _ = tree.flatten_with_path(arrays)
    return [(_path_text(p) or ".", np.asarray(a)) for p, a in paths]


def _path_text(path) -> str:
    return tree.keystr(path, simple=True, separator=".")


def _match(entry: str, name: str, spec, values, origin: str):
    """values as NumPy arrays in spec's structure, each leaf's shape and dtype
    checked against the spec (no silent casts: a wrong dtype is an error)."""
    spec_def = tree.flatten(spec)[1]
    val_leaves, val_def = tree.flatten(values)
    if val_def != spec_def:
        raise EntryError(f"entry {entry!r}: the values baked into {name!r} (from {origin}) "
                         f"do not have the structure of its spec {spec_def}; give a pytree "
                         "of arrays shaped like the declared argument")
    out = []
    for (path, s), v in zip(tree.flatten_with_path(spec)[0], val_leaves):
        a = np.asarray(v._value if isinstance(v, Array) else v)
        where = f"{name}{'.' + _path_text(path) if path else ''}"
        if a.shape != tuple(s.shape) or a.dtype != np.dtype(s.dtype):
            raise EntryError(f"entry {entry!r}: baked {where} (from {origin}) is "
                             f"{a.dtype.name}{list(a.shape)} but the spec says "
                             f"{np.dtype(s.dtype).name}{list(s.shape)}; convert it (e.g. "
                             f"np.asarray(x, np.{np.dtype(s.dtype).name})) or fix the spec")
        out.append(a)
    return tree.unflatten(spec_def, out)
