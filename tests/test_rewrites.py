"""Rewrites for real programs' shapes (issue 19): constant-exponent powers, column
products of computed matrices as fused reductions, strided operands of expanding
broadcasts, root pads as [pad | interior | pad] rows, and updates at constant starts
(`x.at[1:-1].set(...)`, lax.dynamic_update_slice) as [x | update | x] rows in one
loop kernel; scans that read their initial carry in place. Each against NumPy (and
JAX's special values where NumPy differs), at edges and odd sizes; no timings."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax

RNG = np.random.default_rng(19)
SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.7, -2.5, np.inf, -np.inf, np.nan, 1e-30, 1e30,
            3e38, 1.17e-38, 1e-45, 7.0]
EXPONENTS = [-8.0, -4.5, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 7.5, 8.0]


def _ieee_pow(x, e):
    """NumPy's power, except x ** 0.5, which NumPy computes as sqrt (sqrt(-inf) is
    nan, sqrt(-0) is -0) where IEEE pow and JAX give inf and +0."""
    with np.errstate(all="ignore"):
        want = np.power(x, x.dtype.type(e))
    if e == 0.5:
        want = np.where(x == -np.inf, np.inf, np.where(x == 0, 0.0, want)).astype(x.dtype)
    return want


def _ulps(a, b):
    it = np.int32 if a.dtype == np.float32 else np.int64
    return np.abs(a.view(it).astype(np.int64) - b.view(it).astype(np.int64))


@pytest.mark.parametrize("e", EXPONENTS)
def test_constant_power_special_values(e):
    x = np.array(SPECIALS, np.float32)
    got = np.asarray(jx.jit(lambda x: x ** e)(x))
    want = _ieee_pow(x, e)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    close = np.isfinite(want) & (_ulps(got, want) <= 1)
    assert np.all(same | close), (x[~(same | close)], got[~(same | close)], want[~(same | close)])
    assert np.array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0]))
    try:
        import jax
    except ImportError:
        return
    j = np.asarray(jax.jit(lambda x: x ** e)(x))
    tiny = (np.abs(x) < 1.2e-38) | (np.abs(want) < 1.2e-38)   # JAX flushes subnormals
    ok = (j == got) | (np.isnan(j) & np.isnan(got)) | (_ulps(j, got) <= 1) | tiny
    assert np.all(ok), (x[~ok], got[~ok], j[~ok])


@pytest.mark.parametrize("dtype,e,tol", [(np.float32, -1.5, 0), (np.float32, 2.5, 0),
                                         (np.float32, -7.5, 0), (np.float32, 8.0, 0),
                                         (np.float64, -1.5, 2), (np.float64, 2.0, 1),
                                         (np.float64, -0.5, 1), (np.float64, 1.5, 2)])
def test_constant_power_accuracy(dtype, e, tol):
    with jx.enable_x64(dtype == np.float64):
        x = RNG.uniform(0, 50, 100_001).astype(dtype)
        got = np.asarray(jx.jit(lambda x: x ** e)(x))
        want = np.power(x.astype(np.longdouble), e).astype(dtype)
        assert _ulps(got, want).max() <= max(tol, 1)


def test_constant_power_gradient_and_weak_exponent():
    f = jx.jit(jx.grad(lambda x: (x ** -1.5).sum()))
    x = RNG.uniform(0.5, 3, 7).astype(np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), -1.5 * x ** -2.5, rtol=2e-6)
    y = np.arange(1, 5, dtype=np.float16)
    out = jx.jit(lambda y: y ** -1.5)(y)
    assert out.dtype == np.float16
    np.testing.assert_allclose(np.asarray(out), (y.astype(np.float32) ** -1.5).astype(np.float16))


def _kernels(f, *args):
    return [k.root.prim.name for k in jx.jit(f).lower(*args).kernels]


@pytest.mark.parametrize("n,k", [(1, 5), (2, 3), (33, 17), (130, 257)])
def test_matrix_vector_products_as_reductions(n, k):
    a = RNG.standard_normal((n, k)).astype(np.float32)
    b = RNG.standard_normal((k, 1)).astype(np.float32)
    v = RNG.standard_normal(k).astype(np.float32)
    u = RNG.standard_normal(n).astype(np.float32)

    def f(a, b, v, u):
        m = jnp.tanh(a) * 2.0
        return m @ b, m @ v, a @ b, u @ a, a.T @ u, u @ m, jnp.dot(v, v)
    got = jx.jit(f)(a, b, v, u)
    m = np.tanh(a) * 2
    want = (m @ b, m @ v, a @ b, u @ a, a.T @ u, u @ m, v @ v)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=2e-5)
    assert "dot_general" not in _kernels(f, a, b, v, u)
    mm = RNG.standard_normal((k, 3)).astype(np.float32)          # a matrix product stays
    assert ("dot_general" in _kernels(lambda a, mm: a @ mm, a, mm)) == (n > 1)


def test_matrix_vector_gradients_and_batches():
    a = RNG.standard_normal((6, 4)).astype(np.float32)
    w = RNG.standard_normal(4).astype(np.float32)
    g = jx.jit(jx.grad(lambda w: jnp.sum(jnp.tanh(a @ w))))(w)
    np.testing.assert_allclose(np.asarray(g), a.T @ (1 - np.tanh(a @ w) ** 2), rtol=1e-5)
    ws = RNG.standard_normal((3, 4)).astype(np.float32)
    out = jx.jit(jx.vmap(lambda w: a @ w))(ws)
    np.testing.assert_allclose(np.asarray(out), ws @ a.T, rtol=1e-5, atol=1e-6)


def test_pairwise_forces_match_numpy():
    n = 37
    pos = RNG.standard_normal((n, 3)).astype(np.float32)
    mass = RNG.uniform(0.5, 1.5, (n, 1)).astype(np.float32)

    def acc(pos, mass):
        x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
        dx, dy, dz = x.T - x, y.T - y, z.T - z
        inv = (dx ** 2 + dy ** 2 + dz ** 2 + 1e-2) ** -1.5
        return jnp.hstack([(dx * inv) @ mass, (dy * inv) @ mass, (dz * inv) @ mass])
    p64 = pos.astype(np.float64)
    d = p64[None, :, :] - p64[:, None, :]
    inv = ((d ** 2).sum(-1) + 1e-2) ** -1.5
    want = np.einsum("ijc,ij,j->ic", d, inv, mass[:, 0].astype(np.float64))
    np.testing.assert_allclose(np.asarray(jx.jit(acc)(pos, mass)), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,pads", [((5,), [(2, 3)]), ((4, 6), [(1, 1), (0, 2)]),
                                        ((3, 4, 5), [(1, 1)] * 3), ((1, 1), [(3, 2), (0, 1)]),
                                        ((3, 4, 5), [(0, 0), (2, 0), (0, 3)]),
                                        ((64, 40, 33), [(1, 1)] * 3)])
def test_root_pad_rows(shape, pads):
    x = RNG.standard_normal(shape).astype(np.float32)
    f = jx.jit(lambda x, c: jnp.pad(jnp.sin(x) * 2 + 1, pads, constant_values=c))
    np.testing.assert_allclose(np.asarray(f(x, -3.0)),
                               np.pad(np.sin(x) * 2 + 1, pads, constant_values=-3.0), rtol=1e-6,
                               atol=1e-6)


def _lap(u):
    """The 7-point Laplacian of a 3-D grid's interior (jx or NumPy arrays)."""
    c = u[1:-1, 1:-1, 1:-1]
    return (u[2:, 1:-1, 1:-1] + u[:-2, 1:-1, 1:-1] + u[1:-1, 2:, 1:-1]
            + u[1:-1, :-2, 1:-1] + u[1:-1, 1:-1, 2:] + u[1:-1, 1:-1, :-2] - 6 * c)


