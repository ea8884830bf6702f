"""The CPU backend's blocked GEMM (codegen/cpu/gemm.py) against NumPy: awkward
shapes, strided (transposed) operands, batch dims, every block boundary (with
small blocks), the packed-A path, both work splits, other vector widths, with
the thread pool on, off and oversubscribed. No timing here: see the report of
issue 7 for speed."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as lax
import jx.numpy as jnp

# float64 data and references, as in JAX's own tests with jax_enable_x64
pytestmark = pytest.mark.x64

pytest.importorskip("llvmlite")

from jx.codegen.cpu import gemm, parallel, tuning  # noqa: E402
from jx.codegen.cpu.jit import CompiledFunction  # noqa: E402

COVERED = {"dot_general"}

FLOATS = [np.float32, np.float64]


def _dg(lc, rc, lb=(), rb=()):
    return lambda x, y: lax.dot_general(x, y, ((lc, rc), (lb, rb)))


def _check(got, f, args):
    """got against f in float64, within the rounding bound of any summation order:
    |err| <= 2 k eps (|a| |b|)."""
    want = np.asarray(f(*[x.astype(np.float64) for x in args]))
    bound = np.asarray(f(*[np.abs(x).astype(np.float64) for x in args]))
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == args[0].dtype
    k = max(args[0].shape + args[1].shape + (1,))        # at least the contraction length
    eps = np.finfo(args[0].dtype).eps
    err = np.abs(got - want)
    assert np.all(err <= 2 * k * eps * bound + np.finfo(args[0].dtype).tiny), err.max()


def _compiled(f, args):
    """A CompiledFunction of f (built now, so monkeypatched settings apply)."""
    prog = jx.jit(f).lower(*args)
    return CompiledFunction(prog, "gemm_test")


def _rand(rng, shape, dt):
    return rng.standard_normal(shape).astype(dt)


MKN = [(1, 1, 1), (1, 9, 1), (1, 5, 40), (40, 5, 1), (7, 1, 3), (13, 17, 19), (12, 8, 32),
       (25, 31, 65), (97, 3, 101), (5, 0, 4), (0, 4, 5), (4, 5, 0)]


@pytest.mark.parametrize("dt", FLOATS)
def test_awkward_shapes(rng, dt):
    for m, k, n in MKN:
        a, b = _rand(rng, (m, k), dt), _rand(rng, (k, n), dt)
        _check(jx.jit(jnp.matmul)(a, b), jnp.matmul, (a, b))


def test_the_gemm_is_used_for_floats_only(rng):
    a, b = _rand(rng, (8, 8), np.float32), _rand(rng, (8, 8), np.float32)
    assert "jx.gemm.micro" in _compiled(jnp.matmul, (a, b)).ir_text
    ints = rng.integers(-9, 9, (6, 7)).astype(np.int32)
    cf = _compiled(jnp.matmul, (ints, ints.T.copy()))
    assert "jx.gemm" not in cf.ir_text
    np.testing.assert_array_equal(cf(ints, ints.T.copy())[0], ints @ ints.T)
    i64 = rng.integers(-9, 9, (5, 3)).astype(np.int64)
    np.testing.assert_array_equal(jx.jit(jnp.matmul)(i64, i64.T), i64 @ i64.T)
    h = rng.standard_normal((5, 6)).astype(np.float16)
    f = _dg((1,), (0,))
    np.testing.assert_allclose(jx.jit(f)(h, h.T.copy()), f(h, h.T.copy()), rtol=2e-3, atol=2e-3)


# (lhs shape, rhs shape, dimension numbers): each free/contracting group strided
STRIDED = [
    ((9, 14), (9, 23), ((0,), (0,))),               # x.T @ w
    ((14, 9), (23, 9), ((1,), (1,))),               # x @ w.T
    ((40, 100), (70, 100), ((1,), (1,))),           # x @ w.T: 8 x 8 transposes + a tail
    ((9, 14), (23, 9), ((0,), (1,))),               # x.T @ w.T
    ((3, 4, 6), (6, 5), ((2,), (0,))),              # free dims merge: (3 * 4) x 6
    ((7, 3, 4), (3, 4, 5), ((1, 2), (0, 1))),       # two contracting dims
    ((7, 3, 4), (3, 4, 5), ((2, 1), (1, 0))),       # contracting pairs listed out of order
    ((1, 6, 1), (6, 1, 4), ((1,), (0,))),           # unit dims anywhere
]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("case", STRIDED, ids=lambda c: f"{c[0]}.{c[1]}")
def test_strided_operands(rng, dt, case):
    ls, rs, (lc, rc) = case
    f = _dg(lc, rc)
    a, b = _rand(rng, ls, dt), _rand(rng, rs, dt)
    cf = _compiled(f, (a, b))
    assert "jx.gemm.micro" in cf.ir_text
    _check(cf(a, b)[0], f, (a, b))


BATCHED = [
    ((4, 13, 8), (4, 8, 11), ((2,), (1,)), ((0,), (0,))),             # batched matmul
    ((2, 3, 17, 8), (2, 3, 19, 8), ((3,), (3,)), ((0, 1), (0, 1))),   # attention q k^T
    ((13, 5, 8), (8, 5, 11), ((2,), (0,)), ((1,), (1,))),             # batch dim not leading
    ((6, 13, 1), (6, 1, 9), ((2,), (1,)), ((0,), (0,))),              # outer product
    ((3, 0, 4), (3, 4, 5), ((2,), (1,)), ((0,), (0,))),
    ((3, 6, 0), (3, 0, 5), ((2,), (1,)), ((0,), (0,))),
]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("case", BATCHED, ids=lambda c: f"{c[0]}.{c[1]}")
def test_batch_dims(rng, dt, case):
    ls, rs, (lc, rc), (lb, rb) = case
    f = _dg(lc, rc, lb, rb)
    a, b = _rand(rng, ls, dt), _rand(rng, rs, dt)
    _check(jx.jit(f)(a, b), f, (a, b))


def test_layouts_that_fall_back(rng):
    """Free dims that are not one strided dim take the general loop nest."""
    f = _dg((1,), (0,))                     # lhs free dims 0 and 2 are split by dim 1
    a, b = _rand(rng, (3, 5, 4), np.float32), _rand(rng, (5, 6), np.float32)
    cf = _compiled(f, (a, b))
    assert "jx.gemm" not in cf.ir_text
    _check(cf(a, b)[0], f, (a, b))


def test_numpy_frontend_forms(rng):
    x, w = _rand(rng, (2, 5, 7), np.float32), _rand(rng, (7, 3), np.float32)
    _check(jx.jit(lambda x, w: x @ w)(x, w), lambda x, w: x @ w, (x, w))
    _check(jx.jit(lambda x, w: x.T @ w.T)(w, x[0]), lambda x, w: x.T @ w.T, (w, x[0]))
    q, k = _rand(rng, (3, 10, 4), np.float64), _rand(rng, (3, 12, 4), np.float64)
    f = lambda q, k: jnp.einsum("bqd,bkd->bqk", q, k)  # noqa: E731
    _check(jx.jit(f)(q, k), f, (q, k))


LARGE = [(257, 300, 129), (130, 77, 300)]


@pytest.mark.parametrize("dt", FLOATS)
def test_large_default_blocks(rng, dt):
    for m, k, n in LARGE:
        a, b = _rand(rng, (m, k), dt), _rand(rng, (k, n), dt)
        _check(jx.jit(jnp.matmul)(a, b), jnp.matmul, (a, b))


SMALL_BLOCKS = {"kc": 8, "mc": 24, "nc": 64}


@pytest.mark.parametrize("split", ["m", "n"])
@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("threads", [True, False])
def test_every_block_boundary(rng, monkeypatch, split, direct, threads):
    """Small blocks so modest shapes cross KC, MC and NC; packed and in-place A;
    row and column task splits; pool on and off."""
    monkeypatch.setattr(gemm, "OVERRIDE", dict(SMALL_BLOCKS))
    monkeypatch.setattr(gemm, "DIRECT_A", direct)
    monkeypatch.setattr(gemm, "SPLIT", split)
    monkeypatch.setitem(tuning.OVERRIDE, "gemm_min_work", 1)
    if not threads:
        monkeypatch.setattr(parallel, "available", lambda: False)
    for dt in FLOATS:
        cases = [((67, 45), (45, 150), _dg((1,), (0,))),
                 ((45, 67), (150, 45), _dg((0,), (1,))),           # both operands transposed
                 ((3, 29, 19), (3, 19, 70), _dg((2,), (1,), (0,), (0,)))]
        for ls, rs, f in cases:
            a, b = _rand(rng, ls, dt), _rand(rng, rs, dt)
            cf = _compiled(f, (a, b))
            assert ("jx_parallel_for" in cf.ir_text) == threads
            _check(cf(a, b)[0], f, (a, b))


@pytest.mark.parametrize("vw,mr", [(8, 6), (4, 6), (16, 5)])
def test_other_vector_widths(rng, monkeypatch, vw, mr):
    """The AVX2 and SSE register blockings (and an odd MR), on this host."""
    monkeypatch.setattr(gemm, "OVERRIDE", {"vw": vw, "mr": mr, "kc": 16, "nc": 4 * vw})
    for dt in FLOATS:
        a, b = _rand(rng, (31, 40), dt), _rand(rng, (40, 3 * vw + 5), dt)
        cf = _compiled(jnp.matmul, (a, b))
        assert f"x{2 * vw}." in cf.ir_text
        _check(cf(a, b)[0], jnp.matmul, (a, b))


def test_thread_counts(rng, monkeypatch):
    """One thread, and more threads than cores (more tasks than granules)."""
    if not parallel.available():
        pytest.skip("no C compiler: no thread pool")
    monkeypatch.setitem(tuning.OVERRIDE, "gemm_min_work", 1)
    a, b = _rand(rng, (50, 33), np.float32), _rand(rng, (33, 70), np.float32)
    cf = _compiled(jnp.matmul, (a, b))
    try:
        for n in (1, 3, 7):
            parallel.set_num_threads(n)
            _check(cf(a, b)[0], jnp.matmul, (a, b))
    finally:
        import os
        parallel.set_num_threads(int(os.environ.get("JX_NUM_THREADS", os.cpu_count() or 1)))


def test_repeated_calls_and_values(rng):
    """Scratch is allocated per call; NaN and inf propagate as in NumPy."""
    f = jx.jit(jnp.matmul)
    a, b = _rand(rng, (20, 30), np.float32), _rand(rng, (30, 40), np.float32)
    for _ in range(3):
        _check(f(a, b), jnp.matmul, (a, b))
    a[3, 4] = np.nan
    b[5, 6] = np.inf
    got, want = f(a, b), a @ b
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))


@pytest.mark.parametrize("threads", [True, False])
@pytest.mark.parametrize("dt", FLOATS)
def test_narrow_outputs_of_transposed_a(rng, monkeypatch, dt, threads):
    """C a few columns wide from an A stored transposed (h.T @ dy of an output
    layer): the narrow kernel, vectors along M, over tails of M, every width it
    takes, strided B and batch dims."""
    monkeypatch.setitem(tuning.OVERRIDE, "gemm_min_work", 1 if threads else 1 << 40)
    vw = 64 // np.dtype(dt).itemsize
    cases = []
    for m in (vw, vw + 3, 2 * vw + 1, 100, 1024):
        for n in (2, 3, 10, 12, 13, vw):        # n = 1 is a matrix-vector product
            if n <= vw:
                cases.append(((7, m), (7, n), _dg((0,), (0,))))
    cases += [((128, 1024), (6, 128), _dg((0,), (1,))),               # B transposed too
              ((3, 5, 40), (3, 5, 4), _dg((1,), (1,), (0,), (0,))),     # batch first
              ((5, 3, 40), (3, 5, 6), _dg((0,), (1,), (1,), (0,)))]     # batch inside A
    for ls, rs, f in cases:
        a, b = _rand(rng, ls, dt), _rand(rng, rs, dt)
        cf = _compiled(f, (a, b))
        assert "jx.gemm.narrow" in cf.ir_text, (ls, rs)
        _check(cf(a, b)[0], f, (a, b))


def test_narrow_kernel_agrees_with_the_blocked_path(rng, monkeypatch):
    a, b = _rand(rng, (64, 300), np.float32), _rand(rng, (64, 10), np.float32)
    f = _dg((0,), (0,))
    narrow = _compiled(f, (a, b))
    monkeypatch.setattr(gemm, "NARROW", False)
    blocked = _compiled(f, (a, b))
    assert "jx.gemm.narrow" in narrow.ir_text and "jx.gemm.narrow" not in blocked.ir_text
    np.testing.assert_allclose(narrow(a, b)[0], blocked(a, b)[0], rtol=1e-5, atol=1e-5)


def _epilogue_kernels(f, args):
    from jx.codegen.cpu import epilogue
    prog = epilogue.attach(jx.jit(f).lower(*args))
    return [k for k in prog.kernels if k.epilogue is not None]


@pytest.mark.parametrize("dt", FLOATS)
def test_elementwise_consumers_run_as_gemm_epilogues(rng, dt):
    """Output fusion: the product's only elementwise consumer is applied in place
    by the GEMM tasks. SGD's update, bias + relu, a batched product with a
    broadcast operand, split by rows and by columns, with and without threads."""
    x, w = _rand(rng, (37, 70), dt), _rand(rng, (70, 45), dt)
    g, bias = _rand(rng, (37, 45), dt), _rand(rng, (45,), dt)
    a3, b3 = _rand(rng, (3, 20, 30), dt), _rand(rng, (3, 30, 50), dt)
    cases = [
        (lambda w, x, g: w - 0.01 * (x.T @ g), (w, x, g)),
        (lambda x, w, bias: jnp.maximum(x @ w + bias, 0.0), (x, w, bias)),
        (lambda a, b, bias: jnp.tanh(jnp.matmul(a, b) * 0.5) + bias[:1, None, :1],
         (a3, b3, _rand(rng, (2, 3), dt))),
        (lambda a, b: (a.T @ b) * (a.T @ b)[0], (x[:, :8], g)),       # product reused
        (lambda w, h, d: w - 0.1 * (h.T @ d), (w[:, :6], x[:, :70].T[:, :37].T, g[:, :6])),
    ]
    for i, (f, args) in enumerate(cases):
        fused = _epilogue_kernels(f, args)
        assert len(fused) == (0 if i == 3 else 1), i
        if i == 4:                                  # a narrow product (vectors along M)
            assert "jx.gemm.narrow" in _compiled(f, args).ir_text
        _check_close(jx.jit(f)(*args), f(*[np.asarray(a, np.float64) for a in args]), dt)


def test_equal_layers_share_one_epilogue(rng):
    """Two layers of one width (bias + relu over 24 columns each) compile one
    epilogue function, called by both products; a third of another width has its
    own. Results as NumPy's in float64."""
    dt = np.float32
    x = _rand(rng, (9, 16), dt)
    w1, w2, w3 = _rand(rng, (16, 24), dt), _rand(rng, (24, 24), dt), _rand(rng, (24, 5), dt)
    b1, b2, b3 = _rand(rng, (24,), dt), _rand(rng, (24,), dt), _rand(rng, (5,), dt)

    def mlp(x, w1, b1, w2, b2, w3, b3):
        h = jnp.maximum(x @ w1 + b1, 0.0)
        h = jnp.maximum(h @ w2 + b2, 0.0)
        return jnp.maximum(h @ w3 + b3, 0.0)

    args = (x, w1, b1, w2, b2, w3, b3)
    assert len(_epilogue_kernels(mlp, args)) == 3
    text = _compiled(mlp, args).ir_text
    defined = [ln for ln in text.splitlines() if ln.startswith("define") and ".epilogue" in ln]
    assert len(defined) == 2, defined
    f64 = [np.asarray(a, np.float64) for a in args]
    h = np.maximum(np.maximum(f64[0] @ f64[1] + f64[2], 0) @ f64[3] + f64[4], 0)
    _check_close(jx.jit(mlp)(*args), np.maximum(h @ f64[5] + f64[6], 0), dt)


