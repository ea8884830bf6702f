"""jx.scipy.linalg: jax.scipy.linalg's names. Its functions are matrix
decompositions and solvers, which come with jx's linear-algebra issue; until
then each is a one-line error naming it (never a bare AttributeError)."""
from __future__ import annotations

from ..errors import missing_name

# jax.scipy.linalg's public names (JAX 0.10.2)
_JAX_ONLY = frozenset("""
    block_diag cdf2rdf cho_factor cho_solve cholesky circulant companion convolution_matrix
    det dft eigh eigh_tridiagonal expm expm_frechet fiedler fiedler_companion funm hadamard
    hankel helmert hessenberg hilbert inv invhilbert invpascal leslie lu lu_factor lu_solve
    pascal polar qr qr_multiply rsf2csf schur solve solve_sylvester solve_triangular sqrtm
    svd toeplitz
""".split())
_NEAREST = {"block_diag": "jx.numpy.zeros and .at[...].set per block",
            "hilbert": "1.0 / (i + j + 1) from jx.numpy.arange",
            "toeplitz": "indexing a vector with (i - j) from jx.numpy.arange"}


def __getattr__(name: str):
    raise missing_name("jx.scipy.linalg", name, _JAX_ONLY, _NEAREST,
                       "" if name in _NEAREST else
                       "not implemented yet: decompositions, solvers and special matrices "
                       "come with the linear-algebra issue")
