"""jx.runtime: loading artifacts, calling entries, argument checks, every load error,
the tree encoding and the C header generator.

Until the code generator lands, the artifacts are shared objects written here in
C by hand: they implement ABI version 1 (int32_t jx_<entry>(const void**, void**),
jx_manifest, jx_abi_version) with manifests built by the same code path a real
build uses (treespec.encode of jx TreeDefs, leaf_paths, content_hash).
"""
from __future__ import annotations

import collections
import gc
import hashlib
import json
import os
import shutil
import subprocess
import sys
import timeit
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import jx
import jx.runtime as rt
from jx.runtime import elf, manifest as manifest_mod
from jx.runtime import treespec

CC = shutil.which("cc")
CXX = shutil.which("c++")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler `cc` on PATH: these tests "
                              "build shared objects implementing the artifact ABI")

Point = collections.namedtuple("Point", ["x", "y"])
IR_TEXT = "; stand-in for the LLVM IR of a real build\n"


# -- building artifacts ------------------------------------------------------------------
def make_entry(name: str, arg_names: list, args: tuple, result) -> dict:
    """A manifest entry from pytrees of jx specs, the way the compiler derives one."""
    leaves_in, in_td = jx.tree.flatten(tuple(args))
    leaves_out, out_td = jx.tree.flatten(result)
    in_tree, out_tree = treespec.encode(in_td), treespec.encode(out_td)
    in_paths = treespec.leaf_paths(treespec.decode(in_tree), arg_names)
    out_paths = treespec.leaf_paths(treespec.decode(out_tree))

    def leaf(spec, path):
        return {"shape": list(spec.shape), "dtype": np.dtype(spec.dtype).name, "path": path}

    return {"name": name, "symbol": f"jx_{name}", "arg_names": list(arg_names),
            "inputs": [leaf(s, p) for s, p in zip(leaves_in, in_paths)],
            "outputs": [leaf(s, p) for s, p in zip(leaves_out, out_paths)],
            "in_tree": in_tree, "out_tree": out_tree}


def make_manifest(entries: list, ir_text: str = IR_TEXT) -> dict:
    m = {"abi_version": 1, "jx_version": "0.1.0", "target": "x86_64-unknown-linux-gnu",
         "cpu": "generic", "entries": entries}
    m["content_hash"] = rt.content_hash(m, ir_text)
    return m


def c_string(text: str) -> str:
    return json.dumps(text)   # a JSON string literal of ASCII text is a valid C literal


