"""cond / while / scan and the jx.lax wrappers, against plain Python loops.

Each program runs twice: eagerly on NumPy inputs (bind runs the reference
implementations) and as a traced, verified graph evaluated by jx.eval_graph.
"""
from collections import namedtuple

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax, tree
from jx.errors import JxError, ShapeError, TracerConversionError
from jx.prims.control import cond_p, scan_p, while_p

COVERED = {"cond", "while", "scan"}

DTYPES = [np.float32, np.float64, np.int32]
SHAPES = [(), (3,), (2, 3)]
Pair = namedtuple("Pair", ["a", "b"])


def rand(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-5, 6, size=shape).astype(dtype)


def both(f, *args):
    """[eager result, traced-graph result] of f(*args), as flat leaf lists."""
    eager = tree.tree_leaves(f(*args))
    g = jx.verify(jx.make_graph(f)(*args))
    traced = jx.eval_graph(g, *tree.tree_leaves(args))
    return eager, traced, g


def check(f, args, expected, rtol=1e-6):
    eager, traced, g = both(f, *args)
    want = tree.tree_leaves(expected)
    assert len(eager) == len(traced) == len(want)
    for e, t, w in zip(eager, traced, want):
        w = np.asarray(w)
        for got in (e, t):
            got = np.asarray(got)
            assert got.shape == w.shape and got.dtype == w.dtype, (got, w)
            np.testing.assert_allclose(got, w, rtol=rtol, atol=rtol)
    return g


def cast(x, dtype):
    return np.asarray(x).astype(dtype)


# ---------------------------------------------------------------- cond / switch

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_cond_bool_pred(rng, dtype, shape):
    x, y = rand(rng, shape, dtype), rand(rng, shape, dtype)

    def f(p, x, y):
        return lax.cond(p, lambda a, b: a * 2 + b, lambda a, b: a - b, x, y)
    for p in (True, False):
        want = x * dtype(2) + y if p else x - y
        g = check(f, (np.bool_(p), x, y), cast(want, dtype))
    assert g.op_counts()["cond"] == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_switch_int_index_clamped(rng, dtype):
    x = rand(rng, (4,), dtype)
    branches = [lambda a: a + 1, lambda a: a * 3, lambda a: -a]

    def f(i, x):
        return lax.switch(i, branches, x)
    for i in (-1, 0, 1, 2, 7):
        want = branches[min(max(i, 0), 2)](x)
        check(f, (np.int32(i), x), cast(want, dtype))
    # int64 indices far outside int32 still clamp (no wrap-around when narrowing)
    with jx.enable_x64():       # (with x64 off, int64 data narrows to int32 first, as JAX's)
        check(f, (np.int64(2**40), x), cast(-x, dtype))
    assert lax.switch(9, branches, np.int32(4)) == -4


def test_cond_numeric_pred_and_old_form(rng):
    x = rand(rng, (3,), np.float32)
    for p in (0, 3, -1.5):
        out = lax.cond(np.float32(p), lambda a: a + 1, lambda a: a - 1, x)
        np.testing.assert_allclose(out, x + 1 if p else x - 1)
    # old form: cond(pred, true_operand, true_fun, false_operand, false_fun)
    out = lax.cond(False, x, lambda a: a * 2, np.int32(7), lambda b: (b + 1).astype(np.float32)
                   * np.ones(3, np.float32))
    np.testing.assert_allclose(out, np.full(3, 8.0))


def test_cond_pytrees_and_closures(rng):
    x, y, w = (rand(rng, (2, 3), np.float32) for _ in range(3))

    def f(p, ops, w):
        s = jnp.sum(w)  # captured by one branch only: a const of both branch graphs

        def t(d):
            return Pair(d["x"] * w, (d["y"] + s,))

        def e(d):
            return Pair(d["y"], (d["x"] - 1.0,))
        return lax.cond(p, t, e, {"x": ops[0], "y": ops[1]})
    for p in (True, False):
        want = Pair(x * w, (y + w.sum(),)) if p else Pair(y, (x - 1,))
        eager = f(np.bool_(p), (x, y), w)
        assert isinstance(eager, Pair) and isinstance(eager.b, tuple)
        check(f, (np.bool_(p), (x, y), w), want, rtol=1e-5)
    g = jx.make_graph(f)(jx.bool_[()], (jx.f32[2, 3], jx.f32[2, 3]), jx.f32[2, 3])
    eqn = next(e for e in g.eqns if e.prim is cond_p)
    # index, consts (w, sum(w)), then the two operands
    assert len(eqn.inputs) == 5
    assert all(len(b.inputs) == 4 for b in eqn.params["branches"])


