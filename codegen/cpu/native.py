"""jx.jit's modules as shared objects: a position-independent object linked by
`ld` with the routines and compiler-runtime routines it calls, kept in the cache
under the program's key and loaded with dlopen.

Loading code this way needs nothing of LLVM: a process whose programs are all
in the cache never imports llvmlite (~20 ms) nor builds an MCJIT engine per
module and routine (~10 ms), and linking costs ~3 ms where MCJIT's loading cost
more. Each library exports its entry symbols only (a version script): the
routines inside are its own, so any number of them load side by side (RTLD_LOCAL),
and the parallel runtime's symbols come from the runtime library, loaded
globally first (parallel.jit_library). Without `ld` or the runtime (no C
compiler), or with JX_JIT_LOADER=mcjit, jx.jit loads objects with MCJIT instead
(compiler.JitModule).

A library is written to a temporary name and renamed, with its sha256 recorded
beside it (cache.record_digest); one that fails the check is rebuilt.
"""
from __future__ import annotations

import _ctypes
import ctypes
import functools
import hashlib
import os
import shutil
import sys
import tempfile

from . import cache, target

FOLDER = "jit"
_DISABLED: list = []        # why this process stopped using shared objects, if it did


class LinkError(Exception):
    """ld could not link a jx.jit module (jx.jit then loads code with MCJIT)."""


def disable(reason) -> None:
    """Load jx.jit's code with MCJIT for the rest of the process (a cache folder
    that cannot hold executable files, a linker that fails), saying so once."""
    if not _DISABLED:
        import warnings
        warnings.warn(f"jx.jit cannot load its code as shared objects ({reason}); it "
                      "loads code with LLVM's MCJIT instead, which keeps working but "
                      "cannot skip LLVM's import on a cache hit. Set JX_CACHE_DIR to a "
                      "folder on a filesystem that allows executables, or "
                      "JX_JIT_LOADER=mcjit to silence this", stacklevel=4)
    _DISABLED.append(str(reason))


@functools.lru_cache(maxsize=None)
def linker() -> str | None:
    return os.environ.get("JX_LD") or shutil.which("ld") or shutil.which("ld.bfd")


def enabled() -> bool:
    """Whether jx.jit loads its code as shared objects here (see the module doc)."""
    if _DISABLED or linker() is None or \
            os.environ.get("JX_JIT_LOADER", "").strip().lower() == "mcjit":
        return False
    from . import parallel
    return parallel.jit_library() is not None


@functools.lru_cache(maxsize=None)
def _runtime() -> ctypes.CDLL:
    from . import parallel
    return ctypes.CDLL(parallel.jit_library())


def path_for(key: str) -> str:
    return os.path.join(cache.cache_dir(), FOLDER, key[:2], key + ".so")


class Library:
    """A loaded shared object of jx.jit code (the interface of compiler.JitModule).

    Unloaded (dlclose) when collected, as an MCJIT engine frees its code: ctypes
    never unloads a library, and a process that compiles many functions (a test
    suite, a server seeing new shapes) would otherwise keep every one mapped, up to
    the kernel's limit on mappings (vm.max_map_count, 65530)."""

    def __init__(self, path: str, cache_hit: bool):
        self.path, self.cache_hit = path, cache_hit
        self._lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)

    def address(self, symbol: str) -> int:
        return ctypes.cast(getattr(self._lib, symbol), ctypes.c_void_p).value

    def __del__(self, _finalizing=sys.is_finalizing, _dlclose=_ctypes.dlclose):
        # (at exit the process unmaps everything itself: nothing to unload, and
        # the pool's threads may still be parked in the runtime)
        lib, self._lib = getattr(self, "_lib", None), None
        if lib is not None and not _finalizing():
            try:
                _dlclose(lib._handle)
            except OSError:
                pass


def find(key: str) -> str | None:
    """The path of the library stored under key, or None (absent or damaged)."""
    path = path_for(key)
    if not cache.is_intact(path):
        return None
    cache._touch(path)
    return path


