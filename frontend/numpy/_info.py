"""The array API's namespace-inspection object (jnp.__array_namespace_info__())."""
from __future__ import annotations

import numpy as np

from .. import dtypes

_KIND_NAMES = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KIND_NAMES["integral"] = _KIND_NAMES["signed integer"] + _KIND_NAMES["unsigned integer"]
_KIND_NAMES["numeric"] = (_KIND_NAMES["integral"] + _KIND_NAMES["real floating"]
                          + _KIND_NAMES["complex floating"])


class Info:
    """What jx.numpy supports, in the array API's terms: no data-dependent
    shapes or boolean-mask indexing (as JAX), the host as the only device, and
    the dtypes of the current mode (64-bit ones only with x64 on)."""

    def capabilities(self) -> dict:
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 64}

    def default_device(self):
        return None

    def devices(self) -> list:
        from ..array import DEFAULT_DEVICE
        return [None, DEFAULT_DEVICE[0]()]

    def default_dtypes(self, *, device=None) -> dict:
        return {"real floating": dtypes.default_float(),
                "complex floating": dtypes.default_complex(),
                "integral": dtypes.default_int(), "indexing": dtypes.default_int()}

    def dtypes(self, *, device=None, kind=None) -> dict:
        kinds = (kind,) if kind is None or isinstance(kind, str) else tuple(kind)
        names = []
        for k in kinds:
            if k is None:
                names += _KIND_NAMES["bool"] + _KIND_NAMES["numeric"]
            elif k in _KIND_NAMES:
                names += _KIND_NAMES[k]
            else:
                raise ValueError(f"dtypes: unknown kind {k!r}; use one of {sorted(_KIND_NAMES)}")
        out = {}
        for n in names:
            dt = np.dtype(n)
            if dtypes.canonical(dt) == dt:       # the mode's dtypes only, as JAX
                out[n] = dt
        return out
