"""Every external symbol compiled code needs is resolved before the code can run.

An object may name three kinds of outside symbols: jx's parallel runtime
(`jx_parallel_for`, ...), the compiler-runtime routines LLVM calls instead of
emitting code (libcalls.py provides them all), and the C library (`malloc`,
`memcpy`, `fmod`, ...). Any other name is a backend bug that would otherwise
surface as a jump to address 0 at the first call, so it is a build error here,
naming the symbols.

`SEEN` records every object's needs in this process; the test suite asserts
afterwards that each was one jx provides.
"""
from __future__ import annotations

import ctypes
import functools

from jx.errors import JxError

from . import libcalls
from .objsyms import global_symbols

SEEN: dict = {}          # symbol -> the first object (its role) that needed it


class UnresolvedSymbolError(JxError):
    """Compiled code calls a function that nothing provides."""


@functools.lru_cache(maxsize=None)
def _c_libraries() -> tuple:
    libs = [ctypes.CDLL(None)]
    for name in ("libm.so.6", "libm.so"):
        try:
            libs.append(ctypes.CDLL(name))
            break
        except OSError:
            pass
    return tuple(libs)


def in_c_library(name: str) -> bool:
    """Is `name` a libc/libm function (artifacts link both)?"""
    return not name.startswith("__") and any(hasattr(lib, name) for lib in _c_libraries())


def check(obj, provided, what: str) -> set:
    """The object's undefined symbols, each of which `provided(name)` must accept;
    UnresolvedSymbolError naming those it does not. obj: an object, or the list
    of a module's parts (split.py), which define what they need of each other."""
    if isinstance(obj, (bytes, bytearray)):
        _, undefined = global_symbols(obj)
    else:
        tables = [global_symbols(o) for o in obj]
        undefined = set().union(*(u for _, u in tables)) - \
            set().union(*(d for d, _ in tables))
    for name in undefined:
        SEEN.setdefault(name, what)
    missing = sorted(n for n in undefined if not provided(n))
    if missing:
        raise UnresolvedSymbolError(
            f"{what} calls {', '.join(missing)}, which neither jx's runtime, its compiler-"
            "runtime routines (codegen/cpu/libcalls.py) nor the C library provide; this "
            "is a jx backend bug: please report it with the program that caused it. "
            "Running the code would jump to address 0.")
    return undefined


def for_artifact(runtime_defined: frozenset):
    """The symbols an artifact's object may leave to be resolved at link time
    (runtime_defined: what the objects linked beside it define)."""
    ours = libcalls.names() | runtime_defined
    return lambda name: name in ours or in_c_library(name)


def resolvable_in_process(name: str) -> bool:
    import llvmlite.binding as llvm
    return llvm.address_of_symbol(name) not in (None, 0)
