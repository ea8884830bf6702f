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


def python_scalar_dtype(x) -> np.dtype:
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int if -2**31 <= x < 2**31 else int64
    if isinstance(x, float):
        return default_float
    raise DTypeError(f"complex numbers are not supported by jx (got {x!r})")


def _kind_rank(dt) -> int:
    dt = np.dtype(dt)
    if dt == bool_:
        return 0
    if dt in INTS:
        return 1
    return 2


def _default_for_rank(rank: int) -> np.dtype:
    return (bool_, default_int, default_float)[rank]


def _promote_pair(a, b) -> np.dtype:
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    ra, rb = _kind_rank(a), _kind_rank(b)
    if ra != rb:  # ints meeting floats take the float, like JAX (no widening to f64)
        return a if ra > rb else b
    if bfloat16 is not None and {a, b} == {float16, bfloat16}:
        return float32
    return np.promote_types(a, b)


def result_type(*avals) -> tuple:
    """(dtype, weak) of combining the given (dtype, weak) pairs, JAX-style."""
    strong = [np.dtype(d) for d, w in avals if not w]
    weak = [np.dtype(d) for d, w in avals if w]
    if not strong:
        rank = max(_kind_rank(d) for d in weak)
        dt = weak[0]
        for d in weak[1:]:
            dt = _promote_pair(dt, d)
        return (dt if _kind_rank(dt) == rank else _default_for_rank(rank)), True
    dt = strong[0]
    for d in strong[1:]:
        dt = _promote_pair(dt, d)
    weak_rank = max((_kind_rank(d) for d in weak), default=-1)
    if weak_rank > _kind_rank(dt):  # e.g. int32 array * 2.0 -> weak float32, as in JAX
        return _default_for_rank(weak_rank), True
    return dt, False
