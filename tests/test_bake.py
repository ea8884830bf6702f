"""Constants inside the artifact (jx.bake): `jx compile --bake ARG=FILE` and
`@jx.export(bake=...)` store an argument's arrays in the artifact, the entry takes
the other arguments, the manifest records a checksum of what was baked, and the
results equal the unbaked entry's (through jx.runtime.load and the raw C ABI).
Bad files, keys, shapes, dtypes and names are errors naming the thing and what to
do; --bake with several models applies where the argument exists."""
from __future__ import annotations

import ctypes
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import jx
import jx.runtime
from jx import bake
from jx.cli.main import main

MODEL = textwrap.dedent('''
    import numpy as np
    import jx
    import jx.numpy as jnp

    PARAMS = {"w1": jx.f32[12, 16], "b1": jx.f32[16],
              "layers": [{"w": jx.f32[16, 5]}, {"w": jx.f32[16, 5]}]}
    TABLE = (np.arange(7, dtype=np.int32) * 3) % 5


    @jx.export(params=PARAMS, x=jx.f32[9, 12])
    def predict(params, x):
        h = jnp.tanh(x @ params["w1"] + params["b1"])
        return {"a": h @ params["layers"][0]["w"], "b": h @ params["layers"][1]["w"]}


    @jx.export(params=PARAMS, x=jx.f32[9, 12], y=jx.i32[9])
    def score(params, x, y):
        out = predict(params, x)
        return jnp.sum(out["a"] * y[:, None]) + jnp.sum(out["b"])


    @jx.export(i=jx.i32[4], table=jx.i32[7], bake={"table": lambda: TABLE})
    def lookup(i, table):
        return table[i] * 2
''')


def _params(seed=0):
    r = np.random.default_rng(seed)
    return {"w1": r.standard_normal((12, 16)).astype(np.float32),
            "b1": r.standard_normal(16).astype(np.float32),
            "layers": [{"w": r.standard_normal((16, 5)).astype(np.float32)},
                       {"w": r.standard_normal((16, 5)).astype(np.float32)}]}


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("bake")
    (d / "model.py").write_text(MODEL)
    bake.save(str(d / "params.npz"), _params())
    r = cli("compile", d / "model.py", "-o", d / "plain")
    assert r.exit_code == 0, r.output
    r = cli("compile", d / "model.py", "-o", d / "baked", "--bake", f"params={d / 'params.npz'}")
    assert r.exit_code == 0, r.output
    return d


