"""Symbolic dimensions while tracing (issue 22, second step): specs with names and
expressions, the same name in several arguments one size, shape rules that carry
symbols through the samples' models, their gradients and vmap, and the errors:
an undecidable question names the primitive and the user's line. Compilation:
test_symbolic_compile.py."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.dims import Dim, DimSpec, InconclusiveDimensionError, dim
from jx.interpret import eval_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "samples"))
import attention  # noqa: E402
import mlp  # noqa: E402

B, T = Dim.symbol("B"), Dim.symbol("T")
RNG = np.random.default_rng(22)

# dimension_size (a symbolic size as a value) is checked against NumPy here: the
# reference interpreter gives the symbols their values from the arguments
COVERED = {"dimension_size"}
TRANSFORM_COVERED = {"dimension_size"}      # grad and vmap of a symbolic mean, below


def _at(spec_tree, **values):
    """The same specs with every symbol given a value (a fixed-shape twin)."""
    def fix(s):
        shape = tuple(d.evaluate(values) if isinstance(d, Dim) else d for d in s.shape)
        return jx.ShapeDtypeStruct(shape, s.dtype)
    return jx.tree_util.tree_map(fix, spec_tree)


def test_specs_take_names_expressions_and_constraints():
    s = jx.f32["B", 784]
    assert s.shape == (B, 784) and str(s) == "f32[B,784]"
    assert jx.f32["2*B", "B*T - 1"].shape == (2 * B, B * T - 1)
    c = jx.f32[dim("B", max=4096, multiple_of=8), 784]
    assert c.shape == (B, 784) and c.constraints == (DimSpec("B", 1, 4096, 8),)
    assert jx.f32["B - B + 3", 2].shape == (3, 2)            # constants stay ints
    for bad, message in ((3.5, "must be an int"), ("2B", "cannot read|unexpected"),
                         ("B //", "ends too early")):
        with pytest.raises(jx.errors.ShapeError, match=message):
            jx.f32[bad, 4]


def test_mlp_traces_with_a_symbolic_batch():
    x = jx.f32["B", 784]
    out = jx.eval_shape(mlp.predict, mlp.PARAMS, x)
    assert out.shape == (B, 10) and out.dtype == np.float32

    def total_loss(params, x, y):          # mlp.loss with a sum for its mean
        logp = mlp.log_softmax(mlp.predict(params, x))
        one_hot = (jnp.expand_dims(jnp.arange(10), 0) ==
                   jnp.expand_dims(y, 1)).astype(logp.dtype)
        return -jnp.sum(one_hot * logp)
    assert jx.eval_shape(total_loss, mlp.PARAMS, x, jx.i32["B"]).shape == ()
    grads = jx.eval_shape(jx.grad(total_loss), mlp.PARAMS, x, jx.i32["B"])
    assert {k: v.shape for k, v in grads.items()} == {k: v.shape for k, v in mlp.PARAMS.items()}
    # the mean over the batch divides by the size as a value (dimension_size)
    assert jx.eval_shape(mlp.loss, mlp.PARAMS, x, jx.i32["B"]).shape == ()
    assert "dimension_size[dim=B" in str(jx.make_jaxpr(mlp.loss)(mlp.PARAMS, x, jx.i32["B"]))
    # the fixed-shape twin at B = 7 has the shapes the symbols evaluate to
    fixed = jx.eval_shape(mlp.predict, mlp.PARAMS, _at(x, B=7))
    assert fixed.shape == (7, 10)


def test_attention_traces_with_symbolic_batch_and_length():
    x = jx.f32["B", "T", 64]
    out = jx.eval_shape(attention.softmax, x)
    assert out.shape == (B, T, 64)
    text = str(jx.make_jaxpr(attention.softmax)(x))
    assert "f32[B,T,64]" in text and "reduce_max" in text


def test_symbols_flow_through_reshape_concat_broadcast_vmap():
    x = jx.f32["B", 784]
    assert jx.eval_shape(lambda v: v.reshape(-1, 28, 28), x).shape == (B, 28, 28)
    assert jx.eval_shape(lambda v: v.reshape(-1).reshape(-1, 784), x).shape == (B, 784)
    assert jx.eval_shape(lambda v: jnp.concatenate([v, v]), x).shape == (2 * B, 784)
    assert jx.eval_shape(lambda v: v + jnp.ones(784), x).shape == (B, 784)
    assert jx.eval_shape(jx.vmap(lambda r: r.sum()), x).shape == (B,)
    assert jx.eval_shape(lambda v: v.T @ v, x).shape == (784, 784)


@pytest.mark.parametrize("f,shape", [
    (lambda v: v[1:], (B - 1, 4)), (lambda v: v[:-1], (B - 1, 4)), (lambda v: v[-1:], (1, 4)),
    (lambda v: v[1:] - v[:-1], (B - 1, 4)), (lambda v: v[:, 1:3], (B, 2)),
    (lambda v: v[0], (4,)), (lambda v: jnp.pad(v, ((1, 1), (0, 0))), (B + 2, 4)),
    (lambda v: jnp.stack([v, v]), (2, B, 4)), (lambda v: jnp.cumsum(v, axis=0), (B, 4)),
    (lambda v: jnp.sort(v, axis=0), (B, 4)), (lambda v: jnp.argmax(v, axis=0), (4,)),
    (lambda v: v[:, :, None] * v[:, None, :], (B, 4, 4)),
    (lambda v: v + jnp.ones_like(v), (B, 4)), (lambda v: jnp.full_like(v, 2.5), (B, 4)),
    (lambda v: jnp.zeros_like(v, dtype=jnp.int32), (B, 4))],
    ids=["x[1:]", "x[:-1]", "x[-1:]", "diff", "x[:,1:3]", "x[0]", "pad", "stack", "cumsum",
         "sort", "argmax", "outer", "ones_like", "full_like", "zeros_like"])
def test_slicing_and_library_functions_with_a_symbolic_axis(f, shape):
    assert jx.eval_shape(f, jx.f32["B", 4]).shape == shape
    # the same function at a fixed size agrees with the symbols evaluated there
    fixed = jx.eval_shape(f, jx.f32[9, 4]).shape
    assert fixed == tuple(d.evaluate({"B": 9}) if isinstance(d, Dim) else d for d in shape)


def test_undecidable_questions_name_the_primitive_and_line():
    with pytest.raises(InconclusiveDimensionError,
                       match=r"test_symbolic_trace\.py:\d+.*'B >= 2' or 'B <= 1'"):
        jx.eval_shape(lambda v: v[:2], jx.f32["B", 4])        # B may be 1: one row or two
    with pytest.raises(InconclusiveDimensionError, match=r"whether 0 >= B - 1.*test_symbolic_trace"):
        jx.eval_shape(lambda v: v[:-2:2], jx.f32["B", 4])    # B may be 1: stop clamps to 0
    assert jx.eval_shape(lambda v: v[::2], jx.f32["B", 4]).shape == (-(-B // 2), 4)
    with pytest.raises(InconclusiveDimensionError,
                       match=r"whether 8 divides 4\*B.*test_symbolic_trace.*multiple_of=8"):
        jx.eval_shape(lambda v: v.reshape(4, -1).reshape(8, -1), jx.f32["B", 4])
    with pytest.raises(jx.errors.ShapeError, match="cannot reshape"):
        jx.eval_shape(lambda v: v.reshape(B, 3), jx.f32["B", 4])


def _leaves(*tree):
    return jx.tree_util.tree_leaves(tree)


@pytest.mark.parametrize("b", [1, 2, 7, 64, 129])
def test_symbolic_graphs_evaluate_like_the_fixed_size_program(b):
    """One graph traced with a symbolic batch, run by the NumPy reference
    interpreter at each size (the symbols read off the arguments), agrees with
    jx.jit compiled for that size: the loss, its gradient, a mean and a variance."""
    p = {k: (0.05 * RNG.standard_normal(v.shape)).astype(np.float32)
         for k, v in mlp.PARAMS.items()}
    x = RNG.standard_normal((b, 784)).astype(np.float32)
    y = RNG.integers(0, 10, b).astype(np.int32)
    specs = (mlp.PARAMS, jx.f32["B", 784], jx.i32["B"])
    for f in (mlp.loss, jx.grad(mlp.loss)):
        graph = jx.make_graph(f)(*specs)
        got = eval_graph(graph, *_leaves(p, x, y))
        want = _leaves(jx.jit(f)(p, x, y))
        for g, w in zip(got, want):
            # (float32 sums of 784 products in two orders, NumPy's BLAS and jx's
            # GEMM blocking, which the host's caches choose: an absolute error of a
            # few ulps of the largest entries)
            w = np.asarray(w)
            np.testing.assert_allclose(np.asarray(g), w, rtol=2e-4,
                                       atol=1e-6 + 1e-5 * float(np.abs(w).max(initial=0)))
    stats = jx.make_graph(lambda v: (v.mean(axis=0), v.var(axis=0), jnp.mean(v),
                                     v - jnp.full_like(v, 0.5)))(specs[1])
    for g, w in zip(eval_graph(stats, x), (x.mean(0), x.var(0), x.mean(), x - 0.5)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-6)


def test_grad_and_vmap_of_a_symbolic_mean():
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    g = jx.make_graph(jx.grad(lambda v: jnp.mean(v ** 2)))(jx.f32["B", 3])
    np.testing.assert_allclose(np.asarray(eval_graph(g, x)[0]), 2 * x / x.size, rtol=1e-6)
    m = jx.make_graph(jx.vmap(lambda r: jnp.mean(r)))(jx.f32["B", 3])
    np.testing.assert_allclose(np.asarray(eval_graph(m, x)[0]), x.mean(1), rtol=1e-6)
    odd = jx.make_graph(jnp.mean)(jx.f32["2*B + 1"])        # B solved from the size: 4
    np.testing.assert_allclose(float(eval_graph(odd, np.arange(9, dtype=np.float32))[0]), 4.0)


def test_arguments_that_do_not_fit_the_symbols_are_named():
    g = jx.make_graph(lambda a, b: a.sum() + b.sum())(jx.f32["B", 4], jx.f32["B"])
    with pytest.raises(jx.errors.ShapeError, match=r"B is 3 with B = 3, but an argument has 5"):
        eval_graph(g, np.ones((3, 4), np.float32), np.ones(5, np.float32))
    with pytest.raises(jx.errors.ShapeError, match=r"size 5 where 4 is declared"):
        eval_graph(g, np.ones((3, 5), np.float32), np.ones(3, np.float32))
    h = jx.make_graph(lambda a: a.sum())(jx.f32["2*B"])
    with pytest.raises(jx.errors.ShapeError, match=r"no integer B makes 2\*B = 7"):
        eval_graph(h, np.ones(7, np.float32))
