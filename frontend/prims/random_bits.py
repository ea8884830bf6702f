"""Counter-based random bits: the Threefry-2x32 block cipher as a primitive.

threefry2x32(k0, k1, x0, x1) encrypts the counter pairs (x0, x1) under the key
(k0, k1) with 20 rounds of Threefry-2x32 (Salmon et al., "Parallel random
numbers: as easy as 1, 2, 3", SC 2011), exactly as JAX does. All four operands
are uint32 of one shape (jx.random broadcasts the key); both outputs have that
shape. It is elementwise, so a backend can lower it like any other map;
`threefry2x32_expanded` spells it out in elementwise primitives for backends
(or passes) that would rather decompose it.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import bind_like, declare, get_aval
from ..errors import ShapeError
from ..ir import ShapedArray
from . import elementwise as ew
from . import structural as st

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KS_PARITY = 0x1BD11BDA     # key schedule constant of Threefish/Threefry


def _threefry_rule(k0, k1, x0, x1):
    avals = (k0, k1, x0, x1)
    for a in avals:
        if a.dtype != dtypes.uint32:
            raise ShapeError(f"operands must be uint32, got {', '.join(map(str, avals))}; "
                             "convert keys and counters with astype(uint32)")
    if len({a.shape for a in avals}) > 1:
        raise ShapeError(f"operands must have one shape, got {', '.join(map(str, avals))}; "
                         "broadcast the key to the counters' shape first")
    return [ShapedArray(x0.shape, dtypes.uint32), ShapedArray(x0.shape, dtypes.uint32)]


def _threefry_impl(k0, k1, x0, x1):
    """NumPy reference; uint32 arithmetic wraps modulo 2**32."""
    def rotl(v, r):
        return (v << np.uint32(r)) | (v >> np.uint32(32 - r))

    with np.errstate(over="ignore"):
        ks = (k0, k1, k0 ^ k1 ^ np.uint32(KS_PARITY))
        x0 = x0 + ks[0]
        x1 = x1 + ks[1]
        for i in range(5):           # 5 groups of 4 rounds, a key injection after each
            for r in ROTATIONS[i % 2]:
                x0 = x0 + x1
                x1 = rotl(x1, r) ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return [x0, x1]


threefry2x32 = declare("threefry2x32", _threefry_rule, _threefry_impl, multiple_results=True)


def threefry2x32_expanded(k0, k1, x0, x1) -> list:
    """threefry2x32 written with add/xor/or/shift primitives only (same bits).

    Operands are uint32 values of one shape (tracers or NumPy arrays).
    """
    like = [k0, k1, x0, x1]

    def b(prim, *args):
        return bind_like(like, prim, *args)[0]

    shape = get_aval(x0).shape

    def const(v):     # a broadcast scalar, not a shape-sized literal in the graph
        return bind_like(like, st.broadcast_in_dim, np.uint32(v), shape=shape,
                         broadcast_dimensions=())[0]

    def rotl(v, r):
        return b(ew.or_, b(ew.shift_left, v, const(r)),
                 b(ew.shift_right_logical, v, const(32 - r)))

    k2 = b(ew.xor, b(ew.xor, k0, k1), const(KS_PARITY))
    ks = (k0, k1, k2)
    x0 = b(ew.add, x0, k0)
    x1 = b(ew.add, x1, k1)
    for i in range(5):
        for r in ROTATIONS[i % 2]:
            x0 = b(ew.add, x0, x1)
            x1 = b(ew.xor, rotl(x1, r), x0)
        x0 = b(ew.add, x0, ks[(i + 1) % 3])
        x1 = b(ew.add, b(ew.add, x1, ks[(i + 2) % 3]), const(i + 1))
    return [x0, x1]
