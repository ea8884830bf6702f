"""Symbolic dimensions compiled (issue 22): one jx.jit compilation
(`abstracted_axes`) serves every size of its symbols. Each program is compiled
once symbolically, called at many sizes and checked against the fixed-size
compilation and the NumPy reference interpreter; the GEMM's run-time paths
(streamed rows, dot products, blocked with run-time K blocking) are crossed at
every threshold; random programs run with their leading size made symbolic; bad
arguments get errors naming the symbol, both arguments or the constraint."""
from __future__ import annotations

import collections
import sys
from pathlib import Path

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax
from jx.dims import InconclusiveDimensionError, dim
from jx.interpret import eval_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "samples"))
import attention  # noqa: E402
import mlp  # noqa: E402

RNG = np.random.default_rng(2022)
SIZES = (1, 2, 7, 64, 129, 1000)


def _leaves(*tree):
    return [np.asarray(x) for x in jx.tree_util.tree_leaves(tree)]


def _close(got, want, rtol=2e-4, atol=2e-5):
    for g, w in zip(_leaves(got), _leaves(want)):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _params(specs):
    return jx.tree_util.tree_map(
        lambda s: (0.05 * RNG.standard_normal(s.shape)).astype(np.float32), specs)


def _fun(f):
    return getattr(f, "fun", f)


@pytest.mark.parametrize("entry", ["predict", "loss", "grad"])
def test_mlp_compiles_once_for_every_batch(entry):
    f = {"predict": _fun(mlp.predict), "loss": _fun(mlp.loss),
         "grad": jx.grad(_fun(mlp.loss))}[entry]
    axes = (None, {0: "B"}) if entry == "predict" else (None, {0: "B"}, ("B",))
    sym = jx.jit(f, abstracted_axes=axes)
    specs = (mlp.PARAMS, jx.f32["B", 784]) + (() if entry == "predict" else (jx.i32["B"],))
    graph = jx.make_graph(f)(*specs)
    p = _params(mlp.PARAMS)
    for b in SIZES:
        x = RNG.standard_normal((b, 784)).astype(np.float32)
        args = (p, x) if entry == "predict" else (p, x, RNG.integers(0, 10, b).astype(np.int32))
        got = sym(*args)
        _close(got, jx.jit(f)(*args))
        # the reference sums in another order: a ReLU input within rounding of 0 may
        # fall the other way, changing one gradient term of the batch
        ref = eval_graph(graph, *_leaves(*args))
        scale = max(float(np.max(np.abs(r))) for r in _leaves(ref))
        _close(got, ref, atol=2e-3 * scale if entry == "grad" else 2e-5)
    assert len(sym._cache) == 1            # one compilation served every size


def test_attention_with_symbolic_tokens_and_batch():
    f = _fun(attention.attention_block)
    p = _params(attention.PARAMS)
    sym = jx.jit(f, abstracted_axes=(None, {0: "T"}))
    for t in (1, 7, 64, 129):
        x = RNG.standard_normal((t, attention.WIDTH)).astype(np.float32)
        _close(sym(p, x), jx.jit(f)(p, x))
    batched = jx.vmap(f, in_axes=(None, 0))
    symb = jx.jit(batched, abstracted_axes=(None, {0: "B", 1: "T"}))
    for b, t in ((1, 3), (3, 17), (2, 64)):
        x = RNG.standard_normal((b, t, attention.WIDTH)).astype(np.float32)
        _close(symb(p, x), jx.jit(batched)(p, x))
    assert len(sym._cache) == len(symb._cache) == 1


# ---------------------------------------------------------------- the GEMM
# (lhs spec, rhs spec, dimension_numbers) with symbols M, N, K, G: every
# combination of run-time sizes, transposed operands and batches
PRODUCTS = {
    "M": (("M", 48), (48, 40), (((1,), (0,)), ((), ()))),
    "K": ((40, "K"), ("K", 56), (((1,), (0,)), ((), ()))),
    "N": ((24, 36), (36, "N"), (((1,), (0,)), ((), ()))),
    "MK_bt": (("M", "K"), (40, "K"), (((1,), (1,)), ((), ()))),       # x @ W.T
    "KM_at": (("K", "M"), ("K", 40), (((0,), (0,)), ((), ()))),       # x.T @ dy
    "batch": (("G", "M", 24), ("G", 24, 20), (((2,), (1,)), ((0,), (0,)))),
}


