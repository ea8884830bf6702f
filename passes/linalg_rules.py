"""jvp, vjp and batching rules of the matrix decompositions and triangular solves.

All six primitives act on the last two axes and batch over the leading ones, so
the rules are written for stacks of matrices (matmul broadcasts, solves share
the batch) and batching is "move the batch axis to the front and bind".

Forward rules follow JAX's definitions (so jx.grad agrees with jax.grad): a
tangent of the input matrix is used as given, not symmetrised, even where the
primitive reads only one triangle (cholesky, eigh); the public wrappers
symmetrise first by default, and then the two notions coincide. (cholesky
symmetrises inside its kernel, with symmetrize_input: its rules symmetrise the
tangent and the cotangent.) The vjp rules
are the transposes of these linear maps, derived by hand (see each comment):
<ct, J t> == <J^T ct, t> holds for every tangent, symmetric or not.

Notation: A^-T = (A^T)^-1; sk(X) = tril(X, -1) - tril(X, -1)^T; "o" is the
elementwise product.
"""
from __future__ import annotations

import numpy as np

import jx.numpy as jnp
from jx.core import bind, get_aval
from jx.numpy._factorizations import symmetrize
from jx.prims import decompositions as dc

from .jvp import jvp_rules
from .vjp import vjp_rules
from .vmap import batch_rules, front_rule
from .zeros import add_any


def _T(x):
    return jnp.swapaxes(x, -1, -2)


def _mm(a, b):
    return jnp.matmul(a, b)


def _solve(a, b, left_side=False, lower=False, transpose_a=False, unit_diagonal=False):
    """op(a)^-1 b (left_side) or b op(a)^-1; a and b share their batch dims."""
    return bind(dc.triangular_solve, a, b, left_side=left_side, lower=lower,
                transpose_a=transpose_a, conjugate_a=False, unit_diagonal=unit_diagonal)[0]


def _eye(n: int, like):
    return jnp.eye(n, dtype=get_aval(like).dtype)


def _diag(x):
    """The diagonals of a stack of matrices."""
    return jnp.diagonal(x, axis1=-2, axis2=-1)


def _diag_matrix(v):
    """Stack of diagonal matrices from a stack of vectors."""
    return v[..., :, None] * _eye(v.shape[-1], v)


def _reciprocal_gaps(w):
    """F with F[i, j] = 1 / (w[j] - w[i]) off the diagonal and 0 on it (inf where
    two values coincide: the derivative of a degenerate decomposition is undefined)."""
    eye = _eye(w.shape[-1], w)
    return 1 / (eye + w[..., None, :] - w[..., :, None]) - eye


def _check_real(x, name):
    if np.dtype(get_aval(x).dtype).kind == "c":
        raise NotImplementedError(f"{name}: derivatives of complex decompositions are not "
                                  "implemented (jx's decompositions are real)")


# ------------------------------------------------------------------ cholesky
# A = L L^T:  dL = L phi(L^-1 dA L^-T), phi = lower triangle with the diagonal halved.
# Transpose:  Abar = L^-T phi(L^T Lbar) L^-1   (phi is a mask, so self-adjoint).

def _phi(x):
    return jnp.tril(x) * (1 - 0.5 * _eye(x.shape[-1], x))


def _cholesky_jvp(ps, ts, symmetrize_input=False):
    (a,), (da,) = ps, ts
    chol = bind(dc.cholesky, a, symmetrize_input=symmetrize_input)[0]
    if symmetrize_input:                 # the primitive is chol((a + a^T) / 2)
        da = symmetrize(da)
    right = _solve(chol, da, lower=True, transpose_a=True)            # dA L^-T
    inner = _solve(chol, right, left_side=True, lower=True)            # L^-1 dA L^-T
    return [chol], [_mm(chol, _phi(inner))]


def _cholesky_vjp(cts, ins, outs, symmetrize_input=False):
    (ct,), (chol,) = cts, outs
    if ct is None:
        return [None]
    p = _phi(_mm(_T(chol), ct))
    left = _solve(chol, p, left_side=True, lower=True, transpose_a=True)   # L^-T P
    abar = _solve(chol, left, lower=True)                                  # .. L^-1
    return [symmetrize(abar) if symmetrize_input else abar]


