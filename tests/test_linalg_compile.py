"""Linear algebra through the whole pipeline: the expand pass (verified, and
equal to the unexpanded program), compiled gradients and vmaps of factorisations
at sizes that take the blocked path, an artifact with decompositions loaded by
the runtime, and the CUDA target's refusal (no GPU needed to see it)."""
from __future__ import annotations

import shutil
import textwrap

import numpy as np
import pytest

import jx
import jx.numpy as jnp
import jx.lax as lax
import jx.runtime as rt
from jx.passes import expand as E
from jx.passes import pipeline
from jx.verify import verify
from test_compile import jx_cli

RNG = np.random.default_rng(23)


def _spd(shape, dtype=np.float32):
    n = shape[-1]
    a = RNG.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(dtype)


def _rel(x, y) -> float:
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return float(np.max(np.abs(x - y)) / max(np.max(np.abs(y)), 1e-30))


def test_expand_rewrites_only_large_factorisations():
    def f(a, b):
        L = lax.linalg.cholesky(a)
        return lax.linalg.triangular_solve(L, b, left_side=True, lower=True), lax.linalg.lu(a)[0]
    small = jx.make_graph(f)(np.eye(8, dtype=np.float32), np.ones((8, 3), np.float32))
    assert E.expand(small) is small
    n = E.BASE["cholesky"] + 72
    big = jx.make_graph(f)(_spd((n, n)), np.ones((n, 3), np.float32))
    out = E.expand(big)
    verify(out, where="after expand")
    counts = out.op_counts()
    assert counts["dot_general"] >= 3
    for name in ("cholesky", "triangular_solve", "lu"):       # only blocks of <= BASE rows
        assert counts[name] >= 2
    from jx.interpret import eval_graph
    a, b = _spd((n, n)), RNG.standard_normal((n, 3)).astype(np.float32)
    for x, y in zip(eval_graph(out, a, b), eval_graph(big, a, b)):
        assert _rel(x, y) < 1e-4
    assert "expand" in pipeline.STAGES


def test_expand_reaches_into_control_flow():
    n = E.BASE["lu"] + 40

    def body(c, x):
        return c + jnp.linalg.slogdet(x)[1], None
    g = jx.make_graph(lambda xs: lax.scan(body, 0.0, xs)[0])(
        np.zeros((2, n, n), np.float32))
    out = E.expand(g)
    verify(out, where="after expand")
    assert out.op_counts()["lu"] > g.op_counts()["lu"]
    xs = np.stack([_spd((n, n)) for _ in range(2)])
    want = sum(np.linalg.slogdet(x.astype(np.float64))[1] for x in xs)
    assert abs(float(jx.jit(lambda xs: lax.scan(body, 0.0, xs)[0])(xs)) - want) < 1e-3 * abs(want)


@pytest.mark.x64
def test_compiled_gradients_on_the_blocked_path():
    """log det through Cholesky and a solve through LU at 150 rows (expanded), in
    float64: jx.jit(jx.grad) against the analytic gradients."""
    n = 150
    a = _spd((n, n), np.float64)
    b = RNG.standard_normal(n)

    def logdet(x):
        return 2 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(x))))
    g = np.asarray(jx.jit(jx.grad(logdet))(a))
    assert _rel(g, np.linalg.inv(a).T) < 1e-9     # d logdet / dA = A^-T (lower read + sym)

    def quad(x):
        return jnp.sum(jnp.linalg.solve(x, b))
    g2 = np.asarray(jx.jit(jx.grad(quad))(a))
    x = np.linalg.solve(a, b)
    lam = np.linalg.solve(a.T, np.ones(n))
    assert _rel(g2, -np.outer(lam, x)) < 1e-9


def test_vmap_of_compiled_solve_matches_a_loop():
    n = E.BASE["triangular_solve"] + 9
    a = np.stack([_spd((n, n)) for _ in range(3)])
    b = RNG.standard_normal((3, n)).astype(np.float32)
    got = np.asarray(jx.jit(jx.vmap(jnp.linalg.solve))(a, b))
    for i in range(3):
        assert _rel(got[i], np.linalg.solve(a[i].astype(np.float64), b[i])) < 1e-4


