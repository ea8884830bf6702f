"""Materialising symbolic zeros and summing cotangents, staged with their peers."""
from __future__ import annotations

import numpy as np

from jx.core import Tracer, bind_like, get_aval
from jx.prims import elementwise as ew
from jx.prims import structural as st


def zeros(aval, like=()):
    """zeros of an abstract value: a broadcast scalar inside traces, an array outside."""
    scalar = np.zeros((), aval.dtype)
    if not any(isinstance(x, Tracer) for x in like):
        return np.zeros(aval.shape, aval.dtype)
    return bind_like(like, st.broadcast_in_dim, scalar, shape=aval.shape,
                     broadcast_dimensions=())[0]


def zeros_like(x):
    return zeros(get_aval(x).strip_weak(), [x])


def add_any(a, b):
    """Sum of two cotangents, either of which may be a symbolic zero (None)."""
    if a is None:
        return b
    if b is None:
        return a
    return bind_like((), ew.add, a, b)[0]


def stage_like(x, like):
    """x as a value of the trace of `like` (constants would otherwise make every rule
    applied to them run eagerly and land in the graph as big literal arrays)."""
    if isinstance(x, Tracer) or not any(isinstance(t, Tracer) for t in like):
        return x
    a = get_aval(x)
    return bind_like(like, st.broadcast_in_dim, np.asarray(x, a.dtype), shape=a.shape,
                     broadcast_dimensions=tuple(range(len(a.shape))))[0]
