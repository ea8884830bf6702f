"""Pytrees for jx: nested tuples, lists, dicts, None, namedtuples and registered classes.

The implementation is the runtime's (jx.runtime.pytree: key paths, the node
registry, TreeDef, flatten/unflatten, flatten_up_to), so a compiled artifact's
trees and jit's are one kind; it is re-exported here under jx.tree. This module
adds JAX's `jax.tree` spellings (map, leaves, structure, reduce, all, transpose,
broadcast, the *_with_path functions, static); jx.tree_util builds on both.
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
from typing import Any, Callable

# The shared core, private helpers included (jx.tree_util and dispatch use them).
from .runtime.pytree import (LEAF, DictKey, FlattenedIndexKey, GetAttrKey,  # noqa: F401
                             SequenceKey, TreeDef, _is_namedtuple_type, _keyed_node,
                             _node_of, flatten, flatten_up_to, flatten_with_path, keystr,
                             leaves_with_path, register_pytree_node,
                             register_pytree_node_class, tree_leaves, tree_structure,
                             unflatten)


# ---------------------------------------------------------------- mapping, broadcasting

def _up_to(fn: str, treedef: TreeDef, rest: tuple) -> list:
    """flatten_up_to for each tree after the first, naming which one fails."""
    out = []
    for i, r in enumerate(rest):
        try:
            out.append(flatten_up_to(treedef, r))
        except ValueError as e:
            raise ValueError(f"{fn}: rest[{i}] must have the first tree's structure "
                             f"{treedef} (or have it as a prefix); {e}") from None
    return out


def tree_map(f: Callable, tree, *rest, is_leaf: Callable | None = None):
    leaves, td = flatten(tree, is_leaf)
    others = _up_to("tree_map", td, rest)
    return unflatten(td, [f(*xs) for xs in zip(leaves, *others)])


def map_with_path(f: Callable, tree, *rest, is_leaf: Callable | None = None,
                  is_leaf_takes_path: bool = False):
    """Like tree_map, f(key_path, leaf, *other_leaves)."""
    pairs, td = flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = _up_to("map_with_path", td, rest)
    return unflatten(td, [f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


def broadcast_prefix(prefix, tree, is_leaf: Callable | None = None) -> list:
    """One prefix leaf per leaf of tree (for in_axes-style arguments; a None in
    prefix stands for its whole subtree)."""
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


def broadcast(prefix_tree, full_tree, is_leaf: Callable | None = None):
    """full_tree's structure, each leaf the prefix_tree leaf above it (JAX's
    jax.tree.broadcast: None is an empty subtree here, not a wildcard)."""
    p_leaves, p_td = flatten(prefix_tree, is_leaf)
    try:
        subtrees = flatten_up_to(p_td, full_tree)
    except ValueError as e:
        raise ValueError(f"broadcast: full_tree must have prefix_tree's structure {p_td} "
                         f"as a prefix; {e}") from None
    filled = [tree_map(lambda _, p=p: p, sub, is_leaf=is_leaf)
              for p, sub in zip(p_leaves, subtrees)]
    return unflatten(p_td, filled)


# ---------------------------------------------------------------- reductions, transpose

_NO_INIT = object()


def tree_reduce(function: Callable, tree, initializer: Any = _NO_INIT,
                is_leaf: Callable | None = None):
    xs = flatten(tree, is_leaf)[0]
    if initializer is _NO_INIT:
        if not xs:
            raise TypeError("reduce: the tree has no leaves; pass an initializer")
        return functools.reduce(function, xs)
    return functools.reduce(function, xs, initializer)


def tree_reduce_associative(operation: Callable, tree, *, identity: Any = _NO_INIT,
                            is_leaf: Callable | None = None):
    """Reduce the leaves pairwise (a balanced tree of calls); operation must be
    associative."""
    xs = flatten(tree, is_leaf)[0]
    if not xs:
        if identity is _NO_INIT:
            raise TypeError("reduce_associative: the tree has no leaves; pass identity=")
        return identity
    while len(xs) > 1:
        pairs = [operation(xs[i], xs[i + 1]) for i in range(0, len(xs) - 1, 2)]
        xs = pairs + xs[len(pairs) * 2:]
    return xs[0]


def tree_all(tree, *, is_leaf: Callable | None = None) -> bool:
    return builtins.all(flatten(tree, is_leaf)[0])


def tree_transpose(outer_treedef: TreeDef, inner_treedef: TreeDef | None, pytree_to_transpose):
    """An outer structure of inner structures -> an inner structure of outer ones.
    inner_treedef None: read from the first outer leaf's subtree."""
    if inner_treedef is None:
        subtrees = flatten_up_to(outer_treedef, pytree_to_transpose)
        if not subtrees:
            raise ValueError("transpose: outer_treedef has no leaves to read the inner "
                             "structure from; pass inner_treedef")
        inner_treedef = tree_structure(subtrees[0])
    xs, td = flatten(pytree_to_transpose)
    expected = outer_treedef.compose(inner_treedef)
    if td != expected:
        raise TypeError(f"transpose: the tree's structure {td} is not outer_treedef "
                        f"{outer_treedef} with each leaf an inner_treedef {inner_treedef}, "
                        f"that is {expected}")
    n_in = inner_treedef.num_leaves
    rows = [xs[i * n_in:(i + 1) * n_in] for i in range(outer_treedef.num_leaves)]
    return unflatten(inner_treedef, [unflatten(outer_treedef, [r[j] for r in rows])
                                    for j in range(n_in)])


def static(**kwargs):
    """dataclasses.field(...) marked static: register_dataclass makes it aux data."""
    metadata = dict(kwargs.pop("metadata", None) or {}, static=True)
    return dataclasses.field(metadata=metadata, **kwargs)


# JAX's jax.tree spellings. They shadow builtins (map, all) in this module's globals,
# so code above must not call those builtins by their bare names.
map = tree_map
leaves = tree_leaves
structure = tree_structure
reduce = tree_reduce
reduce_associative = tree_reduce_associative
all = tree_all
transpose = tree_transpose
