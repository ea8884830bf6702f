"""Accuracy of the compiled factorisations and triangular solves: jx.jit, so the
whole pipeline, the expand pass's blocked algorithms above BASE rows included.

Backward errors, each within BOUND * n * eps of the dtype (n the larger side):

    cholesky          ||A - L L^T|| / ||A||
    lu                ||P A - L U|| / ||A||
    qr                ||Q R - A|| / ||A||  and  ||Q^T Q - I||
    triangular_solve  ||op(T) X - B|| / (||T|| ||X||)

on well- and ill-conditioned matrices (random with a prescribed condition number,
U diag(s) V^T; Hilbert), rank-deficient ones (lu, qr), graded ones, and sizes
either side of the expand pass's block boundaries (64, 128), every size as a
batch (3, 2, n, n). Where the factors are unique (full rank, well conditioned)
they match LAPACK's (NumPy, SciPy) entry by entry: Cholesky's L, LU's factors and
pivots, QR with LAPACK's signs, and all 16 kinds of triangular solve. Then the
failure semantics: NaN factors, inf/NaN solves, never a crash; against
jax.lax.linalg where JAX is installed.

Norms are Frobenius, computed in float64 from the factors as returned.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.linalg as sl

import jx
from jx.lax import linalg as la
from jx.passes.expand import BASE

F32, F64 = np.float32, np.float64
DTYPES = [F32, F64]
# 1..17: the unrolled (up to 8) and looped kernels; then either side of each of
# the expand pass's block sizes (now 63, 65, 127, 129), an even split (130) and
# two levels of blocks (257)
SIZES = (1, 2, 3, 5, 7, 17) + tuple(sorted(
    {b + d for b in BASE.values() for d in (-1, 1)} | {130, 2 * max(BASE.values()) + 1}))
BOUND = 20                      # backward errors within BOUND * n * eps
# the condition numbers of the ill-conditioned members (f32: still positive definite)
CONDS = {F32: (1e2, 1e4, 1e5), F64: (1e2, 1e6, 1e10)}
HILBERT = {F32: (6, 9), F64: (6, 12)}   # f32: Hilbert matrices past 9 are not PD
FWD = 2.0                       # factors vs LAPACK's: within FWD * n * eps * cond

CHOLESKY = jx.jit(la.cholesky)
LU = jx.jit(la.lu)
QR = jx.jit(la.qr, static_argnames=("full_matrices",))
TRSM = jx.jit(la.triangular_solve, static_argnames=(
    "left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal"))

WORST: dict = {}                # (what, dtype) -> worst backward error / (n eps) seen


# ------------------------------------------------------------------ matrices

def _orthogonal(rng, n):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.where(np.diag(r) < 0, -1.0, 1.0)          # Haar distributed


def _conditioned(rng, m, n, cond):
    """U diag(s) V^T, s log-spaced from 1 down to 1 / cond."""
    k = min(m, n)
    s = np.geomspace(1, 1 / cond, k) if k > 1 else np.ones(k)
    return (_orthogonal(rng, m)[:, :k] * s) @ _orthogonal(rng, n)[:, :k].T


def _spd(rng, n, cond):
    u = _orthogonal(rng, n)
    s = np.geomspace(1, 1 / cond, n) if n > 1 else np.ones(n)
    a = (u * s) @ u.T
    return (a + a.T) / 2


def _wishart(rng, n):
    g = rng.standard_normal((n, n))
    return g @ g.T / n + np.eye(n)


def _graded(rng, a):
    """D A D with D spanning 4 orders of magnitude: badly scaled, not ill-posed."""
    d = np.geomspace(1e-2, 1e2, a.shape[-1])
    rng.shuffle(d)
    return d[:, None] * a * d[None, :]


def _rank_deficient(rng, m, n):
    r = min(m, n) // 2
    return rng.standard_normal((m, r)) @ rng.standard_normal((r, n))


def _spd_batch(rng, n, dtype):
    """(3, 2, n, n): two well-conditioned members first (compared entry by entry),
    then two ill-conditioned ones, a graded one and one scaled by 2^40."""
    c = CONDS[dtype]
    mats = [_wishart(rng, n), _spd(rng, n, c[0]), _spd(rng, n, c[1]), _spd(rng, n, c[2]),
            _graded(rng, _wishart(rng, n)), _spd(rng, n, c[1]) * 2.0 ** 40]
    return np.stack(mats).reshape(3, 2, n, n).astype(dtype)


def _general_batch(rng, m, n, dtype):
    """(3, 2, m, n): Gaussian and cond 1e2 first (compared entry by entry), then
    two ill-conditioned members, a rank-deficient one and a graded one."""
    c = CONDS[dtype]
    graded = _graded(rng, rng.standard_normal((max(m, n),) * 2))[:m, :n]
    mats = [rng.standard_normal((m, n)), _conditioned(rng, m, n, c[0]),
            _conditioned(rng, m, n, c[1]), _conditioned(rng, m, n, c[2]),
            _rank_deficient(rng, m, n), graded]
    return np.stack(mats).reshape(3, 2, m, n).astype(dtype)


# ------------------------------------------------------------------ measures

def _f64(x):
    return np.asarray(x, np.float64)


def _t(x):
    return np.swapaxes(x, -1, -2)


def _fro(x):
    """Per matrix, scaled first (no overflow or underflow of the squares)."""
    x = _f64(x)
    s = np.max(np.abs(x), axis=(-2, -1), keepdims=True, initial=0.0)
    s = np.where(np.isfinite(s) & (s > 0), s, 1.0)
    return np.linalg.norm(x / s, axis=(-2, -1)) * s[..., 0, 0]


def _ratio(err, scale):
    """err / scale per matrix; an exact zero is 0 whatever the scale (a zero matrix)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(err == 0, 0.0, err / scale)


