"""Tracing: pytrees in and out, the trace cache, Python control flow errors, the verifier."""
import inspect
import re
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import tree
from jx.api import trace_pytree
from jx.cli import loading
from jx.ir import Eqn, Graph, Var

SAMPLES = Path(__file__).resolve().parents[1] / "samples"

Pair = namedtuple("Pair", ["first", "second"])


@jx.register_pytree_node_class
class Affine:
    """A registered pytree class: two array children and a static (aux) activation name."""

    def __init__(self, w, b, act="tanh"):
        self.w, self.b, self.act = w, b, act

    def tree_flatten(self):
        return (self.w, self.b), self.act

    @classmethod
    def tree_unflatten(cls, act, children):
        return cls(*children, act=act)


def run_graph(graph, *args):
    """Evaluate graph on pytree arguments as a compiled entry would: flatten, eval, rebuild."""
    leaves, in_tree = tree.flatten((args, {}))
    assert in_tree == graph.in_tree
    outs = jx.eval_graph(graph, *leaves)
    return tree.unflatten(graph.out_tree, outs)


def spec_of(x):
    return jx.ShapeDtypeStruct(x.shape, x.dtype)


def specs(t):
    return tree.tree_map(spec_of, t)


def rand(rng, shape, dtype=np.float32):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-5, 5, shape).astype(dtype)


# ---------------------------------------------------------------- pytrees

def test_pytree_containers_round_trip(rng):
    def f(t, lst, d, nothing, pair):
        a, b = t
        return {"sum": a + b, "list": [lst[0] * 2, None, (lst[1] - 1,)],
                "pair": Pair(pair.second, pair.first * d["k"]), "none": nothing}

    for dtype in (np.float32, np.float64, np.int32):
        args = ((rand(rng, (3, 4), dtype), rand(rng, (3, 4), dtype)),
                [rand(rng, (2,), dtype), rand(rng, (5,), dtype)],
                {"k": rand(rng, (), dtype)},
                None,
                Pair(rand(rng, (4,), dtype), rand(rng, (1, 2), dtype)))
        graph = jx.verify(jx.make_graph(f)(*specs(args)))
        assert len(graph.inputs) == 7          # None contributes no leaves
        out = run_graph(graph, *args)
        want = f(*args)        # NumPy itself (Python ints are weak in NumPy 2 as in jx)
        assert tree.tree_structure(out) == tree.tree_structure(want)
        assert isinstance(out["pair"], Pair) and out["none"] is None
        assert isinstance(out["list"][2], tuple) and out["list"][1] is None
        for o, w in zip(tree.tree_leaves(out), tree.tree_leaves(want)):
            assert o.dtype == w.dtype == dtype
            np.testing.assert_allclose(o, w, rtol=1e-6)


def test_registered_class_round_trip(rng):
    def layer(p, x):
        y = x @ p.w + p.b
        out = jnp.tanh(y) if p.act == "tanh" else jnp.maximum(y, 0.0)   # aux is static
        return Affine(out, jnp.sum(out, axis=0), act=p.act)

    for act, ref in (("tanh", np.tanh), ("relu", lambda v: np.maximum(v, 0))):
        p = Affine(rand(rng, (6, 3)), rand(rng, (3,)), act=act)
        x = rand(rng, (5, 6))
        graph = jx.verify(jx.make_graph(layer)(specs(p), spec_of(x)))
        out = run_graph(graph, p, x)
        assert isinstance(out, Affine) and out.act == act
        want = ref(x @ p.w + p.b)
        np.testing.assert_allclose(out.w, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out.b, want.sum(0), rtol=1e-5, atol=1e-5)
        prims = set(graph.op_counts())
        assert ("tanh" in prims) == (act == "tanh")


def test_kwargs_and_scalar_output(rng):
    def f(x, *, scale):
        return jnp.sum(x * scale)

    x, s = rand(rng, (7,), np.float64), rand(rng, (), np.float64)
    graph = jx.make_graph(f)(spec_of(x), scale=spec_of(s))
    leaves, in_tree = tree.flatten(((x,), {"scale": s}))
    assert in_tree == graph.in_tree
    (out,) = jx.eval_graph(graph, *leaves)
    assert out.dtype == np.float64 and out.shape == ()
    np.testing.assert_allclose(out, np.sum(x * s))


# ---------------------------------------------------------------- the trace cache

def test_side_effects_run_once_and_cache_keys():
    calls = []

    def f(x, n):
        calls.append((x.shape, x.dtype, n))       # a side effect: runs only when tracing
        return x * n

    g = jx.make_graph(f, static_argnums=1)
    g1 = g(jx.f32[3], 2)
    assert g(jx.f32[3], 2) is g1 and len(calls) == 1                 # cache hit
    assert g(np.zeros(3, np.float32), 2) is g1 and len(calls) == 1   # concrete value, same type
    g(jx.f32[4], 2)                                                  # new shape
    g(jx.f64[3], 2)                                                  # new dtype
    g(jx.f32[3], 3)                                                  # new static argument
    assert [c[2] for c in calls] == [2, 2, 2, 3] and len(calls) == 4
    assert calls[1][0] == (4,) and calls[2][1] == np.float64
    assert g(jx.f32[3], 3) is not g1 and len(calls) == 4


def test_cache_keys_on_tree_structure():
    calls = []

    def f(p):
        calls.append(1)
        return tree.tree_leaves(p)[0] + 1.0

    make = jx.make_graph(f)
    make({"a": jx.f32[2], "b": jx.f32[2]})
    make({"a": jx.f32[2], "b": jx.f32[2]})
    make({"a": jx.f32[2], "c": jx.f32[2]})    # same leaves, different keys: new trace
    make([jx.f32[2], jx.f32[2]])
    assert len(calls) == 3