def _spec_shape(spec, sizes):
    return tuple(sizes[d] if isinstance(d, str) else d for d in spec)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_gemm_with_run_time_sizes(name, dtype):
    ls, rs, dn = PRODUCTS[name]
    n_out = len(ls) + len(rs) - 2 * len(dn[0][0]) - len(dn[1][0])

    def f(a, b, bias):      # the product with an epilogue (bias, relu) fused in
        return jnp.maximum(lax.dot_general(a, b, dn) + bias, 0.0), lax.dot_general(a, b, dn)

    def axes_of(spec):
        return {i: d for i, d in enumerate(spec) if isinstance(d, str)}
    with jx.enable_x64(dtype == np.float64):
        bias_axes = {0: "N"} if name == "N" else None        # the output's last dim
        sym = jx.jit(f, abstracted_axes=(axes_of(ls), axes_of(rs), bias_axes))
        for m in (1, 2, 3, 4, 5, 33, 200):
            sizes = {"M": m, "N": m + 1, "K": m, "G": 1 + m % 3}
            a = RNG.standard_normal(_spec_shape(ls, sizes)).astype(dtype)
            b = RNG.standard_normal(_spec_shape(rs, sizes)).astype(dtype)
            want = lax.dot_general(a, b, dn).shape
            bias = RNG.standard_normal(want[-1:]).astype(dtype)
            got = sym(a, b, bias)
            ref = np.maximum(np.asarray(jx.jit(lambda a, b: lax.dot_general(a, b, dn))(a, b),
                                        dtype) + bias, 0)
            tol = 1e-4 if dtype == np.float32 else 1e-11
            assert got[0].shape == want and len(want) == n_out
            np.testing.assert_allclose(np.asarray(got[0]), ref, rtol=tol, atol=tol)
            _close(got, jx.jit(f)(a, b, bias), rtol=tol, atol=tol)
        assert len(sym._cache) == 1


def test_an_empty_sum_at_run_time_is_zeros():
    """K may be 0 where its constraint allows it: the product is zeros, and the
    fused epilogue still runs on them."""
    f = jx.jit(lambda a, b: jnp.maximum(a @ b + 1.5, 0.0),
               abstracted_axes=({1: dim("K", min=0)}, {0: dim("K", min=0)}))
    for k in (0, 1, 9):
        a = RNG.standard_normal((5, k)).astype(np.float32)
        b = RNG.standard_normal((k, 70)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(f(a, b)), np.maximum(a @ b + 1.5, 0),
                                   rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- other kernels
KERNELS = {
    "sum": lambda x: jnp.sum(x),                                   # 64 run-time parts
    "rows": lambda x: (jnp.sum(x, axis=1), jnp.max(x, axis=1)),
    "columns": lambda x: jnp.sum(x, axis=0),
    "argmax": lambda x: (jnp.argmax(x, axis=0), jnp.argmin(x, axis=1)),
    "cumsum": lambda x: jnp.cumsum(x, axis=0),
    "softmax": lambda x: jx.nn.softmax(x, axis=0),
    "transpose": lambda x: x.T * 2.0,
    "slices": lambda x: x[1:] - x[:-1],
    "concat": lambda x: jnp.concatenate([x, x[::-1] * 2], axis=0),
    "pad": lambda x: jnp.pad(x, ((1, 2), (0, 0))),
    "mean_var": lambda x: (jnp.mean(x, axis=0), jnp.var(x)),
    "fori": lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c) + 0.5 * c, x),
    "scan": lambda x: lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(x.shape[1]), x),
    "cond": lambda x: lax.cond(x[0, 0] > 0, lambda v: v * 2, lambda v: -v, x),
    "arange": lambda x: x * jnp.arange(x.shape[0], dtype=x.dtype)[:, None],
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_kernels_over_a_symbolic_axis(name):
    f = KERNELS[name]
    sym = jx.jit(f, abstracted_axes=({0: "B"},))
    for b in (2, 3, 65, 300):
        x = RNG.standard_normal((b, 37)).astype(np.float32)
        _close(sym(x), jx.jit(f)(x), rtol=1e-4, atol=1e-5)
    assert len(sym._cache) == 1


