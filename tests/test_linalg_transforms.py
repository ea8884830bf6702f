"""jvp, vjp and vmap of the matrix decompositions (cholesky, triangular_solve, lu,
qr, eigh, svd): the harness checks on TRANSFORM_CASES (finite differences, the
<ct, J t> == <J^T ct, t> identity, Python loops), gradients of scalar functions
against jax.grad, the rules staged into verified graphs, and the edge cases
(degenerate spectra, the unsupported full SVD, float32).

All eager: the decompositions' compiled kernels are tested elsewhere. Eigen- and
singular vectors enter the checked functions only through sign-invariant
expressions (squares, v f(w) v^T), and the random inputs are well conditioned:
SPD matrices x x^T + n I, triangles with a heavy diagonal, distinct spectra."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax.linalg as L
import jx.numpy as jnp
from transform_harness import Case, case_rng, case_tests

# float64 data and references, as in JAX's own tests with jax_enable_x64
pytestmark = pytest.mark.x64


def _T(x):
    return jnp.swapaxes(x, -1, -2)


def _cat(*xs):
    return jnp.concatenate([jnp.reshape(x, (-1,)) for x in xs])


def _spd(x):
    return jnp.matmul(x, _T(x)) + x.shape[-1] * jnp.eye(x.shape[-1])


def _heavy(a):
    """A triangle that is far from singular: diagonal entries near 4."""
    return a + 4 * jnp.eye(a.shape[-1])


def _eig_fn(v, w):
    """Sign-invariant view of an eigendecomposition: w, v**2 and tanh(A)."""
    return _cat(w, v * v, jnp.matmul(v * jnp.tanh(w)[..., None, :], _T(v)))


def _svd_fn(s, u, vt):
    return _cat(s, u * u, vt * vt, jnp.matmul(u * jnp.tanh(s)[..., None, :], vt))


def _trsm(left_side, lower, transpose_a, unit_diagonal, b_shape):
    def fn(a, b):
        return L.triangular_solve(_heavy(a), b, left_side=left_side, lower=lower,
                                  transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    return Case(fn, [(3, 3), b_shape])


def _qr(shape, full_matrices):
    return Case(lambda x: _cat(*L.qr(x, full_matrices=full_matrices)), [shape])


def _svd_parts(x, full_matrices):
    u, s, vt = L.svd(x, full_matrices=full_matrices)
    return s, u, vt


TRANSFORM_CASES = {
    "cholesky": Case(lambda x: L.cholesky(_spd(x)), [(4, 4)]),
    "cholesky/batched": Case(lambda x: L.cholesky(_spd(x)), [(2, 3, 3)]),
    "triangular_solve": _trsm(True, True, False, False, (3, 2)),
    "triangular_solve/right_upper_t": _trsm(False, False, True, False, (2, 3)),
    "triangular_solve/left_upper_t_unit": _trsm(True, False, True, True, (3, 2)),
    "triangular_solve/right_lower_unit": _trsm(False, True, False, True, (2, 3)),
    "lu": Case(lambda x: L.lu(x)[0], [(4, 4)]),
    "lu/tall": Case(lambda x: L.lu(x)[0], [(5, 3)]),
    "lu/wide": Case(lambda x: L.lu(x)[0], [(3, 5)]),
    "lu/batched": Case(lambda x: L.lu(x)[0], [(2, 3, 3)]),
    "qr": _qr((5, 3), False),
    "qr/square": _qr((4, 4), True),
    "qr/wide": _qr((3, 5), False),
    "qr/full_tall": _qr((5, 3), True),
    "eigh": Case(lambda x: _eig_fn(*L.eigh(x + _T(x))), [(4, 4)]),
    "eigh/upper": Case(lambda x: _eig_fn(*L.eigh(x + _T(x), lower=False,
                                                 symmetrize_input=False)), [(4, 4)]),
    "svd": Case(lambda x: _svd_fn(*_svd_parts(x, False)), [(4, 3)]),
    "svd/wide": Case(lambda x: _svd_fn(*_svd_parts(x, False)), [(3, 4)]),
    "svd/square_full": Case(lambda x: _svd_fn(*_svd_parts(x, True)), [(3, 3)]),
    "svd/values": Case(lambda x: L.svd(x, compute_uv=False), [(4, 3)]),
    "svd/batched": Case(lambda x: _svd_fn(*_svd_parts(x, False)), [(2, 3, 4)]),
}
_seed = case_rng
test_jvp_matches_finite_differences, test_vjp_consistent_with_jvp_and_fd, \
    test_vmap_matches_loop = case_tests(TRANSFORM_CASES)


# ---------------------------------------------------------------- scalar functions
# Each takes the array namespace and the linalg module, so that jx and JAX run the
# same code; the inputs come from _inputs.

def _logdet(np_, la, x):
    return 2 * np_.sum(np_.log(np_.diagonal(la.cholesky(x), axis1=-2, axis2=-1)))


def _cholesky_raw(np_, la, x):
    """symmetrize_input=False on a non-symmetric matrix: JAX's tangent is used as given."""
    c = np.arange(16.0).reshape(4, 4) / 10
    return np_.sum(np_.sin(la.cholesky(x, symmetrize_input=False)) * c)