def test_baked_entries_take_the_other_arguments_and_equal_the_unbaked(work):
    plain = jx.runtime.load(work / "plain" / "libmodel.so")
    baked = jx.runtime.load(work / "baked" / "libmodel.so")
    p = _params()
    r = np.random.default_rng(5)
    for _ in range(3):                                  # fresh inputs each time
        x = r.standard_normal((9, 12)).astype(np.float32)
        y = r.integers(-3, 4, 9).astype(np.int32)
        want, got = plain.predict(p, x), baked.predict(x)
        for k in ("a", "b"):
            np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(baked.score(x, y), plain.score(p, x, y), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(baked.predict(x=x)["a"], want["a"], rtol=1e-6, atol=1e-6)
    with pytest.raises(Exception, match="argument|takes|params"):
        baked.predict(p, x)                              # params is no longer an argument


def test_manifest_records_each_bake(work):
    m = jx.runtime.load(work / "baked" / "libmodel.so").manifest
    entries = {e["name"]: e for e in m["entries"]}
    assert entries["predict"]["arg_names"] == ["x"]
    assert [leaf["path"] for leaf in entries["predict"]["inputs"]] == ["x"]
    rec, = entries["predict"]["baked"]
    assert rec["arg"] == "params" and rec["origin"].endswith("params.npz")
    assert rec["sha256"] == bake.checksum(_params())
    assert {(leaf["path"], tuple(leaf["shape"])) for leaf in rec["leaves"]} == {
        ("w1", (12, 16)), ("b1", (16,)), ("layers.0.w", (16, 5)), ("layers.1.w", (16, 5))}
    # a declared bake applies in every build; its record names the declaration
    rec, = entries["lookup"]["baked"]
    assert rec["arg"] == "table" and "declaration" in rec["origin"]
    plain = {e["name"]: e for e in
             jx.runtime.load(work / "plain" / "libmodel.so").manifest["entries"]}
    assert plain["lookup"]["arg_names"] == ["i"] and "baked" not in plain["predict"]
    # the artifact's bytes hold the weights (read-only data), not a path to them
    data = (work / "baked" / "libmodel.so").read_bytes()
    assert _params()["w1"].tobytes()[:64] in data


def test_declared_bake_results(work):
    art = jx.runtime.load(work / "plain" / "libmodel.so")
    i = np.array([0, 6, 3, 1], np.int32)
    table = (np.arange(7, dtype=np.int32) * 3) % 5
    np.testing.assert_array_equal(art.lookup(i), table[i] * 2)


def test_raw_c_abi_of_a_baked_entry(work):
    """Through the C symbol: one input pointer (x), two outputs (a, b)."""
    so = work / "baked" / "libmodel.so"
    art = jx.runtime.load(so)
    lib = ctypes.CDLL(str(so))
    fn = lib.model_predict
    fn.restype = ctypes.c_int32
    x = np.random.default_rng(2).standard_normal((9, 12)).astype(np.float32)
    a, b = np.empty((9, 5), np.float32), np.empty((9, 5), np.float32)
    ins = (ctypes.c_void_p * 1)(x.ctypes.data)
    outs = (ctypes.c_void_p * 2)(a.ctypes.data, b.ctypes.data)
    assert fn(ins, outs) == 0
    want = art.predict(x)
    np.testing.assert_array_equal(a, want["a"])
    np.testing.assert_array_equal(b, want["b"])
    header = (work / "baked" / "model.h").read_text()
    assert "#define MODEL_PREDICT_NUM_INPUTS 1\n" in header
    assert '#define MODEL_PREDICT_INPUT_PATHS { "x" }' in header
    assert "#define MODEL_SCORE_NUM_INPUTS 2\n" in header


def test_inspect_shows_the_baked_constants(work):
    r = cli("inspect", work / "baked" / "libmodel.so")
    assert r.exit_code == 0, r.output
    assert "baked" in r.stdout and bake.checksum(_params()) in r.stdout
    r = cli("inspect", "--json", work / "baked" / "libmodel.so")
    rep = json.loads(r.stdout)
    e = {x["name"]: x for x in rep["entries"]}
    assert e["predict"]["baked"][0]["sha256"] == bake.checksum(_params())


def test_a_single_npy_for_an_array_argument(work, tmp_path):
    table = np.array([4, 0, 1, 1, 2, 3, 9], np.int32)
    np.save(tmp_path / "t.npy", table)
    r = cli("compile", work / "model.py", "-o", tmp_path, "-e", "lookup",
            "--bake", f"table={tmp_path / 't.npy'}")
    assert r.exit_code == 0, r.output
    art = jx.runtime.load(tmp_path / "libmodel.so")
    i = np.array([6, 0, 2, 5], np.int32)
    np.testing.assert_array_equal(art.lookup(i), table[i] * 2)      # the file wins
    rec, = art.manifest["entries"][0]["baked"]
    assert rec["origin"].endswith("t.npy") and rec["sha256"] == bake.checksum(table)


@pytest.mark.parametrize("make,needle", [
    (lambda d: f"params={d / 'nope.npz'}", "no such file"),
    (lambda d: "params", "expected ARG=FILE"),
    (lambda d: f"weights={d / 'params.npz'}", "no selected entry has an argument 'weights'"),
    (lambda d: f"params={d / 'bad_keys.npz'}", "missing layers.1.w"),
    (lambda d: f"params={d / 'bad_shape.npz'}", "float32[12, 16]"),
    (lambda d: f"params={d / 'bad_dtype.npz'}", "float64"),
    (lambda d: f"params={d / 'text.npz'}", "not a NumPy"),
])
def test_bad_bakes_are_clear_errors(work, tmp_path, make, needle):
    p = _params()
    np.savez(tmp_path / "bad_keys.npz", **{"w1": p["w1"], "b1": p["b1"],
                                           "layers.0.w": p["layers"][0]["w"]})
    bad = dict(p, w1=p["w1"][:, :8])
    bake.save(str(tmp_path / "bad_shape.npz"), bad)
    bake.save(str(tmp_path / "bad_dtype.npz"), dict(p, b1=p["b1"].astype(np.float64)))
    (tmp_path / "text.npz").write_text("not an archive")
    for f in ("bad_keys.npz", "bad_shape.npz", "bad_dtype.npz", "text.npz"):
        (work / f).write_bytes((tmp_path / f).read_bytes())
    r = CliRunner().invoke(main, ["compile", str(work / "model.py"), "-o", str(tmp_path / "o"),
                                  "--bake", make(work)])
    assert r.exit_code == 1, r.output
    assert needle in r.stderr, r.stderr
    assert not (tmp_path / "o" / "libmodel.so").exists()


def test_bake_with_several_models(work, tmp_path):
    other = tmp_path / "other.py"
    other.write_text("import jx\n\n@jx.export(z=jx.f32[3])\ndef double(z):\n"
                     "    return z * 2\n")
    r = cli("compile", work / "model.py", other, "-o", tmp_path / "o",
            "--bake", f"params={work / 'params.npz'}")
    assert r.exit_code == 0, r.output
    art = jx.runtime.load(tmp_path / "o" / "libmodel.so")
    assert art.manifest["entries"][0]["arg_names"] == ["x"]
    r = CliRunner().invoke(main, ["compile", str(work / "model.py"), str(other), "-o",
                                  str(tmp_path / "p"), "--bake", f"nothing={work / 'x.npz'}"])
    assert r.exit_code == 1 and "--bake" in r.stderr, r.stderr
