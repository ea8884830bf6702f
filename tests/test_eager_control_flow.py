"""Eager control flow runs compiled (issue 17, deliver 4): jx.lax.scan, fori_loop,
while_loop, cond, switch and map called outside jit on concrete values compile once
per signature (jx.eager's cache, counted in jx.eager.STATS) and give the values of
the NumPy reference interpreter (jx.eager.disabled()), of plain Python loops and of
JAX (when installed)."""
from collections import namedtuple

import numpy as np
import pytest

import jx
import jx.eager as eager
import jx.numpy as jnp
from jx import lax
from jx.errors import ShapeError
from jx.lax import control_flow

# float64 inputs where jx keeps them (64-bit mode); otherwise they are float32 inputs
X64 = jnp.asarray(np.zeros(1, np.float64)).dtype == np.float64
FLOATS = [np.float32, np.float64] if X64 else [np.float32]
DTYPES = FLOATS + [np.int32]
SHAPES = [(), (3,), (2, 5)]
State = namedtuple("State", ["pos", "vel"])


@pytest.fixture(autouse=True)
def fresh():
    """Each test sees its own compiles: an empty cache and zeroed counters."""
    assert control_flow.EAGER_RUNNER is eager.run
    eager.clear_cache()
    eager.reset_stats()
    yield


def rand(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-5, 6, size=shape).astype(dtype)


def leaves(x) -> list:
    return [np.asarray(v) for v in jx.tree.tree_leaves(x)]


def interpreted(f, *args):
    with eager.disabled():
        return f(*args)


def same(got, want, exact=True, rtol=1e-6):
    """Leaf by leaf: shapes, dtypes, and values (bit for bit where exact)."""
    got, want = leaves(got), leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


def compiled_twice(f, *args):
    """f(*args) run compiled twice: one compile, then one hit; returns the result."""
    first = f(*args)
    assert eager.STATS["compiles"] == 1 and eager.STATS["hits"] == 0, eager.STATS
    second = f(*args)
    assert eager.STATS["compiles"] == 1 and eager.STATS["hits"] == 1, eager.STATS
    same(second, first)
    return first


