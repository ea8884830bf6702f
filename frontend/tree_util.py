"""jax.tree_util's names over jx's pytrees (jx.tree): flatten/map/reduce under their
tree_* names, key paths, node registration (classes, dataclasses, static types) and
Partial, a functools.partial whose bound arguments are pytree leaves."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

from . import tree
from .tree import (DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey,  # noqa: F401
                   TreeDef, keystr, register_pytree_node, register_pytree_node_class)

PyTreeDef = TreeDef
KeyEntry = Any               # one of the key classes, or a user's key object
KeyPath = tuple              # a tuple of KeyEntry

tree_flatten = tree.flatten
tree_unflatten = tree.unflatten
tree_leaves = tree.tree_leaves
tree_structure = tree.tree_structure
tree_map = tree.tree_map
tree_reduce = tree.tree_reduce
tree_reduce_associative = tree.tree_reduce_associative
tree_all = tree.tree_all
tree_transpose = tree.tree_transpose
tree_broadcast = tree.broadcast
tree_flatten_with_path = tree.flatten_with_path
tree_leaves_with_path = tree.leaves_with_path
tree_map_with_path = tree.map_with_path
# jx.tree's spellings, kept for code written when jx.tree_util was jx.tree
flatten, unflatten = tree.flatten, tree.unflatten


def treedef_children(treedef: TreeDef) -> list:
    return treedef.children()


def treedef_is_leaf(treedef: TreeDef) -> bool:
    """True for a structure of one node: a leaf, or a childless node such as None."""
    return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: TreeDef) -> bool:
    return treedef.kind is None


def treedef_tuple(treedefs) -> TreeDef:
    """The structure of a tuple whose elements have the given structures."""
    treedefs = tuple(treedefs)
    return TreeDef(tuple, len(treedefs), treedefs)


def all_leaves(iterable, is_leaf: Callable | None = None) -> bool:
    """Whether every element is a leaf (not a pytree node, or is_leaf says so)."""
    return all((is_leaf is not None and is_leaf(x)) or tree._node_of(x) is None
               for x in iterable)


def flatten_one_level(pytree) -> tuple:
    """(children, aux data) of the root node; a leaf is an error."""
    node = tree._node_of(pytree)
    if node is None:
        raise ValueError(f"flatten_one_level: {type(pytree).__name__} is a leaf, not a pytree "
                         "node")
    return node[2], node[1]


def flatten_one_level_with_keys(pytree) -> tuple:
    """([(key, child), ...], aux data) of the root node; a leaf is an error."""
    node = tree._keyed_node(pytree)
    if node is None:
        raise ValueError(f"flatten_one_level_with_keys: {type(pytree).__name__} is a leaf, "
                         "not a pytree node")
    return list(zip(node[2], node[3])), node[1]


# ---------------------------------------------------------------- registration

def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """flatten_with_keys(obj) -> ([(key, child), ...], aux); flatten_func, when given,
    is the faster keyless flatten (the same children and aux)."""
    if flatten_func is None:
        def flatten_func(obj):
            pairs, aux = flatten_with_keys(obj)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: cls.tree_flatten_with_keys() and cls.tree_unflatten(aux,
    children), and cls.tree_flatten() when it has one."""
    flat = (lambda o: o.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda o: o.tree_flatten_with_keys(), cls.tree_unflatten,
                              flat)
    return cls


def register_dataclass(nodetype: type, data_fields=None, meta_fields=None,
                       drop_fields=()) -> type:
    """Register a class whose data_fields are children and meta_fields aux data
    (hashable, compared in the treedef). For a dataclass both may be omitted: fields
    marked `metadata={"static": True}` (jx.tree.static) are meta, the rest data.
    Returns nodetype, so it also decorates."""
    if (data_fields is None) != (meta_fields is None):
        raise TypeError("register_dataclass: pass both data_fields and meta_fields, or "
                        f"neither; got data_fields={data_fields!r}, meta_fields={meta_fields!r}")
    is_dc = dataclasses.is_dataclass(nodetype)
    if data_fields is None:
        if not is_dc:
            raise TypeError(f"register_dataclass: {nodetype.__qualname__} is not a dataclass, "
                            "so data_fields and meta_fields are required")
        fields = dataclasses.fields(nodetype)
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if is_dc:
        init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        given = set(data_fields) | set(meta_fields)
        if given != init:
            raise ValueError(
                f"register_dataclass: data_fields and meta_fields of {nodetype.__qualname__} "
                "must name exactly its fields with init=True"
                + (f"; missing {sorted(init - given)} (or list them in drop_fields)"
                   if init - given else "")
                + (f"; not init fields: {sorted(given - init)}" if given - init else ""))

    def flatten(obj):
        return ([getattr(obj, n) for n in data_fields],
                tuple(getattr(obj, n) for n in meta_fields))

    def flatten_with_keys(obj):
        return ([(GetAttrKey(n), getattr(obj, n)) for n in data_fields],
                tuple(getattr(obj, n) for n in meta_fields))

    def unflatten(meta, children):
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, children)))

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def register_static(cls: type) -> type:
    """Class decorator: instances are pytree nodes with no children, the instance
    itself the aux data (so it must be hashable and compare by value)."""
    register_pytree_node(cls, lambda o: ((), o), lambda o, _: o, lambda o: ((), o))
    return cls


# ---------------------------------------------------------------- Partial

class _Static:
    """A functools.partial used as a Partial's function. Wrapped, because
    functools.partial would merge its bound arguments into the new Partial's, and
    those must stay part of the (static) function, not become leaves."""
    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __eq__(self, other):
        return isinstance(other, _Static) and self.fn == other.fn

    def __hash__(self):
        return hash(self.fn)

    def __repr__(self):
        return repr(self.fn)


class Partial(functools.partial):
    """functools.partial as a pytree: the bound args and keywords are children (so
    arrays among them are traced by jit, grad, vmap), the function is static."""

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            func = _Static(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, c: Partial(func, *c[0], **c[1]))
