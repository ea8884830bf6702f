"""A child process that optimises LLVM IR and emits object code for its parent
(compiler.emit_object sends it a process's later compiles; see there why).

Requests and replies are pickled tuples on stdin/stdout, each after its length
(8 bytes, little-endian). The parent is the only peer: both ends are its pipes.
"""
from __future__ import annotations

import pickle
import signal
import struct
import sys


def read_message(f):
    """The next message, or None at end of input."""
    head = f.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    body = f.read(n)
    if len(body) < n:
        return None
    return pickle.loads(body)


def write_message(f, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def main() -> None:
    # Ctrl-C reaches the whole process group; the parent decides what it stops
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .compiler import emit_here
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
