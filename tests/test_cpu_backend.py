"""The CPU backend against the NumPy reference: every primitive through jx.jit
(on the transformation test tables, so a new primitive is compiled too), a
dtype x shape sweep with loop tails and empty dims, fusion structure, and a
random-program property test."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as lax
import jx.numpy as jnp

# float64 data and references, as in JAX's own tests with jax_enable_x64
pytestmark = pytest.mark.x64

pytest.importorskip("llvmlite")

import test_transforms  # noqa: E402
from transform_harness import make_args, random_array as _rand  # noqa: E402

TRANSCENDENTAL = {"exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
                  "erf", "pow", "atan2", "rsqrt", "checkpoint"}


def _tables():
    rows = dict(test_transforms.TRANSFORM_CASES)
    for mod in ("test_indexing_transforms", "test_control_transforms"):
        try:
            rows.update(getattr(__import__(mod), "TRANSFORM_CASES", {}))
        except ImportError:
            pass
    return rows


CASES = _tables()


def _close(got, want, name):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind == "f":
        tol = 1e-12 if name not in TRANSCENDENTAL else 4e-15 * 2 ** 10
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_primitive_compiles_like_reference(name):
    case = CASES[name]
    args = make_args(case, np.random.default_rng(abs(hash(name)) % 2**32))
    want = case.fn(*args)
    got = jx.jit(case.fn)(*args)
    _close(got, want, name)


# ---------------------------------------------------------------- dtypes, shapes and tails

SHAPES = [(), (1,), (17,), (3, 1023), (0, 5), (2, 1, 3)]


BINARY = {
    "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "max": jnp.maximum,
    "min": jnp.minimum, "lt": jnp.less, "eq": jnp.equal, "ne": jnp.not_equal,
    "div": lambda a, b: lax.div(a, b), "rem": lambda a, b: lax.rem(a, b),
}


@pytest.mark.parametrize("dt", ["float32", "float64", "int32", "int64", "float16", "uint8"])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_dtype_shape_sweep(op, dt):
    rng = np.random.default_rng(1)
    f = jx.jit(BINARY[op])
    for shape in SHAPES:
        a, b = _rand(rng, shape, dt), _rand(rng, shape, dt)
        if op in ("div", "rem") and np.dtype(dt).kind != "f":
            b = np.where(b == 0, 7, b).astype(dt)
        _close(f(a, b), BINARY[op](a, b), op)


UNARY_INT = {"neg": jnp.negative, "abs": jnp.abs, "sign": jnp.sign,
             "not": jnp.invert, "square": jnp.square}


@pytest.mark.parametrize("dt", ["int32", "int64", "int8", "bool"])
@pytest.mark.parametrize("op", sorted(UNARY_INT))
def test_integer_and_bool_ops(op, dt):
    if dt == "bool" and op in ("neg", "sign", "square", "abs"):
        pytest.skip("not defined for bool")
    rng = np.random.default_rng(2)
    for shape in SHAPES:
        x = _rand(rng, shape, dt)
        _close(jx.jit(UNARY_INT[op])(x), UNARY_INT[op](x), op)


@pytest.mark.parametrize("src", ["float32", "float64", "int32", "int64", "bool", "uint8",
                                 "float16"])
@pytest.mark.parametrize("dst", ["float32", "float64", "int32", "int64", "bool", "uint8",
                                 "float16"])
def test_convert_element_type(src, dst):
    rng = np.random.default_rng(3)
    x = _rand(rng, (37,), src)
    if np.dtype(src).kind == "f":
        x = np.concatenate([x, np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 300.7,
                                         -129.5], dtype=src)])
    f = lambda v: lax.convert_element_type(v, dst)  # noqa: E731
    _close(jx.jit(f)(x), f(x), "convert_element_type")


@pytest.mark.parametrize("shape,axes", [((4, 5), (0,)), ((4, 5), (1,)), ((3, 4, 5), (0, 2)),
                                        ((7,), (0,)), ((0, 3), (0,)), ((3, 0), (1,)),
                                        ((1, 1023), (1,))])
@pytest.mark.parametrize("red", ["sum", "max", "min", "prod"])
def test_reductions_over_axes(shape, axes, red):
    rng = np.random.default_rng(4)
    f = getattr(jnp, red)
    for dt in ("float32", "float64", "int32"):
        x = _rand(rng, shape, dt) if red != "prod" else rng.uniform(0.5, 1.5, shape).astype(dt) \
            if dt != "int32" else rng.integers(-2, 3, shape).astype(dt)
        g = lambda v: f(v, axis=axes)  # noqa: E731
        if red in ("max", "min") and any(shape[a] == 0 for a in axes):
            # no identity (JAX raises ValueError); with initial= the reduction is defined
            with pytest.raises(ValueError, match="zero-size array"):
                jx.jit(g)(x)
            g = lambda v: f(v, axis=axes, initial=-7 if red == "max" else 7)  # noqa: E731
            np.testing.assert_array_equal(
                jx.jit(g)(x), getattr(np, red)(x, axis=axes, initial=-7 if red == "max" else 7))
            continue
        got, want = jx.jit(g)(x), g(x)
        if np.dtype(dt).kind == "f":
            np.testing.assert_allclose(got, want, rtol=2e-5 if dt == "float32" else 1e-12)
        else:
            np.testing.assert_array_equal(got, want)


def test_argmax_nan_and_ties():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [np.nan, 1.0, np.nan, 5.0], [2.0, 2.0, 2.0, 2.0]],
                 dtype=np.float32)
    for fn in (jnp.argmax, jnp.argmin):
        np.testing.assert_array_equal(jx.jit(lambda v: fn(v, axis=1))(x), fn(x, axis=1))


def test_dot_general_awkward_shapes():
    rng = np.random.default_rng(5)
    for m, k, n in [(1, 1, 1), (1, 7, 1), (5, 1, 3), (13, 17, 19), (2, 0, 3)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        np.testing.assert_allclose(jx.jit(jnp.matmul)(a, b), a @ b, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(jx.jit(lambda x, y: x.T @ y.T)(a.T.copy(), b.T.copy()),
                                   a @ b, rtol=1e-5, atol=1e-5)
    a = rng.standard_normal((3, 4, 5))
    b = rng.standard_normal((3, 5, 2))
    np.testing.assert_allclose(jx.jit(jnp.matmul)(a, b), a @ b, rtol=1e-12)
    ints = rng.integers(-5, 5, (4, 6)).astype(np.int32)
    np.testing.assert_array_equal(jx.jit(jnp.dot)(ints, ints.T), ints @ ints.T)


def test_non_contiguous_inputs_and_literal_outputs():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    f = jx.jit(lambda v: (v * 2.0, v, 3.0, v))
    out = f(x[:, ::2])
    np.testing.assert_allclose(out[0], x[:, ::2] * 2)
    np.testing.assert_array_equal(out[1], x[:, ::2])
    assert float(out[2]) == 3.0 and out[3].shape == (6, 4)


# ---------------------------------------------------------------- samples, transformed

def test_mlp_grad_and_per_example_grads_compiled():
    rng = np.random.default_rng(7)
    params = {"w1": rng.standard_normal((6, 8)), "b1": rng.standard_normal(8),
              "w2": rng.standard_normal((8, 3)), "b2": rng.standard_normal(3)}
    x, y = rng.standard_normal((5, 6)), rng.standard_normal((5, 3))
    loss = test_transforms.mlp_loss
    g_ref = jx.grad(loss)(params, x, y)
    g_jit = jx.jit(jx.grad(loss))(params, x, y)
    for k in params:
        np.testing.assert_allclose(g_jit[k], g_ref[k], rtol=1e-10)
    pe = jx.jit(jx.vmap(jx.grad(loss), in_axes=(None, 0, 0)))(params, x[:, None], y[:, None])
    pe_ref = jx.vmap(jx.grad(loss), in_axes=(None, 0, 0))(params, x[:, None], y[:, None])
    np.testing.assert_allclose(pe["w1"], pe_ref["w1"], rtol=1e-10)
    # and jit inside grad is transparent
    np.testing.assert_allclose(jx.grad(jx.jit(loss))(params, x, y)["b2"], g_ref["b2"])


# ---------------------------------------------------------------- fusion structure

def _kernels(f, *specs):
    return jx.jit(f).lower(*specs).kernels


def test_elementwise_chain_is_one_kernel():
    ks = _kernels(lambda x: jnp.maximum(jnp.abs(x * 2.0 + 1.0) - 3.0, x), jx.f32[1000])
    assert len(ks) == 1 and ks[0].kind == "loop"


def test_sum_of_squares_reads_input_once():
    ks = _kernels(lambda x: jnp.sum(x * x), jx.f32[1000])
    assert [k.kind for k in ks] == ["reduce"]


def test_softmax_and_layernorm_kernel_counts():
    def softmax(x):
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        return e / jnp.sum(e, axis=-1, keepdims=True)

    def layernorm(x):
        mu = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, -1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5)

    ks = _kernels(softmax, jx.f32[64, 128])
    assert sum(k.kind == "reduce" for k in ks) == 2 and len(ks) <= 4
    ks = _kernels(layernorm, jx.f32[64, 128])
    assert sum(k.kind == "reduce" for k in ks) == 2 and len(ks) <= 5
    # no intermediate of the full row-major size is materialised except the output
    big = [v for k in ks for v in k.outputs if v.aval.shape == (64, 128)]
    assert len(big) == 1


# ---------------------------------------------------------------- random programs

UN = [jnp.negative, jnp.abs, lambda v: v * 0.5, lambda v: jnp.maximum(v, 0.0), jnp.tanh,
      jnp.exp, lambda v: jnp.sqrt(jnp.abs(v))]
BIN = [jnp.add, jnp.subtract, jnp.multiply, jnp.maximum, jnp.minimum]


def _random_program(rng):
    """A random DAG of elementwise ops, broadcasts and reductions over two inputs."""
    ops = []
    for _ in range(rng.integers(2, 9)):
        ops.append((int(rng.integers(0, 4)), int(rng.integers(0, 7)), int(rng.integers(0, 5)),
                    int(rng.integers(0, 100))))

    def f(x, y):
        vals = [x, y]
        for kind, u, bi, pick in ops:
            a = vals[pick % len(vals)]
            b = vals[(pick // 7) % len(vals)]
            if kind == 0:
                vals.append(UN[u](a))
            elif kind == 1:
                vals.append(BIN[bi](a, b))
            elif kind == 2:
                vals.append(jnp.sum(a, axis=1, keepdims=True) * 0.1 + b)
            else:
                vals.append(jnp.max(a, axis=0) + b)
        return vals[-1], jnp.sum(vals[-2])
    return f


def test_random_programs_match_reference():
    rng = np.random.default_rng(8)
    for _ in range(150):
        f = _random_program(rng)
        x = rng.standard_normal((3, 5)).astype(np.float32)
        y = rng.standard_normal((3, 5)).astype(np.float32)
        got, want = jx.jit(f)(x, y), f(x, y)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5)


def test_jit_composes_with_vmap_and_grad_in_both_orders():
    rng = np.random.default_rng(9)
    w, xs = rng.standard_normal(4), rng.standard_normal((6, 4))

    def f(w, x):
        return jnp.tanh(jnp.dot(x, w)) ** 2
    want = np.stack([f(w, x) for x in xs])
    np.testing.assert_allclose(jx.vmap(jx.jit(f), in_axes=(None, 0))(w, xs), want, rtol=1e-12)
    np.testing.assert_allclose(jx.jit(jx.vmap(f, in_axes=(None, 0)))(w, xs), want, rtol=1e-12)
    g_ref = jx.grad(f)(w, xs[0])
    np.testing.assert_allclose(jx.grad(jx.jit(f))(w, xs[0]), g_ref, rtol=1e-12)
    np.testing.assert_allclose(jx.jit(jx.grad(f))(w, xs[0]), g_ref, rtol=1e-12)
    pe = jx.jit(jx.vmap(jx.grad(f), in_axes=(None, 0)))(w, xs)
    np.testing.assert_allclose(pe, np.stack([jx.grad(f)(w, x) for x in xs]), rtol=1e-12)


@pytest.mark.parametrize("shape", [(1024, 1000), (37, 53), (3, 100, 200), (64, 33, 40),
                                   (16, 16), (15, 17)])
def test_transposing_loops_tile_correctly(shape):
    x = np.random.default_rng(10).standard_normal(shape).astype(np.float32)
    got = jx.jit(lambda v: jnp.swapaxes(v, -1, -2) * 2.0 + v.sum())(x)
    np.testing.assert_allclose(got, np.swapaxes(x, -1, -2) * 2 + x.sum(), rtol=1e-5,
                               atol=1e-4)
    np.testing.assert_array_equal(jx.jit(jnp.transpose)(x), x.T)


def test_jit_takes_numpy_scalars_like_zero_d_arrays():
    f = jx.jit(lambda x, s: x * s + s)
    x = np.arange(5, dtype=np.float32)
    for s in (np.float32(1.5), np.array(2.5, np.float32), np.float32(-3.0)):
        out = f(x, s)
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, x * s + s)
    assert len(f._cache) == 1            # a float32 scalar keys like a 0-d array
    out64 = f(x, np.float64(0.5))        # float64 scalar: promotes (x64 kept)
    np.testing.assert_allclose(out64, x.astype(np.float64) * 0.5 + 0.5)
    assert len(f._cache) == 2


def _serial_chain(x):
    return jnp.sqrt(jnp.exp(-jnp.abs(jnp.tanh(x * 0.5 + 1.0))) * 2.0 + x * x)


@pytest.mark.parametrize("shape", [(1,), (17,), (3, 67), (1000003,), (129, 4097)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interleaved_transcendental_loops_handle_every_tail(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    want = np.sqrt(np.exp(-np.abs(np.tanh(x.astype(np.float64) * 0.5 + 1.0))) * 2.0
                   + x.astype(np.float64) ** 2)
    got = jx.jit(_serial_chain)(x)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=4e-6 if dtype == np.float32 else 1e-13)


def test_interleave_hint_only_on_serial_transcendental_chains():
    from jx.codegen.cpu.jit import CompiledFunction
    from jx.passes.fuse import fuse
    from jx.passes.pipeline import run

    def ir_of(f):
        g = run(jx.make_graph(f)(jx.f32[64, 64]), check=True)
        return CompiledFunction(fuse(g), "f").ir_text

    assert "llvm.loop.interleave.count" in ir_of(_serial_chain)
    assert "llvm.loop.interleave.count" not in ir_of(lambda x: jnp.tanh(x) * jnp.exp(x))


def test_reshapes_between_products_are_read_in_place(rng):
    """A kernel that only reshapes a materialised value runs no code: consumers
    read its input's memory (chains, graph inputs and outputs included)."""
    from jx.codegen.cpu.jit import CompiledFunction
    from jx.passes.fuse import fuse
    from jx.passes.pipeline import run

    def heads(x, w):
        q = (x @ w).reshape(64, 4, 16)                      # split heads: a view
        s = jnp.einsum("thd,shd->hts", q, q)
        flat = jnp.expand_dims(s.reshape(4, 64 * 64), 0)    # a view of a view
        return flat.squeeze(0).reshape(4, 64, 64) @ x[:, :64], x.reshape(2, -1), s

    x = rng.standard_normal((64, 64)).astype(np.float32)
    w = rng.standard_normal((64, 64)).astype(np.float32) / 8
    prog = fuse(run(jx.make_graph(heads)(x, w), check=True))
    cf = CompiledFunction(prog, "heads")
    import re
    layout = [k for k in prog.kernels if k.kind == "loop" and k.root.prim.name == "reshape"]
    assert len(layout) >= 2
    copies = re.findall(r'^define [^@]*@"k\d+\.(loop_reshape)"\(', cf.ir_text, re.M)
    assert len(copies) == 1      # only x.reshape's, into its caller-given output buffer
    got = cf(x, w)
    q = (x @ w).reshape(64, 4, 16)
    s = np.einsum("thd,shd->hts", q, q)
    want = (s @ x[:, :64], x.reshape(2, -1), s)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-4)


