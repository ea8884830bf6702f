"""jx.numpy.linalg's decompositions and solvers and jx.scipy.linalg.

Two oracles: JAX 0.10.2 for the API itself (result types, dtypes, shapes, the rules
for batches and vectors, JAX-only conventions), each group of cases compiled as one
jax.jit so that the file stays fast; and NumPy/SciPy, which compute the same values,
for the sweeps over shapes (batches, 1x1, 0x0) and options. float32 and float64 (the
conftest turns on 64-bit mode for a float64 case). Eigen- and singular vectors are
compared up to sign. Eager mode only: the compiled kernels of the decomposition
primitives are tested with the backend."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jx
import jx.numpy as jnp
import jx.scipy.linalg as jsl
from jx.array import Array
from jx.errors import NotInJx

jax = pytest.importorskip("jax")
import jax.numpy as jax_np  # noqa: E402
import jax.scipy.linalg as jax_sl  # noqa: E402
import scipy.linalg as scipy_linalg  # noqa: E402

F32, F64 = np.float32, np.float64
DTYPES = [F32, F64]
TOL = {F32: 3e-4, F64: 1e-10}
SQUARE = [(1, 1), (3, 3), (2, 4, 4), (2, 1, 5, 5), (0, 0), (2, 0, 0)]
RECT = [(4, 3), (3, 5), (2, 6, 4), (1, 1), (0, 3), (2, 3, 0)]


# ------------------------------------------------------------------ inputs

def _general(rng, shape, dtype):
    """A random matrix, made well-conditioned by a dominant diagonal when square."""
    x = rng.standard_normal(shape)
    if shape[-1] == shape[-2]:
        signs = np.sign(rng.standard_normal(shape[:-2] + (1, 1)))
        x = x + shape[-1] * np.eye(shape[-1]) * signs
    return x.astype(dtype)


def _spd(rng, shape, dtype):
    x = rng.standard_normal(shape)
    return (x @ np.swapaxes(x, -1, -2) / max(shape[-1], 1) + np.eye(shape[-1])).astype(dtype)


def _symmetric(rng, shape, dtype):
    """Symmetric with well-separated eigenvalues (eigenvectors defined up to sign)."""
    n = shape[-1]
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    w = np.arange(n) * 1.5 - n / 2 + 0.25 + rng.uniform(0, 0.3, shape[:-2] + (n,))
    return ((q * w[..., None, :]) @ np.swapaxes(q, -1, -2)).astype(dtype)


# ------------------------------------------------------------------ comparisons

def _leaves(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _close(got, want, dtype, scale: float = 1.0, same_dtype: bool = True):
    """got (jx) matches want: same structure and shapes, jx arrays, the oracle's dtypes
    (same_dtype; else `dtype` for float results), and values within tolerance."""
    got_l, want_l = _leaves(got), _leaves(want)
    assert len(got_l) == len(want_l)
    tol = TOL[np.dtype(dtype).type] * scale
    for g, w in zip(got_l, want_l):
        assert isinstance(g, Array), type(g)
        g, w = np.asarray(g), np.asarray(w)
        expected = w.dtype if same_dtype or w.dtype.kind != "f" else np.dtype(dtype)
        assert g.shape == w.shape and g.dtype == expected, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)


def _sign_fixed(u, vh=None):
    """u's columns (and vh's matching rows) with the sign that makes each column's
    largest entry positive: eigen- and singular vectors are unique up to sign."""
    u = np.asarray(u)
    if u.size == 0:
        return u if vh is None else (u, np.asarray(vh))
    idx = np.argmax(np.abs(u), axis=-2)[..., None, :]
    sign = np.sign(np.take_along_axis(u, idx, axis=-2))
    sign[sign == 0] = 1
    if vh is None:
        return u * sign
    return u * sign, np.asarray(vh) * np.swapaxes(sign, -1, -2)


def _vectors_close(u, want_u, dtype, vh=None, want_vh=None):
    """Eigen- or singular vectors (columns of u, rows of vh) equal up to their signs."""
    assert isinstance(u, Array) and np.asarray(u).dtype == np.dtype(dtype)
    assert np.shape(u) == np.shape(want_u)
    tol = TOL[np.dtype(dtype).type] * 10
    if vh is None:
        np.testing.assert_allclose(_sign_fixed(u), _sign_fixed(want_u), atol=tol)
        return
    for g, w in zip(_sign_fixed(u, vh), _sign_fixed(want_u, want_vh)):
        np.testing.assert_allclose(g, w, atol=tol)


def _compare(kind, got, want, dtype):
    if kind == "eigh":                    # (values, vectors), NumPy's order in both APIs
        _close(got[0], want[0], dtype)
        _vectors_close(got[1], want[1], dtype)
    elif kind == "svd":                   # (u, s, vh): the first min(m, n) vectors
        _close(got[1], want[1], dtype)
        k = np.shape(want[1])[-1]
        _vectors_close(got[0][..., :k], want[0][..., :k], dtype, got[2][..., :k, :],
                       want[2][..., :k, :])
        assert got[0].shape == want[0].shape and got[2].shape == want[2].shape
    else:
        _close(got, want, dtype, kind)


def _against_jax(cases, x64: bool, dtype):
    """cases: (jx function, JAX function, args, kwargs, kind); the JAX side of all of them
    compiled as one function (one compile), then each compared with jx's result. kind:
    a tolerance scale, or 'eigh'/'svd' for vectors compared up to sign."""
    with jax.enable_x64(x64), warnings.catch_warnings():
        # JAX's own solve(assume_a='pos') calls cho_solve in the form it deprecates
        warnings.simplefilter("ignore", FutureWarning)
        wants = jax.jit(lambda: [jf(*args, **kw) for _, jf, args, kw, _ in cases])()
        wants = jax.tree.map(np.asarray, wants)
    for (xf, _, args, kw, kind), want in zip(cases, wants):
        got = xf(*args, **kw)
        assert type(got).__name__ == type(want).__name__ or not hasattr(want, "_fields")
        try:
            _compare(kind, got, want, dtype)
        except AssertionError as e:
            raise AssertionError(f"{xf.__name__}{tuple(np.shape(a) for a in args)} {kw}: "
                                 f"{e}") from None


def _np(x, dtype):
    """A NumPy/SciPy oracle's results in dtype (SciPy computes some in float64)."""
    if isinstance(x, tuple):
        return tuple(_np(v, dtype) for v in x)
    x = np.asarray(x)
    return x.astype(dtype) if x.dtype.kind == "f" else x