def build_library(directory, name: str, bodies: str, manifest_text: str | None,
                  abi: int = 1, version_symbol: bool = True, checksum: bool = True,
                  signatures: bool = True) -> str:
    """Compile C entry bodies plus the ABI symbols into directory/lib<name>.so, sealed
    as `jx compile` seals its output."""
    src = ["#include <stdint.h>", "#include <stddef.h>"]
    if manifest_text is not None:
        src.append(f"const char* jx_manifest(void) {{ return {c_string(manifest_text)}; }}")
        digest = hashlib.sha256(manifest_text.encode()).hexdigest()
        if checksum:
            src.append(f'const char* jx_manifest_sha256(void) {{ return "{digest}"; }}')
    if version_symbol:
        src.append(f"uint32_t jx_abi_version(void) {{ return {abi}; }}")
    if signatures and manifest_text is not None:
        src += _signature_functions(manifest_text)
    c_path = os.path.join(directory, f"{name}.c")
    so_path = os.path.join(directory, f"lib{name}.so")
    with open(c_path, "w") as f:
        f.write("\n".join(src) + "\n" + bodies)
    subprocess.run([CC, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", c_path, "-o", so_path],
                   check=True, capture_output=True, text=True)
    with open(so_path, "rb") as f:
        sealed = elf.seal(f.read())
    with open(so_path, "wb") as f:
        f.write(sealed)
    return so_path


def _signature_functions(manifest_text: str) -> list:
    """The `jx_<entry>_signature` functions the code generator writes, for the
    entries the manifest declares (a manifest that does not parse gets none)."""
    from jx.runtime import abi as abi_mod
    try:
        entries = json.loads(manifest_text)["entries"]
        leaves = lambda ls: [(l["dtype"], tuple(l["shape"])) for l in ls]  # noqa: E731,E741
        funcs = {e["name"]: f'const char* {abi_mod.entry_symbol(e["name"])}'
                            f'{abi_mod.SIGNATURE_SUFFIX}(void) {{ return '
                            f'"{abi_mod.signature(leaves(e["inputs"]), leaves(e["outputs"]))}"; }}'
                 for e in entries}                  # a name twice: one definition
        return list(funcs.values())
    except (ValueError, KeyError, TypeError):
        return []


ENTRIES = [
    make_entry("add", ["x", "y"], (jx.f32[3], jx.f32[3]), jx.f32[3]),
    make_entry("affine", ["params", "x"], ({"w": jx.f64[2, 3], "b": jx.f64[2]}, jx.f64[3]),
               {"y": jx.f64[2], "norm": jx.f64[()]}),
    make_entry("select", ["mask", "v", "n"], (jx.bool_[4], jx.i32[4], jx.i64[()]),
               (jx.i64[()], jx.i32[4], jx.u8[4])),
    make_entry("nest", ["xs", "unused", "p"],
               ([jx.f32[2], (jx.f32[2],)], None, Point(jx.f32[2], jx.f32[2])),
               [jx.f32[2], Point(jx.f32[()], jx.f32[()])]),
    make_entry("colsum", ["x"], (jx.f32[0, 3],), jx.f32[3]),
    make_entry("oom", ["x"], (jx.f32[1],), jx.f32[1]),
    make_entry("odd", ["x"], (jx.f32[1],), jx.f32[1]),
]

# Leaves arrive in manifest order: dict keys sorted (affine: b, w, x -> norm, y).
BODIES = r"""
#define CHECK(n_in, n_out) \
    if (!in || !out) return 2; \
    for (int k = 0; k < n_in; k++) if (!in[k]) return 2; \
    for (int k = 0; k < n_out; k++) if (!out[k]) return 2;
int32_t jx_add(const void** in, void** out) {
    CHECK(2, 1)
    const float *x = in[0], *y = in[1]; float *z = out[0];
    for (int i = 0; i < 3; i++) z[i] = x[i] + y[i];
    return 0;
}
int32_t jx_affine(const void** in, void** out) {
    CHECK(3, 2)
    const double *b = in[0], *w = in[1], *x = in[2]; double *norm = out[0], *y = out[1];
    *norm = 0;
    for (int j = 0; j < 3; j++) *norm += x[j] * x[j];
    for (int i = 0; i < 2; i++) {
        y[i] = b[i];
        for (int j = 0; j < 3; j++) y[i] += w[i * 3 + j] * x[j];
    }
    return 0;
}
int32_t jx_select(const void** in, void** out) {
    CHECK(3, 3)
    const uint8_t *mask = in[0]; const int32_t *v = in[1]; const int64_t *n = in[2];
    int64_t *count = out[0]; int32_t *kept = out[1]; uint8_t *tripled = out[2];
    *count = *n;
    for (int i = 0; i < 4; i++) {
        *count += mask[i];
        kept[i] = mask[i] ? v[i] : 0;
        tripled[i] = (uint8_t)(3 * mask[i]);
    }
    return 0;
}
int32_t jx_nest(const void** in, void** out) {   /* xs[0], xs[1][0], p.x, p.y */
    CHECK(4, 3)
    const float *a = in[0], *b = in[1], *px = in[2], *py = in[3];
    float *prod = out[0], *dot = out[1], *cross = out[2];
    *dot = 0;
    for (int i = 0; i < 2; i++) { prod[i] = a[i] * b[i]; *dot += px[i] * py[i]; }
    *cross = px[0] * py[1] - px[1] * py[0];
    return 0;
}
int32_t jx_colsum(const void** in, void** out) {
    CHECK(1, 1)
    float *s = out[0];
    for (int j = 0; j < 3; j++) s[j] = 0;
    return 0;
}
int32_t jx_oom(const void** in, void** out) { return 1; }
int32_t jx_odd(const void** in, void** out) { return 7; }
"""


@pytest.fixture(scope="module")
def libdir(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler `cc` on PATH: these tests build shared objects")
    return tmp_path_factory.mktemp("artifacts")


@pytest.fixture(scope="module")
def good_so(libdir):
    return build_library(libdir, "good", BODIES, rt.manifest_json(make_manifest(ENTRIES)))


@pytest.fixture(scope="module")
def art(good_so):
    return rt.load(good_so)


# -- loading and calling -----------------------------------------------------------------
@needs_cc
def test_load_exposes_entries(art, good_so):
    assert list(art.entries) == [e["name"] for e in ENTRIES]
    assert art["add"] is art.add is art.entries["add"]
    assert "affine" in art and len(art) == len(ENTRIES) and "add" in dir(art)
    assert art.manifest["content_hash"] == make_manifest(ENTRIES)["content_hash"]
    manifest_mod.verify_content_hash(art.manifest, IR_TEXT)
    assert art.path == good_so and art.target == "x86_64-unknown-linux-gnu"
    assert str(art.affine.in_tree) == "({'b': *, 'w': *}, *)"
    assert [leaf.path for leaf in art.affine.inputs] == ["params['b']", "params['w']", "x"]
    assert "affine(params['b']: float64[2]" in repr(art.affine)


@needs_cc
def test_call_float32_add(art, rng):
    for _ in range(3):
        x, y = rng.standard_normal((2, 3)).astype(np.float32)
        z = art.add(x, y)
        assert type(z) is np.ndarray and z.dtype == np.float32 and z.shape == (3,)
        np.testing.assert_array_equal(z, x + y)
        assert z is not art.add(x, y)   # fresh buffers each call


@needs_cc
def test_call_dict_arguments_and_results(art, rng):
    params = {"w": rng.standard_normal((2, 3)), "b": rng.standard_normal(2)}
    x = rng.standard_normal(3)
    out = art.affine(params, x)
    assert sorted(out) == ["norm", "y"]
    np.testing.assert_allclose(out["y"], params["w"] @ x + params["b"], rtol=1e-12)
    np.testing.assert_allclose(out["norm"], x @ x, rtol=1e-12)
    assert out["norm"].shape == () and out["norm"].dtype == np.float64
    again = art.affine(x=x, params=params)   # keywords, from the manifest's arg_names
    np.testing.assert_array_equal(again["y"], out["y"])


@needs_cc
def test_call_bool_int_and_tuple_results(art, rng):
    mask = rng.random(4) < 0.5
    v = rng.integers(-1000, 1000, 4, dtype=np.int32)
    count, kept, tripled = art.select(mask, v, np.int64(5))
    assert count.dtype == np.int64 and count == mask.sum() + 5
    np.testing.assert_array_equal(kept, np.where(mask, v, 0))
    assert tripled.dtype == np.uint8
    np.testing.assert_array_equal(tripled, 3 * mask.astype(np.uint8))
    # Python values convert when exact: int -> int64 scalar, list of bools -> bool[4].
    count2, kept2, _ = art.select(mask.tolist(), v, 5)
    assert count2 == count
    np.testing.assert_array_equal(kept2, kept)


@needs_cc
def test_call_nested_lists_none_and_namedtuples(art, rng):
    a, b, px, py = rng.standard_normal((4, 2)).astype(np.float32)
    prod, point = art.nest([a, (b,)], None, Point(px, py))
    np.testing.assert_allclose(prod, a * b, rtol=1e-6)
    assert type(point) is tuple   # named tuples come back as plain tuples
    np.testing.assert_allclose(point[0], px @ py, rtol=1e-5)
    np.testing.assert_allclose(point[1], px[0] * py[1] - px[1] * py[0], rtol=1e-5, atol=1e-6)
    prod2, _ = art.nest((a, [b]), None, (px, py))   # any sequence fits a sequence node
    np.testing.assert_array_equal(prod2, prod)
    Swapped = collections.namedtuple("Swapped", ["y", "x"])
    with pytest.raises(rt.TreeMismatchError):       # fields in another order: not silently
        art.nest([a, (b,)], None, Swapped(y=py, x=px))


@needs_cc
def test_call_size_zero_and_layout_conversions(art, rng):
    np.testing.assert_array_equal(art.colsum(np.empty((0, 3), np.float32)), np.zeros(3))
    base = rng.standard_normal(6).astype(np.float32)
    y = rng.standard_normal(3).astype(np.float32)
    np.testing.assert_array_equal(art.add(base[::2], y), base[::2] + y)      # strided: copied
    swapped = base[:3].astype(">f4")                                          # byte order only
    np.testing.assert_array_equal(art.add(swapped, y), base[:3] + y)
    unaligned = np.frombuffer(b"\0" + base[:3].tobytes(), np.float32, 3, offset=1)
    assert not unaligned.flags.aligned
    np.testing.assert_array_equal(art.add(unaligned, y), base[:3] + y)
    readonly = base[:3].copy()
    readonly.flags.writeable = False
    np.testing.assert_array_equal(art.add(readonly, y), base[:3] + y)
    np.testing.assert_array_equal(art.add([0.5, 1.0, -2.0], y), np.float32([0.5, 1, -2]) + y)
    np.testing.assert_array_equal(art.add(np.float32([1, 2, 3]), [1, 2, 3]), [2, 4, 6])


@needs_cc
def test_wrong_shape(art):
    with pytest.raises(rt.ShapeMismatchError) as e:
        art.add(np.zeros(4, np.float32), np.zeros(3, np.float32))
    msg = str(e.value)
    assert "'add'" in msg and "argument x" in msg and "[4]" in msg and "float32[3]" in msg
    assert "recompile" in msg
    with pytest.raises(rt.ShapeMismatchError, match=r"params\['w'\].*float64\[2, 3\]"):
        art.affine({"w": np.zeros((3, 2)), "b": np.zeros(2)}, np.zeros(3))
    with pytest.raises(ValueError):   # also a ValueError, for generic callers
        art.add(np.zeros((1, 3), np.float32), np.zeros(3, np.float32))


@needs_cc
def test_wrong_dtype_is_never_cast(art):
    x = np.zeros(3, np.float32)
    with pytest.raises(rt.DtypeMismatchError) as e:
        art.add(x, np.zeros(3, np.float64))
    msg = str(e.value)
    assert "argument y" in msg and "float64" in msg and "float32[3]" in msg and "astype" in msg
    with pytest.raises(rt.DtypeMismatchError, match="argument v"):
        art.select(np.ones(4, bool), np.zeros(4, np.int64), 0)     # int64 -> int32 array
    with pytest.raises(rt.DtypeMismatchError, match="cannot represent exactly"):
        art.add(x, [0.1, 0.0, 0.0])                                 # 0.1 rounds in float32
    with pytest.raises(rt.DtypeMismatchError, match="cannot represent exactly"):
        art.select(np.ones(4, bool), [1, 2, 3, 2**40], 0)           # overflows int32
    with pytest.raises(rt.DtypeMismatchError, match="cannot represent exactly"):
        art.select(np.ones(4, bool), [-1, 2, 3, 4], 2**63)          # overflows int64
    with pytest.raises(rt.DtypeMismatchError, match="cannot all hold exactly"):
        art.add(x, [0.5, 2**53 + 1, 1])        # NumPy itself rounds this mixed list
    np.testing.assert_array_equal(art.add(x, [0.5, 2, float("nan")]),
                                  np.array([0.5, 2, np.nan], np.float32))
    with pytest.raises(rt.DtypeMismatchError, match="argument n"):
        art.select(np.ones(4, bool), np.zeros(4, np.int32), 1.0)    # float -> int refused
    with pytest.raises(rt.DtypeMismatchError, match="argument mask"):
        art.select([1, 0, 1, 0], np.zeros(4, np.int32), 0)          # int -> bool refused
    with pytest.raises(rt.ArgumentError, match="argument x"):
        art.add("abc", x)


@needs_cc
def test_wrong_pytree(art):
    x = np.zeros(3)
    with pytest.raises(rt.TreeMismatchError) as e:
        art.affine({"w": np.zeros((2, 3))}, x)
    assert "params" in str(e.value) and "missing: ['b']" in str(e.value)
    with pytest.raises(rt.TreeMismatchError, match="unexpected: \\['c'\\]"):
        art.affine({"w": np.zeros((2, 3)), "b": np.zeros(2), "c": 1}, x)
    with pytest.raises(rt.TreeMismatchError, match=r"takes 2 arguments \(x, y\), got 3"):
        art.add(x, x, x)
    with pytest.raises(rt.TreeMismatchError, match="argument x should be an array"):
        art.add((np.zeros(3, np.float32),), np.zeros(3, np.float32))
    with pytest.raises(rt.TreeMismatchError, match=r"xs\[1\]"):
        art.nest([np.zeros(2, np.float32), np.zeros(2, np.float32)], None, Point(x, x))
    with pytest.raises(rt.TreeMismatchError, match="unused"):
        art.nest([x, (x,)], np.zeros(2), Point(x, x))
    with pytest.raises(rt.ArgumentError, match="unknown argument 'z'"):
        art.add(x, z=x)
    with pytest.raises(TypeError):    # every argument error is also a TypeError
        art.affine(x, x)


@needs_cc
def test_missing_entry_name(art):
    with pytest.raises(rt.EntryNotFoundError) as e:
        art["predict"]
    assert "no entry 'predict'" in str(e.value) and "add, affine" in str(e.value)
    with pytest.raises(AttributeError, match="no entry 'predict'"):
        art.predict
    assert not hasattr(art, "predict")
    with pytest.raises(LookupError):
        art["nope"]


@needs_cc
def test_nonzero_status(art):
    with pytest.raises(rt.ArtifactMemoryError) as e:
        art.oom(np.zeros(1, np.float32))
    assert e.value.status == 1 and e.value.entry == "oom" and isinstance(e.value, MemoryError)
    assert "JX_ERR_OUT_OF_MEMORY" in str(e.value)
    with pytest.raises(rt.EntryStatusError, match="unknown status 7"):
        art.odd(np.zeros(1, np.float32))
    np.testing.assert_array_equal(art.add([1, 2, 3], [1, 1, 1]), [2, 3, 4])   # still usable


@needs_cc
def test_threads_and_lifetime(good_so, rng):
    """Concurrent calls each own their pointer table; an entry keeps its library."""
    add = rt.load(good_so).add
    gc.collect()
    xs = rng.standard_normal((8, 3)).astype(np.float32)

    def work(k):
        return all(np.array_equal(add(xs[k], xs[j]), xs[k] + xs[j])
                   for _ in range(200) for j in range(8))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))