def test_cond_python_if_inside_branch_raises():
    def f(x):
        def bad(a):
            if jnp.sum(a) > 0:
                return a
            return -a
        return lax.cond(True, bad, lambda a: a, x)
    with pytest.raises(TracerConversionError, match="jx.lax.cond"):
        jx.make_graph(f)(jx.f32[3])


# ---------------------------------------------------------------- while / fori

@pytest.mark.parametrize("dtype", DTYPES)
def test_while_loop_pytree_carry(rng, dtype):
    x = np.abs(rand(rng, (3,), dtype)) + dtype(1)
    limit = dtype(50)

    def f(x, limit):
        def cond_fun(c):
            return jnp.sum(c["v"]) < limit  # closes over a traced value: a cond const

        def body_fun(c):
            return {"i": c["i"] + 1, "v": c["v"] * 2 + x}
        return lax.while_loop(cond_fun, body_fun, {"i": 0, "v": x})
    i, v = 0, x.copy()
    while v.sum() < limit:
        i, v = i + 1, v * dtype(2) + x
    i_dt = np.int64 if jx.config.jax_enable_x64 else np.int32   # the Python 0: weak int
    check(f, (x, limit), {"i": i_dt(i), "v": cast(v, dtype)}, rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bounds", [(0, 5), (2, 7), (4, 1)])
def test_fori_loop_static_and_traced_bounds(rng, dtype, bounds):
    lo, hi = bounds
    x = rand(rng, (2, 2), dtype)

    def body(i, c):
        return c * 2 - x + i.astype(dtype)
    want = x.copy()
    for i in range(lo, hi):
        want = want * dtype(2) - x + dtype(i)

    g = check(lambda x: lax.fori_loop(lo, hi, body, x), (x,), cast(want, dtype))
    assert "scan" in g.op_counts() and "while" not in g.op_counts()
    g = check(lambda x, lo, hi: lax.fori_loop(lo, hi, body, x),
              (x, np.int32(lo), np.int32(hi)), cast(want, dtype))
    assert "while" in g.op_counts() and "scan" not in g.op_counts()
    # one traced bound and one Python bound
    g = check(lambda x, hi: lax.fori_loop(lo, hi, body, x), (x, np.int32(hi)),
              cast(want, dtype))
    assert "while" in g.op_counts()


def test_weak_init_takes_body_dtype():
    # a Python-scalar init adopts the dtype the body gives it, as in JAX
    out = lax.while_loop(lambda c: c < 3, lambda c: c + 0.5, 0)
    assert out.dtype == np.float32 and out == 3.0
    c, ys = lax.scan(lambda c, x: (c + x, c), 0.0, np.arange(4.0))
    assert c.dtype == ys.dtype == np.float32 and c == 6.0   # float64 data: float32 (x64 off)
    g = jx.verify(jx.make_graph(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0))(jx.i32[()]))
    assert g.out_avals[0].dtype == np.int32
    assert jx.eval_graph(g, np.int32(5))[0] == 10


# ---------------------------------------------------------------- scan / map

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_matches_python(rng, dtype, reverse):
    n = 5
    xs = {"a": rand(rng, (n, 3), dtype), "b": rand(rng, (n,), dtype)}
    init = (rand(rng, (3,), dtype), np.zeros((), dtype))
    w = rand(rng, (3,), dtype)

    def f(init, xs, w):
        def step(c, x):
            v, t = c
            v = v * 2 - x["a"] + w
            t = t + x["b"]
            return (v, t), {"v": v, "s": jnp.sum(v) * t}
        return lax.scan(step, init, xs, reverse=reverse)
    v, t = init
    vs, ss = [None] * n, [None] * n
    for i in (reversed(range(n)) if reverse else range(n)):
        v = v * dtype(2) - xs["a"][i] + w
        t = t + xs["b"][i]
        vs[i], ss[i] = v, v.sum(dtype=dtype) * t
    want = ((v, t), {"v": np.stack(vs), "s": np.stack(ss).astype(dtype)})
    g = check(f, (init, xs, w), want, rtol=1e-5)
    eqn = next(e for e in g.eqns if e.prim is scan_p)
    assert eqn.params["length"] == n and eqn.params["reverse"] is reverse
    assert eqn.params["num_consts"] == 1 and eqn.params["num_carry"] == 2