# ------------------------------------------------------------------ jx.numpy.linalg vs JAX

@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_linalg_matches_jax(rng, dtype):
    L, J = jnp.linalg, jax_np.linalg
    g = _general(rng, (2, 4, 4), dtype)
    spd = _spd(rng, (2, 4, 4), dtype)
    sym = _symmetric(rng, (2, 5, 5), dtype)
    rect = _general(rng, (2, 6, 4), dtype)
    b_mat = rng.standard_normal((2, 4, 3)).astype(dtype)
    vec = rng.standard_normal(4).astype(dtype)
    lopsided = spd + np.triu(np.ones((4, 4), dtype), 1)      # symmetrize_input matters
    low_rank = (rect @ np.diag([1, 1, 1, 0]).astype(dtype)).astype(dtype)
    cases = [
        (L.cholesky, J.cholesky, (spd,), {}, 1),
        (L.cholesky, J.cholesky, (spd,), {"upper": True}, 1),
        (L.cholesky, J.cholesky, (lopsided,), {"symmetrize_input": False}, 1),
        (L.qr, J.qr, (rect,), {}, 1), (L.qr, J.qr, (rect,), {"mode": "complete"}, 1),
        (L.qr, J.qr, (rect,), {"mode": "r"}, 1), (L.qr, J.qr, (rect,), {"mode": "raw"}, 1),
        (L.qr, J.qr, (np.swapaxes(rect, -1, -2),), {"mode": "raw"}, 1),
        (L.qr, J.qr, (g,), {"mode": "raw"}, 1),
        (L.eigh, J.eigh, (sym,), {}, "eigh"), (L.eigh, J.eigh, (sym,), {"UPLO": "U"}, "eigh"),
        (L.eigvalsh, J.eigvalsh, (lopsided,), {"UPLO": "U", "symmetrize_input": False}, 1),
        (L.svd, J.svd, (rect,), {}, "svd"),
        (L.svd, J.svd, (rect,), {"full_matrices": False}, "svd"),
        (L.svd, J.svd, (sym,), {"hermitian": True}, "svd"),
        (L.svd, J.svd, (rect,), {"compute_uv": False}, 1),
        (L.svd, J.svd, (sym,), {"hermitian": True, "compute_uv": False}, 1),
        (L.svdvals, J.svdvals, (rect,), {}, 1),
        (L.solve, J.solve, (g, vec), {}, 10), (L.solve, J.solve, (g, b_mat), {}, 10),
        (L.solve, J.solve, (g, b_mat[0]), {}, 10), (L.inv, J.inv, (g,), {}, 10),
        (L.det, J.det, (g,), {}, 10), (L.slogdet, J.slogdet, (g,), {}, 10),
        (L.det, J.det, (g[:, :3, :3],), {}, 10), (L.slogdet, J.slogdet, (g[:, :2, :2],), {}, 10),
        (L.pinv, J.pinv, (rect,), {}, 10), (L.pinv, J.pinv, (low_rank,), {}, 10),
        (L.pinv, J.pinv, (low_rank,), {"rtol": 1e-3}, 10),
        (L.pinv, J.pinv, (sym,), {"hermitian": True}, 10),
        (L.matrix_rank, J.matrix_rank, (low_rank,), {}, 1),
        (L.matrix_rank, J.matrix_rank, (low_rank,), {"rtol": 0.5}, 1),
        (L.matrix_rank, J.matrix_rank, (sym,), {"hermitian": True, "tol": 1.0}, 1),
        (L.matrix_rank, J.matrix_rank, (vec,), {}, 1),
        (L.lstsq, J.lstsq, (rect[0], rect[1, :, 0]), {}, 10),
        (L.lstsq, J.lstsq, (low_rank[0], rect[1, :, :2]), {"rcond": 1e-3}, 100),
        (L.lstsq, J.lstsq, (rect[0].T, vec), {}, 10),
        (L.matrix_power, J.matrix_power, (g, -3), {}, 10),
        (L.tensorinv, J.tensorinv, (g[0].reshape(2, 2, 2, 2),), {"ind": 2}, 10),
        (L.tensorsolve, J.tensorsolve, (g[1].reshape(2, 2, 2, 2), vec.reshape(2, 2)), {}, 10),
        (L.tensorsolve, J.tensorsolve, (g[1].reshape(2, 2, 2, 2), vec.reshape(2, 2)),
         {"axes": (0,)}, 10),
    ]
    for p in (None, 2, -2, "fro", "nuc", np.inf, -np.inf, 1, -1):
        cases.append((L.cond, J.cond, (g,), {"p": p}, 10))
    cases.append((L.cond, J.cond, (np.zeros((3, 3), dtype),), {"p": 1}, 1))   # inf, as JAX
    cases.append((L.cond, J.cond, (np.zeros((3, 3), dtype),), {}, 1))         # 0/0: NaN
    for ord in (2, -2, "nuc"):
        cases.append((L.norm, J.norm, (rect, ord, (0, 2), True), {}, 1))
        cases.append((L.matrix_norm, J.matrix_norm, (rect,), {"ord": ord}, 1))
    _against_jax(cases, dtype == F64, dtype)


