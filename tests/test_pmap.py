"""jx.pmap and the collectives: compiled (one thread per device, shared-memory
collectives) and reference (vmap with an axis name) against a NumPy simulation
of the devices; rules under grad and vmap; data-parallel SGD; errors."""
import ctypes
import time

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax

COVERED = {"psum", "pmax", "pmin", "all_gather", "ppermute", "all_to_all", "axis_index"}
TRANSFORM_COVERED = set(COVERED)    # grad and vmap rules: the tests below

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.x64]    # float64 data and references, as JAX's tests with x64


@pytest.fixture(autouse=True)
def four_devices(monkeypatch):
    monkeypatch.setenv("JX_NUM_CPU_DEVICES", "4")


def both(f, axis="i"):
    """The compiled pmap and the reference (NumPy, vmap semantics) of f."""
    return jx.pmap(f, axis), jx.pmap(f, axis, backend="reference")


def rand(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.normal(size=shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(-50, 50, size=shape).astype(dtype)


def ring(n):
    return [(i, (i + 1) % n) for i in range(n)]


def all_to_all_sim(xs, split, concat):
    """Device d gets chunk d of every device j's split axis, stacked at concat."""
    n = xs.shape[0]
    return np.stack([np.moveaxis(np.stack([np.take(xs[j], d, axis=split) for j in range(n)]),
                                 0, concat) for d in range(n)])


CASES = [(1, np.float32, (3,)), (2, np.float32, (2, 5)), (4, np.float32, ()),
         (2, np.float64, (7,)), (4, np.float64, (3, 2)), (1, np.int32, (4,)),
         (4, np.int32, (5,)), (2, np.int64, (2, 3)), (4, np.int64, ())]


@pytest.mark.parametrize("n,dtype,shape", CASES)
def test_collectives_match_numpy(rng, n, dtype, shape):
    xs = rand(rng, (n,) + shape, dtype)
    perm = ring(n)[: max(n - 1, 1)]         # the last device receives nothing when n > 1

    def f(x):
        return (lax.psum(x, "i"), lax.pmax(x, "i"), lax.pmin(x, "i"), lax.all_gather(x, "i"),
                lax.ppermute(x, "i", perm), lax.axis_index("i"), lax.pmean(x, "i"),
                lax.psum(1, "i"))

    rep = lambda v: np.broadcast_to(v, xs.shape)          # noqa: E731 - same on each device
    moved = np.zeros_like(xs)
    for s, d in perm:
        moved[d] = xs[s]
    want = [rep(xs.sum(0, dtype=dtype)), rep(xs.max(0)), rep(xs.min(0)),
            np.broadcast_to(xs, (n,) + xs.shape), moved, np.arange(n), rep(xs.mean(0)),
            np.full(n, n)]
    for run in both(f):
        got = run(xs)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            if np.dtype(dtype).kind == "f" or g.dtype.kind == "f":
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
            else:
                np.testing.assert_array_equal(g, w)
        assert got[0].dtype == dtype and got[5].dtype == np.int32


def test_bool_and_small_int_reductions(rng):
    xs = rand(rng, (4, 6), np.bool_)
    f = lambda x: (lax.pmax(x, "i"), lax.pmin(x, "i"), lax.all_gather(x, "i"))   # noqa: E731
    u8 = rand(rng, (4, 6), np.int8)
    for run in both(f):
        m, lo, g = run(xs)
        np.testing.assert_array_equal(m[2], xs.any(0))
        np.testing.assert_array_equal(lo[3], xs.all(0))
        np.testing.assert_array_equal(g[1], xs)
    for run in both(lambda x: lax.psum(x, "i")):
        np.testing.assert_array_equal(run(u8)[0], u8.sum(0, dtype=np.int8))


def test_nan_propagates_through_pmax():
    xs = np.array([[1.0, 2.0], [np.nan, 0.0], [3.0, 1.0]], np.float32)
    for run in both(lambda x: (lax.pmax(x, "i"), lax.pmin(x, "i"))):
        mx, mn = run(xs)
        assert np.isnan(mx[:, 0]).all() and np.isnan(mn[:, 0]).all()
        assert (mx[:, 1] == 2.0).all() and (mn[:, 1] == 0.0).all()


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("split,concat", [(0, 0), (1, 0), (0, 1), (1, 2)])
def test_all_to_all(rng, n, split, concat):
    shape = [3, 2]
    shape.insert(split, n)
    xs = rand(rng, (n,) + tuple(shape), np.float32)
    want = all_to_all_sim(xs, split, concat)
    for run in both(lambda x: lax.all_to_all(x, "i", split, concat)):
        np.testing.assert_array_equal(run(xs), want)


def test_all_to_all_and_all_gather_tiled(rng):
    n = 4
    xs = rand(rng, (n, 8, 3), np.float64)
    # tiled: split axis 0 in n chunks, received chunks concatenated along axis 1
    chunks = xs.reshape(n, n, 2, 3)
    want = np.stack([np.concatenate([chunks[j, d] for j in range(n)], axis=1)
                     for d in range(n)])

    def f(x):
        return (lax.all_to_all(x, "i", 0, 1, tiled=True), lax.all_gather(x, "i", axis=1),
                lax.all_gather(x, "i", axis=1, tiled=True))
    for run in both(f):
        a2a, g, gt = run(xs)
        np.testing.assert_array_equal(a2a, want)
        np.testing.assert_array_equal(g[0], np.moveaxis(xs, 0, 1))
        np.testing.assert_array_equal(gt[2], np.concatenate(list(xs), axis=1))


def test_pytrees_and_several_axes(rng):
    xs = rand(rng, (2, 3), np.float32)
    ys = rand(rng, (2, 3, 4), np.float32)

    def inner(x, y):        # vmapped over 'j' inside pmap over 'i'
        s = lax.psum({"a": x, "b": y}, "i")
        return s["a"] + lax.psum(y, ("i", "j")).sum() + lax.axis_index("j"), s["b"]

    f = lambda x, y: jx.vmap(inner, in_axes=(None, 0), axis_name="j")(x, y)   # noqa: E731
    for run in both(f):
        a, b = run(xs, ys)
        assert a.shape == (2, 3, 3)
        want_a = xs.sum(0) + ys.sum() + np.arange(3)[:, None]
        np.testing.assert_allclose(a, np.broadcast_to(want_a, a.shape), rtol=1e-5)
        np.testing.assert_allclose(b, np.broadcast_to(ys.sum(0), b.shape), rtol=1e-5)


def test_vmap_with_axis_name(rng):
    xs = rand(rng, (5, 3), np.float64)
    w = rand(rng, (3,), np.float64)

    def f(x, w):
        c = lax.psum(w, "b")                       # w is not batched: 5 * w
        return x - lax.pmean(x, "b") + c + lax.axis_index("b"), lax.all_gather(x.sum(), "b")
    a, g = jx.vmap(f, in_axes=(0, None), axis_name="b")(xs, w)
    np.testing.assert_allclose(a, xs - xs.mean(0) + 5 * w + np.arange(5)[:, None])
    np.testing.assert_allclose(g, np.broadcast_to(xs.sum(1), (5, 5)))
    a2, _ = jx.jit(jx.vmap(f, in_axes=(0, None), axis_name="b"))(xs, w)
    np.testing.assert_allclose(a2, a)
    out = jx.vmap(lambda x: lax.all_to_all(x, "b", 0, 0), axis_name="b")(
        np.broadcast_to(np.arange(5.0), (5, 5)).copy())
    np.testing.assert_array_equal(out, np.broadcast_to(np.arange(5.0)[:, None], (5, 5)))


def test_grad_inside_pmap(rng):
    n = 4
    xs = rand(rng, (n, 3), np.float64)
    cs = rand(rng, (n, 3), np.float64)
    k = np.arange(1.0, n + 1)[:, None]

    def local(x, c):
        a = jnp.sum(lax.psum(x, "i") * x)          # psum's cotangent is broadcast back
        b = jnp.sum(lax.ppermute(x, "i", ring(n)) * c)
        d = jnp.sum(lax.all_gather(x, "i")[0] * c)
        e = jnp.sum(lax.all_to_all(x[None, :] * k, "i", 0, 0) * c)
        return a + b + d + e + jnp.sum(lax.pmax(x, "i") ** 2)

    m = xs.max(0)
    want = (xs.sum(0) + xs                          # psum: psum(x) + x_d
            + np.roll(cs, -1, axis=0)               # ppermute: c of the receiving device
            + (np.arange(n)[:, None] == 0) * cs     # all_gather: this device's slice
            + (k * cs).sum(0)                       # all_to_all: transposed back
            + (xs == m) * 2 * m)                    # pmax: to the device holding the max
    for run in both(lambda x, c: jx.grad(local)(x, c)):
        np.testing.assert_allclose(run(xs, cs), want, rtol=1e-10)


def test_grad_matches_finite_differences_per_device(rng):
    """The local derivative: perturb one device's input, others fixed."""
    n, eps = 3, 1e-6
    xs = rand(rng, (n, 4), np.float64)

    def local(x):
        return jnp.sum(jnp.sin(lax.psum(x * x, "i")) * x) + jnp.sum(lax.all_gather(x, "i") ** 3)

    g = jx.pmap(jx.grad(local), "i")(xs)
    value = jx.pmap(local, "i", backend="reference")
    for d in range(n):
        for k in range(4):
            e = np.zeros_like(xs)
            e[d, k] = eps
            fd = (value(xs + e)[d] - value(xs - e)[d]) / (2 * eps)
            assert abs(fd - g[d, k]) < 1e-5 * max(1, abs(fd))


def test_jvp_and_vjp_agree(rng):
    """<ct, jvp(t)> == <vjp(ct), t>, a replicated output's cotangent counted once."""
    n = 4
    cases = [(lambda x: lax.psum(x, "i"), (3,), True), (lambda x: lax.pmax(x, "i"), (3,), True),
             (lambda x: lax.all_gather(x, "i"), (3,), True),
             (lambda x: lax.ppermute(x, "i", ring(n)[:2]), (3,), False),
             (lambda x: lax.all_to_all(x, "i", 0, 1), (n, 2), False)]
    for coll, shape, replicated in cases:
        xs, ts = rand(rng, (n,) + shape, np.float64), rand(rng, (n,) + shape, np.float64)
        jv = jx.pmap(lambda x, t: jx.jvp(coll, (x,), (t,))[1], "i")(xs, ts)
        ct = rand(rng, jv.shape[1:] if replicated else jv.shape, np.float64)
        if replicated:
            np.testing.assert_allclose(jv, np.broadcast_to(jv[0], jv.shape), rtol=1e-12)
            lhs = float((ct * jv[0]).sum())
            vj = jx.pmap(lambda x: jx.vjp(coll, x)[1](ct)[0], "i")(xs)
        else:
            lhs = float((ct * jv).sum())
            vj = jx.pmap(lambda x, c: jx.vjp(coll, x)[1](c)[0], "i")(xs, ct)
        assert abs(lhs - float((vj * ts).sum())) < 1e-9


def test_pmap_of_vmap_and_vmap_of_pmap(rng):
    xs = rand(rng, (2, 3, 4), np.float32)
    f = jx.pmap(jx.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="j"), "i")
    np.testing.assert_allclose(f(xs), xs - xs.mean(0), rtol=1e-5, atol=1e-6)
    g = jx.vmap(jx.pmap(lambda x: lax.psum(x, "i") * lax.axis_index("i"), "i"))
    want = xs.sum(1, keepdims=True) * np.arange(3)[None, :, None]
    np.testing.assert_allclose(g(xs), want, rtol=1e-5)


def test_collectives_in_control_flow(rng):
    xs = rand(rng, (4, 5), np.float32)

    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: lax.pmean(c, "i") + c, x)
    want = xs.copy()
    for _ in range(3):
        want = want.mean(0) + want
    for run in both(f):
        np.testing.assert_allclose(run(xs), want, rtol=1e-5)


