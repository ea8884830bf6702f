"""Forked children that run LLVM for jx.jit's cold compiles (native.build), one
module part each (split.py), side by side.

A cold first call spends about half its time in LLVM, which uses one core per
module and, through llvmlite, one thread per process. A child forked as soon as
the traced graph's key misses (jit.py), and, once the program is built, one more
per kernel up to one per core (a module splits along its kernels; for a single
kernel a second child would only compete for the cores: ~9 ms of a 60 ms first
call), first load LLVM (~20 ms, meanwhile) and then each optimise and emit one
part, so that:
  - the parts compile on as many cores as there are parts;
  - the parent never loads LLVM: a process whose compiles all go this way
    keeps neither llvmlite's per-compile leak (compiler.py) nor an LLVM crash;
  - a fork costs ~2 ms (a new interpreter, compile_worker.py's way, ~55 ms).

Requests and replies are compiler.read_message/write_message's framed pickles
over a pipe pair per child. A child that gets no request (the module had fewer
parts than children, or every part was in the object cache) sees end of input
and exits. Each child serves one request and exits with os._exit: nothing of the
parent's (atexit handlers, buffered files) runs twice.

Where forking is unsafe or impossible (no os.fork, an MPI process: some MPI
transports break in a forked child; other Python threads running), `start`
returns None and the caller compiles in this process (compiler.emit_object).
A process that has loaded LLVM forks only for modules of several parts (early,
late).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import warnings

from jx import timings

MAX_CHILDREN = 4
_EXITING: list = []          # pids of children ended but perhaps not yet reaped


def reap(block: bool = False) -> None:
    """Reap the ended children that have exited (block: wait for every one)."""
    for pid in list(_EXITING):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:        # reaped already (someone's os.wait)
            done = pid
        if done:
            try:
                _EXITING.remove(pid)
            except ValueError:           # (another thread reaped it meanwhile)
                pass


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parts() -> int:
    """Into how many parts a module is split here (split.py): one per core this
    process may run on, at most MAX_CHILDREN (each part costs a fork and a parse
    of the module's declarations)."""
    return max(1, min(MAX_CHILDREN, usable_cores()))


def wanted() -> int:
    """How many children a cold compile uses here: parts(), or 0 where children
    are not used: JX_COMPILE_FORK=0, no os.fork, an MPI process, or other Python
    threads running. (A child has only the forking thread: a lock another Python
    thread held at the fork, the import lock among them, stays held in it for
    good. Threads of C libraries, the runtime's pool or BLAS's, hold none it takes.)"""
    if os.environ.get("JX_COMPILE_FORK", "").strip() == "0" or not hasattr(os, "fork") \
            or "mpi4py.MPI" in sys.modules or threading.active_count() > 1:
        return 0
    return parts()


class Children:
    """n forked children, each waiting for one list of compile requests
    (compiler.emit_here's arguments) to answer with their objects."""

    def __init__(self, n: int):
        self.procs: list = []            # (pid, request fd, reply fd)
        try:
            for _ in range(n):
                self._fork()
        except OSError:                  # out of processes or memory: fewer children
            pass

    def _fork(self) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        with warnings.catch_warnings():  # (3.12+: fork with threads alive; see _serve)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            # every descriptor but its two pipe ends closed: one it kept of the
            # parent's (another child's request pipe, from any thread's compile)
            # would keep that child from seeing the end of its input
            try:
                _close_all_but(req_r, rep_w)
                _serve(req_r, rep_w)     # never returns
            finally:
                os._exit(1)
        os.close(req_r)
        os.close(rep_w)
        self.procs.append((pid, req_w, rep_r))

    def __len__(self) -> int:
        return len(self.procs)

    def compile(self, requests: list) -> list:
        """The object of each request (compiler.emit_here's arguments), the
        requests shared out over the children, largest first, each to the child
        with the least work so far; the children are done after it."""
        from .compiler import CompileWorkerError, read_message, write_message
        shares: list = [[] for _ in self.procs]
        loads = [0.0] * len(self.procs)
        work = [_work(r[0]) for r in requests]
        for i in sorted(range(len(requests)), key=lambda i: -work[i]):
            c = loads.index(min(loads))
            shares[c].append(i)
            loads[c] += work[i]
        try:
            for (pid, w, _), share in zip(self.procs, shares):
                if share:
                    try:
                        with os.fdopen(w, "wb", closefd=False) as f:
                            write_message(f, [requests[i] for i in share])
                    except BrokenPipeError:  # it died before reading: its reply is EOF
                        pass
            self._close_requests()
            import subprocess  # noqa: F401  (the link's, while the children compile)
            replies = []
            with timings.stage("llvm"):
                for (pid, _, r), share in zip(self.procs, shares):
                    if share:
                        with os.fdopen(r, "rb", closefd=False) as f:
                            replies.append((pid, share, read_message(f)))
        except BaseException:
            self.close(kill=True)
            raise
        self.close()
        out: list = [None] * len(requests)
        for pid, share, reply in replies:
            if reply is None:
                raise CompileWorkerError(
                    f"a process compiling with LLVM for jx (pid {pid}) died compiling a "
                    f"module for {requests[share[0]][1]}: an LLVM crash, or the process "
                    "was killed. Its messages, if any, are above; please report it with "
                    "the model")
            status, payload = reply
            if status != "ok":
                raise CompileWorkerError(f"LLVM could not compile a module jx generated "
                                         f"({payload}): a jx backend bug; please report it "
                                         "with the model")
            for i, data in zip(share, payload):
                out[i] = data
        return out

    def _close_requests(self) -> None:
        for i, (pid, w, r) in enumerate(self.procs):
            if w is not None:
                os.close(w)
                self.procs[i] = (pid, None, r)

    def close(self, kill: bool = False) -> None:
        """End every child (those without a request see end of input). A killed
        child is reaped now; one ending by itself is left to exit while this process
        goes on (an exit that unmaps LLVM takes ~4 ms) and reaped at the next start."""
        self._close_requests()
        for pid, _, r in self.procs:
            if kill:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            os.close(r)
            _EXITING.append(pid)
        self.procs = []
        reap(block=kill)

    def __del__(self):
        if getattr(self, "procs", None):
            self.close(kill=True)


def _work(ir_text: str) -> float:
    """LLVM's time for a module's text, roughly, in split.COST's unit: its fixed
    cost per optimised function defined, and split.COST_PER_CHAR per character."""
    from . import split
    return split.COST["optimised"][0] * ir_text.count("\ndefine ") + \
        split.COST_PER_CHAR * len(ir_text)


def start(n: int | None = None) -> Children | None:
    """Children for one cold compile, or None (none wanted here, or none forked)."""
    reap()
    n = wanted() if n is None else n
    if n <= 0:
        return None
    children = Children(n)
    return children if len(children) else None


def early(n: int | None = None) -> Children | None:
    """n children (default wanted()) forked before the IR is emitted, so that they
    load LLVM meanwhile: only where this process has not loaded it. Where it has (a
    later compile of a process that compiled in-process before, a test suite),
    children forked once the parts are known inherit it (late), and a module of
    one part compiles here, as a fork, a pipe and a child's first touches of the
    parent's memory cost more than they save on a small module (30 small
    functions: 62 ms a compile forked, 40 here)."""
    return None if "llvmlite.binding.ffi" in sys.modules else start(n)


def more(children: Children | None, n: int) -> Children | None:
    """children grown to n (at most wanted()) by forking the missing ones now; None
    stays None (no forking here, or LLVM loaded: see early)."""
    n = min(n, wanted())
    if children is not None:
        try:
            while len(children) < n:
                children._fork()
        except OSError:
            pass
    return children


def late(children: Children | None, n_parts: int) -> Children | None:
    """The children compiling a module of n_parts parts: those forked early, else,
    for a module of several parts, one per part forked now (or None: compile here)."""
    if children is not None or n_parts < 2:
        return children
    return start(min(n_parts, wanted()))


def _close_all_but(*keep: int) -> None:
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:                      # no /proc: the usual bound
        fds = range(3, 1024)
    for fd in fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _serve(req_r: int, rep_w: int) -> None:
    """A child's life: load LLVM, answer one request, exit. Only this thread
    exists here (the parent's others, such as its thread pool's, did not fork);
    it takes no lock they could have held but the allocator's, which fork
    handles, and LLVM's, which compiler's fork handlers hold across the fork."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # the parent decides what stops
        from .compiler import emit_here, read_message, write_message
        from .target import _llvm
        _llvm()                          # while the parent emits the IR
        with os.fdopen(req_r, "rb") as requests, os.fdopen(rep_w, "wb") as replies:
            request = read_message(requests)
            if request is not None:
                try:
                    reply = ("ok", [emit_here(*r) for r in request])
                except Exception as e:   # noqa: BLE001 - a backend bug: the parent raises it
                    reply = ("error", f"{type(e).__name__}: {e}")
                write_message(replies, reply)
        code = 0
    except BaseException:                # (the parent reports the death)
        import traceback
        traceback.print_exc()
    finally:
        os._exit(code)
