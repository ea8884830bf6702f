"""jx.tree_util and jx.tree's JAX spellings: each name against jax.tree_util when JAX
is installed, and against written-out expectations otherwise; registered nodes and
Partial through jit, grad and vmap; the errors for mismatched structures."""
import collections
import dataclasses
import functools
import operator
from typing import Any

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import tree
from jx import tree_util as tu

Point = collections.namedtuple("Point", ["x", "y"])


class Box:
    """A class registered with keys (in jx here; in JAX by _jax_registered)."""

    def __init__(self, lo, hi, name):
        self.lo, self.hi, self.name = lo, hi, name

    def __eq__(self, other):
        return (type(other) is Box and (self.lo, self.hi, self.name)
                == (other.lo, other.hi, other.name))


def _box_keys(b, key_cls):
    return [(key_cls("lo"), b.lo), (key_cls("hi"), b.hi)], b.name


def _box_unflatten(name, children):
    return Box(*children, name)


tu.register_pytree_with_keys(Box, lambda b: _box_keys(b, tu.GetAttrKey), _box_unflatten)


@tu.register_dataclass
@dataclasses.dataclass
class Params:
    w: Any
    b: Any
    act: str = tree.static(default="tanh")


class Pair:
    """A plain class registered by field names (not a dataclass)."""

    def __init__(self, a, tag):
        self.a, self.tag = a, tag

    def __eq__(self, other):
        return type(other) is Pair and (self.a, self.tag) == (other.a, other.tag)


tu.register_dataclass(Pair, data_fields=["a"], meta_fields=["tag"])

_JAX_DONE = []


def _jax():
    """jax.tree_util with this file's classes registered there too (once)."""
    jax = pytest.importorskip("jax")
    jtu = jax.tree_util
    if not _JAX_DONE:
        jtu.register_pytree_with_keys(Box, lambda b: _box_keys(b, jtu.GetAttrKey),
                                      _box_unflatten)
        jtu.register_dataclass(Params)
        jtu.register_dataclass(Pair, data_fields=["a"], meta_fields=["tag"])
        _JAX_DONE.append(True)
    return jtu


def trees():
    od = collections.OrderedDict([("z", 1), ("a", (2, 3))])
    dd = collections.defaultdict(list, {"b": 4, "a": [5]})
    return [
        1, None, (), [], {}, (None,), [1, None, (2,)],
        {"b": 1, "a": (2, None, [3]), "c": Point(4, 5)},
        {"k": od, "d": dd}, [Point(x=(1, 2), y=None), {3: "s", 1: 0.5}],
        Box(1, [2, 3], "box"), Params(np.float32(1), [2, 3]), Pair({"q": 1}, "t"),
        [[[]], ([None], {"e": ()})],
    ]


def _plain(x) -> bool:
    """Built of tuples, lists, dicts and None only (JAX prints those as jx does)."""
    if type(x) in (tuple, list):
        return all(_plain(c) for c in x)
    if type(x) is dict:
        return all(_plain(c) for c in x.values())
    return not isinstance(x, (Box, Params, Pair, tuple, list, dict))


# ---------------------------------------------------------------- flatten, paths, treedefs

@pytest.mark.parametrize("i", range(len(trees())))
def test_flatten_matches_jax(i):
    jtu = _jax()
    x = trees()[i]
    leaves, td = tu.tree_flatten(x)
    jleaves, jtd = jtu.tree_flatten(x)
    assert leaves == jleaves
    assert (td.num_leaves, td.num_nodes) == (jtd.num_leaves, jtd.num_nodes)
    assert tu.treedef_is_leaf(td) == jtu.treedef_is_leaf(jtd)
    assert len(tu.treedef_children(td)) == len(jtu.treedef_children(jtd))
    assert tu.tree_unflatten(td, leaves) == x == td.unflatten(leaves)
    paths = [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(x)[0]]
    assert paths == [jtu.keystr(p) for p, _ in jtu.tree_flatten_with_path(x)[0]]
    simple = [tu.keystr(p, simple=True, separator="/") for p in
              [p for p, _ in tu.tree_leaves_with_path(x)]]
    assert simple == [jtu.keystr(p, simple=True, separator="/")
                      for p, _ in jtu.tree_leaves_with_path(x)]
    assert [repr(p) for p, _ in tu.tree_leaves_with_path(x)] == \
        [repr(p) for p, _ in jtu.tree_leaves_with_path(x)]
    if _plain(x):
        assert repr(td) == repr(jtd)