def test_in_out_axes_statics_and_replicated_args(rng):
    xs = rand(rng, (3, 4), np.float32)
    w = rand(rng, (3,), np.float32)

    def f(x, w, k):
        return lax.psum(x * w, "i") * k, x
    pf = jx.pmap(f, "i", in_axes=(1, None, None), out_axes=(None, 1),
                 static_broadcasted_argnums=2)
    s, x_back = pf(xs, w, 2.0)
    np.testing.assert_allclose(s, (xs * w[:, None]).sum(1) * 2.0, rtol=1e-5)
    np.testing.assert_array_equal(x_back, xs)
    assert len(pf._cache) == 1
    pf(xs, w, 3.0)
    assert len(pf._cache) == 2


def data_parallel_sgd(xs, ys, n_dev, steps=10, lr=0.1):
    """Linear + tanh model; the pmean'd gradient of per-device shards."""
    def loss(p, x, y):
        h = jnp.tanh(x @ p["w"] + p["b"])
        return jnp.mean((h @ p["v"] - y) ** 2)

    def step(p, x, y):
        g = lax.pmean(jx.grad(loss)(p, x, y), "d")
        return jx.tree_util.tree_map(lambda a, b: a - lr * b, p, g)
    rng = np.random.default_rng(1)
    p = {"w": rng.normal(size=(4, 8)) * 0.5, "b": np.zeros(8), "v": rng.normal(size=(8,)) * 0.5}
    p = jx.tree_util.tree_map(lambda a: a.astype(xs.dtype), p)
    if n_dev == 0:               # one device, the whole batch
        upd = jx.jit(lambda p, x, y: jx.tree_util.tree_map(
            lambda a, b: a - lr * b, p, jx.grad(loss)(p, x, y)))
        for _ in range(steps):
            p = upd(p, xs, ys)
        return p
    pstep = jx.pmap(step, "d", in_axes=(None, 0, 0), out_axes=None)
    xb = xs.reshape(n_dev, -1, xs.shape[-1])
    yb = ys.reshape(n_dev, -1)
    for _ in range(steps):
        p = pstep(p, xb, yb)
    return p


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_data_parallel_sgd_matches_one_device(rng, dtype):
    xs = rng.normal(size=(16, 4)).astype(dtype)
    ys = rng.normal(size=(16,)).astype(dtype)
    ref = data_parallel_sgd(xs, ys, 0)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for n_dev in (2, 4):
        got = data_parallel_sgd(xs, ys, n_dev)
        for k in ref:
            np.testing.assert_allclose(got[k], ref[k], rtol=tol, atol=tol)


