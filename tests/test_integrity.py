"""Integrity of what jx reads back from disk: the compile cache's objects, the
parallel runtime it builds there, and artifacts given to jx.runtime.load.

Every damaged file must be detected before LLVM, cc or the dynamic loader sees
it: a cache entry becomes a miss and is rebuilt, an artifact is refused with a
specific error. Loads and JIT runs of damaged files happen in subprocesses, so a
regression shows up as a failed assertion, not a crashed test session.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import textwrap

import pytest

from jx.codegen.cpu import cache, parallel
from jx.runtime import elf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler `cc`")


def run_python(code: str, env: dict, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env={**os.environ, **env})


# -- the compile cache ----------------------------------------------------------------------
# Two jitted functions checked against NumPy; prints how many objects LLVM emitted
# (0 when every one came from the cache). The keys' source fingerprint is pinned:
# the backend's sources edited while the test runs must not change them.
JIT_SCRIPT = """
    import numpy as np
    import jx, jx.numpy as jnp
    from jx.codegen.cpu import cache, compiler
    cache.sources_fingerprint = lambda: "test_integrity"
    x = (np.arange(1200, dtype=np.float32).reshape(12, 100) / 300 - 2)
    f = jx.jit(lambda a: jnp.tanh(a) * 2 + a.sum(axis=0))
    g = jx.jit(lambda a: jnp.exp(-a * a).sum(axis=1))
    np.testing.assert_allclose(f(x), np.tanh(x) * 2 + x.sum(axis=0), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(g(x), np.exp(-x * x).sum(axis=1), rtol=1e-5, atol=1e-4)
    print("emitted", compiler.EMITTED[0])
"""


def jit_run(cache_dir) -> int:
    """Run JIT_SCRIPT against cache_dir; the number of objects LLVM had to emit. The
    objects are found by their IR (JX_PROGRAM_CACHE=0): the program cache in front
    of them has its own tests of damaged entries (test_program_cache.py)."""
    r = run_python(JIT_SCRIPT, {"JX_CACHE_DIR": str(cache_dir), "JX_PROGRAM_CACHE": "0"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.strip() == "", r.stderr       # recovery is silent
    return int(r.stdout.split("emitted")[1])


def objects(cache_dir) -> list:
    """Program objects and the runtime's LLVM-built ones (libcalls), both checked."""
    return sorted(p for folder in ("objects", "runtime/objects")
                  for p in (cache_dir / folder).glob("*/*.o"))


def assert_intact(path) -> None:
    key = path.name[:-2]
    data = cache._unwrap(key, path.read_bytes())
    assert data is not None and elf.check_object(data) is None, path


def test_damaged_cache_objects_are_rebuilt(tmp_path):
    c = tmp_path / "cache"
    cold = jit_run(c)
    entries = objects(c)
    assert cold >= 2 and len(entries) >= 2
    assert jit_run(c) == 0                                   # warm: every object reused
    originals = {p: p.read_bytes() for p in entries}

    for p, data in originals.items():                         # cut short (disk full)
        p.write_bytes(data[:len(data) // 2])
    assert jit_run(c) == cold
    for p in entries:
        assert_intact(p)

    a, b = entries[:2]                                        # right file, wrong key
    b.write_bytes(a.read_bytes())
    a.write_bytes(b"\x7fELF" + bytes(200))                    # a bare, empty ELF header
    assert jit_run(c) == 2
    assert a.read_bytes() == originals[a] and b.read_bytes() == originals[b]

    for p, data in originals.items():                         # one flipped byte each
        flipped = bytearray(data)
        flipped[len(data) * 2 // 3] ^= 0x10
        p.write_bytes(bytes(flipped))
    assert jit_run(c) == cold
    assert all(p.read_bytes() == originals[p] for p in entries)


def test_legacy_and_fifo_cache_entries_are_misses(tmp_path):
    c = tmp_path / "cache"
    cold = jit_run(c)
    entries = objects(c)
    for p in entries:          # the raw objects an older jx stored: a miss, never trusted
        p.write_bytes(cache._unwrap(p.name[:-2], p.read_bytes()))
    os.unlink(entries[0])
    os.mkfifo(entries[0])      # reading it would wait for a writer forever
    assert jit_run(c) == cold
    for p in entries:
        assert stat.S_ISREG(os.lstat(p).st_mode)
        assert_intact(p)


def test_cache_entry_under_other_key_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))
    obj = parallel_free_object()
    cache.store("a" * 64, obj)
    assert cache.load("a" * 64) == obj
    os.makedirs(os.path.dirname(cache._path("b" * 64)))
    shutil.copy(cache._path("a" * 64), cache._path("b" * 64))
    assert cache.load("b" * 64) is None
    assert not os.path.exists(cache._path("b" * 64))         # deleted: rebuilt next time


def parallel_free_object() -> bytes:
    """A small relocatable object emitted by LLVM."""
    from jx.codegen.cpu import compiler
    ir_text = ('define i32 @jx_answer() {\n  ret i32 42\n}\n')
    return compiler.emit_object(ir_text)


def test_cache_folders_are_private_under_umask_0(tmp_path):
    c = tmp_path / "deep" / "cache"
    code = "import os; os.umask(0)\n" + textwrap.dedent(JIT_SCRIPT)
    r = run_python(code, {"JX_CACHE_DIR": str(c)})
    assert r.returncode == 0, r.stderr[-3000:]
    folders = [c] + [p for p in c.rglob("*") if p.is_dir()]
    assert len(folders) >= 4                      # root, objects/, a shard, runtime/
    for p in folders + [tmp_path / "deep"]:
        assert stat.S_IMODE(p.stat().st_mode) == 0o700, p
    for p in c.rglob("*"):
        if p.is_file():
            assert stat.S_IMODE(p.stat().st_mode) & 0o022 == 0, p


def test_world_writable_cache_folders_are_made_private(tmp_path, monkeypatch):
    """Folders an older jx created under umask 0 are tightened when next written; the
    root, which a user may have chosen to share, keeps its mode."""
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path / "c"))
    shard = tmp_path / "c" / "objects" / "ab"
    shard.mkdir(parents=True)
    for p in (tmp_path / "c", tmp_path / "c" / "objects", shard):
        os.chmod(p, 0o777)
    cache.store("ab" + "0" * 62, parallel_free_object())
    assert cache.load("ab" + "0" * 62) is not None
    assert stat.S_IMODE(os.stat(tmp_path / "c").st_mode) == 0o777
    for p in (tmp_path / "c" / "objects", shard):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700, p


