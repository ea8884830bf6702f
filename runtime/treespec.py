"""Pytree structures as JSON, for the manifest's in_tree and out_tree.

Every node is a JSON object with a "kind":

    {"kind": "leaf"}                                       an array
    {"kind": "none"}                                       None (no leaves)
    {"kind": "tuple", "children": [...]}
    {"kind": "list", "children": [...]}
    {"kind": "dict", "keys": [k, ...], "children": [...]}  keys: str/int/float/bool, sorted
    {"kind": "namedtuple", "name": "mod.Point", "fields": ["x", "y"], "children": [...]}
    {"kind": "custom", "name": "mod.Class", "children": [...]}  a registered pytree class

Named tuples and registered classes are recorded by class name only (their
classes, and a custom node's aux data, need not exist where the artifact runs),
so decoded outputs rebuild them as plain tuples. As inputs, such a node takes any
tuple or list of its children (a named tuple qualifies), or an object with a
`tree_flatten()` method (the register_pytree_node_class protocol).

encode() takes a TreeDef of the pytree core (pytree.py, which jx.tree
re-exports); a decoded TreeSpec holds the same kind of TreeDef (`.treedef`), in
which a recorded class is a stand-in that rebuilds a plain tuple, so printing and
rebuilding go through the one pytree implementation.
"""
from __future__ import annotations

from typing import Any, Callable

from . import pytree
from .errors import ManifestError, TreeMismatchError

KINDS = ("leaf", "none", "tuple", "list", "dict", "namedtuple", "custom")
_KEY_TYPES = (str, int, float, bool)


class Recorded:
    """The kind of a decoded namedtuple or custom node: its class, recorded by name
    (and a named tuple's fields), need not exist here, so it rebuilds its children
    as a plain tuple. Compares by what the manifest records."""

    def __init__(self, name: str, fields: tuple | None = None):
        self.name, self.fields = name, fields
        self.__name__ = name.rsplit(".", 1)[-1]     # what TreeDef's text shows

    def __call__(self, *children) -> tuple:         # pytree.unflatten's namedtuple path
        return children

    def __eq__(self, other) -> bool:
        return isinstance(other, Recorded) and (self.name, self.fields) == (other.name,
                                                                            other.fields)

    def __hash__(self) -> int:
        return hash((self.name, self.fields))

    def __repr__(self) -> str:
        return f"Recorded({self.name!r})"


def encode(treedef: pytree.TreeDef) -> dict:
    """A TreeDef (kind None for a leaf) -> JSON."""
    kind = treedef.kind
    children = [encode(c) for c in treedef.children]
    if kind is None:
        return {"kind": "leaf"}
    if kind is type(None):
        return {"kind": "none"}
    if kind is tuple or kind is list:
        return {"kind": kind.__name__, "children": children}
    if kind is dict:
        keys = list(treedef.aux)
        bad = [k for k in keys if not isinstance(k, _KEY_TYPES)]
        if bad:
            raise ValueError(f"dict key {bad[0]!r} cannot be stored in a manifest; use str, "
                             "int, float or bool keys in entry arguments and results")
        return {"kind": "dict", "keys": keys, "children": children}
    if isinstance(kind, Recorded):
        name, fields = kind.name, kind.fields
    else:
        name = f"{kind.__module__}.{kind.__qualname__}"
        fields = tuple(kind._fields) if pytree._is_namedtuple_type(kind) else None
    if fields is not None:
        return {"kind": "namedtuple", "name": name, "fields": list(fields),
                "children": children}
    return {"kind": "custom", "name": name, "children": children}