def _check_close(got, want, dt):
    tol = 1e-4 if dt == np.float32 else 1e-11
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_products_with_other_readers_keep_their_buffer(rng):
    """No epilogue when the product is also a result, read twice, or read through
    a layout change; results still right."""
    x, w = _rand(rng, (16, 24), np.float32), _rand(rng, (24, 16), np.float32)
    cases = [lambda x, w: (x @ w, (x @ w) + 1.0),
             lambda x, w: (x @ w)[:, :8] + 1.0,
             lambda x, w: jnp.sum(x @ w, axis=0)]
    for f in cases:
        assert _epilogue_kernels(f, (x, w)) == []
        got, want = jx.jit(f)(x, w), f(x.astype(np.float64), w.astype(np.float64))
        for gg, ww in zip(jax_tree_leaves(got), jax_tree_leaves(want)):
            np.testing.assert_allclose(gg, ww, rtol=1e-4, atol=1e-4)


def jax_tree_leaves(t):
    return list(t) if isinstance(t, tuple) else [t]


def test_epilogues_with_threads_split_either_way(rng, monkeypatch):
    monkeypatch.setitem(tuning.OVERRIDE, "gemm_min_work", 1)
    monkeypatch.setattr(gemm, "OVERRIDE", dict(SMALL_BLOCKS))
    for split in ("m", "n"):
        monkeypatch.setattr(gemm, "SPLIT", split)
        w, x, g = (_rand(rng, s, np.float32) for s in ((75, 61), (29, 75), (29, 61)))
        f = lambda w, x, g: w - 0.5 * (x.T @ g)
        cf = _compiled(f, (w, x, g))
        assert ".epilogue" in cf.ir_text
        np.testing.assert_allclose(cf(w, x, g)[0], w - 0.5 * (x.T @ g), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [True, False])
