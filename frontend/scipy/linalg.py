"""jx.scipy.linalg: jax.scipy.linalg's solvers, decompositions and special matrices.

Built on jx.numpy.linalg and jx.lax.linalg's primitives, so everything traces,
differentiates through the primitives' rules and compiles. Decompositions and
solvers take leading batch axes (JAX's lu does not; jx's does). Arguments that
only steer SciPy's memory use (overwrite_*, check_finite, lwork, lapack_driver,
turbo, debug) are accepted and ignored, as in JAX. The names JAX has and jx does
not raise a one-line error naming them (never a bare AttributeError).
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from .. import numpy as jnp
from ..errors import missing_name
from ..lax import linalg as lax_linalg
from ..lax.control_flow import fori_loop
from ..numpy import linalg as jnp_linalg
from ..numpy._util import promote_dtypes, shape_of
from ..numpy.creation import _wrap_public
from ..numpy.linalg import _broadcast_batch, _lu_solve, _mT, _permute_rows


def _square(a, what: str):
    (a,) = promote_dtypes(a, to_float=True)
    s = shape_of(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(f"jx.scipy.linalg.{what}: expected a (batch of) square matrices, "
                         f"shape [..., n, n]; got shape {s}")
    return a


def _rhs(a, b, what: str):
    """(a, b as a batch of matrices, whether b was a vector), JAX's rule: b 1-d is one
    vector; b with one axis less than a and a's size last is a batch of vectors (with
    JAX 0.10's FutureWarning); otherwise a batch of matrices. Batch axes broadcast."""
    a, b = promote_dtypes(a, b, to_float=True)
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) < 2 or sa[-1] != sa[-2]:
        raise ValueError(f"jx.scipy.linalg.{what}: a must be a (batch of) square matrices, "
                         f"shape [..., n, n]; got shape {sa}")
    if len(sb) < 1:
        raise ValueError(f"jx.scipy.linalg.{what}: b must be at least 1-d, got shape {sb}")
    vector = len(sb) == 1
    if not vector and len(sa) == len(sb) + 1 and sa[-1] == sb[-1]:
        warnings.warn(f"jx.scipy.linalg.{what}: batched 1-d solves with b.ndim > 1 are "
                      f"deprecated (as in JAX) and will become batched 2-d solves; use "
                      f"{what}(..., b[..., None])[..., 0]", FutureWarning, stacklevel=3)
        vector = True
    if sb[-1 if vector else -2] != sa[-1]:
        raise ValueError(f"jx.scipy.linalg.{what}: a of shape {sa} needs b of shape "
                         f"[..., {sa[-1]}] or [..., {sa[-1]}, k]; got shape {sb}")
    if vector:
        b = b[..., None]
    a, b = _broadcast_batch(a, b, cores=(2, 2))
    return a, b, vector


def _unrhs(x, vector: bool):
    return x[..., 0] if vector else x


# ------------------------------------------------------------------ Cholesky

def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of a, read from its lower (or upper) triangle: L with
    a = L L^T, or U = L^T with a = U^T U (the default)."""
    a = _square(a, "cholesky")
    if lower:
        return lax_linalg.cholesky(a, symmetrize_input=False)
    return _mT(lax_linalg.cholesky(_mT(a), symmetrize_input=False))


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """(c, lower) for cho_solve."""
    return cholesky(a, lower=lower), lower


def _cho_solve(c, b, lower: bool):
    x = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower)
    return lax_linalg.triangular_solve(c, x, left_side=True, lower=lower, transpose_a=lower)


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """x with a x = b, from cho_factor's (c, lower) of a."""
    c, lower = c_and_lower
    c, b, vector = _rhs(c, b, "cho_solve")
    return _unrhs(_cho_solve(c, b, bool(lower)), vector)


# ------------------------------------------------------------------ triangular and LU