@pytest.mark.parametrize("n", [3, 12, 31])
def test_stencil_in_a_loop_matches_numpy(n):
    u = RNG.standard_normal((n, n, n)).astype(np.float32)

    def evolve(u, a):
        return lax.fori_loop(0, 4, lambda _, u: jnp.pad(u[1:-1, 1:-1, 1:-1] + a * _lap(u), 1), u)
    want = u.copy()
    for _ in range(4):
        want = np.pad(want[1:-1, 1:-1, 1:-1] + np.float32(0.1) * _lap(want), 1)
    np.testing.assert_allclose(np.asarray(jx.jit(evolve)(u, 0.1)), want, rtol=1e-5, atol=1e-5)


def _kinds(program) -> list:
    """Kernel kinds and root names, nested bodies included."""
    out = []
    for k in program.kernels:
        out.append((k.kind, k.root.prim.name))
        for sub in k.subprograms.values():
            for p in (sub if isinstance(sub, tuple) else (sub,)):
                out += _kinds(p)
    return out


def _np_update(x, u, starts):
    """JAX's semantics: a negative start counts from the end, then every start is
    clamped so that the update fits."""
    x = x.copy()
    lo = [min(max(s + n if s < 0 else s, 0), n - w)
          for s, n, w in zip(starts, x.shape, u.shape)]
    x[tuple(slice(a, a + w) for a, w in zip(lo, u.shape))] = u
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("shape,ushape,starts", [
    ((7,), (3,), (2,)), ((7,), (7,), (0,)), ((7,), (1,), (6,)), ((7,), (3,), (-4,)),
    ((7,), (3,), (9,)), ((5, 9), (3, 4), (1, 5)), ((5, 9), (1, 9), (4, 0)),
    ((5, 9), (5, 1), (0, 0)), ((4, 6, 33), (2, 4, 31), (1, 1, 1)),
    ((4, 6, 33), (2, 4, 31), (3, -1, 7)), ((3, 4, 5), (0, 2, 2), (1, 1, 1)),
    ((1, 1), (1, 1), (0, 0)), ((66, 70), (64, 67), (1, 2))])