def test_consumers_reading_the_product_elsewhere_are_not_epilogues(rng, monkeypatch, threads):
    """A consumer that reads the product at other indices through fused layout ops
    (after an elementwise op) cannot update C in place."""
    monkeypatch.setitem(tuning.OVERRIDE, "gemm_min_work", 1 if threads else 1 << 40)
    a, b, z = (_rand(rng, (64, 64), np.float32) for _ in range(3))
    x, w, bias = _rand(rng, (100, 70), np.float32), _rand(rng, (70, 40), np.float32), \
        _rand(rng, (40,), np.float32)
    cases = [(lambda a, b, z: (a @ b * 2.0).T + z, (a, b, z)),
             (lambda a, b: jnp.flip(a @ b + 1.0, 0), (a, b)),
             (lambda x, w, bias: jnp.roll(jnp.tanh(x @ w + bias), 1, axis=0), (x, w, bias))]
    for f, args in cases:
        assert _epilogue_kernels(f, args) == []
        want = f(*[np.asarray(t, np.float64) for t in args])
        np.testing.assert_allclose(jx.jit(f)(*args), want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("large_first", [True, False])
def test_products_differing_only_in_m_get_their_own_scratch_layout(rng, large_first):
    """Two packed-A products of one module that differ only in M: each must place
    B's panels after its own A panels (a shared function once overran the scratch)."""
    dn = (((1,), (1,)), ((2,), (0,)))
    small, large = _rand(rng, (8, 20, 2), np.float32), _rand(rng, (300, 20, 2), np.float32)
    r = _rand(rng, (2, 20, 40), np.float32)
    first, second = (large, small) if large_first else (small, large)
    f = lambda p, q, r: (lax.dot_general(p, r, dn), lax.dot_general(q, r, dn))
    for _ in range(3):
        outs = jx.jit(f)(first, second, r)
        for got, lhs in zip(outs, (first, second)):
            _check(got, lambda x, y: np.einsum("mkb,bkn->bmn", x, y), (lhs, r))


def test_a_blocks_that_are_not_a_multiple_of_mr(rng, monkeypatch):
    monkeypatch.setattr(gemm, "OVERRIDE", {"kc": 8, "mc": 12, "nc": 32})   # mr 8 or 12
    monkeypatch.setattr(gemm, "DIRECT_A", False)
    a, b = _rand(rng, (3, 12, 7), np.float32), _rand(rng, (3, 7, 4), np.float32)
    _check(jx.jit(jnp.matmul)(a, b), jnp.matmul, (a, b))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_products_sum_in_float32_and_round_once(dtype):
    """XLA sums a float16/bfloat16 dot in float32 and rounds the result once; summing
    in the output type rounded every step (a unit in the last place by K = 2)."""
    import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)
    rng = np.random.default_rng(7)
    dt = np.dtype(dtype)
    for shape_a, shape_b in (((3, 2), (2, 17)), ((4, 3, 40), (4, 40, 5)), ((7,), (7, 9))):
        a = rng.standard_normal(shape_a).astype(dt)
        b = rng.standard_normal(shape_b).astype(dt)
        want = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32).astype(dt)
        got = np.asarray(jx.jit(jnp.matmul)(a, b))
        assert got.dtype == dt
        np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
