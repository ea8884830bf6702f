"""Shared helpers of jx.scipy.stats: JAX's argument promotion and lazy access to
jx.scipy.special (loaded on first use, so importing stats stays cheap)."""
from __future__ import annotations

from ... import numpy as jnp
from ...numpy import _util


def promote_inexact(*args) -> list:
    """JAX's promote_args_inexact: one inexact dtype for all arguments (integers and
    bools become the default float; Python scalars stay weak); shapes broadcast later."""
    return [jnp.asarray(a) for a in _util.promote_dtypes(*args, to_float=True)]


def special():
    from .. import special as sp
    return sp

