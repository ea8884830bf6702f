"""bitcast_convert_type: the bits of a value read as another type of the same width
(JAX's lax.bitcast_convert_type); elementwise, so it fuses like the others."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import declare
from ..errors import ShapeError
from ..ir import ShapedArray


def _bitcast_rule(x, new_dtype):
    """Same-width reinterpretation of the bits (JAX's lax.bitcast_convert_type; bool
    only to itself). The result is never weak, as in JAX."""
    new = np.dtype(dtypes.check_supported(new_dtype))
    if (x.dtype == dtypes.bool_) != (new == dtypes.bool_):
        raise ShapeError(f"bitcast_convert_type does not take bool unless both types are "
                         f"bool, got {x.dtype} -> {new}; compare with 0 instead (x != 0)")
    if np.dtype(x.dtype).itemsize != new.itemsize:
        raise ShapeError(f"bitcast_convert_type from {x.dtype} to {new}: jx reinterprets "
                         "only types of one width (float32 <-> int32/uint32, ...)")
    return ShapedArray(x.shape, new, False)


bitcast_convert_type = declare("bitcast_convert_type", _bitcast_rule,
                               lambda x, new_dtype: np.ascontiguousarray(x).view(new_dtype))
