"""Errors raised to users. Each names the thing, the place, and what to do instead."""
from __future__ import annotations

import sys


class JxError(Exception):
    """Base class of every error jx raises on purpose."""


class ShapeError(JxError, TypeError):
    """Operands whose shapes or dtypes do not fit a primitive's rule."""


class EmptyReductionError(JxError, ValueError):
    """A reduction without an identity (max, min) over an axis of size 0."""


class MaskedArrayError(JxError, ValueError):
    """A numpy.ma.MaskedArray given to jx, which would silently drop its mask."""


def reject_masked(x, what: str) -> None:
    """Refuse masked arrays (as JAX does) instead of computing on their hidden data."""
    if type(x).__name__ == "MaskedArray" and type(x).__module__.startswith("numpy.ma"):
        where = user_location()
        raise MaskedArrayError(
            f"{what} is a NumPy masked array (numpy.ma.MaskedArray)"
            + (f" (at {where})" if where else "") + "; jx, like JAX, does not take masked "
            "arrays: their mask would be silently dropped. Pass x.filled(value) for a plain "
            "array, or the data and the mask as two arrays (np.ma.getdata(x), "
            "np.ma.getmaskarray(x)) and combine them with jx.numpy.where")


class TracerConversionError(JxError, TypeError):
    """Python control flow or a concrete conversion applied to a traced value."""


class EscapedTracerError(JxError):
    """A traced value used after the trace that made it has finished."""


class MissingRuleError(JxError, NotImplementedError):
    """A pass has no rule for a primitive."""


class VerifyError(JxError):
    """The IR verifier found an ill-formed graph."""


class NotInJx(JxError, AttributeError, NotImplementedError):
    """A name JAX has that jx does not (yet). An AttributeError, so hasattr() and
    getattr(..., default) still answer False/default; a NotImplementedError, so it
    reads as what it is."""


def missing_name(module: str, name: str, jax_only, nearest: dict, why: str = ""):
    """The error for `module.name`: NotInJx naming JAX's counterpart and jx's nearest
    equivalent for a name JAX has, a plain AttributeError for any other name."""
    jax_module = "jax" + module[2:]
    if name not in jax_only:
        return AttributeError(f"module {module!r} has no attribute {name!r}")
    hint = f"; use {nearest[name]}" if name in nearest else ""
    return NotInJx(f"{module}.{name} ({jax_module}.{name}) is {why or 'not implemented yet'}"
                   f"{hint}")


class OutOfMemoryError(JxError, MemoryError):
    """A compiled function's results or scratch memory could not be allocated."""


_SKIPPED: dict = {}      # (module name, skip_prefixes) -> whether it is jx's own


def _skipped(frame, skip_prefixes) -> bool:
    """Whether frame runs in a module named by skip_prefixes (jx's own, not the
    user's). Asked for every traced equation (user_location): each module's verdict
    is kept (a few jx frames deep, the prefix tests were a tenth of a trace)."""
    mod = frame.f_globals.get("__name__", "")
    skip = _SKIPPED.get((mod, skip_prefixes))
    if skip is None:
        skip = _SKIPPED[(mod, skip_prefixes)] = \
            any(mod == p or mod.startswith(p + ".") for p in skip_prefixes)
    return skip


def user_location(skip_prefixes=("jx", "contextlib", "functools")) -> str | None:
    """file:line of the innermost frame outside jx itself (the user's code)."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _skipped(frame, skip_prefixes):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def warn_user(message: str, category=UserWarning,
              skip_prefixes=("jx", "contextlib", "functools")) -> None:
    """warnings.warn attributed to the user's line (the first frame outside jx), so
    the warning filter shows it once per line of theirs, not once per jx line."""
    import warnings
    frame, level = sys._getframe(1), 2
    while frame is not None and _skipped(frame, skip_prefixes):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