def test_flatten_written_out():
    x = {"b": 1, "a": (2, None, [3]), "c": Point(4, 5)}
    leaves, td = tree.flatten(x)
    assert leaves == [2, 3, 1, 4, 5]
    assert repr(td) == "PyTreeDef({'a': (*, None, [*]), 'b': *, 'c': Point(*, *)})"
    assert td.num_leaves == 5 and td.num_nodes == 10
    assert [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(x)[0]] == \
        ["['a'][0]", "['a'][2][0]", "['b']", "['c'].x", "['c'].y"]
    assert [tu.keystr(p, simple=True, separator=".") for p, _ in
            tu.tree_leaves_with_path(x)] == ["a.0", "a.2.0", "b", "c.x", "c.y"]
    od = collections.OrderedDict([("z", 1), ("a", 2)])
    assert tu.tree_leaves(od) == [1, 2] and tu.tree_leaves({"z": 1, "a": 2}) == [2, 1]
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    back = tu.tree_unflatten(tu.tree_structure(dd), [7, 8])
    assert type(back) is collections.defaultdict and back.default_factory is list
    assert back == {"a": 7, "b": 8}
    assert tu.tree_leaves([None, (None,), {}]) == []
    assert tu.tree_leaves([None, 1], is_leaf=lambda v: v is None) == [None, 1]
    paths = tu.tree_flatten_with_path(Box(1, 2, "n"))[0]
    assert paths == [((tu.GetAttrKey("lo"),), 1), ((tu.GetAttrKey("hi"),), 2)]
    assert tu.tree_leaves_with_path(Pair(3, "t")) == [((tu.GetAttrKey("a"),), 3)]


def test_key_classes():
    assert str(tu.DictKey("a")) == "['a']" and str(tu.SequenceKey(1)) == "[1]"
    assert str(tu.GetAttrKey("x")) == ".x" and str(tu.FlattenedIndexKey(2)) == "[<flat index 2>]"
    assert repr(tu.DictKey("a")) == "DictKey(key='a')"
    assert tu.DictKey("a") == tu.DictKey("a") and hash(tu.DictKey(1)) == hash(tu.DictKey(1))
    assert tu.DictKey(0) != tu.SequenceKey(0) != tu.FlattenedIndexKey(0)
    assert tu.keystr(()) == ""
    keys = (tu.DictKey(1), tu.SequenceKey(0), tu.GetAttrKey("x"), tu.FlattenedIndexKey(3))
    assert tu.keystr(keys) == "[1][0].x[<flat index 3>]"
    assert tu.keystr(keys, simple=True, separator=".") == "1.0.x.3"
    with pytest.raises(TypeError, match="int index"):
        tu.SequenceKey("a")


def test_key_classes_match_jax():
    jtu = _jax()
    pairs = [(tu.DictKey("a"), jtu.DictKey("a")), (tu.SequenceKey(3), jtu.SequenceKey(3)),
             (tu.GetAttrKey("w"), jtu.GetAttrKey("w")),
             (tu.FlattenedIndexKey(2), jtu.FlattenedIndexKey(2))]
    for ours, theirs in pairs:
        assert (str(ours), repr(ours)) == (str(theirs), repr(theirs))
    ks, js = zip(*pairs)
    for sep in ("", "/"):
        for simple in (False, True):
            assert tu.keystr(ks, simple=simple, separator=sep) == \
                jtu.keystr(js, simple=simple, separator=sep)


def test_flatten_with_path_is_leaf_takes_path():
    got = tu.tree_flatten_with_path([1, [2]], is_leaf=lambda p, x: len(p) == 1,
                                    is_leaf_takes_path=True)[0]
    assert got == [((tu.SequenceKey(0),), 1), ((tu.SequenceKey(1),), [2])]


