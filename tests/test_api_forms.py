"""JAX's API forms around jit: static_argnums/static_argnames by position and by
name, decorator factories, donation, keyword arguments, pmap's keywords;
make_jaxpr, eval_shape, device_put/get, block_until_ready, clear_caches;
lax.Precision and preferred_element_type. Compared with JAX where installed."""
import functools

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax


def scale(x, n, bias=0.0):
    return x * n + bias


def _x(shape=(3,), seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- static arguments

JIT_FORMS = {
    "argnums": lambda f: jx.jit(f, static_argnums=1),
    "argnums_seq": lambda f: jx.jit(f, static_argnums=(1,)),
    "argnames": lambda f: jx.jit(f, static_argnames="n"),
    "argnames_seq": lambda f: jx.jit(f, static_argnames=["n"]),
    "both": lambda f: jx.jit(f, static_argnums=1, static_argnames="n"),
    "factory": lambda f: jx.jit(static_argnums=1)(f),
    "partial": lambda f: functools.partial(jx.jit, static_argnames=("n",))(f),
}


@pytest.mark.parametrize("form", sorted(JIT_FORMS))
def test_static_argument_by_position_and_by_name(form):
    x = _x()
    jitted = JIT_FORMS[form](scale)
    want = x * 3
    np.testing.assert_allclose(jitted(x, 3), want, rtol=1e-6)
    np.testing.assert_allclose(jitted(x, n=3), want, rtol=1e-6)
    n_entries = len(jitted._cache)
    for _ in range(3):                    # the same calls reuse their compiled code
        jitted(x, 3)
        jitted(x, n=3)
    assert len(jitted._cache) == n_entries <= 2
    np.testing.assert_allclose(jitted(x, 4), x * 4, rtol=1e-6)   # a new static value
    assert len(jitted._cache) == n_entries + 1


def test_static_value_controls_python():
    def f(x, n):
        for _ in range(n):                # a Python loop on the static value
            x = x * 2
        return x
    for form in JIT_FORMS.values():
        g = form(f)
        np.testing.assert_allclose(g(np.float32(1), 3), 8.0)
        np.testing.assert_allclose(g(np.float32(1), n=2), 4.0)


def test_negative_static_argnums_count_from_the_call_end():
    g = jx.jit(scale, static_argnums=-1)
    x = _x()
    np.testing.assert_allclose(g(x, 2.0, 5), x * 2 + 5, rtol=1e-6)   # bias is static
    np.testing.assert_allclose(g(x, 3), x * 3, rtol=1e-6)             # n is static
    assert len(g._cache) == 2


def test_keyword_only_static_and_var_keywords():
    def f(x, *, n):
        return x * n
    def h(x, **kw):
        return x * kw["n"]
    x = _x()
    for fn in (f, h):
        g = jx.jit(fn, static_argnames="n")
        np.testing.assert_allclose(g(x, n=2), x * 2, rtol=1e-6)
        np.testing.assert_allclose(g(x, n=3), x * 3, rtol=1e-6)
        assert len(g._cache) == 2


def test_static_argnums_with_var_positional():
    def f(*a):
        return a[0] * a[1]
    g = jx.jit(f, static_argnums=1)
    np.testing.assert_allclose(g(np.float32(2), 3), 6.0)


def test_bad_static_specs_are_refused_at_jit_time():
    with pytest.raises(ValueError, match="takes only 2 positional"):
        jx.jit(lambda x, n: x, static_argnums=2)
    with pytest.raises(ValueError, match=r"does not take.*\['m'\]|\['m'\].*does not take"):
        jx.jit(lambda x, n: x, static_argnames="m")
    def posonly(x, /, n):
        return x
    with pytest.raises(ValueError, match="positional-only"):
        jx.jit(posonly, static_argnames="x")
    with pytest.raises(TypeError, match="static_argnums must be an int"):
        jx.jit(scale, static_argnums="n")
    with pytest.raises(TypeError, match="static_argnames must be a str"):
        jx.jit(scale, static_argnames=1)
    with pytest.raises(TypeError, match="expected a function"):
        jx.jit(3)


def test_unhashable_static_arguments_name_the_fix():
    g = jx.jit(lambda x, n: x * len(n), static_argnums=1)
    with pytest.raises(jx.JxError, match="hashable.*tuple"):
        g(np.float32(1), [1, 2])
    with pytest.raises(jx.JxError, match=r"n=\[1, 2\].*hashable"):
        g(np.float32(1), n=[1, 2])
    np.testing.assert_allclose(g(np.float32(1), (1, 2)), 2.0)


def test_keyword_arguments_are_traced():
    g = jx.jit(scale)
    x = _x()
    np.testing.assert_allclose(g(x, np.float32(2), bias=np.float32(1)), x * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(g(x=x, n=np.float32(2)), x * 2, rtol=1e-6)
    np.testing.assert_allclose(g(x, n=np.float32(3), bias=1.0), x * 3 + 1, rtol=1e-6)
    before = len(g._cache)
    g(x, n=np.float32(5), bias=7.0)               # new values, same types: no compile
    g(x, np.float32(7), bias=np.float32(0))
    assert len(g._cache) == before


def test_keyword_and_static_calls_key_by_dtype_shape_and_mode():
    g = jx.jit(scale, static_argnames="n")
    for dt in (np.float32, np.float16, np.int32):
        for shape in ((3,), (2, 2)):
            x = np.ones(shape, dt)
            for bias in (dt(1), jnp.asarray(np.full(shape, 2, dt))):
                got = g(x, n=2, bias=bias)
                assert got.dtype == dt and got.shape == shape
                np.testing.assert_array_equal(got, x * 2 + np.asarray(bias))
    x = np.ones(3, np.float64)
    assert g(x, n=2, bias=np.float64(1)).dtype == np.float32
    with jx.enable_x64():
        assert g(x, n=2, bias=np.float64(1)).dtype == np.float64
    assert g(x, n=2, bias=np.float64(1)).dtype == np.float32


def test_plain_decorator_and_wraps():
    @jx.jit
    def f(x, y=2.0):
        """doc"""
        return x * y
    assert f.__name__ == "f" and f.__doc__ == "doc"
    np.testing.assert_allclose(f(np.float32(3)), 6.0)
    np.testing.assert_allclose(f(np.float32(3), y=np.float32(4)), 12.0)


def test_donation_and_other_options_are_accepted():
    x = _x()
    for kw in (dict(donate_argnums=0), dict(donate_argnums=(0,)), dict(donate_argnames="x"),
               dict(keep_unused=True), dict(inline=True), dict(device=jx.devices()[0]),
               dict(backend="cpu"), dict(compiler_options={"xla_foo": 1})):
        g = jx.jit(scale, **kw)
        np.testing.assert_allclose(g(x, np.float32(2)), x * 2, rtol=1e-6)
    g = jx.jit(scale, static_argnums=1, donate_argnums=0)
    np.testing.assert_allclose(g(x, 2), x * 2, rtol=1e-6)
    np.testing.assert_allclose(x, _x())      # a donated NumPy argument is left alone


def test_refused_options_say_why():
    with pytest.raises(ValueError, match="both static_argnums and donate_argnums"):
        jx.jit(scale, static_argnums=1, donate_argnums=1)
    with pytest.raises(ValueError, match="both static_argnames and donate_argnames"):
        jx.jit(lambda x, *, n: x, static_argnames="n", donate_argnames="n")
    with pytest.raises(jx.JxError, match="abstracted_axes.*CPU only"):
        jx.jit(scale, abstracted_axes=({0: "n"},), backend="cuda")
    with pytest.raises(jx.JxError, match="in_shardings.*one device"):
        jx.jit(scale, in_shardings=object())
    with pytest.raises(ValueError, match="unknown backend"):
        jx.jit(scale, backend="tpu")
    with pytest.raises(jx.JxError, match="not a device"):
        jx.jit(scale, device="cpu:0")


def test_jitted_inside_a_trace_with_static_keywords():
    inner = jx.jit(scale, static_argnames="n")
    f = jx.grad(lambda x: inner(x, n=3).sum())
    np.testing.assert_allclose(f(_x()), np.full(3, 3.0, np.float32))
    g = jx.vmap(lambda x: inner(x, 2, bias=1.0))
    np.testing.assert_allclose(g(_x((4, 3))), _x((4, 3)) * 2 + 1, rtol=1e-6)


def test_lower_trace_eval_shape_of_a_jitted_function():
    g = jx.jit(scale, static_argnames="n")
    x = _x((2, 3))
    assert "mul" in str(g.lower(x, n=3))
    assert "mul" in str(g.lower(x, 3))
    traced = g.trace(x, n=3)
    assert [tuple(a.shape) for a in traced.out_avals] == [(2, 3)]
    assert g.eval_shape(x, 3) == jx.ShapeDtypeStruct((2, 3), np.float32)
    assert len(g._cache) == 0                 # none of them compiled


def test_disable_jit_and_debug_nans_with_static_keywords():
    g = jx.jit(scale, static_argnames="n")
    x = _x()
    with jx.disable_jit():
        np.testing.assert_allclose(g(x, n=2), x * 2, rtol=1e-6)
    with jx.debug_nans(True):
        np.testing.assert_allclose(g(x, n=2), x * 2, rtol=1e-6)


def test_static_forms_match_jax():
    jax = pytest.importorskip("jax")
    x = _x((2, 3))
    cases = [(dict(static_argnums=1), (x, 3), {}), (dict(static_argnums=1), (x,), {"n": 3}),
             (dict(static_argnames="n"), (x, 3), {}),
             (dict(static_argnames="n"), (x,), {"n": 3, "bias": 1.0}),
             (dict(static_argnums=-1), (x, 2.0, 4), {})]
    for opts, args, kw in cases:
        want = np.asarray(jax.jit(scale, **opts)(*args, **kw))
        got = np.asarray(jx.jit(scale, **opts)(*args, **kw))
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert got.dtype == want.dtype
    for opts in (dict(static_argnums=2), dict(static_argnames="m")):
        with pytest.raises(ValueError):
            jax.jit(lambda x, n: x, **opts)
        with pytest.raises(ValueError):
            jx.jit(lambda x, n: x, **opts)


# ---------------------------------------------------------------- pmap's forms

def test_pmap_keyword_arguments_are_mapped_over_axis_0():
    n = min(2, jx.local_device_count())
    x, y = _x((n, 3)), _x((n, 3), seed=1)
    got = jx.pmap(lambda a, b: a + b)(x, b=y)
    np.testing.assert_allclose(got, x + y, rtol=1e-6)
    f = jx.pmap(lambda a, k, b: a * k + jx.lax.psum(b, "i"), axis_name="i",
                static_broadcasted_argnums=-1)
    np.testing.assert_allclose(f(x, 2, b=y), x * 2 + y.sum(0), rtol=1e-5)
    with pytest.raises(jx.JxError, match="keyword arguments are mapped over axis 0"):
        jx.pmap(lambda a, b: a + b, in_axes=(0, 0))(x, b=y)


def test_pmap_static_and_donate_forms():
    n = min(2, jx.local_device_count())
    x = _x((n, 3))
    for statics in (1, (1,), -1):
        f = jx.pmap(lambda a, k: a * k, static_broadcasted_argnums=statics, donate_argnums=0)
        np.testing.assert_allclose(f(x, 3), x * 3, rtol=1e-6)
        f(x, 3)
        assert len(f._cache) == 1
    f = functools.partial(jx.pmap, axis_name="i")(lambda a: a - jx.lax.pmean(a, "i"))
    np.testing.assert_allclose(f(x), x - x.mean(0), rtol=1e-5, atol=1e-6)


def test_pmap_keywords_match_jax():
    jax = pytest.importorskip("jax")
    x, y = _x((1, 3)), _x((1, 3), seed=1)
    want = jax.pmap(lambda a, b: a * b)(x, b=y)
    np.testing.assert_allclose(jx.pmap(lambda a, b: a * b)(x, b=y), want, rtol=1e-6)


# ---------------------------------------------------------------- make_jaxpr, eval_shape

def test_make_jaxpr_prints_the_graph():
    def f(x, n):
        return jnp.sin(x) * n
    x = _x((2, 3))
    closed = jx.make_jaxpr(f, static_argnums=1)(x, 2)
    text = str(closed)
    assert text == str(jx.make_graph(f, static_argnums=1)(x, 2))
    assert "sin" in text and "mul" in text
    assert closed.jaxpr is closed.graph and closed.consts == []
    assert [str(a) for a in closed.in_avals] == ["f32[2,3]"]
    assert [tuple(a.shape) for a in closed.out_avals] == [(2, 3)]
    assert len(closed.eqns) >= 2
    closed, shape = jx.make_jaxpr(lambda a: (a, a.sum()), return_shape=True)(x)
    assert shape == (jx.ShapeDtypeStruct((2, 3), np.float32),
                     jx.ShapeDtypeStruct((), np.float32))
    with pytest.raises(jx.JxError, match="axis_env"):
        jx.make_jaxpr(f, axis_env=[("i", 2)])


def test_make_jaxpr_matches_jax_avals():
    jax = pytest.importorskip("jax")
    def f(x, y):
        return {"p": x @ y, "s": (x * 2).sum(0)}
    x, y = _x((2, 3)), _x((3, 4))
    want = jax.make_jaxpr(f)(x, y)
    got = jx.make_jaxpr(f)(x, y)
    assert [(tuple(a.shape), np.dtype(a.dtype)) for a in got.in_avals] == \
        [(tuple(a.shape), np.dtype(a.dtype)) for a in want.in_avals]
    assert sorted((tuple(a.shape), np.dtype(a.dtype)) for a in got.out_avals) == \
        sorted((tuple(a.shape), np.dtype(a.dtype)) for a in want.out_avals)


def test_eval_shape_on_pytrees_compiles_nothing(monkeypatch):
    import jx.codegen.cpu.jit as cpu_jit

    def refuse(*a, **k):
        raise AssertionError("eval_shape compiled something")
    monkeypatch.setattr(cpu_jit, "CompiledFunction", refuse)
    calls = []

    def f(params, x, *, scale):
        calls.append(1)
        h = jnp.tanh(x @ params["w"] + params["b"])
        return {"h": h * scale, "n": (h.sum(), jnp.argmax(h, axis=1))}
    params = {"w": jx.f32[4, 5], "b": np.zeros(5, np.float32)}
    out = jx.eval_shape(f, params, _x((2, 4)), scale=2.0)
    S = jx.ShapeDtypeStruct
    assert out == {"h": S((2, 5), np.float32), "n": (S((), np.float32), S((2,), np.int32))}
    assert calls == [1]
    with jx.enable_x64():
        out = jx.eval_shape(lambda a: a * 2, S((3,), np.float64))
    assert out == S((3,), np.float64) and out.ndim == 1 and out.size == 3


def test_eval_shape_takes_duck_typed_specs_and_matches_jax():
    jax = pytest.importorskip("jax")
    def f(a, b):          # operators only: run on JAX's tracers and on jx's
        return (a.sum() + b.sum()).astype(np.int32), (a[:, None] * b[None, :])
    specs = (jax.ShapeDtypeStruct((3,), np.float32), jax.ShapeDtypeStruct((2,), np.float32))
    want = jax.eval_shape(f, *specs)
    got = jx.eval_shape(f, *specs)
    for g, w in zip(jx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert (g.shape, np.dtype(g.dtype)) == (w.shape, np.dtype(w.dtype))


# ---------------------------------------------------------------- devices

def test_device_put_get_block_until_ready():
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    tree_in = {"a": x, "b": [1.0, np.int64(3)], "c": True}
    put = jx.device_put(tree_in)
    assert all(isinstance(leaf, jx.Array) for leaf in jx.tree_util.tree_leaves(put))
    assert put["a"].dtype == np.float32            # 32-bit mode, as JAX
    assert put["b"][0].weak_type and not put["c"].weak_type
    assert x.flags.writeable                        # the caller's buffer is copied
    same = jx.device_put(put["a"], jx.devices()[0])
    assert same is put["a"]
    got = jx.device_get(put)
    assert isinstance(got["a"], np.ndarray) and got["a"].dtype == np.float32
    np.testing.assert_array_equal(got["a"], x)
    assert jx.device_get({"k": 1.5})["k"] == 1.5
    assert jx.block_until_ready(put) is put
    out = jx.jit(lambda a: a * 2)(x.astype(np.float32))
    assert jx.block_until_ready((out, [out])) == (out, [out])
    with pytest.raises(jx.JxError, match="not a CPU device"):
        jx.device_put(x, "gpu")


def test_device_put_matches_jax():
    jax = pytest.importorskip("jax")
    for v in (1.0, 2, True, np.float64(1.5), np.arange(3, dtype=np.int64)):
        want, got = jax.device_put(v), jx.device_put(v)
        assert got.dtype == want.dtype and got.weak_type == want.weak_type, v
        np.testing.assert_array_equal(jx.device_get(got), jax.device_get(want))


def test_default_backend_and_clear_caches():
    assert jx.default_backend() == "cpu"
    g = jx.jit(scale, static_argnums=1)
    x = _x()
    g(x, 2)
    p = jx.pmap(lambda a: a * 2)
    p(_x((1, 3)))
    assert len(g._cache) == 1 and len(p._cache) == 1
    jx.clear_caches()
    assert len(g._cache) == 0 and len(p._cache) == 0
    np.testing.assert_allclose(g(x, 2), x * 2, rtol=1e-6)    # compiles again
    np.testing.assert_allclose(p(_x((1, 3))), _x((1, 3)) * 2, rtol=1e-6)
    assert len(g._cache) == 1


# ---------------------------------------------------------------- Precision, preferred types

def test_precision_enum_and_strings():
    P = lax.Precision
    assert [p.name for p in P] == ["DEFAULT", "HIGH", "HIGHEST"]
    for s, want in (("default", P.DEFAULT), ("fastest", P.DEFAULT), ("bfloat16", P.DEFAULT),
                    ("high", P.HIGH), ("tensorfloat32", P.HIGH), ("highest", P.HIGHEST),
                    ("float32", P.HIGHEST)):
        assert P(s) is want
    assert str(P.HIGH) == "HIGH" and repr(P.HIGH) == "Precision.HIGH"
    with pytest.raises(ValueError):
        P("medium")


def test_precision_matches_jax():
    jax = pytest.importorskip("jax")
    for s in ("default", "high", "highest", "bfloat16", "tensorfloat32", "float32"):
        assert lax.Precision(s).name == jax.lax.Precision(s).name
    a, b = _x((3, 4)), _x((4, 2), seed=1)
    for prec in (None, "highest", lax.Precision.HIGH, ("high", "default"),
                 (lax.Precision.HIGH, lax.Precision.DEFAULT)):
        jprec = prec if not isinstance(prec, lax.Precision) else jax.lax.Precision[prec.name]
        if isinstance(prec, tuple) and isinstance(prec[0], lax.Precision):
            jprec = tuple(jax.lax.Precision[p.name] for p in prec)
        np.testing.assert_allclose(lax.dot(a, b, precision=prec),
                                   jax.lax.dot(a, b, precision=jprec), rtol=1e-5)
    for bad in ("foo", ("high", lax.Precision.HIGH), ("high",)):
        with pytest.raises(ValueError, match="precision must be"):
            lax.dot(a, b, precision=bad)


@pytest.mark.parametrize("shapes", [((4, 5), (5, 3)), ((7,), (7,)), ((2, 6), (6,))])
def test_int8_products_accumulate_in_int32(shapes):
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, shapes[0]).astype(np.int8)
    b = rng.integers(-128, 128, shapes[1]).astype(np.int8)
    want = np.dot(a.astype(np.int32), b.astype(np.int32))
    for fn in (lax.dot, jx.jit(lax.dot, static_argnames=("preferred_element_type",))):
        got = fn(a, b, preferred_element_type=np.int32)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)
    assert lax.dot(a, b).dtype == np.int8          # without it: int8, wrapping, as JAX


def test_preferred_element_type_dot_general_and_float16():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 4)).astype(np.float16)
    b = rng.standard_normal((2, 4, 5)).astype(np.float16)
    dn = (((2,), (1,)), ((0,), (0,)))
    got = lax.dot_general(a, b, dn, preferred_element_type=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5)
    got = lax.dot_general(a, b, dn, "highest", np.float32)     # JAX's positional order
    assert got.dtype == np.float32
    got = jx.jit(lambda p, q: lax.dot_general(p, q, dn, precision=lax.Precision.HIGHEST,
                                              preferred_element_type=np.float32))(a, b)
    assert got.dtype == np.float32
    i = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    got = lax.dot(i, i.T, preferred_element_type=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, (i @ i.T).astype(np.float32))
    with pytest.warns(UserWarning, match="int64"):                      # 32-bit mode
        assert lax.dot(i, i.T, preferred_element_type=np.int64).dtype == np.int32
    got = lax.dot(a[0], b[0], dimension_numbers=(((1,), (0,)), ((), ())))
    np.testing.assert_allclose(got, a[0] @ b[0], rtol=1e-2)