_TRANS = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """x with op(a) x = b, op(a) = a (trans 0/'N') or a^T (1/'T', 2/'C'); only a's
    lower (or upper) triangle is read, its diagonal taken as ones if unit_diagonal."""
    if isinstance(trans, (bool, np.bool_)) or trans not in _TRANS:
        raise ValueError(f"jx.scipy.linalg.solve_triangular: invalid 'trans' value {trans!r} "
                         "(use 0, 1, 2, 'N', 'T' or 'C')")
    a, b, vector = _rhs(a, b, "solve_triangular")
    x = lax_linalg.triangular_solve(a, b, left_side=True, lower=bool(lower),
                                    transpose_a=_TRANS[trans], unit_diagonal=bool(unit_diagonal))
    return _unrhs(x, vector)


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """(p, l, u) with a = p l u (p a permutation matrix in a's dtype, l unit lower
    trapezoidal, u upper trapezoidal), or (p l, u) with permute_l."""
    (a,) = promote_dtypes(a, to_float=True)
    s = shape_of(a)
    if len(s) < 2:
        raise ValueError(f"jx.scipy.linalg.lu: expected a (batch of) matrices, got shape {s}")
    m, n = s[-2:]
    k = min(m, n)
    factors, _, perm = lax_linalg.lu(a)
    l_factor = jnp.tril(factors, -1)[..., :, :k] + jnp.eye(m, k, dtype=a.dtype)
    u_factor = jnp.triu(factors)[..., :k, :]
    if permute_l:               # rows of l put back where a has them: exact, no product
        return _permute_rows(l_factor, jnp.argsort(perm, axis=-1)), u_factor
    p = (perm[..., None, :] == jnp.arange(m, dtype=perm.dtype)[:, None]).astype(a.dtype)
    return p, l_factor, u_factor


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """(lu, piv): l and u in one matrix and LAPACK's row swaps (from 0), for lu_solve."""
    (a,) = promote_dtypes(a, to_float=True)
    if len(shape_of(a)) < 2:
        raise ValueError(f"jx.scipy.linalg.lu_factor: expected a (batch of) matrices, got "
                         f"shape {shape_of(a)}")
    factors, pivots, _ = lax_linalg.lu(a)
    return factors, pivots


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
    """x with a x = b (trans 0) or a^T x = b (trans 1 or 2), from lu_factor's (lu, piv)."""
    if isinstance(trans, (bool, np.bool_)) or trans not in (0, 1, 2):
        raise ValueError(f"jx.scipy.linalg.lu_solve: 'trans' must be 0, 1 or 2, got {trans!r}")
    factors, pivots = lu_and_piv
    factors, b, vector = _rhs(factors, b, "lu_solve")
    perm = lax_linalg.lu_pivots_to_permutation(jnp.asarray(pivots), shape_of(factors)[-1])
    return _unrhs(_lu_solve(factors, perm, b, trans), vector)


# ------------------------------------------------------------------ solve, inv, det

def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """x with a x = b. assume_a 'gen', 'sym' and 'her' solve by LU (as
    jx.numpy.linalg.solve); 'pos' by the Cholesky factor of a's lower (or upper)
    triangle, where b is a vector when it has one axis less than a."""
    valid = ("gen", "sym", "her", "pos")
    if assume_a not in valid:
        raise ValueError(f"jx.scipy.linalg.solve: assume_a must be one of {valid}, got "
                         f"{assume_a!r}")
    if assume_a != "pos":
        return jnp_linalg.solve(a, b)
    a, b = promote_dtypes(a, b, to_float=True)
    sa, sb = shape_of(a), shape_of(b)
    if not (len(sa) >= 2 and len(sb) in (len(sa), len(sa) - 1)
            and sa[-1] == sa[-2] == sb[len(sa) - 2]):
        raise ValueError("jx.scipy.linalg.solve: the arguments must have shapes a=[..., m, m] "
                         f"and b=[..., m, k] or b=[..., m]; got a={sa} and b={sb}")
    vector = len(sb) == len(sa) - 1
    if vector:
        b = b[..., None]
    c = cholesky(a, lower=lower)
    c, b = _broadcast_batch(c, b, cores=(2, 2))
    return _unrhs(_cho_solve(c, b, bool(lower)), vector)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """The inverses of square matrices."""
    return jnp_linalg.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """The determinants of square matrices."""
    return jnp_linalg.det(a)