# ------------------------------------------------------------------ triangular solve
# left:  op(A) X = B  ->  dX = op(A)^-1 (dB - op(dA) X),   Bbar = op(A)^-T Xbar,
#                         Abar = mask(-Bbar X^T), transposed when transpose_a
# right: X op(A) = B  ->  dX = (dB - X op(dA)) op(A)^-1,   Bbar = Xbar op(A)^-T,
#                         Abar = mask(-X^T Bbar), transposed when transpose_a
# mask keeps the triangle the primitive reads (the diagonal too unless unit_diagonal).

def _read_triangle(x, lower, unit_diagonal):
    if lower:
        return jnp.tril(x, -1 if unit_diagonal else 0)
    return jnp.triu(x, 1 if unit_diagonal else 0)


def _trsm_jvp(ps, ts, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    (a, b), (da, db) = ps, ts
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    x = bind(dc.triangular_solve, a, b, **params)[0]
    rhs = db
    if da is not None:
        op_da = _read_triangle(da, lower, unit_diagonal)
        op_da = _T(op_da) if transpose_a else op_da
        prod = _mm(op_da, x) if left_side else _mm(x, op_da)
        rhs = -prod if rhs is None else rhs - prod
    return [x], [bind(dc.triangular_solve, a, rhs, **params)[0]]


def _trsm_vjp(cts, ins, outs, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    (ct,), (a, _), (x,) = cts, ins, outs
    if ct is None:
        return [None, None]
    ct_b = bind(dc.triangular_solve, a, ct, left_side=left_side, lower=lower,
                transpose_a=not transpose_a, conjugate_a=conjugate_a,
                unit_diagonal=unit_diagonal)[0]
    g = -(_mm(ct_b, _T(x)) if left_side else _mm(_T(x), ct_b))
    g = _T(g) if transpose_a else g
    return [_read_triangle(g, lower, unit_diagonal), ct_b]


# ------------------------------------------------------------------ lu
# P A = L U, with L (m x m, unit lower) and U (n x n, upper) padded by the identity
# where A is not square. With X = L^-1 P dA U^-1:  d(lu) = L tril(X, -1) + triu(X) U.
# Transpose: Xbar = tril(L^T C, -1) + triu(C U^T),  Abar = P^T L^-T Xbar U^-T.

def _lu_factors(lu):
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = jnp.tril(lu[..., :, :k], -1)
    up = jnp.triu(lu[..., :k, :])
    batch = [(0, 0)] * (len(lu.shape) - 2)
    if m > k:
        low = jnp.pad(low, batch + [(0, 0), (0, m - k)])
    if n > k:
        up = jnp.pad(up, batch + [(0, n - k), (0, 0)])
        up = up + jnp.diag(jnp.asarray(np.r_[np.zeros(k), np.ones(n - k)],
                                       get_aval(lu).dtype))
    return low + _eye(m, lu), up


def _permutation_matrix(perm, like):
    """P with (P x)[i] = x[perm[i]]."""
    m = perm.shape[-1]
    return (perm[..., :, None] == jnp.arange(m, dtype=perm.dtype)).astype(get_aval(like).dtype)


def _lu_jvp(ps, ts):
    (a,), (da,) = ps, ts
    lu, pivots, perm = bind(dc.lu, a)
    low, up = _lu_factors(lu)
    x = _solve(low, _mm(_permutation_matrix(perm, a), da), left_side=True, lower=True,
               unit_diagonal=True)
    x = _solve(up, x)                                        # right side, upper
    dlu = _mm(low, jnp.tril(x, -1)) + _mm(jnp.triu(x), up)
    return [lu, pivots, perm], [dlu, None, None]


def _lu_vjp(cts, ins, outs):
    ct = cts[0]
    if ct is None:
        return [None]
    lu, _, perm = outs
    low, up = _lu_factors(lu)
    xbar = jnp.tril(_mm(_T(low), ct), -1) + jnp.triu(_mm(ct, _T(up)))
    y = _solve(low, xbar, left_side=True, lower=True, transpose_a=True, unit_diagonal=True)
    y = _solve(up, y, transpose_a=True)                      # .. U^-T
    return [_mm(_T(_permutation_matrix(perm, lu)), y)]


# ------------------------------------------------------------------ qr
# Thin (m >= n, Q m x n, R n x n), with D = dA R^-1, M = Q^T D, W = sk(M):
#   dQ = Q (W - M) + D,  dR = (M - W) R.
# Transpose, with G = Q^T Qbar - Rbar R^T:
#   Mbar = Rbar R^T + tril(G - G^T, -1),  Dbar = Qbar + Q (Mbar - Q^T Qbar),
#   Abar = Dbar R^-T.
# Wide (m < n): A = [A1 A2], R = [R1 R2]; (Q, R1) is the square QR of A1 and
#   R2 = Q^T A2, so dR2 = dQ^T A2 + Q^T dA2 (transpose: Qbar += A2 R2bar^T,
#   A2bar = Q R2bar).
# Full and tall (m > n): Q = [Q1 Q2] (Q1 = Q[:, :n] is the thin factor); LAPACK's
#   Householder Q2 moves as (Q1 = [Qn; Qp] by rows, Z = Qp (Qn - I)^-1)
#   dQ2 = dQ1 Z^T - (Q1 + Q2 Z) (dQp - Z dQn)^T   (JAX's rule, arXiv:2409.13374),
#   and R's zero rows stay zero.

def _qr_thin_jvp(q, r, da):
    d = _solve(r, da)                                        # dA R^-1
    m = _mm(_T(q), d)
    low = jnp.tril(m, -1)
    w = low - _T(low)
    return _mm(q, w - m) + d, _mm(m - w, r)


def _qr_thin_vjp(q, r, qbar, rbar):
    """Abar of the thin rule from Qbar and Rbar (either may be None)."""
    qtq = None if qbar is None else _mm(_T(q), qbar)
    rrt = None if rbar is None else _mm(rbar, _T(r))
    g = -rrt if qtq is None else (qtq if rrt is None else qtq - rrt)
    mbar = add_any(rrt, jnp.tril(g - _T(g), -1))
    dbar = _mm(q, mbar) if qbar is None else qbar + _mm(q, mbar - qtq)
    return _solve(r, dbar, transpose_a=True)                 # Dbar R^-T


def _qr_tail(q, n):
    """Z = Qp (Qn - I)^-1 and W = Q1 + Q2 Z of the full, tall case."""
    q1, q2 = q[..., :, :n], q[..., :, n:]
    qn, qp = q1[..., :n, :], q1[..., n:, :]
    lu, _, perm = bind(dc.lu, qn - _eye(n, q))
    low, up = _lu_factors(lu)
    # (Qn - I)^T Z^T = Qp^T with P (Qn - I) = L U: Z^T = P^T L^-T U^-T Qp^T
    zt = _solve(up, _T(qp), left_side=True, transpose_a=True)
    zt = _solve(low, zt, left_side=True, lower=True, transpose_a=True, unit_diagonal=True)
    z = _T(_mm(_T(_permutation_matrix(perm, q)), zt))
    return z, q1 + _mm(q2, z)


def _qr_jvp(ps, ts, full_matrices):
    (a,), (da,) = ps, ts
    _check_real(a, "qr")
    q, r = bind(dc.qr, a, full_matrices=full_matrices)
    m, n = a.shape[-2:]
    if m < n:
        dq, dr1 = _qr_thin_jvp(q, r[..., :, :m], da[..., :, :m])
        dr2 = _mm(_T(dq), a[..., :, m:]) + _mm(_T(q), da[..., :, m:])
        return [q, r], [dq, jnp.concatenate([dr1, dr2], axis=-1)]
    if not full_matrices or m == n:
        dq, dr = _qr_thin_jvp(q, r, da)
        return [q, r], [dq, dr]
    dq1, dr = _qr_thin_jvp(q[..., :, :n], r[..., :n, :], da)
    z, w = _qr_tail(q, n)
    dq2 = _mm(dq1, _T(z)) - _mm(w, _T(dq1[..., n:, :] - _mm(z, dq1[..., :n, :])))
    dr = jnp.pad(dr, [(0, 0)] * (len(dr.shape) - 2) + [(0, m - n), (0, 0)])
    return [q, r], [jnp.concatenate([dq1, dq2], axis=-1), dr]


def _qr_vjp(cts, ins, outs, full_matrices):
    (qbar, rbar), (a,), (q, r) = cts, ins, outs
    if qbar is None and rbar is None:
        return [None]
    m, n = a.shape[-2:]
    if m < n:
        r2bar = None if rbar is None else rbar[..., :, m:]
        if r2bar is not None:
            qbar = add_any(qbar, _mm(a[..., :, m:], _T(r2bar)))
        abar1 = _qr_thin_vjp(q, r[..., :, :m], qbar, None if rbar is None else rbar[..., :, :m])
        abar2 = jnp.zeros_like(a[..., :, m:]) if r2bar is None else _mm(q, r2bar)
        return [jnp.concatenate([abar1, abar2], axis=-1)]
    if not full_matrices or m == n:
        return [_qr_thin_vjp(q, r, qbar, rbar)]
    q1bar = None
    if qbar is not None:
        # dQ2 = dQ1 Z^T - W E^T with E = dQp - Z dQn: with F = -Q2bar^T W,
        # Q1bar gets Q2bar Z, F on the rows p and -Z^T F on the rows n
        z, w = _qr_tail(q, n)
        q2bar = qbar[..., :, n:]
        f = -_mm(_T(q2bar), w)
        q1bar = qbar[..., :, :n] + _mm(q2bar, z) + jnp.concatenate(
            [-_mm(_T(z), f), f], axis=-2)
    return [_qr_thin_vjp(q[..., :, :n], r[..., :n, :], q1bar,
                         None if rbar is None else rbar[..., :n, :])]


# ------------------------------------------------------------------ eigh
# A = V diag(w) V^T, w distinct; with F from _reciprocal_gaps(w) and S = V^T dA V:
#   dw = diag(S),  dV = V (F o S).
# Transpose:  Abar = V (diag(wbar) + F o (V^T Vbar)) V^T.

def _eigh_jvp(ps, ts, lower, sort_eigenvalues):
    (a,), (da,) = ps, ts
    _check_real(a, "eigh")
    v, w = bind(dc.eigh, a, lower=lower, sort_eigenvalues=sort_eigenvalues)
    s = _mm(_mm(_T(v), da), v)
    return [v, w], [_mm(v, _reciprocal_gaps(w) * s), _diag(s)]


def _eigh_vjp(cts, ins, outs, lower, sort_eigenvalues):
    (vbar, wbar), (v, w) = cts, outs
    if vbar is None and wbar is None:
        return [None]
    inner = None if vbar is None else _reciprocal_gaps(w) * _mm(_T(v), vbar)
    inner = add_any(inner, None if wbar is None else _diag_matrix(wbar))
    return [_mm(_mm(v, inner), _T(v))]


# ------------------------------------------------------------------ svd
# A = U diag(s) V^T (thin, k = min(m, n)); with dS = U^T dA V and
# F[i, j] = 1 / (s[j]^2 - s[i]^2) off the diagonal (0 on it):
#   ds = diag(dS)
#   dU = U (F o (dS S + S dS^T))  [+ (I - U U^T) dA V S^-1    when m > n]
#   dV = V (F o (S dS + dS^T S))  [+ (I - V V^T) dA^T U S^-1  when n > m]
# Transpose, with J = F o (U^T Ubar) and K = F o (V^T Vbar):
#   Abar = U (diag(sbar) + (J + J^T) S + S (K + K^T)) V^T
#          [+ (I - U U^T) Ubar S^-1 V^T  when m > n]  [+ U S^-1 Vbar^T (I - V V^T)  when n > m]
# The full (non-square) U or V^T has no rule, as in JAX.

def _svd_check(a, full_matrices, compute_uv):
    _check_real(a, "svd")
    m, n = a.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            f"svd: derivatives with full_matrices=True and compute_uv=True need a square "
            f"matrix, got {m}x{n} (the extra singular vectors are not unique); use "
            "full_matrices=False (as JAX, which raises here too)")


def _svd_gaps(s):
    return _reciprocal_gaps(s * s)


def _svd_jvp(ps, ts, full_matrices, compute_uv):
    (a,), (da,) = ps, ts
    _svd_check(a, full_matrices, compute_uv)
    s, u, vt = bind(dc.svd, a, full_matrices=False, compute_uv=True)
    v = _T(vt)
    ds_mat = _mm(_mm(_T(u), da), v)
    ds = _diag(ds_mat)
    if not compute_uv:
        return [s], [ds]
    f = _svd_gaps(s)
    row, col = s[..., None, :], s[..., :, None]              # S on the right / on the left
    dss, sds = ds_mat * row, col * ds_mat
    du = _mm(u, f * (dss + _T(dss)))
    dv = _mm(v, f * (sds + _T(sds)))
    m, n = a.shape[-2:]
    if m > n:
        dav = _mm(da, v)
        du = du + (dav - _mm(u, _mm(_T(u), dav))) / row
    if n > m:
        dau = _mm(_T(da), u)
        dv = dv + (dau - _mm(v, _mm(vt, dau))) / row
    return [s, u, vt], [ds, du, _T(dv)]


def _svd_vjp(cts, ins, outs, full_matrices, compute_uv):
    (a,) = ins
    _svd_check(a, full_matrices, compute_uv)
    sbar, ubar, vtbar = (list(cts) + [None, None])[:3]
    if compute_uv:
        s, u, vt = outs
    else:
        s, u, vt = bind(dc.svd, a, full_matrices=False, compute_uv=True)
    if sbar is None and ubar is None and vtbar is None:
        return [None]
    v = _T(vt)
    row, col = s[..., None, :], s[..., :, None]
    f = _svd_gaps(s)
    inner = None if sbar is None else _diag_matrix(sbar)
    if ubar is not None:
        j = f * _mm(_T(u), ubar)
        inner = add_any(inner, (j + _T(j)) * row)
    if vtbar is not None:
        vbar = _T(vtbar)
        k = f * _mm(vt, vbar)
        inner = add_any(inner, col * (k + _T(k)))
    abar = _mm(_mm(u, inner), vt)
    m, n = a.shape[-2:]
    if m > n and ubar is not None:
        proj = ubar - _mm(u, _mm(_T(u), ubar))
        abar = abar + _mm(proj / row, vt)
    if n > m and vtbar is not None:
        proj = vtbar - _mm(_mm(vtbar, v), vt)                # Vbar^T (I - V V^T)
        abar = abar + _mm(u / row, proj)
    return [abar]


# ------------------------------------------------------------------ batching

_front_rule = front_rule


def _trsm_batch(xs, ds, axis_size, **params):
    (a, b), (da, db) = xs, ds
    if da is not None:                       # a batched: b broadcast to it if need be
        return _front_rule(dc.triangular_solve)(xs, ds, axis_size, **params)
    # a shared: fold the batch into b's right-hand sides (columns when left_side,
    # rows otherwise), so a is not copied axis_size times
    nd = len(b.shape)
    if params["left_side"]:
        b = jnp.moveaxis(b, db, -1)                          # (..., m, k, B)
        shape = b.shape
        flat = jnp.reshape(b, shape[:-2] + (shape[-2] * shape[-1],))
        out_dim = nd - 1
    else:
        b = jnp.moveaxis(b, db, -3)                          # (..., B, k, m)
        shape = b.shape
        flat = jnp.reshape(b, shape[:-3] + (shape[-3] * shape[-2], shape[-1]))
        out_dim = nd - 3
    out = bind(dc.triangular_solve, a, flat, **params)[0]
    return [jnp.reshape(out, shape)], [out_dim]


_RULES = {
    "cholesky": (_cholesky_jvp, _cholesky_vjp),
    "triangular_solve": (_trsm_jvp, _trsm_vjp),
    "lu": (_lu_jvp, _lu_vjp),
    "qr": (_qr_jvp, _qr_vjp),
    "eigh": (_eigh_jvp, _eigh_vjp),
    "svd": (_svd_jvp, _svd_vjp),
}
for _name, (_jvp, _vjp) in _RULES.items():
    jvp_rules[_name] = _jvp
    vjp_rules[_name] = _vjp
    batch_rules[_name] = _front_rule(getattr(dc, _name))
batch_rules["triangular_solve"] = _trsm_batch

# householder_panel is staged by the expand pass, after every transformation has run
def _panel_derivative(*args, **params):
    from jx.errors import JxError
    raise JxError("householder_panel is internal to the blocked QR of the expand pass, which "
                  "runs after differentiation; differentiate jx.lax.linalg.qr instead")


jvp_rules["householder_panel"] = vjp_rules["householder_panel"] = _panel_derivative
batch_rules["householder_panel"] = _front_rule(dc.householder_panel)
