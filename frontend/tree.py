"""Pytrees: nested tuples, lists, dicts, None, namedtuples and registered classes.

flatten(tree) -> (leaves, treedef); unflatten(treedef, leaves) rebuilds it.
A TreeDef is hashable, so it can key trace caches.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

_REGISTRY: dict = {}


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable) -> None:
    """flatten(obj) -> (children, aux_data); unflatten(aux_data, children) -> obj."""
    _REGISTRY[cls] = (flatten, unflatten)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: cls.tree_flatten() and cls.tree_unflatten(aux, children)."""
    register_pytree_node(cls, lambda o: o.tree_flatten(), cls.tree_unflatten)
    return cls


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _node_of(x):
    """(kind, aux, children) for an internal node, or None for a leaf."""
    t = type(x)
    if t in _REGISTRY:
        children, aux = _REGISTRY[t][0](x)
        return t, aux, list(children)
    if x is None:
        return type(None), None, []
    if t is tuple or t is list:
        return t, len(x), list(x)
    if t is dict:
        keys = tuple(sorted(x))
        return dict, keys, [x[k] for k in keys]
    if _is_namedtuple(x):
        return t, None, list(x)
    return None


@dataclass(frozen=True)
class TreeDef:
    kind: Any            # node type, or None for a leaf
    aux: Any
    children: tuple

    @property
    def num_leaves(self) -> int:
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)

    def __str__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(map(str, self.children))
        if self.kind is dict:
            inner = ", ".join(f"{k!r}: {c}" for k, c in zip(self.aux, self.children))
            return "{" + inner + "}"
        if self.kind is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind is list:
            return f"[{inner}]"
        if self.kind is type(None):
            return "None"
        return f"{self.kind.__name__}({inner})"


LEAF = TreeDef(None, None, ())


def flatten(tree, is_leaf: Callable | None = None) -> tuple:
    leaves: list = []

    def rec(x) -> TreeDef:
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return LEAF
        node = _node_of(x)
        if node is None:
            leaves.append(x)
            return LEAF
        kind, aux, children = node
        return TreeDef(kind, aux, tuple(rec(c) for c in children))

    treedef = rec(tree)
    return leaves, treedef


def unflatten(treedef: TreeDef, leaves) -> Any:
    it = iter(leaves)

    def rec(td: TreeDef):
        if td.kind is None:
            return next(it)
        children = [rec(c) for c in td.children]
        if td.kind in _REGISTRY:
            return _REGISTRY[td.kind][1](td.aux, children)
        if td.kind is type(None):
            return None
        if td.kind is tuple or td.kind is list:
            return td.kind(children)
        if td.kind is dict:
            return dict(zip(td.aux, children))
        return td.kind(*children)  # namedtuple

    out = rec(treedef)
    rest = list(it)
    if rest:
        raise ValueError(f"unflatten: {len(rest)} leaves left over for tree {treedef}")
    return out


def tree_leaves(tree) -> list:
    return flatten(tree)[0]


def tree_structure(tree) -> TreeDef:
    return flatten(tree)[1]


def tree_map(f: Callable, tree, *rest, is_leaf: Callable | None = None):
    leaves, td = flatten(tree, is_leaf)
    others = [flatten_up_to(td, r) for r in rest]
    return unflatten(td, [f(*xs) for xs in zip(leaves, *others)])


def flatten_up_to(treedef: TreeDef, tree) -> list:
    """Leaves of tree cut at treedef's leaves (a prefix match); clear error otherwise."""
    out: list = []

    def rec(td: TreeDef, x, path: str):
        if td.kind is None:
            out.append(x)
            return
        node = _node_of(x)
        if node is None or node[0] is not td.kind or node[1] != td.aux:
            raise ValueError(f"tree mismatch at {path or 'root'}: expected {td}, got {x!r}")
        for i, (c, cx) in enumerate(zip(td.children, node[2])):
            key = td.aux[i] if td.kind is dict else i
            rec(c, cx, f"{path}[{key!r}]")

    rec(treedef, tree, "")
    return out


def broadcast_prefix(prefix, tree, is_leaf: Callable | None = None) -> list:
    """One prefix leaf per leaf of tree (for in_axes-style arguments)."""
    leaves_td = flatten(tree, is_leaf)[1]
    out: list = []

    def rec(p, td: TreeDef):
        if td.kind is None or p is None or _node_of(p) is None:
            out.extend([p] * td.num_leaves)
            return
        node = _node_of(p)
        if node[0] is not td.kind or node[1] != td.aux:
            raise ValueError(f"prefix {p!r} does not match tree structure {td}")
        for pc, c in zip(node[2], td.children):
            rec(pc, c)

    rec(prefix, leaves_td)
    return out