def test_treedef_api():
    td = tu.tree_structure((1, [2, 3]))
    assert td == tu.tree_structure((5, [6, 7])) and hash(td) == hash(tu.tree_structure((0, [0, 0])))
    assert td != tu.tree_structure((1, (2, 3))) and td != tu.tree_structure([1, [2, 3]])
    assert tu.tree_structure({"a": 1}) != tu.tree_structure({"b": 1})
    assert tu.tree_structure(Params(1, 2)) != tu.tree_structure(Params(1, 2, act="relu"))
    assert [repr(c) for c in td.children()] == ["PyTreeDef(*)", "PyTreeDef([*, *])"]
    assert td.unflatten("ab" "c") == ("a", ["b", "c"])
    assert td.flatten_up_to((1, [(2, 3), None])) == [1, (2, 3), None]
    assert td.node_data() == (tuple, 2) and tu.tree_structure(0).node_data() is None
    assert tu.treedef_is_leaf(tu.tree_structure(None)) and tu.treedef_is_leaf(tu.tree_structure(1))
    assert not tu.treedef_is_strict_leaf(tu.tree_structure(None))
    assert tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([1, 2])]) == \
        tu.tree_structure((0, [0, 0]))
    assert tu.tree_structure([1, 2]).compose(tu.tree_structure((1, 1))) == \
        tu.tree_structure([(0, 0), (0, 0)])
    assert tu.PyTreeDef is tu.TreeDef is tree.TreeDef
    with pytest.raises(ValueError, match="too few leaves"):
        td.unflatten([1, 2])
    with pytest.raises(ValueError, match="1 leaves left over"):
        tu.tree_unflatten(td, [1, 2, 3, 4])


def test_one_level_and_all_leaves():
    assert tu.flatten_one_level({"b": 1, "a": 2}) == ([2, 1], ("a", "b"))
    assert tu.flatten_one_level(None) == ([], None)
    assert tu.flatten_one_level_with_keys(Point(1, 2))[0] == \
        [(tu.GetAttrKey("x"), 1), (tu.GetAttrKey("y"), 2)]
    with pytest.raises(ValueError, match="int is a leaf"):
        tu.flatten_one_level(1)
    assert tu.all_leaves([1, np.ones(2)]) and not tu.all_leaves([1, None])
    assert not tu.all_leaves([1, (2,)])
    assert tu.all_leaves([1, (2,)], is_leaf=lambda x: isinstance(x, tuple))


def test_one_level_and_all_leaves_match_jax():
    jtu = _jax()
    for x in ([1, 2, None], [1, (2,)], [np.ones(2), 3.0], []):
        assert tu.all_leaves(x) == jtu.all_leaves(x)
    for x in ({"b": 1, "a": 2}, (1, [2]), None, Point(1, 2)):
        assert list(tu.flatten_one_level(x)[0]) == list(jtu.flatten_one_level(x)[0])


# ---------------------------------------------------------------- map, reduce, transpose, broadcast

def _maps(m):
    add = lambda a, *b: a + sum(b)  # noqa: E731
    return [
        m(add, [1, (2, 3)], [10, (20, 30)]),
        m(add, {"a": 1, "b": [2, None]}, {"a": 1, "b": [2, None]}, {"b": [3, None], "a": 4}),
        m(lambda a, b: (a, b), [1, 2], [[1, 2], 3]),      # the first tree a prefix
        m(lambda a, b: (a, b), [1, 2], [None, 2]),        # None where the first has a leaf
        m(lambda x: x is None, [None, 1], is_leaf=lambda x: x is None),
        m(lambda x: x * 2, Params(1.0, [2.0, 3.0])).b,
        m(lambda x: -x, Box(1, 2, "n")).__dict__,
    ]


def test_tree_map_written_out():
    assert _maps(tu.tree_map) == [[11, (22, 33)], {"a": 6, "b": [7, None]},
                                  [(1, [1, 2]), (2, 3)], [(1, None), (2, 2)], [True, False],
                                  [4.0, 6.0], {"lo": -1, "hi": -2, "name": "n"}]
    assert tree.map is tree.tree_map is tu.tree_map


def test_tree_map_matches_jax():
    jtu = _jax()
    assert _maps(tu.tree_map) == _maps(jtu.tree_map)