def _bounded(what, rel, n, dtype, bound=BOUND):
    """rel (per matrix) within bound * n * eps; the worst is kept in WORST."""
    mult = float(np.max(rel, initial=0.0)) / (max(n, 1) * np.finfo(dtype).eps)
    key = (what, np.dtype(dtype).name)
    WORST[key] = max(WORST.get(key, 0.0), mult)
    assert mult <= bound, f"{what} ({np.dtype(dtype).name}, n={n}): backward error " \
                          f"{mult:.3g} n eps > {bound}"


def _same_factor(what, got, want, n, dtype, cond=1.0):
    """Entry by entry, relative to the factor's largest entry: within FWD n eps cond."""
    got, want = _f64(got), _f64(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if want.size == 0:
        return
    scale = np.max(np.abs(want), axis=(-2, -1), keepdims=True)
    err = np.max(_ratio(np.abs(got - want), scale))
    tol = FWD * max(n, 1) * np.finfo(dtype).eps * cond
    key = (what + " vs LAPACK", np.dtype(dtype).name)
    WORST[key] = max(WORST.get(key, 0.0), err / tol * FWD)
    assert err <= tol, f"{what} ({np.dtype(dtype).name}, n={n}) differs from LAPACK's by " \
                       f"{err:.3g} of its largest entry (> {tol:.3g})"


def _check_cholesky(a, L, what="cholesky"):
    n = a.shape[-1]
    L = np.asarray(L)
    assert L.shape == a.shape and L.dtype == a.dtype
    assert not np.isnan(L).any(), f"{what}: NaN factor of a positive definite matrix"
    assert np.all(np.triu(L, 1) == 0)
    L64 = _f64(L)
    _bounded(what, _ratio(_fro(_f64(a) - L64 @ _t(L64)), _fro(a)), n, a.dtype)


def _permutation_of(pivots, m):
    """The rows that LAPACK's swaps `pivots` (applied in order) bring to the top."""
    flat = pivots.reshape(-1, pivots.shape[-1])
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    for row, piv in zip(perm, flat):
        for j, p in enumerate(piv):
            row[j], row[p] = row[p], row[j]
    return perm.reshape(pivots.shape[:-1] + (m,))


def _lu_factors(lu):
    m, n = lu.shape[-2:]
    k = min(m, n)
    lu = _f64(lu)
    L = np.tril(lu, -1)[..., :, :k] + np.eye(m, k)
    return L, np.triu(lu)[..., :k, :]


def _check_lu(a, outs, what="lu"):
    lu, piv, perm = (np.asarray(x) for x in outs)
    m, n = a.shape[-2:]
    assert lu.shape == a.shape and lu.dtype == a.dtype
    assert piv.shape == a.shape[:-2] + (min(m, n),) and piv.dtype == np.int32
    assert perm.shape == a.shape[:-2] + (m,) and perm.dtype == np.int32
    assert np.array_equal(perm, _permutation_of(piv, m)), f"{what}: pivots and permutation"
    assert not np.isnan(lu).any(), f"{what}: NaN in the LU of a finite matrix"
    L, U = _lu_factors(lu)
    assert np.all(np.abs(L) <= 1), f"{what}: |L| > 1 (not partial pivoting)"
    pa = np.take_along_axis(_f64(a), perm[..., :, None].astype(np.int64), -2)
    _bounded(what, _ratio(_fro(pa - L @ U), _fro(a)), max(m, n), a.dtype)


def _check_qr(a, q, r, full_matrices, what="qr"):
    q, r = np.asarray(q), np.asarray(r)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    assert q.shape == a.shape[:-2] + (m, k) and r.shape == a.shape[:-2] + (k, n)
    assert q.dtype == r.dtype == a.dtype
    assert not (np.isnan(q).any() or np.isnan(r).any()), f"{what}: NaN of a finite matrix"
    assert np.all(np.tril(r, -1) == 0)
    q64 = _f64(q)
    _bounded(what, _ratio(_fro(q64 @ _f64(r) - _f64(a)), _fro(a)), max(m, n), a.dtype)
    _bounded(what + " orthogonality", _fro(_t(q64) @ q64 - np.eye(k)), max(m, n), a.dtype)


def _each_matrix(a):
    return a.reshape((-1,) + a.shape[-2:])


# ------------------------------------------------------------------ cholesky

@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_backward_error_and_factor(dtype):
    rng = np.random.default_rng(101)
    for n in SIZES:
        a = _spd_batch(rng, n, dtype)
        L = np.asarray(CHOLESKY(a))
        _check_cholesky(a, L)
        flat, Lf = _each_matrix(a), _each_matrix(L)
        for i in (0, 1):          # Wishart (cond < ~10), cond 1e2: L is well determined
            _same_factor("cholesky L", Lf[i], np.linalg.cholesky(flat[i]), n, dtype,
                         cond=np.sqrt(np.linalg.cond(_f64(flat[i]))))


@pytest.mark.parametrize("dtype", DTYPES)
def test_hilbert(dtype):
    """The classic ill-conditioned SPD matrix (cond 1.5e7 at 6, 1.7e16 at 12): the
    factorisations stay backward stable."""
    for n in HILBERT[dtype]:
        h = np.stack([sl.hilbert(n)] * 2).astype(dtype)
        _check_cholesky(h, CHOLESKY(h), "cholesky hilbert")
        _check_lu(h, LU(h), "lu hilbert")
        for full in (True, False):
            _check_qr(h, *QR(h, full_matrices=full), full, "qr hilbert")


@pytest.mark.parametrize("n", [4, 20, 200])
def test_cholesky_reads_only_the_lower_triangle(n):
    """symmetrize_input=False: NaN above the diagonal is never read (unrolled, loop
    and blocked paths)."""
    rng = np.random.default_rng(113)
    a = _wishart(rng, n)
    garbage = np.where(np.tri(n, dtype=bool), a, np.nan).astype(np.float32)
    L = np.asarray(jx.jit(lambda x: la.cholesky(x, symmetrize_input=False))(garbage))
    _check_cholesky(a.astype(np.float32), L, "cholesky lower triangle")


def test_cholesky_1x1_and_0x0():
    one = np.array([[[4.0]], [[0.0]], [[-1.0]], [[2.25]]], np.float32)
    got = np.asarray(CHOLESKY(one))
    assert np.array_equal(got[[0, 3]], np.array([[[2.0]], [[1.5]]], np.float32))
    assert np.isnan(got[[1, 2]]).all()          # zero and negative pivots fail
    for shape in ((0, 0), (2, 0, 0)):
        got = np.asarray(CHOLESKY(np.zeros(shape, np.float32)))
        assert got.shape == shape and got.dtype == np.float32


# ------------------------------------------------------------------ lu

@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_backward_error_and_factors(dtype):
    rng = np.random.default_rng(102)
    for n in SIZES:
        a = _general_batch(rng, n, n, dtype)
        outs = LU(a)
        _check_lu(a, outs)
        _same_lu_as_lapack(a, outs, dtype)


def _same_lu_as_lapack(a, outs, dtype, members=(0, 1)):
    """The well-conditioned members: SciPy's getrf pivots exactly, factors to rounding."""
    m, n = a.shape[-2:]
    lu = _each_matrix(np.asarray(outs[0]))
    piv = np.asarray(outs[1]).reshape(-1, min(m, n))
    flat = _each_matrix(a)
    for i in members:
        want, want_piv = sl.lu_factor(flat[i], check_finite=False)
        assert np.array_equal(piv[i], want_piv), f"lu pivots ({m}x{n}, member {i})"
        _same_factor("lu", lu[i], want, max(m, n), dtype, np.linalg.cond(_f64(flat[i])))


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_rectangular(dtype):
    """Tall and wide, below and above the block size (BASE["lu"] = 128: the blocked
    LU's panels then have more rows than columns, or its trailing matrix more
    columns)."""
    rng = np.random.default_rng(103)
    for m, n in ((7, 3), (3, 7), (65, 17), (17, 65), (200, 130), (130, 200), (300, 150)):
        a = _general_batch(rng, m, n, dtype)
        outs = LU(a)
        _check_lu(a, outs, "lu rectangular")
        _same_lu_as_lapack(a, outs, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_exactly_singular(dtype):
    """Zero columns and a zero row: a column of zero candidates pivots on its first
    row and is not scaled (getrf goes on); the blocked path (200) as the unblocked."""
    rng = np.random.default_rng(114)
    for n in (20, 200):
        a = rng.standard_normal((2, n, n))
        a[:, :, [5, n - 30]] = 0
        a[1, n - 40, :] = 0
        a = a.astype(dtype)
        outs = LU(a)
        _check_lu(a, outs, "lu singular")
        for i in range(2):
            with warnings.catch_warnings():            # "exactly zero. Singular"
                warnings.simplefilter("ignore", sl.LinAlgWarning)
                want_piv = sl.lu_factor(a[i], check_finite=False)[1]
            assert np.array_equal(np.asarray(outs[1])[i], want_piv)


def test_lu_empty_and_1x1():
    for shape in ((0, 0), (0, 3), (3, 0), (2, 0, 0), (1, 1), (2, 1, 1)):
        a = np.random.default_rng(104).standard_normal(shape).astype(np.float32)
        got = [np.asarray(x) for x in LU(a)]
        want = la.lu(a)                                        # the primitive's reference
        for g, w in zip(got, want):
            w = np.asarray(w)
            assert g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w), shape
    got = [np.asarray(x) for x in LU(np.zeros((1, 1), np.float32))]
    assert got[0][0, 0] == 0 and got[1][0] == got[2][0] == 0   # a zero pivot: no scaling


# ------------------------------------------------------------------ qr

# tall and wide, unblocked and blocked (BASE["qr"] = 128; wide: the columns past
# the square part get H^T), and a very thin one
QR_RECT = ((7, 3), (3, 7), (130, 63), (63, 130), (200, 130), (130, 200), (257, 5))


@pytest.mark.parametrize("dtype", DTYPES)
def test_qr_backward_error_and_factors(dtype):
    rng = np.random.default_rng(105)
    shapes = [(n, n) for n in SIZES if n != 130] + list(QR_RECT)   # 130: as 129
    for m, n in shapes:
        a = _general_batch(rng, m, n, dtype)
        for full in (True, False) if m > n else (True,):   # else the same factors
            q, r = QR(a, full_matrices=full)
            _check_qr(a, q, r, full)
            flat, qf, rf = (_each_matrix(np.asarray(x)) for x in (a, q, r))
            for i in (0, 1):                       # full rank, well conditioned
                wq, wr = np.linalg.qr(flat[i], mode="complete" if full else "reduced")
                cond = np.linalg.cond(_f64(flat[i]))
                _same_factor("qr Q", qf[i], wq, max(m, n), dtype, cond)
                _same_factor("qr R", rf[i], wr, max(m, n), dtype, cond)


def test_qr_empty_and_1x1():
    for shape in ((0, 0), (0, 3), (3, 0), (2, 0, 0), (1, 1), (2, 1, 1), (1, 4), (4, 1)):
        a = np.random.default_rng(106).standard_normal(shape).astype(np.float32)
        for full in (True, False):
            got = [np.asarray(x) for x in QR(a, full_matrices=full)]
            want = [np.asarray(x) for x in la.qr(a, full_matrices=full)]
            for g, w in zip(got, want):
                assert g.shape == w.shape and g.dtype == w.dtype, (shape, full)
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=str(shape))


