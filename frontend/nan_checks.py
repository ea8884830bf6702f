"""jit's checked calls: jax_debug_nans / jax_debug_infs.

A compiled call runs as usual; when a float result holds a NaN (or an inf), the
function runs again un-jitted, where every primitive checks its own results
(core.check_finite), so the error names the first primitive that produced one
and the user's line, as JAX's "de-optimized" re-run does. If the re-run finds
nothing (the compiled code's NaN has no eager counterpart), the error names the
jitted function.
"""
from __future__ import annotations

from . import flags, tree
from .core import check_finite


def checked_call(call, fun, args, kwargs):
    out = call(*args, **kwargs)
    if flags.STATE.debug_nans or flags.STATE.debug_infs:
        name = f"jit({getattr(fun, '__name__', 'function')})"
        try:
            check_finite(name, tree.tree_leaves(out))
        except FloatingPointError:
            fun(*args, **kwargs)       # raises at the primitive, if eagerly reproducible
            raise
    return out