def test_map_with_path():
    f = lambda p, x, y: (tu.keystr(p), x, y)  # noqa: E731
    got = tu.tree_map_with_path(f, {"a": 1, "b": [2]}, {"a": 5, "b": [6]})
    assert got == {"a": ("['a']", 1, 5), "b": [("['b'][0]", 2, 6)]}
    assert tree.map_with_path is tu.tree_map_with_path
    jtu = _jax()
    for x in trees():
        g = lambda p, v: jtu.keystr(p) + ":" + repr(v)  # noqa: E731
        ours = tu.tree_leaves(tu.tree_map_with_path(lambda p, v: tu.keystr(p) + ":" + repr(v), x))
        assert ours == jtu.tree_leaves(jtu.tree_map_with_path(g, x))


MISMATCHES = [
    ((1, 2), (1, 2, 3), r"tree mismatch at the root: expected a tuple of length 2, got length 3"),
    ((1, 2), [1, 2], r"at the root: expected a tuple, got a list: \[1, 2\]"),
    ({"a": 1}, {"b": 1}, r"expected dict keys \['a'\], got \['b'\]; missing \['a'\]; "
                         r"unexpected \['b'\]"),
    ({"a": 1}, {"a": 1, "b": 2}, r"got \['a', 'b'\]; unexpected \['b'\]"),
    ([1, None], [1, 2], r"at \[1\]: expected None, got a leaf: 2"),
    (Point(1, 2), (1, 2), r"expected a Point, got a tuple"),
    ([[1, 2]], [[1, 2, 3]], r"at \[0\]: expected a list of length 2, got length 3"),
    ({"p": Point(1, [2])}, {"p": Point(1, (2,))}, r"at \['p'\]\.y: expected a list, got a tuple"),
    (Params(1, 2), Params(1, 2, act="relu"), r"expected a Params node with aux data \('tanh',\)"),
    ([1, 2], 3, r"at the root: expected a list, got a leaf: 3"),
]


@pytest.mark.parametrize("first,other,message", MISMATCHES)
def test_mismatch_errors(first, other, message):
    with pytest.raises(ValueError, match=r"tree_map: rest\[0\] must have the first tree's "
                                         r"structure") as e:
        tu.tree_map(lambda *a: a, first, other)
    assert e.match(message)
    with pytest.raises(ValueError, match="rest\\[1\\]"):
        tu.tree_map(lambda *a: a, first, first, other)
    with pytest.raises(ValueError, match=message):
        tu.tree_map_with_path(lambda *a: a, first, other)


@pytest.mark.parametrize("first,other,message", MISMATCHES)
def test_mismatch_errors_as_jax(first, other, message):
    jtu = _jax()
    with pytest.raises(ValueError):
        jtu.tree_map(lambda *a: a, first, other)


def test_reduce_all_transpose():
    assert tu.tree_reduce(operator.add, [1, (2, {"a": 3})]) == 6
    assert tu.tree_reduce(operator.add, [], 5) == 5
    assert tu.tree_reduce(lambda a, b: a + [b], {"b": 1, "a": 2}, []) == [2, 1]
    with pytest.raises(TypeError, match="pass an initializer"):
        tu.tree_reduce(operator.add, [None])
    assert tu.tree_reduce(operator.add, [[1], [2]], is_leaf=lambda x: isinstance(x, list)
                          and len(x) == 1) == [1, 2]
    assert tu.tree_reduce_associative(operator.add, [1, 2, 3, 4, 5]) == 15
    assert tu.tree_reduce_associative(operator.add, [], identity=0) == 0
    with pytest.raises(TypeError, match="identity="):
        tu.tree_reduce_associative(operator.add, [])
    assert tu.tree_all([1, True, [2]]) and tu.tree_all([]) and not tu.tree_all([1, (0,)])
    assert tu.tree_all([None]) and not tu.tree_all([None], is_leaf=lambda x: x is None)
    outer, inner = tu.tree_structure([0, 0]), tu.tree_structure((0, 0))
    x = [(1, 2), (3, 4)]
    assert tu.tree_transpose(outer, inner, x) == ([1, 3], [2, 4])
    assert tu.tree_transpose(outer, None, x) == ([1, 3], [2, 4])
    assert tu.tree_transpose(tu.tree_structure({"a": 0, "b": 0}), None,
                             {"a": Point(1, 2), "b": Point(3, 4)}) == \
        Point({"a": 1, "b": 3}, {"a": 2, "b": 4})
    with pytest.raises(TypeError, match=r"is not outer_treedef \[\*, \*\]"):
        tu.tree_transpose(outer, tu.tree_structure((0, 0, 0)), x)
    assert (tree.reduce, tree.all, tree.transpose, tree.leaves, tree.structure) == \
        (tu.tree_reduce, tu.tree_all, tu.tree_transpose, tu.tree_leaves, tu.tree_structure)