def test_update_at_constant_starts_is_one_loop_kernel(dtype, shape, ushape, starts):
    """Windows at every edge, clamped starts (negative, past the end), empty updates,
    odd widths; the update's value computed inside the kernel."""
    with jx.enable_x64(dtype == np.float64):
        x = (RNG.standard_normal(shape) * 10).astype(dtype)
        u = (RNG.standard_normal(ushape) * 10).astype(dtype)

        def f(x, u):
            return lax.dynamic_update_slice(x * 2, u - 1, starts)
        g = jx.jit(f)
        want = _np_update(x * 2, u - 1, starts)
        got = np.asarray(g(x, u))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        if 0 not in ushape:
            assert ("loop", "dynamic_update_slice") in _kinds(g.lower(x, u))
            assert not any(k == "opaque" for k, _ in _kinds(g.lower(x, u)))


def test_update_at_traced_starts_stays_correct():
    x = RNG.standard_normal((6, 8)).astype(np.float32)
    u = RNG.standard_normal((2, 3)).astype(np.float32)
    g = jx.jit(lambda x, u, i, j: lax.dynamic_update_slice(x, u * 3, (i, j)))
    for i, j in [(0, 0), (4, 5), (5, 7), (-2, 3), (2, 9)]:
        np.testing.assert_array_equal(np.asarray(g(x, u, np.int32(i), np.int32(j))),
                                      _np_update(x, u * 3, (i, j)))


def test_update_value_read_by_later_ops_and_as_interior_node():
    """A fused consumer of the update (its result read at shifted indices) and the
    updated array feeding a reduction."""
    x = RNG.standard_normal((9, 10)).astype(np.float32)

    def f(x):
        y = x.at[1:-1, 2:-2].set(jnp.tanh(x[1:-1, 2:-2]) * 4)
        return y[1:, :] - y[:-1, :], y.sum(axis=1)
    y = x.copy()
    y[1:-1, 2:-2] = np.tanh(x[1:-1, 2:-2]) * 4
    got = jx.jit(f)(x)
    np.testing.assert_allclose(np.asarray(got[0]), y[1:] - y[:-1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got[1]), y.sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("steps", [0, 1, 2, 5])
@pytest.mark.parametrize("n", [3, 12, 31])
def test_in_place_stencil_in_a_loop_matches_numpy(n, steps):
    """`u.at[1:-1, 1:-1, 1:-1].add(a * _lap(u))` steps in fori_loop: the update kernel,
    the scan reading its first carry in place (odd and even lengths, zero, one)."""
    u = RNG.standard_normal((n, n, n)).astype(np.float32)

    def evolve(u, a):
        return lax.fori_loop(0, steps, lambda _, u: u.at[1:-1, 1:-1, 1:-1].add(a * _lap(u)), u)
    want = u.copy()
    for _ in range(steps):
        want = want.copy()
        want[1:-1, 1:-1, 1:-1] += np.float32(0.1) * _lap(want)
    g = jx.jit(evolve)
    np.testing.assert_allclose(np.asarray(g(u, 0.1)), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(u), u)          # the input is untouched


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_many_small_products_become_reductions(dtype):
    """A program with many small matrix products (an unrolled network) computes them
    as fused reductions, in every operand orientation, odd sizes included; one with
    a few keeps the GEMM kernel."""
    with jx.enable_x64(dtype == np.float64):
        shapes = [(3, 5, 7), (16, 16, 16), (9, 1, 4), (2, 31, 3), (16, 32, 32)]
        ops = [(RNG.standard_normal((m, k)).astype(dtype),
                RNG.standard_normal((k, n)).astype(dtype)) for m, k, n in shapes]

        def many(ops):
            out = []
            for rep in range(8):              # 40 products (scaled: none is a repeat)
                for a, b in ops:
                    a = a * (rep + 1)
                    if rep % 4 == 0:
                        out.append(a @ b)
                    elif rep % 4 == 1:
                        out.append(jnp.einsum("ki,kj->ij", a.T, b))
                    elif rep % 4 == 2:
                        out.append(jnp.einsum("ik,jk->ij", a, b.T))
                    else:
                        out.append(jnp.tanh(b.T @ a.T).T * rep)
            return out

        want = []
        for rep in range(8):
            for a, b in ops:
                p = (a.astype(np.float64) * (rep + 1)) @ b.astype(np.float64)
                want.append(np.tanh(p) * rep if rep % 4 == 3 else p)
        f = jx.jit(many)
        tol = 1e-4 if dtype == np.float32 else 1e-10
        for g, w in zip(f(ops), want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=tol, atol=tol)
        assert not any(k.root.prim.name == "dot_general" for k in f.lower(ops).kernels)
        few = jx.jit(lambda a, b: a @ b)
        a, b = ops[1]
        assert any(k.root.prim.name == "dot_general" for k in few.lower(a, b).kernels)
