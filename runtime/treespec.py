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

encode() reads a jx TreeDef duck-typed (kind, aux, children), so neither this
module nor the runtime imports the jx frontend.
"""
from __future__ import annotations

from typing import Any, Callable

from .errors import ManifestError, TreeMismatchError

KINDS = ("leaf", "none", "tuple", "list", "dict", "namedtuple", "custom")
_KEY_TYPES = (str, int, float, bool)


def encode(treedef) -> dict:
    """A jx TreeDef (anything with kind/aux/children, kind None for a leaf) -> JSON."""
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
    name = f"{kind.__module__}.{kind.__qualname__}"
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return {"kind": "namedtuple", "name": name, "fields": list(kind._fields),
                "children": children}
    return {"kind": "custom", "name": name, "children": children}


class TreeSpec:
    """A decoded tree structure: flattens arguments and unflattens results."""

    __slots__ = ("kind", "keys", "name", "children", "num_leaves")

    def __init__(self, kind: str, children: tuple = (), keys: tuple = (), name: str = ""):
        self.kind = kind
        self.children = tuple(children)
        self.keys = tuple(keys)        # dict keys, or a named tuple's field names
        self.name = name               # class name of namedtuple/custom nodes
        self.num_leaves = 1 if kind == "leaf" else sum(c.num_leaves for c in self.children)

    def to_json(self) -> dict:
        out: dict = {"kind": self.kind}
        if self.kind in ("namedtuple", "custom"):
            out["name"] = self.name
        if self.kind == "dict":
            out["keys"] = list(self.keys)
        if self.kind == "namedtuple":
            out["fields"] = list(self.keys)
        if self.kind not in ("leaf", "none"):
            out["children"] = [c.to_json() for c in self.children]
        return out

    def __eq__(self, other) -> bool:
        return isinstance(other, TreeSpec) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return f"TreeSpec({self})"

    def __str__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(str, self.children))
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, self.children)) + "}"
        if self.kind == "tuple":
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == "list":
            return f"[{inner}]"
        return f"{self.name.rsplit('.', 1)[-1]}({inner})"

    def child_path(self, i: int) -> str:
        """Path suffix of child i, in the style of the manifest's leaf paths."""
        if self.kind == "dict":
            return f"[{self.keys[i]!r}]"
        if self.kind == "namedtuple":
            return f".{self.keys[i]}"
        return f"[{i}]"

    def unflatten(self, leaves) -> Any:
        """Rebuild the structure around leaves (named tuples and classes as tuples)."""
        it = iter(leaves)
        out = _build(self, it)
        if next(it, _END) is not _END:
            raise ValueError(f"too many leaves for tree {self} ({self.num_leaves} expected)")
        return out

    def flatten(self, tree, path: str = "", where: str = "tree") -> list:
        """Leaves of tree in this structure's order (see compile_flatten)."""
        out: list = []
        compile_flatten(self, path, where)(tree, out)
        return out


_END = object()


def _build(spec: TreeSpec, it):
    kind = spec.kind
    if kind == "leaf":
        return next(it)
    if kind == "none":
        return None
    children = [_build(c, it) for c in spec.children]
    if kind == "list":
        return children
    if kind == "dict":
        return dict(zip(spec.keys, children))
    return tuple(children)


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
