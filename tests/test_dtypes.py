"""dtypes: the promotion table (JAX's lattice, with weak Python scalars and
explicit 64-bit types kept), its algebra, and the supported-dtype checks."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import dtypes

b1, u8, u32, u64 = (np.dtype(t) for t in ("bool", "uint8", "uint32", "uint64"))
i8, i16, i32, i64 = (np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
f16, f32, f64 = (np.dtype(t) for t in ("float16", "float32", "float64"))
c64, c128 = np.dtype(np.complex64), np.dtype(np.complex128)
bf16 = dtypes.bfloat16

# Strong (array) dtypes: order-free pairs and what they promote to.
STRONG = [
    (b1, b1, b1), (b1, u8, u8), (b1, i32, i32), (b1, f16, f16),
    (u8, u32, u32), (u8, i8, i16), (u8, i32, i32), (u32, i64, i64),
    (u32, i32, i32), (u32, i8, i32),     # the lattice's i64, narrowed as JAX's 32-bit mode does
    (u32, u64, u64), (i8, i32, i32), (i16, i32, i32), (i32, i64, i64),
    (i32, f16, f16), (i64, f16, f16), (i64, f32, f32), (u64, f32, f32), (i8, f64, f64),
    (i32, f32, f32), (f16, f32, f32), (f16, f64, f64), (f32, f64, f64),
    (f32, c64, c64), (f64, c64, c128), (f16, c64, c64), (i32, c64, c64), (c64, c128, c128),
    (b1, c64, c64), (u64, c64, c64), (i64, c128, c128),
]
if bf16 is not None:
    STRONG += [(bf16, f16, f32), (bf16, i32, bf16), (bf16, f64, f64)]


@pytest.mark.parametrize("a,b,want", STRONG, ids=[f"{a}+{b}" for a, b, _ in STRONG])
def test_strong_pairs(a, b, want):
    assert dtypes.result_type((a, False), (b, False)) == (want, False)
    assert dtypes.result_type((b, False), (a, False)) == (want, False)


# A strong array meeting a weak Python scalar (dtype of the scalar as jx types it).
WEAK = [
    (f32, (f32, True), (f32, False)),      # f32 * 2.0 -> f32
    (f16, (f32, True), (f16, False)),
    (f64, (f32, True), (f64, False)),
    (i32, (f32, True), (f32, True)),       # i32 * 2.0 -> f32, weak as in JAX
    (i64, (f32, True), (f32, True)),       # the default float, not f64
    (u8, (f32, True), (f32, True)),
    (b1, (f32, True), (f32, True)),
    (i32, (i32, True), (i32, False)),
    (i8, (i32, True), (i8, False)),        # the scalar does not widen the array
    (u8, (i32, True), (u8, False)),
    (u32, (i64, True), (u32, False)),
    (i64, (i32, True), (i64, False)),
    (f16, (i32, True), (f16, False)),      # weak int * f16 -> f16
    (b1, (i32, True), (i32, True)),        # bool + int -> int
    (b1, (i64, True), (i64, True)),        # a Python int beyond int32
]


@pytest.mark.parametrize("arr,scalar,want", WEAK, ids=[f"{a}+{s}" for a, s, _ in WEAK])
def test_array_with_weak_scalar(arr, scalar, want):
    assert dtypes.result_type((arr, False), scalar) == want
    assert dtypes.result_type(scalar, (arr, False)) == want


def test_only_weak_scalars():
    assert dtypes.result_type((i32, True), (f32, True)) == (f32, True)
    assert dtypes.result_type((i32, True), (i32, True)) == (i32, True)
    assert dtypes.result_type((i32, True), (i64, True)) == (i64, True)
    assert dtypes.result_type((f32, True),) == (f32, True)
    assert dtypes.result_type((b1, False), (b1, False)) == (b1, False)


def test_uint64_with_signed_ints_gives_a_weak_f64():
    assert dtypes.result_type((u64, False), (i64, False)) == (f64, True)
    assert dtypes.result_type((u64, False), (i8, False)) == (f64, True)
    # weak, so a narrower float array still decides, in either grouping
    assert dtypes.result_type((u64, False), (i64, False), (f16, False)) == (f16, False)
    inner = dtypes.result_type((u64, False), (i64, False))
    assert dtypes.result_type(inner, (f16, False)) == (f16, False)


ALL = sorted(dtypes.SUPPORTED, key=str)
NODES = [(d, False) for d in ALL] + [(i32, True), (i64, True), (f32, True), (f16, True)]


def test_32_bit_operands_promote_as_in_jax():
    """Where no operand is 64-bit, every pair promotes as JAX's default mode does."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    kinds = [b1, u8, u32, i8, i16, i32, f16, f32] + ([bf16] if bf16 is not None else [])
    for a, b in itertools.product(kinds, repeat=2):
        want = jjnp.result_type(jjnp.zeros(1, a), jjnp.zeros(1, b))
        assert dtypes.result_type((a, False), (b, False))[0] == want, (a, b)
        got = jx.jit(lambda x, y: x + y if a != b1 or b != b1 else x | y)(
            np.zeros(2, a), np.zeros(2, b))
        assert got.dtype == want, (a, b)