def test_jit_functions_called_from_several_threads():
    """The foreign call releases the GIL: concurrent calls must not share pointer
    tables (results from the pool included)."""
    import threading
    f = jx.jit(lambda x: x * 2.0 + 1.0)
    f(np.zeros(300_000, np.float32))
    bad = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(100):
            y = rng.standard_normal(300_000 if seed % 2 else 1000).astype(np.float32)
            if not np.array_equal(f(y), y * np.float32(2) + np.float32(1)):
                bad.append(seed)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_can_call_compiled_code():
    """The thread pool's workers are not copied into a forked child: the child's
    first parallel region must start its own instead of waiting for them."""
    import multiprocessing as mp
    f = jx.jit(lambda x: jnp.tanh(x) * 2.0)
    x = np.linspace(-3, 3, 1 << 21, dtype=np.float32)
    want = f(x)                                     # the pool is running now

    def child(q):
        q.put(bool(np.array_equal(f(x), want)))

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(60)
    if p.is_alive():
        p.kill()
        pytest.fail("the forked child hung in its first parallel region")
    assert p.exitcode == 0 and q.get(timeout=5) is True


def _layernorm_then(op):
    def f(x, w):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        c = x - mu
        var = jnp.mean(c * c, axis=-1, keepdims=True)
        y = c / jnp.sqrt(var + 1e-3)
        return op(y, w)
    return f