class TreeSpec:
    """A decoded tree structure: flattens arguments and unflattens results. kind,
    keys and name are the manifest's; treedef is the same structure as a TreeDef."""

    __slots__ = ("kind", "keys", "name", "children", "num_leaves", "treedef")

    def __init__(self, kind: str, children: tuple = (), keys: tuple = (), name: str = ""):
        self.kind = kind
        self.children = tuple(children)
        self.keys = tuple(keys)        # dict keys, or a named tuple's field names
        self.name = name               # class name of namedtuple/custom nodes
        self.num_leaves = 1 if kind == "leaf" else sum(c.num_leaves for c in self.children)
        self.treedef = _treedef(self)

    def to_json(self) -> dict:
        return encode(self.treedef)

    def __eq__(self, other) -> bool:
        return isinstance(other, TreeSpec) and self.treedef == other.treedef

    def __hash__(self) -> int:
        return hash(self.treedef)

    def __repr__(self) -> str:
        return f"TreeSpec({self})"

    def __str__(self) -> str:
        return str(self.treedef)

    def child_path(self, i: int) -> str:
        """Path suffix of child i, in the style of the manifest's leaf paths."""
        if self.kind == "dict":
            return f"[{self.keys[i]!r}]"
        if self.kind == "namedtuple":
            return f".{self.keys[i]}"
        return f"[{i}]"

    def unflatten(self, leaves) -> Any:
        """Rebuild the structure around leaves (named tuples and classes as tuples)."""
        return pytree.unflatten(self.treedef, leaves)

    def flatten(self, tree, path: str = "", where: str = "tree") -> list:
        """Leaves of tree in this structure's order (see compile_flatten)."""
        out: list = []
        compile_flatten(self, path, where)(tree, out)
        return out


_SIMPLE_KINDS = {"none": type(None), "tuple": tuple, "list": list}


def _treedef(spec: TreeSpec) -> pytree.TreeDef:
    """spec's structure as a TreeDef (its children's already built)."""
    if spec.kind == "leaf":
        return pytree.LEAF
    children = tuple(c.treedef for c in spec.children)
    if spec.kind == "dict":
        return pytree.TreeDef(dict, spec.keys, children)
    if spec.kind in _SIMPLE_KINDS:
        aux = None if spec.kind == "none" else len(children)
        return pytree.TreeDef(_SIMPLE_KINDS[spec.kind], aux, children)
    fields = spec.keys if spec.kind == "namedtuple" else None
    return pytree.TreeDef(Recorded(spec.name, fields), None, children)


def describe(x) -> str:
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    if shape is not None and dtype is not None:
        return f"an array {dtype}{list(shape)}"
    text = repr(x)
    return f"{type(x).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def compile_flatten(spec: TreeSpec, path: str = "", where: str = "") -> Callable:
    """A function (tree, out) appending tree's leaves to the list out, in spec's order
    (dicts by the recorded keys). Paths and checks are fixed here, once, so a call
    costs a few type checks per node. Anything at a leaf position is a leaf (the
    runtime vets leaves as arrays); a node mismatch raises TreeMismatchError
    naming `where` and the path."""
    kind = spec.kind
    if kind == "leaf":
        return _append_leaf
    if kind == "none":
        def flatten_none(x, out):
            if x is not None:
                _mismatch(where, path, spec, x)
        return flatten_none
    children = tuple(compile_flatten(c, path + spec.child_path(i), where)
                     for i, c in enumerate(spec.children))
    n = len(children)
    if kind == "dict":
        pairs = tuple(zip(spec.keys, children))

        def flatten_dict(x, out):
            if not isinstance(x, dict):
                _mismatch(where, path, spec, x)
            if len(x) != n or any(k not in x for k in spec.keys):
                _key_mismatch(where, path, spec, x)
            for k, f in pairs:
                f(x[k], out)
        return flatten_dict
    all_leaves = all(c.kind == "leaf" for c in spec.children)
    fields = tuple(spec.keys) if kind == "namedtuple" else None

    def flatten_sequence(x, out):
        # Sequences are interchangeable: a list where a tuple was traced is fine.
        if kind == "custom" and hasattr(x, "tree_flatten"):
            x = tuple(x.tree_flatten()[0])
        if not isinstance(x, (tuple, list)) or len(x) != n:
            _mismatch(where, path, spec, x)
        if fields is not None and tuple(getattr(x, "_fields", fields)) != fields:
            # another namedtuple with the fields in another order would swap values
            _mismatch(where, path, spec, x)
        if all_leaves:
            out.extend(x)
            return
        for f, c in zip(children, x):
            f(c, out)
    return flatten_sequence


