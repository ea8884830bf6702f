"""The CPU backend's eigh and svd kernels (codegen/cpu/opaque_eigh.py and
opaque_svd.py) against NumPy's LAPACK and the eager reference, on fresh random
inputs.

Vectors are compared sign-invariantly: residuals |A V - V diag(w)|, orthogonality
|V^T V - I|, reconstruction |U diag(s) V^T - A|, all in units of n eps |A|; the
values against NumPy's (in float64, of the same input) within a few n eps |A|;
against the eager reference, each vector up to its sign where the spectrum's gap
around it decides it. Edge cases: empty, 1 x 1, odd and rectangular shapes,
batches, zero, identity (degenerate), Hilbert (ill-conditioned), rank-deficient,
huge and tiny scales, NaN / inf (NaN outputs for that matrix only), symbolic
sizes, batches split over threads, code compiled for other CPUs, and an
artifact built by `jx compile`.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jx
from jx.lax import linalg

import cpu_matrix

pytest.importorskip("llvmlite")

COVERED = {"eigh", "svd"}      # (tests/test_coverage.py: checked against NumPy here)

DTYPES = ["float32", "float64"]
TOL = 8.0          # allowed error, in units of n eps |A|


def _eps(dt) -> float:
    return float(np.finfo(dt).eps)


def _rng():
    return np.random.default_rng()        # fresh inputs every run


def _sym(rng, shape, dt):
    a = rng.standard_normal(shape)
    return ((a + np.swapaxes(a, -1, -2)) / 2).astype(dt)


def _flat(x, axes=2):
    """x as a list of its last `axes`-dimensional items, in float64."""
    x = np.asarray(x, np.float64)
    return x.reshape((int(np.prod(x.shape[:-axes])),) + x.shape[-axes:])


def _units(a, dt) -> float:
    n = max(a.shape[-2:])
    return max(n, 1) * _eps(dt) * max(np.linalg.norm(a, 2), np.finfo(np.float64).tiny)


# ------------------------------------------------------------------ checks

def check_eigh(a, v, w, dt, tol=TOL):
    """v, w of the symmetric a (batched): shapes, dtypes, ascending w, and the
    residual, orthogonality and eigenvalues against NumPy's within tol units."""
    v, w = np.asarray(v), np.asarray(w)
    assert v.dtype == w.dtype == np.dtype(dt)
    assert v.shape == a.shape and w.shape == a.shape[:-1]
    n = a.shape[-1]
    for m, vm, wm in zip(_flat(a), _flat(v), _flat(w, 1)):
        u = _units(m, dt)
        assert np.all(np.diff(wm) >= 0), wm
        assert np.abs(m @ vm - vm * wm).max(initial=0) <= tol * u
        assert np.abs(vm.T @ vm - np.eye(n)).max(initial=0) <= tol * n * _eps(dt)
        assert np.abs(wm - np.linalg.eigvalsh(m)).max(initial=0) <= tol * u


def check_svd(a, outs, full, uv, dt, tol=TOL):
    """svd outputs of a (batched) for the flags: shapes, dtypes, descending s >= 0,
    reconstruction, orthonormal u and vt (the completion too), s against NumPy's."""
    m, n = a.shape[-2:]
    k = min(m, n)
    outs = [np.asarray(o) for o in outs]
    s = outs[0]
    assert s.shape == a.shape[:-2] + (k,) and s.dtype == np.dtype(dt)
    a64, ss = _flat(a), _flat(s, 1)
    if uv:
        u, vt = outs[1], outs[2]
        um, vn = (m, n) if full else (k, k)
        assert u.shape == a.shape[:-2] + (m, um) and vt.shape == a.shape[:-2] + (vn, n)
        assert u.dtype == vt.dtype == np.dtype(dt)
        us, vts = _flat(u), _flat(vt)
    for idx, (am, sm) in enumerate(zip(a64, ss)):
        unit = _units(am, dt)
        assert np.all(sm >= 0) and np.all(np.diff(sm) <= 0), sm
        ref = np.linalg.svd(am, compute_uv=False) if k else np.zeros(0)
        assert np.abs(sm - ref).max(initial=0) <= tol * unit
        if uv:
            um_, vtm = us[idx], vts[idx]
            rec = (um_[:, :k] * sm) @ vtm[:k]
            assert np.abs(rec - am).max(initial=0) <= tol * unit
            for q in (um_.T @ um_, vtm @ vtm.T):
                assert np.abs(q - np.eye(len(q))).max(initial=0) <= tol * max(m, n) * _eps(dt)


