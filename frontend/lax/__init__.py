"""jx.lax: the primitives as functions, plus structured control flow.

Unlike jx.numpy these do no implicit promotion or broadcasting of arrays
(Python scalars are still accepted and take the other operand's dtype).
"""
from .ops import *  # noqa: F401,F403
from .sorting import sort, sort_key_val  # noqa: F401
from .control_flow import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .collectives import *  # noqa: F401,F403