@pytest.mark.parametrize("int_dtype", [np.int32, np.int64])
def test_integers_promote_to_the_default_float(int_dtype):
    a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], int_dtype)
    L, J = jnp.linalg, jax_np.linalg
    cases = [(getattr(L, n), getattr(J, n), (a,), {}, 10)
             for n in ("inv", "det", "slogdet", "cholesky", "pinv", "eigvalsh", "svdvals",
                       "cond", "matrix_rank")]
    cases += [(L.solve, J.solve, (a, a[0]), {}, 10), (L.qr, J.qr, (a,), {}, 10),
              (L.matrix_power, J.matrix_power, (a, -1), {}, 10),
              (jsl.expm, jax_sl.expm, (a,), {}, 10), (jsl.lu, jax_sl.lu, (a,), {}, 10),
              (jsl.solve_triangular, jax_sl.solve_triangular, (a, a[0]), {}, 10)]
    x64 = int_dtype == np.int64
    _against_jax(cases, x64, F64 if x64 else F32)


def test_lstsq_numpy_resid_and_empty():
    a = np.array([[1, 0], [0, 1], [1, 1]], F32)
    for args in ((a, a[:, 0]), (a[:2], a[:2]), (np.zeros((0, 3), F32), np.zeros((0, 2), F32))):
        want = jax.tree.map(np.asarray, jax_np.linalg.lstsq(*args, numpy_resid=True))
        _close(jnp.linalg.lstsq(*args, numpy_resid=True), want, F32)


