"""Windowed reductions: jx.lax.reduce_window and its primitives
(reduce_window_{sum,max,min,prod}, select_and_gather_add, select_and_scatter_add).

The reference here is written from XLA's definition with direct Python loops over
every output element and every window tap (small sizes only): a window's taps in
row-major order land on the padded, base-dilated operand, taps on padding or on
a hole are skipped, and acc = computation(acc, element) from the init value. The
primitives' own NumPy references, the compiled code (jx.jit, the expand pass's
fused loops) and jax.lax.reduce_window (when JAX is installed) are all checked
against it: every combination of window, stride (also larger than the window),
SAME/VALID/SAME_LOWER/explicit (and negative) padding, base and window dilation,
1-D/2-D/3-D windows, odd sizes, float32/float64/int32. Gradients against finite
differences and jax.grad, with ties (JAX's rule: the first maximum in the window
takes the whole cotangent), vmap against a loop, a generic computation and a
pytree of operands.
"""
from __future__ import annotations

import itertools
import math
import operator

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax
from jx.core import bind
from jx.prims import windowed as wp
from transform_harness import Case, case_tests

COVERED = {"reduce_window_sum", "reduce_window_max", "reduce_window_min", "reduce_window_prod",
           "select_and_gather_add", "select_and_scatter_add"}

try:
    import jax
    import jax.numpy as jjnp
except ImportError:          # JAX is the optional oracle
    jax = None


# ------------------------------------------------------------------ the loop reference

def pads_of(shape, window, strides, padding, window_dilation):
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]
    span = [(w - 1) * r + 1 for w, r in zip(window, window_dilation)]
    out = []
    for n, k, s in zip(shape, span, strides):
        if padding == "VALID":
            out.append((0, 0))
            continue
        total = max((math.ceil(n / s) - 1) * s + k - n, 0)
        lo = total // 2 if padding == "SAME" else total - total // 2
        out.append((lo, total - lo))
    return out


