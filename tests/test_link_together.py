"""Several artifacts in one C program: every exported symbol carries its artifact's
prefix (the model's name, or `jx compile --prefix`), and the runtime linked into
each is hidden, so two different models, and two builds of one model with
different prefixes, link side by side, as shared objects and as static libraries
(`jx compile --static`, found through pkg-config or CMake). The C program calls
an entry of each; its outputs are checked against NumPy."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
CC = shutil.which("cc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler `cc` on PATH: the "
                                "artifacts are linked into C programs by these tests")

# (prefix, model, entry, --shape): two models, and mlp again under a second prefix
BUILDS = [("mlp", "mlp", "predict", ("x=f32[4,784]",)),
          ("elementwise", "elementwise", "chain", ("x=f32[8,16]",)),
          ("mlp_b", "mlp", "predict", ("x=f32[4,784]",))]


def _compile(out: Path, prefix: str, model: str, entry: str, shapes: tuple,
             static: bool) -> dict:
    from jx.cli.compile import compile_model
    return compile_model(str(SAMPLES / f"{model}.py"), str(out), (entry,), shapes, "cpu",
                         None, None, prefix=None if prefix == model else prefix,
                         static=static)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """{"shared"/"static": (folder, {prefix: build result})}."""
    out = {}
    for kind in ("shared", "static"):
        folder = tmp_path_factory.mktemp(kind)
        out[kind] = folder, {p: _compile(folder, p, m, e, s, kind == "static")
                             for p, m, e, s in BUILDS}
    return out


def _inputs(manifest: dict, seed: int) -> list:
    """Random leaves for the manifest's only entry, in ABI order."""
    rng = np.random.default_rng(seed)
    (entry,) = manifest["entries"]
    return [rng.standard_normal(leaf["shape"]).astype(leaf["dtype"])
            for leaf in entry["inputs"]]


def _reference(model: str, manifest: dict, leaves: list) -> np.ndarray:
    """The entry computed by NumPy (float64, then float32)."""
    (entry,) = manifest["entries"]
    named = {leaf["path"]: x.astype(np.float64) for leaf, x in zip(entry["inputs"], leaves)}
    if model == "mlp":
        p = {k: named[f"params['{k}']"] for k in ("w1", "b1", "w2", "b2", "w3", "b3")}
        h = np.maximum(named["x"] @ p["w1"] + p["b1"], 0)
        h = np.maximum(h @ p["w2"] + p["b2"], 0)
        return (h @ p["w3"] + p["b3"]).astype(np.float32)
    x = named["x"]
    y = np.tanh(x * 0.5 + 1.0)
    y = np.exp(-np.abs(y)) * 2.0
    y = np.sqrt(y + x * x)
    y = y - 0.25 * x
    return np.maximum(y, 0.0).astype(np.float32)


# One program calling an entry of every artifact: each reads its inputs from
# <dir>/<prefix>.in (leaves back to back) and writes its output to <prefix>.out.
# Valid C and C++. Also checks that each manifest function returns its own
# artifact's manifest and that each artifact has its own thread pool.
MAIN_C = textwrap.dedent(r"""
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include "mlp.h"
    #include "elementwise.h"
    #include "mlp_b.h"

    static const char* dir;

    static int run(const char* tag, int32_t (*fn)(const void**, void**), int n_in,
                   const size_t* in_bytes, size_t out_bytes) {
        char path[4096];
        const void* ins[16];
        void* outs[1];
        FILE* f;
        int k, status;
        snprintf(path, sizeof path, "%s/%s.in", dir, tag);
        f = fopen(path, "rb");
        if (!f) { perror(path); return 1; }
        for (k = 0; k < n_in; k++) {
            void* buf = malloc(in_bytes[k]);
            if (!buf || fread(buf, 1, in_bytes[k], f) != in_bytes[k]) return 1;
            ins[k] = buf;
        }
        fclose(f);
        outs[0] = malloc(out_bytes);
        status = fn(ins, outs);
        if (status != JX_OK) { fprintf(stderr, "%s: status %d\n", tag, (int)status); return 1; }
        snprintf(path, sizeof path, "%s/%s.out", dir, tag);
        f = fopen(path, "wb");
        if (!f || fwrite(outs[0], 1, out_bytes, f) != out_bytes) return 1;
        fclose(f);
        for (k = 0; k < n_in; k++) free((void*)ins[k]);
        free(outs[0]);
        printf("ran %s\n", tag);
        return 0;
    }

    #define RUN(p, P, e, E) do { \
        const size_t in_bytes[] = P##_##E##_INPUT_BYTES; \
        const size_t out_bytes[] = P##_##E##_OUTPUT_BYTES; \
        if (run(#p, p##_##e, P##_##E##_NUM_INPUTS, in_bytes, out_bytes[0])) return 1; \
    } while (0)

    #define OWN_MANIFEST(p) do { \
        if (p##_abi_version() != JX_ABI_VERSION) return 2; \
        if (!strstr(p##_manifest(), "\"prefix\":\"" #p "\"")) { \
            fprintf(stderr, #p "_manifest() is another artifact's\n"); return 3; } \
    } while (0)

    int main(int argc, char** argv) {
        if (argc < 2) return 1;
        dir = argv[1];
        OWN_MANIFEST(mlp);
        OWN_MANIFEST(elementwise);
        OWN_MANIFEST(mlp_b);
        mlp_set_num_threads(1);        /* one artifact's pool leaves the others' alone */
        elementwise_set_num_threads(2);
        mlp_b_set_num_threads(3);
        printf("threads %d %d %d\n", mlp_get_num_threads(), elementwise_get_num_threads(),
               mlp_b_get_num_threads());
        RUN(mlp, MLP, predict, PREDICT);
        RUN(elementwise, ELEMENTWISE, chain, CHAIN);
        RUN(mlp_b, MLP_B, predict, PREDICT);
        return 0;
    }
""")


