"""jvp, vjp and vmap of the indexing primitives (dynamic_slice/update_slice,
gather, the scatter family): the harness checks on TRANSFORM_CASES, the same
rules staged into graphs, and end-to-end gradients and batching of NumPy-style
indexing against finite differences and Python loops."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as lax
import jx.numpy as jnp
from jx.prims.indexing import GatherDimensionNumbers as GDN
from jx.prims.indexing import ScatterDimensionNumbers as SDN
from transform_harness import Case, case_rng, case_tests, fd_grad as _fd_grad, make_args

# float64 data and references, as in JAX's own tests with jax_enable_x64
pytestmark = pytest.mark.x64

_ROWS_G = GDN((1,), (0,), (0,))                       # x[idx] of whole rows
_ROWS_S = SDN((1,), (0,), (0,))
_WIN_S = SDN((1, 2), (), (0,))                        # windows of 2 rows
_BATCH_S = SDN((), (1,), (1,), (0,), (0,))            # per-row scatter (batching dims)


def _sc(fn, mode, dn=_ROWS_S):
    return lambda x, i, u: fn(x, i, u, dn, mode=mode)


def _unique_rows(i):
    """Distinct row indices from any ints in [0, 3): 4*i + [0, 1, 2, 3]."""
    return jnp.reshape(i * 4 + np.arange(4, dtype=np.int32), (4, 1))


TRANSFORM_CASES = {
    # starts up to 4 on a (5, 4) operand: windows (2, 3) get clamped
    "dynamic_slice": Case(lambda x, s: jnp.sin(lax.dynamic_slice(x, s, (2, 3))),
                          [(5, 4), (2,)], int_args=(1,), int_high=5),
    "dynamic_update_slice": Case(
        lambda x, u, s: jnp.sin(lax.dynamic_update_slice(x, u * 2.0, s)),
        [(5, 4), (2, 3), (2,)], int_args=(2,), int_high=5),
    "gather": Case(lambda x, i: lax.gather(x, i, _ROWS_G, (1, 3), mode="clip"),
                   [(5, 4), (3, 1)], int_args=(1,), int_high=7),
    # column starts past 2 leave the (1, 2) slice out of bounds: filled, zero derivative
    "gather/fill": Case(lambda x, i: lax.gather(x, i, GDN((1,), (0,), (0, 1)), (1, 2),
                                                mode="fill", fill_value=2.0),
                        [(4, 4), (3, 2)], int_args=(1,), int_high=5),
    "gather/batching": Case(lambda x, i: jnp.take_along_axis(x, i, axis=1),
                            [(3, 5), (3, 4)], int_args=(1,), int_high=5),
    # indices up to 6 on 5 rows: repeats accumulate, out-of-bounds rows are dropped
    "scatter_add": Case(_sc(lax.scatter_add, "drop"), [(5, 3), (4, 1), (4, 3)],
                        int_args=(1,), int_high=7),
    "scatter_add/clip": Case(_sc(lax.scatter_add, "clip", _WIN_S), [(6, 4), (3, 1), (3, 2, 4)],
                             int_args=(1,), int_high=7),
    "scatter": Case(_sc(lax.scatter, "drop"), [(5, 3), (4, 1), (4, 3)],
                    int_args=(1,), int_high=6),
    "scatter/clip": Case(_sc(lax.scatter, "clip", _WIN_S), [(6, 4), (3, 1), (3, 2, 4)],
                         int_args=(1,), int_high=7),
    "scatter/batching": Case(_sc(lax.scatter, "drop", _BATCH_S), [(3, 5), (3, 4, 1), (3, 4)],
                             int_args=(1,), int_high=5),
    # scatter_mul's update derivative needs distinct targets; 9..11 are dropped
    "scatter_mul": Case(lambda x, i, u: lax.scatter_mul(x, _unique_rows(i), u, _ROWS_S),
                        [(9, 2), (4,), (4, 2)], int_args=(1,), int_high=3),
    "scatter_mul/clip": Case(lambda x, i, u: lax.scatter_mul(x, _unique_rows(i), u, _ROWS_S,
                                                             mode="clip"),
                             [(10, 2), (4,), (4, 2)], int_args=(1,), int_high=3),
    # min/max: repeated targets are fine (no ties among random values)
    "scatter_min": Case(_sc(lax.scatter_min, "drop"), [(5, 3), (4, 1), (4, 3)],
                        int_args=(1,), int_high=6),
    "scatter_max": Case(_sc(lax.scatter_max, "clip"), [(5, 3), (4, 1), (4, 3)],
                        int_args=(1,), int_high=6),
    "scatter_max/batching": Case(_sc(lax.scatter_max, "drop", _BATCH_S),
                                 [(3, 5), (3, 4, 1), (3, 4)], int_args=(1,), int_high=6),
}
DIFF = [k for k, c in TRANSFORM_CASES.items() if c.diff]
_seed = case_rng
test_jvp_matches_finite_differences, test_vjp_consistent_with_jvp_and_fd, \
    test_vmap_matches_loop = case_tests(TRANSFORM_CASES)


@pytest.mark.parametrize("name", sorted(TRANSFORM_CASES))
def test_vmap_all_arguments_batched(name):
    """Every argument mapped at once (the harness maps one at a time), mixed axes."""
    case, rng, batch = TRANSFORM_CASES[name], _seed(name, 3), 3
    for pick in (lambda k: 0, lambda k: -1 if k % 2 else 0):
        axes = tuple(pick(k) for k in range(len(case.shapes)))
        examples = [make_args(case, rng) for _ in range(batch)]
        stacked = [np.stack([ex[k] for ex in examples], axis=a % (np.ndim(examples[0][k]) + 1))
                   for k, a in enumerate(axes)]
        got = jx.vmap(case.fn, in_axes=axes)(*stacked)
        want = np.stack([np.asarray(case.fn(*ex)) for ex in examples])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=str(axes))


@pytest.mark.parametrize("name", DIFF)
def test_rules_staged_into_graphs(name):
    """The rules on tracers: grad and vmap graphs verify and agree with eager runs."""
    case, rng = TRANSFORM_CASES[name], _seed(name, 4)
    args = make_args(case, rng)
    u = rng.standard_normal(np.shape(case.fn(*args)))
    fl = [k for k in range(len(args)) if k not in case.int_args]

    def grads(*a):
        return jx.grad(lambda *xs: jnp.sum(case.fn(*xs) * u), argnums=tuple(fl))(*a)
    graph = jx.verify(jx.make_graph(grads)(*args))
    for got, want in zip(jx.eval_graph(graph, *args), grads(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    batched = [np.stack([a, a + 1 if k in case.int_args else a * 0.5])
               for k, a in enumerate(args)]
    vm = jx.vmap(grads)
    graph = jx.verify(jx.make_graph(vm)(*batched))
    for got, want in zip(jx.eval_graph(graph, *batched), vm(*batched)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- end to end

_at = jnp.IndexUpdateHelper         # x.at for NumPy arrays too (finite differences)


def _check_grad(f, x, rtol=1e-6):
    g = jx.grad(f)(x)
    assert g.shape == x.shape and g.dtype == x.dtype
    np.testing.assert_allclose(g, _fd_grad(f, x), rtol=rtol, atol=1e-7)
    return g


def test_grad_advanced_indexing(rng):
    x = rng.standard_normal((5, 4))
    rows = np.array([4, 0, 4, 2], np.int32)                   # a repeated row
    cols = np.array([[1], [3]], np.int32)
    _check_grad(lambda v: jnp.sum(jnp.sin(v[rows]) ** 2), x)
    _check_grad(lambda v: jnp.sum(jnp.exp(v[rows[:3], cols])), x)    # broadcast index arrays
    _check_grad(lambda v: jnp.sum(v[1:, rows[2:] - 1] ** 3), x)           # slice and array
    # duplicates accumulate: d/dv sum(v[rows]) counts each row's uses
    g = jx.grad(lambda v: jnp.sum(v[rows]))(x)
    np.testing.assert_allclose(g[:, 0], [1, 0, 1, 0, 2])


def test_grad_at_updates(rng):
    x, u = rng.standard_normal(6), rng.standard_normal(3)
    idx = np.array([1, 4, 1], np.int32)
    for f in (lambda v, w: jnp.sum(jnp.sin(_at(v)[idx].add(w)) ** 2),
              lambda v, w: jnp.sum(jnp.sin(_at(v)[idx].set(w * 2.0)) * v),
              lambda v, w: jnp.sum(jnp.cos(_at(v)[idx].max(w))),
              lambda v, w: jnp.sum(jnp.cos(_at(v)[idx].min(w)))):
        _check_grad(lambda v: f(v, u), x)
        _check_grad(lambda w: f(x, w), u)
    # set with a repeated index: only the update that landed (the last) gets a gradient
    g = jx.grad(lambda w: jnp.sum(_at(x)[idx].set(w) * 3.0))(u)
    np.testing.assert_allclose(g, [0.0, 3.0, 3.0])
    # mul with distinct targets
    _check_grad(lambda w: jnp.sum(jnp.sin(_at(x)[np.array([0, 5])].multiply(w[:2]))), u)
    _check_grad(lambda v: jnp.sum(jnp.sin(_at(v)[np.array([0, 5])].multiply(u[:2]))), x)


def test_scatter_max_ties_split_the_gradient():
    x, idx = np.array([3.0, 1.0]), np.array([0, 0], np.int32)

    def f(v, w):
        return jnp.sum(_at(v)[idx].max(w) * np.array([6.0, 1.0]))
    gx, gw = jx.grad(f, argnums=(0, 1))(x, np.array([3.0, 3.0]))
    np.testing.assert_allclose(gx, [2.0, 1.0])          # three-way tie at 3: 6 / 3 each
    np.testing.assert_allclose(gw, [2.0, 2.0])
    _, t = jx.jvp(lambda v, w: _at(v)[idx].max(w), (x, np.array([3.0, 3.0])),
                  (np.array([1.0, 0.0]), np.array([2.0, 6.0])))
    np.testing.assert_allclose(t, [3.0, 0.0])


def test_take_along_axis_and_take_gradients(rng):
    x = rng.standard_normal((3, 5))
    idx = rng.integers(0, 5, (3, 4)).astype(np.int32)
    _check_grad(lambda v: jnp.sum(jnp.take_along_axis(v, idx, axis=1) ** 2), x)
    _check_grad(lambda v: jnp.sum(jnp.sin(jnp.take(v, idx[0], axis=1))), x)
    # out-of-bounds fill reads nothing: zero gradient there, and no NaN from the fill
    oob = np.array([[0, 7], [9, 1], [2, 2]], np.int32)
    g = _check_grad(lambda v: jnp.sum(jnp.take_along_axis(v, oob, axis=1, fill_value=0.0) * 2.0),
                    x)
    want = np.zeros_like(x)
    want[0, 0] = want[1, 1] = 2.0
    want[2, 2] = 4.0
    np.testing.assert_allclose(g, want)
    g = jx.grad(lambda v: jnp.nansum(_at(v)[np.array([1, 8])].get(mode="fill")))(x[0])
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0, 0.0, 0.0])


def test_grad_with_traced_dynamic_index(rng):
    x = rng.standard_normal((6, 3))

    def loss(v, i):
        row = v[i]                                          # traced i: dynamic_slice
        tail = lax.dynamic_slice_in_dim(v, i + 2, 3)        # clamped near the end
        return jnp.sum(jnp.sin(row)) + jnp.sum(tail ** 2) + jnp.sum(_at(v)[i].set(row * 2.0))
    for i in (0, 3, 5, -1):
        i = np.int32(i)
        _check_grad(lambda v: loss(v, i), x)
        graph = jx.verify(jx.make_graph(jx.grad(loss))(x, i))
        np.testing.assert_allclose(jx.eval_graph(graph, x, i)[0], jx.grad(loss)(x, i),
                                   rtol=1e-12)


def test_float32_gradient_keeps_dtype(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    idx = np.array([3, 1, 3], np.int32)
    g = jx.grad(lambda v: jnp.sum(v[idx] * _at(v)[idx].add(1.0)[idx]))(x)
    assert g.dtype == np.float32
    x64 = x.astype(np.float64)
    want = jx.grad(lambda v: jnp.sum(v[idx] * _at(v)[idx].add(1.0)[idx]))(x64)
    np.testing.assert_allclose(g, want, rtol=1e-5)


def test_vmap_dynamic_index_matches_loop(rng):
    x = rng.standard_normal((5, 5))
    i = np.array([0, 4, 2, -1, 3], np.int32)
    np.testing.assert_allclose(jx.vmap(lambda r, k: r[k], in_axes=(None, 0))(x, i), x[i])
    np.testing.assert_allclose(jx.vmap(lambda r, k: r[k])(x, i), x[np.arange(5), i])
    got = jx.vmap(lambda k: lax.dynamic_slice(x, (k, k), (2, 2)))(i)
    want = np.stack([lax.dynamic_slice(x, (k, k), (2, 2)) for k in i])
    np.testing.assert_allclose(got, want)
    upd = jx.vmap(lambda r, k: _at(r)[k].set(10.0))(x, i)
    want = x.copy()
    want[np.arange(5), i] = 10.0
    np.testing.assert_allclose(upd, want)
    f = jx.vmap(lambda r, k: r[k] * r[k + 1], in_axes=(None, 0))
    graph = jx.verify(jx.make_graph(f)(x, i))
    np.testing.assert_allclose(jx.eval_graph(graph, x, i)[0],
                               np.stack([x[k] * x[min(max(k + 1, -5), 4)] for k in i]))


def test_vmap_grad_embedding_lookup(rng):
    emb, w = rng.standard_normal((7, 3)), rng.standard_normal(3)
    ids = rng.integers(0, 7, (4, 5)).astype(np.int32)        # 4 examples of 5 tokens
    ys = rng.standard_normal(4)

    def loss(e, tokens, y):
        return (jnp.sum(jnp.tanh(e[tokens]) @ w) - y) ** 2
    got = jx.vmap(jx.grad(loss), in_axes=(None, 0, 0))(emb, ids, ys)
    assert got.shape == (4, 7, 3)
    for k in range(4):
        want = _fd_grad(lambda e: float(loss(e, ids[k], ys[k])), emb)
        np.testing.assert_allclose(got[k], want, rtol=1e-6, atol=1e-8)
        untouched = np.setdiff1d(np.arange(7), ids[k])
        assert not np.any(got[k][untouched])
    graph = jx.verify(jx.make_graph(jx.vmap(jx.grad(loss), in_axes=(None, 0, 0)))(emb, ids, ys))
    np.testing.assert_allclose(jx.eval_graph(graph, emb, ids, ys)[0], got, rtol=1e-12)


def test_jacfwd_equals_jacrev_through_indexing(rng):
    x = rng.standard_normal(6)
    idx = np.array([[2], [5], [2]], np.int32)

    def f(v):
        g = lax.gather(v, idx, GDN((), (0,), (0,)), (1,), mode="clip")
        return jnp.sin(_at(v)[np.array([0, 2])].add(g[:2]))[idx[:, 0]] * g
    np.testing.assert_allclose(jx.jacfwd(f)(x), jx.jacrev(f)(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jx.jacrev(f)(x), np.stack([_fd_grad(lambda v: f(v)[k], x)
                                                          for k in range(3)]), atol=1e-7)


def test_second_derivatives_through_indexing(rng):
    """Rules of rules: hessians through gather, scatter (set, add, max) and dynamic slices."""
    x = rng.standard_normal(5)
    idx, i = np.array([3, 0, 3], np.int32), np.int32(2)

    def f(v):
        a = jnp.sin(v[idx]) ** 2
        b = _at(v)[idx].set(v[:3] * v[1:4])
        c = _at(v)[np.array([1, 4])].max(jnp.cos(v[:2]))
        d = lax.dynamic_slice(v, (i,), (3,))
        return jnp.sum(a) + jnp.sum(b ** 3) + jnp.sum(c * d[0]) + jnp.sum(
            lax.dynamic_update_slice(v, d ** 2, (i,)) ** 2)
    h = jx.hessian(f)(x)
    want = np.stack([_fd_grad(lambda v: jx.grad(f)(v)[k], x) for k in range(5)])
    np.testing.assert_allclose(h, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-10)
