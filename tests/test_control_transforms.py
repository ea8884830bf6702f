"""jvp, vjp (grad) and vmap of cond / switch / while_loop / scan / fori_loop.

Derivatives are checked against central finite differences in float64 and
against each other (<vjp(u), v> == <u, jvp(v)>); batching against a Python
loop over the batch. Every transformed function is also traced with
make_graph, verified, and evaluated, and must agree with the eager result.
"""
import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax, tree
from jx.errors import JxError
from transform_harness import Case, check_jvp, check_vjp, check_vmap

# float64 data and references, as in JAX's own tests with jax_enable_x64
pytestmark = pytest.mark.x64

COVERED = {"cond", "while", "scan"}


def f64(rng, *shape):
    return rng.standard_normal(shape)


def close(a, b, tol=1e-6):
    for x, y in zip(tree.tree_leaves(a), tree.tree_leaves(b), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape, (x.shape, y.shape)
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def traced(fn, *args):
    """fn(*args) through make_graph + verify + eval_graph, as a pytree."""
    g = jx.verify(jx.make_graph(fn)(*args))
    outs = jx.eval_graph(g, *tree.tree_leaves(args))
    return tree.unflatten(g.out_tree, outs)


def both(fn, *args, tol=1e-9):
    """fn(*args) eagerly, checked against its traced graph."""
    eager = fn(*args)
    close(traced(fn, *args), eager, tol)
    return eager


def num_grad(f, args, i, eps=1e-6):
    x = np.asarray(args[i], np.float64)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = eps
        hi = f(*args[:i], x + e, *args[i + 1:])
        lo = f(*args[:i], x - e, *args[i + 1:])
        g[k] = (np.asarray(hi) - np.asarray(lo)) / (2 * eps)
    return g


def check_grad(f, args, argnums, tol=1e-6):
    """grad of the scalar f wrt each of argnums vs finite differences (eager and traced)."""
    grads = both(jx.grad(f, argnums=tuple(argnums)), *args)
    for i, g in zip(argnums, grads):
        close(g, num_grad(f, args, i), tol)
    return grads


def check_jvp_vjp(f, args, rng, tol=1e-6):
    """jvp vs finite differences along a random direction, and <vjp(u), v> == <u, jvp(v)>
    (f maps float arrays to a pytree of arrays; every argument is differentiated)."""
    vs = tuple(rng.standard_normal(np.shape(a)) for a in args)
    out, tout = both(lambda *p: jx.jvp(f, p, vs), *args)
    eps = 1e-6
    hi = f(*[a + eps * v for a, v in zip(args, vs)])
    lo = f(*[a - eps * v for a, v in zip(args, vs)])
    fd = tree.tree_map(lambda h, l: (np.asarray(h) - np.asarray(l)) / (2 * eps), hi, lo)
    close(tout, fd, tol)
    close(out, f(*args), 1e-12)
    us = tree.tree_map(lambda o: rng.standard_normal(np.shape(o)), out)
    cts = both(lambda *p: jx.vjp(f, *p)[1](us), *args)
    lhs = sum(np.vdot(c, v) for c, v in zip(cts, vs))
    rhs = sum(np.vdot(u, t) for u, t in zip(tree.tree_leaves(us), tree.tree_leaves(tout)))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- cond / switch


def cond_fn(x, y):
    return lax.cond(jnp.sum(x) > 0, lambda a, b: jnp.sin(a) * b,
                    lambda a, b: a * a - jnp.exp(b), x, y)


def cond_mixed(x, y):
    # output 0 has a zero tangent in the false branch only; output 1 is an integer
    def t(a, b):
        return a * b, jnp.int32(1), b

    def f(a, b):
        return jnp.zeros_like(a), jnp.int32(2), jnp.cos(b)
    u, k, v = lax.cond(x[0] > 0, t, f, x, y)
    return jnp.sum(u * k) + jnp.sum(v * v)


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("shape", [(), (3,)])
def test_cond_grad_jvp(rng, sign, shape):
    x, y = sign * np.abs(f64(rng, *shape)) + sign * 0.1, f64(rng, *shape)
    check_grad(lambda a, b: jnp.sum(cond_fn(a, b)), (x, y), [0, 1])
    check_jvp_vjp(cond_fn, (x, y), rng)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_union_of_tangents_and_int_outputs(rng, sign):
    x, y = sign * (np.abs(f64(rng, 3)) + 0.1), f64(rng, 3)
    check_grad(cond_mixed, (x, y), [0, 1])
    check_jvp_vjp(cond_mixed, (x, y), rng)


def switch_fn(i, x, w):
    return lax.switch(i, [lambda a: jnp.sin(a) * w, lambda a: a * a,
                          lambda a: jnp.tanh(a * w) + w], x)


@pytest.mark.parametrize("i", [-1, 0, 1, 2, 5])
def test_switch_grad(rng, i):
    x, w = f64(rng, 4), f64(rng)
    check_grad(lambda a, b: jnp.sum(switch_fn(np.int32(i), a, b)), (x, w), [0, 1])
    check_jvp_vjp(lambda a, b: switch_fn(np.int32(i), a, b), (x, w), rng)


# ---------------------------------------------------------------- scan


def rnn(w, h0, xs, reverse=False):
    def step(h, x):
        h = jnp.tanh(w @ h + x)   # w is closed over: a scan const
        return h, jnp.sum(h * h)
    h, ys = lax.scan(step, h0, xs, reverse=reverse)
    return h, ys


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_grad_consts_and_reverse(rng, reverse):
    w, h0, xs = 0.5 * f64(rng, 3, 3), f64(rng, 3), f64(rng, 5, 3)

    def loss(w, h0, xs):
        h, ys = rnn(w, h0, xs, reverse)
        return jnp.sum(h * jnp.arange(3.0)) + jnp.sum(ys * jnp.arange(5.0))
    check_grad(loss, (w, h0, xs), [0, 1, 2])
    check_jvp_vjp(lambda *a: rnn(*a, reverse=reverse), (w, h0, xs), rng)
    # the backward pass is one more scan running the other way, not an unrolled loop
    g = jx.make_graph(jx.grad(loss))(w, h0, xs)
    scans = [e for e in g.eqns if e.prim.name == "scan"]
    assert [e.params["reverse"] for e in scans][-1] is (not reverse)
    assert all(e.params["reverse"] is reverse for e in scans[:-1])


def test_scan_reverse_matches_python(rng):
    xs = f64(rng, 4)
    _, ys = both(lambda v: lax.scan(lambda c, x: (c * x + 1.0, c), 1.0, v, reverse=True), xs)
    c, want = 1.0, np.zeros(4)
    for i in reversed(range(4)):
        want[i], c = c, c * xs[i] + 1.0
    close(ys, want, 1e-12)


def pytree_scan(p, xs):
    # dict + tuple carry with an integer counter and a carry whose tangent is
    # zero on entry (acc starts at a constant) but nonzero after one step
    def step(c, x):
        k, (acc, v) = c["k"], c["s"]
        v = jnp.sin(v) * p["a"] + x["u"] * p["b"]
        return {"k": k + 1, "s": (acc + v * k, v)}, (v * x["w"], k)
    init = {"k": jnp.int32(0), "s": (jnp.zeros_like(p["v0"]), p["v0"])}
    c, (ys, ks) = lax.scan(step, init, xs)
    return c["s"][0], ys, ks


def test_scan_pytree_carry(rng):
    p = {"a": f64(rng, 2), "b": f64(rng), "v0": f64(rng, 2)}
    xs = {"u": f64(rng, 4, 2), "w": f64(rng, 4)}

    def loss(p, xs):
        acc, ys, ks = pytree_scan(p, xs)
        return jnp.sum(acc * acc) + jnp.sum(ys) + jnp.sum(ks)
    g = both(jx.grad(loss, argnums=(0, 1)), p, xs)
    flat = lambda d: np.concatenate([np.ravel(v) for v in tree.tree_leaves(d)])  # noqa
    leaves, td = tree.flatten((p, xs))
    sizes = [np.size(v) for v in leaves]

    def flat_loss(z):
        parts = np.split(z, np.cumsum(sizes)[:-1])
        vals = [q.reshape(np.shape(v)) for q, v in zip(parts, leaves)]
        return loss(*tree.unflatten(td, vals))
    close(flat(g), num_grad(flat_loss, (flat((p, xs)),), 0))
    _, _, ks = pytree_scan(p, xs)
    assert np.asarray(ks).dtype == np.int32 and list(ks) == [0, 1, 2, 3]

    def fl(a, b, v0, u, w):
        acc, ys, _ = pytree_scan({"a": a, "b": b, "v0": v0}, {"u": u, "w": w})
        return acc, ys
    check_jvp_vjp(fl, (p["a"], p["b"], p["v0"], xs["u"], xs["w"]), rng)


def test_scan_float32_grad_matches_float64(rng):
    w, h0, xs = 0.5 * f64(rng, 3, 3), f64(rng, 3), f64(rng, 5, 3)
    loss = lambda *a: jnp.sum(rnn(*a)[1])  # noqa: E731
    g64 = jx.grad(loss, argnums=(0, 1, 2))(w, h0, xs)
    args32 = tuple(a.astype(np.float32) for a in (w, h0, xs))
    g32 = both(jx.grad(loss, argnums=(0, 1, 2)), *args32, tol=1e-5)
    for a, b in zip(g32, g64):
        assert np.asarray(a).dtype == np.float32
        close(a, b, 1e-4)


def test_fori_loop_static_bounds_grad(rng):
    x, w = f64(rng, 3), f64(rng, 3)

    def f(x, w):
        return jnp.sum(lax.fori_loop(1, 5, lambda i, v: jnp.sin(v * w) + v * i, x))
    check_grad(f, (x, w), [0, 1])
    check_jvp_vjp(lambda x, w: lax.fori_loop(0, 3, lambda i, v: v * v * w + 1.0, x),
                  (0.5 * x, w), rng)


def test_grad_of_grad_and_hessian_through_scan(rng):
    xs = f64(rng, 4)

    def f(a):
        c, ys = lax.scan(lambda c, x: (jnp.sin(c * a) + x, c * c), a, xs)
        return c + jnp.sum(ys)
    a = np.float64(0.7)
    g1 = jx.grad(f)
    gg = both(jx.grad(g1), a)
    close(gg, num_grad(g1, (a,), 0), 1e-6)
    v = f64(rng, 3)

    def h(z):
        c, ys = lax.scan(lambda c, x: (c * jnp.sin(x) + x * x, c * x), 1.0, z)
        return c + jnp.sum(ys)
    hess = both(jx.hessian(h), v)
    gh = jx.grad(h)
    close(hess, np.stack([num_grad(lambda z: gh(z)[i], (v,), 0) for i in range(3)]), 1e-5)


# ---------------------------------------------------------------- while_loop


def while_fn(x, w):
    # trip count depends on x; acc's tangent is zero on entry (fixpoint)
    def body(c):
        i, v, acc = c
        return i + 1, v * 1.5 + jnp.sin(w), acc + v * w
    _, v, acc = lax.while_loop(lambda c: c[1] < 10.0, body, (0, x, 0.0))
    return v + acc


def test_while_jvp(rng):
    for x in (0.3, 2.0, 9.0, 12.0):
        x, w, t1, t2 = np.float64(x), np.float64(0.4), f64(rng), f64(rng)
        out, tout = both(lambda a, b: jx.jvp(while_fn, (a, b), (t1, t2)), x, w)
        eps = 1e-6
        fd = (while_fn(x + eps * t1, w + eps * t2) - while_fn(x - eps * t1, w - eps * t2)) / (
            2 * eps)
        close(tout, fd, 1e-6)
        close(out, while_fn(x, w), 1e-12)


def test_while_jacfwd(rng):
    x = np.abs(f64(rng, 3)) + 0.5
    f = lambda v: lax.while_loop(lambda c: jnp.sum(c) < 20.0, lambda c: c * c + 1.0, v)  # noqa
    jac = both(jx.jacfwd(f), x)
    close(jac, np.stack([num_grad(lambda z: f(z)[i], (x,), 0) for i in range(3)]), 1e-5)


def test_while_grad_raises_clear_error():
    with pytest.raises(JxError, match="while_loop.*fori_loop.*static.*scan"):
        jx.grad(while_fn)(np.float64(1.0), np.float64(0.4))
    with pytest.raises(JxError, match="Reverse-mode differentiation"):
        jx.make_graph(jx.grad(while_fn))(np.float64(1.0), np.float64(0.4))


# ---------------------------------------------------------------- vmap


def loop_over(f, in_axes, *args):
    """The reference: f applied to each example, stacked."""
    n = [np.shape(tree.tree_leaves(a)[0])[0] for a, ax in zip(args, in_axes)
         if ax is not None][0]
    outs = [f(*[a if ax is None else tree.tree_map(lambda v: v[i], a)
                for a, ax in zip(args, in_axes)]) for i in range(n)]
    return tree.tree_map(lambda *o: np.stack(o), *outs)


def check_batched(f, in_axes, *args, tol=1e-12):
    got = both(jx.vmap(f, in_axes=in_axes), *args)
    close(got, loop_over(f, in_axes, *args), tol)


def test_vmap_cond(rng):
    x, y = f64(rng, 6, 3), f64(rng, 6, 3)
    check_batched(cond_fn, (0, 0), x, y)            # batched predicate
    check_batched(cond_fn, (None, 0), x[0], y)      # unbatched predicate
    check_batched(cond_fn, (0, None), x, y[0])
    check_batched(cond_mixed, (0, 0), x, y)
    # one branch's output is unbatched, the other's batched: both come out batched
    swap = lambda p, a, b: lax.cond(p, lambda a, b: (a, b * 2.0), lambda a, b: (b, a), a, b)  # noqa
    check_batched(swap, (None, 0, None), np.bool_(True), x, y[0])
    check_batched(swap, (None, 0, None), np.bool_(False), x, y[0])
    check_batched(swap, (0, 0, None), x[:, 0] > 0, x, y[0])
    # unbatched predicate keeps the cond; a batched one evaluates both and selects
    ops = jx.make_graph(jx.vmap(cond_fn, in_axes=(None, 0)))(x[0], y).op_counts()
    assert ops.get("cond") == 1 and "select" not in ops
    ops = jx.make_graph(jx.vmap(cond_fn))(x, y).op_counts()
    assert "cond" not in ops and ops.get("select") == 1


def test_vmap_switch_batched_index(rng):
    idx = np.array([-2, 0, 1, 2, 7, 1], np.int32)
    x, w = f64(rng, 6, 4), f64(rng, 6)
    check_batched(switch_fn, (0, 0, 0), idx, x, w)
    check_batched(switch_fn, (0, None, None), idx, x[0], w[0])
    check_batched(switch_fn, (None, 0, 0), np.int32(2), x, w)


def test_vmap_while(rng):
    xs = np.array([0.3, 2.0, 9.0, 12.0, 0.0])    # different trip counts per lane
    ws = rng.uniform(0.1, 1.0, 5)                 # keeps every lane growing: all stop
    check_batched(while_fn, (0, None), xs, np.float64(0.4))
    check_batched(while_fn, (0, 0), xs, ws)
    check_batched(while_fn, (None, 0), np.float64(0.5), ws)

    # unbatched predicate (a fixed trip count) with a batched carry
    def count(v, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, jnp.sin(c[1]) + c[0]),
                              (0, v))
    check_batched(count, (0, None), f64(rng, 4, 2), np.int32(5))
    ints = np.array([0, 3, 1, 6], np.int32)
    check_batched(count, (None, 0), f64(rng, 2), ints)
    check_batched(count, (0, 0), f64(rng, 4, 2), ints)