def test_reduce_all_transpose_match_jax():
    jtu = _jax()
    for x in trees():
        join = lambda a, b: f"({a!r}+{b!r})"  # noqa: E731
        assert tu.tree_reduce(join, x, "") == jtu.tree_reduce(join, x, "")
        assert tu.tree_all(x) == jtu.tree_all(x)
        assert tu.tree_reduce_associative(operator.add, [1, 2, 3], identity=0) == \
            jtu.tree_reduce_associative(operator.add, [1, 2, 3], identity=0)
    x = {"a": Point(1, [2]), "b": Point(3, [4])}
    ours = tu.tree_transpose(tu.tree_structure({"a": 0, "b": 0}), None, x)
    theirs = jtu.tree_transpose(jtu.tree_structure({"a": 0, "b": 0}), None, x)
    assert ours == theirs


def test_broadcast():
    assert tree.broadcast([1, 2], [[1, 2], None]) == [[1, 1], None]
    assert tree.broadcast(1, {"a": (2, 3)}) == {"a": (1, 1)}
    assert tree.broadcast({"a": 1, "b": 2}, {"a": Point(0, 0), "b": [0]}) == \
        {"a": Point(1, 1), "b": [2]}
    assert tu.tree_broadcast is tree.broadcast
    with pytest.raises(ValueError, match=r"broadcast: full_tree must have prefix_tree's "
                                         r"structure.*at \[1\]: expected None"):
        tree.broadcast([1, None], [[1, 2], 3])
    with pytest.raises(ValueError, match="expected a tuple, got a list"):
        tree.broadcast((1, 2), [2, 3])
    # jx's own broadcast_prefix keeps None as "the whole subtree" (in_axes)
    assert tree.broadcast_prefix([1, None], [[1, 2], 3]) == [1, 1, None]


def test_broadcast_matches_jax():
    jax = pytest.importorskip("jax")
    for p, full in [([1, 2], [[1, 2], None]), (1, {"a": (2, 3)}), ((1, [2]), (Point(1, 2), [3]))]:
        assert tree.broadcast(p, full) == jax.tree.broadcast(p, full)


# ---------------------------------------------------------------- registration

def test_register_with_keys_class():
    @tu.register_pytree_with_keys_class
    class Span:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten_with_keys(self):
            return [(tu.GetAttrKey("a"), self.a), (tu.GetAttrKey("b"), self.b)], None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    leaves, td = tu.tree_flatten(Span(1, [2]))
    assert leaves == [1, 2] and td.unflatten([3, 4]).b == [4]
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Span(1, [2]))] == [".a", ".b[0]"]


def test_register_without_keys_uses_flat_indices():
    class Raw:
        def __init__(self, *xs):
            self.xs = xs

    tu.register_pytree_node(Raw, lambda r: (r.xs, None), lambda _, c: Raw(*c))
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Raw(1, 2))] == \
        ["[<flat index 0>]", "[<flat index 1>]"]
    with pytest.raises(ValueError, match="Raw is already registered"):
        tu.register_pytree_node(Raw, lambda r: (r.xs, None), lambda _, c: Raw(*c))
    with pytest.raises(ValueError, match="builtins.dict is already registered"):
        tu.register_pytree_node(dict, lambda r: (r, None), lambda _, c: c)