# ------------------------------------------------------------------ expm

# Pade numerator coefficients b_0 .. b_m of exp (Higham 2005), by degree
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}
# (degrees, 1-norm bounds between them, the 1-norm the top degree handles) by precision
_PADE_PLAN = {
    8: ((3, 5, 7, 9, 13), (1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1,
                           2.097847961257068e+0), 5.371920351148152),
    4: ((3, 5, 7), (4.258730016922831e-1, 1.880152677804762e+0), 3.925724783138660),
}


def _pade(degree: int, a, powers: dict, eye):
    """(U, V), the odd and even parts of the degree-m Pade numerator, so that exp(a) ~
    (V - U)^-1 (V + U). powers holds a^2, a^4, ...; degree 13 groups its terms so that
    it needs a^6 at most."""
    b = _PADE[degree]
    if degree == 13:
        a2, a4, a6 = powers[2], powers[4], powers[6]
        u = a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 \
            + b[1] * eye
        v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
            + b[0] * eye
        return a @ u, v
    u, v = b[1] * eye, b[0] * eye
    for p in range(2, degree, 2):
        u = u + b[p + 1] * powers[p]
        v = v + b[p] * powers[p]
    return a @ u, v


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential by scaling and squaring with a Pade approximant: the degree
    (3 to 13; 3 to 7 in float32) from each matrix's 1-norm, and a matrix of larger norm
    scaled by 2^-s to fit the top degree and squared s times after. A matrix that would
    need more than max_squarings squarings gives NaN. Batch axes map over matrices; the
    choices are jnp.where selections and a bounded loop, so nothing branches on values."""
    a = _square(A, "expm")
    s = shape_of(a)
    n = s[-1]
    if n == 0:
        return jnp.zeros(s, a.dtype)
    if a.dtype.itemsize not in _PADE_PLAN:
        raise TypeError(f"jx.scipy.linalg.expm: float32 or float64 matrices only, got "
                        f"{a.dtype}")
    degrees, bounds, top_norm = _PADE_PLAN[a.dtype.itemsize]
    norm1 = jnp.max(jnp.sum(jnp.abs(a), axis=-2), axis=-1)
    squarings = jnp.maximum(0, jnp.floor(jnp.log2(norm1 / top_norm)))
    a = a / jnp.exp2(squarings).astype(a.dtype)[..., None, None]
    pick = jnp.sum(norm1[..., None] >= jnp.asarray(bounds, a.dtype), axis=-1)[..., None, None]
    eye = jnp.eye(n, dtype=a.dtype)
    powers = {2: a @ a}
    for p in range(4, min(max(degrees), 9), 2):
        powers[p] = powers[p - 2] @ powers[2]
    numer = denom = None
    for i, degree in enumerate(degrees):
        u, v = _pade(degree, a, powers, eye)
        numer = v + u if numer is None else jnp.where(pick == i, v + u, numer)
        denom = v - u if denom is None else jnp.where(pick == i, v - u, denom)
    r = solve_triangular(denom, numer) if upper_triangular else jnp_linalg.solve(denom, numer)

    def square(i, r):
        return jnp.where(i < squarings[..., None, None], r @ r, r)
    r = fori_loop(0, max_squarings, square, r)
    return jnp.where(squarings[..., None, None] > max_squarings, jnp.nan, r).astype(a.dtype)


# ------------------------------------------------------------------ eigh, qr, svd

def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,
         check_finite: bool = True):
    """(w, v): ascending eigenvalues and eigenvectors (columns) of symmetric a; w alone
    with eigvals_only. Only the standard problem (b None, type 1, all eigenvalues)."""
    if b is not None:
        raise NotImplementedError(
            "jx.scipy.linalg.eigh: only b=None is implemented (as in JAX); for the "
            "generalized problem a v = w b v with b positive definite, take L = "
            "cholesky(b, lower=True), C = solve_triangular(L, solve_triangular(L, a, "
            "lower=True).T, lower=True), w, y = eigh(C) and v = solve_triangular(L, y, "
            "lower=True, trans='T')")
    if type != 1:
        raise NotImplementedError(f"jx.scipy.linalg.eigh: only type=1 is implemented, got "
                                  f"{type}")
    if eigvals is not None:
        raise NotImplementedError("jx.scipy.linalg.eigh: only eigvals=None is implemented; "
                                  "slice the eigenvalues afterwards")
    v, w = lax_linalg.eigh(_square(a, "eigh"), lower=bool(lower))
    return w if eigvals_only else (w, v)


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """(q, r) with a = q r: mode 'full' (q square), 'economic' (q with min(m, n)
    columns), or 'r' giving the 1-tuple (r,)."""
    if mode in ("full", "r"):
        full_matrices = True
    elif mode == "economic":
        full_matrices = False
    else:
        raise ValueError(f"jx.scipy.linalg.qr: unsupported mode {mode!r} (use 'full', 'r' "
                         "or 'economic')")
    if pivoting:
        raise NotImplementedError("jx.scipy.linalg.qr(pivoting=True) (column-pivoted QR) is "
                                  "not implemented; use pivoting=False, or svd for rank "
                                  "decisions")
    (a,) = promote_dtypes(a, to_float=True)
    if len(shape_of(a)) < 2:
        raise ValueError(f"jx.scipy.linalg.qr: expected a (batch of) matrices, got shape "
                         f"{shape_of(a)}")
    q, r = lax_linalg.qr(a, full_matrices=full_matrices)
    return (r,) if mode == "r" else (q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """(u, s, vh) with a = u diag(s) vh, s descending; s alone without compute_uv."""
    (a,) = promote_dtypes(a, to_float=True)
    if len(shape_of(a)) < 2:
        raise ValueError(f"jx.scipy.linalg.svd: expected a (batch of) matrices, got shape "
                         f"{shape_of(a)}")
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


# ------------------------------------------------------------------ special matrices

def block_diag(*arrs):
    """The arrays (scalars, vectors as rows, matrices) along the diagonal of one matrix."""
    if not arrs:
        arrs = (jnp.zeros((1, 0)),)
    arrs = promote_dtypes(*arrs)
    for i, x in enumerate(arrs):
        if len(shape_of(x)) > 2:
            raise ValueError(f"jx.scipy.linalg.block_diag: arguments must have at most 2 "
                             f"dimensions, got shape {shape_of(x)} at argument {i}")
    mats = [jnp.atleast_2d(x) for x in arrs]
    total = sum(shape_of(x)[1] for x in mats)
    rows, col = [], 0
    for x in mats:
        width = shape_of(x)[1]
        rows.append(jnp.pad(x, ((0, 0), (col, total - col - width))))
        col += width
    return jnp.concatenate(rows, axis=0)


def _by_index(values, index):
    """values[..., index] for a 2-d index array (a batch of vectors to a batch of matrices)."""
    return jnp.take(values, jnp.asarray(index), axis=-1)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column c and first row r (r[0] ignored; r = c
    when None); batch axes of c and r broadcast."""
    c = jnp.atleast_1d(jnp.asarray(c))
    r = c if r is None else jnp.atleast_1d(jnp.asarray(r))
    c, r = promote_dtypes(c, r)
    c, r = _broadcast_batch(c, r, cores=(1, 1))
    m, n = shape_of(c)[-1], shape_of(r)[-1]
    if m == 0 or n == 0:
        return jnp.zeros(shape_of(c)[:-1] + (m, n), c.dtype)
    # entry (i, j) is c[i - j] on and below the diagonal, r[j - i] above it
    values = jnp.concatenate([jnp.flip(c, axis=-1), r[..., 1:]], axis=-1)
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    return _by_index(values, m - 1 + j - i)


