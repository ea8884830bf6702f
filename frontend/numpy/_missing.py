"""jax.numpy's names that jx.numpy does not have yet, for the module __getattr__:
asking for one gives a one-line error naming it (and jx's nearest equivalent
where there is one) instead of a bare AttributeError."""
from __future__ import annotations

from ..errors import NotInJx, missing_name


# jax.numpy 0.10.2's public names not in jx.numpy
JAX_ONLY = frozenset("""
    array_repr array_str einsum_path float4_e2m1fn float6_e2m3fn float6_e3m2fn
    float8_e3m4 float8_e4m3 float8_e4m3b11fnuz float8_e4m3fn float8_e4m3fnuz float8_e5m2
    float8_e5m2fnuz float8_e8m0fnu frombuffer fromfile fromiter fromstring
    get_printoptions int1 int2 int4 load mask_indices object_ place polyfit printoptions
    put put_along_axis roots save savez set_printoptions ufunc uint1 uint2
    uint4
""".split())

# the nearest jx.numpy function, where one covers part of the need
NEAREST = {
    "put": "x.at[idx].set(v)",
    "put_along_axis": "x.at[idx].set(v)", "place": "where", "einsum_path": "einsum",
}

_NARROW = ("float4", "float6", "float8", "int1", "int2", "int4", "uint1", "uint2", "uint4")


def missing(name: str) -> AttributeError:
    """The error for jx.numpy.<name>."""
    if name == "bfloat16":
        return NotInJx("jx.numpy.bfloat16 needs the ml_dtypes package (pip install ml_dtypes)")
    why = ""
    if name.startswith(_NARROW):
        why = "not available: jx has no sub-byte or 8-bit float dtypes"
    return missing_name("jx.numpy", name, JAX_ONLY, NEAREST, why)