def test_register_dataclass():
    p = Params(1.0, [2.0])
    assert tu.tree_leaves(p) == [1.0, 2.0]
    assert tu.tree_structure(p).unflatten([3, 4]) == Params(3, [4])
    assert tu.tree_structure(p) == tu.tree_structure(Params(0, [0]))
    assert tu.tree_structure(p) != tu.tree_structure(Params(0, [0], act="relu"))
    back = tu.tree_map(lambda v: v + 1, Pair(1, "t"))
    assert (back.a, back.tag) == (2, "t")

    @functools.partial(tu.register_dataclass, data_fields=["x"], meta_fields=["n"],
                       drop_fields=["cache"])
    @dataclasses.dataclass
    class WithDrop:
        x: Any
        n: int
        cache: Any = None

    assert tu.tree_map(lambda v: v * 3, WithDrop(2, 5, cache="c")) == WithDrop(6, 5)

    @dataclasses.dataclass
    class Plain:
        x: Any
        n: int

    with pytest.raises(ValueError, match=r"missing \['n'\] \(or list them in drop_fields\)"):
        tu.register_dataclass(Plain, data_fields=["x"], meta_fields=[])
    with pytest.raises(ValueError, match=r"not init fields: \['q'\]"):
        tu.register_dataclass(Plain, data_fields=["x"], meta_fields=["n", "q"])
    with pytest.raises(TypeError, match="both data_fields and meta_fields"):
        tu.register_dataclass(Plain, data_fields=["x", "n"])

    class NotDC:
        pass

    with pytest.raises(TypeError, match="NotDC is not a dataclass"):
        tu.register_dataclass(NotDC)
    assert tree.static(default=3).metadata["static"] is True


def test_register_static():
    @tu.register_static
    class Tag:
        def __init__(self, v):
            self.v = v

        def __eq__(self, other):
            return type(other) is Tag and other.v == self.v

        def __hash__(self):
            return hash(self.v)

    leaves, td = tu.tree_flatten([Tag("a"), 2])
    assert leaves == [2] and td == tu.tree_structure([Tag("a"), 0])
    assert td != tu.tree_structure([Tag("b"), 0]) and td.unflatten([5])[0].v == "a"


def test_registered_match_jax():
    jtu = _jax()
    for x in (Params(1.0, [2.0, 3.0], act="relu"), Pair({"q": 1}, "t"), Box(1, [2], "b")):
        assert tu.tree_leaves(x) == jtu.tree_leaves(x)
        assert [repr(p) for p, _ in tu.tree_leaves_with_path(x)] == \
            [repr(p) for p, _ in jtu.tree_leaves_with_path(x)]
        assert tu.tree_structure(x).num_nodes == jtu.tree_structure(x).num_nodes


# ---------------------------------------------------------------- Partial

def test_partial():
    p = tu.Partial(lambda a, b, c=0: a + b + c, 1, c=3)
    assert isinstance(p, functools.partial) and p(2) == 6
    assert tu.tree_leaves(p) == [1, 3]
    assert tu.tree_map(lambda v: v * 10, p)(2) == 42
    assert repr(tu.tree_structure(p)).startswith("PyTreeDef(Partial((*,), {'c': *}))")
    pp = tu.Partial(p, 5)           # the inner Partial's arguments stay static
    assert tu.tree_leaves(pp) == [5] and pp() == 9
    assert tu.tree_structure(tu.Partial(operator.add)).num_leaves == 0
    assert tu.tree_structure(tu.Partial(operator.add, 1)) == \
        tu.tree_structure(tu.Partial(operator.add, 2))
    assert tu.tree_structure(tu.Partial(operator.add, 1)) != \
        tu.tree_structure(tu.Partial(operator.mul, 1))


def test_partial_matches_jax():
    jtu = _jax()
    p = tu.Partial(operator.add, 1)
    jp = jtu.Partial(operator.add, 1)
    assert tu.tree_leaves(p) == jtu.tree_leaves(jp)
    assert [tu.keystr(k) for k, _ in tu.tree_leaves_with_path(p)] == \
        [jtu.keystr(k) for k, _ in jtu.tree_leaves_with_path(jp)]
    pp, jpp = tu.Partial(p, 5), jtu.Partial(jp, 5)
    assert tu.tree_leaves(pp) == jtu.tree_leaves(jpp) and pp() == jpp()


def test_partial_through_jit_and_grad():
    x = np.arange(3, dtype=np.float32)
    f = jx.jit(lambda fn, v: fn(v) * 2)
    np.testing.assert_allclose(f(tu.Partial(jnp.multiply, np.float32(3)), x), x * 6)
    np.testing.assert_allclose(f(tu.Partial(jnp.add, np.float32(1)), x), (x + 1) * 2)
    g = jx.jit(jx.grad(lambda fn: fn(np.float32(2.0)) ** 2))(tu.Partial(jnp.multiply,
                                                                        np.float32(3.0)))
    assert isinstance(g, tu.Partial) and g.func is jnp.multiply
    np.testing.assert_allclose(g.args[0], 2 * 6.0 * 2.0)   # d/da (2a)^2 at a=3
    out = jx.jit(lambda s: tu.Partial(operator.mul, s * 2))(np.float32(4))
    assert isinstance(out, tu.Partial) and out(np.float32(1)) == 8


