"""`jx inspect ARTIFACT` on every sample that compiles, its --json report against
what jx.runtime.load reads, and the errors for files that are not artifacts or
were damaged; `jx compile` of several models and the warning when a rebuild drops
entries of the artifact it replaces."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import jx.runtime
from jx.cli.main import main
from jx.runtime import elf, treespec
from jx.runtime.errors import ArtifactLoadError

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted(p.name for p in (ROOT / "samples").glob("*.py"))


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """{sample: its lib<name>.so, or the reason it did not compile (the samples are
    compiled and run by test_samples_compiled.py; here they are only read)}."""
    out = tmp_path_factory.mktemp("samples")
    found = {}
    for name in SAMPLES:      # one call each, so one sample that fails spares the others
        r = CliRunner().invoke(main, ["compile", str(ROOT / "samples" / name), "-o", str(out)])
        why = r.stderr.strip() or repr(r.exception)
        found[name] = out / f"lib{name[:-3]}.so" if r.exit_code == 0 else why
    return found


def _artifact(built, name):
    got = built[name]
    if not isinstance(got, Path):
        pytest.skip(f"{name} does not compile here: {got[:300]}")
    return got


@pytest.mark.parametrize("name", SAMPLES)
def test_inspect_every_sample(built, name):
    path = _artifact(built, name)
    r = cli("inspect", path)
    assert r.exit_code == 0, r.output
    art = jx.runtime.load(path)
    m = art.manifest
    text = r.stdout
    for needle in (str(path), m["target"], m["cpu"], m["jx_version"], m["content_hash"],
                   f"ABI version {m['abi_version']}", hashlib.sha256(path.read_bytes()).hexdigest(),
                   "seal            intact", *m.get("cpu_features", [])):
        assert needle in text, needle
    for e in m["entries"]:
        assert f"entry {e['name']}(" in text
        assert e["symbol"] in text
        for leaf in e["inputs"]:
            shape = f"{leaf['dtype']}[{', '.join(map(str, leaf['shape']))}]"
            assert f"{leaf['path']}" in text and shape in text


@pytest.mark.parametrize("name", ["mlp.py", "ode.py"])
def test_json_report_round_trips(built, name):
    path = _artifact(built, name)
    r = cli("inspect", path, "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    art = jx.runtime.load(path)
    assert rep["manifest"] == art.manifest
    assert rep["content_hash"] == art.content_hash
    assert rep["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    data = path.read_bytes()[:-elf.SEAL_SIZE]
    assert rep["manifest_sha256"].encode() in data      # the checksum built beside it
    assert [e["name"] for e in rep["entries"]] == list(art.entries)
    for e, me in zip(rep["entries"], art.manifest["entries"]):
        assert e["in_tree"] == str(treespec.decode(me["in_tree"]))
        assert e["out_tree"] == str(treespec.decode(me["out_tree"]))
        assert (e["inputs"], e["outputs"], e["arg_names"]) == \
            (me["inputs"], me["outputs"], me["arg_names"])
    names = {s["name"] for s in rep["symbols"]}
    assert {e["symbol"] for e in rep["entries"]} <= names
    assert rep["cpu_features"] == art.manifest.get("cpu_features", [])
    assert json.loads(json.dumps(rep)) == rep


def test_inspect_imports_no_compiler(built):
    """Reading an artifact loads nothing of the compiler (passes, codegen, LLVM)."""
    path = _artifact(built, "mlp.py")
    code = ("import sys; from jx.cli import inspect; r = inspect.report(sys.argv[1]); "
            "assert r['entries']; print(' '.join(sorted(m for m in sys.modules if "
            "m.startswith(('jx.passes', 'jx.codegen', 'llvmlite')))))")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_foreign_machine_artifact_is_described_not_loaded(built, tmp_path):
    """An artifact built for another machine is read from its bytes (the loader would
    refuse it): the report names that machine."""
    path = _artifact(built, "mlp.py")
    data = bytearray(path.read_bytes()[:-elf.SEAL_SIZE])
    data[18:20] = (183).to_bytes(2, "little")           # e_machine: AArch64
    foreign = tmp_path / "libforeign.so"
    foreign.write_bytes(elf.seal(bytes(data)))
    r = cli("inspect", foreign)
    assert r.exit_code == 0, r.output
    assert "AArch64 (64-bit)" in r.stdout
    with pytest.raises(ArtifactLoadError, match="AArch64"):
        jx.runtime.load(foreign)


def _error(*args) -> str:
    r = cli("inspect", *args)
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    assert r.stdout == ""
    return r.stderr.strip()


def test_damaged_and_foreign_files_are_clear_errors(built, tmp_path):
    path = _artifact(built, "mlp.py")
    data = path.read_bytes()
    flipped = bytearray(data)
    flipped[data.index(b'"float32"') + 1] ^= 0x20      # one byte of the manifest
    cases = {
        "flipped.so": (bytes(flipped), "modified or corrupted"),
        "cut.so": (data[:len(data) // 3], "truncated"),
        "empty.so": (b"", "is empty"),
        "text.so": (b"hello, world\n" * 10, "is not a jx artifact"),
    }
    for fname, (content, words) in cases.items():
        p = tmp_path / fname
        p.write_bytes(content)
        msg = _error(p)
        assert str(p) in msg and words in msg, msg
        assert "jx compile" in msg, msg
    # a shared object that jx did not build: no manifest in it
    libm = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/libm.so.6",
                             "/lib64/libm.so.6") if os.path.exists(p)), None)
    if libm:
        assert "holds no jx manifest" in _error(libm)
    # the manifest edited and the file resealed: the checksum beside it still catches it
    body = bytearray(data[:-elf.SEAL_SIZE])
    body[body.index(b'"float32"') + 1] ^= 0x20
    resealed = tmp_path / "resealed.so"
    resealed.write_bytes(elf.seal(bytes(body)))
    assert "does not match the checksum" in _error(resealed)
    assert "no such file" in _error(tmp_path / "missing.so")
    assert "is a directory" in _error(tmp_path)
    assert "model source" in _error(ROOT / "samples" / "mlp.py")


def test_cuda_manifest_is_read(tmp_path, built):
    """A CUDA build's .cuda.json reads without a GPU: its arch is the 'CPU'."""
    path = _artifact(built, "mlp.py")
    m = dict(jx.runtime.load(path).manifest)
    m.update(target="nvptx64-nvidia-cuda", cpu="sm_80", cpu_features=[], target_kind="cuda",
             ptx="mlp.ptx", cubin=None)
    (tmp_path / "mlp.ptx").write_text("// ptx\n")
    cuda = tmp_path / "mlp.cuda.json"
    cuda.write_text(json.dumps(m, indent=1, sort_keys=True))
    r = cli("inspect", cuda)
    assert r.exit_code == 0, r.output
    assert "CUDA manifest" in r.stdout and "sm_80" in r.stdout and "mlp.ptx" in r.stdout
    cuda.write_text("{not json")
    assert "is not valid JSON" in _error(cuda)