def test_device_queries(monkeypatch):
    assert jx.process_count() == 1 and jx.process_index() == 0
    assert jx.local_device_count() == 4 == jx.device_count() == len(jx.devices())
    assert [d.id for d in jx.local_devices()] == [0, 1, 2, 3]
    monkeypatch.setenv("JX_NUM_CPU_DEVICES", "zero")
    with pytest.raises(jx.JxError, match="JX_NUM_CPU_DEVICES"):
        jx.local_device_count()


# ---------------------------------------------------------------- errors

def test_collective_outside_pmap_names_the_axis():
    with pytest.raises(jx.JxError, match=r"unbound axis name 'i'.*outside any jx.pmap"):
        lax.psum(np.ones(3), "i")
    with pytest.raises(jx.JxError, match="unbound axis name 'i'"):
        jx.jit(lambda x: lax.all_gather(x, "i"))(np.ones(3))


def test_unknown_axis_name_inside_pmap():
    for backend in (None, "reference"):
        with pytest.raises(jx.JxError, match=r"unbound axis name 'j'.*bound here are 'i'"):
            jx.pmap(lambda x: lax.pmean(x, "j"), "i", backend=backend)(np.ones((2, 3)))


def test_mapped_axis_larger_than_device_count():
    with pytest.raises(jx.JxError, match="size 5 but this process has only 4 local devices"):
        jx.pmap(lambda x: x, "i")(np.ones((5, 2)))
    with pytest.raises(jx.JxError, match="different sizes"):
        jx.pmap(lambda x, y: x + y, "i")(np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(jx.JxError, match="devices= lists 3"):
        jx.pmap(lambda x: x, "i", devices=jx.devices()[:3])(np.ones((2, 2)))


def test_bad_collective_arguments():
    with pytest.raises(jx.ShapeError, match="outside axis 'i' of size 2"):
        jx.pmap(lambda x: lax.ppermute(x, "i", [(0, 2)]), "i")(np.ones((2, 3)))
    with pytest.raises(jx.JxError, match="must have the size of axis 'i'"):
        jx.pmap(lambda x: lax.all_to_all(x, "i", 0, 0), "i")(np.ones((2, 3)))
    with pytest.raises(jx.ShapeError, match="psum of a bool"):
        jx.pmap(lambda x: lax.psum(x, "i"), "i")(np.ones((2, 3), bool))


def _runtime():
    from jx.codegen.cpu import collectives
    return collectives


ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p),
                         ctypes.POINTER(ctypes.c_void_p))