@pytest.mark.parametrize("shape", [(2, 2), (2, 4), (3, 5), (8, 2), (16, 16)])
def test_row_groups_keep_their_inputs_alive_to_the_last_row(shape, rng):
    """Memory freed inside a row-fused group is not reused by that group: its
    members run row by row, so a later one writes row 0 before an earlier one has
    read its last row (tiny layernorms reused a per-row sum's block for the output)."""
    x = rng.standard_normal(shape).astype(np.float32)
    w = np.eye(shape[-1], dtype=np.float32)
    for op in (lambda y, w: y @ w, lambda y, w: jnp.sort(y, axis=-1)):
        f = _layernorm_then(op)
        np.testing.assert_allclose(jx.jit(f)(x, w), f(x, w), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [4, 64, 1000])
def test_group_members_reading_other_rows_of_an_outside_value(n, rng):
    def f(x, w, z):
        v = x @ w
        s = jnp.sum((v - jnp.roll(v, 1, axis=0)) ** 2, axis=1)
        return (z * s[:, None]) @ w
    x, z = (rng.standard_normal((n, 32)).astype(np.float32) for _ in range(2))
    w = (rng.standard_normal((32, 32)) / 6).astype(np.float32)
    want = f(*(a.astype(np.float64) for a in (x, w, z)))
    np.testing.assert_allclose(jx.jit(f)(x, w, z), want, rtol=2e-4, atol=1e-3)