def test_scan_without_xs_and_map(rng):
    c, ys = lax.scan(lambda c, _: (c * 2, c), np.float32(1), None, length=4)
    assert c == 16 and ys.dtype == np.float32
    np.testing.assert_array_equal(ys, [1, 2, 4, 8])
    c, ys = lax.scan(lambda c, _: (c, None), np.int32(3), None, length=0)
    assert c == 3 and ys is None
    xs = rand(rng, (4, 2), np.float32)
    check(lambda xs: lax.map(lambda x: jnp.sum(x) * x, xs), (xs,),
          xs.sum(1, keepdims=True) * xs)
    x32 = rand(rng, (6,), np.int32)
    check(lambda xs: lax.map(lambda x: (x + 1, x * x), xs), (x32,), (x32 + 1, x32 * x32))


# ---------------------------------------------------------------- nesting

def test_scan_inside_cond_and_while_inside_scan(rng):
    xs = rand(rng, (4, 3), np.float32)
    k = np.float32(0.5)

    def f(p, xs, k):
        def cumsum_branch(xs):
            return lax.scan(lambda c, x: (c + x * k, c), jnp.zeros(3), xs)[1]
        return lax.cond(p, cumsum_branch, lambda xs: xs * k, xs)
    acc, rows = np.zeros(3, np.float32), []
    for x in xs:
        rows.append(acc)
        acc = acc + x * k
    g = check(f, (np.bool_(True), xs, k), np.stack(rows))
    check(f, (np.bool_(False), xs, k), xs * k)
    assert "scan" in g.op_counts()

    ns = rng.integers(0, 6, size=5).astype(np.int32)

    def h(ns, base):
        # the while body closes over `base`, traced two levels up
        def step(c, n):
            cnt = lax.while_loop(lambda t: t[0] < n, lambda t: (t[0] + 1, t[1] * base),
                                 (0, jnp.ones(2, np.float32)))[1]
            return c + cnt, jnp.max(cnt)
        return lax.scan(step, jnp.zeros(2, np.float32), ns)
    base = np.float32(1.5)
    pw = base ** ns.astype(np.float32)
    g = check(h, (ns, base), (np.stack([pw.sum()] * 2), pw), rtol=1e-5)
    assert g.op_counts()["while"] == 1


# ---------------------------------------------------------------- errors

def test_branch_mismatch_errors():
    with pytest.raises(ShapeError, match=r"true_fun output\[1\] has type f32\[3\] but "
                                         r"false_fun output\[1\] has type f32\[4\]"):
        jx.make_graph(lambda p, x: lax.cond(p, lambda a: (a, a), lambda a: (a, jnp.ones(4)),
                                            x))(jx.bool_[()], jx.f32[3])
    with pytest.raises(ShapeError, match="has type i32.*has type f32"):
        lax.switch(0, [lambda: np.float32(1), lambda: np.int32(1)])
    with pytest.raises(ShapeError, match=r"branch 2 output\['k'\] has type f32\[2\] but "
                                         r"branch 0 output\['k'\] has type f32\[\]"):
        lax.switch(0, [lambda: {"k": 1.0}] * 2 + [lambda: {"k": np.ones(2, np.float32)}])
    with pytest.raises(ShapeError, match="same pytree structure"):
        lax.cond(True, lambda: (1.0, 2.0), lambda: [1.0, 2.0])
    with pytest.raises(ShapeError, match="predicate must be a scalar"):
        lax.cond(np.ones(2, bool), lambda: 1, lambda: 2)
    with pytest.raises(ShapeError, match="index must be an integer scalar"):
        lax.switch(1.0, [lambda: 1, lambda: 2])


