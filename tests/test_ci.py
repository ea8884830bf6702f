"""jx as a CI build step: `jx compile --check` (exit 0 and nothing written when the
committed artifacts equal a new build; exit 1 naming what differs and why after a
source edit, a --cpu change, a missing file), `jx compile --json`, the performance
gate (`jx bench --compare` on synthetic runs: a regression beyond the noise, one
within it, other machines), `--error-format text|json|github` on a bad model for
every command, and the exit codes (0, 1, 2). No timing assertions."""
from __future__ import annotations

import json
import os
import shutil
import textwrap

import pytest
from click.testing import CliRunner

from jx.cli.main import main

MODEL = textwrap.dedent('''
    import jx
    import jx.numpy as jnp


    @jx.export(x=jx.f32[16, 8], w=jx.f32[8, 4])
    def predict(x, w):
        return jnp.tanh(x @ w)


    @jx.export(x=jx.f32[32])
    def norm(x):
        return x / jnp.sqrt(jnp.sum(x * x) + 1e-6)
''')


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def built(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    r = run("compile", tmp_path / "model.py", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    return tmp_path


def _snapshot(folder) -> dict:
    return {p: (os.path.getmtime(folder / p), (folder / p).read_bytes())
            for p in sorted(os.listdir(folder))}


def test_check_of_an_unchanged_model_passes_and_writes_nothing(built):
    before = _snapshot(built / "out")
    r = run("compile", built / "model.py", "-o", built / "out", "--check")
    assert r.exit_code == 0, r.output
    assert "up to date" in r.stdout and "libmodel.so" in r.stdout
    assert _snapshot(built / "out") == before


def test_check_after_a_source_edit_names_the_entry(built):
    src = (built / "model.py").read_text().replace("x / jnp.sqrt", "2 * x / jnp.sqrt")
    (built / "model.py").write_text(src)
    before = _snapshot(built / "out")
    r = run("compile", built / "model.py", "-o", built / "out", "--check")
    assert r.exit_code == 1, r.output
    line = src.splitlines().index("def norm(x):") + 1 - 1     # the decorator's line
    assert f"model.py:{line}: error: entry 'norm'" in r.stderr, r.stderr
    assert "its code changed" in r.stderr and "'predict'" not in r.stderr
    assert _snapshot(built / "out") == before


def test_check_after_a_shape_change_and_a_new_entry(built):
    src = (built / "model.py").read_text().replace("jx.f32[32]", "jx.f32[33]")
    src += "\n\n@jx.export(z=jx.f32[3])\ndef twice(z):\n    return z * 2\n"
    (built / "model.py").write_text(src)
    r = run("compile", built / "model.py", "-o", built / "out", "--check")
    assert r.exit_code == 1
    assert "entry 'norm'" in r.stderr and "float32[32]" in r.stderr and \
        "float32[33]" in r.stderr
    assert "entry 'twice' is new" in r.stderr


def test_check_against_another_cpu_and_a_missing_artifact(built, tmp_path_factory):
    r = run("compile", built / "model.py", "-o", built / "v2", "--cpu", "x86-64-v2")
    assert r.exit_code == 0, r.output
    r = run("compile", built / "model.py", "-o", built / "v2", "--check")
    assert r.exit_code == 1 and "built for CPU x86-64-v2" in r.stderr, r.stderr
    assert "--cpu x86-64-v2" in r.stderr
    r = run("compile", built / "model.py", "-o", built / "v2", "--check", "--cpu", "x86-64-v2")
    assert r.exit_code == 0, r.output
    empty = tmp_path_factory.mktemp("empty")
    r = run("compile", built / "model.py", "-o", empty, "--check")
    assert r.exit_code == 1 and "libmodel.so is missing" in r.stderr
    assert os.listdir(empty) == []


def test_check_names_a_different_prefix(built):
    r = run("compile", built / "model.py", "-o", built / "p", "--prefix", "m2", "--name",
            "model")
    assert r.exit_code == 0, r.output
    r = run("compile", built / "model.py", "-o", built / "p", "--check")
    assert r.exit_code == 1 and "symbol prefix is 'm2'" in r.stderr, r.stderr


def test_compile_json_records_what_was_built(built):
    out = built / "built.json"
    r = run("compile", built / "model.py", "-o", built / "out", "--json", out)
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["command"] == "compile"
    m, = doc["models"]
    assert m["files"]["library"].endswith("libmodel.so") and len(m["content_hash"]) == 64
    entries = {e["name"]: e for e in m["entries"]}
    assert set(entries) == {"predict", "norm"}
    assert entries["predict"]["inputs"][0]["shape"] == [16, 8]
    assert entries["norm"]["outputs"][0]["shape"] == [32]
    assert all(e["trace_seconds"] >= 0 and len(e["code_sha256"]) == 64
               for e in entries.values())
    r = run("compile", built / "model.py", "-o", built / "out", "--check", "--json", "-")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)                       # stdout holds the JSON alone
    assert doc["command"] == "check" and doc["models"][0]["check"]["up_to_date"] is True


def _run_doc(times: dict, cpu="test cpu", spread=0.02) -> dict:
    """A synthetic `jx bench --json` run: entry -> jx median seconds."""
    return {"command": "jx bench", "machine": {"cpu": cpu, "cores": 2, "threads": 2},
            "entries": [{"name": n, "engines": {"jx": {
                "median_s": t, "min_s": t * (1 - spread), "max_s": t * 1.5,
                "q1_s": t * (1 - spread / 2), "q3_s": t * (1 + spread / 2)}}}
                for n, t in times.items()]}


def _write(folder, name, doc):
    (folder / name).write_text(json.dumps(doc))
    return folder / name


def test_compare_gates_on_a_regression_beyond_the_noise(tmp_path):
    old = _write(tmp_path, "old.json", _run_doc({"a": 1e-3, "b": 2e-3, "c": 5e-6}))
    slow = _write(tmp_path, "slow.json", _run_doc({"a": 1.25e-3, "b": 2.01e-3, "c": 5e-6}))
    r = run("bench", "--compare", old, slow, "--fail-slower", "10")
    assert r.exit_code == 1, r.output
    assert "REGRESSED" in r.stdout and "+25.0%" in r.stdout
    assert "1 entry slower than old.json by more than 10%" in r.stderr and ": a" in r.stderr
    # the same change within a 30% allowance passes; without a gate it is reported only
    assert run("bench", "--compare", old, slow, "--fail-slower", "30").exit_code == 0
    r = run("bench", "--compare", old, slow)
    assert r.exit_code == 0 and "slower" in r.stdout and "REGRESSED" not in r.stdout
    # a 4% change inside 6% noise is not slower, even with a 0% gate
    noisy_old = _write(tmp_path, "n0.json", _run_doc({"a": 1e-3}, spread=0.12))
    noisy_new = _write(tmp_path, "n1.json", _run_doc({"a": 1.04e-3}, spread=0.12))
    r = run("bench", "--compare", noisy_old, noisy_new, "--fail-slower", "0")
    assert r.exit_code == 0 and "within noise" in r.stdout, r.output


def test_compare_refuses_other_machines_and_bad_files(tmp_path):
    a = _write(tmp_path, "a.json", _run_doc({"a": 1e-3}))
    b = _write(tmp_path, "b.json", _run_doc({"a": 1e-3, "new": 1e-3}, cpu="other cpu"))
    r = run("bench", "--compare", a, b)
    assert r.exit_code == 1 and "different machines" in r.stderr and "--any-machine" in r.stderr
    r = run("bench", "--compare", a, b, "--any-machine")
    assert r.exit_code == 0 and "only in b.json" in r.stdout
    (tmp_path / "junk.json").write_text("[1, 2]")
    r = run("bench", "--compare", a, tmp_path / "junk.json")
    assert r.exit_code == 1 and "not a `jx bench --json` run" in r.stderr
    r = run("bench", "--compare", a, tmp_path / "missing.json")
    assert r.exit_code == 1 and "no such file" in r.stderr
    r = run("bench", "--fail-slower", "5")
    assert r.exit_code == 1 and "--baseline" in r.stderr


BAD = "import jx\n\n\n@jx.export(x=jx.f32[4])\ndef f(x):\n    if x > 0:\n        return x\n"


@pytest.mark.parametrize("command", [["dump-ir"], ["compile"], ["compile", "--check"],
                                     ["bench", "--no-jax", "--min-time", "0"]])
def test_error_formats_on_a_bad_model(tmp_path, command):
    (tmp_path / "bad.py").write_text(BAD)
    extra = ["-o", tmp_path / "o"] if command[0] == "compile" else []
    texts = {}
    for fmt in ("text", "json", "github"):
        r = run(*command, tmp_path / "bad.py", *extra, "--error-format", fmt)
        assert r.exit_code == 1, (fmt, r.output)
        texts[fmt] = r.stderr.strip().splitlines()
    obj = json.loads(texts["json"][0])
    gh = texts["github"][0]
    assert obj["severity"] == "error" and "if" in obj["message"]
    assert len(texts["json"]) == len(texts["github"]) == 1
    if command[0] == "bench":        # its engines' failures are reported by entry name
        assert texts["text"][0].startswith("error: no engine could run bad.py:f")
        assert obj["file"] is None and gh.startswith("::error::no engine could run")
        return
    assert texts["text"][0].startswith(f"{tmp_path / 'bad.py'}:6: error: ")
    assert obj["file"] == str(tmp_path / "bad.py") and obj["line"] == 6
    assert gh.startswith(f"::error file={str(tmp_path / 'bad.py').replace(':', '%3A')},"
                         "line=6::")


def test_exit_codes(built):
    assert run("compile", built / "model.py", "-o", built / "out", "--check").exit_code == 0
    assert run("compile", built / "nope.py").exit_code == 1             # an error
    assert run("compile", "--no-such-option", built / "model.py").exit_code == 2   # usage
    assert run("compile").exit_code == 2                                # missing argument
    assert run("dump-ir", built / "model.py", "--error-format", "xml").exit_code == 2


def test_reproducible_builds_with_fixed_constants(built, tmp_path, monkeypatch):
    """JX_TUNE=off: a build from an empty object cache equals the first byte for byte."""
    monkeypatch.setenv("JX_TUNE", "off")
    r = run("compile", built / "model.py", "-o", tmp_path / "a")
    assert r.exit_code == 0, r.output
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path / "fresh-cache"))
    from jx.codegen.cpu import tuning
    tuning.forget()
    try:
        r = run("compile", built / "model.py", "-o", tmp_path / "a", "--check")
    finally:
        tuning.forget()
    assert r.exit_code == 0, r.output
    shutil.rmtree(tmp_path / "fresh-cache", ignore_errors=True)
