"""Build a deployable artifact: one shared object per model (a C function per
entry, the manifest embedded) and its C header.

LLVM emits a position-independent object; the system C compiler (`cc`) links
it into a shared object against libc only. The build is deterministic: the
same graphs, target and jx version give byte-identical files, and the object
code is cached on disk under that key, so repeated builds skip LLVM.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from jx.errors import JxError
from jx.runtime import cheader, elf, manifest as manifest_mod, treespec
from jx.runtime.abi import (ABI_VERSION, CHECKSUM_SYMBOL, MANIFEST_SYMBOL, VERSION_SYMBOL,
                            entry_symbol)
from jx.version import __version__

from . import cache, compiler
from .module import ModuleBuilder


class BuildError(JxError):
    """The artifact could not be built (no C compiler, link failure, ...)."""


@dataclass
class EntryProgram:
    name: str
    program: object            # passes.fuse.Program
    in_tree: object            # jx TreeDef of the positional arguments (a tuple)
    out_tree: object
    arg_names: list


def _leaves(avals, tree, root_names=None) -> list:
    spec = treespec.decode(treespec.encode(tree))
    paths = treespec.leaf_paths(spec, root_names)
    return [{"shape": list(a.shape), "dtype": a.dtype.name, "path": p}
            for a, p in zip(avals, paths)]


def build_module(name: str, entries: list, cpu: str, triple: str,
                 parallel: bool = False) -> tuple:
    """(LLVM IR text with the manifest embedded, manifest dict)."""
    mb = ModuleBuilder(name, parallel=parallel, cpu=cpu)
    records = []
    for e in entries:
        symbol = mb.entry(e.name, e.program)
        assert symbol == entry_symbol(e.name)
        g = e.program.graph
        records.append({
            "name": e.name, "symbol": symbol, "arg_names": list(e.arg_names),
            "inputs": _leaves(g.in_avals, e.in_tree, e.arg_names),
            "outputs": _leaves(g.out_avals, e.out_tree),
            "in_tree": treespec.encode(e.in_tree), "out_tree": treespec.encode(e.out_tree)})
    code = mb.text()
    from .target import required_features
    manifest = {"abi_version": ABI_VERSION, "jx_version": __version__, "target": triple,
                "cpu": cpu, "cpu_features": required_features(cpu), "entries": records}
    manifest["content_hash"] = manifest_mod.content_hash(manifest, code)
    return mb.embed_manifest(manifest_mod.manifest_json(manifest), code), manifest


def artifact_key(name: str, entries: list, cpu: str, triple: str, runtime_obj) -> str:
    """Everything the artifact depends on, without building any IR: the fused
    programs' text, the entries' trees and names, target and versions, and what
    codegen reads from the host (its feature set for a host build, its cache sizes
    and L1 geometry for the GEMM's blocking): a cache directory shared between
    hosts must not hand one host's code to another."""
    from jx.passes.fuse_print import format_program
    from . import target
    parts = [name, cpu, triple, str(runtime_obj), compiler.llvm_features(cpu),
             repr(sorted(target.cache_sizes().items())), repr(target.l1_geometry())]
    for e in entries:
        parts += [e.name, str(e.in_tree), str(e.out_tree), ",".join(e.arg_names),
                  format_program(e.program)]
    return cache.cache_key("\0".join(parts), cpu, triple)


def _manifest_of(so_path: str) -> dict:
    from jx.runtime import load
    return load(so_path).manifest


def find_cc() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or \
        shutil.which("clang")
    if not cc:
        raise BuildError("no C compiler found: jx links shared objects with the system C "
                         "compiler; install one (e.g. apt-get install gcc) or set CC")
    return cc


def _support_objects(obj: bytes, runtime_obj, cpu: str, triple: str) -> tuple:
    """The objects linked beside the model's: jx's parallel runtime and its
    compiler-runtime routines; every symbol the model's object needs must be
    defined by one of them or by the C library (symbols.py)."""
    from . import libcalls, symbols
    from .objsyms import global_symbols
    runtime_defined = frozenset()
    if runtime_obj:
        with open(runtime_obj, "rb") as f:
            runtime_defined = frozenset(global_symbols(f.read())[0])
    symbols.check(obj, symbols.for_artifact(runtime_defined), "the artifact's object")
    lib_obj, _ = compiler.cached_object(libcalls.module_ir(), cpu, triple)
    lib_path = os.path.join(cache.cache_dir(), "runtime",
                            f"jx_libcalls-{hashlib.sha256(lib_obj).hexdigest()[:16]}.o")
    cache.ensure_file(lib_path, lib_obj)      # rewritten if missing or damaged
    return ((runtime_obj,) if runtime_obj else ()) + (lib_path,)


def link_shared(obj: bytes, out_path: str, extra_objects: tuple = ()) -> None:
    with tempfile.TemporaryDirectory(prefix="jx-link-") as tmp:
        obj_path = os.path.join(tmp, "model.o")
        with open(obj_path, "wb") as f:
            f.write(obj)
        tmp_out = os.path.join(tmp, "model.so")
        cmd = [find_cc(), "-shared", "-o", tmp_out, obj_path, *extra_objects, "-pthread",
               "-lm", "-Wl,--build-id=none", "-Wl,-z,noexecstack"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"linking {out_path} failed ({' '.join(cmd)}):\n"
                             f"{proc.stderr.strip()}")
        with open(tmp_out, "rb") as f:   # sealed: the loader checks every byte
            cache.replace_file(out_path, elf.seal(f.read()), 0o755)


_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@functools.lru_cache(maxsize=None)
def _runtime_symbols() -> frozenset:
    """Every jx_ name the artifact defines besides its entries: the manifest
    functions and the C runtime's symbols, which an entry's jx_<name> would clash
    with at link time."""
    from .parallel import SOURCES
    names = {MANIFEST_SYMBOL, CHECKSUM_SYMBOL, VERSION_SYMBOL}
    for src in SOURCES:
        with open(src) as f:
            names |= set(re.findall(r"\bjx_\w+", f.read()))
    return frozenset(names)


def check_entry_names(entries: list) -> None:
    """BuildError for an entry name that is no C identifier or whose symbol is taken."""
    taken = None
    macros: dict = {}
    for e in entries:
        other = macros.setdefault(e.name.upper(), e.name)
        if other != e.name:
            raise BuildError(f"entries {other!r} and {e.name!r} would share the C header's "
                             f"macro prefix JX_{e.name.upper()}_; rename one of them")
        if not _C_IDENT.match(e.name):
            raise BuildError(f"entry {e.name!r}: its C symbol would be "
                             f"{'jx_' + e.name!r}, which is not a C identifier; rename the "
                             "function (ASCII letters, digits, underscores) or export it "
                             "under another name")
        taken = taken if taken is not None else _runtime_symbols()
        if entry_symbol(e.name) in taken:
            raise BuildError(f"entry {e.name!r}: its symbol {entry_symbol(e.name)} is one the "
                             "artifact already defines (manifest or runtime); rename the "
                             "function")


def build_artifact(name: str, entries: list, out_dir: str, cpu: str | None = None,
                   triple: str | None = None) -> dict:
    """Write lib<name>.so and <name>.h into out_dir; returns their paths and the manifest."""
    check_entry_names(entries)
    from .target import check_cpu, host_cpu, host_triple
    cpu = check_cpu(cpu) if cpu else host_cpu()
    triple = triple or host_triple()
    from .parallel import Build
    runtime = Build("object")      # the thread pool, linked in; cc runs meanwhile
    runtime_obj = runtime.path     # (None: no C compiler, serial code)
    try:
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as e:
            raise BuildError(f"cannot create the output folder {out_dir} ({e.strerror}); "
                             "pass -o a folder that can be written") from None
        so_path = os.path.join(out_dir, f"lib{name}.so")
        h_path = os.path.join(out_dir, f"{name}.h")
        key = artifact_key(name, entries, cpu, triple, runtime_obj)
        hit = cache.load_files(key, {"so": so_path, "h": h_path})
        if hit:
            manifest = _manifest_of(so_path)
        else:
            ir_text, manifest = build_module(name, entries, cpu, triple,
                                             parallel=bool(runtime_obj))
            # the header first: it validates the manifest, and nothing is written when
            # that fails (a library without its header would look like a good build)
            header = cheader.header_text(manifest, os.path.basename(so_path)).encode()
            obj, _ = compiler.cached_object(ir_text, cpu, triple)
            if runtime_obj and not runtime.wait():
                raise BuildError("the C compiler failed on jx's parallel runtime "
                                 f"({runtime_obj}); check `cc --version` or set CC")
            support = _support_objects(obj, runtime_obj, cpu, triple)
            try:
                link_shared(obj, so_path, support)
                cache.replace_file(h_path, header, 0o644)
            except OSError as e:
                raise BuildError(f"cannot write into {out_dir} ({e.strerror}); pass -o a "
                                 "folder that can be written") from None
            cache.store_files(key, {"so": so_path, "h": h_path})
    finally:
        runtime.wait()             # never leave cc running or its folder behind
    return {"library": so_path, "header": h_path, "manifest": manifest, "cache_hit": hit,
            "sha256": hashlib.sha256(open(so_path, "rb").read()).hexdigest()}