def _aligned(got, want):
    """got's columns with the signs that best match want's."""
    signs = np.sign(np.sum(got * want, axis=-2, keepdims=True))
    return got * np.where(signs == 0, 1, signs)


def _eigh_jit(a, lower=True):
    return jx.jit(lambda x: linalg.eigh(x, lower=lower, symmetrize_input=False))(a)


def _svd_jit(a, full, uv):
    return jx.jit(lambda x: linalg.svd(x, full_matrices=full, compute_uv=uv))(a)


def _svd_outs(res, uv):
    """(s, u, vh) in the primitive's order from linalg.svd's result."""
    if not uv:
        return [res]
    u, s, vh = res
    return [s, u, vh]


# ------------------------------------------------------------------ eigh

EIGH_SHAPES = [(0, 0), (1, 1), (2, 2), (3, 3), (7, 7), (16, 16), (33, 33), (100, 100),
               (3, 4, 7, 7), (2, 0, 0), (5, 1, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_random_against_numpy(dtype):
    rng = _rng()
    for shape in EIGH_SHAPES:
        a = _sym(rng, shape, dtype)
        v, w = _eigh_jit(a)
        check_eigh(a, v, w, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_against_eager_reference(dtype):
    """Compiled against eager (NumPy's LAPACK through the primitive's reference):
    values within tol, each vector up to sign, to within eps |A| / its gap."""
    rng = _rng()
    for shape in [(4, 4), (9, 9), (2, 3, 6, 6), (40, 40)]:
        a = _sym(rng, shape, dtype)
        got = [np.asarray(x, np.float64) for x in _eigh_jit(a)]
        want = [np.asarray(x, np.float64) for x in linalg.eigh(a, symmetrize_input=False)]
        n = shape[-1]
        unit = n * _eps(dtype) * np.abs(a).sum(-1).max()
        np.testing.assert_allclose(got[1], want[1], rtol=0, atol=TOL * unit)
        w = want[1]
        gaps = np.minimum(np.diff(w, prepend=-np.inf), np.diff(w, append=np.inf))
        err = np.abs(_aligned(got[0], want[0]) - want[0]).max(axis=-2)
        assert np.all(err <= TOL * unit / gaps + TOL * n * _eps(dtype)), (err, gaps)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_reads_only_its_triangle(dtype):
    rng = _rng()
    full = rng.standard_normal((3, 11, 11)).astype(dtype)
    for lower in (True, False):
        tri = np.tril(full) if lower else np.triu(full)
        sym = tri + np.swapaxes(tri, -1, -2) - tri * np.eye(11, dtype=dtype)
        v, w = _eigh_jit(full, lower=lower)
        check_eigh(sym, v, w, dtype)
        vs, ws = _eigh_jit(sym, lower=lower)
        np.testing.assert_array_equal(np.asarray(w), np.asarray(ws))


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_special_matrices(dtype):
    rng = _rng()
    n = 12
    hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n) + 1)
    q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    clustered = (q * np.repeat([1.0, 2.0, 2.0, 2.0, 5.0, -1.0], 2)) @ q.T
    low_rank = rng.standard_normal((n, 3))
    cases = [np.zeros((n, n)), np.eye(n), 3 * np.eye(n) - 1, hilbert, clustered,
             low_rank @ low_rank.T, np.diag(np.arange(n, 0, -1.0)),
             np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1),
             _sym(rng, (n, n), np.float64) * 1e30, _sym(rng, (n, n), np.float64) * 1e-30]
    for c in cases:
        a = np.ascontiguousarray((c + c.T) / 2, dtype)
        v, w = _eigh_jit(a)
        check_eigh(a, v, w, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_non_finite_gives_nan_for_that_matrix(dtype):
    rng = _rng()
    a = _sym(rng, (3, 4, 6, 6), dtype)
    a[0, 1, 2, 3] = np.nan
    a[2, 3, 0, 0] = np.inf
    a[1, 2, 5, 4] = -np.inf           # in the upper triangle too: the reference's rule
    v, w = (np.asarray(x) for x in _eigh_jit(a))
    bad = np.zeros((3, 4), bool)
    bad[0, 1] = bad[2, 3] = bad[1, 2] = True
    assert np.isnan(v[bad]).all() and np.isnan(w[bad]).all()
    check_eigh(a[~bad], v[~bad], w[~bad], dtype)
    want = [np.asarray(x) for x in linalg.eigh(a, symmetrize_input=False)]
    assert np.array_equal(np.isnan(want[1]), np.isnan(w))


# ------------------------------------------------------------------ svd

SVD_SHAPES = [(0, 0), (0, 3), (3, 0), (1, 1), (1, 5), (5, 1), (2, 3), (3, 2), (7, 7),
              (40, 17), (17, 40), (64, 64), (2, 3, 5, 9), (4, 9, 5)]
FLAGS = [(True, True), (False, True), (True, False), (False, False)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("full,uv", FLAGS)
def test_svd_random_against_numpy(dtype, full, uv):
    rng = _rng()
    for shape in SVD_SHAPES:
        a = rng.standard_normal(shape).astype(dtype)
        outs = _svd_outs(_svd_jit(a, full, uv), uv)
        check_svd(a, outs, full, uv, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_against_eager_reference(dtype):
    rng = _rng()
    for shape in [(6, 4), (4, 6), (2, 5, 5), (30, 30)]:
        a = rng.standard_normal(shape).astype(dtype)
        for full, uv in FLAGS:
            got = [np.asarray(x, np.float64) for x in _svd_outs(_svd_jit(a, full, uv), uv)]
            want = [np.asarray(x, np.float64) for x in _svd_outs(
                linalg.svd(a, full_matrices=full, compute_uv=uv), uv)]
            assert [g.shape for g in got] == [w.shape for w in want]
            unit = max(shape[-2:]) * _eps(dtype) * np.abs(a).sum(-1).max()
            np.testing.assert_allclose(got[0], want[0], rtol=0, atol=TOL * unit)
            if uv:        # leading singular vectors, up to sign, where the gap allows
                k = min(shape[-2:])
                s = want[0]
                gaps = np.minimum(-np.diff(s, prepend=np.inf), -np.diff(s, append=-np.inf))
                limit = TOL * unit / gaps + TOL * k * _eps(dtype)
                u_err = np.abs(_aligned(got[1][..., :k], want[1][..., :k])
                               - want[1][..., :k]).max(axis=-2)
                assert np.all(u_err <= limit), (u_err, gaps)


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_special_matrices(dtype):
    rng = _rng()
    hilbert = 1.0 / (np.arange(10)[:, None] + np.arange(8) + 1)
    cases = [np.zeros((6, 4)), np.eye(5), np.eye(4, 7), hilbert,
             rng.standard_normal((9, 3)) @ rng.standard_normal((3, 7)),
             rng.standard_normal((7, 2)) @ rng.standard_normal((2, 9)),
             np.ones((5, 5)), np.diag([3.0, 0, 1, 0, 2]),
             rng.standard_normal((8, 5)) * 1e35, rng.standard_normal((5, 8)) * 1e-35]
    for c in cases:
        a = c.astype(dtype)
        for full, uv in FLAGS:
            check_svd(a, _svd_outs(_svd_jit(a, full, uv), uv), full, uv, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_non_finite_gives_nan_for_that_matrix(dtype):
    rng = _rng()
    a = rng.standard_normal((2, 3, 5, 4)).astype(dtype)
    a[0, 2, 1, 1] = np.nan
    a[1, 0, 4, 3] = np.inf
    bad = np.zeros((2, 3), bool)
    bad[0, 2] = bad[1, 0] = True
    for full, uv in FLAGS:
        outs = [np.asarray(x) for x in _svd_outs(_svd_jit(a, full, uv), uv)]
        for o in outs:
            assert np.isnan(o[bad]).all()
        check_svd(a[~bad], [o[~bad] for o in outs], full, uv, dtype)


# ------------------------------------------------------------------ compilation

def test_large_matrices_float64():
    """n in the hundreds: the blocked rotations' full and partial column blocks."""
    rng = _rng()
    with jx.enable_x64():
        a = _sym(rng, (203, 203), np.float64)
        check_eigh(a, *_eigh_jit(a), np.float64)
        b = rng.standard_normal((150, 131))
        check_svd(b, _svd_outs(_svd_jit(b, True, True), True), True, True, np.float64)


def test_batches_split_over_threads():
    rng = _rng()
    with jx.enable_x64():
        a = _sym(rng, (24, 40, 40), np.float64)
        check_eigh(a, *_eigh_jit(a), np.float64)
        b = rng.standard_normal((24, 30, 20))
        check_svd(b, _svd_outs(_svd_jit(b, False, True), True), False, True, np.float64)


def test_symbolic_sizes():
    """One compilation serves every batch and matrix size of its symbols."""
    rng = _rng()
    eigh = jx.jit(lambda x: linalg.eigh(x), abstracted_axes=({0: "B", 1: "n", 2: "n"},))
    svd = jx.jit(lambda x: linalg.svd(x), abstracted_axes=({0: "B", 1: "n", 2: "n"},))
    for b, n in [(1, 1), (3, 2), (2, 9), (5, 17)]:
        a = _sym(rng, (b, n, n), np.float32)
        check_eigh(a, *eigh(a), np.float32)
        check_svd(a, _svd_outs(svd(a), True), True, True, np.float32)
    assert len(eigh._cache) == 1 and len(svd._cache) == 1


@pytest.mark.parametrize("cpu", ["x86-64", "x86-64-v3"])
def test_other_cpus(cpu, monkeypatch):
    """The routines compiled for other CPUs (SSE2 only: the vector rotations
    split into pairs; AVX2) give the same accuracy."""
    cpu_matrix.runnable(cpu)
    monkeypatch.setenv("JX_CPU", cpu)
    rng = _rng()
    with jx.enable_x64():
        a = _sym(rng, (2, 37, 37), np.float64)
        check_eigh(a, *_eigh_jit(a), np.float64)
    b = rng.standard_normal((2, 23, 70)).astype(np.float32)
    check_svd(b, _svd_outs(_svd_jit(b, True, True), True), True, True, np.float32)


ARTIFACT = textwrap.dedent('''
    import jx
    from jx.lax import linalg

    @jx.export(a=jx.f32[3, 6, 6], b=jx.f64[7, 4])
    def decompose(a, b):
        v, w = linalg.eigh(a)
        u, s, vt = linalg.svd(b)
        return v, w, u, s, vt, linalg.svd(a, compute_uv=False)
''')


@pytest.mark.skipif(shutil.which("cc") is None, reason="jx compile needs a C compiler (cc)")
def test_compiled_artifact(tmp_path):
    """`jx compile` links the routines into an artifact, which runs without llvmlite."""
    (tmp_path / "lin.py").write_text(ARTIFACT)
    r = subprocess.run([sys.executable, "-m", "jx.cli.main", "compile", tmp_path / "lin.py",
                        "-o", tmp_path / "out"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rng = _rng()
    a = _sym(rng, (3, 6, 6), np.float32)
    b = rng.standard_normal((7, 4))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    code = textwrap.dedent(f'''
        import sys
        sys.modules["llvmlite"] = None
        import numpy as np
        import jx.runtime as rt
        lib = rt.load({str(tmp_path / "out" / "liblin.so")!r})
        outs = lib.decompose(np.load({str(tmp_path / "a.npy")!r}),
                             np.load({str(tmp_path / "b.npy")!r}))
        np.savez({str(tmp_path / "outs.npz")!r}, *outs)
    ''')
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    outs = np.load(tmp_path / "outs.npz")
    v, w, u, s, vt, sa = (outs[f"arr_{i}"] for i in range(6))
    check_eigh(a, v, w, np.float32)
    check_svd(b, [s, u, vt], True, True, np.float64)
    check_svd(a, [sa], False, False, np.float32)


def test_every_small_size():
    """n = 1 .. 2 GROUP + 1: every remainder of the reflector groups and vector
    blocks, square and rectangular."""
    rng = _rng()
    for n in range(1, 18):
        a = _sym(rng, (n, n), np.float32)
        check_eigh(a, *_eigh_jit(a), np.float32)
        for shape in [(n, n), (n, n + 3), (n + 2, n)]:
            b = rng.standard_normal(shape).astype(np.float32)
            check_svd(b, _svd_outs(_svd_jit(b, True, True), True), True, True, np.float32)
