"""Entry declarations: which functions of a model file are compiled, at which
input shapes and dtypes.

    @jx.export(params={"w": jx.f32[784, 10], "b": jx.f32[10]}, x=jx.f32[128, 784])
    def predict(params, x): ...

Arguments are named by keyword (or given positionally, in order); each is a
pytree of jx.ShapeDtypeStruct specs such as `jx.f32[128, 784]`. Keyword
`static={"n": 3}` binds compile-time constants. The decorated function is
returned unchanged, so the model stays a plain Python module.
"""
from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from . import core, tree
from .api import ShapeDtypeStruct
from .errors import JxError


class EntryError(JxError):
    """A malformed entry declaration or a bad shape override."""


@dataclass
class Entry:
    name: str
    fn: Callable
    arg_names: list
    args: list                 # one pytree of ShapeDtypeStruct per traced argument
    static: dict = field(default_factory=dict)
    source: str = ""
    bake_sources: dict = field(default_factory=dict)   # arg -> arrays or a callable (jx.bake)
    baked: list = field(default_factory=list)          # manifest records of applied bakes
    specialize: dict = field(default_factory=dict)     # symbol -> sizes given fixed versions

    def symbols(self) -> tuple:
        """The symbolic sizes the entry's specs name, sorted."""
        from .dims import symbols_of
        return symbols_of(leaf.shape for leaf in tree.tree_leaves(self.args))

    def check_specialize(self) -> None:
        """A fixed-size version fixes every symbol: EntryError naming those missing."""
        missing = [n for n in self.symbols() if n not in self.specialize]
        if self.specialize and missing:
            raise EntryError(f"entry {self.name!r}: specialize gives sizes for "
                             f"{', '.join(sorted(self.specialize))} but not for "
                             f"{', '.join(missing)}; a fixed-size version needs every symbol "
                             f"(e.g. specialize={{{', '.join(repr(n) + ': [...]' for n in self.symbols())}}})")

    def specializations(self) -> list:
        """[{symbol: size}, ...]: every combination of the specialize= sizes (one
        fixed-size version of the entry each)."""
        import itertools
        if not self.specialize:
            return []
        names = sorted(self.specialize)
        return [dict(zip(names, combo))
                for combo in itertools.product(*(self.specialize[n] for n in names))]

    def fixed(self, values: dict) -> "Entry":
        """This entry with its symbols given `values` (a fixed-size version)."""
        from .dims import substitute

        def fix(spec):
            return ShapeDtypeStruct(tuple(substitute(spec.shape, values)), spec.dtype)
        return Entry(self.name, self.fn, self.arg_names,
                     [tree.tree_map(fix, a) for a in self.args], self.static, self.source)

    def call_args(self) -> tuple:
        """(positional args, static_argnums) to trace fn with."""
        values, static_nums = [], []
        it = iter(self.args)
        for i, n in enumerate(self.arg_names):
            if n in self.static:
                values.append(self.static[n])
                static_nums.append(i)
            else:
                values.append(next(it))
        return tuple(values), tuple(static_nums)

    def override(self, path: str, spec: ShapeDtypeStruct) -> None:
        """Replace the spec at 'arg' or 'arg.key.0' (the CLI's --shape)."""
        parts = path.split(".")
        traced = [n for n in self.arg_names if n not in self.static]
        if parts[0] not in traced:
            raise EntryError(f"entry {self.name!r} has no argument {parts[0]!r} "
                             f"(arguments: {', '.join(traced)})")
        i = traced.index(parts[0])
        if len(parts) == 1:
            self.args[i] = spec
            return
        node = self.args[i]
        for p in parts[1:-1]:
            node = _child(node, p, path)
        last = parts[-1]
        if isinstance(node, dict) and last in node:
            node[last] = spec
        elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
            node[int(last)] = spec
        else:
            raise EntryError(f"no leaf {path!r} in entry {self.name!r} (only dicts and lists "
                             "can be overridden below the argument)")


@contextlib.contextmanager
def tracing():
    """Trace an entry: errors that tell the user to mark an argument static name
    export's option (static=), not jit's static_argnums."""
    token = core.STATIC_HINT.set("static={'name': value} in @jx.export")
    try:
        yield
    finally:
        core.STATIC_HINT.reset(token)


def _child(node, key, path):
    if isinstance(node, dict) and key in node:
        return node[key]
    if isinstance(node, (list, tuple)) and key.isdigit() and int(key) < len(node):
        return node[int(key)]
    raise EntryError(f"no path {path!r}: {key!r} not found")


def _check_specs(name: str, arg: str, value: Any) -> None:
    leaves = tree.tree_leaves(value)
    for leaf in leaves:
        if not isinstance(leaf, ShapeDtypeStruct):
            raise EntryError(f"entry {name!r}, argument {arg!r}: {leaf!r} is not a shape "
                             "spec; write e.g. jx.f32[128, 784] (or use static={...} for "
                             "constants)")


