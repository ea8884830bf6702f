"""`jx compile` as a user runs it: build artifacts in a subprocess, load them with
jx.runtime (in a process without llvmlite), call them from C, and check that
builds are deterministic and cached, and that bad input fails clearly."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")

TINY = textwrap.dedent('''
    import jx
    import jx.numpy as jnp

    @jx.export(p={"w": jx.f32[4, 3], "b": jx.f32[3]}, x=jx.f32[5, 4])
    def affine(p, x):
        return {"y": jnp.maximum(x @ p["w"] + p["b"], 0.0), "s": jnp.sum(x, axis=0)}

    @jx.export(n=jx.i32[7], static={"k": 3})
    def shift(n, k):
        return n * k - 1, jnp.cumsum(n)
''')


def jx_cli(*args, cwd=ROOT, env=None):
    return subprocess.run([sys.executable, "-m", "jx.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    (d / "tiny.py").write_text(TINY)
    env = {"JX_CACHE_DIR": str(d / "cache")}
    r = jx_cli("compile", d / "tiny.py", "-o", d / "out", env=env)
    assert r.returncode == 0, r.stderr
    return d, env, r


def test_compile_writes_library_and_header(tiny):
    d, _, r = tiny
    assert "wrote" in r.stdout and "libtiny.so" in r.stdout and "tiny.h" in r.stdout
    header = (d / "out" / "tiny.h").read_text()
    assert "int32_t tiny_affine(const void** inputs, void** outputs);" in header
    assert "int32_t tiny_shift(" in header


def test_artifact_runs_without_llvmlite(tiny):
    d, _, _ = tiny
    code = textwrap.dedent(f'''
        import sys
        sys.modules["llvmlite"] = None          # any llvmlite import now fails
        sys.path.insert(0, {str(d)!r})
        import numpy as np
        import jx.runtime as rt
        a = rt.load({str(d / "out" / "libtiny.so")!r})
        rng = np.random.default_rng(0)
        p = {{"w": rng.standard_normal((4, 3)).astype("f4"),
              "b": rng.standard_normal(3).astype("f4")}}
        x = rng.standard_normal((5, 4)).astype("f4")
        out = a.affine(p, x)
        ref = np.maximum(x @ p["w"] + p["b"], 0)
        assert np.allclose(out["y"], ref, atol=1e-5), out
        assert np.allclose(out["s"], x.sum(0), atol=1e-5)
        n = np.arange(7, dtype=np.int32)
        m, c = a.shift(n)
        assert (m == n * 3 - 1).all() and (c == np.cumsum(n)).all()
        assert "llvmlite" not in [k for k, v in sys.modules.items() if v is not None]
        print("ok")
    ''')
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_build_is_deterministic_and_cached(tiny, tmp_path):
    d, env, _ = tiny
    r = jx_cli("compile", d / "tiny.py", "-o", tmp_path / "again", env=env)
    assert r.returncode == 0, r.stderr
    assert "cache hit" in r.stdout
    a = (d / "out" / "libtiny.so").read_bytes()
    b = (tmp_path / "again" / "libtiny.so").read_bytes()
    assert a == b
    r = jx_cli("compile", d / "tiny.py", "-o", tmp_path / "cold",
               env={"JX_CACHE_DIR": str(tmp_path / "empty-cache")})
    assert r.returncode == 0 and "compiled" in r.stdout
    assert (tmp_path / "cold" / "libtiny.so").read_bytes() == a


def test_tampered_and_truncated_artifacts_fail_clearly(tiny, tmp_path):
    import jx.runtime as rt
    d, _, _ = tiny
    data = (d / "out" / "libtiny.so").read_bytes()
    (tmp_path / "trunc.so").write_bytes(data[:len(data) // 3])
    with pytest.raises(rt.ArtifactError, match="trunc.so"):
        rt.load(tmp_path / "trunc.so")
    (tmp_path / "text.so").write_text("not a shared object")
    with pytest.raises(rt.ArtifactError, match="text.so"):
        rt.load(tmp_path / "text.so")
    # a shape edited in the embedded manifest (same length): the code was built for
    # the old one, so the file's seal must stop the load
    i = data.index(b'"shape":[4,3]')
    (tmp_path / "edited.so").write_bytes(data[:i] + b'"shape":[4,9]' + data[i + 13:])
    with pytest.raises(rt.IntegrityError, match="modified or corrupted"):
        rt.load(tmp_path / "edited.so")
    a = rt.load(d / "out" / "libtiny.so")
    with pytest.raises(rt.ArtifactError, match="nope"):
        a["nope"]
    with pytest.raises(rt.ArtifactError, match=r"x"):
        a.affine({"w": np.zeros((4, 3), "f4"), "b": np.zeros(3, "f4")}, np.zeros((4, 4), "f4"))
    with pytest.raises(rt.ArtifactError, match="float64|dtype"):
        a.affine({"w": np.zeros((4, 3)), "b": np.zeros(3, "f4")}, np.zeros((5, 4), "f4"))


def test_compile_errors_are_one_paragraph(tmp_path):
    (tmp_path / "bad.py").write_text("import jx\nx = 1\n")
    r = jx_cli("compile", tmp_path / "bad.py", "-o", tmp_path / "o")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "no entries" in r.stderr or "entr" in r.stderr
    r = jx_cli("compile", tmp_path / "missing.py")
    assert r.returncode == 1 and "does not exist" in r.stderr


def _pattern(k: int, shape, dtype) -> np.ndarray:
    """The input pattern samples/c/main.c fills leaf k with."""
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    v = ((7 * i + 13 * k) % 17) - 8
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return ((i + k) % 3 == 0).reshape(shape)
    if dt.kind == "f":
        return (v / 16).astype(dt).reshape(shape)
    return (v + (8 if dt.kind == "u" else 0)).astype(dt).reshape(shape)


def test_c_program_calls_compiled_mlp(tmp_path):
    out = tmp_path / "build"
    r = jx_cli("compile", SAMPLES / "mlp.py", "--entry", "predict", "-o", out,
               env={"JX_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    exe = tmp_path / "mlp_main"
    cc = subprocess.run(["cc", "-O2", "-std=c99", f"-I{out}", str(SAMPLES / "c" / "main.c"),
                         f"-L{out}", "-lmlp", f"-Wl,-rpath,{out}", "-o", str(exe)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    line = next(ln for ln in run.stdout.splitlines() if ln.startswith("output 0"))
    c_sum = float(line.split("sum=")[1].split()[0])
    import jx.runtime as rt
    art = rt.load(out / "libmlp.so")
    entry = art.predict
    leaves = [_pattern(k, leaf.shape, leaf.dtype) for k, leaf in enumerate(entry.inputs)]
    sys.path.insert(0, str(SAMPLES))
    import mlp
    names = sorted(mlp.PARAMS)             # dict leaves flatten in sorted key order
    params = dict(zip(names, leaves[:len(names)]))
    y = art.predict(params, leaves[len(names)])
    np.testing.assert_allclose(c_sum, float(np.sum(y, dtype=np.float64)), rtol=1e-6)
    np.testing.assert_allclose(y, mlp.predict(params, leaves[len(names)]), rtol=1e-4,
                               atol=1e-4)


def test_artifacts_for_a_cpu_this_one_cannot_run_fail_to_load(tiny, tmp_path, monkeypatch):
    """The manifest lists the ISA extensions the build enabled; a CPU without one of
    them gets a clear error at load instead of an illegal instruction at the call."""
    import jx.runtime as rt
    from jx.runtime import host
    d, _, _ = tiny
    art = rt.load(d / "out" / "libtiny.so")
    feats = art.manifest["cpu_features"]
    if host.host_flags() is None or not feats:
        pytest.skip("no /proc/cpuinfo flags, or a build that needs no extension")
    lacking = frozenset(host.host_flags()) - {host.X86_FLAGS[feats[-1]]}
    monkeypatch.setattr(host, "host_flags", lambda: lacking)
    with pytest.raises(rt.ArtifactLoadError, match=feats[-1]):
        rt.load(d / "out" / "libtiny.so")


def test_a_rebuilt_artifact_loads_anew_in_the_same_process(tmp_path):
    """dlopen reuses the library it mapped for a path: a file rebuilt since must
    still load as what is on disk now."""
    import jx.runtime as rt
    model = tmp_path / "grow.py"
    for n in (3, 5):
        model.write_text("import jx\n\n@jx.export(x=jx.f32[%d])\ndef twice(x):\n"
                         "    return x * 2.0\n" % n)
        r = jx_cli("compile", model, "-o", tmp_path / "out")
        assert r.returncode == 0, r.stderr
        art = rt.load(tmp_path / "out" / "libgrow.so")
        assert art.twice.inputs[0].shape == (n,)
        np.testing.assert_array_equal(art.twice(np.arange(n, dtype=np.float32)),
                                      np.arange(n, dtype=np.float32) * 2)


@pytest.mark.parametrize("fname,why", [("manifest", "already defines"),
                                       ("set_num_threads", "already defines"),
                                       ("préd", "not a C identifier")])
def test_entry_names_that_cannot_be_symbols_are_clear_errors(tmp_path, fname, why):
    (tmp_path / "names.py").write_text(
        "import jx\n\n@jx.export(x=jx.f32[3])\ndef %s(x):\n    return x + 1.0\n" % fname,
        encoding="utf-8")
    r = jx_cli("compile", tmp_path / "names.py", "-o", tmp_path / "o")
    assert r.returncode != 0 and why in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_bad_outputs_names_and_shapes_are_one_paragraph_errors(tmp_path):
    ok = tmp_path / "ok.py"
    ok.write_text("import jx\n\n@jx.export(x=jx.f32[3, 4])\ndef f(x):\n    return x + 1.0\n")
    (tmp_path / "afile").write_text("")
    (tmp_path / "neg.py").write_text(
        "import jx\n\n@jx.export(x=jx.f32[3, -4])\ndef f(x):\n    return x + 1.0\n")
    (tmp_path / "dup.py").write_text(
        "import jx\n\ndef make(k):\n    @jx.export(x=jx.f32[3])\n    def f(x):\n"
        "        return x * k\n    return f\n\na = make(1.0)\nb = make(2.0)\n")
    (tmp_path / "case.py").write_text(
        "import jx\n\n@jx.export(x=jx.f32[3])\ndef f(x):\n    return x\n\n"
        "@jx.export(x=jx.f32[3])\ndef F(x):\n    return x * 2.0\n")
    (tmp_path / "none.py").write_text(
        "import jx\n\n@jx.export(x=jx.f32[3])\ndef f(x):\n    y = x + 1.0\n")
    runs = [((ok, "-o", tmp_path / "afile"), "output folder"),
            ((tmp_path / "none.py", "-o", tmp_path / "o6"), "returns no arrays"),
            ((ok, "--name", "a/b", "-o", tmp_path / "o1"), "not a file name"),
            ((ok, "-s", "x=f32[99999999999999999999999,4]", "-o", tmp_path / "o2"),
             "each dimension"),
            ((tmp_path / "neg.py", "-o", tmp_path / "o3"), "neg.py:3"),
            ((tmp_path / "dup.py", "-o", tmp_path / "o4"), "two entries are named 'f'"),
            ((tmp_path / "case.py", "-o", tmp_path / "o5"), "macro prefix")]
    for args, want in runs:
        r = jx_cli("compile", *args)
        assert r.returncode == 1 and want in r.stderr and "Traceback" not in r.stderr, \
            (args, r.stderr)
    assert not (tmp_path / "o5").exists()          # nothing written for a failed build
