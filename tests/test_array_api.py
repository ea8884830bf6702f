"""jx.numpy as an array-API namespace (2024.12, FFT excepted).

A fast subset of the vendored conformance suite (shared/vendor/array-api-tests)
runs in a subprocess; the names the standard adds to NumPy's are checked
directly against NumPy (and jax.numpy when it is installed)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jx
import jx.numpy as jnp

ROOT = Path(__file__).resolve().parents[1]
SUITE = next((p for p in (ROOT / "shared/vendor/array-api-tests",
                          ROOT.parent / "shared/vendor/array-api-tests")
              if (p / "array_api_tests").is_dir()), None)
# quick modules that jx passes in full (the whole suite takes minutes)
MODULES = ["test_data_type_functions.py", "test_statistical_functions.py",
           "test_set_functions.py", "test_searching_functions.py"]
# failed by jax.numpy too, kept as JAX has it: finfo(float32).eps is a np.float32, not a
# float (complex64's too); searchsorted gives int32 indices in 64-bit mode, not int64
DESELECT = ["test_data_type_functions.py::test_finfo[float32]",
            "test_data_type_functions.py::test_finfo[complex64]",
            "test_searching_functions.py::test_searchsorted"]
RNG = np.random.default_rng(0)


def test_conformance_subset(tmp_path):
    if SUITE is None:
        pytest.skip("the vendored array-api-tests suite is not in this checkout")
    for mod in ("hypothesis", "ndindex"):
        pytest.importorskip(mod, reason=f"the conformance suite needs {mod}")
    report = tmp_path / "report.json"
    # 64-bit mode: the suite draws int64/float64 values (JAX too fails it in 32-bit mode)
    env = dict(os.environ, JAX_ENABLE_X64="1", ARRAY_API_TESTS_MODULE="jx.numpy",
               ARRAY_API_TESTS_VERSION="2024.12")
    try:
        import pytest_jsonreport  # noqa: F401
        extra = ["--json-report", f"--json-report-file={report}"]
    except ImportError:
        extra = []
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--max-examples=3",
           "--hypothesis-seed=0", "--hypothesis-disable-deadline",
           *[f"array_api_tests/{m}" for m in MODULES],
           *[f"--deselect=array_api_tests/{t}" for t in DESELECT], *extra]
    run = subprocess.run(cmd, cwd=SUITE, env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    if report.exists():
        summary = json.loads(report.read_text())["summary"]
        assert summary.get("passed", 0) > 40 and not summary.get("failed")


# --- the standard's spellings are NumPy's functions -------------------------

ALIASES = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "acosh": "arccosh",
           "asinh": "arcsinh", "atanh": "arctanh", "atan2": "arctan2", "pow": "power",
           "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
           "bitwise_right_shift": "right_shift"}


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_aliases(name):
    assert getattr(jnp, name) is getattr(jnp, ALIASES[name])


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
def test_elementwise_aliases_match_numpy(shape):
    x = RNG.uniform(-0.9, 0.9, shape).astype(np.float32)
    y = RNG.uniform(0.5, 2.0, shape).astype(np.float32)
    for ours, theirs in [("acos", np.arccos), ("asin", np.arcsin), ("atan", np.arctan),
                         ("asinh", np.arcsinh), ("atanh", np.arctanh)]:
        np.testing.assert_allclose(getattr(jnp, ours)(x), theirs(x), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(jnp.acosh(y + 1), np.arccosh(y + 1), rtol=2e-6)
    np.testing.assert_allclose(jnp.atan2(x, y), np.arctan2(x, y), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(jnp.pow(y, x), np.power(y, x), rtol=2e-6)
    i = RNG.integers(0, 100, shape).astype(np.int32)
    np.testing.assert_array_equal(jnp.bitwise_invert(i), ~i)
    np.testing.assert_array_equal(jnp.bitwise_left_shift(i, 2), i << 2)
    np.testing.assert_array_equal(jnp.bitwise_right_shift(i, 1), i >> 1)


def test_astype_can_cast_isdtype():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    y = jnp.astype(x, jnp.float32)
    assert y.dtype == np.float32 and jnp.astype(y, None).dtype == np.float32
    assert jnp.astype(y, y.dtype) is y and jnp.astype(y, y.dtype, copy=True) is not y
    np.testing.assert_array_equal(jnp.astype(x, "int8", device="cpu"), x.astype(np.int8))
    with pytest.raises(ValueError, match="device"):
        jnp.astype(x, "int8", device="gpu")
    for a, b in [("int32", "float64"), ("uint64", "int64"), ("int8", "uint8"),
                 ("bool", "int8"), ("float64", "float32"), ("uint8", "int16")]:
        assert jnp.can_cast(a, b) == np.can_cast(a, b)
        assert jnp.can_cast(a, b, "same_kind") == np.can_cast(a, b, "same_kind")
    assert jnp.isdtype(jnp.float32, "real floating")
    assert jnp.isdtype(np.dtype("uint16"), ("integral", jnp.float32))
    assert not jnp.isdtype(jnp.int8, "unsigned integer")
    assert jnp.isdtype(jnp.bool, "bool") and not jnp.isdtype(jnp.bool, "numeric")
    with pytest.raises(ValueError, match="unknown kind"):
        jnp.isdtype(jnp.int8, "integer-ish")


def test_dtype_names():
    for name in ["bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16",
                 "uint32", "uint64", "float16", "float32", "float64", "int_", "uint",
                 "float_", "single", "double"]:
        assert np.dtype(getattr(jnp, name)) == np.dtype(getattr(np, name if name not in (
            "int_", "uint", "float_") else {"int_": "int64", "uint": "uint64",
                                            "float_": "float64"}[name]))
    assert jnp.uint16(3).dtype == np.uint16
    assert jnp.promote_types("int8", "uint8") == np.int16


def test_namespace_info():
    info = jnp.__array_namespace_info__()
    assert jnp.__array_api_version__ == "2024.12"
    assert info.capabilities()["data-dependent shapes"] is False
    assert None in info.devices() and info.default_device() is None
    assert info.default_dtypes()["integral"] == jx.numpy.int32.dtype
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32"}
    assert set(info.dtypes(kind="complex floating")) == {"complex64"}
    assert info.default_dtypes()["complex floating"] == np.complex64
    with jx.enable_x64():
        assert info.default_dtypes()["real floating"] == np.float64
        assert info.default_dtypes()["complex floating"] == np.complex128
        assert "uint64" in info.dtypes(kind="integral")
        assert "complex128" in info.dtypes(kind="numeric")


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
def test_nextafter(dt):
    with jx.enable_x64():
        x = np.array([0, -0.0, 1, -1, 2, np.inf, np.nan, 3, 1e-30], dt)
        y = np.array([1, -1, 2, -2, 2, 0, 1, np.nan, 0], dt)
        got = jnp.nextafter(x, y)
        assert got.dtype == dt
        np.testing.assert_array_equal(np.asarray(got), np.nextafter(x, y))


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.float32, np.bool_])
def test_cumulative(dt):
    x = RNG.integers(0, 3, (3, 4)).astype(dt)
    for fn, ref in [(jnp.cumulative_sum, np.cumsum), (jnp.cumulative_prod, np.cumprod)]:
        got = fn(x, axis=1)
        want = ref(x, axis=1, dtype=np.sum(x).dtype if dt != np.float32 else None)
        np.testing.assert_allclose(got, want.astype(got.dtype))
        init = fn(x, axis=0, include_initial=True)
        assert init.shape == (4, 4)
        np.testing.assert_allclose(init[1:], ref(x, axis=0).astype(init.dtype))
    with pytest.raises(ValueError, match="axis"):
        jnp.cumulative_sum(x)
    assert jnp.cumulative_sum(np.arange(4, dtype=np.int8)).dtype == np.int32


@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2)])
def test_nonzero(shape):
    x = RNG.integers(0, 3, shape) * (RNG.random(shape) < 0.5)
    for got, want in zip(jnp.nonzero(x), np.nonzero(x)):
        np.testing.assert_array_equal(got, want)
    n = int(np.count_nonzero(x))
    for size in (max(n - 2, 0), n + 3):
        got = jnp.nonzero(x, size=size, fill_value=-1)
        for g, w in zip(got, np.nonzero(x)):
            w = np.concatenate([w, np.full(max(size - n, 0), -1)])[:size]
            np.testing.assert_array_equal(g, w)
    # with size= it traces
    f = jx.jit(lambda v: jnp.nonzero(v, size=4)[0])
    np.testing.assert_array_equal(f(x), jnp.nonzero(x, size=4)[0])
    with pytest.raises(TypeError, match="size="):
        jx.jit(lambda v: jnp.nonzero(v)[0])(x)


@pytest.mark.parametrize("dt", [np.int32, np.float32])
def test_unique_family(dt):
    x = RNG.integers(0, 5, (4, 5)).astype(dt)
    v, i, inv, c = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    r = jnp.unique_all(x)
    np.testing.assert_array_equal(r.values, v)
    np.testing.assert_array_equal(r.indices, i)
    np.testing.assert_array_equal(r.inverse_indices, inv.reshape(x.shape))
    np.testing.assert_array_equal(r.counts, c)
    np.testing.assert_array_equal(jnp.unique_values(x), v)
    np.testing.assert_array_equal(jnp.unique_counts(x).counts, c)
    np.testing.assert_array_equal(jnp.unique_inverse(x).inverse_indices, inv.reshape(x.shape))
    np.testing.assert_array_equal(jnp.unique(x), v)
    padded = jnp.unique_all(x, size=len(v) + 2, fill_value=9)
    np.testing.assert_array_equal(padded.values, np.concatenate([v, [9, 9]]))
    np.testing.assert_array_equal(padded.counts, np.concatenate([c, [0, 0]]))
    f = jx.jit(lambda a: jnp.unique_values(a, size=3))
    np.testing.assert_array_equal(f(x), v[:3])


def test_unique_nans():
    x = np.array([1.0, np.nan, np.nan, 2.0], np.float32)
    assert jnp.unique_values(x).shape == (4,)      # NaNs are distinct (the standard)
    assert jnp.unique(x).shape == (3,)             # NumPy's equal_nan=True


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dt", [np.int32, np.float32])
def test_searchsorted(side, dt):
    a = np.sort(RNG.integers(0, 10, 12)).astype(dt)
    v = RNG.integers(-1, 11, (3, 4)).astype(dt)
    np.testing.assert_array_equal(jnp.searchsorted(a, v, side), np.searchsorted(a, v, side))
    srt = RNG.permutation(12)
    b = a[np.argsort(srt)]
    np.testing.assert_array_equal(jnp.searchsorted(b, v, side, sorter=np.argsort(b)),
                                  np.searchsorted(b, v, side, sorter=np.argsort(b)))
    if dt == np.float32:
        a = np.array([1.0, 2.0, np.nan], dt)
        q = np.array([np.nan, 2.0, 0.0], dt)
        np.testing.assert_array_equal(jnp.searchsorted(a, q, side),
                                      np.searchsorted(a, q, side))


def test_manipulation_additions():
    x = RNG.random((2, 3, 4)).astype(np.float32)
    for axis in (0, 1, -1):
        got = jnp.unstack(x, axis=axis)
        want = [np.take(x, k, axis) for k in range(x.shape[axis])]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(jnp.matrix_transpose(x), np.swapaxes(x, -1, -2))
    np.testing.assert_array_equal(jnp.permute_dims(x, (2, 0, 1)), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(jnp.concat([x, x], axis=None), np.concatenate([x, x], None))
    np.testing.assert_array_equal(jnp.reshape(x, shape=(6, 4)), x.reshape(6, 4))
    with pytest.warns(DeprecationWarning, match="newshape"):
        assert jnp.reshape(x, newshape=-1).shape == (24,)
    assert jnp.argwhere(np.array(3)).shape == (1, 0)
    np.testing.assert_array_equal(jnp.argwhere(x > 0.5), np.argwhere(x > 0.5))
    assert [m.shape for m in jnp.meshgrid(jnp.zeros(0), jnp.zeros(2))] == [(2, 0), (2, 0)]
    np.testing.assert_array_equal(jnp.clip(x, max=0.5), np.clip(x, None, 0.5))
    np.testing.assert_array_equal(x[np.bool_(True)], jnp.asarray(x)[jnp.asarray(True)])
    assert jnp.asarray(x)[jnp.asarray(False)].shape == (0, 2, 3, 4)
    a = jnp.asarray(x)
    assert a.__array_namespace__() is jnp and a.to_device("cpu") is a
    with pytest.raises(ValueError, match="device"):
        jnp.zeros(3, device="gpu")
    np.testing.assert_allclose(jnp.std(x, axis=1, correction=1), x.std(1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(jnp.var(x, correction=1.5), x.var(ddof=1.5), rtol=1e-5)
    np.testing.assert_allclose(jnp.vecdot(x, x[0, 0]), (x * x[0, 0]).sum(-1), rtol=1e-5)
    assert jnp.zeros(3, device="cpu").shape == (3,)
    np.testing.assert_array_equal(jnp.from_dlpack(np.arange(3)), np.arange(3))


def test_products_keywords():
    a = RNG.integers(-100, 100, (3, 4)).astype(np.int8)
    b = RNG.integers(-100, 100, (4, 2)).astype(np.int8)
    want = a.astype(np.int32) @ b.astype(np.int32)
    for fn in (jnp.dot, jnp.matmul):
        got = fn(a, b, preferred_element_type=np.int32, precision="highest")
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)
    got = jnp.einsum("ij,jk->ik", a, b, preferred_element_type=np.int32)
    np.testing.assert_array_equal(got, want)
    got = jnp.tensordot(a, b, 1, preferred_element_type=jnp.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want.astype(np.float32))


# --- jx.numpy.linalg --------------------------------------------------------

def test_linalg_public_names():
    public = [n for n in dir(jnp.linalg) if not n.startswith("_")]
    assert "bind1" not in public and "matmul" in public and "norm" in public
    np.testing.assert_allclose(jnp.linalg.inv(2 * np.eye(2)), 0.5 * np.eye(2))
    for name in ("eig", "eigvals"):         # complex results: no non-symmetric eigensolver
        with pytest.raises(NotImplementedError, match=f"linalg.{name}.*complex"):
            getattr(jnp.linalg, name)(np.eye(2))


@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("ord", [None, 1, 2, np.inf, -np.inf, 0, 3, -1])
def test_vector_norms(shape, ord):
    x = RNG.standard_normal(shape).astype(np.float32)
    axis = len(shape) - 1
    np.testing.assert_allclose(jnp.linalg.norm(x, ord, axis), np.linalg.norm(x, ord, axis),
                               rtol=1e-5)
    np.testing.assert_allclose(
        jnp.linalg.vector_norm(x, axis=axis, ord=2 if ord is None else ord, keepdims=True),
        np.linalg.norm(x, 2 if ord is None else ord, axis, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"])
def test_matrix_norms(ord):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(jnp.linalg.norm(x, ord, (1, 2)),
                               np.linalg.norm(x, ord, (1, 2)), rtol=1e-5)
    np.testing.assert_allclose(jnp.linalg.norm(x, ord, (2, 1), keepdims=True),
                               np.linalg.norm(x, ord, (2, 1), keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(jnp.linalg.matrix_norm(x, ord="fro" if ord is None else ord),
                               np.linalg.norm(x, ord, (-2, -1)), rtol=1e-5)


def test_linalg_products():
    x = RNG.standard_normal((3, 4, 4)).astype(np.float32)
    for n in (0, 1, 2, 5):
        np.testing.assert_allclose(jnp.linalg.matrix_power(x, n),
                                   np.linalg.matrix_power(x, n), rtol=1e-4, atol=1e-4)
    m = [RNG.standard_normal(s).astype(np.float32) for s in [(3,), (3, 4), (4, 2), (2,)]]
    np.testing.assert_allclose(jnp.linalg.multi_dot(m), np.linalg.multi_dot(m), rtol=1e-4)
    np.testing.assert_allclose(jnp.linalg.trace(x, offset=1),
                               np.trace(x, 1, -2, -1), rtol=1e-5)
    np.testing.assert_array_equal(jnp.linalg.diagonal(x), np.diagonal(x, 0, -2, -1))
    np.testing.assert_allclose(jnp.linalg.tensordot(x, x[0], axes=2),
                               np.tensordot(x, x[0], 2), rtol=1e-4)
    v = RNG.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(jnp.linalg.cross(v, v[::-1]), np.cross(v, v[::-1]), rtol=1e-5)
    np.testing.assert_allclose(jnp.linalg.outer(v[0], v[1]), np.outer(v[0], v[1]))
    np.testing.assert_allclose(jnp.linalg.matmul(x, x), x @ x, rtol=1e-5)


# --- jax.numpy's names jx lacks: a one-line error ---------------------------

def test_missing_names_error():
    with pytest.raises(NotImplementedError, match=r"jx.numpy.polyfit .*not implemented"):
        jnp.polyfit
    with pytest.raises(AttributeError, match="float8_e4m3fn .*8-bit float"):
        jnp.float8_e4m3fn
    assert not hasattr(jnp, "polyfit") and not hasattr(jnp, "no_such_name")


def test_every_jax_name_is_present_or_explained():
    jax_np = pytest.importorskip("jax.numpy")
    from jx.numpy._missing import NotInJx
    for name in dir(jax_np):
        if name.startswith("_"):
            continue
        try:
            getattr(jnp, name)
        except NotInJx:
            pass        # explained
        except AttributeError as e:       # pragma: no cover - the failure message
            pytest.fail(f"jx.numpy.{name}: bare AttributeError {e}")


def test_against_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jaxnp
    x = RNG.integers(0, 4, (3, 5)).astype(np.int32)
    np.testing.assert_array_equal(jnp.unique_all(x, size=6, fill_value=7).indices,
                                  jaxnp.unique_all(x, size=6, fill_value=7).indices)
    np.testing.assert_array_equal(jnp.nonzero(x, size=9)[1], jaxnp.nonzero(x, size=9)[1])
    np.testing.assert_array_equal(jnp.cumulative_sum(x, axis=0, include_initial=True),
                                  jaxnp.cumulative_sum(x, axis=0, include_initial=True))
    assert jnp.cumulative_sum(x, axis=0).dtype == jaxnp.cumulative_sum(x, axis=0).dtype
    for a, b in [("int64", "float64"), ("uint64", "int64"), ("int32", "float32")]:
        assert jnp.can_cast(a, b) == jaxnp.can_cast(a, b)
    del jax


# --- the whole-suite runner (jx bench --suite array-api) ------------------------

def test_conformance_runner_tallies_and_reports_the_gap():
    import xml.etree.ElementTree as ET
    from jx.benchmarks import array_api
    xml = ET.fromstring(
        '<testsuites><testsuite>'
        '<testcase classname="array_api_tests.test_linalg" name="test_det"><failure/></testcase>'
        '<testcase classname="array_api_tests.test_linalg" name="test_matmul"/>'
        '<testcase classname="array_api_tests.test_fft" name="test_fft"><skipped/></testcase>'
        '</testsuite></testsuites>')
    jx_out = array_api.parse_junit(xml)
    assert jx_out == {"array_api_tests.test_linalg::test_det": "failed",
                      "array_api_tests.test_linalg::test_matmul": "passed",
                      "array_api_tests.test_fft::test_fft": "skipped"}
    jax_out = dict(jx_out, **{"array_api_tests.test_linalg::test_det": "passed"})
    assert array_api.tally(jx_out)["test_linalg"] == {"failed": 1, "passed": 1}
    text = array_api.report({"jx": jx_out, "JAX": jax_out}, "CPU", "cmd", 60.0)
    assert "| test_linalg | 1 / 1 / 0 | 2 / 0 / 0 |" in text
    assert "passed by jax.numpy: 1" in text and "`array_api_tests.test_linalg::test_det`" in text