def _lu_solve(np_, la, a, b):
    lu, _, perm = la.lu(a)
    y = la.triangular_solve(lu, np_.take(b, perm, axis=0), left_side=True, lower=True,
                            unit_diagonal=True)
    x = la.triangular_solve(lu, y, left_side=True, lower=False)
    return np_.sum(np_.sin(x))


def _trsm_right_t(np_, la, a, b):
    return np_.sum(np_.cos(la.triangular_solve(a, b, left_side=False, lower=True,
                                               transpose_a=True)))


def _eigh_weighted(np_, la, x):
    v, w = la.eigh(x)
    return np_.sum(w * np_.arange(4.0)) + np_.sum((v * v)[:2] * np_.arange(4.0))


def _eigh_raw(np_, la, x):
    v, w = la.eigh(x, lower=False, symmetrize_input=False)
    return np_.sum(np_.exp(w / 4)) + np_.sum((v * v)[0])


def _hessian_case(np_, la, x):
    v, w = la.eigh(x)
    u, s, vt = la.svd(x, full_matrices=False)
    return np_.sum((v * v)[0] * w) + np_.sum(np_.sin(la.qr(x)[0])) + np_.sum(s * s * u[0])


def _nuclear(np_, la, x):
    return np_.sum(la.svd(x, compute_uv=False))


def _svd_vectors(np_, la, x):
    u, s, vt = la.svd(x, full_matrices=False)
    return (np_.sum((u * u)[:2] * np_.sqrt(s)) +
            np_.sum((vt * vt)[:, :2] * np_.arange(3.0)[:, None]))


def _qr_sum(full_matrices):
    def f(np_, la, x):
        q, r = la.qr(x, full_matrices=full_matrices)
        return np_.sum(np_.sin(q)) + np_.sum(r * r * 0.5)
    return f


def _inputs(name, rng):
    spd = rng.standard_normal((4, 4))
    spd = spd @ spd.T + 4 * np.eye(4)
    sym = rng.standard_normal((4, 4))
    return {
        "logdet": [spd],
        "cholesky_raw": [spd + 0.3 * rng.standard_normal((4, 4))],
        "lu_solve": [rng.standard_normal((4, 4)), rng.standard_normal((4, 2))],
        "trsm_right_t": [np.tril(rng.standard_normal((3, 3))) + 4 * np.eye(3),
                         rng.standard_normal((2, 3))],
        "eigh_weighted": [sym + sym.T],
        "eigh_raw": [sym + sym.T],
        "nuclear": [rng.standard_normal((4, 3))],
        "svd_vectors": [rng.standard_normal((5, 3))],
        "qr_thin": [rng.standard_normal((5, 3))],
        "qr_full_tall": [rng.standard_normal((5, 3))],
        "qr_wide": [rng.standard_normal((3, 5))],
    }[name]


SCALAR = {"logdet": _logdet, "cholesky_raw": _cholesky_raw, "lu_solve": _lu_solve,
          "trsm_right_t": _trsm_right_t, "eigh_weighted": _eigh_weighted, "eigh_raw": _eigh_raw,
          "nuclear": _nuclear, "svd_vectors": _svd_vectors, "qr_thin": _qr_sum(False),
          "qr_full_tall": _qr_sum(True), "qr_wide": _qr_sum(False)}


def _jx_fn(name):
    return lambda *xs: SCALAR[name](jnp, L, *xs)


def _argnums(xs):
    return tuple(range(len(xs)))


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_grad_matches_jax(name):
    jax = pytest.importorskip("jax")
    xs = _inputs(name, _seed(name, 3))
    got = jx.grad(_jx_fn(name), argnums=_argnums(xs))(*xs)
    with jax.enable_x64(True):
        want = jax.jit(jax.grad(lambda *a: SCALAR[name](jax.numpy, jax.lax.linalg, *a),
                                argnums=_argnums(xs)))(*xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_staged_grad_verifies_and_matches_eager(name):
    """The rules traced into a graph (jx.make_graph) verify and, interpreted, give
    the eager gradient."""
    xs = _inputs(name, _seed(name, 4))
    grad = jx.grad(_jx_fn(name), argnums=_argnums(xs))
    graph = jx.make_graph(grad)(*[jx.f64[x.shape] for x in xs])
    jx.verify(graph)
    for g, e in zip(jx.eval_graph(graph, *xs), grad(*xs)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["logdet", "lu_solve", "eigh_weighted", "svd_vectors",
                                  "qr_full_tall", "qr_wide"])
def test_vmap_of_grad_matches_loop(name):
    """Batching the rules' own equations (the decompositions inside a gradient)."""
    rng = _seed(name, 5)
    batch = [_inputs(name, rng) for _ in range(3)]
    stacked = [np.stack(col) for col in zip(*batch)]
    grad = jx.grad(_jx_fn(name), argnums=_argnums(stacked))
    got = jx.vmap(grad)(*stacked)
    for k, g in enumerate(got):
        want = np.stack([grad(*xs)[k] for xs in batch])
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)