def test_preferred_element_type_matches_jax():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(2)
    for dt, pet in ((np.int8, np.int32), (np.int16, np.int32), (np.float16, np.float32),
                    (np.int8, np.float32), (np.float32, None)):
        a = (rng.standard_normal((3, 4)) * 10).astype(dt)
        b = (rng.standard_normal((4, 2)) * 10).astype(dt)
        want = jax.lax.dot(a, b, preferred_element_type=pet)
        got = lax.dot(a, b, preferred_element_type=pet)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=1e-3)


def test_batch_matmul_matches_numpy_and_jax():
    rng = np.random.default_rng(3)
    for shape_a, shape_b in (((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 2, 3, 4), (2, 2, 4, 1))):
        a = rng.standard_normal(shape_a).astype(np.float32)
        b = rng.standard_normal(shape_b).astype(np.float32)
        np.testing.assert_allclose(lax.batch_matmul(a, b, precision="highest"), a @ b,
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(jx.jit(lax.batch_matmul)(a, b), a @ b, rtol=1e-5, atol=1e-6)
    with pytest.raises(jx.ShapeError, match="batch_matmul"):
        lax.batch_matmul(np.ones((2, 3, 4), np.float32), np.ones((3, 4, 5), np.float32))
    jax = pytest.importorskip("jax")
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(lax.batch_matmul(a, b), jax.lax.batch_matmul(a, b), rtol=1e-5)
