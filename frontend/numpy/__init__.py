"""jx.numpy: the NumPy API over jx primitives.

Broadcasting, dtype promotion (with JAX's weak-typed Python scalars) and
indexing are resolved at trace time into explicit primitives. Called on
concrete values (jx.Arrays, NumPy arrays, Python scalars) outside tracing, every
function runs eagerly through the primitives' NumPy references and returns
jx.Arrays (ndarray below).
"""
import builtins as _builtins

import numpy as _np

from .. import dtypes as _dtypes
from .creation import *  # noqa: F401,F403
from .creation import iota  # noqa: F401
from ._products import dot, einsum, inner, matmul, outer, tensordot, vdot  # noqa: F401
from ._products import cross, kron, trace  # noqa: F401
from .manipulation import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .ufuncs import *  # noqa: F401,F403
from .ufuncs import abs, round  # noqa: F401
from .indexing import IndexUpdateHelper, getitem, take, take_along_axis  # noqa: F401
from .sorting import argsort, lexsort, sort, sort_complex  # noqa: F401
from ._standard import *  # noqa: F401,F403  (the array API's spellings and additions)
from ._sets import *  # noqa: F401,F403  (nonzero, unique, searchsorted)
from ._quantiles import *  # noqa: F401,F403  (quantile, percentile, median, nan- variants)
from ._gridtools import *  # noqa: F401,F403  (index helpers, grids, insert/delete, select)
from ._numerics import *  # noqa: F401,F403  (histograms, interp, cov, polynomials, windows)
# jx.numpy.linalg and jx.numpy.fft load on first use (__getattr__ below): a program
# that uses neither does not pay for them
from . import _methods  # noqa: F401  (installs the array methods on Tracer)

# scalar types as in JAX: jnp.float32(2) is a strong jx array, jnp.float32 a dtype
from .creation import _scalar_type  # noqa: E402
bool_ = _scalar_type(_np.bool_)
int8, int16, int32, int64 = (_scalar_type(t) for t in (_np.int8, _np.int16, _np.int32, _np.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(t) for t in (_np.uint8, _np.uint16, _np.uint32,
                                                           _np.uint64))
float16, float32, float64 = (_scalar_type(t) for t in (_np.float16, _np.float32, _np.float64))
complex64, complex128 = _scalar_type(_np.complex64), _scalar_type(_np.complex128)
if _dtypes.bfloat16 is not None:     # with ml_dtypes installed, as JAX's
    bfloat16 = _scalar_type(_dtypes.bfloat16.type)
bool = bool_                         # the array API's name (shadows the builtin here only)
int_, uint, float_ = int64, uint64, float64   # JAX's: the 64-bit types, canonicalized on use
single, double = float32, float64
csingle, cdouble, complex_ = complex64, complex128, complex128
del _scalar_type
pi, e, inf, nan = _np.pi, _np.e, _np.inf, _np.nan
newaxis = None
from ..array import Array as ndarray  # noqa: E402  (jax.numpy.ndarray is jax.Array)


def result_type(*args):
    """JAX's result_type: arrays, values, dtypes and Python's float/int/complex/bool
    (the mode's defaults, weak as Python scalars are)."""
    from .. import dtypes as _dtypes
    from ._util import dtype_weak
    pairs = []
    for a in args:
        if a is float or a is int or a is complex or a is _builtins.bool:
            pairs.append((_dtypes.canonicalize(a), a is not _builtins.bool))
        elif isinstance(a, (str, _np.dtype, type)) and not isinstance(a, _np.generic):
            pairs.append((_dtypes.canonical(a), False))
        else:
            pairs.append(dtype_weak(a))
    return _dtypes.result_type(*pairs)[0]


def dtype(obj, align=False, copy=False):
    """NumPy's dtype of a dtype-like (jnp.float32, 'float64', np.int8, ...)."""
    return _np.dtype(obj, align, copy)


def finfo(dt):
    """Float limits of a dtype (bfloat16 too), as jnp.finfo."""
    from .. import dtypes as _dtypes
    return _dtypes.finfo(_np.dtype(dt))


def iinfo(dt):
    return _np.iinfo(_np.dtype(dt))


def issubdtype(arg1, arg2) -> bool:
    """NumPy's issubdtype, knowing jx's scalar types (jnp.float32) as their dtypes."""
    from .creation import _ScalarMeta

    def norm(a):
        return a.dtype.type if isinstance(a, _ScalarMeta) else a
    return _np.issubdtype(norm(arg1), norm(arg2))


floating, integer, inexact, number = _np.floating, _np.integer, _np.inexact, _np.number
complexfloating = _np.complexfloating
ComplexWarning = _np.exceptions.ComplexWarning
signedinteger, unsignedinteger = _np.signedinteger, _np.unsignedinteger
generic, character, flexible = _np.generic, _np.character, _np.flexible
euler_gamma = _np.euler_gamma
__array_api_version__ = "2024.12"


def __array_namespace_info__():
    """The array API's inspection object: jx's capabilities, devices and dtypes."""
    from ._info import Info
    return Info()


def promote_types(a, b):
    """JAX's promote_types: the promotion of two dtypes (no weak types)."""
    return _dtypes.result_type((_dtypes.check_supported(dtype(a)), False),
                               (_dtypes.check_supported(dtype(b)), False))[0]


def isscalar(element) -> bool:
    """As jnp.isscalar: Python and NumPy scalars, and 0-d arrays of jx or NumPy."""
    import numbers
    if isinstance(element, (numbers.Number, _np.generic)) and not isinstance(element, str):
        return True
    return hasattr(element, "shape") and hasattr(element, "dtype") and element.shape == ()


def shape(a):
    from ._util import shape_of
    return shape_of(a)


def ndim(a):
    return len(shape(a))


def size(a):
    return int(_np.prod(shape(a), dtype=_np.int64))


_LAZY_SUBMODULES = ("fft", "linalg")


def __getattr__(name):
    """jnp.linalg and jnp.fft, imported on first use; jax.numpy's names that jx.numpy
    lacks: a one-line error naming the name (and jx's nearest equivalent), never a
    bare AttributeError."""
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    from ._missing import missing
    raise missing(name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))
