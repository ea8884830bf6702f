"""A child process that optimises LLVM IR and emits object code for its parent
(compiler.emit_object sends it a process's later compiles; see there why).

Requests and replies are pickled tuples on stdin/stdout, each after its length
(compiler.read_message/write_message, beside the parent's end). The parent is
the only peer: both ends are its pipes.
"""
from __future__ import annotations

import signal
import sys


def main() -> None:
    # Ctrl-C reaches the whole process group; the parent decides what it stops
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .compiler import emit_here, read_message, write_message
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr                 # nothing else may write into the reply pipe
    while (request := read_message(requests)) is not None:
        try:
            reply = ("ok", emit_here(*request))
        except Exception as e:              # a backend bug: the parent raises it
            reply = ("error", f"{type(e).__name__}: {e}")
        write_message(replies, reply)


if __name__ == "__main__":
    main()