@pytest.mark.parametrize("dtype", DTYPES)
def test_qr_of_scaled_matrices(dtype):
    """LAPACK's Householder vectors come from scaled norms (dnrm2, dlarfg): a matrix
    whose squared entries overflow or underflow factors as well as any other."""
    rng = np.random.default_rng(107)
    a = rng.standard_normal((2, 5, 4))
    big, small = (1e25, 1e-25) if dtype == F32 else (1e200, 1e-200)
    for scale in (big, small, 1.0):
        x = (a * scale).astype(dtype)
        q, r = QR(x, full_matrices=True)
        _check_qr(x, q, r, True, "qr scaled")
        for i in range(2):
            wq, wr = np.linalg.qr(x[i], mode="complete")
            _same_factor("qr scaled Q", np.asarray(q)[i], wq, 5, dtype, 10.0)
            _same_factor("qr scaled R", np.asarray(r)[i], wr, 5, dtype, 10.0)


# ------------------------------------------------------------------ triangular solve

COMBOS = list(itertools.product([False, True], repeat=4))   # left, lower, transpose, unit


def _triangles(rng, m, dtype, cond):
    """{(lower, unit): (a, t)}: t the triangle (unit diagonal when unit), a the same
    with NaN in every entry the solve must not read. Two members: a well-conditioned
    triangle (dominant diagonal, small off-diagonal part) and the R factor (R^T when
    lower) of a matrix of condition number `cond`; unit: L D^-1 or D^-1 U of those."""
    off = rng.standard_normal((m, m)) * (0.3 / np.sqrt(max(m, 1)))
    well = off + np.diag(2 + rng.uniform(0, 1, m) * np.sign(rng.standard_normal(m)))
    r = np.linalg.qr(_conditioned(rng, m, m, cond))[1]
    both = np.stack([well, r + r.T - np.diag(np.diag(r))])     # tril = r^T, triu = r
    eye = np.eye(m, dtype=bool)
    out = {}
    for lower, unit in itertools.product([False, True], repeat=2):
        keep = np.tril(np.ones((m, m), bool)) if lower else np.triu(np.ones((m, m), bool))
        t = np.where(keep, both, 0.0)
        if unit:
            d = np.diagonal(t, axis1=-2, axis2=-1)
            t = np.where(eye, 1.0, t / (d[..., None, :] if lower else d[..., :, None]))
            keep = keep & ~eye
        out[lower, unit] = (np.where(keep, t, np.nan).astype(dtype), t.astype(dtype))
    return out