@needs_cc
def test_call_overhead(art):
    x, y = np.ones(3, np.float32), np.ones(3, np.float32)
    add = art.add
    per_call = min(timeit.repeat(lambda: add(x, y), number=2000, repeat=5)) / 2000
    print(f"3-element call: {per_call * 1e6:.2f} us")
    # Target is a few microseconds; the bound leaves room for a loaded machine.
    assert per_call < 25e-6


# -- load errors ---------------------------------------------------------------------------
def test_missing_file_and_directory(tmp_path):
    with pytest.raises(rt.ArtifactLoadError, match="no such file"):
        rt.load(tmp_path / "libnothing.so")
    with pytest.raises(rt.ArtifactLoadError, match="is a directory"):
        rt.load(tmp_path)


def test_not_a_shared_object(tmp_path):
    text = tmp_path / "model.so"
    text.write_text("print('hello')\n")
    with pytest.raises(rt.ArtifactLoadError, match="not a shared object") as e:
        rt.load(text)
    assert str(text) in str(e.value)
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    with pytest.raises(rt.ArtifactLoadError, match="is empty"):
        rt.load(empty)


@needs_cc
@pytest.mark.parametrize("keep", [0.5, 0.05, 64])
def test_truncated_shared_object(good_so, tmp_path, keep):
    data = open(good_so, "rb").read()
    cut = tmp_path / "libcut.so"
    cut.write_bytes(data[:int(len(data) * keep) if keep < 1 else keep])
    with pytest.raises(rt.ArtifactLoadError, match="the file is truncated") as e:
        rt.load(cut)   # caught before dlopen, which could die of SIGBUS on such a file
    assert str(cut) in str(e.value)


