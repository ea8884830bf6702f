"""samples/c/main.c against generated headers and hand-written artifacts.

The C program fills every input with a deterministic pattern, calls the entry
through the generated header and prints checksums; the same call made from
Python through jx.runtime must give the same numbers. Once `jx compile` exists,
the lead's end-to-end test builds main.c against the real samples/mlp.py
artifact the same way (see the build lines at the top of main.c).
"""
from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

import jx
import jx.runtime as rt
from test_runtime import CC, build_library, make_entry, make_manifest

MAIN_C = os.path.join(os.path.dirname(__file__), os.pardir, "samples", "c", "main.c")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler `cc` on PATH: the C "
                                "example is compiled and run by these tests")

PREDICT = make_entry("predict", ["params", "x"],
                     ({"w1": jx.f32[3, 4], "b1": jx.f32[4], "w2": jx.f32[4, 2],
                       "b2": jx.f32[2]}, jx.f32[5, 3]), jx.f32[5, 2])
# Leaves in manifest order: b1, b2, w1, w2, x.
PREDICT_C = r"""
int32_t jx_predict(const void** in, void** out) {
    if (!in || !out) return 2;
    const float *b1 = in[0], *b2 = in[1], *w1 = in[2], *w2 = in[3], *x = in[4];
    float *y = out[0];
    for (int r = 0; r < 5; r++) {
        float h[4];
        for (int j = 0; j < 4; j++) {
            float acc = b1[j];
            for (int k = 0; k < 3; k++) acc += x[r * 3 + k] * w1[k * 4 + j];
            h[j] = acc > 0 ? acc : 0;
        }
        for (int j = 0; j < 2; j++) {
            float acc = b2[j];
            for (int k = 0; k < 4; k++) acc += h[k] * w2[k * 2 + j];
            y[r * 2 + j] = acc;
        }
    }
    return 0;
}
"""

MIXED_DTYPES = ["float64", "float32", "float16", "int8", "int16", "int32", "int64", "uint8",
                "uint16", "uint32", "uint64", "bool"]
MIXED = make_entry("mixed", ["xs"], ([jx.ShapeDtypeStruct((2, 5), np.dtype(d))
                                      for d in MIXED_DTYPES],),
                   tuple(jx.ShapeDtypeStruct((2, 5), np.dtype(d)) for d in MIXED_DTYPES))
MIXED_C = "#include <string.h>\n" + r"""
static const size_t sizes[] = {8, 4, 2, 1, 2, 4, 8, 1, 2, 4, 8, 1};
int32_t jx_mixed(const void** in, void** out) {   /* identity: outputs echo inputs */
    for (int k = 0; k < 12; k++) memcpy(out[k], in[k], 10 * sizes[k]);
    return 0;
}
"""


def pattern(k: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """Python twin of main.c's fill()."""
    i = np.arange(int(np.prod(shape)))
    v = (7 * i + 13 * k) % 17 - 8
    if dtype == np.bool_:
        data = (i + k) % 3 == 0
    elif dtype.kind == "f":
        data = v / 16.0
    elif dtype.kind == "u":
        data = v + 8
    else:
        data = v
    return data.astype(dtype).reshape(shape)


def expected_sums(entry, leaves) -> list:
    """(sum, weighted) per output, as main.c computes them."""
    out = []
    for leaf in leaves:
        values = np.asarray(leaf).astype(np.float64).ravel()
        weights = np.arange(values.size) % 7 + 1
        out.append((values.sum(), (values * weights).sum()))
    return out


def build_and_run(tmp_path, entry: dict, body: str, header: str, defines: list) -> tuple:
    manifest = make_manifest([entry])
    lib_stem = header.removesuffix(".h")
    so = build_library(tmp_path, lib_stem, body, rt.manifest_json(manifest))
    (tmp_path / header).write_text(rt.header_text(manifest, os.path.basename(so)))
    exe = tmp_path / f"{lib_stem}_main"
    # hand-written artifacts use the names of artifacts built before prefixes: jx_<entry>
    defines = ["-DJX_PREFIX=jx", "-DJX_PREFIX_UPPER=JX", *defines]
    subprocess.run([CC, "-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", *defines,
                    "-I", str(tmp_path), MAIN_C, "-L", str(tmp_path), f"-l{lib_stem}",
                    f"-Wl,-rpath,{tmp_path}", "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    run = subprocess.run([str(exe), "3"], capture_output=True, text=True, check=True)
    print(run.stdout)
    return rt.load(so), run.stdout


def parse_output(text: str) -> tuple:
    sums = [(float(m[1]), float(m[2]))
            for m in re.finditer(r"^output \d+ .*: sum=(\S+) weighted=(\S+)$", text, re.M)]
    checksum = float(re.search(r"^checksum (\S+)$", text, re.M)[1])
    return sums, checksum


def test_main_c_predict_matches_runtime(tmp_path):
    art, stdout = build_and_run(tmp_path, PREDICT, PREDICT_C, "mlp.h", [])
    assert stdout.startswith("entry predict: 5 inputs, 1 outputs")
    assert re.search(r"^3 calls: \S+ us per call$", stdout, re.M)
    names = ["b1", "b2", "w1", "w2"]
    leaves = [pattern(k, spec.shape, spec.dtype) for k, spec in enumerate(art.predict.inputs)]
    params, x = dict(zip(names, leaves[:4])), leaves[4]
    y = art.predict(params, x)
    h = np.maximum(x @ params["w1"] + params["b1"], 0)
    np.testing.assert_allclose(y, h @ params["w2"] + params["b2"], rtol=1e-5, atol=1e-6)
    sums, checksum = parse_output(stdout)
    want = expected_sums(art.predict, [y])
    np.testing.assert_allclose(sums, want, rtol=1e-12)
    np.testing.assert_allclose(checksum, want[0][1], rtol=1e-12)


def test_main_c_every_dtype(tmp_path):
    defines = ['-DJX_HEADER="mixed.h"', "-DJX_ENTRY=mixed", "-DJX_ENTRY_UPPER=MIXED"]
    art, stdout = build_and_run(tmp_path, MIXED, MIXED_C, "mixed.h", defines)
    assert stdout.startswith(f"entry mixed: {len(MIXED_DTYPES)} inputs")
    xs = [pattern(k, spec.shape, spec.dtype) for k, spec in enumerate(art.mixed.inputs)]
    outs = art.mixed(xs)
    for x, o, d in zip(xs, outs, MIXED_DTYPES):
        assert o.dtype == np.dtype(d)
        np.testing.assert_array_equal(o, x)
    sums, checksum = parse_output(stdout)
    want = expected_sums(art.mixed, outs)
    np.testing.assert_allclose(sums, want, rtol=1e-12)   # C's fill == Python's pattern
    np.testing.assert_allclose(checksum, sum(w for _, w in want), rtol=1e-12)