def test_bfloat16_computes_in_float32_and_rounds_to_nearest_even(rng):
    """bfloat16 values are stored as their 16 bits and computed as float32, like
    float16 (they were once multiplied as integers)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf = ml_dtypes.bfloat16
    x = (rng.standard_normal(1001) * 4).astype(bf)
    eps = float(ml_dtypes.finfo(bf).eps)
    cases = [lambda x: jnp.multiply(x, 2.5), jnp.exp, jnp.tanh, jnp.max, jnp.sort,
             lambda x: x.astype(np.float32) * 3, lambda x: (x.astype(np.float32) / 3).astype(bf)]
    for f in cases:
        got, want = np.asarray(jx.jit(f)(x)), np.asarray(f(x))
        assert got.dtype == want.dtype and got.shape == want.shape
        g, w = got.astype(np.float64), want.astype(np.float64)
        assert np.all(np.abs(g - w) <= eps * np.abs(w) + 1e-30), f
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0 + 2 ** -8], np.float32)
    got = jx.jit(lambda v: v.astype(bf))(special)
    np.testing.assert_array_equal(got.astype(np.float32), special.astype(bf).astype(np.float32))


def test_float64_to_float16_rounds_once():
    """Through float32 (float16's compute type) the conversion would round twice."""
    x = np.array([1 + 2**-11 + 2**-40, 2**-25 + 2**-60, -(1 + 2**-11 + 2**-30), 65519.0,
                  np.nan, -np.inf, -0.0], np.float64)
    for f in (lambda a: a.astype(np.float16), lambda a: jnp.sort(a.astype(jnp.float16)) * 2):
        with np.errstate(over="ignore"):
            want = f(x)
        np.testing.assert_array_equal(jx.jit(f)(x), want)


def test_elementwise_loops_are_not_unrolled_but_chains_interleave():
    """A fused elementwise kernel's vector loop carries llvm.loop.unroll.disable (its
    unrolled copies ran no faster and multiplied LLVM's time); a chain of
    transcendentals keeps its interleave count beside it."""
    from jx.codegen.cpu import target, tuning
    from jx.codegen.cpu.module import ModuleBuilder

    def text(f, *args):
        mb = ModuleBuilder("f", parallel=False, cpu=target.host_cpu(), reloc="pic")
        mb.entry("f", jx.jit(f).lower(*args))
        return mb.text()

    x = np.linspace(-1, 1, 4096, dtype=np.float32)
    plain = text(lambda v: v * 2.0 + 1.0, x)
    assert "llvm.loop.unroll.disable" in plain
    chain = text(lambda v: jnp.tanh(jnp.exp(jnp.sin(v))), x)
    assert "llvm.loop.unroll.disable" in chain
    if tuning.value("interleave") and tuning.value("interleave") > 1:
        assert "llvm.loop.interleave.count" in chain
    np.testing.assert_allclose(np.asarray(jx.jit(lambda v: v * 2.0 + 1.0)(x)), x * 2 + 1)


def test_parallel_loops_get_their_outputs_as_noalias_arguments(rng):
    """A kernel split over the thread pool runs its loops in `<kernel>.rows`, which
    takes the buffers as arguments, outputs noalias (loaded from the pool's context
    array, LLVM could not tell them apart and guarded each loop with overlap checks
    and a scalar copy). A row softmax and an elementwise chain, results as NumPy's."""
    import re

    from jx.codegen.cpu import target
    from jx.codegen.cpu.module import ModuleBuilder

    def softmax(x):
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        return e / jnp.sum(e, axis=-1, keepdims=True)

    def chain(x):
        return jnp.tanh(x) * 2.0 + x

    x = rng.standard_normal((256, 512)).astype(np.float32)
    for f in (softmax, chain):
        mb = ModuleBuilder("f", parallel=True, cpu=target.host_cpu(), reloc="pic")
        mb.entry("f", jx.jit(f).lower(x))
        heads = re.findall(r'define internal void @"k\d+\.[^"]*\.rows"\(([^)]*)\)', mb.text())
        assert heads, f.__name__
        for params in heads:       # (inputs first, outputs after: some noalias)
            assert "noalias" in params and not params.startswith("ptr noalias"), params
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(jx.jit(softmax)(x)), e / e.sum(-1, keepdims=True),
                               rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(jx.jit(chain)(x)), np.tanh(x) * 2 + x,
                               rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float64])
