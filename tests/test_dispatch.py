"""jit's specialised call plans (jx/dispatch.py): after the first call with a
signature, calls take a generated straight-line path. Each case checks the plan
path gives what the general path and NumPy give, and that anything outside the
signature (shapes, dtypes, structure, static values, modes, tracers) misses the
plan and goes the general way."""
from __future__ import annotations

import collections
import threading

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.dispatch import MISS

RNG = np.random.default_rng(0)


def _params(n=20, size=4, dtype=np.float32):
    return {f"w{i:02d}": jnp.asarray(RNG.standard_normal(size).astype(dtype)) for i in range(n)}


def _plans(f):
    """The plans a jitted function holds (closure cell named 'plans')."""
    for name, cell in zip(f.__code__.co_freevars, f.__closure__):
        if name == "plans":
            return cell.cell_contents
    raise AssertionError("no plans cell")


def test_pytree_and_python_floats_take_the_plan():
    @jx.jit
    def update(p, lr, mom):
        return {k: v * mom - lr * v for k, v in p.items()}
    p = _params()
    for lr, mom in [(0.1, 0.9), (0.25, 0.5), (1e-3, 0.99)]:
        out = update(p, lr, mom)
        assert isinstance(out, dict) and list(out) == sorted(p)
        for k in p:
            want = np.asarray(p[k]) * np.float32(mom) - np.float32(lr) * np.asarray(p[k])
            np.testing.assert_allclose(np.asarray(out[k]), want, rtol=1e-6)
            assert out[k].dtype == np.float32
    assert len(_plans(update)) == 1
    plan = _plans(update)[0]
    assert plan((p, 0.5, 0.5), {}) is not MISS


def test_plan_misses_on_other_signatures_and_retraces():
    f = jx.jit(lambda d, s: d["a"] * s + d["b"].sum())
    d = {"a": jnp.ones(3), "b": jnp.ones((2, 2))}
    assert float(f(d, 2.0)[0]) == 6.0
    assert float(f(d, 3.0)[0]) == 7.0
    plan = _plans(f)[0]
    d2 = {"a": jnp.ones(4), "b": jnp.ones((2, 2))}
    assert plan((d2, 2.0), {}) is MISS                      # shape
    assert f(d2, 2.0).shape == (4,)
    assert plan(({"a": jnp.ones(3, jnp.int32), "b": jnp.ones((2, 2))}, 2.0), {}) is MISS
    assert plan(({"a": jnp.ones(3)}, 2.0), {}) is MISS       # structure
    assert plan(({"a": jnp.ones(3), "c": jnp.ones((2, 2))}, 2.0), {}) is MISS
    assert plan((d, 2), {}) is MISS                          # an int is another trace
    assert plan((d, np.float32(2.0)), {}) is MISS
    assert plan((d,), {}) is MISS and plan((d, 2.0), {"x": 1}) is MISS
    assert np.asarray(f(d, np.float32(2.5)))[0] == 6.5
    np.testing.assert_array_equal(np.asarray(f(d, 2)), [6.0, 6.0, 6.0])


def test_numpy_inputs_and_views():
    f = jx.jit(lambda xs: [x * 2 for x in xs])
    a = RNG.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(f([a, a])[1]), a * 2)
    np.testing.assert_array_equal(np.asarray(f([a, jnp.asarray(a)])[0]), a * 2)
    view = np.asfortranarray(a)                              # not C-contiguous: misses
    np.testing.assert_array_equal(np.asarray(f([view, a])[0]), a * 2)
    f64 = a.astype(np.float64)                               # 32-bit mode narrows it
    out = f([f64, a])[0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), a * 2)


def test_python_int_range_and_bool_scalars():
    f = jx.jit(lambda x, n, flag: jnp.where(flag, x * n, x))
    x = jnp.arange(3.0)
    np.testing.assert_array_equal(np.asarray(f(x, 3, True)), [0, 3, 6])
    np.testing.assert_array_equal(np.asarray(f(x, -7, False)), [0, 1, 2])
    np.testing.assert_array_equal(np.asarray(f(x, 2**31 - 1, True)),
                                  np.arange(3.0, dtype=np.float32) * np.float32(2**31 - 1))
    with pytest.raises(OverflowError):
        f(x, 2**31, True)


