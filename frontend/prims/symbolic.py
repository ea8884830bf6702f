"""dimension_size: a symbolic dimension's size as a value (JAX's
dimension_as_value), for what divides by a size (a mean over a symbolic axis).
It has no operands; its `dim` param is a jx.dims expression, which the symbols'
values turn into a number (jx.interpret binds them from the arguments)."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import declare
from ..ir import ShapedArray


def _dimension_size_rule(*, dim, dtype):
    dtypes.check_supported(dtype)
    return ShapedArray((), dtype)


dimension_size = declare("dimension_size", _dimension_size_rule,
                         lambda *, dim, dtype: np.asarray(int(dim), dtype))
