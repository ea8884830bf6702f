"""Symbolic dimensions in artifacts (issue 22): `jx compile` of entries whose
specs name a size (jx.f32["B", 784]) gives one shared object serving every
size. The loader reads the sizes off the arguments and checks them; the C entry
takes them first and refuses values its constraints forbid; `_shapes` tells a C
caller the shapes; specialize= adds fixed-size versions; samples/c/main.c calls
a symbolic entry. Results are checked against jx.jit and NumPy at each size."""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import jx
import jx.runtime as rt
from jx.runtime.symbolic import DimensionError
from test_compile import jx_cli

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
sys.path.insert(0, str(SAMPLES))
import mlp  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
RNG = np.random.default_rng(22)
SIZES = (1, 2, 7, 64, 129, 1000)

MODEL = textwrap.dedent('''
    import jx
    import jx.numpy as jnp

    @jx.export(w=jx.f32[16, 8], x=jx.f32[jx.dim("B", max=512), 16], y=jx.i32["B"])
    def score(w, x, y):
        h = jnp.tanh(x @ w)
        return h, jnp.sum(h[:, 0] * y), jnp.concatenate([h, h[::-1]], axis=0)

    @jx.export(w=jx.f32[16, 8], x=jx.f32[4, 16])
    def fixed_and_symbolic(w, x):       # its w kernel is also norm_w's, of a symbolic entry
        return jnp.tanh(w) * 2.0, x * 3.0

    @jx.export(w=jx.f32[16, 8], x=jx.f32["B", 16])
    def norm_w(w, x):
        return jnp.tanh(w) * 2.0, x * 3.0

    @jx.export(x=jx.f32["B", "T"], specialize={"B": [1, 4], "T": [3]})
    def norm(x):
        return (x - x.mean(axis=1, keepdims=True)) / (x.std(axis=1, keepdims=True) + 1e-3)

    @jx.export(x=jx.f32["2*N"])
    def halves(x):
        return x.reshape(2, -1).sum(axis=0)
''')


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("symbolic")
    (out / "model.py").write_text(MODEL)
    for model in (SAMPLES / "serve.py", out / "model.py"):
        r = jx_cli("compile", model, "-o", out)
        assert r.returncode == 0, r.stderr
    return out


def _params():
    return {k: (0.05 * RNG.standard_normal(v.shape)).astype(np.float32)
            for k, v in mlp.PARAMS.items()}


def test_one_artifact_serves_every_batch(built):
    art = rt.load(built / "libserve.so")
    p = _params()
    for b in SIZES:
        x = RNG.standard_normal((b, 784)).astype(np.float32)
        logits = art.predict(p, x)
        assert logits.shape == (b, 10)
        np.testing.assert_allclose(logits, np.asarray(jx.jit(mlp.predict)(p, x)),
                                   rtol=1e-4, atol=1e-5)
        h = np.maximum(x @ p["w1"] + p["b1"], 0)
        h = np.maximum(h @ p["w2"] + p["b2"], 0)
        np.testing.assert_allclose(logits, h @ p["w3"] + p["b3"], rtol=1e-4, atol=1e-4)
        labels = art.classify(p, x)
        assert labels.dtype == np.int32 and labels.shape == (b,)
        np.testing.assert_array_equal(labels, np.argmax(logits, axis=1))
    e = [e for e in art.manifest["entries"] if e["name"] == "predict"][0]
    assert e["inputs"][-1]["shape"] == ["B", 784] and e["outputs"][0]["shape"] == ["B", 10]
    assert e["dims"]["symbols"] == ["B"]
    assert e["dims"]["constraints"] == [{"name": "B", "min": 1, "max": 4096, "multiple_of": 1}]


