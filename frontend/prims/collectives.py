"""Collective primitives over a named mapped axis (pmap's devices, or a vmap axis).

Every collective takes, after its data operand, the *axis index* of its axis: an
int32 scalar that is the device's position along the axis (a graph input of the
per-device program under pmap, an iota under vmap). Why an operand and not only
a param: it makes a collective's dependence on "which device am I" explicit in
the IR, so every pass that reasons from operands gets collectives right with no
special case -- vmap sees the collective as batched along its own axis even when
the data is not (psum(1, 'i') is a sum over the axis, not a constant), closure
conversion carries the index into loop bodies, and constant folding never fires.

Shapes are canonical: all_gather stacks on a new leading axis, all_to_all swaps
its leading axis (of the axis size) with the device axis. jx.lax.all_gather and
jx.lax.all_to_all add the axis / tiling moves around them.

The NumPy reference of a collective needs every device's value, so there is no
per-device eager impl: outside pmap/vmap the lax functions raise a clear error
before binding; the reference semantics are the batching rules (a collective
under vmap(axis_name=...)), which is how eager pmap runs.
"""
from __future__ import annotations

import numpy as np

from ..core import declare
from ..errors import JxError, ShapeError
from ..ir import ShapedArray

REDUCTIONS = ("psum", "pmax", "pmin")


def _check_index(name, idx):
    if idx.shape != () or idx.dtype != np.int32:
        raise ShapeError(f"the axis index operand of {name} must be an int32 scalar, got {idx}")


def _no_eager(name):
    def impl(*args, axis_name, **params):
        raise JxError(f"{name} over axis {axis_name!r} needs the values of every device on "
                      "that axis; it runs inside jx.pmap(f, axis_name=...) or "
                      "jx.vmap(f, axis_name=...), not on concrete arrays by itself")
    return impl


def _reduce_rule(name):
    def rule(x, idx, axis_name, size):
        _check_index(name, idx)
        if name == "psum" and x.dtype == np.bool_:
            raise ShapeError(f"psum of a bool array {x}: convert it to an integer type "
                             "first (x.astype(jnp.int32))")
        return x.strip_weak()
    return rule


psum, pmax, pmin = (declare(n, _reduce_rule(n), _no_eager(n)) for n in REDUCTIONS)


def _all_gather_rule(x, idx, axis_name, size):
    _check_index("all_gather", idx)
    return ShapedArray((size,) + x.shape, x.dtype)


all_gather = declare("all_gather", _all_gather_rule, _no_eager("all_gather"))


def _ppermute_rule(x, idx, axis_name, size, perm):
    _check_index("ppermute", idx)
    srcs = [s for s, _ in perm]
    dsts = [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ShapeError(f"ppermute perm {perm} must not repeat a source or a destination")
    bad = [i for i in srcs + dsts if not 0 <= i < size]
    if bad:
        raise ShapeError(f"ppermute perm {perm} names devices {bad} outside axis "
                         f"{axis_name!r} of size {size}")
    return x.strip_weak()


ppermute = declare("ppermute", _ppermute_rule, _no_eager("ppermute"))


def _all_to_all_rule(x, idx, axis_name, size):
    _check_index("all_to_all", idx)
    if not x.shape or x.shape[0] != size:
        raise ShapeError(f"all_to_all over axis {axis_name!r} (size {size}) needs a "
                         f"leading dimension of that size, got {x}")
    return x.strip_weak()


all_to_all = declare("all_to_all", _all_to_all_rule, _no_eager("all_to_all"))


def _axis_index_rule(idx, axis_name):
    _check_index("axis_index", idx)
    return ShapedArray((), np.int32)


axis_index = declare("axis_index", _axis_index_rule, lambda idx, axis_name: idx)

COLLECTIVES = frozenset({"psum", "pmax", "pmin", "all_gather", "ppermute", "all_to_all",
                         "axis_index"})