def test_non_finite_inputs_give_nan_not_a_crash():
    n = E.BASE["cholesky"] + 30
    a = _spd((n, n))
    bad = a.copy()
    bad[n // 2, 3] = np.nan
    L = np.asarray(jx.jit(jnp.linalg.cholesky)(bad))
    lower = np.tri(n, dtype=bool)
    assert np.isnan(L[lower]).all() and not L[~lower].any()     # as JAX
    lu = np.asarray(jx.jit(lambda x: lax.linalg.lu(x)[0])(bad))
    assert np.isnan(lu).any()
    bad[5, 7] = np.inf
    q, r = jx.jit(jnp.linalg.qr)(bad[:40, :40])
    assert np.isnan(np.asarray(r)).any()


MODEL = textwrap.dedent('''
    import jx
    import jx.numpy as jnp

    @jx.export(jx.f32[96, 96], jx.f32[96, 4])
    def fit(a, b):
        gram = a @ a.T / 96 + jnp.eye(96)
        L = jnp.linalg.cholesky(gram)
        x = jx.scipy.linalg.cho_solve((L, True), b)
        q, r = jnp.linalg.qr(a)
        return x, jnp.linalg.slogdet(gram)[1], jnp.abs(jnp.diagonal(r))
''')


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
def test_artifact_with_decompositions(tmp_path):
    (tmp_path / "fit.py").write_text(MODEL)
    r = jx_cli("compile", tmp_path / "fit.py", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    art = rt.load(next((tmp_path / "out").glob("*.so")))
    a = RNG.standard_normal((96, 96)).astype(np.float32)
    b = RNG.standard_normal((96, 4)).astype(np.float32)
    x, logdet, rdiag = art.fit(a, b)
    gram = (a.astype(np.float64) @ a.T / 96 + np.eye(96))
    assert _rel(x, np.linalg.solve(gram, b)) < 1e-4
    assert abs(float(logdet) - np.linalg.slogdet(gram)[1]) < 1e-3
    assert _rel(rdiag, np.abs(np.diag(np.linalg.qr(a.astype(np.float64))[1]))) < 1e-4


def test_cuda_target_refuses_decompositions(tmp_path):
    (tmp_path / "fit.py").write_text(MODEL)
    r = jx_cli("compile", tmp_path / "fit.py", "--target", "cuda", "-o", tmp_path / "gpu")
    assert r.returncode != 0
    assert "CUDA target has no kernel for" in r.stderr and "fit.py:" in r.stderr, r.stderr
    assert "--target cpu" in r.stderr
    assert not (tmp_path / "gpu").exists()


def test_symbolic_matrix_sizes_are_refused_clearly():
    f = jx.jit(jnp.linalg.cholesky, abstracted_axes=("n", "n"))
    with pytest.raises(Exception, match="static|symbolic|fixed"):
        f(np.eye(4, dtype=np.float32))


# --- jx.lax.linalg's helpers built on jx.numpy and jx.lax --------------------------

def test_tridiagonal_solve_matches_a_dense_solve_eager_jitted_and_differentiated():
    dl, d, du = RNG.standard_normal((3, 2, 9))
    d = d + 4
    dl[:, 0] = du[:, -1] = 0
    b = RNG.standard_normal((2, 9, 3))
    dense = np.stack([np.diag(d[i]) + np.diag(dl[i, 1:], -1) + np.diag(du[i, :-1], 1)
                      for i in range(2)])
    want = np.linalg.solve(dense, b)
    f = lax.linalg.tridiagonal_solve
    args = [x.astype(np.float32) for x in (dl, d, du, b)]
    assert _rel(f(*args), want) < 1e-5
    assert _rel(jx.jit(f)(*args), want) < 1e-5
    g = jx.grad(lambda dd: jnp.sum(f(args[0], dd, args[2], args[3])))(args[1])
    inv_t = np.linalg.inv(dense).transpose(0, 2, 1)             # d x / d d_k = -A^-1 e_k x_k
    lam = inv_t @ np.ones(9)
    want_g = -np.einsum("bk,bkr->bk", lam, np.linalg.solve(dense, b))
    assert _rel(g, want_g) < 1e-4
    with pytest.raises(Exception, match="three diagonals"):
        f(args[0][:, :3], *args[1:])


def test_householder_and_symmetric_products():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = RNG.standard_normal((7, 4))
    (h, tau), _ = scipy_linalg.qr(a, mode="raw")
    q = lax.linalg.householder_product(h.astype(np.float32), tau.astype(np.float32))
    assert _rel(q, np.linalg.qr(a)[0]) < 1e-5
    c = RNG.standard_normal((7, 7)).astype(np.float32)
    s = lax.linalg.symmetric_product(a.astype(np.float32), c, alpha=2.0, beta=0.5)
    assert _rel(s, 2 * a @ a.T + 0.5 * c) < 1e-5


def test_missing_lax_linalg_names_say_so():
    from jx.errors import NotInJx
    with pytest.raises(NotInJx, match="jax.lax.linalg.schur"):
        lax.linalg.schur
    with pytest.raises(NotInJx, match="eigh"):
        lax.linalg.eig
    with pytest.raises(AttributeError):
        lax.linalg.no_such_thing
    assert lax.linalg.cholesky_p.name == "cholesky"


# householder_panel: staged only by the expand pass (after differentiation)
TRANSFORM_COVERED = {"householder_panel"}


def test_householder_panel_batches_and_refuses_derivatives():
    from jx.core import bind
    from jx.prims import decompositions as dc
    a = RNG.standard_normal((3, 40, 8)).astype(np.float32)
    panel = jx.jit(jx.vmap(lambda x: bind(dc.householder_panel, x)))
    packed, t = panel(a)
    for i in range(3):
        want = dc._panel(a[i].astype(np.float64))
        assert _rel(packed[i], want[0]) < 1e-5 and _rel(t[i], want[1]) < 1e-5
    with pytest.raises(Exception, match="internal to the blocked QR"):
        jx.grad(lambda x: jnp.sum(bind(dc.householder_panel, x)[0]))(a[0])


def test_blocked_qr_matches_lapack_signs():
    n = E.BASE["qr"] + 60
    for shape in ((n, n), (n + 50, n), (n, n + 50), (2, n, n - 20)):
        a = RNG.standard_normal(shape).astype(np.float32)
        for full in (False, True):
            q, r = jx.jit(lambda x: lax.linalg.qr(x, full_matrices=full))(a)
            want = np.linalg.qr(a.astype(np.float64), mode="complete" if full else "reduced")
            assert _rel(q, want[0]) < 1e-4 and _rel(r, want[1]) < 1e-4, (shape, full)


# --- the primitives' references against LAPACK, eager and compiled ------------------
COVERED = {"cholesky", "triangular_solve", "lu", "qr", "householder_panel"}


@pytest.mark.parametrize("n", [3, 9, 70])
def test_references_match_lapack_and_the_compiled_kernels(n):
    sl = pytest.importorskip("scipy.linalg")
    from jx.core import bind
    from jx.prims import decompositions as dc
    a = RNG.standard_normal((n + 4, n)).astype(np.float32)
    spd = _spd((n, n))
    b = RNG.standard_normal((n, 5)).astype(np.float32)
    L = np.linalg.cholesky(spd)
    lu, piv = sl.lu_factor(a[:n])
    (h, tau), _ = sl.qr(a, mode="raw")
    cases = {
        "cholesky": (lambda x: lax.linalg.cholesky(x, symmetrize_input=False), (spd,), [L]),
        "triangular_solve": (lambda t, y: lax.linalg.triangular_solve(
            t, y, left_side=True, lower=True), (L, b), [sl.solve_triangular(L, b, lower=True)]),
        "lu": (lambda x: lax.linalg.lu(x)[:2], (a[:n],), [lu, piv]),
        "qr": (lambda x: lax.linalg.qr(x, full_matrices=False), (a,), list(np.linalg.qr(a))),
        "householder_panel": (lambda x: (bind(dc.householder_panel, x)[0],
                                         jnp.diagonal(bind(dc.householder_panel, x)[1])),
                              (a,), [h, tau]),
    }
    for name, (f, args, want) in cases.items():
        for got in (f(*args), jx.jit(f)(*args)):              # eager (reference), compiled
            got = got if isinstance(got, (tuple, list)) else [got]
            for g, w in zip(got, want):
                if np.asarray(w).dtype.kind == "i":
                    np.testing.assert_array_equal(np.asarray(g), w, err_msg=name)
                else:
                    assert _rel(g, w) < 1e-4, name
