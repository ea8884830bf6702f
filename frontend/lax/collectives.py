"""Collectives over named axes (JAX's jax.lax.psum & co.).

Each works inside a function mapped with `jx.pmap(f, axis_name=...)` or
`jx.vmap(f, axis_name=...)` and names the axis it combines over; a name that is
not bound raises an error naming it. Array arguments may be pytrees.

The axis environment lives here, beside the collectives that read it: while a
mapped function is traced, each named axis is bound to (size, index value),
where the index is a traced int32 scalar the collectives take as an operand (see
prims/collectives.py for why). jx.pmap and jx.vmap bind it (axis_frame,
axis_bound); keeping it at this layer lets both, and the collectives, share it
without importing each other.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Callable

import numpy as np

from .. import tree
from ..core import Tracer
from ..errors import JxError
from ..numpy import _util as U
from ..prims import collectives as C

# ---------------------------------------------------------------- axis environment

_ENV = threading.local()


def _frames() -> list:
    if not hasattr(_ENV, "frames"):
        _ENV.frames = []
    return _ENV.frames


@contextlib.contextmanager
def axis_frame(name, size: int, index):
    """Bind axis `name` (of `size` devices, this device's position `index`)."""
    frames = _frames()
    frames.append((name, int(size), index))
    try:
        yield
    finally:
        frames.pop()


def lookup_axis(name, what: str) -> tuple:
    """(size, index value) of the innermost binding of axis `name`."""
    if isinstance(name, (tuple, list)):
        raise JxError(f"{what}: give one axis name here, got {name!r}")
    for n, size, index in reversed(_frames()):
        if n == name:
            return size, index
    bound = [repr(n) for n, _, _ in _frames()]
    where = (f"the axes bound here are {', '.join(bound)}" if bound else
             "no axis is bound here: it is called outside any jx.pmap / jx.vmap "
             "with an axis_name")
    raise JxError(f"{what}: unbound axis name {name!r} ({where}). Collectives run inside "
                  f"jx.pmap(f, axis_name={name!r}) or jx.vmap(f, axis_name={name!r}); "
                  "check the spelling of the axis name.")


def axis_bound(f: Callable, axis_name, axis_size: int) -> Callable:
    """g(index, *args) = f(*args) with `axis_name` bound to the traced `index`;
    vmap traces g instead of f, with index = arange(axis_size) mapped at 0."""
    def g(index, *args, **kwargs):
        with axis_frame(axis_name, axis_size, index):
            return f(*args, **kwargs)
    g.__name__ = getattr(f, "__name__", "mapped")
    return g


# ---------------------------------------------------------------- collectives


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _reduce(prim, x, axis_name):
    def one(leaf):
        for name in _names(axis_name):
            size, index = lookup_axis(name, prim.name)
            if not isinstance(leaf, Tracer):       # the same value on every device
                leaf = np.asarray(leaf)
                leaf = leaf * np.asarray(size, leaf.dtype) if prim is C.psum else leaf
                continue
            leaf = U.bind1(prim, leaf, index, axis_name=name, size=size)
        return leaf
    return tree.tree_map(one, x)


def psum(x, axis_name):
    """Sum of x over the devices of `axis_name` (a name or a tuple of names)."""
    return _reduce(C.psum, x, axis_name)


def pmax(x, axis_name):
    """Elementwise maximum of x over the devices of `axis_name` (NaN propagates)."""
    return _reduce(C.pmax, x, axis_name)


def pmin(x, axis_name):
    """Elementwise minimum of x over the devices of `axis_name` (NaN propagates)."""
    return _reduce(C.pmin, x, axis_name)


def axis_size(axis_name) -> int:
    """Number of devices along `axis_name` (the product, for a tuple of names)."""
    n = 1
    for name in _names(axis_name):
        n *= lookup_axis(name, "axis_size")[0]
    return n


def pmean(x, axis_name):
    """Mean of x over the devices of `axis_name`: psum(x) / axis size."""
    n = axis_size(axis_name)
    from .. import numpy as jnp
    return tree.tree_map(lambda s: jnp.true_divide(s, n), psum(x, axis_name))


def axis_index(axis_name):
    """This device's position along `axis_name`, an int32 scalar in [0, size)."""
    size, index = lookup_axis(axis_name, "axis_index")
    return U.bind1(C.axis_index, index, axis_name=axis_name)


def _merge_with_next(x, axis: int):
    """x with dims axis and axis + 1 merged into one (a tiled collective's result)."""
    from .. import numpy as jnp            # jx.numpy imports jx.lax: not at the top
    shape = U.shape_of(x)
    return jnp.reshape(x, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])


def all_gather(x, axis_name, *, axis: int = 0, tiled: bool = False):
    """Every device's x, stacked along a new axis `axis` (ordered by device), or
    concatenated along the existing `axis` when tiled."""
    from .. import numpy as jnp

    def one(leaf):
        size, index = lookup_axis(axis_name, "all_gather")
        leaf = U.as_value(leaf)
        nd = len(U.shape_of(leaf))
        if tiled and nd == 0:
            raise JxError("all_gather(tiled=True) of a scalar: there is no axis to "
                          "concatenate along; use tiled=False")
        ax = U.canonical_axis(axis, nd if tiled else nd + 1)
        g = U.bind1(C.all_gather, leaf, index, axis_name=axis_name, size=size)
        g = jnp.moveaxis(g, 0, ax)
        return _merge_with_next(g, ax) if tiled else g
    return tree.tree_map(one, x)


def ppermute(x, axis_name, perm):
    """Send x from device src to device dst for each (src, dst) in perm; a device
    that receives nothing gets zeros."""
    try:
        pairs = tuple((int(s), int(d)) for s, d in perm)
    except (TypeError, ValueError):
        raise JxError(f"ppermute: perm must be a sequence of (source, destination) device "
                      f"index pairs, got {perm!r}") from None

    def one(leaf):
        size, index = lookup_axis(axis_name, "ppermute")
        return U.bind1(C.ppermute, U.as_value(leaf), index, axis_name=axis_name,
                       size=size, perm=pairs)
    return tree.tree_map(one, x)


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, tiled: bool = False):
    """Split x along split_axis into one chunk per device, send chunk j to device j,
    and put the received chunks (ordered by sender) along concat_axis: a new axis
    there (tiled=False, split_axis must have the axis size) or concatenated."""
    from .. import numpy as jnp

    def one(leaf):
        size, index = lookup_axis(axis_name, "all_to_all")
        leaf = U.as_value(leaf)
        shape = tuple(U.shape_of(leaf))
        s = U.canonical_axis(split_axis, len(shape))
        if tiled:
            if shape[s] % size:
                raise JxError(f"all_to_all(tiled=True): split axis {s} of {shape} is not "
                              f"divisible by the axis size {size}")
            leaf = jnp.reshape(leaf, shape[:s] + (size, shape[s] // size) + shape[s + 1:])
        elif shape[s] != size:
            raise JxError(f"all_to_all: split axis {s} of {shape} must have the size of "
                          f"axis {axis_name!r} ({size}), or pass tiled=True")
        y = U.bind1(C.all_to_all, jnp.moveaxis(leaf, s, 0), index, axis_name=axis_name,
                    size=size)
        rest = len(U.shape_of(y)) - 1
        c = U.canonical_axis(concat_axis, rest if tiled else rest + 1)
        y = jnp.moveaxis(y, 0, c)
        return _merge_with_next(y, c) if tiled else y
    return tree.tree_map(one, x)


__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "ppermute", "all_to_all",
           "axis_index", "axis_size"]