# ---------------------------------------------------------------- control flow errors

def _line_of(fn, text: str) -> str:
    """`this_file:line` of the first source line of fn containing text."""
    lines, start = inspect.getsourcelines(fn)
    i = next(i for i, ln in enumerate(lines) if text in ln)
    return f"{__file__}:{start + i}"


def branch_if(x):
    if x > 0:
        return x
    return -x


def to_float(x):
    return x * float(x)


def loop_while(x):
    while jnp.sum(x) < 10.0:
        x = x * 2.0
    return x


def short_circuit(x, y):
    return (x > 0) and (y > 0)


@pytest.mark.parametrize("fn, text, what, advice", [
    (branch_if, "if x > 0", "bool conversion", "jx.lax.cond"),
    (to_float, "* float(x)", "float()", "static"),
    (loop_while, "while jnp.sum", "bool conversion", "while_loop"),
    (short_circuit, "(x > 0) and", "bool conversion", "jx.numpy.where"),
])
def test_python_control_flow_on_tracer(fn, text, what, advice):
    n = len(inspect.signature(fn).parameters)
    with pytest.raises(jx.TracerConversionError) as info:
        jx.make_graph(fn)(*[jx.f32[()]] * n)
    msg = str(info.value)
    assert _line_of(fn, text) in msg        # names this file and the offending line
    assert what in msg and advice in msg


def test_static_argument_allows_python_branch(rng):
    def f(x, flip):
        return -x if flip else x

    x = rand(rng, (3,))
    for flip in (True, False):
        graph = jx.make_graph(f, static_argnums=1)(jx.f32[3], flip)
        np.testing.assert_array_equal(jx.eval_graph(graph, x)[0], -x if flip else x)


# ---------------------------------------------------------------- the verifier

@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.py")), ids=lambda p: p.stem)
def test_verifier_accepts_sample_entries(path):
    entries = jx.entries_of(loading.load_model(str(path)))
    assert entries, f"{path.name} declares no entries"
    for entry in entries:
        args, static = entry.call_args()
        graph, consts = trace_pytree(entry.fn, args, {}, static)
        assert not consts and graph.eqns
        assert jx.verify(graph) is graph, entry.name


def _small_graph():
    def f(x, y):
        return jnp.sin(x) * y + 1.0
    return jx.make_graph(f)(jx.f32[3], jx.f32[3])


def _with(graph, eqns=None, inputs=None, outputs=None):
    return Graph(graph.inputs if inputs is None else tuple(inputs),
                 graph.eqns if eqns is None else tuple(eqns),
                 graph.outputs if outputs is None else tuple(outputs))


def _replace_eqn(eqn, **changes):
    fields = dict(prim=eqn.prim, inputs=eqn.inputs, params=eqn.params,
                  outputs=eqn.outputs, source=eqn.source)
    fields.update(changes)
    return Eqn(**fields)


def test_verifier_rejects_use_before_def():
    g = jx.verify(_small_graph())
    broken = _with(g, eqns=g.eqns[::-1])
    with pytest.raises(jx.VerifyError, match="before its definition"):
        jx.verify(broken)


def test_verifier_rejects_wrong_output_type():
    g = _small_graph()
    sin = g.eqns[0]
    for bad in (jx.ShapedArray((4,), np.float32), jx.ShapedArray((3,), np.float64)):
        eqns = (_replace_eqn(sin, outputs=(Var(bad),)),) + g.eqns[1:]
        msg = re.escape(f"declares {bad} but its rule gives f32[3]")
        with pytest.raises(jx.VerifyError, match=msg):
            jx.verify(_with(g, eqns=eqns))


def test_verifier_rejects_double_definition():
    g = _small_graph()
    # An equation that defines a graph input again.
    eqns = (_replace_eqn(g.eqns[0], outputs=(g.inputs[1],)),) + g.eqns[1:]
    with pytest.raises(jx.VerifyError, match="redefines"):
        jx.verify(_with(g, eqns=eqns))
    # Two equations defining the same variable.
    with pytest.raises(jx.VerifyError, match="redefines"):
        jx.verify(_with(g, eqns=g.eqns[:1] + g.eqns))
    # The same variable listed twice among the inputs.
    with pytest.raises(jx.VerifyError, match="redefines"):
        jx.verify(_with(g, inputs=[g.inputs[0], g.inputs[0]]))


def test_verifier_rejects_undefined_output_and_bad_operands():
    g = _small_graph()
    with pytest.raises(jx.VerifyError, match="never defined"):
        jx.verify(_with(g, outputs=[Var(jx.ShapedArray((3,), np.float32))]))
    mul = next(e for e in g.eqns if e.prim.name == "mul")
    i32 = Var(jx.ShapedArray((3,), np.int32))
    eqns = [_replace_eqn(e, inputs=(e.inputs[0], i32)) if e is mul else e for e in g.eqns]
    with pytest.raises(jx.VerifyError, match="fails its type rule"):
        jx.verify(_with(g, inputs=list(g.inputs) + [i32], eqns=eqns))


def test_item_assignment_on_traced_values_points_to_at():
    import numpy as np
    import pytest

    def f(x):
        x[0] = 1.0
        return x
    with pytest.raises(TypeError, match=r"\.at\[i\]\.set"):
        jx.jit(f)(np.zeros(3, np.float32))