def test_promotion_is_commutative_and_idempotent():
    for a, b in itertools.product(NODES, repeat=2):
        assert dtypes.result_type(a, b) == dtypes.result_type(b, a), (a, b)
    for a in NODES:
        assert dtypes.result_type(a, a) == dtypes.result_type(a), a


def test_promotion_is_associative():
    """Folding pairwise equals promoting all at once, in any order. The lattice makes
    this hold; the one documented exception is uint64 + signed int + a Python float."""
    def corner(t):
        kinds = {(d.kind, w) for d, w in t}
        return ("u", False) in kinds and u64 in {d for d, _ in t} and ("i", False) in kinds \
            and any(w and d.kind == "f" for d, w in t)
    for t in itertools.product(NODES, repeat=3):
        if corner(t):
            continue
        whole = dtypes.result_type(*t)
        assert dtypes.result_type(dtypes.result_type(t[0], t[1]), t[2]) == whole, t
        assert dtypes.result_type(t[0], dtypes.result_type(t[1], t[2])) == whole, t


def test_result_type_rejects_unsupported_and_empty():
    with pytest.raises(dtypes.DTypeError, match="not supported"):
        dtypes.result_type((np.dtype("U3"), False), (f32, False))
    with pytest.raises(dtypes.DTypeError):
        dtypes.result_type()


@pytest.mark.parametrize("bad", [np.complex256 if hasattr(np, "complex256") else "V8",
                                 object, "U3", "datetime64[s]",
                                 np.float128 if hasattr(np, "float128") else "V4"])
def test_check_supported_rejects(bad):
    with pytest.raises(dtypes.DTypeError) as info:
        dtypes.check_supported(bad)
    msg = str(info.value)
    assert "not supported by jx" in msg and "float32" in msg    # says what to use instead
    assert isinstance(info.value, jx.ShapeError) and isinstance(info.value, jx.JxError)
    assert isinstance(info.value, TypeError)


def test_check_supported_accepts_and_canonicalizes():
    for d in dtypes.SUPPORTED:
        assert dtypes.check_supported(d) == d
        assert dtypes.check_supported(str(d)) == d
    assert dtypes.canonicalize(float) == f32
    assert dtypes.canonicalize(int) == i32
    assert dtypes.canonicalize(bool) == b1
    with pytest.warns(UserWarning, match="float64 .* truncated to dtype float32"):
        assert dtypes.canonicalize(np.float64) == f32          # x64 off: as JAX
    assert dtypes.canonicalize("float16") == f16
    with jx.enable_x64():
        assert dtypes.canonicalize(np.float64) == f64
        assert dtypes.canonicalize(float) == f64 and dtypes.canonicalize(int) == i64
    assert dtypes.canonicalize(complex) == c64
    with pytest.warns(UserWarning, match="complex128 .* truncated to dtype complex64"):
        assert dtypes.canonicalize(np.complex128) == c64
    with jx.enable_x64():
        assert dtypes.canonicalize(complex) == c128
        assert dtypes.canonicalize(np.complex128) == c128


