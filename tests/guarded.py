"""Test support: NumPy arrays that sit flush against a PROT_NONE guard page, and
a runner that executes groups of cases in child processes.

Compiled code must read only its inputs and write only its outputs. Ordinary
arrays live inside malloc'd memory, where a read one element past the end
returns garbage and a write corrupts a neighbour, both silently. Here every
array gets its own mapping, laid out as

    [guard page][data pages ...][guard page]

with the array placed against one of the guards: side="end" puts its last byte
on the last byte before the trailing guard (overruns fault), side="start" puts
its first byte right after the leading guard (underruns fault). The bytes of
the data pages the array does not cover are filled with a canary, so a stray
write that lands short of a guard is still found (`check_canary`). Inputs can
be made read-only (PROT_READ), so a write into an input faults as well.

A fault kills the process, so `run_group` runs each group of cases in a child
and turns a crash into a failure naming the case that was running.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import subprocess
import sys
import traceback

import numpy as np

PAGE = mmap.PAGESIZE
PROT_NONE = 0          # <sys/mman.h>; the mmap module lacks it
CANARY = 0xA5

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.mprotect.restype = ctypes.c_int
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


class GuardedBuffer:
    """One mapping holding one array; the array's base, so the mapping lives as
    long as the array or any view of it."""

    def __init__(self, shape: tuple, dtype, side: str):
        if side not in ("start", "end"):
            raise ValueError(f"side must be 'start' or 'end', got {side!r}")
        dtype = np.dtype(dtype)
        self.shape, self.dtype, self.side = tuple(shape), dtype, side
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * dtype.itemsize
        self.data_pages = max(1, -(-self.nbytes // PAGE))
        self.size = (self.data_pages + 2) * PAGE
        base = _libc.mmap(None, self.size, mmap.PROT_READ | mmap.PROT_WRITE,
                          mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if base in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), "mmap of a guarded buffer failed")
        self.base = base
        self.data_start = base + PAGE
        self.data_end = self.data_start + self.data_pages * PAGE
        ctypes.memset(self.data_start, CANARY, self.data_pages * PAGE)
        _check(_libc.mprotect(base, PAGE, PROT_NONE), "mprotect (leading guard)")
        _check(_libc.mprotect(self.data_end, PAGE, PROT_NONE), "mprotect (trailing guard)")
        self.ptr = self.data_end - self.nbytes if side == "end" else self.data_start
        self.readonly = False
        self.__array_interface__ = {"data": (self.ptr, False), "shape": self.shape,
                                    "typestr": dtype.str, "version": 3}

    def protect_readonly(self) -> None:
        """Make the data pages PROT_READ: compiled code writing the array faults."""
        _check(_libc.mprotect(self.data_start, self.data_pages * PAGE, mmap.PROT_READ),
               "mprotect (read-only data)")
        self.readonly = True
        self.__array_interface__ = dict(self.__array_interface__, data=(self.ptr, True))

    def slack(self) -> tuple:
        """(address, length) of the data pages' bytes outside the array."""
        if self.side == "end":
            return self.data_start, self.data_pages * PAGE - self.nbytes
        return self.data_start + self.nbytes, self.data_pages * PAGE - self.nbytes

    def canary_intact(self) -> bool:
        addr, n = self.slack()
        return n == 0 or ctypes.string_at(addr, n) == bytes([CANARY]) * n

    def __del__(self):
        if getattr(self, "base", None) is not None and _libc is not None:
            _libc.munmap(self.base, self.size)
            self.base = None


def guarded_empty(shape, dtype, side: str = "end", fill=None) -> np.ndarray:
    """An uninitialised (canary-filled, or `fill`ed) writable array against a guard page."""
    a = np.asarray(GuardedBuffer(tuple(shape), dtype, side))
    if fill is not None:
        a[...] = fill
    return a


def guarded_copy(x, side: str = "end", readonly: bool = True) -> np.ndarray:
    """A C-contiguous copy of x against a guard page, read-only unless asked."""
    x = np.asarray(x)
    buf = GuardedBuffer(x.shape, x.dtype, side)
    a = np.asarray(buf)
    a[...] = x
    if readonly:
        buf.protect_readonly()
        a = np.asarray(buf)
    return a


