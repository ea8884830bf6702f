"""The C runtime (cruntime/: the thread pool, pmap's collectives, the scratch
allocator), built with the system C compiler.

Artifacts link its object file (every symbol hidden: a program reaches the
controls through the artifact's prefixed forwarders, P_set_num_threads, ..., so
any number of models link into one program); jx.jit loads it as a shared
library (JX_VISIBLE) so the JIT resolves `jx_parallel_for`. Both builds are
cached by the sources' hash, each with its own sha256 recorded beside it: one
that no longer matches (a damaged disk, a build killed by something else) is
rebuilt before it is linked or loaded. Without a C compiler the backend emits
serial kernels (see available()).
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile

from . import cache
from .cache import cache_dir
from jx.runtime import interrupts

SOURCE = os.path.join(os.path.dirname(__file__), "cruntime", "jx_parallel.c")
# jx.pmap's collectives runtime is compiled into the same object and library.
# So is the scratch allocator of compiled calls (it uses jx_parallel.c's macros).
SOURCES = (SOURCE, os.path.join(os.path.dirname(__file__), "cruntime", "jx_collectives.c"),
           os.path.join(os.path.dirname(__file__), "cruntime", "jx_scratch.c"))


def _source_hash() -> str:
    h = hashlib.sha256()
    for path in SOURCES:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


class Build:
    """The runtime compiled as 'object' (for artifacts) or 'shared' (for the JIT).

    cc runs as a separate process started here, so a cold `jx compile` overlaps it
    with LLVM's work on the model and waits only when linking. `path` is where the
    result will be (None without a C compiler); wait() returns it, or None if cc
    failed."""

    def __init__(self, kind: str):
        self.path = self._proc = None
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc:
            return
        out_dir = os.path.join(cache_dir(), "runtime")
        self.path = os.path.join(out_dir, f"jx_parallel-{_source_hash()}."
                                          f"{'o' if kind == 'object' else 'so'}")
        if cache.is_intact(self.path):
            return
        cache.make_dir(out_dir)
        # Fixed file names in a private folder: the object records its source's name,
        # and a random temp name there would make artifacts differ between caches.
        self._tmp_dir = tempfile.mkdtemp(dir=out_dir)
        unity = os.path.join(self._tmp_dir, "jx_runtime.c")   # includes every source
        with open(unity, "w") as f:
            f.write("".join(f'#include "{path}"\n' for path in SOURCES))
        self._tmp = os.path.join(self._tmp_dir, os.path.basename(self.path))
        flags = ["-O2", "-fPIC", "-pthread"]
        cmd = [cc, *flags, "-c", unity] if kind == "object" else \
            [cc, *flags, "-DJX_VISIBLE", "-shared", unity]
        import subprocess            # (not on a cache hit's path: ~3 ms)
        self._proc = subprocess.Popen(cmd + ["-o", self._tmp], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)

    def wait(self) -> str | None:
        if self._proc is not None:
            ok = self._proc.wait() == 0
            if ok:        # cc's output follows the umask: 0o777 under umask 0
                os.chmod(self._tmp, 0o700 if self.path.endswith(".so") else 0o600)
                os.replace(self._tmp, self.path)
                cache.record_digest(self.path)
            shutil.rmtree(self._tmp_dir, ignore_errors=True)
            self._proc = None
            if not ok:
                self.path = None
        return self.path


@functools.lru_cache(maxsize=None)
def object_file() -> str | None:
    return Build("object").wait()


@functools.lru_cache(maxsize=None)
def jit_library() -> str | None:
    """Build and load the runtime into this process (once), its symbols global for
    the code loaded after it (jx.jit's shared objects, MCJIT's modules: see
    compiler.JitModule); None without cc."""
    path = Build("shared").wait()
    if path is None:
        return None
    import ctypes
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    return path


def watch_interrupts() -> None:
    """Let SIGINT cancel jx.jit calls (see jx.runtime.interrupts)."""
    import ctypes
    path = jit_library()
    if path is not None:
        interrupts.watch(ctypes.CDLL(path))


def available() -> bool:
    return jit_library() is not None


def set_num_threads(n: int) -> None:
    """Threads used by jx.jit-compiled code in this process (1 = serial)."""
    import ctypes
    path = jit_library()
    if path is not None:
        ctypes.CDLL(path).jx_set_num_threads(int(n))


def num_threads() -> int | None:
    """Threads a parallel region of jx.jit-compiled code uses (None without cc)."""
    import ctypes
    path = jit_library()
    return None if path is None else ctypes.CDLL(path).jx_get_num_threads()


def release_scratch() -> None:
    """Return the large scratch blocks jx.jit-compiled calls keep between calls
    (cruntime/jx_scratch.c) to the C library."""
    import ctypes
    path = jit_library()
    if path is not None:
        ctypes.CDLL(path).jx_release_scratch()