# ---------------------------------------------------------------- random programs
def test_random_programs_with_a_symbolic_leading_size():
    """Generated programs (jx.fuzz) whose inputs share a leading size: the size made
    symbolic, programs that trace that way are compiled once and run at that
    size and at another, against the reference interpreter."""
    from jx.fuzz import engines
    from jx.fuzz.compare import compare
    from jx.fuzz.gen import Gen
    from jx.fuzz.values import make_inputs
    counts = collections.Counter()
    for seed in range(80):
        prog = Gen(seed).program()
        inputs = make_inputs(prog)
        lead = collections.Counter(x.shape[0] for x in inputs if np.ndim(x) and x.shape[0] > 1)
        if not lead:
            continue
        n = lead.most_common(1)[0][0]
        axes = tuple({0: "N"} if np.ndim(x) and x.shape[0] == n else None for x in inputs)
        fn = engines._compile(prog.source, engines.jx_namespace())
        specs = [jx.ShapeDtypeStruct(("N",) + np.shape(x)[1:] if a else np.shape(x),
                                     np.asarray(x).dtype) for x, a in zip(inputs, axes)]
        try:
            jx.make_jaxpr(fn)(*specs)
        except (InconclusiveDimensionError, jx.errors.ShapeError, TypeError):
            counts["not polymorphic"] += 1
            continue
        sym = jx.jit(fn, abstracted_axes=axes)
        for size in (n, n + 3):
            args = [np.resize(x, (size,) + np.shape(x)[1:]) if a else x
                    for x, a in zip(inputs, axes)]
            try:
                ref = engines.run_ref(prog.source, args)
            except Exception:                # (the reference refuses these values)
                continue
            got = _leaves(sym(*args))
            bad = [c for c in (compare(r, g) for r, g in zip(ref, got)) if c]
            assert not bad, (seed, size, bad[0], prog.source)
            counts["checked"] += 1
        assert len(sym._cache) == 1
    assert counts["checked"] >= 40, counts


# ---------------------------------------------------------------- bad arguments
def test_disagreeing_sizes_name_both_arguments():
    f = jx.jit(lambda x, y: x.sum(axis=1) * y, abstracted_axes=({0: "B"}, ("B",)))
    with pytest.raises(jx.errors.ShapeError,
                       match=r"B disagrees between arguments: x has 5 at axis 0, y has 4"):
        f(np.ones((5, 3), np.float32), np.ones(4, np.float32))
    # another rank is another signature: traced again, as jax.jit does
    g = jx.jit(lambda x: x * 2, abstracted_axes=({0: "B"},))
    g(np.ones((5, 3), np.float32))
    g(np.ones((6, 3), np.float32))
    assert np.asarray(g(np.ones((2, 3, 4), np.float32))).shape == (2, 3, 4)
    assert len(g._cache) == 2


def test_broken_constraints_are_named():
    f = jx.jit(lambda x: x * 2, abstracted_axes=({0: dim("B", max=64, multiple_of=8)},))
    np.testing.assert_array_equal(np.asarray(f(np.ones((16, 2), np.float32))), 2)
    for b in (12, 72):
        with pytest.raises(jx.errors.ShapeError,
                           match=rf"B = {b} breaks its constraint B >= 1 and B <= 64 and "
                                 r"B % 8 == 0 \(from x, axis 0\)"):
            f(np.ones((b, 2), np.float32))
    g = jx.jit(lambda x: x + 1, abstracted_axes=({0: "B"},))
    with pytest.raises(jx.errors.ShapeError, match=r"B = 0 breaks its constraint B >= 1"):
        g(np.ones((0, 2), np.float32))         # zero sizes only where declared (min=0)
    h = jx.jit(lambda x: x + 1, abstracted_axes=({0: dim("B", min=0)},))
    assert np.asarray(h(np.ones((0, 2), np.float32))).shape == (0, 2)


def test_undecidable_shape_rules_say_which_constraint_settles_them():
    f = jx.jit(lambda x: x[:2] * 2, abstracted_axes=({0: "B"},))
    with pytest.raises(InconclusiveDimensionError,
                       match=r"whether 2 >= B \+ 1 .at .*test_symbolic_compile\.py:\d+.*'B >= 2' or 'B <= 1'"):
        f(np.ones((3, 2), np.float32))
    g = jx.jit(lambda x: x[:2] * 2, abstracted_axes=({0: dim("B", min=2)},))
    np.testing.assert_array_equal(np.asarray(g(np.ones((3, 2), np.float32))), 2)


def test_abstracted_axes_entries_are_checked():
    with pytest.raises(jx.errors.JxError, match="entries for 1 positional"):
        jx.jit(lambda x: x, abstracted_axes=(None, None))(np.ones(2))
    with pytest.raises(jx.errors.JxError, match="axis 3 of an argument of shape"):
        jx.jit(lambda x: x, abstracted_axes=({3: "B"},))(np.ones(2))
    with pytest.raises(jx.errors.JxError, match="CPU only"):
        jx.jit(lambda x: x, abstracted_axes=({0: "B"},), backend="cuda")