def _trsm_reference(t, b, left, lower, trans, unit):
    """SciPy's trtrs on the clean triangle (x op(t) = b as op(t)^T x^T = b^T)."""
    out = []
    for ti, bi in zip(t, b):
        if left:
            x = sl.solve_triangular(ti, bi, trans=int(trans), lower=lower,
                                    unit_diagonal=unit, check_finite=False)
        else:
            x = sl.solve_triangular(ti, bi.T, trans=int(not trans), lower=lower,
                                    unit_diagonal=unit, check_finite=False).T
        out.append(x)
    return np.stack(out)


def _check_trsm(t, b, x, left, trans, what, reference=None, cond=1.0):
    x = np.asarray(x)
    assert x.shape == b.shape and x.dtype == b.dtype
    m = t.shape[-1]
    op = _t(_f64(t)) if trans else _f64(t)
    res = op @ _f64(x) - _f64(b) if left else _f64(x) @ op - _f64(b)
    _bounded(what, _ratio(_fro(res), _fro(t) * _fro(x)), m, t.dtype)
    if reference is not None:
        _same_factor(what, x[0], reference[0], m, t.dtype, cond)


def _solver(kinds):
    """One compiled program solving with each (left, lower, transpose, unit) kind."""
    def solves(tri, bl, br):
        return [la.triangular_solve(tri[lower, unit], bl if left else br, left_side=left,
                                    lower=lower, transpose_a=trans, unit_diagonal=unit)
                for left, lower, trans, unit in kinds]
    return jx.jit(solves)