@needs_cc
def test_executable_and_foreign_machine(good_so, tmp_path):
    src = tmp_path / "main.c"
    src.write_text("int main(void) { return 0; }\n")
    exe = tmp_path / "prog"
    subprocess.run([CC, "-no-pie", str(src), "-o", str(exe)], check=True, capture_output=True)
    with pytest.raises(rt.ArtifactLoadError, match="not a shared object"):
        rt.load(exe)
    data = bytearray(open(good_so, "rb").read())
    data[18:20] = (183 if data[18] != 183 else 62).to_bytes(2, "little")   # e_machine
    foreign = tmp_path / "libforeign.so"
    foreign.write_bytes(bytes(data))
    with pytest.raises(rt.ArtifactLoadError, match="was built for .* but this is"):
        rt.load(foreign)


@needs_cc
def test_abi_version_mismatch(libdir):
    so = build_library(libdir, "abi2", "", rt.manifest_json(make_manifest([])), abi=2)
    with pytest.raises(rt.AbiVersionError) as e:
        rt.load(so)
    msg = str(e.value)
    assert "ABI version 2" in msg and "reads version 1" in msg and "recompile" in msg


@needs_cc
def test_missing_symbols(libdir):
    body = "int32_t jx_add(const void** in, void** out) { return 0; }\n"
    so = build_library(libdir, "nomanifest", body, None)
    with pytest.raises(rt.MissingSymbolError, match="does not export jx_manifest"):
        rt.load(so)
    so = build_library(libdir, "noversion", body, rt.manifest_json(make_manifest([])),
                       version_symbol=False)
    with pytest.raises(rt.MissingSymbolError, match="jx_abi_version"):
        rt.load(so)
    manifest = rt.manifest_json(make_manifest(ENTRIES[:2]))   # lists add and affine
    so = build_library(libdir, "noentry", body, manifest)
    with pytest.raises(rt.MissingSymbolError, match="jx_affine \\(entry 'affine'\\)"):
        rt.load(so)


