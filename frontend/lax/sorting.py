"""lax.sort and lax.sort_key_val: the variadic sort primitive with lax's signatures."""
from __future__ import annotations

from ..numpy.creation import _wrap_public
from ..numpy._util import as_value, canonical_axis, shape_of
from ..numpy.sorting import sort_along


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort an array, or a sequence of same-shape arrays by their first num_keys.

    Returns an array for an array operand and a tuple for a sequence.
    """
    single = not isinstance(operand, (tuple, list))
    ops = [as_value(operand)] if single else [as_value(o) for o in operand]
    ax = canonical_axis(dimension, len(shape_of(ops[0])))
    outs = sort_along(ops, ax, num_keys, bool(is_stable))
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """(sorted keys, values permuted alongside them)."""
    k, v = as_value(keys), as_value(values)
    ax = canonical_axis(dimension, len(shape_of(k)))
    k_out, v_out = sort_along([k, v], ax, 1, bool(is_stable))
    return k_out, v_out


__all__ = ["sort", "sort_key_val"]
_wrap_public(globals(), __all__)