def _run_raw(coll, entry_fn, n=2):
    table = np.zeros((n, 1), np.uintp)
    t0 = time.perf_counter()
    with pytest.raises(coll.CollectiveError) as err:
        coll.launch(ctypes.cast(entry_fn, ctypes.c_void_p).value, n, table, table.copy())
    return str(err.value), time.perf_counter() - t0


def test_collective_timeout_raises_instead_of_hanging():
    coll = _runtime()
    lib = coll.runtime()
    buf = np.zeros(4, np.float32)
    calls = []

    def entry(ins, outs):        # device 0 waits in a psum that device 1 never joins
        calls.append(1)
        if len(calls) == 1:
            return lib.jx_coll_allreduce(ctypes.c_void_p(buf.ctypes.data),
                                         ctypes.c_void_p(buf.ctypes.data),
                                         ctypes.c_int64(4), 0, 0, 2)
        return 0
    fn = ENTRY(entry)
    coll.set_timeout(0.3)
    try:
        msg, elapsed = _run_raw(coll, fn)
    finally:
        coll.set_timeout(None)
    assert "waited 0 s" in msg or "gave up" in msg
    assert "JX_COLLECTIVE_TIMEOUT" in msg and elapsed < 10


def test_failed_device_aborts_its_team_at_once():
    coll = _runtime()
    lib = coll.runtime()
    buf = np.zeros(4, np.float32)
    state = {"n": 0}

    def entry(ins, outs):
        state["n"] += 1
        if state["n"] == 1:
            return lib.jx_coll_allgather(ctypes.c_void_p(buf.ctypes.data),
                                         ctypes.c_void_p(buf.ctypes.data), ctypes.c_int64(0), 2)
        time.sleep(0.05)
        return 1                 # this device fails (out of memory)
    fn = ENTRY(entry)
    coll.set_timeout(60)
    try:
        msg, elapsed = _run_raw(coll, fn)
    finally:
        coll.set_timeout(None)
    assert elapsed < 10 and "status" in msg


