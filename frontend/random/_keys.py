"""Key utilities. jx keys are raw uint32[..., 2] arrays (JAX's legacy raw keys for
the threefry2x32 implementation), so wrapping and unwrapping are checks only."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer
from ..errors import ShapeError
from ..numpy import _util as u

IMPL = "threefry2x32"


def _check_impl(impl, what: str) -> None:
    name = getattr(impl, "name", impl)
    if name not in (None, IMPL) and impl != dtypes.uint32:
        raise ValueError(f"jx.random supports only the {IMPL!r} PRNG implementation, got "
                         f"{what}={impl!r}")


def _check_keys(keys, name: str):
    k = u.as_value(keys)
    aval = k.aval if isinstance(k, Tracer) else None
    shape, dt = (aval.shape, aval.dtype) if aval else (np.shape(k), np.asarray(k).dtype)
    if len(shape) < 1 or shape[-1] != 2 or dt != dtypes.uint32:
        raise ShapeError(f"jx.random.{name} takes keys, uint32 arrays of shape [..., 2], got "
                         f"{dtypes.short_name(dt)}{list(shape)}; make keys with "
                         "jx.random.PRNGKey(seed) or jx.random.split")
    return k


def key_data(keys):
    """The raw uint32[..., 2] words of a key or a batch of keys (jx keys are raw)."""
    return _check_keys(keys, "key_data")


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """A key array from its uint32[..., 2] data: the data itself (jx keys are raw)."""
    if impl is not None and dtype is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                         "jx.random.wrap_key_data")
    _check_impl(impl if dtype is None else dtype, "impl" if dtype is None else "dtype")
    return _check_keys(key_bits_array, "wrap_key_data")


def key_impl(keys) -> str:
    """The PRNG implementation's name: always 'threefry2x32' in jx."""
    _check_keys(keys, "key_impl")
    return IMPL


def key_dtype(impl_spec=None):
    """The dtype of jx keys: uint32 (raw keys; JAX's typed key dtypes do not exist)."""
    _check_impl(impl_spec, "impl_spec")
    return np.dtype(np.uint32)


def clone(key):
    """The key itself: JAX's clone only matters to its key-reuse checker."""
    return _check_keys(key, "clone")