def _check_kinds(solver, kinds, rng, m, dtype, rhs):
    """Residuals of both members, and the well-conditioned member's x against SciPy."""
    tri = _triangles(rng, m, dtype, CONDS[dtype][1])
    bl = rng.standard_normal((2, m, rhs)).astype(dtype)
    br = rng.standard_normal((2, rhs, m)).astype(dtype)
    xs = solver({k: v[0] for k, v in tri.items()}, bl, br)
    for (left, lower, trans, unit), x in zip(kinds, xs):
        t = tri[lower, unit][1]
        b = bl if left else br
        ref = _trsm_reference(t[:1], b[:1], left, lower, trans, unit)
        _check_trsm(t, b, x, left, trans, "triangular_solve", ref, np.linalg.cond(_f64(t[0])))


ALL16 = _solver(COMBOS)


@pytest.mark.parametrize("dtype", DTYPES)
def test_triangular_solve_16_kinds_blocked(dtype):
    """Every (left_side, lower, transpose_a, unit_diagonal) at two levels of blocks
    (BASE 64: 150 splits into 64 + 86, 86 into 32 + 54), NaN in every entry of a
    that must not be read."""
    m = 2 * BASE["triangular_solve"] + 22
    _check_kinds(ALL16, COMBOS, np.random.default_rng(108), m, dtype, rhs=7)