def test_large_array_constants_round_trip(dt):
    """Array literals in a program: a large one (printed through NumPy, every byte
    escaped), a small one (llvmlite's own printing) and an all-zero one (a
    zeroinitializer, no bytes in the IR) each reach the code exactly."""
    from jx.codegen.cpu import target
    from jx.codegen.cpu.module import ModuleBuilder
    rng = np.random.default_rng(7)
    big = (rng.standard_normal((64, 1024)) * 1e3).astype(dt)
    small = (rng.standard_normal(5) * 10).astype(dt)
    zeros = np.zeros((256, 256), dt)

    def f(x, y, s):
        return x + jnp.asarray(big), y + jnp.asarray(zeros), s * jnp.asarray(small)
    args = (np.ones((64, 1024), dt), np.full((256, 256), 3, dt), np.full(5, 2, dt))
    got = jx.jit(f)(*args)
    for g, want in zip(got, (args[0] + big, args[1] + zeros, args[2] * small)):
        np.testing.assert_array_equal(np.asarray(g), want)
    mb = ModuleBuilder("f", parallel=False, cpu=target.host_cpu(), reloc="pic")
    mb.entry("f", jx.jit(f).lower(*args))
    text = mb.text()
    assert f"[{zeros.nbytes} x i8] zeroinitializer" in text
    head = text.split(f"[{big.nbytes} x i8] c\"", 1)[1][:48]
    assert head == "".join(f"\\{b:02X}" for b in big.tobytes()[:16])