def test_baked_constants_are_shown(tmp_path, built):
    """Baked constants (jx.bake's records, per entry or for the whole artifact) are shown."""
    from jx.cli import inspect
    path = _artifact(built, "mlp.py")
    rep = inspect.report(str(path))
    record = {"arg": "params", "origin": "weights.npz", "sha256": "ab" * 32,
              "leaves": [{"path": "params['w1']", "shape": [784, 1024], "dtype": "float32"}]}
    rep["entries"][0]["baked"] = [record]
    rep["baked"] = [{"name": "table", "dtype": "int32", "shape": [3], "sha256": "cd" * 32}]
    text = inspect.text(rep)
    assert "baked (stored in the artifact, not arguments)" in text
    assert "params  from weights.npz  sha256 " + "ab" * 32 in text
    assert "params['w1']  float32[784, 1024]" in text
    assert "baked constants" in text and "table  int32[3]  sha256 " + "cd" * 32 in text


def test_static_library_and_prefix(tmp_path):
    """A static library (--static) and a prefixed build read the same way."""
    model = ROOT / "samples" / "ode.py"
    r = cli("compile", model, "--static", "--prefix", "odex", "-o", tmp_path)
    if r.exit_code != 0 and "no such option" in r.output:
        pytest.skip("this jx compile has no --static/--prefix")
    assert r.exit_code == 0, r.output
    r = cli("inspect", tmp_path / "libodex.a")
    assert r.exit_code == 0, r.output
    assert "static library" in r.stdout and "symbol prefix   odex_" in r.stdout
    assert "odex_integrate" in r.stdout and "float32[" in r.stdout


# -- jx compile with several models ----------------------------------------------------
def test_compile_several_models_in_one_call(tmp_path):
    models = [ROOT / "samples" / n for n in ("ode.py", "elementwise.py")]
    r = cli("compile", *models, "-o", tmp_path)
    assert r.exit_code == 0, r.output
    for stem in ("ode", "elementwise"):
        assert (tmp_path / f"lib{stem}.so").exists() and (tmp_path / f"{stem}.h").exists()
        assert f"wrote {tmp_path / f'lib{stem}.so'}" in r.stdout
    # --entry applies to the models that have it; a model with none of them is skipped
    r = cli("compile", *models, "-o", tmp_path / "e", "-e", "chain")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "e" / "libelementwise.so").exists()
    assert not (tmp_path / "e" / "libode.so").exists()
    assert "skipped" in r.stderr and "ode.py" in r.stderr
    # a name no model has is an error, as is --name for several artifacts
    r = cli("compile", *models, "-o", tmp_path / "x", "-e", "nope")
    assert r.exit_code == 1 and "no model given has an entry 'nope'" in r.stderr
    r = cli("compile", *models, "--name", "both")
    assert r.exit_code == 1 and "--name 'both' names one artifact" in r.stderr


def test_two_models_with_one_file_name_are_refused(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "m.py").write_text(
            "import jx\n@jx.export(x=jx.f32[4])\ndef f(x):\n    return x * 2\n")
    r = cli("compile", tmp_path / "a" / "m.py", tmp_path / "b" / "m.py", "-o", tmp_path / "o")
    assert r.exit_code == 1 and "would both be written as" in r.stderr
    assert not (tmp_path / "o").exists()


def test_replacing_an_artifact_with_other_entries_warns(tmp_path):
    model = ROOT / "samples" / "elementwise.py"
    r = cli("compile", model, "-o", tmp_path)
    assert r.exit_code == 0 and "warning" not in r.stderr, r.output
    r = cli("compile", model, "-o", tmp_path)                 # same entries: quiet
    assert r.exit_code == 0 and "warning" not in r.stderr, r.output
    r = cli("compile", model, "-o", tmp_path, "-e", "chain")
    assert r.exit_code == 0, r.output
    lib = tmp_path / "libelementwise.so"
    assert f"warning: replaced {lib}" in r.stderr
    assert "dropped entries sum_of_squares" in r.stderr
    r = cli("compile", model, "-o", tmp_path)
    assert "added sum_of_squares" in r.stderr
    lib.write_bytes(b"junk")
    r = cli("compile", model, "-o", tmp_path)
    assert r.exit_code == 0 and "was not a readable jx artifact" in r.stderr