# ---------------------------------------------------------------- registered nodes in transforms

def _loss(p, x, y):
    pred = x @ p.w + p.b
    if p.act == "tanh":
        pred = jnp.tanh(pred)
    return jnp.mean((pred - y) ** 2)


def _grad_numpy(p, x, y):
    z = x @ p.w + p.b
    pred = np.tanh(z) if p.act == "tanh" else z
    d = 2 * (pred - y) / pred.size
    if p.act == "tanh":
        d = d * (1 - pred ** 2)
    return x.T @ d, d.sum(0)


@pytest.mark.parametrize("act", ["tanh", "linear"])
@pytest.mark.parametrize("shape", [(4, 3, 2), (7, 5, 1)])
def test_dataclass_params_through_jit_grad(act, shape):
    n, i, o = shape
    rng = np.random.default_rng(n * 10 + o)
    p = Params(rng.normal(size=(i, o)).astype(np.float32),
               rng.normal(size=(o,)).astype(np.float32), act=act)
    x = rng.normal(size=(n, i)).astype(np.float32)
    y = rng.normal(size=(n, o)).astype(np.float32)
    g = jx.jit(jx.grad(_loss))(p, x, y)
    assert isinstance(g, Params) and g.act == act
    gw, gb = _grad_numpy(p, x, y)
    np.testing.assert_allclose(g.w, gw, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(g.b, gb, rtol=1e-4, atol=1e-6)
    step = jx.jit(lambda p, x, y: tu.tree_map(lambda a, b: a - 0.1 * b, p, jx.grad(_loss)(p, x, y)))
    new = step(p, x, y)
    np.testing.assert_allclose(new.w, p.w - 0.1 * gw, rtol=1e-4, atol=1e-6)


def test_dataclass_params_match_jax_grad():
    _jax()
    import jax
    import jax.numpy as jjnp
    rng = np.random.default_rng(0)
    p = Params(rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(2,)).astype(np.float32))
    x, y = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(5, 2)).astype(np.float32)

    def jloss(p, x, y):
        return jjnp.mean((jjnp.tanh(x @ p.w + p.b) - y) ** 2)

    ours, theirs = jx.jit(jx.grad(_loss))(p, x, y), jax.jit(jax.grad(jloss))(p, x, y)
    np.testing.assert_allclose(ours.w, theirs.w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.b, theirs.b, rtol=1e-5, atol=1e-6)


def test_registered_nodes_through_vmap():
    rng = np.random.default_rng(1)
    p = Params(rng.normal(size=(3, 2)).astype(np.float32), np.ones(2, np.float32), act="linear")
    xs = rng.normal(size=(4, 3)).astype(np.float32)
    out = jx.vmap(lambda p, x: x @ p.w + p.b, in_axes=(None, 0))(p, xs)
    np.testing.assert_allclose(out, xs @ p.w + 1, rtol=1e-5)
    ws = rng.normal(size=(5, 3, 2)).astype(np.float32)
    out = jx.vmap(lambda p, x: x @ p.w + p.b, in_axes=(Params(0, None, act="linear"), None))(
        Params(ws, p.b, act="linear"), xs[0])
    np.testing.assert_allclose(out, np.einsum("i,bio->bo", xs[0], ws) + 1, rtol=1e-5)
    boxes = jx.vmap(lambda b: Box(b.lo * 2, b.hi + b.lo, b.name))(Box(xs[:, 0], xs[:, 1], "k"))
    assert boxes.name == "k"
    np.testing.assert_allclose(boxes.hi, xs[:, 1] + xs[:, 0], rtol=1e-6)
    od = collections.OrderedDict([("z", xs), ("a", xs[:, :1])])
    got = jx.jit(lambda d: tu.tree_map(jnp.sum, d))(od)
    assert type(got) is collections.OrderedDict and list(got) == ["z", "a"]
    np.testing.assert_allclose(got["z"], xs.sum(), rtol=1e-5)
