"""jax.numpy's names that jx.numpy does not have yet, for the module __getattr__:
asking for one gives a one-line error naming it (and jx's nearest equivalent
where there is one) instead of a bare AttributeError."""
from __future__ import annotations

from ..errors import NotInJx, missing_name


# jax.numpy 0.10.2's public names not in jx.numpy
JAX_ONLY = frozenset("""
    ComplexWarning angle argpartition
    array_repr array_str bartlett bincount bitwise_count blackman cdouble
    complex128 complex64 complex_ complexfloating convolve corrcoef
    correlate cov csingle digitize
    einsum_path fft float4_e2m1fn float6_e2m3fn
    float6_e3m2fn float8_e3m4 float8_e4m3 float8_e4m3b11fnuz float8_e4m3fn
    float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz float8_e8m0fnu frexp frombuffer fromfile
    fromiter fromstring gcd get_printoptions gradient
    hamming hanning histogram histogram2d histogram_bin_edges histogramdd i0
    int1 int2 int4 interp intersect1d
    isin kaiser lcm ldexp load mask_indices
    matvec modf nanargmax nanargmin nancumprod nancumsum
    nanstd nanvar object_ packbits partition
    place poly polyadd polyder polydiv polyfit polyint polymul polysub polyval
    printoptions put put_along_axis roots
    save savez set_printoptions setdiff1d setxor1d sinc sort_complex
    spacing trapezoid
    ufunc uint1 uint2 uint4 union1d unpackbits unwrap
    vecmat
""".split())

# the nearest jx.numpy function, where one covers part of the need
NEAREST = {
    "angle": "arctan2(0, x) (real inputs)", "argpartition": "argsort",
    "partition": "sort", "nanargmax": "argmax(where(isnan(x), -inf, x))",
    "nanargmin": "argmin(where(isnan(x), inf, x))", "nancumsum": "cumsum(nan_to_num(x))",
    "nancumprod": "cumprod(where(isnan(x), 1, x))", "nanstd": "std", "nanvar": "var",
    "isin": "any(equal(x[..., None], values), -1)",
    "put": "x.at[idx].set(v)", "put_along_axis": "x.at[idx].set(v)",
    "place": "where",
    "bincount": "zeros(n).at[x].add(1)",
    "histogram": "searchsorted and zeros(n).at[i].add(1)", "digitize": "searchsorted",
    "interp": "searchsorted", "gcd": "a while_loop of remainder", "lcm": "gcd",
    "ldexp": "x * 2.0 ** e", "frexp": "log2 and floor", "modf": "trunc and subtract",
    "spacing": "nextafter(x, inf) - x", "sinc": "sin(pi * x) / (pi * x)",
    "trapezoid": "sum of (y[1:] + y[:-1]) / 2 * dx",
    "convolve": "a sum of shifted slices (convolutions come with their issue)",
    "correlate": "a sum of shifted slices", "cov": "mean and matmul",
    "corrcoef": "mean and matmul",
    "polyval": "a loop of multiply and add",
    "matvec": "matmul(a, v[..., None])[..., 0]",
    "vecmat": "matmul(v[..., None, :], a)[..., 0, :]", "intersect1d": "unique and isin",
    "union1d": "unique(concatenate(...))", "setdiff1d": "unique", "setxor1d": "unique",
    "einsum_path": "einsum", "unwrap": "diff and cumsum", "gradient": "diff",
}

_COMPLEX = ("complex", "csingle", "cdouble", "sort_complex")
_NARROW = ("float4", "float6", "float8", "int1", "int2", "int4", "uint1", "uint2", "uint4")


def missing(name: str) -> AttributeError:
    """The error for jx.numpy.<name>."""
    if name == "bfloat16":
        return NotInJx("jx.numpy.bfloat16 needs the ml_dtypes package (pip install ml_dtypes)")
    why = ""
    if name.startswith(_COMPLEX):
        why = "not available: jx has no complex dtypes yet"
    elif name.startswith(_NARROW):
        why = "not available: jx has no sub-byte or 8-bit float dtypes"
    return missing_name("jx.numpy", name, JAX_ONLY, NEAREST, why)