def _append_leaf(x, out):
    out.append(x)


def _key_mismatch(where: str, path: str, spec: TreeSpec, x: dict) -> None:
    missing = [k for k in spec.keys if k not in x]
    extra = [k for k in x if k not in spec.keys]
    raise TreeMismatchError(
        f"{where}: {path or 'argument'} has keys {sorted(map(repr, x))}, expected "
        f"{list(map(repr, spec.keys))} (missing: {missing or 'none'}, unexpected: "
        f"{extra or 'none'}); pass a dict with exactly the keys it was compiled with")


def is_number_list(x) -> bool:
    """A (nested) list of numbers at a leaf position is taken as array data."""
    return isinstance(x, list) and all(
        isinstance(v, (int, float, bool, complex)) or is_number_list(v) for v in x)


def _mismatch(where: str, path: str, spec: TreeSpec, x) -> None:
    raise TreeMismatchError(
        f"{where}: {path or 'the arguments'} should be structure {spec}, got {describe(x)}; "
        "pass arguments with the pytree structure the entry was compiled for")


def decode(obj, where: str = "tree") -> TreeSpec:
    """JSON (as produced by encode) -> TreeSpec; ManifestError if malformed."""
    if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
        raise ManifestError(f"{where}: expected a tree node {{'kind': one of {KINDS}}}, "
                            f"got {str(obj)[:80]}")
    kind = obj["kind"]
    if kind in ("leaf", "none"):
        return TreeSpec(kind)
    raw = obj.get("children")
    if not isinstance(raw, list):
        raise ManifestError(f"{where}: {kind} node without a 'children' list")
    children = [decode(c, f"{where}.children[{i}]") for i, c in enumerate(raw)]
    keys: list = []
    if kind in ("dict", "namedtuple"):
        field = "keys" if kind == "dict" else "fields"
        keys = obj.get(field)
        if not isinstance(keys, list) or len(keys) != len(children) or not all(
                isinstance(k, _KEY_TYPES) for k in keys):
            raise ManifestError(f"{where}: {kind} node needs a '{field}' list with one "
                                "str/int/float/bool entry per child")
    name = obj.get("name", "")
    if kind in ("namedtuple", "custom") and not isinstance(name, str):
        raise ManifestError(f"{where}: {kind} node 'name' must be a string")
    return TreeSpec(kind, children, keys, name)


def leaf_paths(spec: TreeSpec, root_names=None, prefix: str = "") -> list:
    """Path of every leaf, e.g. "params['w1']" or "[0]". With root_names, the root
    tuple's children are named (the entry's argument names) instead of indexed."""
    out: list = []

    def rec(s: TreeSpec, path: str) -> None:
        if s.kind == "leaf":
            out.append(path)
        for i, c in enumerate(s.children):
            rec(c, path + s.child_path(i))

    if root_names is not None:
        if len(root_names) != len(spec.children):
            raise ValueError(f"{len(root_names)} names for {len(spec.children)} arguments")
        for name, c in zip(root_names, spec.children):
            rec(c, prefix + name)
    else:
        rec(spec, prefix)
    return out


def compile_unflatten(spec: TreeSpec) -> Callable:
    """A fast leaves -> structure function for the common result shapes."""
    if spec.kind == "leaf":
        return lambda leaves: leaves[0]
    if spec.kind == "tuple" and all(c.kind == "leaf" for c in spec.children):
        return tuple
    if spec.kind == "list" and all(c.kind == "leaf" for c in spec.children):
        return list
    if spec.kind == "dict" and all(c.kind == "leaf" for c in spec.children):
        keys = spec.keys
        return lambda leaves: dict(zip(keys, leaves))
    return spec.unflatten