def test_vmap_scan(rng):
    w, h0, xs = 0.5 * f64(rng, 3, 3), f64(rng, 3), f64(rng, 5, 3)
    wb, h0b, xsb = 0.5 * f64(rng, 4, 3, 3), f64(rng, 4, 3), f64(rng, 4, 5, 3)
    for reverse in (False, True):
        f = lambda w, h, x: rnn(w, h, x, reverse)  # noqa: E731
        check_batched(f, (None, None, 0), w, h0, xsb)   # carry becomes batched in the body
        check_batched(f, (None, 0, None), w, h0b, xs)
        check_batched(f, (0, None, None), wb, h0, xs)   # batched const only
        check_batched(f, (0, 0, 0), wb, h0b, xsb)
    # batch axis not in front
    got = jx.vmap(lambda x: rnn(w, h0, x), in_axes=1)(np.moveaxis(xsb, 0, 1))
    close(got, loop_over(lambda x: rnn(w, h0, x), (0,), xsb))
    p = {"a": f64(rng, 2), "b": f64(rng), "v0": f64(rng, 2)}
    xsp = {"u": f64(rng, 3, 4, 2), "w": f64(rng, 3, 4)}
    check_batched(pytree_scan, (None, 0), p, xsp)


def test_vmap_fori_loop(rng):
    f = lambda x, w: lax.fori_loop(0, 4, lambda i, v: v * w + i, x)  # noqa: E731
    check_batched(f, (0, None), f64(rng, 5, 2), f64(rng, 2))
    check_batched(f, (None, 0), f64(rng, 2), f64(rng, 5, 2))
    # traced bounds lower to while: per-lane trip counts
    g = lambda x, n: lax.fori_loop(0, n, lambda i, v: v * 0.5 + i, x)  # noqa: E731
    check_batched(g, (0, 0), f64(rng, 4), np.array([0, 2, 5, 1], np.int32))


