"""Load a model file by path, pick its entries and apply --shape overrides and bakes."""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import os
import re
import sys
import types

import jx
from jx import bake, dtypes
from jx.export import Entry, EntryError
from jx.ir import extent_problem

from .errors import DEBUG_HINT, CliError, describe, ensure_period, model_location


def display_path(path: str) -> str:
    """The path as diagnostics show it: relative to the working directory when inside it."""
    rel = os.path.relpath(os.path.abspath(path))
    return os.path.abspath(path) if rel.startswith("..") else rel


def load_model(path: str) -> types.ModuleType:
    """Import the model file under a unique module name, its folder on sys.path.

    The code is compiled with the displayed path as its filename, so entry
    sources, equation sources and diagnostics all name the file the way the
    user typed it (relative to the working directory).
    """
    shown = display_path(path)
    if not os.path.isfile(path):
        raise CliError(f"model file {shown} does not exist (or is not a file); "
                       "pass the path of a Python file that declares @jx.export entries.")
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)     # so the model can import its sibling modules
    digest = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:10]
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    module = types.ModuleType(f"_jxmodel_{stem}_{digest}")
    module.__file__ = os.path.abspath(path)
    with open(path, "rb") as f:
        source = f.read()
    sys.modules[module.__name__] = module     # dataclasses and pickling look modules up
    try:
        exec(compile(source, shown, "exec"), module.__dict__)
    except SyntaxError as e:
        sys.modules.pop(module.__name__, None)
        raise CliError(f"{shown} is not valid Python: {e.msg}. Fix the syntax error "
                       "at that line.", where=model_location(e, shown)) from e
    except Exception as e:
        sys.modules.pop(module.__name__, None)
        raise CliError(f"importing {shown} failed with {ensure_period(describe(e))} "
                       f"Fix the model so that `python {shown}` runs. {DEBUG_HINT}",
                       where=model_location(e, shown)) from e
    return module


class NoEntrySelected(CliError):
    """A model has none of the entries named by --entry (skipped when several models
    are compiled in one call)."""


def select_entries(module: types.ModuleType, names: tuple, only_present: bool = False) -> list:
    """The entries named by --entry (all of them, in source order, when none is named).
    only_present: names the module lacks are left out (several models in one call), and
    NoEntrySelected is raised when none is left."""
    shown = display_path(module.__file__)
    try:
        entries = jx.entries_of(module)
    except jx.JxError as e:
        raise CliError(f"{e}.", where=f"{shown}:1") from None
    if not entries:
        raise CliError(f"{shown} declares no entry functions. Decorate the functions to "
                       "compile with @jx.export, e.g. `@jx.export(x=jx.f32[128, 784])` "
                       "above `def predict(x): ...`.", where=f"{shown}:1")
    by_name = {e.name: e for e in entries}
    if only_present and names:
        names = tuple(n for n in names if n in by_name)
        if not names:
            raise NoEntrySelected(f"{shown} has none of the entries named by --entry; its "
                                  f"entries are: {', '.join(by_name)}.")
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise CliError(f"{shown} has no entry {unknown[0]!r}; its entries are: "
                       f"{', '.join(by_name)}. Pick one of those with --entry.")
    chosen = [by_name[n] for n in dict.fromkeys(names)] if names else entries
    # Copies: overrides must not leak into the decorated functions' declarations.
    return [dataclasses.replace(e, args=copy.deepcopy(e.args)) for e in chosen]


_DTYPES = {**{dtypes.short_name(d): d for d in dtypes.SUPPORTED},
           **{d.name: d for d in dtypes.SUPPORTED}}
_SPEC = re.compile(r"^\s*(\w+)\s*\[(.*)\]\s*$", re.DOTALL)
_SPEC_HELP = "ARG=DTYPE[D0,D1,...], e.g. x=f32[256,784], params.w1=f32[784,512] or s=f32[]"


def parse_spec(text: str) -> jx.ShapeDtypeStruct:
    """'f32[256,784]' -> jx.f32[256, 784]; 'f32[]' is a scalar."""
    m = _SPEC.match(text)
    if not m:
        raise ValueError(f"cannot read {text!r} as a shape spec")
    dtype = _DTYPES.get(m.group(1))
    if dtype is None:
        raise ValueError(f"unknown dtype {m.group(1)!r} (known: "
                         f"{', '.join(sorted(dtypes.short_name(d) for d in dtypes.SUPPORTED))})")
    dims = _parse_dims(m.group(2))
    problem = extent_problem(tuple(d for d in dims if isinstance(d, int)), dtype)
    if problem:
        raise ValueError(problem)
    try:
        return jx.ShapeDtypeStruct(dims, dtype)
    except jx.JxError as e:
        raise ValueError(f"{text!r}: {e}") from None