# ---------------------------------------------------------------- artifacts and C

MODEL = '''
import jx
from jx import lax

@jx.export(index=jx.i32[()], x=jx.f32[3])
def step(index, x):
    with jx.bind_axis("d", 2, index):
        return lax.psum(x, "d") * 10 + lax.axis_index("d"), lax.all_gather(x, "d")
'''


def test_compiled_artifact_runs_per_device_entries_from_c(tmp_path, rng):
    """`jx compile` of an SPMD entry; the artifact's own spmd_pmap_run runs it on two
    device threads, as a C program would (no jx Python in the loop)."""
    from jx.cli.compile import compile_model
    model = tmp_path / "spmd.py"
    model.write_text(MODEL)
    res = compile_model(str(model), str(tmp_path / "build"), (), (), "cpu", None, None)
    lib = ctypes.CDLL(res["library"])
    header = open(res["header"]).read()
    assert "int32_t spmd_step(" in header and "int32_t spmd_pmap_run(" in header
    xs = rand(rng, (2, 3), np.float32)
    index = np.arange(2, dtype=np.int32)
    outs = [np.empty((2, 3), np.float32), np.empty((2, 2, 3), np.float32)]
    ins = np.array([[index[d:].ctypes.data, xs[d].ctypes.data] for d in range(2)], np.uintp)
    out_t = np.array([[outs[0][d].ctypes.data, outs[1][d].ctypes.data] for d in range(2)],
                     np.uintp)
    entry = ctypes.cast(lib.spmd_step, ctypes.c_void_p).value
    lib.spmd_pmap_run.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                                  ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32]
    lib.spmd_coll_last_error.restype = ctypes.c_char_p
    status = lib.spmd_pmap_run(entry, 2, ins.ctypes.data, 2, out_t.ctypes.data, 2)
    assert status == 0, lib.spmd_coll_last_error()
    np.testing.assert_allclose(outs[0], xs.sum(0) * 10 + np.arange(2)[:, None], rtol=1e-6)
    np.testing.assert_array_equal(outs[1][1], xs)
    # called directly (one device, no hooks): the axis of 2 devices does not fit
    import jx.runtime as rt
    with pytest.raises(rt.ArtifactError):
        rt.load(res["library"]).step(np.int32(0), xs[0])
    lib.spmd_coll_last_error.restype = ctypes.c_char_p
    assert b"compiled for an axis of 2 devices" in lib.spmd_coll_last_error()
    lib.spmd_coll_clear_error()