@needs_cc
def test_bad_manifests(libdir):
    cases = {
        "notjson": ("{'abi_version': 1", "not valid JSON"),
        "notobject": ("[1, 2]", "not a JSON object"),
        "nohash": (json.dumps({k: v for k, v in make_manifest([]).items()
                               if k != "content_hash"}), "content_hash"),
        "abi2field": (json.dumps({**make_manifest([]), "abi_version": 2}),
                      "manifest says ABI version 2"),
        "leafcount": (json.dumps(make_manifest([{**ENTRIES[0], "inputs": []}])),
                      "has 2 leaves but 0 inputs"),
        "baddtype": (json.dumps(make_manifest([{**ENTRIES[0], "outputs": [
            {"shape": [3], "dtype": "float33", "path": ""}]}])), "not a supported dtype"),
        "badshape": (json.dumps(make_manifest([{**ENTRIES[0], "outputs": [
            {"shape": [-1], "dtype": "float32", "path": ""}]}])), "non-negative ints"),
        "badtree": (json.dumps(make_manifest([{**ENTRIES[0], "in_tree": {"kind": "set"}}])),
                    "expected a tree node"),
        "twice": (json.dumps(make_manifest([ENTRIES[0], ENTRIES[0]])), "listed twice"),
    }
    body = "int32_t jx_add(const void** in, void** out) { return 0; }\n"
    for name, (text, message) in cases.items():
        so = build_library(libdir, f"m_{name}", body, text)
        with pytest.raises(rt.ManifestError, match=message) as e:
            rt.load(so)
        assert so in str(e.value), name