def buffer_of(a: np.ndarray) -> GuardedBuffer:
    """The GuardedBuffer behind a guarded array (or a view of one)."""
    b = a
    while isinstance(b, np.ndarray):
        b = b.base
    if not isinstance(b, GuardedBuffer):
        raise TypeError("not a guarded array")
    return b


def check_canary(a: np.ndarray, what: str) -> None:
    """AssertionError when something wrote the bytes beside the array."""
    buf = buffer_of(a)
    if not buf.canary_intact():
        addr, n = buf.slack()
        got = np.frombuffer(ctypes.string_at(addr, n), np.uint8)
        bad = np.flatnonzero(got != CANARY)
        edge = "before" if buf.side == "end" else "after"
        raise AssertionError(f"{what}: {bad.size} byte(s) {edge} the array were written "
                             f"(slack offsets {bad[:8].tolist()} of {n})")


# -- calling a C-ABI entry with caller-owned buffers ---------------------------

_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)


def call_entry(fn, inputs: list, outputs: list) -> int:
    """Call `int32_t entry(const void** inputs, void** outputs)` with these arrays
    (a ctypes function or an address); returns its status."""
    if not isinstance(fn, int):      # a CDLL attribute has no prototype: ints would be c_int
        fn = ctypes.cast(fn, ctypes.c_void_p).value
    fn = _ENTRY(fn)
    ins = (ctypes.c_void_p * max(1, len(inputs)))(*[a.ctypes.data for a in inputs])
    outs = (ctypes.c_void_p * max(1, len(outputs)))(*[a.ctypes.data for a in outputs])
    return fn(ctypes.addressof(ins), ctypes.addressof(outs))


# -- cases in child processes -----------------------------------------------------

def serve(cases_for, argv: list) -> int:
    """Child side: run the named group's cases, one protocol line per step on
    stdout (`start NAME`, `ok NAME`, `fail NAME: message`), so a crash is seen
    to happen in the case last started. cases_for(group) -> [(name, callable)];
    argv: [group, optionally a comma-separated list of cases to skip]."""
    group = argv[0]
    skip = set(argv[1].split(",")) if len(argv) > 1 and argv[1] else set()
    out = sys.stdout
    for name, case in cases_for(group):
        if name in skip:
            continue
        out.write(f"start {name}\n")
        out.flush()
        try:
            case()
        except Exception as e:  # noqa: BLE001 - reported to the parent, which fails
            msg = "".join(traceback.format_exception_only(type(e), e)).strip()
            out.write(f"fail {name}: " + msg.replace("\n", "\n    ") + "\n")
        else:
            out.write(f"ok {name}\n")
        out.flush()
    return 0


def run_group(script: str, group: str, timeout: float = 600, max_crashes: int = 4,
              env: dict | None = None) -> tuple:
    """Parent side: run `script group` in children until every case ran once.
    A child killed by a signal is restarted with the crashing case skipped (up
    to max_crashes times). Returns (number of cases passed, problems)."""
    problems, crashed, passed = [], [], 0
    while True:
        cmd = [sys.executable, "-X", "faulthandler", script, group, ",".join(crashed)]
        # the cases compare float64 data against float64 references: 64-bit mode
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "JAX_ENABLE_X64": "1", **(env or {})})
        current = None
        for line in r.stdout.splitlines():
            if line.startswith("start "):
                current = line[6:]
            elif line.startswith("ok "):
                passed, current = passed + 1, None
            elif line.startswith("fail "):
                problems.append(line[5:])
                current = None
            elif line.startswith("    ") and problems:
                problems[-1] += "\n" + line
        if r.returncode == 0:
            return passed, problems
        tail = "\n".join(r.stderr.strip().splitlines()[-25:])
        if current is None:      # died outside any case (import, build, exit code)
            problems.append(f"group {group!r}: child exited with {r.returncode}:\n{tail}")
            return passed, problems
        how = (f"signal {-r.returncode} ({_signal_name(-r.returncode)})"
               if r.returncode < 0 else f"exit status {r.returncode}")
        problems.append(f"{current}: the child process died with {how}; stderr:\n{tail}")
        crashed.append(current)
        if len(crashed) >= max_crashes:
            problems.append(f"group {group!r}: stopped after {len(crashed)} crashes")
            return passed, problems


def _signal_name(n: int) -> str:
    import signal
    try:
        return signal.Signals(n).name
    except ValueError:
        return "?"