def test_vmap_of_grad_through_scan(rng):
    w, xsb, h0 = 0.5 * f64(rng, 3, 3), f64(rng, 4, 5, 3), f64(rng, 3)
    loss = lambda w, xs: jnp.sum(rnn(w, h0, xs)[1]) + jnp.sum(rnn(w, h0, xs)[0])  # noqa
    check_batched(jx.grad(loss), (None, 0), w, xsb, tol=1e-10)
    check_batched(jx.grad(loss, argnums=1), (None, 0), w, xsb, tol=1e-10)
    # grad of vmap: the batched scan is differentiated
    g = both(jx.grad(lambda w: jnp.sum(jx.vmap(lambda x: loss(w, x))(xsb))), w)
    close(g, sum(jx.grad(loss)(w, x) for x in xsb), 1e-10)


def test_vmap_of_grad_through_cond(rng):
    x, y = f64(rng, 6, 3), f64(rng, 6, 3)
    check_batched(jx.grad(lambda a, b: jnp.sum(cond_fn(a, b)), argnums=(0, 1)), (0, 0), x, y)


# ---------------------------------------------------------------- shared harness cases


def _rnn_case(w, h0, xs, reverse=False):
    h, ys = rnn(w, h0, xs, reverse)
    return jnp.concatenate([h, ys])


