"""Sorting: one variadic, stable `sort` primitive.

`sort(*operands, dimension, is_stable, num_keys)` sorts every operand along
`dimension` by the first `num_keys` operands, compared lexicographically; the
rest ride along (values, an iota for argsort). Floats compare as NumPy and
jnp.sort do: -0.0 equals 0.0 and every NaN sorts after +inf. The reference is
always stable, so `is_stable` only records what the caller needs; a backend
may use an unstable algorithm where it is False.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import declare
from ..errors import ShapeError


def _sort_rule(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise ShapeError("sort needs at least one operand")
    x0 = operands[0]
    for x in operands[1:]:
        if x.shape != x0.shape:
            raise ShapeError(f"all operands must have one shape, got "
                             f"{', '.join(str(o) for o in operands)}; broadcast them first")
    if x0.ndim == 0:
        raise ShapeError(f"cannot sort a 0-d operand {x0}; reshape it to 1-d first")
    if not isinstance(dimension, int) or not 0 <= dimension < x0.ndim:
        raise ShapeError(f"dimension {dimension} out of range for {x0} "
                         f"(it must be in [0, {x0.ndim}))")
    if not isinstance(num_keys, int) or not 1 <= num_keys <= len(operands):
        raise ShapeError(f"num_keys={num_keys} must be between 1 and the number of "
                         f"operands ({len(operands)})")
    if not isinstance(is_stable, bool):
        raise ShapeError(f"is_stable must be a bool, got {is_stable!r}")
    return list(operands)


def _sort_key(x):
    """16-bit floats compared as float32 (exactly the same order): NumPy's sort of
    ml_dtypes' bfloat16 places NaNs among the numbers."""
    return x.astype(np.float32) if dtypes.is_half(x.dtype) else x


def _sort_impl(*operands, dimension, is_stable, num_keys):
    # np.lexsort is stable and takes its primary key last
    keys = [_sort_key(k) for k in operands[:num_keys][::-1]]
    perm = np.lexsort(keys, axis=dimension)
    return [np.take_along_axis(x, perm, axis=dimension) for x in operands]


sort = declare("sort", _sort_rule, _sort_impl, multiple_results=True)