def test_qr_raw_zero_reflections():
    # columns already triangular: LAPACK's tau is 0 (no reflection); a 0 pivot's is 1
    cases = [(jnp.linalg.qr, jax_np.linalg.qr, (np.array(a, F32),), {"mode": "raw"}, 1)
             for a in ([[1., 1], [0, 1], [0, 0]], [[0., 1], [1, 0], [0, 0]], [[2., 1], [0, 0]],
                       [[0., 0, 1], [0, 0, 2]])]
    _against_jax(cases, False, F32)


def test_singular_det_slogdet():
    for n in (1, 2, 3, 4, 5):           # rank <= 1: closed forms and LU (a zero pivot)
        a = np.ones((n, n), F32) * (n > 1)
        sign, logdet = jnp.linalg.slogdet(a)
        assert float(sign) == 0 and float(logdet) == -np.inf
        assert float(jnp.linalg.det(a)) == 0
    swap = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, -2]], F32)
    assert [float(v) for v in jnp.linalg.slogdet(swap)] == [1.0, pytest.approx(np.log(2))]
    assert float(jnp.linalg.det(swap)) == pytest.approx(2.0)


# ------------------------------------------------------------------ sweeps vs NumPy

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE)
def test_square_sweep(rng, dtype, shape):
    """cholesky, eigh, inv, det, slogdet, solve over batches, 1x1 and 0x0."""
    L = jnp.linalg
    spd = _spd(rng, shape, dtype)
    low = _np(np.linalg.cholesky(spd), dtype)
    _close(L.cholesky(spd), low, dtype)
    _close(L.cholesky(spd, upper=True), np.swapaxes(low, -1, -2), dtype)
    sym = _symmetric(rng, shape, dtype)
    w, v = _np(tuple(np.linalg.eigh(sym)), dtype)
    got = L.eigh(sym)
    _close(got.eigenvalues, w, dtype)
    _vectors_close(got.eigenvectors, v, dtype)
    _close(L.eigvalsh(sym), w, dtype)
    g = _general(rng, shape, dtype)
    _close(L.inv(g), _np(np.linalg.inv(g), dtype), dtype, 10)
    _close(L.det(g), _np(np.linalg.det(g), dtype), dtype, 10)
    _close(tuple(L.slogdet(g)), _np(tuple(np.linalg.slogdet(g)), dtype), dtype, 10)
    n = shape[-1]
    for b_shape in ((n,), shape[:-1] + (2,), (3,) + shape[:-1] + (1,)):
        b = rng.standard_normal(b_shape).astype(dtype)
        _close(L.solve(g, b), _np(np.linalg.solve(g, b), dtype), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", RECT)
def test_rectangular_sweep(rng, dtype, shape):
    """qr (every mode), svd, pinv and the singular-value norms."""
    L = jnp.linalg
    a = _general(rng, shape, dtype)
    for mode in ("reduced", "complete", "r", "raw"):
        want = np.linalg.qr(a, mode=mode)
        want = _np(tuple(want) if mode != "r" else want, dtype)
        _close(L.qr(a, mode=mode), want, dtype, 10)
    for full in (False, True):
        got = L.svd(a, full_matrices=full)
        want = _np(tuple(np.linalg.svd(a, full_matrices=full)), dtype)
        _compare("svd", tuple(got), tuple(want), dtype)
        m = shape[-2]
        eye = np.broadcast_to(np.eye(m), shape[:-2] + (m, m))
        if full:                   # the columns past min(m, n) are any orthonormal basis
            u = np.asarray(got.U)
            np.testing.assert_allclose(u @ np.swapaxes(u, -1, -2), eye, atol=TOL[dtype] * 10)
    _close(L.svdvals(a), _np(np.linalg.svd(a, compute_uv=False), dtype), dtype)
    rtol = 10 * max(shape[-2:]) * np.finfo(dtype).eps
    _close(L.pinv(a), _np(np.linalg.pinv(a, rtol=rtol), dtype), dtype, 10)
    if 0 not in shape:
        for ord in (2, -2, "nuc"):
            _close(L.matrix_norm(a, ord=ord), _np(np.linalg.matrix_norm(a, ord=ord), dtype),
                   dtype)
            _close(L.norm(a, ord, (-1, -2), True),
                   _np(np.linalg.norm(a, ord, (-1, -2), True), dtype), dtype)


# ------------------------------------------------------------------ errors, types, tracing

def test_bad_input_errors():
    la = jnp.linalg
    rect = np.ones((3, 2), F32)
    for fn in (la.inv, la.det, la.cholesky, la.slogdet, la.eigh, la.eigvalsh):
        with pytest.raises(ValueError, match=r"square matrix, shape \[\.\.\., n, n\]; got "
                                             r"shape \(3, 2\)"):
            fn(rect)
    with pytest.raises(ValueError, match="square"):
        la.inv(np.ones(3))
    eye = np.eye(3, dtype=F32)
    with pytest.raises(ValueError, match=r"needs b of shape \(3,\) or \[\.\.\., 3, k\]"):
        la.solve(eye, np.ones(4))
    with pytest.raises(ValueError, match=r"needs b of shape"):
        la.solve(eye, np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"solve\(a, b\[\.\.\., None\]\)"):
        la.solve(np.stack([eye, eye]), np.ones((2, 3)))
    with pytest.raises(ValueError, match="at least 2-d"):
        la.solve(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        la.solve(np.stack([eye, eye]), np.ones((3, 3, 1)))
    with pytest.raises(ValueError, match="unsupported mode 'foo'"):
        la.qr(rect, mode="foo")
    with pytest.raises(ValueError, match="UPLO"):
        la.eigh(eye, "X")
    with pytest.raises(ValueError, match="slogdet: unknown method"):
        la.slogdet(eye, method="svd")
    with pytest.raises(TypeError, match="a must be 2-d"):
        la.lstsq(np.ones((2, 3, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="leading axes"):
        la.lstsq(np.ones((3, 3)), np.ones(4))
    with pytest.raises(ValueError, match="must not be empty"):
        la.cond(np.ones((0, 0)))
    with pytest.raises(ValueError, match="needs square"):
        la.cond(rect, "fro")
    with pytest.raises(ValueError, match="only one of rtol and rcond"):
        la.pinv(rect, rtol=0.1, rcond=0.1)
    with pytest.raises(ValueError, match="only one of tol and rtol"):
        la.matrix_rank(rect, rtol=1.0, tol=1.0)
    with pytest.raises(ValueError, match="ind must be a positive"):
        la.tensorinv(np.ones((2, 2)), 0)
    with pytest.raises(ValueError, match="first 1 axes"):
        la.tensorinv(np.ones((2, 3, 2)), 1)
    with pytest.raises(ValueError, match="leading shape"):
        la.tensorsolve(np.ones((6, 2, 3)), np.ones(4))
    for name in ("eig", "eigvals"):
        with pytest.raises(NotImplementedError, match="complex"):
            getattr(la, name)(eye)


def test_results_are_jx_arrays_for_numpy_inputs():
    """Every result is a jx array (NamedTuples kept), also where nothing is computed."""
    outs = [jnp.linalg.cholesky(np.zeros((0, 0))), jnp.linalg.eigh(np.zeros((0, 0))),
            jnp.linalg.qr(np.zeros((0, 2))), jnp.linalg.pinv(np.zeros((2, 0))),
            jnp.linalg.svd(np.eye(2)), jnp.linalg.slogdet(np.eye(2)),
            jsl.lu(np.zeros((0, 0))), jsl.expm(np.zeros((0, 0))), jsl.cholesky(np.eye(1))]
    assert [type(o).__name__ for o in outs[1:3]] == ["EighResult", "QRResult"]
    assert outs[4].Vh is outs[4][2] and outs[5].sign is outs[5][0]
    for out in outs:
        for leaf in _leaves(out):
            assert isinstance(leaf, Array), type(leaf)


def test_traceable():
    """Everything stages without concrete values (no Python branching on arrays)."""
    a = np.eye(4, dtype=F32)[None].repeat(2, 0) * 3
    b = np.ones((2, 4, 3), F32)
    fns = [lambda x: jnp.linalg.qr(x, mode="raw"), lambda x: jnp.linalg.solve(x, b),
           jnp.linalg.slogdet, jnp.linalg.det, jnp.linalg.pinv, jnp.linalg.cond,
           lambda x: jnp.linalg.svd(x, hermitian=True), lambda x: jnp.linalg.lstsq(x[0], b[0]),
           lambda x: jnp.linalg.norm(x, "nuc", (0, 2)), lambda x: jnp.linalg.matrix_rank(x),
           jsl.expm, lambda x: jsl.lu_solve(jsl.lu_factor(x), b, trans=1), jsl.lu,
           lambda x: jsl.solve(x, b, assume_a="pos"), lambda x: jsl.toeplitz(x[0, 0], x[1, 1])]
    for fn in fns:
        jx.make_jaxpr(fn)(a)


# ------------------------------------------------------------------ jx.scipy.linalg

@pytest.mark.parametrize("dtype", DTYPES)
def test_scipy_linalg_matches_jax(rng, dtype):
    S, J = jsl, jax_sl
    spd = _spd(rng, (2, 4, 4), dtype)
    g = _general(rng, (2, 4, 4), dtype)
    sym = _symmetric(rng, (2, 4, 4), dtype)
    rect = _general(rng, (5, 3), dtype)
    b_mat = rng.standard_normal((2, 4, 3)).astype(dtype)
    vec = rng.standard_normal(4).astype(dtype)
    lower_only = np.where(np.tril(np.ones((4, 4), bool)), spd, spd - 3).astype(dtype)
    upper_only = np.where(np.triu(np.ones((4, 4), bool)), spd, spd - 3).astype(dtype)
    factors = tuple(np.asarray(f) for f in jsl.lu_factor(g))
    chol = np.asarray(jsl.cholesky(spd, lower=True))
    cases = [
        (S.cholesky, J.cholesky, (upper_only,), {}, 1),
        (S.cholesky, J.cholesky, (lower_only,), {"lower": True}, 1),
        (lambda c, b: S.cho_solve((c, True), b), lambda c, b: J.cho_solve((c, True), b),
         (chol, b_mat), {}, 10),
        (lambda c, b: S.cho_solve((c, False), b), lambda c, b: J.cho_solve((c, False), b),
         (np.swapaxes(chol, -1, -2), vec), {}, 10),
        (S.solve_triangular, J.solve_triangular, (g, vec), {"trans": "T"}, 10),
        (S.solve_triangular, J.solve_triangular, (g, b_mat[0]),
         {"trans": 1, "lower": True, "unit_diagonal": True}, 10),
        (S.lu, J.lu, (g[0],), {}, 1), (S.lu, J.lu, (rect,), {}, 1),
        (S.lu, J.lu, (rect.T,), {"permute_l": True}, 1), (S.lu_factor, J.lu_factor, (g,), {}, 1),
        (lambda f, b: S.lu_solve(f, b, trans=1), lambda f, b: J.lu_solve(f, b, trans=1),
         (factors, b_mat), {}, 10),
        (S.lu_solve, J.lu_solve, (factors, vec), {}, 10),
        (S.inv, J.inv, (g,), {}, 10), (S.det, J.det, (g,), {}, 10),
        (S.eigh, J.eigh, (sym,), {"lower": False}, "eigh"),
        (S.eigh, J.eigh, (sym,), {"eigvals_only": True}, 1),
        (S.qr, J.qr, (rect,), {}, 1), (S.qr, J.qr, (rect,), {"mode": "economic"}, 1),
        (S.qr, J.qr, (rect,), {"mode": "r"}, 1),
        (S.svd, J.svd, (rect,), {"full_matrices": False}, "svd"),
        (S.svd, J.svd, (rect,), {"compute_uv": False}, 1),
        (S.expm, J.expm, (g / 2,), {}, 100), (S.expm, J.expm, (np.triu(g[0]) / 4,),
                                              {"upper_triangular": True}, 100),
    ]
    for assume_a in ("gen", "sym", "her", "pos"):
        for b in (b_mat, b_mat[0] if assume_a != "pos" else b_mat[..., 0]):
            cases.append((S.solve, J.solve, (spd, b), {"assume_a": assume_a}, 10))
    cases.append((S.solve, J.solve, (spd, b_mat), {"assume_a": "pos", "lower": True}, 10))
    _against_jax(cases, dtype == F64, dtype)


def test_scipy_special_matrices_match_jax(rng):
    c, r = rng.standard_normal((2, 3)).astype(F32), rng.standard_normal(4).astype(F32)
    S, J = jsl, jax_sl
    arg_sets = {
        "block_diag": [(np.ones((2, 3), F32), 5, np.ones(2, F32), np.ones((1, 0), np.int32)),
                       (), (np.arange(4).reshape(2, 2),)],
        "toeplitz": [(c, r), (c[0],), (np.arange(3), np.arange(5)), (np.zeros(0, F32),)],
        "hankel": [(c, r), (np.arange(4),), (c[0], r[:1])],
        "circulant": [(c,), (np.arange(4),)], "fiedler": [(c,)],
        "companion": [(np.array([2., 3, 4, 5], F32),), (c + 3,)],
        "leslie": [(np.array([1., 2, 3], F32), np.array([.5, .25], F32))],
    }
    cases = [(getattr(S, name), getattr(J, name), args, {}, 10)
             for name, sets in arg_sets.items() for args in sets]
    _against_jax(cases, False, F32)
    # the ones taking a static size: JAX compiles each alone, so compare values with
    # SciPy and dtypes with JAX's documented ones
    for got, want, dt in [(S.hilbert(5), scipy_linalg.hilbert(5), F32),
                          (S.hadamard(8), scipy_linalg.hadamard(8), np.int32),
                          (S.hadamard(4, F32), scipy_linalg.hadamard(4), F32),
                          (S.helmert(5), scipy_linalg.helmert(5), F32),
                          (S.helmert(4, True), scipy_linalg.helmert(4, True), F32),
                          (S.pascal(5), scipy_linalg.pascal(5), F32),
                          (S.pascal(4, "lower"), scipy_linalg.pascal(4, "lower"), F32),
                          (S.pascal(4, "upper"), scipy_linalg.pascal(4, "upper"), F32),
                          (S.invpascal(5), scipy_linalg.invpascal(5), F32),
                          (S.invpascal(4, "lower"), scipy_linalg.invpascal(4, "lower"), F32),
                          (S.invpascal(4, "upper"), scipy_linalg.invpascal(4, "upper"), F32)]:
        _close(got, np.asarray(want).astype(dt), F32)
    with jx.enable_x64():                          # the default float follows the mode
        assert S.hilbert(3).dtype == F64 and S.helmert(3).dtype == F64
        assert S.pascal(3).dtype == F32            # float32 in both modes, as JAX


@pytest.mark.parametrize("dtype", DTYPES)
def test_scipy_solvers_sweep(rng, dtype):
    """The triangular, Cholesky and LU solvers over every option, against SciPy."""
    a = _general(rng, (2, 4, 4), dtype)
    bs = [rng.standard_normal(s).astype(dtype) for s in ((4,), (4, 2), (2, 4, 3), (3, 2, 4, 1))]
    for trans in (0, 1, 2, "N", "T", "C"):
        for lower in (False, True):
            for unit in (False, True):
                for b in bs:
                    kw = dict(trans=trans, lower=lower, unit_diagonal=unit)
                    want = scipy_linalg.solve_triangular(a[..., :, :], b if b.ndim > 1
                                                         else b[:, None], **kw)
                    want = want[..., 0] if b.ndim == 1 else want
                    _close(jsl.solve_triangular(a, b, **kw), _np(want, dtype), dtype, 10)
    spd = _spd(rng, (2, 4, 4), dtype)
    for lower in (False, True):
        c = jsl.cho_factor(spd, lower=lower)
        assert c[1] is lower and isinstance(c[0], Array)
        want_c = scipy_linalg.cholesky(spd, lower=lower)
        _close(c[0], _np(want_c, dtype), dtype)
        for b in bs[1:]:
            _close(jsl.cho_solve(c, b), _np(np.linalg.solve(spd, b), dtype), dtype, 10)
        _close(jsl.solve(spd, bs[2], assume_a="pos", lower=lower),
               _np(np.linalg.solve(spd, bs[2]), dtype), dtype, 10)
    factors = jsl.lu_factor(a)
    for trans in (0, 1, 2):
        op = a if trans == 0 else np.swapaxes(a, -1, -2)
        for b in bs:
            want = np.linalg.solve(op, b)
            _close(jsl.lu_solve(factors, b, trans=trans), _np(want, dtype), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (4, 4), (1, 1), (0, 0), (3, 2, 2)])
def test_scipy_lu_sweep(rng, dtype, shape):
    a = _general(rng, shape, dtype)
    p, l, u = jsl.lu(a)
    _close((p, l, u), _np(scipy_linalg.lu(a), dtype), dtype)
    pl, u2 = jsl.lu(a, permute_l=True)
    _close((pl, u2), _np(scipy_linalg.lu(a, permute_l=True), dtype), dtype)
    lu, piv = jsl.lu_factor(a)
    assert piv.dtype == np.int32 and lu.shape == shape


@pytest.mark.parametrize("dtype", DTYPES)
def test_expm_sweep(rng, dtype):
    """Every Pade degree and 0 to 4 squarings (1-norms from 0 to ~40), against SciPy."""
    for scale in (0.0, 1e-3, 0.05, 0.3, 1.0, 2.5, 10.0, 40.0):
        a = (rng.standard_normal((3, 5, 5)) * scale / 5).astype(dtype)
        want = scipy_linalg.expm(a)
        rel = max(1.0, float(np.abs(want).max()))       # errors scale with the result
        _close(jsl.expm(a) / rel, _np(want, dtype) / rel, dtype, 30)
        t = np.triu(a)
        _close(jsl.expm(t, upper_triangular=True) / rel,
               _np(scipy_linalg.expm(t), dtype) / rel, dtype, 30)


def test_expm_edges():
    _close(jsl.expm(np.zeros((0, 0), F32)), np.zeros((0, 0), F32), F32)
    _close(jsl.expm(np.ones((1, 1), F32)), np.full((1, 1), np.e, F32), F32)
    # 1-norm 30: floor(log2(30 / 3.93)) = 2 squarings in float32, so the scaled norm (7.5)
    # is past degree 7's bound, as in JAX (3% off exp(30)); max_squarings=1 gives NaN
    big = np.array([[30.0, 0], [0, 1.0]], F32)
    _against_jax([(jsl.expm, jax_sl.expm, (big,), {"max_squarings": m}, 30) for m in (1, 16)],
                 False, F32)
    with pytest.raises(ValueError, match="square"):
        jsl.expm(np.ones((2, 3)))


def test_scipy_errors_and_unsupported(rng):
    eye = np.eye(3, dtype=F32)
    with pytest.raises(NotImplementedError, match="only b=None"):
        jsl.eigh(eye, eye)
    with pytest.raises(NotImplementedError, match="pivoting"):
        jsl.qr(eye, pivoting=True)
    with pytest.raises(ValueError, match="unsupported mode"):
        jsl.qr(eye, mode="reduced")
    with pytest.raises(ValueError, match="invalid 'trans' value 5"):
        jsl.solve_triangular(eye, np.ones(3), trans=5)
    with pytest.raises(ValueError, match="'trans' must be 0, 1 or 2"):
        jsl.lu_solve(jsl.lu_factor(eye), np.ones(3), trans="T")
    with pytest.raises(ValueError, match="assume_a must be one of"):
        jsl.solve(eye, np.ones(3), assume_a="tri")
    with pytest.raises(ValueError, match=r"needs b of shape \[\.\.\., 3\]"):
        jsl.solve_triangular(eye, np.ones(4))
    with pytest.raises(ValueError, match=r"a=\[\.\.\., m, m\]"):
        jsl.solve(eye, np.ones(4), assume_a="pos")
    with pytest.raises(ValueError, match="square"):
        jsl.cholesky(np.ones((3, 2)))
    with pytest.raises(ValueError, match="at most 2 dimensions"):
        jsl.block_diag(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="power of 2"):
        jsl.hadamard(6)
    with pytest.raises(NotInJx, match=r"jx.scipy.linalg.schur \(jax.scipy.linalg.schur\)"):
        jsl.schur(eye)
    # a batch of vectors b (one axis less than a): JAX 0.10's FutureWarning, same values
    a = _general(rng, (2, 3, 3), F32)
    b = rng.standard_normal((2, 3)).astype(F32)
    for fn, first in ((jsl.solve_triangular, a), (jsl.lu_solve, jsl.lu_factor(a)),
                      (jsl.cho_solve, (jsl.cholesky(_spd(rng, (2, 3, 3), F32)), False))):
        with pytest.warns(FutureWarning, match="batched 1-d solves"):
            got = fn(first, b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            np.testing.assert_allclose(got, fn(first, b[..., None])[..., 0], rtol=1e-6)