# -- the parallel runtime built in the cache ------------------------------------------------
@needs_cc
@pytest.mark.parametrize("kind", ["object", "shared"])
def test_damaged_runtime_build_is_rebuilt(tmp_path, monkeypatch, kind):
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))
    path = parallel.Build(kind).wait()
    good = open(path, "rb").read()
    assert cache.is_intact(path)
    for damage in (good[:len(good) // 3], good[:100] + b"\0" * (len(good) - 100)):
        with open(path, "wb") as f:
            f.write(damage)
        assert not cache.is_intact(path)
        assert parallel.Build(kind).wait() == path
        rebuilt = open(path, "rb").read()
        assert cache.is_intact(path) and len(rebuilt) == len(good) and rebuilt[:4] == b"\x7fELF"
    os.unlink(path + ".sha256")             # a build from before the recorded digest
    assert not cache.is_intact(path)
    parallel.Build(kind).wait()
    assert cache.is_intact(path)


@needs_cc
def test_jit_recovers_from_damaged_runtime_library(tmp_path):
    c = tmp_path / "cache"
    jit_run(c)
    (lib,) = (c / "runtime").glob("jx_parallel-*.so")
    lib.write_bytes(lib.read_bytes()[:4096])       # dlopen'ed as is, this would SIGBUS
    jit_run(c)
    assert cache.is_intact(str(lib))


# -- artifacts ------------------------------------------------------------------------------
TINY = '''
import jx
import jx.numpy as jnp

@jx.export(p={"w": jx.f32[4, 3], "b": jx.f32[3]}, x=jx.f32[5, 4])
def affine(p, x):
    return {"y": jnp.maximum(x @ p["w"] + p["b"], 0), "s": x.sum(axis=0)}

@jx.export(v=jx.f32[2])
def double(v):
    return v * 2
'''


@pytest.fixture(scope="module")
def tiny_so(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    (d / "tiny.py").write_text(TINY)
    r = subprocess.run([sys.executable, "-m", "jx.cli.main", "compile", str(d / "tiny.py"),
                        "-o", str(d / "out")], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "JX_CACHE_DIR": str(d / "cache")})
    assert r.returncode == 0, r.stderr
    return d / "out" / "libtiny.so"


@needs_cc
def test_compile_rebuilds_damaged_runtime_objects(tiny_so, tmp_path):
    """jx compile links the runtime, libcalls and routine objects from the cache by
    path: damaged ones are rebuilt, and the artifact comes out byte-identical."""
    c = tmp_path / "cache"
    shutil.copytree(tiny_so.parent.parent / "cache", c)
    shutil.rmtree(c / "artifacts")                       # no cached artifact: link again
    damaged = sorted((c / "runtime").glob("*.o"))
    assert {"jx_parallel", "jx_libcalls"} <= {p.name.split("-")[0] for p in damaged}
    for p in damaged:
        p.write_bytes(p.read_bytes()[:1000])
    r = subprocess.run([sys.executable, "-m", "jx.cli.main", "compile",
                        str(tiny_so.parent.parent / "tiny.py"), "-o", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "JX_CACHE_DIR": str(c)})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "libtiny.so").read_bytes() == tiny_so.read_bytes()
    for p in damaged:
        assert elf.check_object(p.read_bytes()) is None, p


def sections(data: bytes) -> dict:
    """{name: (file offset, size)} of a 64-bit little-endian ELF file's sections."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    rows = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
            for i in range(shnum)]
    names_at = rows[shstrndx][4]
    out = {}
    for row in rows:
        start = names_at + row[0]
        out[data[start:data.index(b"\0", start)].decode()] = (row[4], row[5])
    return out


# Loads each file in a child; prints one line per file: its name, then the error's
# class and message, or "loaded" with what the artifact computed.
LOAD_SCRIPT = """
    import sys, numpy as np
    import jx.runtime as rt
    for path in sys.argv[1:]:
        try:
            a = rt.load(path)
            print(path, "loaded", a.double(np.array([1.5, -2], np.float32)).tolist())
        except rt.ArtifactError as e:
            print(path, type(e).__name__, str(e).replace("\\n", " "))
        sys.stdout.flush()
"""


def load_in_child(paths, timeout: float = 60) -> dict:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(LOAD_SCRIPT), *map(str, paths)],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"the loading process died ({r.returncode}): {r.stderr[-2000:]}"
    found = {}
    for line in r.stdout.splitlines():
        path, kind, rest = line.split(" ", 2)
        found[path] = (kind, rest)
    assert len(found) == len(paths), r.stdout
    return found


def test_good_artifact_loads_and_ends_with_its_seal(tiny_so):
    data = tiny_so.read_bytes()
    assert elf.check_seal(data) is None
    body = data[:-elf.SEAL_SIZE]
    assert data[-elf.SEAL_SIZE:] == elf.SEAL_TAG + hashlib.sha256(body).hexdigest().encode() + b"\n"
    (_, (kind, rest)), = load_in_child([tiny_so]).items()
    assert kind == "loaded" and rest == "[3.0, -4.0]"


def test_flipped_bytes_are_refused_before_loading(tiny_so, tmp_path):
    data = tiny_so.read_bytes()
    secs = sections(data)
    manifest_at = data.index(b'{"abi_version"')
    positions = {"text": secs[".text"][0] + secs[".text"][1] // 2,
                 "text_start": secs[".text"][0],
                 "rodata": secs[".rodata"][0] + 1,
                 "data": secs.get(".data.rel.ro", secs.get(".data", secs[".dynamic"]))[0],
                 "dynamic": secs[".dynamic"][0] + 8,
                 "dynsym": secs[".dynsym"][0] + 30,
                 "relocation": secs[".rela.dyn"][0] + 8,     # a relocation's type
                 "manifest": manifest_at + 40,
                 "seal": len(data) - 10,
                 "last_section_byte": len(data) - elf.SEAL_SIZE - 1}
    paths = []
    for name, at in positions.items():
        for bit in (0x01, 0x80):
            flipped = bytearray(data)
            flipped[at] ^= bit
            p = tmp_path / f"lib{name}_{bit}.so"
            p.write_bytes(bytes(flipped))
            paths.append(p)
    for path, (kind, msg) in load_in_child(paths).items():
        assert kind == "IntegrityError", (path, kind, msg)
        assert path in msg and "modified or corrupted" in msg and "jx compile" in msg
    header = {0x12: "was built for", 0x27: "past the end", 0x3C: "past the end"}
    for at in header:                      # e_machine, e_phoff, e_shnum
        flipped = bytearray(data)
        flipped[at] ^= 0x40
        (tmp_path / f"libheader{at}.so").write_bytes(bytes(flipped))
    found = load_in_child([tmp_path / f"libheader{at}.so" for at in header])
    for at, words in header.items():
        kind, msg = found[str(tmp_path / f"libheader{at}.so")]
        assert kind == "ArtifactLoadError" and words in msg, (at, kind, msg)


def test_truncated_and_unsealed_artifacts_are_refused(tiny_so, tmp_path):
    data = tiny_so.read_bytes()
    cases = {"unsealed": data[:-elf.SEAL_SIZE], "cut_seal": data[:-20],
             "extra": data + b"\0", "doubled_seal": data + data[-elf.SEAL_SIZE:]}
    paths = []
    for name, blob in cases.items():
        (tmp_path / f"lib{name}.so").write_bytes(blob)
        paths.append(tmp_path / f"lib{name}.so")
    found = load_in_child(paths)
    assert found[str(paths[0])][0] == "IntegrityError"
    assert "no jx integrity seal" in found[str(paths[0])][1]
    for p in paths:
        assert found[str(p)][0] == "IntegrityError", found[str(p)]


def reseal(data: bytes) -> bytes:
    """What someone who knows the seal's format would write after editing a file."""
    return elf.seal(data[:-elf.SEAL_SIZE])


def test_edited_manifest_with_recomputed_checksum_is_refused(tiny_so, tmp_path):
    data = tiny_so.read_bytes()
    start = data.index(b'{"abi_version"')
    text = data[start:data.index(b"\0", start)]
    old_sum = hashlib.sha256(text).hexdigest().encode()
    assert data.count(old_sum) == 1
    # double() would now be told its input and output hold 8 floats: a heap overflow
    edited = text.replace(b'"shape":[2]', b'"shape":[8]')
    assert edited != text and len(edited) == len(text)
    new_sum = hashlib.sha256(edited).hexdigest().encode()
    tampered = data.replace(text, edited).replace(old_sum, new_sum)
    (tmp_path / "libedited.so").write_bytes(tampered)
    (kind, msg), = load_in_child([tmp_path / "libedited.so"]).values()
    assert kind == "IntegrityError" and "modified or corrupted" in msg
    # sealed again too: the shapes still disagree with those the code was built for
    (tmp_path / "libresealed.so").write_bytes(reseal(tampered))
    (kind, msg), = load_in_child([tmp_path / "libresealed.so"]).values()
    assert kind == "IntegrityError" and "its code was built for float32[2]" in msg, msg


def test_checksum_symbol_is_required(tiny_so, tmp_path):
    data = tiny_so.read_bytes()
    name = b"tiny_manifest_sha256\0"
    assert data.count(name) >= 1
    renamed = data.replace(name, b"tiny_manifest_sha999\0")
    (tmp_path / "librenamed.so").write_bytes(renamed)
    (tmp_path / "libresealed.so").write_bytes(reseal(renamed))
    found = load_in_child([tmp_path / "librenamed.so", tmp_path / "libresealed.so"])
    assert found[str(tmp_path / "librenamed.so")][0] == "IntegrityError"
    kind, msg = found[str(tmp_path / "libresealed.so")]
    assert kind == "MissingSymbolError" and "tiny_manifest_sha256" in msg


@needs_cc
def test_foreign_library_runs_no_constructor(tmp_path):
    marker = tmp_path / "constructor-ran"
    src = tmp_path / "foreign.c"
    src.write_text(f'#include <stdio.h>\n__attribute__((constructor)) static void init(void)'
                   f' {{ FILE* f = fopen({json.dumps(str(marker))}, "w"); if (f) fclose(f); }}\n'
                   'const char* jx_manifest(void) { return "{}"; }\n')
    so = tmp_path / "libforeign.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(src), "-o", str(so)], check=True)
    (kind, msg), = load_in_child([so]).values()
    assert kind == "IntegrityError" and "no jx integrity seal" in msg
    assert not marker.exists()


def test_non_regular_paths_fail_promptly(tiny_so, tmp_path):
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo)
    loop = tmp_path / "libloop.so"
    os.symlink(loop, loop)
    to_fifo = tmp_path / "libto_fifo.so"
    os.symlink(fifo, to_fifo)
    dangling = tmp_path / "libdangling.so"
    os.symlink(tmp_path / "nothing.so", dangling)
    paths = [fifo, loop, to_fifo, tmp_path, dangling, "/dev/null"]
    found = load_in_child(paths, timeout=60)      # a FIFO used to block here forever
    expect = {fifo: "is a FIFO", loop: "symbolic link that loops", to_fifo: "is a FIFO",
              tmp_path: "is a directory", dangling: "nothing.so, which does not exist",
              "/dev/null": "is a character device"}
    for path, words in expect.items():
        kind, msg = found[str(path)]
        assert kind == "ArtifactLoadError" and words in msg and str(path) in msg, (kind, msg)


def test_regular_file_reader_names_what_it_found(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(elf.NotRegularFile, match="FIFO"):
        elf.read_regular(str(tmp_path / "fifo"))
    with pytest.raises(elf.NotRegularFile, match="directory"):
        elf.read_regular(str(tmp_path))
    (tmp_path / "f").write_bytes(b"abc")
    assert elf.read_regular(str(tmp_path / "f")) == b"abc"
