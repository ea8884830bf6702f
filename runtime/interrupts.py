"""SIGINT for long native calls. The interpreter runs its signal handlers only
between bytecodes, so a 30 s kernel would hold Ctrl-C until it returns. jx's C
runtime (linked into every artifact, loaded once for jx.jit) chains a handler in
front of the process's that counts the request; compiled loops and the thread
pool look at the count and the call returns STATUS_CANCELLED, which the caller
turns into what the program's own handler raises."""
from __future__ import annotations

import ctypes

INSTALL_SYMBOL = "jx_install_interrupt_handler"


def watch(lib: ctypes.CDLL, symbol: str = INSTALL_SYMBOL) -> bool:
    """Chain lib's runtime handler (its function `symbol`: an artifact's is
    P_install_interrupt_handler) in front of the current SIGINT handler (again if
    the program replaced it since). False where lib has no runtime or SIGINT is
    ignored or left to kill the process. Chained handlers are never removed, which
    is safe because ctypes never unloads a library."""
    fn = getattr(lib, symbol, None)
    if fn is None:
        return False
    fn.restype, fn.argtypes = ctypes.c_int32, []
    return bool(fn())


def interrupted(what: str) -> BaseException:
    """The exception for a call that stopped because it was cancelled: the pending
    SIGINT handler runs now (the default one raises KeyboardInterrupt from here);
    if it raises nothing, a KeyboardInterrupt saying what stopped."""
    ctypes.pythonapi.PyErr_CheckSignals()
    return KeyboardInterrupt(f"{what} was interrupted before it finished (its outputs "
                             "are incomplete)")