def loop_reduce_window(x, init, fn, window, strides, padding, base=None, wdil=None):
    """XLA's reduce_window by its definition, one element and one tap at a time."""
    nd = x.ndim
    base = base or (1,) * nd
    wdil = wdil or (1,) * nd
    pads = pads_of(x.shape, window, strides, padding, wdil)
    padded = [(n - 1) * b + 1 + lo + hi if n else lo + hi
              for n, b, (lo, hi) in zip(x.shape, base, pads)]
    span = [(w - 1) * r + 1 for w, r in zip(window, wdil)]
    out_shape = tuple(max(0, (p - k) // s + 1) if p >= k else 0
                      for p, k, s in zip(padded, span, strides))
    out = np.empty(out_shape, dtype=x.dtype)
    for o in itertools.product(*map(range, out_shape)):
        acc = init
        for t in itertools.product(*map(range, window)):
            idx = []
            for d in range(nd):
                q = o[d] * strides[d] + t[d] * wdil[d] - pads[d][0]  # in the dilated operand
                if q < 0 or q % base[d] or q // base[d] >= x.shape[d]:
                    break
                idx.append(q // base[d])
            else:
                acc = fn(acc, x[tuple(idx)])
        out[o] = acc
    return out


def loop_select(x, t_or_src, select, window, strides, pads, base, wdil, scatter):
    """select_and_gather_add (scatter False) / select_and_scatter_add (True) by their
    definitions: walk each window of the padded operand (padding holds the select's
    identity) keeping the chosen tap while `chosen select candidate` holds."""
    nd = x.ndim
    keep = operator.ge if select == "ge" else operator.le
    ident = -np.inf if select == "ge" else np.inf
    padded = [(n - 1) * b + 1 + lo + hi for n, b, (lo, hi) in zip(x.shape, base, pads)]
    span = [(w - 1) * r + 1 for w, r in zip(window, wdil)]
    out_shape = tuple(max(0, (p - k) // s + 1) if p >= k else 0
                      for p, k, s in zip(padded, span, strides))

    def at(o, t):
        idx = []
        for d in range(nd):
            q = o[d] * strides[d] + t[d] * wdil[d] - pads[d][0]
            if q < 0 or q % base[d] or q // base[d] >= x.shape[d]:
                return None
            idx.append(q // base[d])
        return tuple(idx)

    if scatter:
        res = np.zeros(x.shape, t_or_src.dtype)
    else:
        res = np.zeros(out_shape, t_or_src.dtype)
    for o in itertools.product(*map(range, out_shape)):
        taps = list(itertools.product(*map(range, window)))
        if scatter:            # from the first tap (JAX's select_and_scatter)
            chosen = at(o, taps[0])
            cur = ident if chosen is None else x[chosen]
            rest = taps[1:]
        else:                  # from the identity, whose tangent is 0
            chosen, cur, rest = None, ident, taps
        for t in rest:
            i = at(o, t)
            v = ident if i is None else x[i]
            if not keep(cur, v):
                chosen, cur = i, v
        if scatter:
            if chosen is not None:
                res[chosen] += t_or_src[o]
        else:
            res[o] = 0 if chosen is None else t_or_src[chosen]
    return res


# ------------------------------------------------------------------ configurations

# (shape, window, strides, padding, base_dilation, window_dilation)
CONFIGS = [
    ((7,), (3,), (1,), "VALID", None, None),
    ((7,), (3,), (2,), "SAME", None, None),
    ((8,), (2,), (5,), "VALID", None, None),                      # stride > window
    ((6,), (4,), (3,), "SAME_LOWER", None, None),
    ((5,), (2,), (1,), ((2, 1),), (2,), None),                    # base dilation
    ((9,), (3,), (2,), ((0, 3),), None, (2,)),                    # window dilation
    ((6,), (3,), (1,), ((-1, 2),), None, None),                   # negative padding
    ((3,), (5,), (1,), "VALID", None, None),                      # empty output
    ((5, 7), (2, 3), (1, 2), "SAME", None, None),
    ((5, 7), (3, 2), (3, 3), ((1, 0), (2, 2)), (2, 1), (1, 2)),
    ((4, 6), (2, 2), (2, 2), "VALID", None, None),                # max-pool 2x2
    ((5, 5), (3, 3), (4, 1), "SAME_LOWER", (1, 2), None),
    ((3, 4, 5), (2, 2, 3), (1, 2, 2), "SAME", None, None),        # 3-D
    ((3, 4, 5), (1, 3, 2), (2, 1, 3), ((0, 1), (1, 1), (2, 0)), (1, 1, 2), (1, 2, 1)),
]
OPS = {"add": (lax.add, operator.add), "max": (lax.max, max), "min": (lax.min, min),
       "mul": (lax.mul, operator.mul)}


def identity(op, dtype):
    return wp.identity({"add": "sum", "mul": "prod"}.get(op, op), dtype)[()]


def data(rng, shape, dtype, op="add"):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-3 if op == "mul" else -9, 4 if op == "mul" else 10,
                            shape).astype(dtype)
    if op == "mul":
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _args(cfg):
    shape, window, strides, padding, base, wdil = cfg
    return window, strides, padding, base, wdil


def _ref(x, op, init, cfg):
    window, strides, padding, base, wdil = _args(cfg)
    fn = OPS[op][1]
    return loop_reduce_window(x, np.asarray(init, x.dtype)[()], fn, window, strides,
                              padding, base, wdil)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if np.dtype(dtype) == np.float32 else \
        dict(rtol=1e-12, atol=1e-12)


@pytest.mark.x64
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_eager_and_compiled_match_the_loop_reference(rng, dtype):
    """Every configuration and monoid, eagerly (the primitives' references) and
    compiled (one jx.jit program per op holding every configuration)."""
    for op in OPS:
        xs = [data(rng, cfg[0], dtype, op) for cfg in CONFIGS]
        init = identity(op, dtype)
        wants = [_ref(x, op, init, cfg) for x, cfg in zip(xs, CONFIGS)]

        def many(*xs, op=op, init=init):
            return [lax.reduce_window(x, init, OPS[op][0], *_args(cfg))
                    for x, cfg in zip(xs, CONFIGS)]
        eager = many(*xs)
        compiled = jx.jit(many)(*xs)
        for cfg, want, e, c in zip(CONFIGS, wants, eager, compiled):
            assert e.dtype == c.dtype == np.dtype(dtype)
            np.testing.assert_allclose(np.asarray(e), want, err_msg=f"{op} {cfg}", **_tol(dtype))
            np.testing.assert_allclose(np.asarray(c), want, err_msg=f"{op} {cfg}", **_tol(dtype))


@pytest.mark.x64
def test_non_identity_init_generic_computation_and_long_windows(rng):
    """Inits other than the identity (joined once, padding skipped), a
    non-associative computation folded in XLA's order, windows longer than the
    expand pass unrolls (van Herk, blocks, separable), eager and compiled."""
    x2 = rng.standard_normal((5, 7))
    x1 = rng.standard_normal((230,))
    xl = rng.uniform(0.9, 1.1, (3, 150))
    gen = ((2, 3), (2, 1), ((1, 2), (0, 3)), (1, 2), (2, 1))
    cases = [
        (x2, 1.5, lax.add, operator.add, gen),
        (x2, 0.25, lax.max, max, gen),
        (x2, -0.25, jnp.minimum, min, gen),
        (x2, 2.0, lax.mul, operator.mul, gen),
        (x2, 0.1, lambda a, b: 2 * a + b, lambda a, b: 2 * a + b, gen),
        (x2, 0.0, lambda a, b: jnp.where(a > b, a - b, b), lambda a, b: a - b if a > b else b,
         ((3, 2), (1, 2), "SAME", None, None)),
        (x1, 0.0, lax.add, operator.add, ((100,), (1,), "SAME", None, None)),
        (x1, -np.inf, lax.max, max, ((70,), (3,), ((5, 9),), (1,), (2,))),
        (x1, np.inf, lax.min, min, ((80,), (90,), "VALID", None, None)),
        (xl, 1.0, lax.mul, operator.mul, ((2, 40), (1, 3), "SAME", (2, 1), None)),
        (xl, 0.0, operator.add, operator.add, ((3, 30), (2, 5), "VALID", None, (1, 2))),
    ]
    wants = [loop_reduce_window(x, init, fn, *a) for x, init, _, fn, a in cases]

    def many(*xs):
        return [lax.reduce_window(x, init, comp, *a) for x, (_, init, comp, _, a)
                in zip(xs, cases)]
    xs = [c[0] for c in cases]
    for got in (many(*xs), jx.jit(many)(*xs)):
        for g, w, c in zip(got, wants, cases):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-10,
                                       err_msg=str(c[4]))


def test_pytree_operands_and_variadic_computation(rng):
    """An argmax-style reduction over (value, index) pairs, as JAX users write it."""
    x = rng.standard_normal((9,)).astype(np.float32)
    idx = np.arange(9, dtype=np.int32)

    def pick(a, b):
        take = b[0] > a[0]
        return (jnp.where(take, b[0], a[0]), jnp.where(take, b[1], a[1]))

    def f(x, i):
        return lax.reduce_window((x, i), (-np.inf, np.int32(-1)), pick, (3,), (2,), "SAME")
    v, i = f(x, idx)
    vc, ic = jx.jit(f)(x, idx)
    wv = loop_reduce_window(x, -np.inf, max, (3,), (2,), "SAME")
    np.testing.assert_allclose(v, wv)
    np.testing.assert_allclose(vc, wv)
    np.testing.assert_array_equal(x[np.asarray(i)], wv)
    np.testing.assert_array_equal(i, ic)
    d = lax.reduce_window({"a": x}, {"a": 0.0}, lambda p, q: {"a": p["a"] + q["a"]},
                          (2,), (1,), "VALID")
    np.testing.assert_allclose(d["a"], x[:-1] + x[1:], rtol=1e-6)


@pytest.mark.skipif(jax is None, reason="JAX (the oracle) is not installed")
@pytest.mark.x64
def test_against_jax_reduce_window(rng):
    jops = {"add": jax.lax.add, "max": jax.lax.max, "min": jax.lax.min, "mul": jax.lax.mul}
    with _x64(jax):
        for cfg in CONFIGS:
            for op in OPS:
                for init in (identity(op, np.float64), 0.75):
                    x = data(rng, cfg[0], np.float64, op)
                    got = lax.reduce_window(x, init, OPS[op][0], *_args(cfg))
                    want = jax.lax.reduce_window(jjnp.asarray(x), init, jops[op], *_args(cfg))
                    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12,
                                               atol=1e-12, err_msg=f"{op} {init} {cfg}")


class _x64:
    def __init__(self, jax):
        self.jax = jax

    def __enter__(self):
        self.old = self.jax.config.jax_enable_x64
        self.jax.config.update("jax_enable_x64", True)

    def __exit__(self, *a):
        self.jax.config.update("jax_enable_x64", self.old)


# ------------------------------------------------------------------ the select primitives

SELECT_CONFIGS = [
    ((7,), (3,), (2,), ((1, 1),), (1,), (1,)),
    ((6, 5), (2, 3), (2, 1), ((0, 1), (1, 1)), (1, 2), (2, 1)),
    ((4, 6), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((5,), (2,), (3,), ((-1, 2),), (1,), (1,)),
]


@pytest.mark.x64
@pytest.mark.parametrize("select", ["ge", "le"])
def test_select_primitives_match_the_loop_reference(rng, select):
    """Ties (rounded data) and padding; eager and compiled, one program."""
    xs, ts, ss = [], [], []
    for shape, window, strides, pads, base, wdil in SELECT_CONFIGS:
        x = np.round(rng.standard_normal(shape))
        params = dict(window_dimensions=window, window_strides=strides, padding=pads,
                      base_dilation=base, window_dilation=wdil)
        out = wp.window_shape(shape, window, strides, pads, base, wdil)
        xs.append((x, params))
        ts.append(rng.standard_normal(shape))
        ss.append(rng.standard_normal(out))

    def both(*args):
        n = len(xs)
        res = []
        for k, (_, params) in enumerate(xs):
            x, t, s = args[k], args[n + k], args[2 * n + k]
            res.append(bind(wp.select_and_gather_add, t, x, select=select, **params)[0])
            res.append(bind(wp.select_and_scatter_add, s, x, select=select, **params)[0])
        return res
    flat = [x for x, _ in xs] + ts + ss
    for got in (both(*flat), jx.jit(both)(*flat)):
        for k, (x, params) in enumerate(xs):
            p = (params["window_dimensions"], params["window_strides"], params["padding"],
                 params["base_dilation"], params["window_dilation"])
            np.testing.assert_allclose(got[2 * k], loop_select(x, ts[k], select, *p, False),
                                       rtol=1e-12, err_msg=str(p))
            np.testing.assert_allclose(got[2 * k + 1], loop_select(x, ss[k], select, *p, True),
                                       rtol=1e-12, err_msg=str(p))


# ------------------------------------------------------------------ derivatives

def _pool(x, op, cfg):
    init = -np.inf if op == "max" else np.inf if op == "min" else 0.0 if op == "add" else 1.0
    return lax.reduce_window(x, init, OPS[op][0], *_args(cfg))


GRAD_CONFIGS = [CONFIGS[i] for i in (1, 2, 4, 5, 8, 9, 10, 12)]


@pytest.mark.x64
def test_gradients_match_finite_differences(rng):
    from transform_harness import fd_grad
    for cfg in GRAD_CONFIGS:
        for op in OPS:
            x = data(rng, cfg[0], np.float64, op)
            w = rng.standard_normal(np.shape(_pool(x, op, cfg)))

            def f(v):
                out = _pool(v, op, cfg)       # (windows of padding alone are +-inf)
                return jnp.sum(jnp.where(jnp.isfinite(out), out, 0) * w)
            g = jx.grad(f)(x)
            np.testing.assert_allclose(g, fd_grad(lambda v: float(f(v)), x), rtol=1e-6,
                                       atol=1e-7, err_msg=f"{op} {cfg}")


@pytest.mark.skipif(jax is None, reason="JAX (the oracle) is not installed")
@pytest.mark.x64
def test_maxpool_gradient_with_ties_matches_jax_exactly(rng):
    """All-equal and repeated values: the whole cotangent goes to the first maximum
    of each window (row-major), as jax.grad of reduce_window max."""
    jops = {"max": jax.lax.max, "min": jax.lax.min, "add": jax.lax.add}
    with _x64(jax):
        for cfg in GRAD_CONFIGS:
            shape = cfg[0]
            for x in (np.ones(shape), np.round(rng.standard_normal(shape)),
                      np.floor(rng.uniform(0, 2, shape))):
                for op in ("max", "min", "add"):
                    if op != "add" and cfg[5] and max(cfg[5]) > 1:
                        continue        # (JAX has no max-pool vjp with window dilation)
                    init = {"max": -np.inf, "min": np.inf, "add": 0.0}[op]
                    # integer weights: sums exact in any order, so equality tests the rule
                    w = rng.integers(-3, 4, np.shape(_pool(x, op, cfg))).astype(np.float64)

                    def f(v):
                        out = _pool(v, op, cfg)
                        return jnp.sum(jnp.where(jnp.isfinite(out), out, 0) * w)

                    def jf(v):
                        out = jax.lax.reduce_window(v, init, jops[op], *_args(cfg))
                        return jjnp.sum(jjnp.where(jjnp.isfinite(out), out, 0) * w)
                    want = jax.grad(jf)(x)
                    if op == "add":          # (sums in another order)
                        np.testing.assert_allclose(jx.grad(f)(x), want, rtol=1e-12)
                    else:                    # the tie rule: exactly JAX's
                        np.testing.assert_array_equal(jx.grad(f)(x), want, err_msg=f"{op} {cfg}")
                    t = rng.standard_normal(shape)
                    np.testing.assert_allclose(
                        jx.jvp(lambda v: _pool(v, op, cfg), (x,), (t,))[1],
                        jax.jvp(lambda v: jax.lax.reduce_window(v, init, jops[op],
                                                                *_args(cfg)), (x,), (t,))[1],
                        rtol=1e-12, atol=1e-12)


@pytest.mark.x64
def test_compiled_gradients_match_eager(rng):
    """One jitted program: max-pool, avg-pool and product gradients (the expand pass's
    select-and-scatter, transposed sum and product rule) with ties."""
    cfgs = [CONFIGS[10], CONFIGS[9], CONFIGS[12], CONFIGS[5]]
    xs = [np.round(rng.standard_normal(c[0]) * 2) / 2 for c in cfgs]
    ws = [rng.standard_normal(np.shape(_pool(x, "add", c))) for x, c in zip(xs, cfgs)]

    def term(x, op, c, w):
        out = _pool(x, op, c)
        return jnp.sum(jnp.where(jnp.isfinite(out), out, 0) * w)

    def loss(*xs):
        return sum(term(x, op, c, w) for x, c, w in zip(xs, cfgs, ws)
                   for op in ("max", "add", "min", "mul"))
    g_eager = jx.grad(loss, argnums=tuple(range(len(xs))))(*xs)
    g_jit = jx.jit(jx.grad(loss, argnums=tuple(range(len(xs)))))(*xs)
    for a, b in zip(g_eager, g_jit):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


def test_vmap_matches_a_loop(rng):
    x = rng.standard_normal((3, 5, 6)).astype(np.float32)
    for op in ("max", "add"):
        cfg = ((5, 6), (2, 3), (2, 1), "SAME", None, None)
        for axis in (0, 1, 2):
            xb = np.moveaxis(x, 0, axis)
            got = jx.vmap(lambda v: _pool(v, op, cfg), in_axes=axis)(xb)
            want = np.stack([np.asarray(_pool(x[i], op, cfg)) for i in range(3)])
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# the harness's checks on every primitive: jvp vs finite differences, vjp vs jvp,
# vmap vs a loop (each primitive bound directly, so its own rules are exercised)
_P2 = dict(window_dimensions=(2, 3), window_strides=(2, 1), padding=((1, 0), (1, 2)),
           base_dilation=(1, 2), window_dilation=(2, 1))


def _prim(prim, **extra):
    return lambda *a: bind(prim, *a, **_P2, **extra)[0]


_OUT = wp.window_shape((5, 4), *(_P2[k] for k in ("window_dimensions", "window_strides",
                                                   "padding", "base_dilation",
                                                   "window_dilation")))
TRANSFORM_CASES = {
    "reduce_window_sum": Case(_prim(wp.reduce_window_sum), [(5, 4)]),
    "reduce_window_max": Case(_prim(wp.reduce_window_max), [(5, 4)]),
    "reduce_window_min": Case(_prim(wp.reduce_window_min), [(5, 4)]),
    "reduce_window_prod": Case(_prim(wp.reduce_window_prod), [(5, 4)], domain="pos"),
    "select_and_gather_add": Case(_prim(wp.select_and_gather_add, select="ge"),
                                  [(5, 4), (5, 4)]),
    "select_and_scatter_add": Case(_prim(wp.select_and_scatter_add, select="le"),
                                   [_OUT, (5, 4)]),
}
test_jvp_matches_finite_differences, test_vjp_consistent_with_jvp_and_fd, \
    test_vmap_matches_loop = case_tests(TRANSFORM_CASES)
for _t in (test_jvp_matches_finite_differences, test_vjp_consistent_with_jvp_and_fd,
           test_vmap_matches_loop):
    _t.pytestmark = [*getattr(_t, "pytestmark", []), pytest.mark.x64]


# ------------------------------------------------------------------ API and errors

def test_shape_tuple_and_errors():
    assert lax.reduce_window_shape_tuple((5, 7), (2, 3), (1, 2), ((0, 0), (1, 1))) == (4, 4)
    assert lax.reduce_window_shape_tuple((5,), (2,), (1,), ((0, 0),), (2,), (2,)) == (7,)
    x = np.zeros((4, 4), np.float32)
    with pytest.raises(TypeError, match="window_dimensions"):
        lax.reduce_window(x, 0.0, lax.add, (2,), (1,))
    with pytest.raises(TypeError, match="window_strides"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1,))
    with pytest.raises(TypeError, match="positive"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (0, 1))
    with pytest.raises(TypeError, match="positive"):
        lax.reduce_window(x, 0.0, lax.add, (0, 2), (1, 1))
    with pytest.raises(TypeError, match="padding"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), ((1, 1),))
    with pytest.raises(RuntimeError, match="padding"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "FULL")
    with pytest.raises(TypeError, match="dtype"):
        lax.reduce_window(x.astype(np.int32), -np.inf, lax.max, (2, 2), (1, 1))
    with pytest.raises(TypeError, match="dtype"):
        lax.reduce_window(x, np.int32(0), lax.add, (2, 2), (1, 1))
    with pytest.raises(ValueError, match="tree structure"):
        lax.reduce_window((x, x), 0.0, lax.add, (2, 2), (1, 1))
    with pytest.raises(TypeError, match="elementwise"):
        lax.reduce_window(x, 0.0, lambda a, b: jnp.sort(jnp.stack([a, b]))[0], (2, 2), (1, 1))
    # as JAX calls it, on scalars: jnp.sum of a scalar is that scalar
    np.testing.assert_allclose(
        lax.reduce_window(x + 1, 0.0, lambda a, b: jnp.sum(a) + b, (2, 2), (1, 1)),
        np.full((3, 3), 4.0))
