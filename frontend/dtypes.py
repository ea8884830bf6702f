"""Supported dtypes, their short names, and JAX-style type promotion.

Defaults follow JAX: Python floats become float32 and Python ints int32, and
both are *weak*: they take the dtype of the array they meet. Unlike JAX with
x64 disabled, explicit float64/int64 arrays are kept as they are.
"""
from __future__ import annotations

import numpy as np

from .errors import ShapeError

try:  # bfloat16 has no NumPy dtype of its own; ml_dtypes supplies one if present.
    from ml_dtypes import bfloat16 as _bf16
    bfloat16 = np.dtype(_bf16)
except ImportError:  # pragma: no cover - depends on the environment
    bfloat16 = None

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))

_SHORT = {bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
          uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
          float16: "f16", float32: "f32", float64: "f64"}
if bfloat16 is not None:
    _SHORT[bfloat16] = "bf16"

SUPPORTED = frozenset(_SHORT)
FLOATS = frozenset(d for d in SUPPORTED if d.kind == "f" or d == bfloat16)
INTS = frozenset(d for d in SUPPORTED if d.kind in "iu")

default_float = float32
default_int = int32


class DTypeError(ShapeError):
    """A dtype that jx does not support. A ShapeError (hence JxError and TypeError),
    so shape rules that meet one report it like any other type error."""


def short_name(dt) -> str:
    return _SHORT.get(np.dtype(dt), str(np.dtype(dt)))


def check_supported(dt) -> np.dtype:
    dt = np.dtype(dt)
    if dt not in SUPPORTED:
        names = ", ".join(sorted(str(d) for d in SUPPORTED))
        raise DTypeError(f"dtype {dt} is not supported by jx; use one of: {names}")
    return dt


def canonicalize(dt) -> np.dtype:
    """Map a user dtype spec (np.float32, 'float32', float, int, bool) to a dtype."""
    if dt is float:
        return default_float
    if dt is int:
        return default_int
    if dt is bool:
        return bool_
    return check_supported(dt)


def is_float(dt) -> bool:
    return np.dtype(dt) in FLOATS


def is_int(dt) -> bool:
    return np.dtype(dt) in INTS


def is_half(dt) -> bool:
    """float16 or bfloat16: computed in float32 and rounded, where XLA does so.
    (Not `dt == bfloat16`: without ml_dtypes that is `dt == None`, which NumPy
    reads as float64.)"""
    dt = np.dtype(dt)
    return dt == float16 or dt.name == "bfloat16"


def finfo(dt):
    """Float limits; np.finfo does not know bfloat16, ml_dtypes' finfo does."""
    dt = np.dtype(dt)
    if dt.name == "bfloat16":
        import ml_dtypes
        return ml_dtypes.finfo(dt)
    return np.finfo(dt)


def python_scalar_dtype(x) -> np.dtype:
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        if not -2**63 <= x < 2**63:
            raise DTypeError(f"Python int {x} does not fit in int64; jx has no bigger "
                             "integers (use a float, or split the value)")
        return default_int if -2**31 <= x < 2**31 else int64
    if isinstance(x, float):
        return default_float
    raise DTypeError(f"complex numbers are not supported by jx (got {x!r})")


# JAX's type promotion lattice (x64 flavour: explicit 64-bit types are kept).
# "i*" and "f*" are the weak Python int and float: they sit below every int and
# float type, so `x_f16 * 2.0` stays f16 and `x_i32 * 2.0` becomes a float.
# Joining in a lattice is associative and commutative, unlike pairwise NumPy
# rules: (i64, u64, f16) gives f16 whatever the order.
WEAK_INT, WEAK_FLOAT = "i*", "f*"
_LATTICE: dict = {
    bool_: [WEAK_INT], WEAK_INT: [uint8, int8], WEAK_FLOAT: [float16],
    uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64],
    uint64: [WEAK_FLOAT], int8: [int16], int16: [int32], int32: [int64],
    int64: [WEAK_FLOAT], float16: [float32], float32: [float64], float64: [],
}
if bfloat16 is not None:
    _LATTICE[WEAK_FLOAT] = [float16, bfloat16]
    _LATTICE[bfloat16] = [float32]
_UPPER: dict = {}


def _upper(node) -> frozenset:
    """node and every type it promotes to."""
    if node not in _UPPER:
        _UPPER[node] = frozenset([node]).union(*(_upper(n) for n in _LATTICE[node]))
    return _UPPER[node]


def _join(nodes) -> object:
    """The least upper bound of lattice nodes."""
    common = frozenset.intersection(*(_upper(n) for n in nodes))
    return next(c for c in common if _upper(c) == common)


def _node(dt, weak: bool):
    if not weak or dt == bool_:     # there is no weak bool
        return dt
    return WEAK_FLOAT if is_float(dt) else WEAK_INT


def result_type(*avals) -> tuple:
    """(dtype, weak) of combining the given (dtype, weak) pairs, JAX-style.

    All weak: the join of their dtypes, still weak. Otherwise the lattice join,
    weak only if it is a weak node: int32 array * 2.0 -> weak float32.
    """
    avals = [(check_supported(d), bool(w)) for d, w in avals]
    if not avals:
        raise DTypeError("result_type needs at least one dtype")
    dt, weak = _lattice_result(avals)
    strong = [d for d, w in avals if not w]
    if not weak and dt.itemsize == 8 and all(d.itemsize < 8 for d in strong):
        # int32 with uint32 joins at int64, which JAX's default 32-bit mode narrows
        # back to int32: a 64-bit type appears only where an array brought one
        dt = _NARROW[dt]
    return dt, weak


_NARROW = {int64: int32, uint64: uint32, float64: float32}


def _lattice_result(avals) -> tuple:
    if all(w for _, w in avals):
        return _join([d for d, _ in avals]), True
    j = _join([_node(d, w) for d, w in avals])
    if j == WEAK_INT:   # bool arrays with Python ints: int32, or int64 for big ints
        return _join([d for d, w in avals if w and d != bool_]), True
    if j == WEAK_FLOAT:
        if _join([d for d, w in avals if not w]) == WEAK_FLOAT:
            # uint64 with signed ints: only a float holds both. f64 (JAX with x64), weak
            # so a later f16/f32 operand still decides. With a Python float too, the
            # result depends on grouping: the one corner where the join is not associative.
            return float64, True
        return _join([d for d, w in avals if w and is_float(d)]), True
    return j, False
