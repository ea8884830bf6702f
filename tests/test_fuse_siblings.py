"""Horizontal fusion of sibling reductions (passes/siblings.py): reductions over
one domain whose inputs overlap run as one kernel with an output each. Results
against NumPy on random inputs (odd sizes, single rows, widths off the vector
width, full reductions, column sums), f32 and f64, sums / max / min / prod
mixed, with and without shared producers, in loop bodies; the kernels formed
(merges that must not happen, the n-body's one kernel). No timings."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax
from jx.passes.fuse import fuse
from jx.passes.pipeline import run
from jx.passes.siblings import split_siblings

RNG = np.random.default_rng(23)
SHAPES = [(1, 5), (1, 1), (7, 13), (33, 17), (4, 1), (130, 257), (3, 5, 7)]
TOL = {np.float32: 2e-5, np.float64: 1e-12}


def _reduces(program) -> list:
    """Every reduce kernel of a program and its sub-programs, as lists of root names."""
    out = []
    for k in program.kernels:
        if k.kind == "reduce":
            out.append([r.prim.name for r in k.roots])
        for sub in k.subprograms.values():
            for p in (sub if isinstance(sub, tuple) else (sub,)):
                out += _reduces(p)
    return out


def _check(got, want, dtype):
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == np.shape(w) and g.dtype == dtype
        np.testing.assert_allclose(g, w, rtol=TOL[dtype], atol=TOL[dtype])


def _x64(dtype):
    return jx.enable_x64(dtype == np.float64)


def _shared(x, y, axis):
    t = jnp.tanh(x) * y + 1.0                    # shared by all four
    return (t.sum(axis), t.max(axis), (t * x).min(axis), (t * 0.5).prod(axis))


def _shared_np(x, y, axis):
    t = np.tanh(x) * y + 1.0
    return (t.sum(axis), t.max(axis), (t * x).min(axis), (t * 0.5).prod(axis))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_shared_producers_one_kernel(shape, dtype):
    with _x64(dtype):
        x = RNG.uniform(-1, 1, shape).astype(dtype)
        y = RNG.uniform(0.5, 1.5, shape).astype(dtype)
        for axis in [-1, 0, None] + ([(1, 2), 1] if len(shape) == 3 else []):
            f = jx.jit(lambda x, y: _shared(x, y, axis))
            _check(f(x, y), _shared_np(x, y, axis), dtype)
            # one reduce kernel with the four roots, nothing of t materialised
            assert _reduces(f.lower(x, y)) == [["reduce_sum", "reduce_max", "reduce_min",
                                                "reduce_prod"]]
            assert len(f.lower(x, y).kernels) == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 9), (17, 31), (64, 48), (5, 3, 20)])
def test_siblings_without_shared_producers(shape, dtype):
    """Reading the same array is enough to merge; unrelated inputs are not merged."""
    with _x64(dtype):
        x = RNG.standard_normal(shape).astype(dtype)
        z = RNG.standard_normal(shape).astype(dtype)

        def f(x, z):
            return x.sum(-1), jnp.max(x, -1), jnp.min(x * 2.0, -1), jnp.sum(z, -1)
        got = jx.jit(f)(x, z)
        _check(got, (x.sum(-1), x.max(-1), (x * 2).min(-1), z.sum(-1)), dtype)
        assert sorted(map(len, _reduces(jx.jit(f).lower(x, z)))) == [1, 3]


@pytest.mark.parametrize("n", [1, 3, 16, 100, 4099])
def test_full_reductions_and_parallel_partials(n):
    """Scalar results (split into parallel chunk partials when large), and column
    sums (accumulated row by row)."""
    x = RNG.standard_normal((n, 37)).astype(np.float32)
    f = jx.jit(lambda x: (jnp.sum(jnp.sin(x)), jnp.max(jnp.sin(x) * x), jnp.min(jnp.sin(x)),
                          jnp.sum(jnp.sin(x), 0), jnp.max(jnp.sin(x) + 1, 0)))
    s = np.sin(x)
    _check(f(x), (s.sum(), (s * x).max(), s.min(), s.sum(0), (s + 1).max(0)), np.float32)
    assert sorted(map(len, _reduces(f.lower(x)))) == [2, 3]


def test_integer_siblings():
    x = RNG.integers(-50, 50, (9, 130)).astype(np.int32)
    f = jx.jit(lambda x: (jnp.sum(x * 3, 1), jnp.max(x * 3, 1), jnp.min(x - 1, 1)))
    for g, w in zip(f(x), ((x * 3).sum(1), (x * 3).max(1), (x - 1).min(1))):
        np.testing.assert_array_equal(np.asarray(g), w)
    assert _reduces(f.lower(x)) == [["reduce_sum", "reduce_max", "reduce_min"]]


def test_special_values_per_output():
    """Each output keeps its own semantics: NaN propagates into max, -0 sums to +0."""
    x = np.array([[1.0, np.nan, 2.0, -np.inf] * 5, [-0.0] * 20, [3.0, -1.0] * 10], np.float32)
    got = jx.jit(lambda x: (jnp.sum(x * 1.0, 1), jnp.max(x * 1.0, 1), jnp.min(x * 1.0, 1)))(x)
    want = (x.sum(1), x.max(1), x.min(1))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)
    assert not np.signbit(np.asarray(got[0])[1])


def test_dependent_reductions_stay_apart():
    """A reduction that consumes another's result (softmax's max then sum) never
    joins it, directly or through other kernels."""
    x = RNG.standard_normal((6, 45)).astype(np.float32)

    def softmax_parts(x):
        m = jnp.max(x, 1, keepdims=True)
        return m[:, 0], jnp.sum(jnp.exp(x - m), 1)
    f = jx.jit(softmax_parts)
    m = x.max(1, keepdims=True)
    _check(f(x), (m[:, 0], np.exp(x - m).sum(1)), np.float32)
    assert all(len(r) == 1 for r in _reduces(f.lower(x)))

    def chain(x):
        a = jnp.sum(x, 1)
        b = jnp.sum(x * a[:, None], 1)          # reads a: not a's sibling
        c = jnp.max(x * 2.0, 1)                 # a's sibling
        return a, b, c
    a = x.sum(1)
    _check(jx.jit(chain)(x), (a, (x * a[:, None]).sum(1), (x * 2).max(1)), np.float32)
    assert sorted(map(len, _reduces(jx.jit(chain).lower(x)))) == [1, 2]


def test_merges_that_would_close_a_cycle_are_refused():
    """A, B, C, D: C reads A, D reads B; {B, C} merge, and then {A, D} would have
    to run both before and after {B, C}: D stays alone."""
    x = RNG.standard_normal((5, 40)).astype(np.float32)
    y = RNG.standard_normal((5, 40)).astype(np.float32)

    def f(x, y):
        a = jnp.sum(x, 1)
        b = jnp.sum(y, 1)
        c = jnp.sum(y + a[:, None], 1)
        d = jnp.sum(x + b[:, None], 1)
        return a, b, c, d
    a, b = x.sum(1), y.sum(1)
    _check(jx.jit(f)(x, y), (a, b, (y + a[:, None]).sum(1), (x + b[:, None]).sum(1)),
           np.float32)
    assert sorted(map(len, _reduces(jx.jit(f).lower(x, y)))) == [1, 1, 2]


def test_kernels_between_members_move_after_the_merged_kernel():
    """An elementwise kernel reading the first member's result, graph-ordered
    between the two members, runs after their merged kernel."""
    x = RNG.standard_normal((8, 33)).astype(np.float32)

    def f(x):
        a = jnp.sum(x * x, 1)
        u = jnp.sqrt(a) + jnp.arange(8.0)       # materialised: a graph output
        b = jnp.max(x * x, 1)
        return u, b, a
    a = (x * x).sum(1)
    _check(jx.jit(f)(x), (np.sqrt(a) + np.arange(8.0), (x * x).max(1), a), np.float32)
    prog = jx.jit(f).lower(x)
    assert [k.kind for k in prog.kernels] == ["reduce", "loop"]
    assert _reduces(prog) == [["reduce_sum", "reduce_max"]]


def test_row_groups_with_merged_statistics():
    """Layer norm from E[x] and E[x^2]: the merged statistics kernel and the
    normalising loop still run row by row together."""
    for shape in [(4, 96), (1, 5), (33, 130)]:
        x = RNG.standard_normal(shape).astype(np.float32)

        def norm(x):
            m = jnp.mean(x, -1, keepdims=True)
            q = jnp.mean(x * x, -1, keepdims=True)
            return (x - m) / jnp.sqrt(q - m * m + 1e-5)
        m, q = x.mean(-1, keepdims=True), (x * x).mean(-1, keepdims=True)
        _check([jx.jit(norm)(x)], [(x - m) / np.sqrt(q - m * m + 1e-5)], np.float32)
        assert _reduces(jx.jit(norm).lower(x)) == [["reduce_sum", "reduce_sum"]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_siblings_in_loop_bodies(dtype):
    with _x64(dtype):
        x = RNG.uniform(-1, 1, (9, 21)).astype(dtype)

        def step(c, _):
            t = jnp.cos(c) * 0.5
            return c + t.sum(1, keepdims=True) * 0.01 - t.max(1, keepdims=True) * 0.02, \
                jnp.min(t, 1)
        scan_f = jx.jit(lambda x: lax.scan(step, x, None, length=4))
        fori_f = jx.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: step(c, None)[0], x))

        def ref(x, n):
            c, mins = x, []
            for _ in range(n):
                t = np.cos(c) * 0.5
                mins.append(t.min(1))
                c = c + t.sum(1, keepdims=True) * 0.01 - t.max(1, keepdims=True) * 0.02
            return c, np.stack(mins)
        _check(scan_f(x), ref(x, 4), dtype)
        _check([fori_f(x)], [ref(x, 3)[0]], dtype)
        assert _reduces(scan_f.lower(x)) == [["reduce_sum", "reduce_max", "reduce_min"]]
        assert _reduces(fori_f.lower(x)) == [["reduce_sum", "reduce_max"]]   # min unused


def _accelerations(pos, mass):
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx, dy, dz = x.T - x, y.T - y, z.T - z
    inv_r3 = (dx ** 2 + dy ** 2 + dz ** 2 + 1e-2) ** -1.5
    return jnp.hstack([(dx * inv_r3) @ mass, (dy * inv_r3) @ mass, (dz * inv_r3) @ mass])


@pytest.mark.parametrize("n", [1, 2, 17, 33, 64])
def test_nbody_accelerations_are_one_reduce_kernel(n):
    pos = RNG.standard_normal((n, 3)).astype(np.float32)
    vel = (0.1 * RNG.standard_normal((n, 3))).astype(np.float32)
    mass = RNG.uniform(0.5, 1.5, (n, 1)).astype(np.float32)

    def leapfrog(pos, vel):
        def body(_, state):
            pos, vel = state
            pos = pos + 1e-3 * vel
            return pos, vel + 1e-3 * _accelerations(pos, mass)
        return lax.fori_loop(0, 3, body, (pos, vel))
    f = jx.jit(leapfrog)
    p, v = pos.astype(np.float64), vel.astype(np.float64)
    for _ in range(3):
        p = p + 1e-3 * v
        d = p[None, :, :] - p[:, None, :]
        inv = ((d ** 2).sum(-1) + 1e-2) ** -1.5
        v = v + 1e-3 * np.einsum("ijc,ij,j->ic", d, inv, mass[:, 0].astype(np.float64))
    _check(f(pos, vel), (p, v), np.float32)
    prog = f.lower(pos, vel)
    assert _reduces(prog) == [["reduce_sum"] * 3]
    # r2 = dx^2 + dy^2 + dz^2 has one consumer kernel now: no (n, n) buffer anywhere
    body = [k for k in prog.kernels if k.subprograms][0].subprograms["body"]
    assert all(v.aval.shape != (n, n) or n == 1 for k in body.kernels for v in k.outputs)


def test_split_siblings_round_trip():
    """split_siblings (for a backend without multi-output reductions) gives one
    kernel per output that computes the same values."""
    from jx.codegen.cpu.jit import CompiledFunction
    x = RNG.standard_normal((7, 19)).astype(np.float32)
    g = run(jx.make_graph(lambda x: _shared(x, x, 1))(jx.f32[7, 19]), check=True)
    merged = fuse(g)
    split = split_siblings(merged)
    assert [len(k.outputs) for k in split.kernels if k.kind == "reduce"] == [1, 1, 1, 1]
    assert all(not k.siblings for k in split.kernels)
    assert "reduce_sum+reduce_max+reduce_min+reduce_prod" in str(merged)
    want = _shared_np(x, x, 1)
    for prog in (merged, split):
        got = CompiledFunction(prog, "f")(x)
        _check(got, want, np.float32)


@pytest.mark.parametrize("shape", [(37, 53), (1, 7), (64, 128)])
def test_row_group_with_merged_siblings_after_a_spilling_reduce(shape):
    """A row group (softmax-like rows) where a sum whose input is computed comes
    before a merged sibling kernel: row fusion looks for the loop that receives the
    sum's value and must pass over the multi-output kernel (this compile crashed)."""
    def f(x, xp):
        m = xp.max(x, -1, keepdims=True)
        e = xp.exp(x - m)
        t = e / e.sum(-1, keepdims=True)
        return e * 2.0, (t * x).sum(-1), (t * t).max(-1)

    x = RNG.standard_normal(shape).astype(np.float32)
    g = jx.jit(lambda x: f(x, jnp))
    assert ["reduce_sum", "reduce_max"] in _reduces(g.lower(x))
    _check(g(x), f(x.astype(np.float64), np), np.float32)