def _run_program(exe: Path, folder: Path, results: dict) -> None:
    """Run the program on fresh inputs; every output must match NumPy's."""
    data = {}
    for seed, (prefix, model, _, _) in enumerate(BUILDS):
        manifest = results[prefix]["manifest"]
        leaves = _inputs(manifest, seed)
        (folder / f"{prefix}.in").write_bytes(b"".join(x.tobytes() for x in leaves))
        data[prefix] = model, manifest, leaves
    run = subprocess.run([str(exe), str(folder)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "threads 1 2 3" in run.stdout, run.stdout
    for prefix, (model, manifest, leaves) in data.items():
        (entry,) = manifest["entries"]
        out = entry["outputs"][0]
        got = np.frombuffer((folder / f"{prefix}.out").read_bytes(), out["dtype"])
        want = _reference(model, manifest, leaves)
        np.testing.assert_allclose(got.reshape(out["shape"]), want, rtol=2e-4, atol=2e-4,
                                   err_msg=f"{prefix}_{entry['name']} called from C")


def _cc(*args) -> None:
    r = subprocess.run([*args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, " ".join(map(str, args)) + "\n" + r.stderr


def _needed(exe: Path) -> set:
    """The shared libraries an executable needs (readelf), or None without readelf."""
    if not shutil.which("readelf"):
        return None
    r = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True, check=True)
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", r.stdout))


def test_shared_objects_link_into_one_program(built, tmp_path):
    folder, results = built["shared"]
    (tmp_path / "main.c").write_text(MAIN_C)
    exe = tmp_path / "main"
    libs = [str(results[p]["library"]) for p, *_ in BUILDS]
    _cc(CC, "-std=c99", "-pedantic", "-Wall", "-Werror", "-I", str(folder),
        str(tmp_path / "main.c"), *libs, f"-Wl,-rpath,{folder}", "-o", str(exe))
    _run_program(exe, tmp_path, results)


def test_static_libraries_link_into_one_program(built, tmp_path):
    """No runtime dependency beyond libc, libm and pthreads; C and C++."""
    folder, results = built["static"]
    assert {p.name for p in folder.iterdir()} == {
        name for p, *_ in BUILDS for name in (f"lib{p}.a", f"{p}.h", f"{p}.pc",
                                              f"{p}Config.cmake")}
    (tmp_path / "main.c").write_text(MAIN_C)
    libs = [str(results[p]["library"]) for p, *_ in BUILDS]
    exe = tmp_path / "main"
    _cc(CC, "-std=c99", "-pedantic", "-Wall", "-Werror", "-I", str(folder),
        str(tmp_path / "main.c"), *libs, "-lm", "-pthread", "-o", str(exe))
    needed = _needed(exe)
    if needed is not None:
        allowed = re.compile(r"(libc|libm|libpthread)\.so\.\d+|ld-linux.*")
        assert all(allowed.fullmatch(n) for n in needed), needed
    _run_program(exe, tmp_path, results)
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx:
        (tmp_path / "main.cpp").write_text(MAIN_C)
        _cc(cxx, "-Wall", "-Werror", "-I", str(folder), str(tmp_path / "main.cpp"), *libs,
            "-lm", "-pthread", "-o", str(tmp_path / "main_cxx"))
        _run_program(tmp_path / "main_cxx", tmp_path, results)


def test_static_libraries_through_pkg_config(built, tmp_path):
    pkg_config = shutil.which("pkg-config") or shutil.which("pkgconf")
    if not pkg_config:
        pytest.skip("pkg-config is not installed")
    folder, results = built["static"]
    r = subprocess.run([pkg_config, "--cflags", "--libs", "mlp", "elementwise", "mlp_b"],
                       capture_output=True, text=True, env={**os.environ,
                                                            "PKG_CONFIG_PATH": str(folder)})
    assert r.returncode == 0, r.stderr
    assert f"-I{folder}" in r.stdout and f"{folder}/libmlp_b.a" in r.stdout
    (tmp_path / "main.c").write_text(MAIN_C)
    _cc(CC, str(tmp_path / "main.c"), *r.stdout.split(), "-o", str(tmp_path / "main"))
    _run_program(tmp_path / "main", tmp_path, results)


def test_static_libraries_through_cmake(built, tmp_path):
    cmake = shutil.which("cmake")
    if not cmake:
        pytest.skip("cmake is not installed")
    folder, results = built["static"]
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.c").write_text(MAIN_C)
    (src / "CMakeLists.txt").write_text(textwrap.dedent("""
        cmake_minimum_required(VERSION 3.13)
        project(two C)
        find_package(mlp REQUIRED)
        find_package(elementwise REQUIRED)
        find_package(mlp_b REQUIRED)
        add_executable(two main.c)
        target_link_libraries(two PRIVATE mlp::mlp elementwise::elementwise mlp_b::mlp_b)
    """))
    build = tmp_path / "build"
    r = subprocess.run([cmake, "-S", str(src), "-B", str(build), f"-DCMAKE_PREFIX_PATH={folder}",
                        f"-DCMAKE_C_COMPILER={CC}"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([cmake, "--build", str(build)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    _run_program(build / "two", tmp_path, results)


def _defined_symbols(path: Path, dynamic: bool) -> list:
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("nm is not installed")
    args = [nm, "-D" if dynamic else "-g", "--defined-only", str(path)]
    r = subprocess.run(args, capture_output=True, text=True, check=True)
    return [line.split()[-1] for line in r.stdout.splitlines()
            if len(line.split()) == 3]


@pytest.mark.parametrize("kind", ["shared", "static"])
def test_only_prefixed_symbols_are_exported(built, kind):
    from jx.runtime.abi import artifact_symbols
    _, results = built[kind]
    for prefix, _, entry, _ in BUILDS:
        names = _defined_symbols(Path(results[prefix]["library"]), kind == "shared")
        want = {f"{prefix}_{entry}", f"{prefix}_{entry}_signature",
                *artifact_symbols(prefix).values()}
        assert set(names) == want, sorted(set(names) ^ want)
        assert results[prefix]["manifest"]["prefix"] == prefix


def test_python_loader_reads_prefixed_artifacts(built):
    import jx.runtime as rt
    _, results = built["shared"]
    for seed, (prefix, model, entry, _) in enumerate(BUILDS):
        art = rt.load(results[prefix]["library"])
        assert art.manifest["prefix"] == prefix
        assert art[entry].spec.symbol == f"{prefix}_{entry}"
        leaves = _inputs(art.manifest, seed)
        got = art[entry](*art[entry].in_tree.unflatten(leaves))
        np.testing.assert_allclose(np.asarray(got), _reference(model, art.manifest, leaves),
                                   rtol=2e-4, atol=2e-4)


def test_header_names_carry_the_prefix(built):
    folder, _ = built["shared"]
    text = (folder / "mlp_b.h").read_text()
    assert "#define MLP_B_PREDICT_NUM_INPUTS 7" in text
    assert "int32_t mlp_b_predict(const void** inputs, void** outputs);" in text
    assert "const char* mlp_b_manifest(void);" in text
    assert "void mlp_b_set_num_threads(int n);" in text
    assert not re.search(r"\bjx_(predict|manifest|abi_version|set_num_threads)\b", text)


@pytest.mark.parametrize("prefix, why", [("9lives", "not a C identifier"),
                                         ("my-model", "not a C identifier"),
                                         ("jx", "reserved")])
def test_bad_prefix_is_a_clear_error(prefix, why, tmp_path):
    from click.testing import CliRunner
    from jx.cli.main import main
    r = CliRunner().invoke(main, ["compile", str(SAMPLES / "elementwise.py"), "--prefix", prefix,
                                  "-o", str(tmp_path)])
    assert r.exit_code != 0
    assert "--prefix" in r.output and why in r.output, r.output
    assert "Traceback" not in r.output
    assert not list(tmp_path.iterdir())


def test_default_prefix_of_a_name_that_is_no_identifier():
    from jx.codegen.cpu.artifact import default_prefix
    assert default_prefix("mlp") == "mlp"
    assert default_prefix("my-model.v2") == "my_model_v2"
    assert default_prefix("2layer") == "_2layer"


def test_loading_a_static_library_says_what_to_build(built):
    import jx.runtime as rt
    _, results = built["static"]
    with pytest.raises(rt.ArtifactLoadError, match="static library.*without --static"):
        rt.load(results["mlp"]["library"])


def test_prefix_is_read_from_the_file(built):
    """The loader finds the manifest functions through the file's prefix section;
    a file without one is an artifact from before prefixes (jx_manifest)."""
    from jx.runtime import elf
    from jx.runtime.abi import PREFIX_SECTION
    from jx.runtime.loader import artifact_prefix
    _, results = built["shared"]
    data = Path(results["mlp_b"]["library"]).read_bytes()
    assert elf.section(data, PREFIX_SECTION).rstrip(b"\0") == b"mlp_b"
    assert artifact_prefix(data) == "mlp_b"
    assert artifact_prefix(data.replace(PREFIX_SECTION.encode() + b"\0",
                                        b".jx_other\0")) == "jx"