def test_python_scalars():
    assert dtypes.python_scalar_dtype(True) == b1
    assert dtypes.python_scalar_dtype(3) == i32
    assert dtypes.python_scalar_dtype(-2**31) == i32
    with pytest.raises(OverflowError, match="int32"):          # x64 off: as JAX
        dtypes.python_scalar_dtype(2**31)
    assert dtypes.python_scalar_dtype(1.5) == f32
    assert dtypes.python_scalar_dtype(1j) == c64
    with jx.enable_x64():
        assert dtypes.python_scalar_dtype(1j) == c128
        assert dtypes.python_scalar_dtype(2**31) == i64
        assert dtypes.python_scalar_dtype(1.5) == f64
        with pytest.raises(OverflowError, match="int64"):
            dtypes.python_scalar_dtype(2**64)


def test_kinds_and_names():
    assert dtypes.is_float(f16) and dtypes.is_float(f64) and not dtypes.is_float(i32)
    assert dtypes.is_int(u8) and dtypes.is_int(i64) and not dtypes.is_int(b1)
    assert not dtypes.is_int(f32) and not dtypes.is_float(b1)
    names = {dtypes.short_name(d) for d in dtypes.SUPPORTED}
    assert len(names) == len(dtypes.SUPPORTED)
    assert dtypes.short_name(f32) == "f32" and dtypes.short_name(b1) == "bool"
    if bf16 is not None:
        assert dtypes.is_float(bf16) and dtypes.short_name(bf16) == "bf16"


def test_jnp_result_type_uses_the_table():
    assert jnp.result_type(np.zeros(2, np.int32), 2.0) == f32
    assert jnp.result_type(np.zeros(2, np.float16), 3) == f16
    assert jnp.result_type(np.zeros(2, np.float32), np.zeros(2, np.float64)) == f32
    assert jnp.result_type(True, 1) == i32
    assert jnp.result_type([1, 2], 1.0) == f32      # lists take the default dtypes
    with jx.enable_x64():
        assert jnp.result_type(np.zeros(2, np.float32), np.zeros(2, np.float64)) == f64
        assert jnp.result_type(np.float64(1.0), np.zeros(2, np.float32)) == f64
        assert jnp.result_type(np.zeros(2, np.int32), 2.0) == f64


def test_unsupported_array_is_rejected_at_the_frontend():
    with pytest.raises(dtypes.DTypeError, match="not supported"):
        jnp.add(np.zeros(3, np.dtype("U3")), 1)
    with pytest.raises(jx.JxError):
        jx.make_graph(lambda x: x)(np.zeros(3, np.dtype("U3")))


def test_complex_kinds_and_weak_promotion():
    """JAX's lattice: f* -> c* -> c64, f32 -> c64, f64 -> c128; a Python complex is weak."""
    assert dtypes.is_complex(c64) and not dtypes.is_float(c64) and dtypes.is_inexact(c128)
    assert dtypes.real_dtype(c64) == f32 and dtypes.real_dtype(c128) == f64
    assert dtypes.complex_dtype(f32) == c64 and dtypes.complex_dtype(i64) == c128
    assert dtypes.short_name(c64) == "c64" and dtypes.short_name(c128) == "c128"
    assert dtypes.result_type((i32, False), (c64, True)) == (c64, True)     # arange(3) * 1j
    assert dtypes.result_type((f16, False), (c64, True)) == (c64, False)
    assert dtypes.result_type((f32, True), (c64, True)) == (c64, True)      # 1.0 * 1j
    assert dtypes.result_type((f64, False), (c64, True)) == (c128, False)   # (x64 traced)