def _parse_dims(text: str) -> tuple:
    """'256, 784,' -> (256, 784): each dimension a non-negative decimal integer, or
    symbolic: a name or an expression of names ('B', '2*B', 'B*T'), kept as text
    for jx.ShapeDtypeStruct to read."""
    parts = [p.strip() for p in text.split(",")]
    if parts and not parts[-1]:
        parts.pop()                    # a trailing comma, as in a Python tuple
    if parts == [""]:
        parts = []
    for p in parts:
        if re.search(r"[A-Za-z_]", p) and re.fullmatch(r"[A-Za-z0-9_ +\-*/()]+", p):
            continue                   # a symbolic dimension
        if not re.fullmatch(r"[0-9]+", p):
            raise ValueError(f"dimension {p!r} is neither a non-negative whole number written "
                             "in decimal digits (no expressions such as 2^32) nor a symbol's "
                             "name or expression (B, 2*B)")
        if int(p) >= 1 << 48:
            raise ValueError(f"dimension {p} is too large: each dimension must be below 2**48")
    return tuple(p if re.search(r"[A-Za-z_]", p) else int(p) for p in parts)


def apply_shapes(entries: list, shapes: tuple, only_present: bool = False) -> None:
    """Apply each --shape ARG=SPEC to every selected entry that has argument ARG
    (only_present: an ARG no entry has is skipped, not an error)."""
    for item in shapes:
        path, eq, spec_text = item.partition("=")
        path = path.strip()
        if not eq or not re.fullmatch(r"\w+(\.\w+)*", path):
            raise CliError(f"bad --shape {item!r}: expected {_SPEC_HELP}.")
        try:
            spec = parse_spec(spec_text)
        except ValueError as e:
            raise CliError(f"bad --shape {item!r}: {e}; expected {_SPEC_HELP}.") from e
        arg = path.split(".")[0]
        targets = [e for e in entries if arg in _traced_names(e)]
        if not targets and only_present:
            continue
        if not targets:
            have = sorted({n for e in entries for n in _traced_names(e)})
            raise CliError(f"bad --shape {item!r}: no selected entry has an argument "
                           f"{arg!r} (arguments: {', '.join(have) or 'none'}).")
        for entry in targets:
            try:
                entry.override(path, spec)
            except EntryError as e:
                raise CliError(f"bad --shape {item!r}: {ensure_period(str(e))} Give the "
                               "path of a leaf as arg.key.key (dicts) or arg.0 (lists).") from e


def _traced_names(entry: Entry) -> list:
    return [n for n in entry.arg_names if n not in entry.static]


def apply_bakes(entries: list, bakes: tuple, only_present: bool = False) -> list:
    """The entries with their declared bakes (@jx.export(bake=...)) and each --bake
    ARG=FILE (.npy, or .npz keyed by leaf path) applied: those arguments become
    constants stored in the artifact. A --bake wins over a declaration of the same
    argument. only_present: an ARG no entry has is skipped, not an error."""
    parsed = []
    for item in bakes:
        arg, eq, path = item.partition("=")
        arg, path = arg.strip(), path.strip()
        if not eq or not arg.isidentifier() or not path:
            raise CliError(f"bad --bake {item!r}: expected ARG=FILE, e.g. "
                           "--bake params=weights.npz (a .npz keyed by leaf path, e.g. "
                           "w1, layers.0.b, or a .npy for an array argument).")
        parsed.append((arg, path))
    out, used = [], set()
    for e in entries:
        mine = [(a, p) for a, p in parsed if a in _traced_names(e)]
        declared = {k: v for k, v in e.bake_sources.items() if k not in dict(mine)}
        try:
            e = bake.declared(dataclasses.replace(e, bake_sources=declared))
            for a, p in mine:
                e = bake.from_file(e, a, p)
                used.add(a)
        except EntryError as err:
            raise CliError(ensure_period(str(err)), where=e.source) from None
        except Exception as err:      # noqa: BLE001 - a declared bake's own loader failed
            raise CliError(f"entry {e.name!r}: loading the values to bake failed: "
                           f"{describe(err)}", where=e.source) from None
        out.append(e)
    unused = [item for item, (a, _) in zip(bakes, parsed) if a not in used]
    if unused and not only_present:
        have = sorted({n for e in entries for n in _traced_names(e)})
        raise CliError(f"bad --bake {unused[0]!r}: no selected entry has an argument "
                       f"{parsed[bakes.index(unused[0])][0]!r} (arguments: "
                       f"{', '.join(have) or 'none'}).")
    return out