@needs_cc
def test_pinned_hash(good_so):
    good = make_manifest(ENTRIES)["content_hash"]
    assert rt.load(good_so, expected_hash=good).content_hash == good
    with pytest.raises(rt.HashMismatchError, match="not the build you pinned"):
        rt.load(good_so, expected_hash="0" * 64)


def test_content_hash_scheme():
    m = make_manifest(ENTRIES)
    body = json.dumps({k: v for k, v in m.items() if k != "content_hash"}, sort_keys=True,
                      separators=(",", ":"))
    import hashlib
    assert m["content_hash"] == hashlib.sha256((body + IR_TEXT).encode()).hexdigest()
    manifest_mod.verify_content_hash(m, IR_TEXT)
    with pytest.raises(rt.HashMismatchError, match="modified after it was built"):
        manifest_mod.verify_content_hash(m, IR_TEXT + "ret void\n")
    tampered = json.loads(rt.manifest_json(m))
    tampered["entries"][0]["inputs"][0]["shape"] = [4]
    with pytest.raises(rt.HashMismatchError):
        manifest_mod.verify_content_hash(tampered, IR_TEXT)


@needs_cc
def test_runtime_works_without_llvmlite(good_so):
    code = (
        "import sys; sys.modules['llvmlite'] = None\n"
        "import numpy as np, jx.runtime\n"
        f"art = jx.runtime.load({good_so!r})\n"
        "z = art.add(np.float32([1, 2, 3]), np.float32([10, 20, 30]))\n"
        "out = art.affine({'w': np.eye(2, 3), 'b': np.ones(2)}, np.arange(3.0))\n"
        "print(z.tolist(), out['y'].tolist(), float(out['norm']))\n"
        "assert not any(m.startswith('llvmlite') and sys.modules[m] is not None "
        "for m in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[11.0,", "22.0,", "33.0]", "[1.0,", "2.0]", "5.0"]


