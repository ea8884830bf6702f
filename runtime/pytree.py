"""Pytrees, the one implementation jx has: nested tuples, lists, dicts, None,
namedtuples and registered classes.

flatten(tree) -> (leaves, treedef); unflatten(treedef, leaves) rebuilds it. A
TreeDef is hashable, so it can key trace caches. The frontend's jx.tree and
jx.tree_util build on this module (jax.tree's map/reduce/transpose live there);
the runtime's manifest trees (treespec) encode these TreeDefs. It lives in the
runtime because the runtime installs alone: it imports only the standard library.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple


# ---------------------------------------------------------------- key paths

@dataclass(frozen=True)
class DictKey:
    """A dict entry's key on a key path, shown as ['a']."""
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclass(frozen=True)
class SequenceKey:
    """A tuple or list position on a key path, shown as [0]."""
    idx: int

    def __post_init__(self):
        if not isinstance(self.idx, int):
            raise TypeError(f"SequenceKey takes an int index, got {type(self.idx).__name__}")

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclass(frozen=True)
class GetAttrKey:
    """A named field (namedtuple, dataclass) on a key path, shown as .name."""
    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclass(frozen=True)
class FlattenedIndexKey:
    """The i-th child of a node registered without keys, shown as [<flat index i>]."""
    key: int

    def __post_init__(self):
        if not isinstance(self.key, int):
            raise TypeError(f"FlattenedIndexKey takes an int, got {type(self.key).__name__}")

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: "['a'][0].x", or with simple=True the bare keys
    ("a", "0", "x") joined by separator."""
    if not simple:
        return separator.join(str(k) for k in keys)
    bare = (getattr(k, f) for k in keys
            for f in ("key", "idx", "name") if hasattr(k, f))
    return separator.join(str(b) for b in bare)


# ---------------------------------------------------------------- node registry

class _Node(NamedTuple):
    flatten: Callable            # obj -> (children, aux)
    unflatten: Callable          # (aux, children) -> obj
    flatten_with_keys: Callable | None   # obj -> ([(key, child)], aux); None: flat indices


_REGISTRY: dict = {}


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable,
                         flatten_with_keys: Callable | None = None) -> None:
    """flatten(obj) -> (children, aux_data); unflatten(aux_data, children) -> obj;
    flatten_with_keys(obj) -> ([(key, child), ...], aux_data) names children on key paths."""
    if cls in _REGISTRY:
        raise ValueError(f"{cls.__module__}.{cls.__qualname__} is already registered as a "
                         "pytree node; a type can be registered only once")
    _REGISTRY[cls] = _Node(flatten, unflatten, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: cls.tree_flatten() and cls.tree_unflatten(aux, children)."""
    register_pytree_node(cls, lambda o: o.tree_flatten(), cls.tree_unflatten)
    return cls


def _sorted_keys(d) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError:
        raise ValueError(f"a pytree dict's keys are sorted, but the keys {list(d)!r} do not "
                         "compare with each other; use keys of one comparable type "
                         "(all str, or all int)") from None


def _seq_keys(x):
    return [(SequenceKey(i), c) for i, c in enumerate(x)], len(x)


def _dict_flatten(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], keys


def _dict_keys(d):
    keys = _sorted_keys(d)
    return [(DictKey(k), d[k]) for k in keys], keys


def _register_builtins() -> None:
    register_pytree_node(type(None), lambda x: ((), None), lambda aux, c: None,
                         lambda x: ((), None))
    for seq in (tuple, list):
        register_pytree_node(seq, lambda x: (x, len(x)),
                             lambda aux, c, seq=seq: seq(c), _seq_keys)
    register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)), _dict_keys)
    # OrderedDict keeps its order; defaultdict keeps its factory (aux), keys sorted
    od = collections.OrderedDict
    register_pytree_node(od, lambda d: (list(d.values()), tuple(d)),
                         lambda keys, c: od(zip(keys, c)),
                         lambda d: ([(DictKey(k), v) for k, v in d.items()], tuple(d)))
    dd = collections.defaultdict

    def dd_keys(d):
        pairs, keys = _dict_keys(d)
        return pairs, (d.default_factory, keys)
    register_pytree_node(dd, lambda d: (_dict_flatten(d)[0], (d.default_factory, _sorted_keys(d))),
                         lambda aux, c: dd(aux[0], zip(aux[1], c)), dd_keys)


_register_builtins()


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _is_namedtuple_type(t) -> bool:
    """A namedtuple class not registered as a node of its own (flattened by field)."""
    return isinstance(t, type) and issubclass(t, tuple) and hasattr(t, "_fields") and \
        t not in _REGISTRY


def _node_of(x):
    """(kind, aux, children) for an internal node, or None for a leaf."""
    t = type(x)
    node = _REGISTRY.get(t)
    if node is not None:
        children, aux = node.flatten(x)
        return t, aux, list(children)
    if _is_namedtuple(x):
        return t, None, list(x)
    return None


def _keyed_node(x):
    """(kind, aux, keys, children) for an internal node, or None for a leaf."""
    t = type(x)
    node = _REGISTRY.get(t)
    if node is not None and node.flatten_with_keys is not None:
        pairs, aux = node.flatten_with_keys(x)
        pairs = list(pairs)
        return t, aux, [k for k, _ in pairs], [c for _, c in pairs]
    if node is None and _is_namedtuple(x):
        return t, None, [GetAttrKey(f) for f in t._fields], list(x)
    got = _node_of(x)
    if got is None:
        return None
    return got[0], got[1], [FlattenedIndexKey(i) for i in range(len(got[2]))], got[2]