def hankel(c, r=None):
    """The Hankel matrix with first column c and last row r (r[0] ignored; zeros when
    None); batch axes of c and r broadcast."""
    c = jnp.asarray(c)
    r = jnp.zeros_like(c) if r is None else jnp.asarray(r)
    for name, x in (("c", c), ("r", r)):
        if len(shape_of(x)) == 0:
            raise ValueError(f"jx.scipy.linalg.hankel: {name} must be at least 1-d, got a "
                             "scalar")
    c, r = promote_dtypes(c, r)
    c, r = _broadcast_batch(c, r, cores=(1, 1))
    m, n = shape_of(c)[-1], shape_of(r)[-1]
    if m == 0 or n == 0:
        return jnp.zeros(shape_of(c)[:-1] + (m, n), c.dtype)
    values = jnp.concatenate([c, r[..., 1:]], axis=-1)
    return _by_index(values, np.arange(m)[:, None] + np.arange(n)[None, :])


def circulant(c):
    """The circulant matrix whose first column is c (batch axes map)."""
    c = jnp.atleast_1d(jnp.asarray(c))
    n = shape_of(c)[-1]
    return _by_index(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % n)


def hilbert(n: int):
    """The n x n Hilbert matrix 1 / (i + j + 1), in the default float dtype."""
    i = jnp.arange(n, dtype=jnp.zeros(()).dtype)
    return 1 / (i[:, None] + i[None, :] + 1)


