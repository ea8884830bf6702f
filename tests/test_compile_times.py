"""`jx compile` says where each entry's time went (issue 27): --json has every
entry's stages (trace, passes, fuse, emit) and the module-wide ones (emit, optimise,
codegen, link, load), and -v prints one line per entry and one for the module."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")

from test_compile import TINY as MODEL  # noqa: E402  (the same two-entry model)
ENTRY_STAGES = ("trace", "passes", "fuse", "emit")
MODULE_STAGES = ("emit", "optimise", "codegen", "link", "load")


def jx_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "jx.cli.main", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JX_TUNE": "off", **(env or {})})


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("times")
    (d / "times.py").write_text(MODEL)
    return d, {"JX_CACHE_DIR": str(d / "cache")}


def _check_json(rec: dict) -> None:
    names = [e["name"] for e in rec["entries"]]
    assert names == ["affine", "shift"]
    for e in rec["entries"]:
        st, total = e["stages"], e["total_seconds"]
        assert set(ENTRY_STAGES) <= set(st), st
        assert all(isinstance(v, (int, float)) and v >= 0 for v in st.values()), st
        assert sum(st.values()) <= total, (st, total)
        assert e["trace_seconds"] >= 0 and total <= rec["seconds"]
    mod = rec["build_stages"]
    assert set(MODULE_STAGES) <= set(mod) and "other" in mod, mod
    assert all(v >= 0 for v in mod.values()), mod
    assert sum(mod.values()) <= rec["build_seconds"] + 1e-3, (mod, rec["build_seconds"])


def test_json_has_each_entrys_stages(model):
    d, env = model
    r = jx_cli("compile", d / "times.py", "-o", d / "out", "--json", "-", env=env)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)["models"][0]
    _check_json(rec)
    assert not rec["cache_hit"]
    # a build that compiled emitted each entry's IR and ran LLVM and the linker
    assert all(e["stages"]["emit"] > 0 for e in rec["entries"])
    mod = rec["build_stages"]
    assert mod["link"] > 0 and mod["optimise"] + mod["codegen"] + mod.get("llvm", 0) > 0
    # the cached rebuild (artifact cache hit) has the same keys, no emission
    r = jx_cli("compile", d / "times.py", "-o", d / "out", "--json", "-", env=env)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)["models"][0]
    _check_json(rec)
    if rec["cache_hit"]:
        assert all(e["stages"]["emit"] == 0 for e in rec["entries"])


def test_verbose_prints_a_line_per_entry_and_the_module(model):
    d, env = model
    r = jx_cli("compile", d / "times.py", "-o", d / "out_v", "-v", env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    number = r"\d+\.\d ms"
    for name in ("affine", "shift"):
        found = [ln for ln in lines if ln.startswith(f"entry {name}: ")]
        assert len(found) == 1, r.stdout
        assert re.fullmatch(rf"entry {name}: trace {number}, passes {number}, fuse {number}, "
                            rf"emit {number}(, \w+ {number})*, total {number}", found[0]), found
    module = [ln for ln in lines if ln.startswith("module ")]
    assert len(module) == 1, r.stdout
    for stage in MODULE_STAGES:
        assert re.search(rf"\b{stage} {number}", module[0]), module
    # without -v, none of it
    r = jx_cli("compile", d / "times.py", "-o", d / "out_v", env=env)
    assert r.returncode == 0 and "entry affine:" not in r.stdout