def build(key: str | None, texts: list, cpu: str, routines: dict, exports: list,
          children=None) -> Library:
    """Compile the module's parts (split.py; through the object cache, by the forked
    `children` when given: compile_fork.py) and link them with the routines they
    declare ({name: IR text or object}, ModuleBuilder(reloc="pic").routines) and the
    compiler-runtime routines; stored under key (None: under a digest of what was
    linked), loaded."""
    from jx import timings
    with timings.stage("import"):
        from . import compiler, symbols
    from .objsyms import global_symbols
    triple = target.host_triple()
    # (under a program key, the library is what a later process finds: the parts'
    # objects are stored only for a library keyed by them, key None)
    objs, shared, hit = compiler.cached_objects(
        texts, cpu, triple, "pic", children,
        {**routines, compiler.LIBCALLS: compiler.libcalls_code(cpu, "pic")},
        keep_parts=key is None)
    pieces = [shared.pop(compiler.LIBCALLS), *shared.values()]
    libcalls_defined, *routines_defined = [global_symbols(data)[0] for data in pieces]
    from . import routines as routines_mod
    routines_mod.BUILT.update(*routines_defined)
    defined = libcalls_defined.union(*routines_defined)
    runtime = _runtime()
    symbols.check(objs, lambda n: n in defined or hasattr(runtime, n) or
                  symbols.in_c_library(n), "a jx.jit module")
    if key is None:
        h = hashlib.sha256()
        for data in (*objs, *pieces):
            h.update(hashlib.sha256(data).digest())
        key = h.hexdigest()
    path = path_for(key)
    if not cache.is_intact(path):
        _link(path, [*objs, *pieces], exports)
    return Library(path, cache_hit=hit)


def version_script(exports) -> str:
    """A linker version script exporting `exports` and making every other symbol
    local (jx.jit's libraries here, artifacts in artifact.link_shared)."""
    return ("{\n  global:\n" + "".join(f"    {n};\n" for n in exports) +
            "  local: *;\n};\n")


def _link(path: str, pieces: list, exports: list) -> None:
    """ld's inputs handed over as memory files (/proc/self/fd/N: nothing created on
    disk but the library, ~3 ms less on a cold compile), or where there are none,
    as files in a temporary folder."""
    folder = os.path.dirname(path)
    cache.make_dir(folder)
    script = version_script(exports).encode()
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fds: list = []
        try:
            for data in (script, *pieces):
                fds.append(os.memfd_create("jx-link", 0))     # (inherited by ld)
                view = memoryview(data)
                while view:
                    view = view[os.write(fds[-1], view):]
            out = os.path.join(folder, f".jx-{os.getpid()}-{os.path.basename(path)}")
            _run_ld(out, f"/proc/self/fd/{fds[0]}", [f"/proc/self/fd/{fd}" for fd in fds[1:]])
        finally:
            for fd in fds:
                os.close(fd)
        os.replace(out, path)
    else:
        with tempfile.TemporaryDirectory(prefix=".jx-link-", dir=folder) as tmp:
            files = []
            for i, data in enumerate((script, *pieces)):
                files.append(os.path.join(tmp, f"{i}.o"))
                with open(files[-1], "wb") as f:
                    f.write(data)
            out = os.path.join(tmp, "module.so")
            _run_ld(out, files[0], files[1:])
            os.replace(out, path)
    cache.record_digest(path)
    cache._added([path, path + ".sha256"])     # (the size cap counts it)


def _run_ld(out: str, script: str, files: list) -> None:
    import subprocess            # (not on a cache hit's path: ~3 ms)
    try:
        proc = subprocess.run([linker(), "-shared", "-o", out, "--build-id=none",
                               "-z", "noexecstack", "-z", "now",
                               "-z", "noseparate-code",    # two mappings, not four
                               f"--version-script={script}", *files],
                              capture_output=True, text=True,
                              close_fds=False)   # (lets Python spawn it: ~2 ms less)
        if proc.returncode != 0:
            raise LinkError(f"{linker()} failed: {proc.stderr.strip()[:2000]}")
        os.chmod(out, 0o700)
    except BaseException:
        try:
            os.unlink(out)
        except OSError:
            pass
        raise