TRSM_KINDS = ((True, True, False, False), (True, False, True, False),
              (False, True, True, False), (False, False, False, True))
FOUR_KINDS = _solver(TRSM_KINDS)


@pytest.mark.parametrize("dtype", DTYPES)
def test_triangular_solve_sizes(dtype):
    rng = np.random.default_rng(109)
    for m in SIZES:
        _check_kinds(FOUR_KINDS, TRSM_KINDS, rng, m, dtype, rhs=5)


def test_triangular_solve_empty():
    a = np.eye(3, dtype=np.float32)
    for left in (True, False):
        b = np.zeros((3, 0) if left else (0, 3), np.float32)
        assert np.asarray(TRSM(a, b, left_side=left)).shape == b.shape
    x = np.asarray(TRSM(np.zeros((0, 0), np.float32), np.zeros((0, 4), np.float32),
                        left_side=True))
    assert x.shape == (0, 4)


# ------------------------------------------------------------------ failures

def _not_pd(rng, n, where):
    """SPD but for one pivot: the Schur complement at `where` is negative."""
    a = _wishart(rng, n)
    a[where, where] -= np.linalg.eigvalsh(a)[-1] * 4
    return a


NOT_PD_CASES = {4: (0, 2, 3), 20: (0, 11, 19), 200: (5, 100, 199)}  # unrolled, loop, blocked