def fiedler(a):
    """The symmetric Fiedler matrix |a_i - a_j| (batch axes map)."""
    a = jnp.atleast_1d(jnp.asarray(a))
    return jnp.abs(a[..., :, None] - a[..., None, :])


def companion(a):
    """The companion matrix of the polynomial with coefficients a (highest first): its
    first row -a[1:] / a[0], ones below the diagonal (batch axes map)."""
    (a,) = promote_dtypes(jnp.atleast_1d(jnp.asarray(a)), to_float=True)
    n = shape_of(a)[-1]
    if n < 2:
        raise ValueError(f"jx.scipy.linalg.companion: a needs at least 2 coefficients along "
                         f"its last axis, got shape {shape_of(a)}")
    first = -a[..., 1:] / a[..., :1]
    rows = np.arange(n - 1)[:, None]
    return jnp.where(rows == 0, first[..., None, :], jnp.eye(n - 1, k=-1, dtype=a.dtype))


def leslie(f, s):
    """The Leslie matrix: fecundities f in its first row, survival rates s below the
    diagonal (batch axes map)."""
    f, s = promote_dtypes(jnp.atleast_1d(jnp.asarray(f)), jnp.atleast_1d(jnp.asarray(s)))
    n = shape_of(f)[-1]
    if n < 2:
        raise ValueError(f"jx.scipy.linalg.leslie: f needs at least 2 entries along its last "
                         f"axis, got shape {shape_of(f)}")
    if shape_of(s)[-1] != n - 1:
        raise ValueError(f"jx.scipy.linalg.leslie: s must have one entry fewer than f along "
                         f"the last axis; got shapes {shape_of(f)} and {shape_of(s)}")
    f, s = _broadcast_batch(f, s, cores=(1, 1))
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    below = jnp.where(rows == cols + 1, jnp.pad(s, [(0, 0)] * (len(shape_of(s)) - 1)
                                                + [(0, 1)])[..., None, :], 0)
    return jnp.where(rows == 0, f[..., None, :], below).astype(f.dtype)


def hadamard(n: int, dtype=int):
    """The n x n Hadamard matrix (Sylvester's construction), n a power of 2."""
    n = operator.index(n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"jx.scipy.linalg.hadamard: n must be a positive power of 2, got {n}")
    h = np.ones((1, 1), np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h, dtype=dtype)