# ---------------------------------------------------------------- TreeDef

class _Children(tuple):
    """A node's child TreeDefs: a tuple for jx, and callable as JAX's
    `treedef.children()` (a list)."""
    __slots__ = ()

    def __call__(self) -> list:
        return list(self)


@dataclass(frozen=True)
class TreeDef:
    kind: Any            # node type, or None for a leaf
    aux: Any
    children: tuple

    def __post_init__(self):
        if type(self.children) is not _Children:
            object.__setattr__(self, "children", _Children(self.children))

    @property
    def num_leaves(self) -> int:
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves) -> Any:
        return unflatten(self, leaves)

    def flatten_up_to(self, tree) -> list:
        return flatten_up_to(self, tree)

    def node_data(self):
        """(node type, aux data) of the root; None for a leaf."""
        return None if self.kind is None else (self.kind, self.aux)

    def compose(self, inner: "TreeDef") -> "TreeDef":
        """This structure with every leaf replaced by inner."""
        if self.kind is None:
            return inner
        return TreeDef(self.kind, self.aux, tuple(c.compose(inner) for c in self.children))

    def __str__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(str(c) for c in self.children)
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

    def __repr__(self) -> str:
        return f"PyTreeDef({self})"


LEAF = TreeDef(None, None, ())


# ---------------------------------------------------------------- flatten / unflatten

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
        return TreeDef(kind, aux, _Children([rec(c) for c in children]))

    treedef = rec(tree)
    return leaves, treedef


def unflatten(treedef: TreeDef, leaves) -> Any:
    it = iter(leaves)

    def rec(td: TreeDef):
        if td.kind is None:
            return next(it)
        children = [rec(c) for c in td.children]
        node = _REGISTRY.get(td.kind)
        if node is None:
            return td.kind(*children)  # namedtuple
        return node.unflatten(td.aux, children)

    try:
        out = rec(treedef)
    except StopIteration:
        raise ValueError(f"unflatten: too few leaves for tree {treedef}, which takes "
                         f"{treedef.num_leaves}") from None
    rest = list(it)
    if rest:
        raise ValueError(f"unflatten: too many leaves for tree {treedef}, which takes "
                         f"{treedef.num_leaves}: {len(rest)} leaves left over")
    return out


def flatten_with_path(tree, is_leaf: Callable | None = None,
                      is_leaf_takes_path: bool = False) -> tuple:
    """([(key path, leaf), ...], treedef); is_leaf(path, x) when is_leaf_takes_path."""
    out: list = []

    def rec(x, path: tuple) -> TreeDef:
        if is_leaf is not None and (is_leaf(path, x) if is_leaf_takes_path else is_leaf(x)):
            out.append((path, x))
            return LEAF
        node = _keyed_node(x)
        if node is None:
            out.append((path, x))
            return LEAF
        kind, aux, keys, children = node
        return TreeDef(kind, aux, _Children([rec(c, path + (k,))
                                             for k, c in zip(keys, children)]))

    treedef = rec(tree, ())
    return out, treedef


def tree_leaves(tree, is_leaf: Callable | None = None) -> list:
    return flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable | None = None) -> TreeDef:
    return flatten(tree, is_leaf)[1]


def leaves_with_path(tree, is_leaf: Callable | None = None,
                     is_leaf_takes_path: bool = False) -> list:
    return flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


# ---------------------------------------------------------------- matching structures

class _Mismatch(Exception):
    def __init__(self, problem: str):
        self.problem, self.path = problem, []


def _kind_name(kind) -> str:
    return "None" if kind is type(None) else f"a {kind.__name__}"


def _short(x) -> str:
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


def _problem(td: TreeDef, x, node) -> str | None:
    """Why x (whose node is `node`) does not match td's root; None when it does."""
    if node is None or node[0] is not td.kind:
        what = "a leaf" if node is None else _kind_name(node[0])
        return f"expected {_kind_name(td.kind)}, got {what}: {_short(x)}"
    kind, aux, children = node
    if aux == td.aux and len(children) == len(td.children):
        return None
    if kind is tuple or kind is list:
        return f"expected {_kind_name(kind)} of length {td.aux}, got length {aux}: {_short(x)}"
    if kind in (dict, collections.OrderedDict):
        missing = [k for k in td.aux if k not in aux]
        extra = [k for k in aux if k not in td.aux]
        return (f"expected {kind.__name__} keys {list(td.aux)!r}, got {list(aux)!r}"
                + (f"; missing {missing!r}" if missing else "")
                + (f"; unexpected {extra!r}" if extra else ""))
    return (f"expected {_kind_name(kind)} node with aux data {td.aux!r} and "
            f"{len(td.children)} children, got aux data {aux!r} and {len(children)} children")


def flatten_up_to(treedef: TreeDef, tree) -> list:
    """Leaves of tree cut at treedef's leaves (a prefix match); clear error otherwise."""
    out: list = []

    def rec(td: TreeDef, x):
        if td.kind is None:
            out.append(x)
            return
        node = _node_of(x)
        problem = _problem(td, x, node)
        if problem is not None:
            raise _Mismatch(problem)
        for i, (c, cx) in enumerate(zip(td.children, node[2])):
            try:
                rec(c, cx)
            except _Mismatch as m:
                m.path.append(_keyed_node(x)[2][i])
                raise

    try:
        rec(treedef, tree)
    except _Mismatch as m:
        where = keystr(m.path[::-1]) or "the root"
        raise ValueError(f"tree mismatch at {where}: {m.problem}") from None
    return out