def test_jvp_of_unsymmetrised_input_is_the_transpose_of_vjp():
    """cholesky and eigh without symmetrize_input take a general tangent as given
    (JAX's rule): the vjp is still its exact transpose for non-symmetric tangents."""
    rng = _seed("unsym", 0)
    spd = rng.standard_normal((4, 4))
    spd = spd @ spd.T + 4 * np.eye(4)
    fns = [lambda x: L.cholesky(x, symmetrize_input=False),
           lambda x: _cat(*L.eigh(x, symmetrize_input=False))]
    for f in fns:
        t = rng.standard_normal((4, 4))
        out, tout = jx.jvp(f, (spd,), (t,))
        u = rng.standard_normal(np.shape(out))
        (ct,) = jx.vjp(f, spd)[1](u)
        np.testing.assert_allclose(np.sum(ct * t), np.sum(u * np.asarray(tout)), rtol=1e-10)


def test_numpy_cholesky_grad_matches_jax():
    jax = pytest.importorskip("jax")
    x = _inputs("cholesky_raw", _seed("np", 0))[0]
    try:
        got = jx.grad(lambda a: jnp.sum(jnp.sin(jnp.linalg.cholesky(a))))(x)
    except NotImplementedError:
        pytest.skip("jx.numpy.linalg.cholesky is not built on the primitive yet")
    with jax.enable_x64(True):
        want = jax.grad(lambda a: jax.numpy.sum(jax.numpy.sin(jax.numpy.linalg.cholesky(a))))(x)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


def test_hessian_matches_jax():
    """Second order: the rules' own equations are differentiated again."""
    jax = pytest.importorskip("jax")
    x = _inputs("eigh_weighted", _seed("hessian", 0))[0]
    got = jx.hessian(lambda a: _hessian_case(jnp, L, a))(x)
    with jax.enable_x64(True):
        want = jax.jit(jax.hessian(lambda a: _hessian_case(jax.numpy, jax.lax.linalg, a)))(x)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("left_side", [True, False])
def test_triangular_solve_batching_with_shared_a(left_side):
    """An unbatched (itself batched) triangle and a right-hand side batched at each
    axis: the batch folds into b's columns (rows), a is not copied."""
    rng = _seed("shared", int(left_side))
    a = np.tril(rng.standard_normal((2, 3, 3))) + 4 * np.eye(3)
    b = rng.standard_normal((2, 3, 4) if left_side else (2, 4, 3))

    def f(a, b):
        return L.triangular_solve(a, b, left_side=left_side, lower=True)
    for axis in range(4):
        bs = np.stack([b + i for i in range(5)], axis=axis)
        want = np.stack([f(a, np.take(bs, i, axis=axis)) for i in range(5)])
        np.testing.assert_allclose(jx.vmap(f, in_axes=(None, axis))(a, bs), want,
                                   rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- edge cases

def test_degenerate_eigh():
    """Repeated eigenvalues: the eigenvalues' gradient is fine, the eigenvectors' is
    NaN (F has 1/0 entries), as in JAX."""
    eye = np.eye(3)
    np.testing.assert_allclose(jx.grad(lambda x: jnp.sum(L.eigh(x)[1]))(eye), eye)
    with np.errstate(all="ignore"):
        g = jx.grad(lambda x: jnp.sum(L.eigh(x)[0] * np.arange(9.0).reshape(3, 3)))(eye)
    assert np.all(np.isnan(g))


def test_full_svd_of_non_square_has_no_derivative():
    x = np.ones((4, 3))
    for f in (jx.grad(lambda a: jnp.sum(L.svd(a)[0])),
              lambda a: jx.jvp(lambda b: L.svd(b)[1], (a,), (a,))):
        with pytest.raises(NotImplementedError, match="full_matrices=False"):
            f(x)
    # even the singular values of that decomposition (as JAX); compute_uv=False and
    # square matrices are fine
    with pytest.raises(NotImplementedError, match="4x3"):
        jx.grad(lambda a: jnp.sum(L.svd(a)[1]))(x)
    s_only = jx.grad(lambda a: jnp.sum(L.svd(a, compute_uv=False)))(x + np.eye(4, 3))
    assert np.all(np.isfinite(s_only))
    assert np.all(np.isfinite(jx.grad(lambda a: jnp.sum(L.svd(a)[0] ** 2))(np.diag([1.0, 2, 3]))))


@pytest.mark.x64(False)
@pytest.mark.parametrize("name", ["logdet", "lu_solve", "trsm_right_t", "eigh_weighted",
                                  "svd_vectors", "qr_full_tall"])
def test_float32_gradients_stay_float32(name):
    xs = [x.astype(np.float32) for x in _inputs(name, _seed(name, 6))]
    with jx.enable_x64():
        want = jx.grad(_jx_fn(name), argnums=_argnums(xs))(*[x.astype(np.float64) for x in xs])
    got = jx.grad(_jx_fn(name), argnums=_argnums(xs))(*xs)
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=2e-3, atol=2e-3)