def helmert(n: int, full: bool = False):
    """The Helmert matrix of order n ((n - 1) x n; n x n with full), default float dtype."""
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"jx.scipy.linalg.helmert: n must be a positive integer, got {n}")
    h = np.zeros((n, n))
    h[0] = 1 / math.sqrt(n)
    for k in range(1, n):
        h[k, :k] = 1 / math.sqrt(k * (k + 1))
        h[k, k] = -k / math.sqrt(k * (k + 1))
    return jnp.asarray(h if full else h[1:], dtype=jnp.zeros(()).dtype)


def _pascal_lower(n: int, signed: bool) -> np.ndarray:
    """binom(i, j), times (-1)^(i - j) when signed (its inverse), as exact integers."""
    return np.array([[math.comb(i, j) * (-1) ** ((i - j) * signed) for j in range(n)]
                     for i in range(n)], dtype=np.float64).reshape(n, n)


def _pascal_kind(kind, what: str) -> str:
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"jx.scipy.linalg.{what}: kind must be 'symmetric', 'lower' or "
                         f"'upper', got {kind!r}")
    return kind


def pascal(n: int, kind: str | None = None):
    """The n x n Pascal matrix (binomial coefficients), float32 as in JAX."""
    kind, n = _pascal_kind(kind, "pascal"), operator.index(n)
    low = _pascal_lower(n, False)
    m = {"lower": low, "upper": low.T, "symmetric": low @ low.T}[kind]
    return jnp.asarray(m, dtype=np.float32)


def invpascal(n: int, kind: str | None = None):
    """The inverse of pascal(n, kind), in the default float dtype."""
    kind, n = _pascal_kind(kind, "invpascal"), operator.index(n)
    low = _pascal_lower(n, True)
    m = {"lower": low, "upper": low.T, "symmetric": low.T @ low}[kind]
    return jnp.asarray(m, dtype=jnp.zeros(()).dtype)


# ------------------------------------------------------------------ names jx lacks

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
           "det", "eigh", "expm", "fiedler", "hadamard", "hankel", "helmert", "hilbert",
           "inv", "invpascal", "leslie", "lu", "lu_factor", "lu_solve", "pascal", "qr",
           "solve", "solve_triangular", "svd", "toeplitz"]
# cho_factor returns (array, bool): the wrapper would turn the bool into an array
_wrap_public(globals(), [n for n in __all__ if n != "cho_factor"])

# jax.scipy.linalg's public names (JAX 0.10.2) that jx does not have
_JAX_NAMES = frozenset("""
    block_diag cdf2rdf cho_factor cho_solve cholesky circulant companion convolution_matrix
    det dft eigh eigh_tridiagonal expm expm_frechet fiedler fiedler_companion funm hadamard
    hankel helmert hessenberg hilbert inv invhilbert invpascal leslie lu lu_factor lu_solve
    pascal polar qr qr_multiply rsf2csf schur solve solve_sylvester solve_triangular sqrtm
    svd toeplitz
""".split())
_JAX_ONLY = _JAX_NAMES - frozenset(__all__)
_WHY = {**{n: "not implemented: it needs complex numbers, which jx does not have"
            for n in ("cdf2rdf", "dft", "rsf2csf", "sqrtm", "funm")},
        "schur": "not implemented: it needs a non-symmetric eigenvalue solver (and complex "
                 "numbers for output='complex')",
        "hessenberg": "not implemented yet: jx has no Hessenberg-reduction primitive"}
_NEAREST = {"expm_frechet": "jx.jvp(jx.scipy.linalg.expm, (A,), (E,))",
            "invhilbert": "jx.numpy.linalg.inv(hilbert(n)) (ill-conditioned beyond n ~ 10)",
            "convolution_matrix": "toeplitz of the zero-padded kernel",
            "sqrtm": "eigh for a symmetric positive semi-definite matrix: "
                     "(v * sqrt(w)) @ v.T"}


def __getattr__(name: str):
    raise missing_name("jx.scipy.linalg", name, _JAX_ONLY, _NEAREST,
                       _WHY.get(name, "not implemented yet"))