def _check_name(name, src: str) -> None:
    """An entry's name becomes its C symbol jx_<name> and what --entry selects: a
    newline or a quote in it would break the symbol, the header and diagnostics."""
    if isinstance(name, str) and name.isidentifier():
        return
    where = f" (declared at {src})" if src else ""
    raise EntryError(f"entry name {name!r}{where} is not an identifier; export it under a "
                     "name of letters, digits and underscores, e.g. "
                     "@jx.export(..., name='predict')")


def export(*specs, static: dict | None = None, name: str | None = None,
           bake: dict | None = None, specialize: dict | None = None, **kw_specs):
    """Declare an entry function with the shapes/dtypes of its arguments. bake:
    argument name -> its arrays (or a zero-argument callable returning them), stored
    inside the artifact by `jx compile` (the entry then takes the other arguments).
    specialize (entries with symbolic sizes): symbol -> sizes, e.g. {"B": [1, 128]}:
    the artifact also holds a version compiled for each, which a call at exactly
    those sizes runs; the symbolic version serves the rest."""
    static = dict(static or {})
    bake = dict(bake or {})
    specialize = check_specialize(specialize or {}, name)

    def decorate(fn: Callable) -> Callable:
        entry_name = name or fn.__name__
        code = getattr(fn, "__code__", None)
        src = f"{code.co_filename}:{code.co_firstlineno}" if code else ""
        _check_name(entry_name, src)
        try:
            names = [p.name for p in inspect.signature(fn).parameters.values()]
        except (TypeError, ValueError):
            raise EntryError(f"cannot read the signature of {entry_name!r}") from None
        traced = [n for n in names if n not in static]
        by_name = dict(zip(traced, specs))
        if len(specs) > len(traced):
            raise EntryError(f"entry {entry_name!r}: {len(specs)} specs for "
                             f"{len(traced)} arguments")
        for k, v in kw_specs.items():
            if k not in traced:
                raise EntryError(f"entry {entry_name!r} has no argument {k!r} "
                                 f"(arguments: {', '.join(names)})")
            by_name[k] = v
        missing = [n for n in traced if n not in by_name]
        if missing:
            raise EntryError(f"entry {entry_name!r}: no shape given for "
                             f"{', '.join(missing)}; add e.g. {missing[0]}=jx.f32[...]")
        for k in static:
            if k not in names:
                raise EntryError(f"entry {entry_name!r}: static={{{k!r}: ...}} names no "
                                 f"argument (arguments: {', '.join(names)})")
        for n in traced:
            _check_specs(entry_name, n, by_name[n])
        for k in bake:
            if k not in traced:
                raise EntryError(f"entry {entry_name!r}: bake names {k!r}, which is not a "
                                 f"traced argument (arguments: {', '.join(traced)})")
        entry = Entry(entry_name, fn, names, [by_name[n] for n in traced],
                      static, src, bake, specialize=specialize)
        unknown = sorted(set(specialize) - set(entry.symbols()))
        if unknown:
            raise EntryError(f"entry {entry_name!r}: specialize names {', '.join(unknown)}, "
                             f"which no argument's shape uses (symbols: "
                             f"{', '.join(entry.symbols()) or 'none'})")
        entry.check_specialize()
        fn.__jx_entry__ = entry
        return fn
    return decorate


def check_specialize(specialize: dict, who) -> dict:
    """{symbol: sorted distinct sizes}, or EntryError for anything else."""
    out = {}
    for k, sizes in specialize.items():
        sizes = [sizes] if isinstance(sizes, int) else sizes
        if not isinstance(k, str) or not k.isidentifier() or not isinstance(sizes, (list, tuple)) \
                or not sizes or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                        for n in sizes):
            raise EntryError(f"entry {who or ''}: specialize={{{k!r}: {sizes!r}}}: give a "
                             "symbol's name and a list of sizes, e.g. specialize={'B': [1, 128]}")
        out[k] = sorted(set(sizes))
    return out


def entries_of(module) -> list:
    """Entries declared in a module, in source order. Entries imported from other
    model files belong to those files and are not listed again."""
    found = [v.__jx_entry__ for v in vars(module).values()
             if callable(v) and hasattr(v, "__jx_entry__")
             and getattr(v, "__module__", module.__name__) == module.__name__]
    seen: dict = {}
    out = []
    for e in sorted(found, key=lambda e: _line(e.source)):
        first = seen.setdefault(e.name, e)
        if first is e and not any(x is e for x in out):    # once, if bound to two names
            out.append(e)
        elif first is not e:
            raise EntryError(f"two entries are named {e.name!r} ({first.source} and "
                             f"{e.source}): an artifact exports one symbol per name; give "
                             "one of them another name")
    return out


def _line(src: str) -> int:
    try:
        return int(src.rsplit(":", 1)[1])
    except (IndexError, ValueError):
        return 0