def test_statics_and_keywords():
    @jx.jit
    def g(x, n, *, scale, mode="sum"):
        y = x * scale
        for _ in range(n):
            y = y + 1
        return y.sum() if mode == "sum" else y.max()
    g = jx.jit(g.__wrapped__, static_argnums=1, static_argnames="mode")
    x = jnp.asarray(RNG.standard_normal(5).astype(np.float32))
    for n, mode, scale in [(2, "sum", 2.0), (2, "sum", 3.0), (3, "sum", 2.0), (2, "max", 2.0),
                           (2, "sum", 0.5)]:
        y = np.asarray(x) * np.float32(scale) + n
        want = y.sum() if mode == "sum" else y.max()
        np.testing.assert_allclose(float(g(x, n, scale=scale, mode=mode)), want, rtol=1e-6)
    assert float(g(x, 2, scale=1.0)) == pytest.approx(float(np.asarray(x).sum() + 10), 1e-5)


def test_nested_outputs_namedtuple_and_none():
    State = collections.namedtuple("State", "pos vel")

    @jx.jit
    def step(s, dt):
        return State(s.pos + dt * s.vel, s.vel), None, (s.pos.sum(),)
    s = State(jnp.ones(3), jnp.full(3, 2.0))
    for dt in (0.1, 0.2):
        out, none, (tot,) = step(s, dt)
        assert isinstance(out, State) and none is None
        np.testing.assert_allclose(np.asarray(out.pos), 1 + np.float32(dt) * 2, rtol=1e-6)
        assert float(tot) == 3.0
    (plan,) = _plans(step)                   # a namedtuple state takes the plan
    out, _, _ = plan((s, 0.5), {})
    assert isinstance(out, State) and float(out.pos[0]) == 2.0
    Other = collections.namedtuple("Other", "pos vel")
    assert plan((Other(*s), 0.5), {}) is MISS and plan((tuple(s), 0.5), {}) is MISS


def test_mode_change_misses_the_plan():
    f = jx.jit(lambda d, s: d["x"] * s)
    d = {"x": np.arange(3, dtype=np.float32)}
    assert f(d, 1.5).dtype == np.float32
    assert f(d, 1.5).dtype == np.float32
    with jx.enable_x64():
        assert f({"x": np.arange(3.0)}, 1.5).dtype == np.float64
        assert f(d, 1.5).dtype == np.float32


def test_plans_under_transformations_and_threads():
    f = jx.jit(lambda p, s: (p["a"] ** 2).sum() * s)
    p = {"a": jnp.arange(3.0)}
    assert float(f(p, 2.0)) == 10.0
    g = jx.grad(lambda a: f({"a": a}, 2.0))(jnp.arange(3.0))   # tracers miss the plan
    np.testing.assert_allclose(np.asarray(g), [0.0, 4.0, 8.0])
    errors = []

    def worker(k):
        try:
            for _ in range(50):
                assert float(f({"a": jnp.full(3, float(k))}, 1.0)) == 3.0 * k * k
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_weak_output_of_the_plan():
    f = jx.jit(lambda d, s: (d["x"], s * 2))
    d = {"x": jnp.ones(2)}
    for _ in range(2):
        x, s2 = f(d, 3.0)
        assert s2.weak_type and not x.weak_type and float(s2) == 6.0


def test_weak_and_strong_array_leaves_keep_their_own_plans():
    f = jx.jit(lambda d, s: {k: v * s for k, v in d.items()})
    strong = {"a": jnp.ones(3), "b": jnp.arange(3.0)}
    weak = {"a": jnp.full(3, 1.0), "b": jnp.arange(3.0)}      # full of a Python float: weak
    assert weak["a"].weak_type and not strong["a"].weak_type
    for _ in range(2):
        assert not f(strong, 2.0)["a"].weak_type
        assert f(weak, 2.0)["a"].weak_type
    plans = _plans(f)
    assert len(plans) == 2
    assert plans[0]((weak, 2.0), {}) is MISS and plans[1]((strong, 2.0), {}) is MISS