def test_carry_type_change_errors():
    with pytest.raises(ShapeError, match=r"component init_val\['w'\] has type f32\[3\] but "
                                         r".* has type f32\[1,3\], so the shapes"):
        lax.while_loop(lambda c: c["i"] < 3,
                       lambda c: {"i": c["i"] + 1, "w": jnp.expand_dims(c["w"], 0)},
                       {"i": 0, "w": np.zeros(3, np.float32)})
    with pytest.raises(ShapeError, match=r"component carry\[1\] has type i32\[\] but .* "
                                         r"has type f32\[\], so the dtypes"):
        lax.scan(lambda c, x: ((c[0], c[1] + x), None), (np.float32(0), np.int32(0)),
                 np.ones(3, np.float32))
    with pytest.raises(ShapeError, match=r"fori_loop .* component init_val\.b has type "
                                         r"i32\[2\] .* f32\[2\]"):
        lax.fori_loop(0, 3, lambda i, p: Pair(p.a, p.b * 0.5 + np.ones(2)),
                      Pair(np.float32(1), np.zeros(2, np.int32)))
    with pytest.raises(ShapeError, match="same pytree structure as the carry init"):
        lax.scan(lambda c, x: ((c, c), x), np.float32(0), np.ones(3, np.float32))
    with pytest.raises(ShapeError, match="cond_fun must return a bool"):
        lax.while_loop(lambda c: c, lambda c: c - 1, np.int32(3))


def test_scan_argument_errors():
    with pytest.raises(ShapeError, match=r"leading axis sizes \[3, 4\]"):
        lax.scan(lambda c, x: (c, x), 0, (np.ones(3), np.ones(4)))
    with pytest.raises(ShapeError, match="length=5"):
        lax.scan(lambda c, x: (c, x), 0, np.ones(3), length=5)
    with pytest.raises(JxError, match="needs length="):
        lax.scan(lambda c, x: (c, x), 0, None)
    with pytest.raises(JxError, match="must return a pair"):
        lax.scan(lambda c, x: c, 0.0, np.ones(3))


def test_shape_rules_reject_bad_graphs():
    f32 = jx.ShapedArray((3,), np.float32)
    g_id = jx.make_graph(lambda a: a)(jx.f32[3])
    g_sum = jx.make_graph(lambda a: jnp.sum(a))(jx.f32[3])
    i32 = jx.ShapedArray((), np.int32)
    with pytest.raises(ShapeError, match="branch 1 output 0 has type f32\\[\\]"):
        cond_p.abstract_eval(i32, f32, branches=(g_id, g_sum))
    with pytest.raises(ShapeError, match="i32\\[\\] scalar"):
        cond_p.abstract_eval(jx.ShapedArray((), np.bool_), f32, branches=(g_id, g_id))
    with pytest.raises(ShapeError, match="bool\\[\\] scalar"):
        while_p.abstract_eval(f32, cond_graph=g_sum, body_graph=g_id, cond_nconsts=0,
                              body_nconsts=0)
    with pytest.raises(ShapeError, match="leading axis of length 4"):
        scan_p.abstract_eval(f32, body=g_id, num_consts=0, num_carry=0, length=4,
                             reverse=False)


# ---------------------------------------------------------------- printing

def test_printed_ir_nests_sub_graphs():
    g = jx.make_graph(lambda p, x: lax.cond(p, lambda a: a + 1.0, lambda a: a * a, x))(
        jx.bool_[()], jx.f32[3])
    text = str(g)
    assert "= cond " in text and "branches[0] = graph(" in text and \
        "branches[1] = graph(" in text
    g = jx.make_graph(lambda x: lax.while_loop(lambda c: c[0] < 4,
                                               lambda c: (c[0] + 1, c[1] * x), (0, x)))(
        jx.f32[2])
    text = str(g)
    assert "while[body_nconsts=1 cond_nconsts=0]" in text
    assert "    body_graph = graph(" in text and "    cond_graph = graph(" in text
    assert text == str(g)  # stable