def test_expressions_of_symbols_and_specialized_versions(built):
    art = rt.load(built / "libmodel.so")
    w = RNG.standard_normal((16, 8)).astype(np.float32)
    for b in (1, 5, 33):
        x = RNG.standard_normal((b, 16)).astype(np.float32)
        y = RNG.integers(-3, 3, b).astype(np.int32)
        h, s, both = art.score(w, x, y)
        want = np.tanh(x @ w)
        np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(s, np.sum(want[:, 0] * y), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(both, np.concatenate([want, want[::-1]]), rtol=1e-5,
                                   atol=1e-6)
    norm = [e for e in art.manifest["entries"] if e["name"] == "norm"][0]
    assert norm["dims"]["symbols"] == ["B", "T"]
    assert norm["dims"]["specialized"] == [{"B": 1, "T": 3}, {"B": 4, "T": 3}]
    for b, t in ((1, 3), (4, 3), (4, 9), (5, 3), (1, 1)):   # specialized and symbolic alike
        x = RNG.standard_normal((b, t)).astype(np.float32)
        want = (x - x.mean(1, keepdims=True)) / (x.std(1, keepdims=True) + 1e-3)
        np.testing.assert_allclose(art.norm(x), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(art.halves(np.arange(6, dtype=np.float32)), [3, 5, 7])
    # one kernel shared by a fixed entry and a symbolic one (whose functions take dims)
    for f, rows in ((art.fixed_and_symbolic, 4), (art.norm_w, 9)):
        x = np.ones((rows, 16), np.float32)
        a, b = f(w, x)
        np.testing.assert_allclose(a, np.tanh(w) * 2, rtol=1e-6)
        np.testing.assert_allclose(b, x * 3)
    with pytest.raises(DimensionError, match=r"has 7 at axis 0, where 2\*N is declared: "
                                             r"no integer N gives it"):
        art.halves(np.arange(7, dtype=np.float32))


def test_bad_arguments_name_the_symbol_and_both_arguments(built):
    art = rt.load(built / "libmodel.so")
    w = np.ones((16, 8), np.float32)
    with pytest.raises(DimensionError, match=r"argument y has shape \[4\], but its declared "
                                             r"int32\[B\] is \[5\] with B = 5 \(from x, axis 0\)"):
        art.score(w, np.ones((5, 16), np.float32), np.ones(4, np.int32))
    with pytest.raises(DimensionError, match=r"B = 600 \(from x, axis 0\) breaks its "
                                             r"constraint B >= 1 and B <= 512"):
        art.score(w, np.ones((600, 16), np.float32), np.ones(600, np.int32))
    with pytest.raises(DimensionError, match=r"B = 0 .* breaks its constraint B >= 1"):
        art.score(w, np.ones((0, 16), np.float32), np.ones(0, np.int32))
    with pytest.raises(rt.ShapeMismatchError, match=r"x has shape \[5, 15\], expected "
                                                    r"float32\[B, 16\] \(axis 1 is 16"):
        art.score(w, np.ones((5, 15), np.float32), np.ones(5, np.int32))
    with pytest.raises(rt.ShapeMismatchError, match=r"x has shape \[5\], expected"):
        art.score(w, np.ones(5, np.float32), np.ones(5, np.int32))


def test_c_abi_takes_the_dims_and_refuses_forbidden_values(built):
    lib = ctypes.CDLL(str(built / "libmodel.so"))
    shapes = lib.model_score_shapes
    shapes.restype, shapes.argtypes = ctypes.c_int32, [ctypes.c_void_p, ctypes.c_void_p]
    dims = (ctypes.c_int64 * 1)(3)
    out = (ctypes.c_int64 * 16)()
    assert shapes(dims, out) == 0
    # inputs w[16,8], x[B,16], y[B]; outputs h[B,8], s[], both[2B,8]
    assert list(out)[:9] == [16, 8, 3, 16, 3, 3, 8, 6, 8]
    entry = lib.model_score
    entry.restype = ctypes.c_int32
    entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    w, x, y = np.ones((16, 8), np.float32), np.ones((3, 16), np.float32), np.ones(3, np.int32)
    h, s, both = np.full((3, 8), 7.0, np.float32), np.zeros((), np.float32), \
        np.zeros((6, 8), np.float32)
    ins = (ctypes.c_void_p * 3)(*[a.ctypes.data for a in (w, x, y)])
    outs = (ctypes.c_void_p * 3)(*[a.ctypes.data for a in (h, s, both)])
    for bad in (0, 513, -2):                 # JX_ERR_INVALID_DIMS, nothing written
        assert entry((ctypes.c_int64 * 1)(bad), ins, outs) == rt.abi.STATUS_INVALID_DIMS
        assert shapes((ctypes.c_int64 * 1)(bad), out) == rt.abi.STATUS_INVALID_DIMS
        assert (h == 7.0).all()
    assert entry(dims, ins, outs) == 0
    np.testing.assert_allclose(h, np.tanh(x @ w), rtol=1e-6)
    header = (built / "model.h").read_text()
    for line in ("int32_t model_score(const int64_t* dims, const void** inputs, void** outputs);",
                 "int32_t model_score_shapes(const int64_t* dims, int64_t* shapes);",
                 "#define MODEL_SCORE_DIM_NAMES { \"B\" }", "#define MODEL_NORM_NUM_DIMS 2",
                 "#define JX_ERR_INVALID_DIMS"):
        assert line in header, line
    assert re.search(r"dims\[\] = \{ B \} \(B >= 1, B <= 512\)", header)


def test_c_example_calls_a_symbolic_batch(built, tmp_path):
    exe = tmp_path / "serve_main"
    cc = subprocess.run(["cc", "-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                         f"-I{built}", '-DJX_HEADER="serve.h"', "-DJX_PREFIX=serve",
                         "-DJX_PREFIX_UPPER=SERVE", "-DJX_SYMBOLIC", str(SAMPLES / "c" / "main.c"),
                         f"-L{built}", "-lserve", f"-Wl,-rpath,{built}", "-o", str(exe)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    art = rt.load(built / "libserve.so")
    for b in (1, 7):
        run = subprocess.run([str(exe), "0", str(b)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        m = re.search(r"float32\[(\d+) elements\]: sum=(\S+)", run.stdout)
        assert int(m[1]) == 10 * b
        leaves = [_pattern(k, tuple(b if isinstance(d, str) else d for d in leaf.shape),
                           leaf.dtype) for k, leaf in enumerate(art.predict.inputs)]
        params = dict(zip(sorted(mlp.PARAMS), leaves[:-1]))
        y = art.predict(params, leaves[-1])
        np.testing.assert_allclose(float(m[2]), float(np.sum(y, dtype=np.float64)), rtol=1e-6)
    bad = subprocess.run([str(exe), "0", "5000"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "constraints" in bad.stderr


def _pattern(k, shape, dt):
    """samples/c/main.c's fill() for float leaves."""
    i = np.arange(int(np.prod(shape)))
    return (((7 * i + 13 * k) % 17 - 8) / 16).astype(dt).reshape(shape)


def test_dump_ir_shows_symbols_and_their_costs():
    r = jx_cli("dump-ir", SAMPLES / "serve.py", "--entry", "predict", "--after", "fuse",
               "--stats")
    assert r.returncode == 0, r.stderr
    assert "# dims: B >= 1, B <= 4096" in r.stdout
    assert "g:f32[B,784]" in r.stdout
    assert re.search(r"\[7232\*B \+ 3211264 B, 1605632\*B flop, [\d.]+ flop/B at B=128\]",
                     r.stdout)
    r = jx_cli("dump-ir", SAMPLES / "serve.py", "--entry", "predict", "--after", "fuse",
               "--stats", "--dims", "B=7")
    assert re.search(r"\[3261888 B, 11239424 flop, 3\.45 flop/B\]", r.stdout), r.stdout


def test_cli_shapes_and_specialize(tmp_path):
    r = jx_cli("compile", SAMPLES / "mlp.py", "-o", tmp_path, "--shape", "x=f32[B,784]",
               "--shape", "y=i32[B]", "--specialize", "B=3")
    assert r.returncode == 0, r.stderr
    art = rt.load(tmp_path / "libmlp.so")
    assert all(e["dims"]["specialized"] == [{"B": 3}] for e in art.manifest["entries"])
    p = _params()
    for b in (3, 4):
        x = RNG.standard_normal((b, 784)).astype(np.float32)
        y = RNG.integers(0, 10, b).astype(np.int32)
        np.testing.assert_allclose(art.loss(p, x, y), float(jx.jit(mlp.loss)(p, x, y)),
                                   rtol=1e-5)
    r = jx_cli("compile", SAMPLES / "mlp.py", "-o", tmp_path, "--specialize", "Q=3")
    assert r.returncode != 0 and "no selected entry has a symbolic dimension 'Q'" in r.stderr
    (tmp_path / "prod.py").write_text(textwrap.dedent('''
        import jx
        @jx.export(x=jx.f32["B*T"])
        def f(x):
            return x * 2
    '''))
    r = jx_cli("compile", tmp_path / "prod.py", "-o", tmp_path)
    assert r.returncode != 0 and "symbol B appears in no input dimension" in r.stderr


MIXED = textwrap.dedent('''
    import jx
    import jx.numpy as jnp

    @jx.export(w=jx.f32[8, 3], x=jx.f32["B", 8])
    def mixed(w, x):
        """Workspace buffers of symbolic and fixed sizes side by side."""
        h = x @ w                      # f32[B, 3]: 12*B bytes
        t = x.T @ h                    # f32[8, 3] right after it
        return jnp.sort(t.ravel()), jnp.sum(x, axis=0), jnp.sort(h[:, 0])
''')


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_valgrind_symbolic_entry_from_c(tmp_path):
    """A symbolic entry called from C at several batches under memcheck: no access
    outside its buffers or its workspace."""
    (tmp_path / "mixed.py").write_text(MIXED)
    r = jx_cli("compile", tmp_path / "mixed.py", "-o", tmp_path, "--cpu", "x86-64-v3")
    assert r.returncode == 0, r.stderr
    exe = tmp_path / "driver"
    cc = subprocess.run(["cc", "-O1", "-g", "-std=c99", f"-I{tmp_path}",
                         '-DJX_HEADER="mixed.h"', "-DJX_PREFIX=mixed", "-DJX_PREFIX_UPPER=MIXED",
                         "-DJX_ENTRY=mixed", "-DJX_ENTRY_UPPER=MIXED", "-DJX_SYMBOLIC",
                         str(SAMPLES / "c" / "main.c"), str(tmp_path / "libmixed.so"),
                         f"-Wl,-rpath,{tmp_path}", "-o", str(exe)], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    for b in ("1", "5", "67"):
        run = subprocess.run(["valgrind", "--error-exitcode=99", str(exe), "1", b],
                             capture_output=True, text=True, timeout=600,
                             env={**os.environ, "JX_NUM_THREADS": "3"})
        assert run.returncode == 0, run.stderr[-4000:]
        assert "ERROR SUMMARY: 0 errors" in run.stderr, run.stderr[-4000:]


def test_cuda_target_refuses_symbolic_entries():
    """The CUDA target compiles fixed sizes only and says so (no GPU needed to see it)."""
    r = jx_cli("compile", SAMPLES / "serve.py", "--target", "cuda", "-o", ROOT / "build-none")
    assert r.returncode != 0
    assert "CUDA target does not take symbolic dimensions (B)" in r.stderr, r.stderr
    assert not (ROOT / "build-none").exists()