def _while_case(x):
    # the trip count depends on x (at most 2 * sum|c| + 1 steps, |c| <= 1 + |x|)
    i, c = lax.while_loop(lambda s: s[0] < jnp.sum(jnp.abs(s[1])) * 2.0,
                          lambda s: (s[0] + 1.0, jnp.sin(s[1]) + x), (0.0, x))
    return c * i


TRANSFORM_CASES = {
    "cond": Case(cond_fn, [(3,), (3,)]),
    # (1,)-shaped index and weight: the harness maps every argument over axis 1 too
    "cond/switch": Case(lambda i, x, w: switch_fn(i[0], x, w[0]), [(1,), (4,), (1,)],
                        int_args=(0,), int_high=4),
    "scan": Case(_rnn_case, [(3, 3), (3,), (4, 3)]),
    "scan/reverse": Case(lambda w, h, x: _rnn_case(w, h, x, True), [(3, 3), (3,), (4, 3)]),
    "scan/fori_loop": Case(lambda x, w: lax.fori_loop(1, 4, lambda i, v: jnp.sin(v * w) * i,
                                                      x), [(2,), (2,)]),
    # reverse mode raises on while_loop (tested above): forward mode and vmap only
    "while": Case(_while_case, [(3,)], diff=False),
}


def _seed(name, k):
    return np.random.default_rng(sum(map(ord, name)) * 11 + k)


@pytest.mark.parametrize("name", sorted(TRANSFORM_CASES))
def test_harness_jvp(name):
    check_jvp(TRANSFORM_CASES[name], _seed(name, 0))


@pytest.mark.parametrize("name", [k for k, c in TRANSFORM_CASES.items() if c.diff])
def test_harness_vjp(name):
    check_vjp(TRANSFORM_CASES[name], _seed(name, 1))


@pytest.mark.parametrize("name", sorted(TRANSFORM_CASES))
def test_harness_vmap(name):
    check_vmap(TRANSFORM_CASES[name], _seed(name, 2))
