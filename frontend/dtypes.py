"""Supported dtypes, their short names, and JAX-style type promotion.

Defaults follow JAX, in its two modes (jx.config's jax_enable_x64):

- 32-bit mode (the default): Python floats are float32 and Python ints int32,
  both *weak* (they take the dtype of the array they meet); NumPy float64,
  int64 and uint64 data become float32, int32 and uint32 (`canonical`); an
  explicit request for a 64-bit dtype gets the 32-bit one, with JAX's warning
  (`canonicalize`).
- 64-bit mode: the defaults are float64 and int64 and nothing is narrowed.

Traced values keep the dtype they have: a graph traced from an exported float64
spec computes in float64 whatever the mode.
"""
from __future__ import annotations

import numpy as np

from . import flags
from .errors import ShapeError, warn_user

try:  # bfloat16 has no NumPy dtype of its own; ml_dtypes supplies one if present.
    from ml_dtypes import bfloat16 as _bf16
    bfloat16 = np.dtype(_bf16)
except ImportError:  # pragma: no cover - depends on the environment
    bfloat16 = None

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

_SHORT = {bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
          uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
          float16: "f16", float32: "f32", float64: "f64", complex64: "c64",
          complex128: "c128"}
if bfloat16 is not None:
    _SHORT[bfloat16] = "bf16"

SUPPORTED = frozenset(_SHORT)
FLOATS = frozenset(d for d in SUPPORTED if d.kind == "f" or d == bfloat16)
INTS = frozenset(d for d in SUPPORTED if d.kind in "iu")
COMPLEX = frozenset({complex64, complex128})
INEXACT = FLOATS | COMPLEX



def x64() -> bool:
    return flags.STATE.x64


def default_float() -> np.dtype:
    return float64 if flags.STATE.x64 else float32


def default_int() -> np.dtype:
    return int64 if flags.STATE.x64 else int32


def default_complex() -> np.dtype:
    return complex128 if flags.STATE.x64 else complex64


def default_uint() -> np.dtype:
    return uint64 if flags.STATE.x64 else uint32


class DTypeError(ShapeError):
    """A dtype that jx does not support. A ShapeError (hence JxError and TypeError),
    so shape rules that meet one report it like any other type error."""


class TypePromotionError(ShapeError, ValueError):
    """Operands of different dtypes under jax_numpy_dtype_promotion='strict'."""


def short_name(dt) -> str:
    return _SHORT.get(np.dtype(dt), str(np.dtype(dt)))


def check_supported(dt) -> np.dtype:
    dt = np.dtype(dt)
    if dt not in SUPPORTED:
        names = ", ".join(sorted(str(d) for d in SUPPORTED))
        raise DTypeError(f"dtype {dt} is not supported by jx; use one of: {names}")
    return dt


_NARROW = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def canonical(dt) -> np.dtype:
    """The dtype data of dtype dt is held in, in the current mode (silently: NumPy
    float64 data becomes float32 in 32-bit mode, as JAX's inputs do)."""
    dt = check_supported(dt)
    return dt if flags.STATE.x64 else _NARROW.get(dt, dt)


def canonicalize(dt, where: str | None = None) -> np.dtype:
    """Map a user dtype request (np.float32, 'float32', float, int, bool) to the
    dtype jx computes in. In 32-bit mode a 64-bit request gets the 32-bit type and
    JAX's warning, naming the function (`where`) it was given to."""
    if dt is float:
        return default_float()
    if dt is int:
        return default_int()
    if dt is bool:
        return bool_
    if dt is complex:
        return default_complex()
    dt = check_supported(dt)
    if flags.STATE.x64 or dt not in _NARROW:
        return dt
    warn_user(f"Explicitly requested dtype {dt} "
              + (f"requested in {where} " if where else "")
              + f"is not available, and will be truncated to dtype {_NARROW[dt]}. To "
              "enable more dtypes, set the jax_enable_x64 configuration option "
              "(jx.config.update('jax_enable_x64', True)) or the JAX_ENABLE_X64 shell "
              "environment variable.")
    return _NARROW[dt]


def inexact(dt) -> np.dtype:
    """The float dtype a bool or integer dtype computes in (sin, mean, true divide),
    as JAX's: float64 for 64-bit integers, float32 for narrower ones, in either mode.
    Complex dtypes are inexact already."""
    dt = np.dtype(dt)
    if dt in INEXACT:
        return dt
    return float64 if dt.itemsize == 8 else float32


