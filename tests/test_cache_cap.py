"""The compile cache's size cap (JX_CACHE_MAX, least recently used entries evicted
first, a hit renewing its entry) and `jx cache info` / `jx cache clear`."""
import json
import os
import time

import pytest
from click.testing import CliRunner

from jx.cli.main import main
from jx.codegen.cpu import cache


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("JX_CACHE_DIR", str(root))
    monkeypatch.delenv("JX_CACHE_MAX", raising=False)
    return root


def cli(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("text, value", [
    ("500M", 500 << 20), ("2G", 2 << 30), ("1.5g", 3 << 29), ("4096", 4096),
    ("64KiB", 64 << 10), ("64kb", 64 << 10), ("10 MB", 10 << 20), (".5K", 512),
    ("1T", 1 << 40), ("0", None), ("none", None), ("unlimited", None)])
def test_parse_size(text, value):
    assert cache.parse_size(text) == value


@pytest.mark.parametrize("text", ["", "abc", "-5M", "5X", "M", "nan", "1e3", "5 G G"])
def test_parse_size_refuses(text):
    with pytest.raises(ValueError, match="is not a size"):
        cache.parse_size(text)


def _store_artifact(tmp_path, key: str, size: int = 20000) -> list:
    src = {"so": tmp_path / f"{key[:6]}.so", "h": tmp_path / f"{key[:6]}.h"}
    src["so"].write_bytes(os.urandom(size))
    src["h"].write_text("/* header */\n")
    cache.store_files(key, {k: str(v) for k, v in src.items()})
    base = os.path.join(cache.cache_dir(), "artifacts", key[:2], key)
    return [f"{base}.so", f"{base}.h"]


def _age(paths, seconds_ago: float) -> None:
    t = time.time() - seconds_ago
    for p in paths:
        os.utime(p, (t, t))


def test_least_recently_used_entries_go_first(cache_dir, tmp_path, monkeypatch):
    keys = [c * 64 for c in "abcd"]
    a = _store_artifact(tmp_path, keys[0])
    unit = sum(cache._disk_bytes(os.stat(p)) for p in a)
    monkeypatch.setenv("JX_CACHE_MAX", str(int(unit * 3.5)))
    b = _store_artifact(tmp_path, keys[1])
    c = _store_artifact(tmp_path, keys[2])
    assert all(os.path.exists(p) for p in a + b + c)        # three fit under the cap
    _age(a, 300), _age(b, 200), _age(c, 100)
    # a hit renews a: b is now the least recently used
    dests = {"so": str(tmp_path / "out.so"), "h": str(tmp_path / "out.h")}
    assert cache.load_files(keys[0], dests)
    assert os.stat(a[0]).st_mtime > time.time() - 60
    d = _store_artifact(tmp_path, keys[3])                  # the fourth passes the cap
    assert not any(os.path.exists(p) for p in b)            # .so and .h go together
    assert all(os.path.exists(p) for p in a + c + d)
    assert not cache.load_files(keys[1], dests)             # a miss, not an error
    u = cache.usage()
    assert u["entries"] == 3 and u["entry_bytes"] <= int(unit * 3.5)
    # the running total agrees with a walk of the folder
    with open(os.path.join(cache.cache_dir(), "size")) as f:
        assert int(f.read()) == u["entry_bytes"]


def test_object_hits_renew_and_the_new_entry_is_kept(cache_dir, tmp_path, monkeypatch):
    obj = _object()
    cache.store("1" * 64, obj)
    path = cache._path("1" * 64)
    _age([path], 1000)
    assert cache.load("1" * 64) == obj
    assert os.stat(path).st_mtime > time.time() - 60        # touched by the hit
    # an entry larger than the cap alone: the others go, the one just stored stays
    monkeypatch.setenv("JX_CACHE_MAX", "1K")
    cache.store("2" * 64, obj)
    assert not os.path.exists(path) and cache.load("2" * 64) == obj


def test_no_cap_and_a_bad_cap(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("JX_CACHE_MAX", "none")
    paths = [p for i in range(3) for p in _store_artifact(tmp_path, str(i) * 64, 5000)]
    assert all(os.path.exists(p) for p in paths)
    monkeypatch.setenv("JX_CACHE_MAX", "lots")
    with pytest.warns(UserWarning, match="JX_CACHE_MAX.*'lots' is not a size"):
        assert cache.max_bytes() == cache.DEFAULT_MAX
    r = CliRunner().invoke(main, ["cache", "info"])
    assert r.exit_code == 1 and "JX_CACHE_MAX: 'lots' is not a size" in r.stderr


def test_a_lost_running_total_is_counted_again(cache_dir, tmp_path, monkeypatch):
    a = _store_artifact(tmp_path, "a" * 64)
    os.unlink(os.path.join(cache.cache_dir(), "size"))
    _store_artifact(tmp_path, "b" * 64)
    with open(os.path.join(cache.cache_dir(), "size")) as f:
        assert int(f.read()) == cache.usage()["entry_bytes"]
    assert os.path.exists(a[0])


def _object() -> bytes:
    from jx.codegen.cpu import compiler
    return compiler.emit_object("define i32 @jx_answer() {\n  ret i32 42\n}\n")


def test_cache_info_and_clear(cache_dir, tmp_path, monkeypatch):
    r = cli("cache", "info")
    assert r.exit_code == 0 and "not created yet" in r.stdout and "cap 1G (default)" in r.stdout
    for i in range(2):
        _store_artifact(tmp_path, str(i) * 64, 3000)
    cache.store("c" * 64, _object())
    (cache_dir / "runtime").mkdir()
    (cache_dir / "runtime" / "jx_parallel-0.o").write_bytes(b"x" * 100)
    (cache_dir / "tuning.json").write_text("{}")
    (cache_dir / "notes.txt").write_text("the user's own file")
    monkeypatch.setenv("JX_CACHE_MAX", "500M")
    r = cli("cache", "info")
    assert r.exit_code == 0, r.output
    assert str(cache_dir) in r.stdout and "cap 500M (JX_CACHE_MAX)" in r.stdout
    assert "3 (" in r.stdout and "1 objects, 2 artifacts" in r.stdout
    info = json.loads(cli("cache", "info", "--json").stdout)
    assert info["entries"] == 3 and info["max_bytes"] == 500 << 20
    assert info["oldest"] <= info["newest"] <= time.time() + 1
    assert info["total_bytes"] >= info["entry_bytes"] > 6000
    r = cli("cache", "clear")
    assert r.exit_code == 0 and r.stdout.startswith("removed ")
    assert cache.usage()["entries"] == 0
    assert not (cache_dir / "runtime").exists() and not (cache_dir / "objects").exists()
    assert (cache_dir / "tuning.json").exists() and (cache_dir / "notes.txt").exists()
    cli("cache", "clear", "--all")
    assert not (cache_dir / "tuning.json").exists()
    assert (cache_dir / "notes.txt").exists()             # never what jx did not write
