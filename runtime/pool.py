"""Result buffers that keep their pages: large outputs come from a small pool of
blocks that were already faulted in.

Why: glibc serves every allocation above its mmap threshold (at most 32 MiB) with
a fresh mmap, so each call's 64 MiB result costs ~16k page faults and the kernel
zeroing the pages before the compiled code writes them: on the 2-core reference
machine a 16M-element elementwise call took 11 ms instead of 7.5 ms. XLA and
PyTorch keep their own caching allocators for the same reason.

A result is an ndarray whose base is a `_Lease` (exposing the block through
`__array_interface__`). NumPy never collapses a view's base past a non-array
owner, so every view of the result keeps the lease alive; when the last one dies
the block goes back to the pool. Blocks are 64-byte aligned. The pool holds at
most POOL_BYTES of idle blocks (the oldest are released first), so a program
that stops calling gives the memory back after its results die.
"""
from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict

import numpy as np

MIN_BYTES = 1 << 20          # below this malloc's own free lists already reuse pages
POOL_BYTES = 1 << 30         # idle bytes kept at most
ALIGN = 64

_lock = threading.Lock()
_idle: OrderedDict = OrderedDict()      # id(block) -> (nbytes, block), oldest first
_idle_bytes = 0
# Blocks of dead leases on their way into _idle. A lease may die anywhere, the
# cyclic GC running inside the lock included, so its __del__ appends (atomic) and
# then only tries the lock: whoever holds it drains the list on its next call.
_returned: list = []


def _after_fork() -> None:
    """A child forked while another thread held the lock would never see it freed."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class _Lease:
    __slots__ = ("block", "nbytes", "__array_interface__", "__weakref__")

    def __init__(self, block: np.ndarray, nbytes: int, shape: tuple, dtype: np.dtype):
        self.block, self.nbytes = block, nbytes
        ptr = block.ctypes.data
        ptr += -ptr % ALIGN
        self.__array_interface__ = {"data": (ptr, False), "shape": shape,
                                    "typestr": dtype.str, "version": 3}

    # What a dying lease needs is bound here: at interpreter shutdown the module's
    # globals are cleared (to None) in an order of their own while results still
    # die, and a block then simply goes back to the allocator.
    def __del__(self, _finalizing=sys.is_finalizing, _returned=_returned):
        if _finalizing():
            return
        _returned.append((self.nbytes, self.block))
        lock = _lock                    # renewed in a forked child: read it now
        if lock.acquire(blocking=False):
            try:
                _drain()
            finally:
                lock.release()


def _drain() -> None:
    """Move returned blocks into the idle set, oldest out past POOL_BYTES (lock held)."""
    global _idle_bytes
    while _returned:
        nbytes, block = _returned.pop()
        _idle[id(block)] = (nbytes, block)
        _idle_bytes += nbytes
    while _idle_bytes > POOL_BYTES and _idle:
        _, (size, _block) = _idle.popitem(last=False)
        _idle_bytes -= size


def _take(nbytes: int):
    global _idle_bytes
    with _lock:
        _drain()
        for key in reversed(_idle):          # the latest is likeliest still in cache
            size, block = _idle[key]
            if size == nbytes:
                del _idle[key]
                _idle_bytes -= size
                return block
    return None


def _nbytes(shape: tuple, dtype: np.dtype) -> int:
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    return nbytes


def empty(shape: tuple, dtype) -> np.ndarray:
    """Like np.empty(shape, dtype) (C order, writeable), from the pool when large."""
    dtype = np.dtype(dtype)
    nbytes = _nbytes(shape, dtype)
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    block = _take(nbytes)
    if block is None:
        block = np.empty(nbytes + ALIGN, np.uint8)
    out = np.asarray(_Lease(block, nbytes, tuple(shape), dtype))
    # __array_interface__ knows only NumPy's own type codes: bfloat16 arrives as V2
    return out if out.dtype == dtype else out.view(dtype)


def allocator(shape: tuple, dtype):
    """The function to allocate results of this shape with: np.empty when small
    (chosen once per compiled entry, saving the size check on every call)."""
    return np.empty if _nbytes(shape, np.dtype(dtype)) < MIN_BYTES else empty


def idle_bytes() -> int:
    """Bytes the pool holds for reuse (for tests and diagnostics)."""
    with _lock:
        _drain()
        return _idle_bytes


def clear() -> None:
    """Release every idle block."""
    global _idle_bytes
    with _lock:
        _drain()
        _idle.clear()
        _idle_bytes = 0