# -- tree encoding -------------------------------------------------------------------------
@jx.register_pytree_node_class
class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def tree_flatten(self):
        return (self.a, self.b), "aux"

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


TREES = [
    1.0,
    None,
    (1, 2),
    [1, (2, 3), []],
    {"b": 1, "a": [2, None]},
    {3: "x", 1: "y"},
    ((),),
    Point(1, {"k": 2}),
    [Pair(1, (2, 3))],
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_treespec_round_trip(tree):
    leaves, td = jx.tree.flatten(tree)
    encoded = treespec.encode(td)
    spec = treespec.decode(json.loads(json.dumps(encoded)))
    assert spec.to_json() == encoded and spec == treespec.decode(encoded)
    assert spec.num_leaves == td.num_leaves == len(leaves)
    rebuilt = spec.unflatten(leaves)
    assert spec.flatten(rebuilt) == leaves
    has_classes = any(k in json.dumps(encoded) for k in ("namedtuple", "custom"))
    if not has_classes:
        assert rebuilt == tree and str(spec) == str(td)
        assert treespec.compile_unflatten(spec)(leaves) == tree
    else:
        assert jx.tree.flatten(rebuilt)[0] == leaves


def test_treespec_classes_and_paths():
    _, td = jx.tree.flatten((Point(1, 2), Pair(3, 4), {"w": 5}))
    enc = treespec.encode(td)
    point, pair, _ = enc["children"]
    assert point == {"kind": "namedtuple", "name": f"{__name__}.Point", "fields": ["x", "y"],
                     "children": [{"kind": "leaf"}] * 2}
    assert pair["kind"] == "custom" and pair["name"].endswith(".Pair")
    spec = treespec.decode(enc)
    assert treespec.leaf_paths(spec, ["p", "q", "params"]) == [
        "p.x", "p.y", "q[0]", "q[1]", "params['w']"]
    assert treespec.leaf_paths(spec) == ["[0].x", "[0].y", "[1][0]", "[1][1]", "[2]['w']"]
    assert spec.flatten((Point(1, 2), Pair(3, 4), {"w": 5})) == [1, 2, 3, 4, 5]
    assert spec.unflatten(range(5)) == ((0, 1), (2, 3), {"w": 4})
    with pytest.raises(rt.TreeMismatchError, match=r"\[1\] should be structure Pair"):
        spec.flatten((Point(1, 2), 3, {"w": 5}), where="f")
    with pytest.raises(ValueError, match="too many leaves"):
        spec.unflatten(range(6))


def test_treespec_rejects_bad_json_and_keys():
    for bad in ({"kind": "tuple"}, {"kind": "dict", "keys": ["a"], "children": []},
                {"kind": "namedtuple", "name": 3, "fields": [], "children": []}, [], "leaf"):
        with pytest.raises(rt.ManifestError):
            treespec.decode(bad)
    _, td = jx.tree.flatten({(1, 2): 0})
    with pytest.raises(ValueError, match="cannot be stored in a manifest"):
        treespec.encode(td)


# -- C header ------------------------------------------------------------------------------
WEIRD = {'q"uote': jx.f32[2], "back\\slash": jx.i8[1],
         "c*/omment": jx.ShapeDtypeStruct((3,), np.uint16), "tri??/graph": jx.bool_[5],
         "caf\u00e9": jx.f64[()]}
HEADER_ENTRIES = ENTRIES + [
    make_entry("weird", ["d"], (WEIRD,), ()),
    make_entry("nothing", [], (), jx.f16[2, 2]),
]

HEADER_USER = r"""
#include <stdio.h>
#include "good.h"
#include "good.h"          /* include guard */
#include "other.h"         /* a second model's header in the same file */
int main(void) {
    const size_t add_in[JX_ADD_NUM_INPUTS] = JX_ADD_INPUT_BYTES;
    const size_t aff_out[JX_AFFINE_NUM_OUTPUTS] = JX_AFFINE_OUTPUT_BYTES;
    const char* aff_paths[JX_AFFINE_NUM_INPUTS] = JX_AFFINE_INPUT_PATHS;
    const char* sel_dtypes[JX_SELECT_NUM_OUTPUTS] = JX_SELECT_OUTPUT_DTYPES;
    const char* weird[JX_WEIRD_NUM_INPUTS] = JX_WEIRD_INPUT_PATHS;
    const size_t none_in[JX_NOTHING_NUM_INPUTS + 1] = JX_NOTHING_INPUT_BYTES;
    int32_t (*entries[])(const void**, void**) = {jx_add, jx_affine, jx_select, jx_nest,
                                                 jx_weird, jx_nothing, jx_other};
    const char* (*manifest)(void) = jx_manifest;
    uint32_t (*version)(void) = jx_abi_version;
    printf("%zu %zu %zu %s %s %d %d %d\n", add_in[0], aff_out[0], aff_out[1], aff_paths[1],
           sel_dtypes[2], JX_OK, JX_ERR_OUT_OF_MEMORY, JX_ABI_VERSION);
    for (int i = 0; i < JX_WEIRD_NUM_INPUTS; i++) printf("%s\n", weird[i]);
    (void)none_in; (void)entries; (void)manifest; (void)version;
    return JX_NOTHING_NUM_OUTPUTS == 1 ? 0 : 1;
}
"""


def _write_headers(tmp_path):
    good = rt.header_text(make_manifest(HEADER_ENTRIES), "libgood.so")
    other = rt.header_text(make_manifest([make_entry("other", ["x"], (jx.f32[3],),
                                                     jx.f32[3])]), "/some/dir/libother.so")
    (tmp_path / "good.h").write_text(good)
    (tmp_path / "other.h").write_text(other)
    (tmp_path / "user.c").write_text(HEADER_USER)
    return good


def test_header_text_content(tmp_path):
    text = _write_headers(tmp_path)
    assert text.count("#ifndef JX_GOOD_H_") == 1 and "#include <stdint.h>" in text
    assert "int32_t jx_affine(const void** inputs, void** outputs);" in text
    assert "const char* jx_manifest(void);" in text and "uint32_t jx_abi_version(void);" in text
    assert "#define JX_ERR_OUT_OF_MEMORY 1" in text and "#define JX_OK" in text
    assert "/* affine(params, x) -> {'norm': *, 'y': *}" in text
    assert "[1]  params['w']  float64[2, 3]  48 bytes" in text
    assert '#define JX_SELECT_OUTPUT_DTYPES { "int64", "int32", "uint8" }' in text
    assert "#define JX_NOTHING_INPUT_BYTES { 0 }" in text
    assert "JX_OTHER_H_" in (tmp_path / "other.h").read_text()
    comments = text.split("#ifndef JX_GOOD_H_")[0]
    assert comments.count("*/") == 1   # the leading comment closes exactly once


@pytest.mark.skipif(CC is None, reason="no C compiler `cc` on PATH")
@pytest.mark.parametrize("compiler,flags", [
    ("cc", ["-std=c99", "-pedantic"]), ("cc", ["-std=c11"]), ("c++", ["-x", "c++"])])
def test_header_compiles(tmp_path, compiler, flags):
    if shutil.which(compiler) is None:
        pytest.skip(f"no `{compiler}` on PATH")
    _write_headers(tmp_path)
    done = subprocess.run([compiler, *flags, "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                           "-I", str(tmp_path), str(tmp_path / "user.c")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@needs_cc
def test_header_values_seen_from_c(tmp_path):
    """Compile and run a program printing the header's macros: sizes, dtypes and
    escaped paths read back exactly as the manifest has them."""
    _write_headers(tmp_path)
    stubs = tmp_path / "stubs.c"
    stubs.write_text("#include \"good.h\"\n#include \"other.h\"\n" + "".join(
        f"int32_t jx_{n}(const void** i, void** o) {{ (void)i; (void)o; return 0; }}\n"
        for n in ("add", "affine", "select", "nest", "weird", "nothing", "other"))
        + "const char* jx_manifest(void) { return \"{}\"; }\n"
        "uint32_t jx_abi_version(void) { return 1; }\n")
    exe = tmp_path / "user"
    subprocess.run([CC, "-std=c99", "-I", str(tmp_path), str(tmp_path / "user.c"), str(stubs),
                    "-o", str(exe)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], capture_output=True, check=True).stdout.decode("utf-8")
    lines = out.splitlines()
    assert lines[0] == "12 8 16 params['w'] uint8 0 1 1"
    weird = [e for e in HEADER_ENTRIES if e["name"] == "weird"][0]
    assert lines[1:] == [leaf["path"] for leaf in weird["inputs"]]
    assert "d['q\"uote']" in lines[1:] and "d['caf\u00e9']" in lines[1:]