def test_dicts_in_another_insertion_order_and_grouped_outputs():
    @jx.jit
    def step(p, lr):
        return {k: v - lr * v ** 3 for k, v in p.items()}
    p = _params(12, 5)
    out = step(p, 0.1)
    out2 = step(out, 0.1)                            # plan outputs as plan inputs
    shuffled = {k: out[k] for k in reversed(list(out))}
    out3 = step(shuffled, 0.1)
    for k in p:
        x = np.asarray(p[k])
        y = x - np.float32(0.1) * x ** 3
        z = y - np.float32(0.1) * y ** 3
        np.testing.assert_allclose(np.asarray(out[k]), y, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(out2[k]), z, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(out3[k]), z, rtol=1e-6)
    # outputs sharing one allocation are still separate, read-only arrays
    vals = [np.asarray(out2[k]) for k in sorted(out2)]
    assert len({v.ctypes.data for v in vals}) == len(vals)
    assert not any(v.flags.writeable for v in vals)
    assert len(_plans(step)) == 1


def test_copied_pickled_and_noncontiguous_leaves():
    import copy
    import pickle
    f = jx.jit(lambda d, s: {k: v + s for k, v in d.items()})
    d = {"x": jnp.arange(6.0).reshape(2, 3), "y": jnp.ones((2, 3))}
    out = f(f(d, 1.0), 1.0)                          # carries the plan's tokens
    for again in (pickle.loads(pickle.dumps(out)), copy.deepcopy(out), copy.copy(out)):
        res = f(again, 1.0)
        np.testing.assert_array_equal(np.asarray(res["x"]), np.arange(6.0).reshape(2, 3) + 3)
    t = np.arange(6, dtype=np.float32).reshape(3, 2).T          # a transposed view
    res = f({"x": t, "y": np.ones((2, 3), np.float32)}, 1.0)
    np.testing.assert_array_equal(np.asarray(res["x"]), t + 1)
    assert _plans(f)[0](({"x": t, "y": np.ones((2, 3), np.float32)}, 1.0), {}) is MISS


def test_grouped_outputs_make_their_views_when_first_read():
    """Same-typed outputs are rows of one block; a row's NumPy view is made when
    something reads it (an optimizer loop feeding results back never does), and
    then each is the right row, read-only, surviving the others and the block."""
    import gc
    import pickle

    @jx.jit
    def step(p, lr):
        return {k: v - lr * (v ** 3 - v) for k, v in p.items()}
    p = _params(16, 7)
    want = {k: np.asarray(v) for k, v in p.items()}
    out = p
    for _ in range(4):                               # the plan's outputs as its inputs
        out = step(out, 0.05)
        want = {k: v - np.float32(0.05) * (v ** 3 - v) for k, v in want.items()}
    assert len(_plans(step)) == 1
    lazy = [k for k in out if not _has_view(out[k])]
    assert lazy == sorted(out)                       # none read yet
    keys = sorted(out)
    for k in keys[::-1]:                             # any order
        np.testing.assert_allclose(np.asarray(out[k]), want[k], rtol=1e-5)
        assert _has_view(out[k])
        assert not np.asarray(out[k]).flags.writeable
    one = out[keys[3]]
    del out
    gc.collect()
    np.testing.assert_allclose(np.asarray(one), want[keys[3]], rtol=1e-5)
    fresh = step(p, 0.05)
    r = pickle.loads(pickle.dumps(fresh[keys[5]]))   # pickling reads the value
    x = np.asarray(p[keys[5]])
    np.testing.assert_allclose(np.asarray(r), x - np.float32(0.05) * (x ** 3 - x), rtol=1e-5)
    assert float(jnp.sum(fresh[keys[0]] * 0)) == 0.0 and fresh[keys[1]].shape == (7,)


def _has_view(a) -> bool:
    try:
        object.__getattribute__(a, "_value")
        return True
    except AttributeError:
        return False
