"""jx.lax: the primitives as functions, plus structured control flow.

Unlike jx.numpy these do no implicit promotion or broadcasting of arrays
(Python scalars are still accepted and take the other operand's dtype).
"""
from .ops import *  # noqa: F401,F403
