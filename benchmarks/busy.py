"""Spinners: processes that keep N cores busy while the engines are timed (--busy N).

    with Spinners(1) as spin:       # spin.pids: the spinning processes, all running
        ...                         # time the engines on a machine with a core taken

Each spinner is a separate Python process in a tight loop (a neighbour that never
sleeps, as another job on a shared machine). They run on the CPUs this process may
use (its affinity, which --threads narrows), and there are never more of them than
those CPUs. They are stopped when the block ends, however it ends (an exception,
Ctrl-C); if this process dies without cleaning up (SIGKILL), each spinner notices
that its parent is gone within a few milliseconds and exits by itself.
"""
from __future__ import annotations

import os
import subprocess
import sys

from . import machine as machine_mod

# The spinner: report that it runs, then spin until its parent (argv[1]) is gone.
# SIGINT's default action ends it quietly on a Ctrl-C from the terminal (no
# KeyboardInterrupt traceback from every spinner).
SPIN_CODE = """\
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
parent = int(sys.argv[1])
sys.stdout.write("spinning\\n")
sys.stdout.flush()
while os.getppid() == parent:
    for _ in range(100000):
        pass
"""

START_TIMEOUT_S = 30.0     # a spinner not running by then is an error
STOP_TIMEOUT_S = 5.0       # SIGTERM, then SIGKILL after this long


class SpinnerError(RuntimeError):
    pass


def max_spinners() -> int:
    """The most spinners allowed: the CPUs this process may run on."""
    return machine_mod.cores()


class Spinners:
    """A context manager holding n spinning processes (n = 0: none)."""

    def __init__(self, n: int):
        limit = max_spinners()
        if not 0 <= n <= limit:
            raise ValueError(f"cannot keep {n} cores busy: this process may run on "
                             f"{limit} core{'' if limit == 1 else 's'}, so choose 1 to "
                             f"{limit}")
        self.n = n
        self.procs: list = []

    @property
    def pids(self) -> list:
        return [p.pid for p in self.procs]

    def start(self) -> "Spinners":
        try:
            for _ in range(self.n):
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", SPIN_CODE, str(os.getpid())],
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, close_fds=True))
            for p in self.procs:          # each one is in its loop before we go on
                if not _ready(p):
                    raise SpinnerError(f"spinner process {p.pid} did not start "
                                       f"(exit status {p.poll()})")
        except BaseException:
            self.stop()
            raise
        return self

    def check(self) -> None:
        """Raise SpinnerError if a spinner has stopped (its busy figures would be wrong)."""
        dead = [(p.pid, p.returncode) for p in self.procs if p.poll() is not None]
        if dead:
            raise SpinnerError(f"spinner processes stopped early (pid, status): {dead}")

    def stop(self) -> None:
        """Terminate every spinner and reap it; safe to call more than once."""
        procs, self.procs = self.procs, []
        for p in procs:
            if p.poll() is None:
                try:
                    p.terminate()
                except OSError:
                    pass
        for p in procs:
            try:
                p.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()

    def __enter__(self) -> "Spinners":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _ready(p: subprocess.Popen) -> bool:
    """Wait (up to START_TIMEOUT_S) for the spinner's line saying it spins."""
    import selectors
    with selectors.DefaultSelector() as sel:
        sel.register(p.stdout, selectors.EVENT_READ)
        if not sel.select(START_TIMEOUT_S):
            return False
    return p.stdout.readline().strip() == b"spinning"
