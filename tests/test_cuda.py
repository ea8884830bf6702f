"""The CUDA backend. Everywhere: PTX generation for every primitive of the
transformation tables (and ptxas accepting it where installed), golden kernel
counts and launch plans, deterministic artifacts, and the runtime's error when
CuPy or a GPU is missing. With CuPy and a GPU: every primitive through
jx.jit(backend="cuda") against the NumPy reference, dtype/shape sweeps, the
samples (and their grad/vmap versions), and artifacts loaded with the runtime."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import jx
import jx.lax as lax
import jx.numpy as jnp

pytest.importorskip("llvmlite")

import test_cpu_backend as cpu_tests  # noqa: E402
from transform_harness import make_args  # noqa: E402

from jx.codegen.cuda.kernels import GpuModule  # noqa: E402
from jx.codegen.cuda.plan import ConstTable, plan_program  # noqa: E402
from jx.codegen.cuda.target import assemble, compile_ptx, find_ptxas  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
sys.path.insert(0, str(SAMPLES))
import attention  # noqa: E402
import elementwise  # noqa: E402
import mlp  # noqa: E402
import ode  # noqa: E402
import train  # noqa: E402

CASES = cpu_tests.CASES


def _gpu_reason():
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'jx[cuda]')"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as e:  # noqa: BLE001
        return f"no usable CUDA device ({e})"
    return None


GPU_REASON = _gpu_reason()
needs_gpu = pytest.mark.skipif(GPU_REASON is not None, reason=GPU_REASON or "")


def _plan(f, *specs, gm=None):
    gm = gm or GpuModule("t")
    return gm, plan_program(gm, jx.jit(f).lower(*specs), ConstTable())


# ---------------------------------------------------------------- PTX everywhere

def test_every_table_primitive_generates_ptx():
    """All table rows in one module: LLVM verifies it, NVPTX emits PTX, ptxas
    (when installed) assembles it for sm_80 and sm_90."""
    gm = GpuModule("all")
    for name in sorted(CASES):
        case = CASES[name]
        args = make_args(case, np.random.default_rng(0))
        specs = [jx.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in args]
        _plan(case.fn, *specs, gm=gm)
    for dt in ("float32", "float64", "int32", "int64", "bool", "float16", "uint8"):
        spec = jx.ShapeDtypeStruct((5, 37), dt)
        _plan(lambda x: (jnp.max(x, axis=1), x == x[::-1], jnp.sum(x, axis=0)), spec, gm=gm)
    ptx = compile_ptx(str(gm.module), "sm_80")
    assert ptx.count(".entry ") == gm.count and ".target sm_80" in ptx
    if find_ptxas():
        assert assemble(ptx, "sm_80")
        assert assemble(compile_ptx(str(gm.module), "sm_90"), "sm_90")


def _nbody_accelerations(pos, mass):
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx, dy, dz = x.T - x, y.T - y, z.T - z
    inv_r3 = (dx ** 2 + dy ** 2 + dz ** 2 + 1e-2) ** -1.5
    return jnp.hstack([(dx * inv_r3) @ mass, (dy * inv_r3) @ mass, (dz * inv_r3) @ mass])


@pytest.mark.parametrize("fn,specs", [
    (jx.grad(mlp.loss), (mlp.PARAMS, jx.f32[16, 784], jx.i32[16])),
    (_nbody_accelerations, (jx.f32[64, 3], jx.f32[64, 1])),
    (lambda x: (jnp.sum(jnp.exp(x), 0), jnp.max(jnp.exp(x), 0), jnp.min(x * x, 0)),
     (jx.f32[33, 7],))], ids=["mlp_grad", "nbody", "three_reductions"])
def test_launch_plan_writes_every_value_it_reads(fn, specs):
    """Merged sibling reductions (one CPU kernel, several outputs) run on the GPU as
    one reduction each: every value a step reads is an input, a constant or written
    by an earlier step, and every output is written."""
    from jx.codegen.cuda.plan import program_units
    from jx.ir import Var
    program = jx.jit(fn).lower(*specs)
    assert any(k.siblings for k in program.kernels)       # the case this guards
    written = {id(v) for v in program.graph.inputs}
    for u in program_units(GpuModule("t"), program):
        for a in u.inputs:
            assert not isinstance(a, Var) or id(a) in written, (u.step, a)
        written |= {id(v) for v in u.outputs}
    assert all(id(v) in written for v in program.graph.outputs if isinstance(v, Var))


def test_golden_launch_plans():
    _, p = _plan(attention.softmax, jx.f32[8, 512, 512])
    assert [(s["op"], s["grid"], s["block"]) for s in p["steps"]] == [("launch", 4096, 128)]
    assert "rows_reduce_max_reduce_sum" in p["steps"][0]["kernel"]
    _, p = _plan(attention.layernorm, jx.f32[512, 512], jx.f32[512], jx.f32[512])
    assert len(p["steps"]) == 1 and p["steps"][0]["grid"] == 512
    _, p = _plan(elementwise.sum_of_squares, jx.f32[4096, 4096])
    assert [s["grid"] for s in p["steps"]] == [1024, 1]        # partials, then one block
    gm, p = _plan(elementwise.chain, jx.f32[4096, 4096])
    assert len(p["steps"]) == 1 and p["workspace"] == 0
    ptx = compile_ptx(str(gm.module), "sm_80")
    assert "ld.global.nc.v4" in ptx and "st.global.v4" in ptx      # vectorised access
    _, p = _plan(mlp.predict, *[v for v in _mlp_specs()])
    assert [s["op"] for s in p["steps"]].count("matmul") == 3


def _mlp_specs(batch=128):
    params = {k: v for k, v in mlp.PARAMS.items()}
    return params, jx.f32[batch, 784]


def test_cuda_artifact_is_deterministic(tmp_path):
    from jx.cli.compile import compile_model
    outs = []
    for d in ("a", "b"):
        res = compile_model(str(SAMPLES / "attention.py"), str(tmp_path / d), (), (),
                            "cuda", None, None, "sm_80")
        outs.append(res)
    a, b = (Path(r["library"]) for r in outs)
    assert a.read_bytes() == b.read_bytes()
    assert Path(outs[0]["ptx"]).read_bytes() == Path(outs[1]["ptx"]).read_bytes()
    m = json.loads(a.read_text())
    assert m["target_kind"] == "cuda" and m["cpu"] == "sm_80"
    assert [e["name"] for e in m["entries"]] == ["softmax", "layernorm", "attention_block"]
    assert all(e["plan"]["steps"] for e in m["entries"])
    assert (outs[0]["cubin"] is not None) == (find_ptxas() is not None)


def test_bad_arch_and_tampered_artifact(tmp_path):
    from jx.cli.compile import compile_model
    from jx.cli.errors import CliError
    with pytest.raises(CliError, match="sm_80"):
        compile_model(str(SAMPLES / "elementwise.py"), str(tmp_path), ("chain",), (), "cuda",
                      None, None, "compute_xx")
    res = compile_model(str(SAMPLES / "elementwise.py"), str(tmp_path), ("chain",), (),
                        "cuda", None, None, "sm_80")
    import jx.runtime as rt
    ptx = Path(res["ptx"])
    ptx.write_text(ptx.read_text() + "\n// edited\n")
    with pytest.raises(rt.HashMismatchError, match="modified"):
        rt.load(res["library"])


@pytest.mark.skipif(GPU_REASON is None, reason="CuPy and a GPU are present")
def test_runtime_without_gpu_says_what_to_do(tmp_path):
    from jx.cli.compile import compile_model
    import jx.runtime as rt
    res = compile_model(str(SAMPLES / "elementwise.py"), str(tmp_path), ("chain",), (), "cuda",
                        None, None, None)
    with pytest.raises(rt.ArtifactLoadError, match="CuPy|GPU"):
        rt.load(res["library"])
    with pytest.raises(rt.ArtifactLoadError, match="CuPy|GPU"):
        jx.jit(lambda x: x + 1.0, backend="cuda")(np.ones(3, np.float32))


# ---------------------------------------------------------------- on the GPU

def _host(tree):
    import cupy
    return [cupy.asnumpy(x) if isinstance(x, cupy.ndarray) else np.asarray(x)
            for x in jx.tree_util.tree_leaves(tree)]


def _close(got, want, rtol=None, atol=None, name=""):
    for g, w in zip(_host(got), [np.asarray(x) for x in jx.tree_util.tree_leaves(want)]):
        assert g.shape == w.shape and g.dtype == w.dtype, (name, g.dtype, w.dtype, g.shape)
        if g.dtype.kind == "f":
            tol = rtol or (2e-6 if g.dtype == np.float32 else 1e-12)
            if name in cpu_tests.TRANSCENDENTAL:
                tol *= 8
            np.testing.assert_allclose(g, w, rtol=tol, atol=atol or tol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


@needs_gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_primitive_on_gpu(name):
    case = CASES[name]
    args = make_args(case, np.random.default_rng(abs(hash(name)) % 2**32))
    _close(jx.jit(case.fn, backend="cuda")(*args), case.fn(*args), name=name)


@needs_gpu
@pytest.mark.parametrize("dt", ["float32", "float64", "int32", "int64", "float16", "uint8"])
def test_binary_dtype_shape_sweep_on_gpu(dt):
    rng = np.random.default_rng(1)
    for op, fn in sorted(cpu_tests.BINARY.items()):
        f = jx.jit(fn, backend="cuda")
        for shape in cpu_tests.SHAPES + [(1000, 37), (4099,)]:
            a, b = cpu_tests._rand(rng, shape, dt), cpu_tests._rand(rng, shape, dt)
            if op in ("div", "rem") and np.dtype(dt).kind != "f":
                b = np.where(b == 0, 7, b).astype(dt)
            _close(f(a, b), fn(a, b), rtol=1e-3 if dt == "float16" else None, name=op)


@needs_gpu
@pytest.mark.x64       # float64 data compared at float64 tolerances
@pytest.mark.parametrize("shape,axes", [((4, 5), (0,)), ((4, 5), (1,)), ((3, 4, 5), (0, 2)),
                                        ((7,), (0,)), ((0, 3), (0,)), ((3, 0), (1,)),
                                        ((1, 1023), (1,)), ((37, 333), (1,)),
                                        ((70001,), (0,)), ((300, 300), (0, 1))])
@pytest.mark.parametrize("red", ["sum", "max", "min", "prod", "argmax"])
def test_reductions_on_gpu(shape, axes, red):
    rng = np.random.default_rng(4)
    f = getattr(jnp, red)
    if red == "argmax":
        if len(axes) > 1 or 0 in shape:
            return
        g = lambda v: f(v, axis=axes[0])  # noqa: E731
    else:
        g = lambda v: f(v, axis=axes)  # noqa: E731
    for dt in ("float32", "float64", "int32", "bool"):
        if dt == "bool" and red in ("sum", "prod"):
            continue
        x = cpu_tests._rand(rng, shape, dt) if red != "prod" else \
            rng.uniform(0.9, 1.1, shape).astype(dt) if dt != "int32" else \
            rng.integers(-1, 2, shape).astype(dt)
        if red in ("max", "min") and x.size == 0:      # no identity: JAX's error
            with pytest.raises(jx.errors.EmptyReductionError):
                jx.jit(g, backend="cuda")(x)
            continue
        got = _host(jx.jit(g, backend="cuda")(x))[0]
        want = np.asarray(g(x))
        if np.dtype(dt).kind == "f":
            # (a float32 product can underflow to a denormal in one order and 0 in another)
            np.testing.assert_allclose(got, want, rtol=2e-5 if dt == "float32" else 1e-11,
                                       atol=1e-30 if red == "prod" else 0)
        else:
            np.testing.assert_array_equal(got, want)


@needs_gpu
def test_row_groups_and_odd_sizes_on_gpu():
    rng = np.random.default_rng(8)
    for shape in [(3, 5), (7, 1000), (2, 3, 4097), (1, 1)]:
        x = rng.standard_normal(shape).astype(np.float32)
        _close(jx.jit(attention.softmax, backend="cuda")(x), attention.softmax(x), rtol=1e-5)
        g, bt = rng.standard_normal(shape[-1:]).astype(np.float32), np.float32(0.5)
        ln = lambda v: attention.layernorm(v, g, bt)  # noqa: E731
        _close(jx.jit(ln, backend="cuda")(x), ln(x), rtol=1e-4, atol=1e-5)


@needs_gpu
def test_cupy_inputs_views_and_literal_outputs():
    import cupy
    rng = np.random.default_rng(6)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    f = jx.jit(lambda v: (v * 2.0, v, 3.0, v), backend="cuda")
    dev = cupy.asarray(x)
    for arg, host in ((dev[:, ::2], x[:, ::2]), (dev.ravel()[1:33].reshape(4, 8)[:, :4],
                                                 x.ravel()[1:33].reshape(4, 8)[:, :4])):
        out = f(arg)
        assert all(isinstance(o, cupy.ndarray) for o in out)
        _close(out[0], host * 2)
        _close(out[1], host)
        assert float(out[2]) == 3.0
    chain = jx.jit(elementwise.chain, backend="cuda")
    big = rng.standard_normal((300, 1001)).astype(np.float32)
    _close(chain(cupy.asarray(big)), elementwise.chain(big), rtol=1e-5, atol=1e-6)


@needs_gpu
def test_samples_on_gpu():
    import test_samples_compiled as s
    p, x, y = s._mlp_params(), s.f32(16, 784), s.RNG.integers(0, 10, 16).astype(np.int32)
    _close(jx.jit(mlp.predict, backend="cuda")(p, x), mlp.predict(p, x), 1e-4, 1e-5)
    _close(jx.jit(mlp.loss, backend="cuda")(p, x, y), mlp.loss(p, x, y), 1e-4, 1e-5)
    _close(jx.jit(jx.grad(mlp.loss), backend="cuda")(p, x, y), jx.grad(mlp.loss)(p, x, y),
           1e-3, 1e-5)
    _close(jx.jit(train.sgd_step, backend="cuda")(p, x, y), train.sgd_step(p, x, y),
           1e-3, 1e-5)
    w, b, xs = s.f32(64), np.float32(0.1), s.f32(32, 64)
    ys = (s.RNG.random(32) < 0.5).astype(np.float32)
    _close(jx.jit(train.per_example_grads, backend="cuda")(w, b, xs, ys),
           train.per_example_grads(w, b, xs, ys), 1e-4, 1e-6)
    t = s.f32(32, attention.WIDTH)
    params = jx.tree_util.tree_map(lambda q: s.f32(*q.shape, scale=0.1), attention.PARAMS)
    _close(jx.jit(attention.attention_block, backend="cuda")(params, t),
           attention.attention_block(params, t), 1e-3, 1e-4)
    x = s.f32(64, 96)
    _close(jx.jit(elementwise.sum_of_squares, backend="cuda")(x),
           elementwise.sum_of_squares(x), 1e-5)
    a, y0 = s.f32(8, 8, scale=0.3), s.f32(8)
    f = jx.jit(ode.integrate, static_argnums=(2, 3), backend="cuda")
    _close(f(a, y0, 0.01, 50), ode.integrate(a, y0, 0.01, 50), 1e-4, 1e-5)


@needs_gpu
def test_artifacts_on_gpu_and_errors(tmp_path):
    import cupy
    from jx.cli.compile import compile_model
    import jx.runtime as rt
    res = compile_model(str(SAMPLES / "attention.py"), str(tmp_path), (), (), "cuda",
                        None, None, "sm_80")
    art = rt.load(res["library"])
    rng = np.random.default_rng(9)
    x = rng.standard_normal((attention.TOKENS, attention.WIDTH)).astype(np.float32)
    g, bt = np.ones(attention.WIDTH, np.float32), np.zeros(attention.WIDTH, np.float32)
    _close(art.layernorm(x, g, bt), attention.layernorm(x, g, bt), 1e-4, 1e-5)
    _close(art.layernorm(cupy.asarray(x), gamma=g, beta=bt), attention.layernorm(x, g, bt),
           1e-4, 1e-5)
    s = rng.standard_normal((attention.HEADS, attention.TOKENS, attention.TOKENS))
    _close(art.softmax(s.astype(np.float32)), attention.softmax(s.astype(np.float32)), 1e-5)
    with pytest.raises(rt.ShapeMismatchError, match=r"float32\[512, 512\]"):
        art.layernorm(cupy.asarray(x[:3]), g, bt)
    with pytest.raises(rt.DtypeMismatchError, match="float32"):
        art.layernorm(cupy.asarray(x.astype(np.float64)), g, bt)
    with pytest.raises(rt.DtypeMismatchError, match="float32"):
        art.layernorm(x.astype(np.float64), g, bt)
    with pytest.raises(rt.TreeMismatchError):
        art.layernorm(x, g)
    with pytest.raises(rt.EntryNotFoundError):
        art["nope"]
    assert "nvptx64" in art.target and "sm_80" in art.target


@needs_gpu
def test_control_flow_and_opaque_fallbacks_on_gpu():
    rng = np.random.default_rng(10)
    x = rng.standard_normal(1000).astype(np.float32)
    _close(jx.jit(jnp.sort, backend="cuda")(x), np.sort(x))
    _close(jx.jit(lambda v: jnp.cumsum(v), backend="cuda")(x), np.cumsum(x), 1e-4, 1e-4)
    body = lambda i, c: c * 0.5 + jnp.sin(c)  # noqa: E731
    f = lambda v: lax.fori_loop(0, 20, body, v)  # noqa: E731
    _close(jx.jit(f, backend="cuda")(x), f(x), 1e-5, 1e-6)


def test_missing_rule_error_names_the_primitive():
    from jx.codegen.cuda import kernels
    from jx.errors import MissingRuleError
    prog = jx.jit(jnp.sort).lower(jx.f32[4])
    (k,) = prog.kernels
    saved = kernels.opaque.rule("sort")            # (its family imported)
    del kernels.opaque.OPAQUE["sort"]
    try:
        with pytest.raises(MissingRuleError, match="'sort'"):
            GpuModule("t").serial(k)
    finally:
        kernels.opaque.OPAQUE["sort"] = saved


@needs_gpu
def test_windowed_reductions_on_gpu_and_conv_refused():
    """Pooling (expanded into pads and strided slices) and the max-pool gradient run
    on the GPU with the CPU's results; a convolution is refused naming the line."""
    from jx import lax
    x = np.random.default_rng(3).standard_normal((4, 18, 18, 8)).astype(np.float32)

    def pool(x):
        return lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def avg(x):
        return lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") / 9.0
    grad = jx.grad(lambda x: jnp.sum(pool(x) ** 2))
    for f in (pool, avg, grad):
        _close(jx.jit(f, backend="cuda")(x), jx.jit(f, backend="cpu")(x), rtol=1e-6)
    w = np.ones((3, 3, 8, 4), np.float32)
    with pytest.raises(jx.errors.JxError, match="CUDA target has no kernel for "
                                               "conv_general_dilated .*test_cuda.py"):
        jx.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                     dimension_numbers=("NHWC", "HWIO", "NHWC")),
               backend="cuda")(x, w)
