"""cond / switch / while_loop / fori_loop / scan compiled by the CPU backend
(jx.jit) against the eager NumPy reference of the same function: both branch
kinds and clamped indices, data-dependent and zero trip counts, reversed and
pytree scans, closures, nesting, gradients, and the ODE sample."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax, tree

pytest.importorskip("llvmlite")

COVERED = {"cond", "while", "scan"}
DTYPES = ["float32", "float64", "int32", "int64"]


def rand(rng, shape, dt):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    return rng.integers(-20, 20, shape).astype(dt)


def same(got, want):
    """Compiled vs eager: exact for integers and bools, tight for floats."""
    for g, w in zip(tree.tree_leaves(got), tree.tree_leaves(want), strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if g.dtype.kind == "f":
            tol = 2e-5 if g.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, w)


def check(f, *args):
    """jx.jit(f)(*args) equals f(*args); returns the result."""
    want = f(*args)
    same(jx.jit(f)(*args), want)
    return want


# ---------------------------------------------------------------- cond / switch

@pytest.mark.parametrize("dt", DTYPES + ["bool"])
def test_cond_bool_predicate_both_branches(rng, dt):
    def f(p, x, y):
        return lax.cond(p, lambda a, b: (a, jnp.maximum(a, b)), lambda a, b: (b, a), x, y)

    for shape in [(), (5,), (2, 3)]:
        x, y = rand(rng, shape, dt), rand(rng, shape, dt)
        g = jx.jit(f)
        for p in (True, False):
            same(g(np.bool_(p), x, y), f(np.bool_(p), x, y))


def test_cond_numeric_predicate_and_outer_values(rng):
    w = rand(rng, (4,), "float32")

    def f(p, x):
        s = jnp.sum(x)      # a traced outer value captured by both branches (a const)
        return lax.cond(p, lambda v: jnp.sin(v) * s + w, lambda v: v - s, x)

    g = jx.jit(f)
    x = rand(rng, (4,), "float32")
    for p in (np.float32(0.0), np.float32(-2.5), np.int32(3)):
        same(g(p, x), f(p, x))


def test_cond_literal_and_passthrough_outputs(rng):
    def f(p, x):
        return lax.cond(p, lambda v: (v, jnp.float32(1.0)), lambda v: (v * 2, jnp.float32(7.0)),
                        x)

    x = rand(rng, (3,), "float32")
    for p in (True, False):
        check(f, np.bool_(p), x)


@pytest.mark.parametrize("idt", ["int32", "int64", "uint8"])
def test_switch_index_is_clamped(rng, idt):
    fns = [lambda v: v + 1, lambda v: v * v, lambda v: -v, lambda v: v // 3]

    def f(i, x):
        return lax.switch(i, fns, x)

    g = jx.jit(f)
    x = rand(rng, (6,), "int64")
    lo = 0 if idt == "uint8" else -5
    for i in range(lo, 9):
        want = fns[min(max(i, 0), 3)](x)
        np.testing.assert_array_equal(g(np.asarray(i, idt), x), want)
        same(g(np.asarray(i, idt), x), f(np.asarray(i, idt), x))


def test_switch_on_raw_cond_primitive_clamps_i32(rng):
    """The cond primitive itself clamps: an out-of-range i32 index picks an end branch."""
    from jx.prims.control import cond_p

    x = rand(rng, (3,), "float64")
    graphs = tuple(jx.make_graph(fn)(x) for fn in (lambda v: v + 1.0, lambda v: v * 3.0,
                                                    lambda v: v - 10.0))

    def f(i, v):
        from jx.core import bind
        return bind(cond_p, i, v, branches=graphs)[0]

    g = jx.jit(f)
    for i, k in [(-7, 0), (0, 0), (1, 1), (2, 2), (3, 2), (2**31 - 1, 2)]:
        np.testing.assert_allclose(g(np.int32(i), x), [x + 1.0, x * 3.0, x - 10.0][k])


# ---------------------------------------------------------------- while / fori

def collatz_steps(n):
    def body(c):
        k, v = c
        return k + 1, jnp.where(v % 2 == 0, v // 2, 3 * v + 1)
    return lax.while_loop(lambda c: c[1] != 1, body, (jnp.int32(0), n))[0]


def test_while_data_dependent_trip_counts():
    g = jx.jit(collatz_steps)
    for n, steps in [(1, 0), (2, 1), (6, 8), (27, 111), (97, 118)]:
        assert int(g(np.int32(n))) == steps == int(collatz_steps(np.int32(n)))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_while_pytree_carry_with_consts(rng, dt):
    scale = rand(rng, (3,), dt)

    def f(x, limit):
        def cond(c):
            return jnp.sum(jnp.abs(c["x"])) < limit    # limit: a cond const

        def body(c):                                     # scale: a body const
            return {"x": c["x"] * 1.5 + scale, "n": c["n"] + 1, "hist": c["hist"] + c["x"]}
        return lax.while_loop(cond, body, {"x": x, "n": jnp.int32(0), "hist": jnp.zeros_like(x)})

    g = jx.jit(f)
    x = rand(rng, (3,), dt)
    for limit in (0.0, 1.0, 50.0, 1e4):           # 0.0: zero iterations
        lim = np.asarray(limit, dt)
        same(g(x, lim), f(x, lim))
    assert int(g(x, np.asarray(0.0, dt))["n"]) == 0


def test_while_carry_passed_through_and_swapped(rng):
    """Body outputs that are body inputs (unchanged or permuted carries)."""
    def f(a, b, n):
        return lax.while_loop(lambda c: c[2] < n, lambda c: (c[1], c[0], c[2] + 1, c[3]),
                              (a, b, jnp.int32(0), a))

    a, b = rand(rng, (4,), "float32"), rand(rng, (4,), "float32")
    for n in (0, 1, 2, 5):
        check(f, a, b, np.int32(n))


@pytest.mark.parametrize("dt", ["float64", "int32"])
def test_fori_loop_static_bounds(rng, dt):
    def f(x):
        return lax.fori_loop(2, 9, lambda i, v: v * 2 - i, x)

    check(f, rand(rng, (2, 3), dt))
    check(lambda x: lax.fori_loop(5, 5, lambda i, v: v + 1, x), rand(rng, (3,), dt))


def test_fori_loop_traced_bounds(rng):
    def f(lo, hi, x):
        return lax.fori_loop(lo, hi, lambda i, v: v + jnp.sin(v) * i.astype(v.dtype), x)

    g = jx.jit(f)
    x = rand(rng, (5,), "float64")
    for lo, hi in [(0, 6), (3, 4), (4, 4), (7, 2)]:        # also zero and negative spans
        same(g(np.int32(lo), np.int32(hi), x), f(np.int32(lo), np.int32(hi), x))


# ---------------------------------------------------------------- scan

@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dt", DTYPES)
def test_scan_carry_and_stacked_ys(rng, dt, reverse):
    def f(c0, xs):
        def step(c, x):
            nc = c * 2 - x if np.dtype(dt).kind == "i" else jnp.tanh(c) + x
            return nc, (nc + x, c)         # two ys, one of them the incoming carry
        return lax.scan(step, c0, xs, reverse=reverse)

    for length, shape in [(1, ()), (7, (3,)), (4, (2, 5))]:
        check(f, rand(rng, shape, dt), rand(rng, (length,) + shape, dt))


def test_scan_reverse_order_is_observable(rng):
    xs = rand(rng, (6,), "int32")
    fwd = jx.jit(lambda v: lax.scan(lambda c, x: (c * 3 + x, c), np.int32(0), v))
    rev = jx.jit(lambda v: lax.scan(lambda c, x: (c * 3 + x, c), np.int32(0), v,
                                    reverse=True))
    (cf, yf), (cr, yr) = fwd(xs), rev(xs)
    for out, order, (c, ys) in [(fwd, xs, (cf, yf)), (rev, xs[::-1], (cr, yr))]:
        acc, want = 0, []
        for x in order:
            want.append(acc)
            acc = (acc * 3 + int(x)) & 0xFFFFFFFF
        want = np.array(want, np.uint32).astype(np.int32)
        assert int(c) == np.uint32(acc).astype(np.int32)
        np.testing.assert_array_equal(ys, want if out is fwd else want[::-1])


def test_scan_pytree_carry_and_xs(rng):
    def f(w, b, xs, ts):
        def step(c, inp):
            x, t = inp["x"], inp["t"]
            h = jnp.tanh(x @ c["w"] + c["b"])
            return {"w": c["w"] * 0.9, "b": c["b"] + t}, {"h": h, "n": jnp.sum(h > 0)}
        return lax.scan(step, {"w": w, "b": b}, {"x": xs, "t": ts})

    check(f, rand(rng, (3, 4), "float32"), rand(rng, (4,), "float32"),
          rand(rng, (5, 2, 3), "float32"), rand(rng, (5, 4), "float32"))


def test_scan_without_xs_and_empty(rng):
    check(lambda c: lax.scan(lambda c, _: (c * 1.1 + 1, c), c, None, length=6),
          rand(rng, (3,), "float64"))
    # length 0: carry passes through, ys are empty
    check(lambda c, xs: lax.scan(lambda c, x: (c + x, c * x), c, xs),
          rand(rng, (3,), "float32"), np.zeros((0, 3), np.float32))
    # no carry at all (lax.map), and a literal y
    check(lambda xs: lax.map(lambda x: (x * x, jnp.int32(4)), xs), rand(rng, (5, 2), "int64"))


def test_scan_closes_over_outer_values(rng):
    def f(a, bias, xs):
        m = a @ a.T                          # outer traced values become scan consts
        return lax.scan(lambda c, x: (m @ c * 0.1 + x + bias, jnp.dot(c, c)), xs[0], xs)

    check(f, rand(rng, (4, 4), "float64"), rand(rng, (4,), "float64"),
          rand(rng, (6, 4), "float64"))


def test_nested_control_flow(rng):
    def f(xs, n):
        def step(c, x):
            c = lax.cond(jnp.sum(x) > 0, lambda v: v + x, lambda v: v - x * 0.5, c)
            k = lax.while_loop(lambda k: k * k < jnp.abs(jnp.sum(c)) * 10, lambda k: k + 1,
                               jnp.int32(0))
            inner = lax.fori_loop(0, 3, lambda i, v: lax.switch(i, [jnp.sin, jnp.cos,
                                                                      jnp.tanh], v), c)
            return c * 0.5 + inner, (k, lax.scan(lambda d, y: (d + y, d * y), 0.0, x)[1])
        return lax.fori_loop(0, n, lambda i, v: v * 0.9, lax.scan(step, xs[0], xs)[0]), \
            lax.scan(step, xs[0], xs)[1]

    xs = rand(rng, (5, 3), "float32")
    g = jx.jit(f)
    for n in (0, 4):
        same(g(xs, np.int32(n)), f(xs, np.int32(n)))


# ---------------------------------------------------------------- gradients

def test_grad_through_scan_under_jit(rng):
    def loss(w, c0, xs):
        def step(c, x):
            h = jnp.tanh(w @ c + x)
            return h, jnp.sum(h * h)
        c, ys = lax.scan(step, c0, xs)
        return jnp.sum(c) + jnp.sum(ys)

    args = (rand(rng, (4, 4), "float64") * 0.5, rand(rng, (4,), "float64"),
            rand(rng, (7, 4), "float64"))
    g = jx.grad(loss, argnums=(0, 1, 2))
    same(jx.jit(g)(*args), g(*args))


def test_grad_through_fori_loop_under_jit(rng):
    def loss(x, a):
        y = lax.fori_loop(0, 5, lambda i, v: jnp.sin(a * v) + v * 0.5, x)
        return jnp.sum(y * y)

    args = (rand(rng, (3,), "float64"), rand(rng, (3,), "float64"))
    g = jx.grad(loss, argnums=(0, 1))
    same(jx.jit(g)(*args), g(*args))
    same(jx.jit(jx.value_and_grad(loss))(*args), jx.value_and_grad(loss)(*args))


# ---------------------------------------------------------------- samples, failures

def _ode_module():
    path = pathlib.Path(__file__).resolve().parents[1] / "samples" / "ode.py"
    spec = importlib.util.spec_from_file_location("jx_sample_ode", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ode_sample_compiled_vs_eager(rng):
    ode = _ode_module()
    integrate = getattr(ode.integrate, "__wrapped__", ode.integrate)
    a = (rng.standard_normal((16, 16)) / 4).astype(np.float32)
    y0 = rng.standard_normal(16).astype(np.float32)
    want = integrate(a, y0, 0.01, 60)
    got = jx.jit(integrate, static_argnums=(2, 3))(a, y0, 0.01, 60)
    assert got.shape == (16,) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert not np.allclose(got, y0)          # the loop actually ran


def test_out_of_memory_in_loop_body_is_reported(rng):
    """A failed allocation inside a while body comes back as the entry's status."""
    def f(x, n):
        def body(c):
            big = jnp.broadcast_to(c[1], (1 << 30, 1 << 30))    # materialised (dot operand)
            return c[0] + 1, c[1] + jnp.sum(big @ big)
        return lax.while_loop(lambda c: c[0] < n, body, (jnp.int32(0), x))

    g = jx.jit(f)
    x = np.float32(2.0)
    out = g(x, np.int32(0))                     # zero iterations: nothing allocated
    assert int(out[0]) == 0 and float(out[1]) == 2.0
    with pytest.raises(jx.OutOfMemoryError, match=r"status 1.*f32\[1073741824,1073741824\]"):
        g(x, np.int32(1))

    def nested(p, x, n):     # the failure crosses a scan and a cond kernel
        return lax.scan(lambda c, _: (lax.cond(p, lambda v: f(v, n)[1], lambda v: v * 3, c),
                                      c), x, None, length=2)

    h = jx.jit(nested)
    same(h(np.bool_(True), x, np.int32(0)), nested(np.bool_(True), x, np.int32(0)))
    same(h(np.bool_(False), x, np.int32(1)), nested(np.bool_(False), x, np.int32(1)))
    with pytest.raises(MemoryError, match="status 1"):
        h(np.bool_(True), x, np.int32(1))
