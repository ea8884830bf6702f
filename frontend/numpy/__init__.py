"""jx.numpy: the NumPy API over jx primitives.

Broadcasting, dtype promotion (with JAX's weak-typed Python scalars) and
indexing are resolved at trace time into explicit primitives. Called on
concrete values (jx.Arrays, NumPy arrays, Python scalars) outside tracing, every
function runs eagerly through the primitives' NumPy references and returns
jx.Arrays (ndarray below).
"""
import numpy as _np

from .. import dtypes as _dtypes
from .creation import *  # noqa: F401,F403
from .creation import iota  # noqa: F401
from .linalg import dot, einsum, inner, matmul, outer, tensordot, vdot  # noqa: F401
from .linalg import cross, kron, trace  # noqa: F401
from .manipulation import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .ufuncs import *  # noqa: F401,F403
from .ufuncs import abs, round  # noqa: F401
from .indexing import IndexUpdateHelper, getitem, take, take_along_axis  # noqa: F401
from .sorting import argsort, lexsort, sort  # noqa: F401
from . import _methods  # noqa: F401  (installs the array methods on Tracer)

# scalar types as in JAX: jnp.float32(2) is a strong jx array, jnp.float32 a dtype
from .creation import _scalar_type  # noqa: E402
bool_ = _scalar_type(_np.bool_)
int8, int16, int32, int64 = (_scalar_type(t) for t in (_np.int8, _np.int16, _np.int32, _np.int64))
uint8, uint32 = _scalar_type(_np.uint8), _scalar_type(_np.uint32)
float16, float32, float64 = (_scalar_type(t) for t in (_np.float16, _np.float32, _np.float64))
del _scalar_type
pi, e, inf, nan = _np.pi, _np.e, _np.inf, _np.nan
newaxis = None
from ..array import Array as ndarray  # noqa: E402  (jax.numpy.ndarray is jax.Array)


def result_type(*args):
    """JAX's result_type: arrays, values, dtypes and Python's float/int/bool (the
    mode's defaults, weak as Python scalars are)."""
    from .. import dtypes as _dtypes
    from ._util import dtype_weak
    pairs = []
    for a in args:
        if a is float or a is int or a is bool:
            pairs.append((_dtypes.canonicalize(a), a is not bool))
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
signedinteger, unsignedinteger = _np.signedinteger, _np.unsignedinteger


def shape(a):
    from ._util import shape_of
    return shape_of(a)


def ndim(a):
    return len(shape(a))


def size(a):
    return int(_np.prod(shape(a), dtype=_np.int64))