def is_float(dt) -> bool:
    return np.dtype(dt) in FLOATS


def is_complex(dt) -> bool:
    return np.dtype(dt) in COMPLEX


def is_inexact(dt) -> bool:
    """float or complex: the dtypes that derivatives flow through."""
    return np.dtype(dt) in INEXACT


def real_dtype(dt) -> np.dtype:
    """The dtype of a complex dtype's components (complex64 -> float32); others
    are their own."""
    dt = np.dtype(dt)
    return {complex64: float32, complex128: float64}.get(dt, dt)


def complex_dtype(dt) -> np.dtype:
    """The complex dtype with components of dt's precision, as JAX's
    dtypes.to_complex_dtype: float64/int64 -> complex128, narrower -> complex64."""
    dt = np.dtype(dt)
    if dt in COMPLEX:
        return dt
    return complex128 if inexact(dt) == float64 else complex64


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
    """The (weak) dtype of a Python scalar: the mode's default. An int that does not
    fit it is an OverflowError, as in JAX."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        dt = default_int()
        if not -2**(dt.itemsize * 8 - 1) <= x < 2**(dt.itemsize * 8 - 1):
            raise OverflowError(
                f"Python int {x} too large to convert to {dt}"
                + ("" if flags.STATE.x64 else " (64-bit mode is off: enable it with "
                   "jx.config.update('jax_enable_x64', True), or pass a float)"))
        return dt
    if isinstance(x, float):
        return default_float()
    if isinstance(x, complex):
        return default_complex()
    raise DTypeError(f"{type(x).__name__} {x!r} is not a number jx knows")


def index_dtype(i: int) -> np.dtype:
    """The dtype of a constant Python-int index: int32, or int64 past it (indices
    are internal: arrays may have more than 2**31 elements in either mode)."""
    return int32 if -2**31 <= i < 2**31 else int64


# JAX's type promotion lattice (x64 flavour: explicit 64-bit types are kept).
# "i*", "f*" and "c*" are the weak Python int, float and complex: they sit below
# every type of their kind, so `x_f16 * 2.0` stays f16, `x_i32 * 2.0` becomes a
# float and `x_f32 * 1j` complex64.
# Joining in a lattice is associative and commutative, unlike pairwise NumPy
# rules: (i64, u64, f16) gives f16 whatever the order.
WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = "i*", "f*", "c*"
_LATTICE: dict = {
    bool_: [WEAK_INT], WEAK_INT: [uint8, int8], WEAK_FLOAT: [float16, WEAK_COMPLEX],
    WEAK_COMPLEX: [complex64],
    uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64],
    uint64: [WEAK_FLOAT], int8: [int16], int16: [int32], int32: [int64],
    int64: [WEAK_FLOAT], float16: [float32], float32: [float64, complex64],
    float64: [complex128], complex64: [complex128], complex128: [],
}
if bfloat16 is not None:
    _LATTICE[WEAK_FLOAT] = [float16, bfloat16, WEAK_COMPLEX]
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
    return WEAK_COMPLEX if is_complex(dt) else WEAK_FLOAT if is_float(dt) else WEAK_INT


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
    if flags.STATE.dtype_promotion == "strict" and len(set(strong)) > 1:
        raise TypePromotionError(
            f"Input dtypes {tuple(str(d) for d in dict.fromkeys(strong))} have no "
            "available implicit dtype promotion path when jax_numpy_dtype_promotion="
            "strict; cast the inputs explicitly (x.astype(...)) or set "
            "jax_numpy_dtype_promotion to 'standard'")
    if not weak and is_wide(dt) and not flags.STATE.x64 and \
            not any(is_wide(d) for d in strong):
        # int32 with uint32 joins at int64, which 32-bit mode narrows back to int32:
        # there a 64-bit type appears only where a traced 64-bit value brought one
        dt = _NARROW[dt]
    return dt, weak


def is_wide(dt) -> bool:
    """A 64-bit type (complex128: two 64-bit floats), one 32-bit mode narrows;
    complex64, 8 bytes of two 32-bit floats, is not."""
    return np.dtype(dt) in _NARROW


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
    if j == WEAK_COMPLEX:   # ints or floats that a Python complex joins: weak complex
        return _join([d for d, w in avals if w and is_complex(d)]), True
    return j, False