@pytest.mark.parametrize("n", sorted(NOT_PD_CASES))
def test_cholesky_failure_is_nan(n):
    """A matrix that is not positive definite (a failing pivot in the first block,
    a middle one, the last one), the zero matrix, or one with a NaN entry: a NaN
    factor (jx: all of it); the matrices batched with it are untouched."""
    rng = np.random.default_rng(110 + n)
    good = _wishart(rng, n)
    nan_entry = _wishart(rng, n)
    nan_entry[n // 2, n // 3] = np.nan
    bad = [_not_pd(rng, n, w) for w in NOT_PD_CASES[n]] + [np.zeros((n, n)), nan_entry]
    a = np.stack([good] + bad).astype(np.float32)
    L = np.asarray(CHOLESKY(a))
    np.testing.assert_allclose(L[0], np.linalg.cholesky(a[0]), rtol=1e-4, atol=1e-5)
    lower = np.tri(n, dtype=bool)
    assert np.isnan(L[1:][:, lower]).all() and not L[1:][:, ~lower].any()   # as JAX


@pytest.mark.parametrize("n", [5, 200])
def test_nan_entry_spreads(n):
    """LU and QR: NaN in the factors, the pivots still rows. Triangular solves: a
    NaN below a's diagonal in row p makes x's rows from p on NaN, one in b's row p
    the same column of them; the rest is the clean solve."""
    rng = np.random.default_rng(111)
    a = rng.standard_normal((2, n, n)).astype(np.float32)
    a[1, n // 2, n // 3] = np.nan
    lu, piv, perm = (np.asarray(x) for x in LU(a))
    assert not np.isnan(lu[0]).any() and np.isnan(lu[1]).any()
    assert np.all((piv >= 0) & (piv < n))
    assert np.array_equal(np.sort(perm, -1), np.tile(np.arange(n), (2, 1)))
    q, r = (np.asarray(x) for x in QR(a, full_matrices=True))
    assert not np.isnan(q[0]).any() and np.isnan(q[1]).any() and np.isnan(r[1]).any()

    p = n // 2
    t = np.stack([_singular_triangle(rng, n, None)] * 2).astype(np.float32)
    b = rng.standard_normal((2, n, 3)).astype(np.float32)
    clean = np.linalg.solve(np.tril(t).astype(np.float64), b.astype(np.float64))
    t[0, p, n // 3] = np.nan                  # read: below the diagonal
    b[1, p, 1] = np.nan                       # spreads down its own column only
    nan = np.zeros(b.shape, bool)
    nan[0, p:, :] = nan[1, p:, 1] = True
    x = np.asarray(TRSM(t, b, left_side=True, lower=True))
    assert np.array_equal(np.isnan(x), nan)
    np.testing.assert_allclose(x[~nan], clean[~nan], rtol=1e-4, atol=1e-5)


def _singular_triangle(rng, m, p):
    """A well-conditioned square whose triangles have a zero pivot at p (or none)."""
    t = rng.standard_normal((m, m)) * (0.3 / np.sqrt(m)) + 3 * np.eye(m)
    if p is not None:
        t[p, p] = 0
    return t


@pytest.mark.parametrize("m", [5, 100])
def test_singular_triangular_solve_is_inf_nan(m):
    """A zero on the diagonal: the entries substitution computes before it are the
    leading (or trailing) block's solution; it and every entry after are inf or NaN.
    100 rows: the zero in the expand pass's first block (10) and second (70)."""
    rng = np.random.default_rng(112)
    ps = (1, 3) if m == 5 else (10, 70)
    t = np.stack([_singular_triangle(rng, m, p) for p in ps]).astype(np.float32)
    bl = rng.standard_normal((2, m, 3)).astype(np.float32)
    br = rng.standard_normal((2, 3, m)).astype(np.float32)
    for left, lower, trans in itertools.product([True, False], repeat=3):
        b = bl if left else br
        with np.errstate(all="ignore"):
            x = np.asarray(TRSM(t, b, left_side=left, lower=lower, transpose_a=trans))
        op_lower = lower != trans
        for i, p in enumerate(ps):
            xi = x[i] if left else x[i].T             # unknowns along the rows
            # the order of substitution: forward when op(t) x = b is lower (left) or
            # x op(t) = b is upper (right)
            first = slice(0, p) if op_lower == left else slice(p + 1, m)
            rest = slice(p, m) if op_lower == left else slice(0, p + 1)
            assert not np.isfinite(xi[rest]).any(), (left, lower, trans, p)
            tri = np.tril(t[i]) if lower else np.triu(t[i])
            op = (tri.T if trans else tri).astype(np.float64)
            if not left:
                op = op.T                              # x op = b  <=>  op^T x^T = b^T
            bi = (b[i] if left else b[i].T).astype(np.float64)
            want = np.linalg.solve(op[first, first], bi[first])
            np.testing.assert_allclose(xi[first], want, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ against JAX

@pytest.fixture
def jax_linalg():
    jax = pytest.importorskip("jax")
    import jax.lax.linalg
    return jax.lax.linalg


@pytest.mark.parametrize("n", sorted(NOT_PD_CASES))
def test_failed_cholesky_lower_triangle_matches_jax(jax_linalg, n):
    rng = np.random.default_rng(120 + n)
    a = np.stack([_wishart(rng, n)] + [_not_pd(rng, n, w) for w in NOT_PD_CASES[n]] +
                 [np.zeros((n, n))]).astype(np.float32)
    got, want = np.asarray(CHOLESKY(a)), np.asarray(jax_linalg.cholesky(a))
    assert np.array_equal(np.isnan(np.tril(got)), np.isnan(np.tril(want)))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)


def test_failed_cholesky_upper_triangle_matches_jax(jax_linalg):
    a = -np.eye(4, dtype=np.float32)
    got, want = np.asarray(CHOLESKY(a)), np.asarray(jax_linalg.cholesky(a))
    assert np.array_equal(got, want, equal_nan=True)


def test_nan_entry_matches_jax(jax_linalg):
    """A NaN entry (off the diagonal): NaN wherever JAX has NaN. Cholesky: jx NaNs
    the whole factor (JAX's potrf does not see a NaN pivot). QR: unblocked, the
    same NaN pattern and values as LAPACK's geqr2; blocked (200), the compact WY
    products spread NaN further. LU: the same pattern and values while no column
    is all NaN (5); after that the pivot is the BLAS's idamax's choice among NaNs
    (OpenBLAS's is not the first), so only NaN is common."""
    rng = np.random.default_rng(121)
    for n in (5, 20, 200):
        a = _wishart(rng, n)
        a[n // 2, n // 3] = a[n // 3, n // 2] = np.nan
        a = a.astype(np.float32)
        got, want = np.asarray(CHOLESKY(a)), np.asarray(jax_linalg.cholesky(a))
        assert np.isnan(want).any() and np.isnan(got[np.tri(n, dtype=bool)]).all()
        for g, w in zip(QR(a, full_matrices=True), jax_linalg.qr(a)):
            g, w = np.asarray(g), np.asarray(w)
            assert np.isnan(w).any() and np.all(np.isnan(g)[np.isnan(w)]), n
            if n < BASE["qr"]:
                assert np.array_equal(np.isnan(g), np.isnan(w)), n
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
        g, w = np.asarray(LU(a)[0]), np.asarray(jax_linalg.lu(a)[0])
        assert np.isnan(g).any() and np.isnan(w).any()
        if n == 5:
            assert np.array_equal(np.isnan(g), np.isnan(w)), n
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_singular_triangular_solve_matches_jax(jax_linalg):
    """Where JAX's trsm gives a finite entry jx gives the same (JAX's kernel spreads
    NaN further on the right side: jx keeps what substitution computes exactly)."""
    rng = np.random.default_rng(122)
    for m, p in ((5, 2), (100, 70)):
        t = _singular_triangle(rng, m, p).astype(np.float32)
        for left, lower, trans in itertools.product([True, False], repeat=3):
            b = rng.standard_normal((m, 3) if left else (3, m)).astype(np.float32)
            flags = dict(left_side=left, lower=lower, transpose_a=trans)
            with np.errstate(all="ignore"):
                got = np.asarray(TRSM(t, b, **flags))
            want = np.asarray(jax_linalg.triangular_solve(t, b, **flags))
            assert not np.isfinite(got).all() and not np.isfinite(want).all()
            fin = np.isfinite(want)
            assert np.isfinite(got[fin]).all(), flags
            np.testing.assert_allclose(got[fin], want[fin], rtol=1e-4, atol=1e-5)
            if left:                                  # the same kernel order as LAPACK's
                assert np.array_equal(np.isfinite(got), fin), flags


def test_empty_matches_jax(jax_linalg):
    for shape in ((0, 0), (2, 0, 0), (0, 3), (3, 0)):
        a = np.zeros(shape, np.float32)
        pairs = list(zip(LU(a), jax_linalg.lu(a)))
        for full in (True, False):
            pairs += zip(QR(a, full_matrices=full), jax_linalg.qr(a, full_matrices=full))
        if shape[-1] == shape[-2]:
            pairs.append((CHOLESKY(a), jax_linalg.cholesky(a)))
        for g, w in pairs:
            g, w = np.asarray(g), np.asarray(w)
            assert g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w), shape