def test_bind_axis_needs_a_traced_index():
    with pytest.raises(jx.JxError, match="traced int32 scalar"):
        with jx.bind_axis("d", 2, 0):
            pass


def test_data_parallel_sample_locally(capsys):
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "samples" / "data_parallel.py"
    spec = importlib.util.spec_from_file_location("data_parallel_sample", path)
    sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sample)
    sample.main(["--steps", "3", "--hidden", "32", "--batch", "32", "--check"])
    out = capsys.readouterr().out
    assert "1 process(es) x 4 device(s), global batch 32 (8 per device)" in out
    assert "max |data-parallel - one device|" in out


def test_collectives_of_an_outer_axis_inside_vmap(rng):
    """vmap over 'j' re-binds collectives over the pmap axis 'i' per batch element."""
    n, b = 4, 3
    xs = rand(rng, (n, b, 2), np.float32)
    zs = rand(rng, (n, b, n, 2), np.float32)

    def per(x, z):
        return (lax.all_gather(x, "i"), lax.ppermute(x, "i", ring(n)),
                lax.all_to_all(z, "i", 0, 0), lax.pmin(x, "i"))
    f = lambda x, z: jx.vmap(per, axis_name="j")(x, z)            # noqa: E731
    for run in both(f):
        g, p, a, m = run(xs, zs)
        np.testing.assert_array_equal(g, np.broadcast_to(
            np.moveaxis(xs, 0, 1)[None], (n, b, n, 2)))
        np.testing.assert_array_equal(p, np.roll(xs, 1, axis=0))
        np.testing.assert_array_equal(a, np.einsum("kjid->ijkd", zs))   # a[i,j,k] = z[k,j,i]
        np.testing.assert_array_equal(m, np.broadcast_to(xs.min(0), xs.shape))
