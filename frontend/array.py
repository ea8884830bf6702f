"""jx.Array: a concrete value, as JAX's jax.Array.

An immutable wrapper over a read-only NumPy array and its weak-type bit. It
never copies: np.asarray(x), __array__, the buffer protocol and DLPack hand out
the buffer itself (read-only). Its operators and NumPy methods are the ones
tracers have (core.ARRAY_METHODS, filled by jx.numpy; core registers this class
with array_type), so `x + 1`, `x.sum()`, `x.at[i].set(v)` are jx.numpy functions
with JAX's promotion, concrete or traced alike. Only what needs a value (item,
tolist, bool(), repr, pickling, ...) is defined here.

This module sits below jx.core (core imports it to wrap eager results), so it
imports no part of jx but the IR.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from . import dtypes
from .ir import ShapedArray


@dataclass(frozen=True)
class Device:
    """A CPU device: a thread of one process with its share of the cores
    (jx.pmap runs one replica per device)."""
    id: int
    process_index: int
    platform: str = "cpu"

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id}, process_index={self.process_index})"


# The device a concrete value lives on: jx.pmap fills this with its process's
# first local device when it is imported (it knows the MPI rank; this layer
# does not); until then, device 0 of process 0.
DEFAULT_DEVICE: list = [lambda: Device(0, 0)]


class Array(metaclass=abc.ABCMeta):
    """A concrete jx array (jx.numpy.ndarray). Immutable: update with
    `x.at[idx].set(v)`; `x += v` rebinds x to a new array."""

    # _value: the NumPy array. Read-only, except a fresh buffer jx.jit wraps
    # (setting the flag costs a fraction of a small call): _exposed makes it
    # read-only before anything outside jx sees it.
    # _sig/_ptr: set by jit's call plans (jx.dispatch.signature), absent until then
    # _base: a jit result's block of same-typed results, of which it is the row at
    #   _ptr, when its view is not made yet (__getattr__ makes it on first use)
    __slots__ = ("_value", "_weak", "_sig", "_ptr", "_base")
    __array_priority__ = 1000   # np_array + jx_array is jx's operator (JAX's promotion)

    def __init__(self, value, weak_type: bool = False):
        """value: a NumPy array (made read-only, not copied) or anything
        np.asarray takes. Users make arrays with jx.numpy.asarray/array."""
        if type(value) is not np.ndarray:
            value = np.asarray(value)
            if value.dtype == object:
                raise TypeError(f"jx.Array: cannot hold {type(value).__name__} elements; "
                                "give numbers or arrays of numbers")
        if value.flags.writeable:
            value.flags.writeable = False
        self._value = value
        self._weak = bool(weak_type)

    def __getattr__(self, name):
        # Only for unset slots. A call plan hands out its outputs of one shape and
        # dtype as rows of one block without making their NumPy views: a result fed
        # straight back into the next call (an optimizer loop) never needs one.
        if name != "_value":
            raise AttributeError(name)
        base = self._base
        row = (self._ptr - base.__array_interface__["data"][0]) // (base.nbytes // len(base))
        self._value = v = base[row]
        return v

    # ------------------------------------------------------------ the aval
    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: self._value.ndim)
    size = property(lambda self: self._value.size)
    nbytes = property(lambda self: self._value.nbytes)
    itemsize = property(lambda self: self._value.itemsize)
    weak_type = property(lambda self: self._weak)

    @property
    def aval(self) -> ShapedArray:
        return ShapedArray(self._value.shape, self._value.dtype, self._weak)

    # ------------------------------------------------------------ zero-copy views
    def _exposed(self) -> np.ndarray:
        v = self._value
        if v.flags.writeable:
            v.flags.writeable = False
        return v

    def __array__(self, dtype=None, copy=None):
        v = self._exposed()
        if dtype is not None and np.dtype(dtype) != v.dtype:
            if copy is False:
                raise ValueError(f"jx.Array: converting {v.dtype} to {np.dtype(dtype)} "
                                 "needs a copy, and copy=False was given")
            return v.astype(dtype)
        return v.copy() if copy else v

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        # A read-only buffer needs DLPack >= 1.0, which can mark it read-only.
        kw = {"max_version": max_version or (1, 0)}
        if dl_device is not None:
            kw["dl_device"] = dl_device
        if copy is not None:
            kw["copy"] = copy
        return self._exposed().__dlpack__(stream=stream, **kw)

    def __dlpack_device__(self):
        return self._value.__dlpack_device__()

    def __buffer__(self, flags):      # Python >= 3.12: memoryview(x), bytes(x)
        return memoryview(self._exposed())

    # ------------------------------------------------------------ concrete values
    def __bool__(self) -> bool:
        return bool(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __complex__(self) -> complex:
        return complex(self._value)

    def __index__(self) -> int:
        if not dtypes.is_int(self._value.dtype) and self._value.dtype != np.bool_:
            raise TypeError(f"only integer arrays can be used as an index, not "
                            f"{self._value.dtype} (convert with astype(int) first)")
        return self._value.__index__()

    def __len__(self) -> int:
        if not self._value.ndim:
            raise TypeError("len() of unsized object (a 0-d jx.Array)")
        return len(self._value)

    def __iter__(self):
        if not self._value.ndim:
            raise TypeError("iteration over a 0-d jx.Array")
        weak = self._weak
        return (Array(v, weak) for v in self._exposed())

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def nonzero(self, *, size=None, fill_value=None):
        """The indices of nonzero elements (int32, as JAX), one array per axis."""
        idx = np.nonzero(self._value)
        if size is not None:
            fill = 0 if fill_value is None else fill_value
            idx = tuple(np.concatenate([i[:size], np.full(max(0, size - len(i)), fill)])
                        for i in idx)
        return tuple(Array(i.astype(dtypes.default_int())) for i in idx)

    def view(self, dtype=None, type=None) -> "Array":
        """The same bytes read as dtype (no copy), as NumPy's view."""
        if type is not None:
            raise TypeError("jx.Array.view: type= is not supported (jx arrays have one type)")
        if dtype is None:
            return self
        return Array(self._exposed().view(dtypes.canonicalize(dtype, "view")))

    def copy(self) -> "Array":
        return Array(self._value.copy(), self._weak)

    def __copy__(self) -> "Array":
        return self            # immutable: a copy is indistinguishable

    def __deepcopy__(self, memo) -> "Array":
        return self

    def __reduce__(self):
        return (_rebuild, (self._value, self._weak))

    # ------------------------------------------------------------ devices
    def block_until_ready(self) -> "Array":
        return self            # computed when returned

    def copy_to_host_async(self) -> None:
        return None

    @property
    def device(self) -> Device:
        return DEFAULT_DEVICE[0]()

    def devices(self) -> set:
        return {self.device}

    is_fully_addressable = property(lambda self: True)
    is_fully_replicated = property(lambda self: True)

    def unsafe_buffer_pointer(self) -> int:
        return self._value.__array_interface__["data"][0]

    # ------------------------------------------------------------ immutability
    def __setitem__(self, idx, value):
        raise TypeError("jx arrays are immutable and do not support in-place item "
                        "assignment: instead of `x[idx] = v`, write `x = x.at[idx].set(v)` "
                        "(or .add, .multiply, .min, .max)")

    def __hash__(self):
        raise TypeError("unhashable type: 'jx.Array' (use x.item() for a scalar, or "
                        "tuple(x.tolist()) as a key)")

    def __pos__(self):
        return self

    # ------------------------------------------------------------ printing
    def __repr__(self) -> str:
        v = self._value
        tail = f"dtype={v.dtype.name}" + (", weak_type=True" if self._weak else "")
        if v.size == 0 and v.shape != (0,):
            return f"Array([], shape={v.shape}, {tail})"
        body = np.array2string(v, separator=", ", prefix="Array(")
        last = body.rsplit("\n", 1)[-1]
        if len(last) + len(tail) + 3 > np.get_printoptions()["linewidth"] and "\n" in body:
            return f"Array({body},\n      {tail})"
        return f"Array({body}, {tail})"

    def __str__(self) -> str:
        return str(self._value)

    def __format__(self, spec: str) -> str:
        if self._value.ndim == 0:
            return format(self._value[()], spec)
        if not spec:
            return str(self)
        raise TypeError(f"unsupported format string {spec!r} for a jx.Array of shape "
                        f"{self._value.shape}: format its elements (x.tolist()) instead")


def _rebuild(value, weak):
    return Array(np.array(value), weak)


def unwrap(x):
    """The NumPy array under a jx.Array; anything else unchanged."""
    return x._value if type(x) is Array else x


def wrap(value: np.ndarray, weak_type: bool = False) -> Array:
    return Array(value, weak_type)