def test_pmap_over_a_symbolic_per_device_batch():
    """One compilation of the per-device program for every per-device batch: a
    data-parallel gradient step (pmean over the devices) with column sums, against
    pmap compiled per size (this program once wrote past its workspace when a
    buffer of fixed size followed one of symbolic size)."""
    def step(w, x):
        g = jx.grad(lambda w: jnp.mean((x @ w) ** 2))(w)
        return lax.pmean(g, "d"), jnp.sum(x, axis=0), lax.pmean(x.T @ (x @ w), "d")
    n = jx.local_device_count()
    sym = jx.pmap(step, axis_name="d", in_axes=(None, 0), abstracted_axes=(None, {1: "B"}))
    w = RNG.standard_normal((8, 3)).astype(np.float32)
    for b in (1, 2, 5, 33, 200):
        x = RNG.standard_normal((n, b, 8)).astype(np.float32)
        _close(sym(w, x), jx.pmap(step, axis_name="d", in_axes=(None, 0))(w, x),
               rtol=1e-4, atol=1e-5)
    assert len(sym._cache) == 1
    with pytest.raises(jx.errors.JxError, match="names the mapped axis 0"):
        jx.pmap(step, axis_name="d", in_axes=(None, 0),
                abstracted_axes=(None, {0: "D"}))(w, np.ones((n, 3, 8), np.float32))


def test_workspace_offsets_stay_aligned_and_inside_at_every_size():
    """The intermediates' workspace plan with symbolic sizes: every offset a
    multiple of 64 whatever B is (an offset of B-dependent size once needed
    aligning up at run time, and a fixed-size buffer after it ran past the end),
    and every buffer inside the total, at many sizes."""
    from jx.codegen.cpu.module import ALIGN, plan_buffers
    from jx.dims import Dim

    def f(w, x):
        h = x @ w                          # f32[B, 3]: 12*B bytes
        t = x.T @ h                        # f32[8, 3] after it
        return jnp.sort(t.ravel()), jnp.sort(h[:, 0] * 2), jnp.sum(jnp.tanh(h), axis=0)
    program = jx.jit(f).lower(jx.f32[8, 3], jx.f32["B", 8])
    fixed = {id(v): None for v in program.graph.inputs} | \
        {id(v): None for v in program.graph.outputs}
    offsets, total = plan_buffers(program, fixed)
    sizes = {id(v): v.aval.size * v.aval.dtype.itemsize
             for k in program.kernels for v in k.outputs}
    assert offsets and any(isinstance(o, Dim) for o in offsets.values())
    for vid, off in offsets.items():
        coeffs = off.terms.values() if isinstance(off, Dim) else [off]
        assert all(c % ALIGN == 0 for c in coeffs), off
    for b in range(1, 300):
        at = {"B": b}
        end = total.evaluate(at) if isinstance(total, Dim) else total
        for vid, off in offsets.items():
            o = off.evaluate(at) if isinstance(off, Dim) else off
            n = sizes[vid].evaluate(at) if isinstance(sizes[vid], Dim) else sizes[vid]
            assert o % ALIGN == 0 and o + n <= end, (b, off, sizes[vid], total)


def test_symbolic_compiles_in_several_threads_at_once():
    """Constraint scopes, trace stacks and the emitter's dims scopes are per thread:
    six threads compiling and calling symbolic functions at once each get their
    own results."""
    import threading
    errors = []

    def work(i):
        try:
            f = jx.jit(lambda x, w: jnp.tanh(x @ w) * (i + 1) + jnp.arange(x.shape[0])[:, None],
                       abstracted_axes=({0: "B"}, None))
            w = np.full((16, 8), 0.01 * (i + 1), np.float32)
            for b in (1, 5, 40):
                x = np.ones((b, 16), np.float32)
                want = np.tanh(x @ w) * (i + 1) + np.arange(b)[:, None]
                np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=1e-5, atol=1e-5)
        except Exception as e:        # (collected: a thread's failure must fail the test)
            errors.append(repr(e))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_scan_of_a_symbolic_length_that_may_be_zero():
    """A scan over N steps, N >= 0: at N = 0 the carry is the initial one and ys is
    empty; its xs and ys step by one slice whatever N is."""
    def f(c, xs):
        return lax.scan(lambda c, x: (c + x, (c * x, x.sum())), c, xs)
    sym = jx.jit(f, abstracted_axes=(None, {0: dim("N", min=0)}))
    c = np.ones(3, np.float32)
    for n in (0, 1, 4, 9):
        xs = RNG.standard_normal((n, 3)).astype(np.float32)
        _close(sym(c, xs), jx.jit(f)(c, xs), rtol=1e-6, atol=1e-6)
    assert len(sym._cache) == 1
