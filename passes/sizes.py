"""How much code a fused equation costs, per element: what fusion weighs when it
decides to recompute a value, to cut a kernel (BODY_LIMIT) or to merge siblings.

A transcendental is a range reduction and a polynomial (~8 plain operations);
layout equations only move indices. LLVM's time grows faster than a function's
size, so no kernel body passes BODY_LIMIT units per element.
"""
from __future__ import annotations

EXPENSIVE = frozenset({"exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos",
                       "tan", "erf", "pow", "atan2", "sqrt", "rsqrt", "div", "rem"})
# layout equations: free to recompute
_FREE = frozenset({"broadcast_in_dim", "reshape", "squeeze", "expand_dims",
                   "convert_element_type", "transpose", "slice", "rev", "stop_gradient"})
TRANSCENDENTAL_SIZE = 8
BODY_LIMIT = 256
MAX_SIBLINGS = 8           # roots of one merged reduction: an accumulator each


def code_size(eqn) -> int:
    """Units of code one element of eqn takes in a fused body."""
    name = eqn.prim.name
    return TRANSCENDENTAL_SIZE if name in EXPENSIVE else (0 if name in _FREE else 1)