# ---------------------------------------------------------------- each construct

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_scan_compiled_matches_interpreter_and_loop(rng, dtype, shape):
    init, xs = rand(rng, shape, dtype), rand(rng, (7,) + shape, dtype)

    def f(init, xs):
        return lax.scan(lambda c, x: (c * 2 - x, c + x), init, xs)
    got = compiled_twice(f, init, xs)
    same(got, interpreted(f, init, xs))
    c, ys = init, []
    for x in xs:
        c, y = c * 2 - x, c + x
        ys.append(y)
    same(got, (np.asarray(c, dtype), np.stack(ys).astype(dtype)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_pytree_reverse_transcendental(rng, dtype, reverse):
    state = State(rand(rng, (4,), dtype), rand(rng, (4,), dtype))
    xs = {"f": rand(rng, (9, 4), dtype), "g": rand(rng, (9,), dtype)}

    def f(state, xs):
        def step(s, x):
            vel = s.vel * 0.9 + jnp.sin(s.pos) * x["g"]
            return State(s.pos + 0.1 * vel, vel), {"e": jnp.sum(vel * vel), "p": x["f"] * 2}
        return lax.scan(step, state, xs, reverse=reverse)
    got = compiled_twice(f, state, xs)
    assert isinstance(got[0], State) and set(got[1]) == {"e", "p"}
    same(got, interpreted(f, state, xs), exact=False,
         rtol=1e-5 if dtype == np.float32 else 1e-12)
    s, es, ps = state, [None] * 9, [None] * 9
    for i in (reversed(range(9)) if reverse else range(9)):
        vel = s.vel * dtype(0.9) + np.sin(s.pos) * xs["g"][i]
        s = State(s.pos + dtype(0.1) * vel, vel)
        es[i], ps[i] = np.sum(vel * vel), xs["f"][i] * 2
    same(got, (s, {"e": np.stack(es), "p": np.stack(ps)}), exact=False,
         rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_fori_loop(rng, dtype, shape):
    x = rand(rng, shape, dtype)

    def f(x):
        return lax.fori_loop(2, 9, lambda i, v: v * 3 - i.astype(v.dtype), x)
    got = compiled_twice(f, x)
    same(got, interpreted(f, x))
    want = x
    for i in range(2, 9):
        want = want * 3 - dtype(i)
    same(got, np.asarray(want, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_while_loop(rng, dtype):
    x = np.abs(rand(rng, (3,), dtype)) + 1

    def f(x):
        return lax.while_loop(lambda c: c[0] < 100, lambda c: (c[0] + 7, c[1] * 2 + 1),
                              (np.int32(1), x))
    got = compiled_twice(f, x)
    same(got, interpreted(f, x))
    n, v = 1, x
    while n < 100:
        n, v = n + 7, v * 2 + 1
    same(got, (np.int32(n), v.astype(dtype)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pred", [True, False])
def test_cond(rng, dtype, pred):
    x, y = rand(rng, (2, 3), dtype), rand(rng, (3,), dtype)

    def f(p, x, y):
        return lax.cond(p, lambda a, b: (a + b, a.sum()), lambda a, b: (a * b, a.max()), x, y)
    got = compiled_twice(f, pred, x, y)
    same(got, interpreted(f, pred, x, y))
    add, mul = (x + y, x.sum(dtype=dtype)), (x * y, x.max())
    same(got, add if pred else mul)
    # the other predicate runs the same compiled cond
    same(f(not pred, x, y), mul if pred else add)
    assert eager.STATS["compiles"] == 1 and eager.STATS["hits"] == 2


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_switch_clamps(rng, index):
    x = rand(rng, (4,), np.float32)
    fs = [lambda v: v + 1, lambda v: v * 2, lambda v: -v]

    def f(i, x):
        return lax.switch(i, fs, x)
    got = f(index, x)
    assert eager.STATS["compiles"] == 1
    same(got, interpreted(f, index, x))
    same(got, [x + 1, x * 2, -x][min(max(index, 0), 2)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_map(rng, dtype):
    xs = rand(rng, (6, 3), dtype)

    def f(xs):
        return lax.map(lambda r: (r[::-1] * 2, r.sum()), xs)
    got = compiled_twice(f, xs)
    same(got, interpreted(f, xs))
    same(got, (xs[:, ::-1] * 2, xs.sum(axis=1).astype(dtype)))


def test_zero_length_scan_and_weak_init(rng):
    init = rand(rng, (3,), np.float32)
    c, ys = lax.scan(lambda c, x: (c + x, c), init, np.zeros((0, 3), np.float32))
    same((c, ys), (init, np.zeros((0, 3), np.float32)))
    # a Python scalar init takes the body's dtype (JAX's weak-type rule), as interpreted
    f = (lambda: lax.fori_loop(0, 5, lambda i, v: v + np.float32(1.5), 0))
    got = f()
    same(got, interpreted(f))
    assert np.asarray(got).dtype == np.float32 and float(got) == 7.5


# ---------------------------------------------------------------- the cache

def test_retraced_body_hits_the_cache(rng):
    """A new lambda per call (a sampler's loop) is the same signature: one compile."""
    x = rand(rng, (5,), np.float32)
    outs = [lax.fori_loop(0, 20, lambda i, v: v * 0.5 + 1, x) for _ in range(4)]
    assert eager.STATS["compiles"] == 1 and eager.STATS["hits"] == 3
    for o in outs:
        same(o, outs[0])
    # a new shape or dtype is a new signature
    lax.fori_loop(0, 20, lambda i, v: v * 0.5 + 1, x[:3])
    lax.fori_loop(0, 20, lambda i, v: v * 0.5 + 1, x.astype(np.float16))
    assert eager.STATS["compiles"] == 3


def test_closed_over_arrays_are_operands(rng):
    """Arrays a body closes over are passed to the compiled code, not built into it:
    new values reuse it and give the new results (scan, while, cond alike)."""
    x = rand(rng, (4,), np.float32)
    for k in range(3):
        mu, table = rand(rng, (4,), np.float32), rand(rng, (6, 4), np.float32)

        def body(i, v):
            return v + mu * jnp.take(table, i, axis=0)
        got = lax.fori_loop(0, 6, body, x)
        same(got, interpreted(lambda: lax.fori_loop(0, 6, body, x)), exact=False)
        want = x.copy()
        for i in range(6):
            want = want + mu * table[i]
        same(got, want, exact=False)
        w = lax.while_loop(lambda c: jnp.sum(c * jnp.abs(mu)) < 50,
                           lambda c: c + jnp.abs(table[1]) + 1, x)
        want = x.copy()
        while np.sum(want * np.abs(mu)) < 50:
            want = want + np.abs(table[1]) + 1
        same(w, want, exact=False, rtol=1e-5)
        c = lax.cond(k % 2 == 0, lambda v: v + mu, lambda v: v * table[0], x)
        same(c, x + mu if k % 2 == 0 else x * table[0])
    assert eager.STATS["compiles"] == 3 and eager.STATS["hits"] == 6, eager.STATS


def test_nested_closed_over_arrays_are_operands(rng):
    """Arrays closed over by a cond and a while_loop inside a loop come in as
    operands too: new data, same compiled code, the new values."""
    x = rand(rng, (3,), np.float32)
    for _ in range(3):
        A, b = rand(rng, (3, 3), np.float32), rand(rng, (3,), np.float32)

        def body(i, v):
            v = lax.cond(i % 2 == 0, lambda u: A @ u, lambda u: u + b, v)
            return lax.while_loop(lambda u: jnp.sum(jnp.abs(u) - jnp.abs(b)) > 1,
                                  lambda u: u * 0.5, v)
        got = lax.fori_loop(0, 5, body, x)
        same(got, interpreted(lambda: lax.fori_loop(0, 5, body, x)), exact=False)
        want = x.copy()
        for i in range(5):
            want = A @ want if i % 2 == 0 else want + b
            while np.sum(np.abs(want) - np.abs(b)) > 1:
                want = want * np.float32(0.5)
        same(got, want, exact=False, rtol=1e-5)
    assert eager.STATS["compiles"] == 1 and eager.STATS["hits"] == 2, eager.STATS


def test_closed_over_scalars_key_the_cache(rng):
    """A scalar constant is part of the compiled code: a new value compiles again,
    and never reuses code built for another value."""
    x = rand(rng, (3,), np.float32)
    for scale in (0.5, 0.25, 0.5):
        got = lax.fori_loop(0, 4, lambda i, v: v * scale, x)
        same(got, x * np.float32(scale) ** 4, exact=False)
    assert eager.STATS["compiles"] == 2 and eager.STATS["hits"] == 1


def test_cache_is_bounded(rng, monkeypatch):
    monkeypatch.setattr(eager, "MAX_CACHED", 2)
    x = rand(rng, (3,), np.int32)
    for n in range(1, 5):
        same(lax.fori_loop(0, n, lambda i, v: v + 1, x), x + n)
    assert len(eager._CACHE) == 2 and eager.STATS["compiles"] == 4


# ---------------------------------------------------------------- when it applies

def test_traced_operands_are_staged_not_compiled(rng):
    x = rand(rng, (3,), np.float32)

    @jx.jit
    def g(x):
        return lax.fori_loop(0, 3, lambda i, v: v + x, x)      # closes over a tracer
    same(g(x), x * 4, exact=False)
    assert eager.STATS["compiles"] == 0 and eager.STATS["hits"] == 0
    assert "scan" in g._cache[next(iter(g._cache))].graph.op_counts()


def test_concrete_loop_inside_a_trace_runs_compiled(rng):
    x = rand(rng, (3,), np.float32)

    @jx.jit
    def g(x):
        return x + lax.fori_loop(0, 4, lambda i, v: v * 2, np.ones(3, np.float32))
    same(g(x), x + 16)
    assert eager.STATS["compiles"] == 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_transforms_stage_their_loops(rng, dtype):
    """grad and vmap trace the loop (no compile); a loop of constants inside them is
    compiled and its value used."""
    x = rand(rng, (), dtype) * 0.5 + 1.5
    g = jx.grad(lambda a: lax.fori_loop(0, 3, lambda i, v: v * a, dtype(1)))(x)
    np.testing.assert_allclose(np.asarray(g), 3 * x ** 2, rtol=1e-6)
    xs = rand(rng, (4,), dtype)
    v = jx.vmap(lambda a: lax.fori_loop(0, 3, lambda i, c: c * a, dtype(1)))(xs)
    np.testing.assert_allclose(np.asarray(v), xs ** 3, rtol=1e-6)
    assert eager.STATS["compiles"] == 0
    g = jx.grad(lambda a: a * lax.fori_loop(0, 3, lambda i, c: c * 2, dtype(1)))(x)
    np.testing.assert_allclose(np.asarray(g), 8, rtol=1e-6)
    assert eager.STATS["compiles"] == 1


def test_jx_array_operands(rng):
    """Operands made by jx.numpy (jx arrays) run compiled like NumPy arrays."""
    x = rand(rng, (5,), np.float32)
    got = lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(5, np.float32),
                   jnp.stack([jnp.asarray(x)] * 3))
    assert eager.STATS["compiles"] == 1
    same(got, (3 * x, np.stack([0 * x, x * x, 2 * x * x])), exact=False)


def test_unfilled_hook_interprets(rng, monkeypatch):
    monkeypatch.setattr(control_flow, "EAGER_RUNNER", None)
    x = rand(rng, (3,), np.int32)
    same(lax.fori_loop(0, 3, lambda i, v: v * 2, x), x * 8)
    assert not eager.STATS


def test_backend_gap_falls_back_to_interpreter(rng, monkeypatch):
    def no_lowering(prim, params):
        def fn(*operands):
            raise NotImplementedError("cpu backend: no lowering (test)")
        return fn
    monkeypatch.setattr(eager, "_caller", no_lowering)
    x = rand(rng, (3,), np.int32)
    for _ in range(2):
        same(lax.fori_loop(0, 3, lambda i, v: v * 2, x), x * 8)
    assert eager.STATS["interpreted"] == 2 and eager.STATS["compiles"] == 0


def test_result_type_is_jits(rng):
    x = rand(rng, (3,), np.float32)
    got = lax.fori_loop(0, 2, lambda i, v: v + 1, x)
    assert type(got) is type(jx.jit(lambda v: v + 1)(x))


def test_shape_error_in_body_names_the_users_line(rng):
    x = rand(rng, (3,), np.float32)
    with pytest.raises(ShapeError, match=r"test_eager_control_flow\.py:\d+"):
        lax.scan(lambda c, _: (lax.add(c, jnp.ones(4, np.float32)), None), x, None, length=2)
    with pytest.raises(ShapeError, match=r"carry.*test_eager_control_flow\.py:\d+"):
        lax.fori_loop(0, 2, lambda i, v: v[:2], x)
    assert eager.STATS["compiles"] == 0


# ---------------------------------------------------------------- against JAX

def test_sampler_matches_jax(rng):
    """A random-walk Metropolis chain over a logistic-regression posterior (data
    closed over), eager in both libraries, float32."""
    jax = pytest.importorskip("jax")
    X = rng.standard_normal((40, 3)).astype(np.float32)
    y = (rng.random(40) < 0.5).astype(np.float32)
    noise = rng.standard_normal((200, 3)).astype(np.float32)
    logu = np.log(rng.random(200)).astype(np.float32)

    def chain(lax, jnp, w0):
        def logp(w):
            z = X @ w
            return jnp.sum(y * z - jnp.log1p(jnp.exp(z))) - 0.5 * jnp.sum(w * w)

        def step(carry, inp):
            w, lp = carry
            z, lu = inp
            prop = w + 0.3 * z
            lpp = logp(prop)
            ok = lu < lpp - lp
            return (jnp.where(ok, prop, w), jnp.where(ok, lpp, lp)), ok
        (w, lp), accepted = lax.scan(step, (w0, logp(w0)), (noise, logu))
        return w, lp, accepted
    w0 = np.zeros(3, np.float32)
    got = chain(lax, jnp, w0)
    assert eager.STATS["compiles"] == 1
    want = chain(jax.lax, jax.numpy, w0)
    acc, want_acc = np.asarray(got[2]), np.asarray(want[2])
    # float32 rounding may flip a borderline accept; the chains must agree up to there
    flip = np.flatnonzero(acc != want_acc)
    assert flip.size == 0 or flip[0] > 150, flip
    if flip.size == 0:
        same(got[:2], [np.asarray(v) for v in want[:2]], exact=False, rtol=1e-4)
    same(got, interpreted(chain, lax, jnp, w0), exact=False, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_constructs_match_jax(rng, dtype):
    jax = pytest.importorskip("jax")
    x, xs = rand(rng, (4,), dtype), rand(rng, (5, 4), dtype)

    def prog(lax, x, xs):
        c, ys = lax.scan(lambda c, x: (c + x, c * 2), x, xs)
        f = lax.fori_loop(1, 6, lambda i, v: v * 2 - i, x)
        w = lax.while_loop(lambda v: v[0] < 50, lambda v: v * 2 + 1, abs(x) + 1)
        s = lax.switch(1, [lambda v: v + 1, lambda v: v - 1], x)
        m = lax.map(lambda r: r[::-1], xs)
        return c, ys, f, w, s, m
    got = prog(lax, x, xs)
    want = prog(jax.lax, x, xs)
    same(got, [np.asarray(v) for v in want], exact=dtype == np.int32, rtol=1e-6)


# ---------------------------------------------------------------- the benchmarks

def test_bench_numpy_engine_interprets(rng):
    """`jx bench`'s NumPy engine is the reference: its control flow is interpreted."""
    import types
    from jx.benchmarks import engines
    x = rand(rng, (3,), np.int32)
    entry = types.SimpleNamespace(fn=lambda v: lax.fori_loop(0, 3, lambda i, c: c * 2, v))
    same(engines.numpy_engine(entry, [x]).call(), x * 8)
    assert eager.STATS["interpreted"] == 1 and eager.STATS["compiles"] == 0


def test_eager_benchmark_smoke():
    """benchmarks/eager_control.py on tiny sizes, jx alone: one compile per case and
    the compiled chain equal to the interpreted one."""
    import types
    from jx.benchmarks import eager_control
    libs = {"jx": types.SimpleNamespace(lax=lax, numpy=jnp)}
    results = [eager_control.bench_case(n, s, m, a, libs, 0.001)
               for n, s, m, a in eager_control.cases(5)]
    for r in results:
        assert r["compiles"] == 1 and r["hits"] >= 1
        assert r["max_rel_diff_vs_interpreted"]["jx eager"] < 1e-6
        assert {"interpreted", "jx eager", "jx jit"} <= set(r["median_s"])
    assert "RW Metropolis" in eager_control.report(results, "cpu", "cmd")
