"""Build a deployable artifact: a shared object (or, with static=True, a static
library) per model, with a C function per entry and the manifest embedded, and
its C header.

Every exported symbol carries the artifact's prefix (runtime/abi.py), and the
runtime linked in (the thread pool, collectives, compiler-runtime routines) is
hidden: in the shared object by visibility and a version script exporting the
prefixed names only, in the static library by merging every object into one
(`ld -r`) whose hidden symbols are then made local (`objcopy --localize-hidden`).
So any number of artifacts link into one program.

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
import time
from dataclasses import dataclass, field

from jx import timings
from jx.errors import JxError
from jx.runtime import cheader, elf, manifest as manifest_mod, treespec
from jx.runtime.abi import (ABI_VERSION, LEGACY_PREFIX, SHAPES_SUFFIX, SIGNATURE_SUFFIX,
                            artifact_symbols, entry_symbol)
from jx.version import __version__

from . import cache, compile_fork, compiler
from .native import version_script
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
    baked: list = field(default_factory=list)   # jx.bake's records of arguments stored inside
    # fixed-size versions of a symbolic entry: [({symbol: size}, program), ...]
    specialized: list = field(default_factory=list)


def _leaves(avals, tree, root_names=None) -> list:
    spec = treespec.decode(treespec.encode(tree))
    paths = treespec.leaf_paths(spec, root_names)
    return [{"shape": [d if isinstance(d, int) else str(d) for d in a.shape],
             "dtype": a.dtype.name, "path": p}
            for a, p in zip(avals, paths)]


def _dims_record(program, where: str) -> dict | None:
    """The manifest's "dims" of an entry with symbolic dimensions (manifest.py)."""
    from jx import dims
    shapes = [a.shape for a in program.graph.in_avals]
    symbols = dims.symbols_of(shapes)
    if not symbols:
        return None
    cons = program.constraints or dims.Constraints()
    try:
        read = dims.read_plan(shapes, symbols)
    except dims.DimensionSpecError as e:
        raise BuildError(f"{where}: {e}") from None
    return {"symbols": list(symbols), "read": read,
            "constraints": [{"name": n, "min": cons.spec(n).min, "max": cons.spec(n).max,
                             "multiple_of": cons.spec(n).multiple_of} for n in symbols]}


def program_hash(program) -> str:
    """sha256 of an entry's fused program as text (array constants by type only):
    `jx compile --check` names the entries whose code changed by it."""
    from jx.passes.fuse_print import format_program
    return hashlib.sha256(format_program(program).encode()).hexdigest()


# seconds emitting each entry's LLVM IR in the last build_module (`jx compile -v`
# and --json report them per entry); the module's own IR is the "emit" stage's rest
EMIT_SECONDS: dict = {}


def build_module(name: str, entries: list, cpu: str, triple: str,
                 parallel: bool = False, prefix: str | None = None,
                 routines: dict | None = None, parts: int = 1) -> tuple:
    """([LLVM IR text of each part, the first with the manifest embedded], manifest
    dict): the module in at most `parts` parts LLVM compiles side by side
    (split.py); the routines the module declares go into `routines` ({name: IR
    text or object}) when given."""
    prefix = prefix or default_prefix(name)
    from .target import host_triple
    # routines are found and kept by name for the host's triple (routines.py)
    mb = ModuleBuilder(name, parallel=parallel, cpu=cpu,
                       external_routines=triple == host_triple(), reloc="pic")
    records = []
    EMIT_SECONDS.clear()
    for e in entries:
        t0 = time.perf_counter()
        with timings.stage("emit"):
            symbol = mb.entry(e.name, e.program, prefix, e.specialized)
        EMIT_SECONDS[e.name] = time.perf_counter() - t0
        g = e.program.graph
        dims_record = _dims_record(e.program, f"entry {e.name!r}")
        if dims_record and e.specialized:
            dims_record["specialized"] = [values for values, _ in e.specialized]
        records.append({
            **({"dims": dims_record} if dims_record else {}),
            "name": e.name, "symbol": symbol, "arg_names": list(e.arg_names),
            "inputs": _leaves(g.in_avals, e.in_tree, e.arg_names),
            "outputs": _leaves(g.out_avals, e.out_tree),
            "in_tree": treespec.encode(e.in_tree), "out_tree": treespec.encode(e.out_tree),
            "code_sha256": program_hash(e.program),
            **({"baked": e.baked} if e.baked else {})})
    with timings.stage("emit"):
        texts = mb.texts(parts)
    if routines is not None:
        routines.update(mb.routines())
    from .target import required_features
    from . import tuning
    manifest = {"abi_version": ABI_VERSION, "jx_version": __version__, "target": triple,
                "cpu": cpu, "cpu_features": required_features(cpu), "prefix": prefix,
                # the host-measured constants the code was generated with (JX_TUNE=off:
                # the defaults), so `jx compile --check` can tell why two builds differ
                "tuning": {k: tuning.value(k) for k in sorted(tuning.DEFAULTS)},
                "entries": records}
    # (the parts in order: the split is a function of the module and `parts`, so
    # two builds on one host hash alike)
    manifest["content_hash"] = manifest_mod.content_hash(manifest, "".join(texts))
    texts[0] = mb.embed_manifest(manifest_mod.manifest_json(manifest), texts[0], prefix)
    return texts, manifest


def artifact_key(name: str, entries: list, cpu: str, triple: str, runtime_obj,
                 prefix: str) -> str | None:
    """Everything the artifact depends on, without building any IR: the fused
    programs' digests (jx.passes.program_key: constants by value), the entries'
    trees and names, and what code generation reads from the host
    (program_cache.host_parts: its feature set for a host build, its caches, its
    tuned constants; a cache directory shared between hosts must not hand one
    host's code to another). None when a program has no canonical form: such an
    artifact is built each time (its object still comes from the object cache)."""
    from . import program_cache
    from jx.passes.program_key import program_digest
    parts = [name, prefix, str(runtime_obj),
             *program_cache.host_parts(cpu, triple, "pic")]
    for e in entries:
        cons = e.program.constraints
        programs = [e.program] + [p for _, p in e.specialized]
        digests = [program_digest(p) for p in programs]
        if None in digests:
            return None
        parts += [e.name, str(e.in_tree), str(e.out_tree), ",".join(e.arg_names),
                  repr(e.baked), repr(cons.symbols_key() if cons else None), *digests]
        parts += [repr(sorted(v.items())) for v, _ in e.specialized]
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


def _support_objects(objs: list, runtime_obj, cpu: str, triple: str, shared: dict) -> tuple:
    """The objects linked beside the model's: jx's parallel runtime, its
    compiler-runtime routines and the routines the module declares (`shared`:
    {name: IR text or object}, each compiled once per host); every symbol the model's
    object needs must be defined by one of them or by the C library (symbols.py).
    shared[compiler.LIBCALLS] is the compiler-runtime routines' object."""
    from . import routines, symbols
    from .objsyms import global_symbols
    runtime_defined = frozenset()
    if runtime_obj:
        with open(runtime_obj, "rb") as f:
            runtime_defined = frozenset(global_symbols(f.read())[0])
    shared = dict(shared)
    pieces = [("jx_libcalls", shared.pop(compiler.LIBCALLS))]
    pieces += [(name.replace(".", "_"),
                compiler.routine_object(name, code, cpu, "pic", triple))
               for name, code in sorted(shared.items())]
    paths, defined = [], set()
    for label, data in pieces:
        path = os.path.join(cache.cache_dir(), "runtime",
                            f"{label}-{hashlib.sha256(data).hexdigest()[:16]}.o")
        cache.ensure_file(path, data)      # rewritten if missing or damaged
        paths.append(path)
        if label != "jx_libcalls":
            defined |= global_symbols(data)[0]
    routines.BUILT.update(defined)
    symbols.check(objs, symbols.for_artifact(runtime_defined | defined),
                  "the artifact's object")
    return ((runtime_obj,) if runtime_obj else ()) + tuple(paths)


def exported_symbols(manifest: dict) -> list:
    """Every symbol the artifact exports: its entries, their signatures, the
    manifest functions and the runtime's controls, all under its prefix."""
    names = []
    for e in manifest["entries"]:
        names += [e["symbol"], e["symbol"] + SIGNATURE_SUFFIX]
        if "dims" in e:
            names.append(e["symbol"] + SHAPES_SUFFIX)
    return names + list(artifact_symbols(manifest["prefix"]).values())


def _run(cmd: list, what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{what} failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")


def _write_objects(tmp: str, objs) -> list:
    """The model's object (bytes) or objects (its parts, split.py) as files in tmp."""
    paths = []
    for i, data in enumerate([objs] if isinstance(objs, bytes) else objs):
        paths.append(os.path.join(tmp, f"model{i}.o"))
        with open(paths[-1], "wb") as f:
            f.write(data)
    return paths


def link_shared(objs, out_path: str, extra_objects: tuple = (),
                exports: list | None = None) -> None:
    """Link the shared object from the model's object or objects (bytes or a list);
    with `exports`, only those symbols are visible (a version script) and its
    soname is its file name."""
    with tempfile.TemporaryDirectory(prefix="jx-link-") as tmp:
        obj_paths = _write_objects(tmp, objs)
        tmp_out = os.path.join(tmp, "model.so")
        cmd = [find_cc(), "-shared", "-o", tmp_out, *obj_paths, *extra_objects, "-pthread",
               "-lm", "-Wl,--build-id=none", "-Wl,-z,noexecstack"]
        if exports is not None:
            script = os.path.join(tmp, "exports.map")
            with open(script, "w") as f:
                f.write(version_script(exports))
            cmd += [f"-Wl,--version-script={script}",
                    f"-Wl,-soname,{os.path.basename(out_path)}"]
        _run(cmd, f"linking {out_path}")
        with open(tmp_out, "rb") as f:   # sealed: the loader checks every byte
            cache.replace_file(out_path, elf.seal(f.read()), 0o755)


def _binutil(env: str, names: tuple, purpose: str) -> str:
    tool = os.environ.get(env) or next(filter(None, map(shutil.which, names)), None)
    if not tool:
        raise BuildError(f"--static needs {names[0]} ({purpose}), which is not installed; "
                         f"install binutils (e.g. apt-get install binutils) or set {env}")
    return tool


def link_static(objs, out_path: str, extra_objects: tuple, exports: list) -> None:
    """Write a static library holding one object: the model's (its parts) merged with the
    runtime's (`cc -r`), every symbol but `exports` made local, so two such
    libraries (or one and a shared artifact) never clash in a program."""
    objcopy = _binutil("OBJCOPY", ("objcopy", "llvm-objcopy"), "to make the runtime's "
                       "symbols local to the library")
    ar = _binutil("AR", ("ar", "llvm-ar"), "to write the archive")
    stem = os.path.splitext(os.path.basename(out_path))[0]
    with tempfile.TemporaryDirectory(prefix="jx-link-") as tmp:
        obj_paths = _write_objects(tmp, objs)
        merged = os.path.join(tmp, stem + ".o")
        _run([find_cc(), "-nostdlib", "-r", "-o", merged, *obj_paths, *extra_objects],
             f"merging the objects of {out_path}")
        _run([objcopy, "--localize-hidden", merged], f"hiding the runtime in {out_path}")
        from .objsyms import global_symbols
        with open(merged, "rb") as f:
            defined, _ = global_symbols(f.read())
        stray = sorted(defined - set(exports))
        if stray:
            raise BuildError(f"{out_path} would define {', '.join(stray)} besides the "
                             "artifact's prefixed symbols; this is a jx bug: please report it")
        archive = os.path.join(tmp, "lib.a")
        _run([ar, "rcD", archive, merged], f"writing {out_path}")   # D: no dates, uids
        with open(archive, "rb") as f:
            cache.replace_file(out_path, f.read(), 0o644)


_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@functools.lru_cache(maxsize=None)
def _runtime_symbols() -> frozenset:
    """The names the runtime linked into every artifact defines (hidden, but one
    symbol of the model's object with the same name would still clash at link
    time): the C runtime's jx_/jxc_ names and the compiler-runtime routines."""
    from . import libcalls
    from .parallel import SOURCES
    names = set(libcalls.names())
    for src in SOURCES:
        with open(src) as f:
            names |= set(re.findall(r"\bjxc?_\w+", f.read()))
    return frozenset(names)


def default_prefix(name: str) -> str:
    """The symbol prefix of an artifact named `name` when none is given: the name
    made a C identifier (other characters become '_')."""
    prefix = re.sub(r"[^A-Za-z0-9_]", "_", name.encode("ascii", "replace").decode())
    return prefix if _C_IDENT.match(prefix) else "_" + prefix


def check_prefix(prefix: str) -> None:
    """BuildError for a prefix that is no C identifier or names jx's runtime."""
    if not isinstance(prefix, str) or not _C_IDENT.match(prefix):
        raise BuildError(f"prefix {prefix!r} is not a C identifier: every exported symbol "
                         "is <prefix>_<name>, so use ASCII letters, digits and underscores, "
                         "not starting with a digit (e.g. --prefix mlp_v2)")
    clash = sorted(set(artifact_symbols(prefix).values()) & _runtime_symbols())
    if clash:
        raise BuildError(f"prefix {prefix!r} is reserved: {clash[0]} names a function of "
                         "jx's runtime inside the artifact; choose another prefix")


def check_entry_names(entries: list, prefix: str = LEGACY_PREFIX) -> None:
    """BuildError for an entry name that is no C identifier or whose symbol is taken."""
    macros: dict = {}
    taken = set(artifact_symbols(prefix).values()) | _runtime_symbols()
    symbols: dict = {}
    for e in entries:
        other = macros.setdefault(e.name.upper(), e.name)
        if other != e.name:
            raise BuildError(f"entries {other!r} and {e.name!r} would share the C header's "
                             f"macro prefix {cheader.macro_prefix(prefix, e.name)}; rename "
                             "one of them")
        symbol = entry_symbol(e.name, prefix)
        if not _C_IDENT.match(e.name):
            raise BuildError(f"entry {e.name!r}: its C symbol would be {symbol!r}, which is "
                             "not a C identifier; rename the function (ASCII letters, digits, "
                             "underscores) or export it under another name")
        if symbol in taken:
            raise BuildError(f"entry {e.name!r}: its symbol {symbol} is one the artifact "
                             "already defines (manifest, runtime controls or runtime); rename "
                             "the function or choose another --prefix")
        signature = symbol + SIGNATURE_SUFFIX
        from jx.dims import symbols_of
        symbolic = bool(symbols_of(a.shape for a in e.program.graph.in_avals))
        for own in (symbol, signature) + ((symbol + SHAPES_SUFFIX,) if symbolic else ()):
            if own in symbols:
                raise BuildError(f"entries {symbols[own]!r} and {e.name!r} would both define "
                                 f"{own}; rename one of them")
            symbols[own] = e.name


def build_artifact(name: str, entries: list, out_dir: str, cpu: str | None = None,
                   triple: str | None = None, prefix: str | None = None,
                   static: bool = False) -> dict:
    """Write lib<name>.so (static: lib<name>.a, <name>.pc and <name>Config.cmake)
    and <name>.h into out_dir; returns their paths and the manifest. Exported
    symbols start with `prefix` (default: the name as a C identifier)."""
    prefix = default_prefix(name) if prefix is None else prefix
    check_prefix(prefix)
    check_entry_names(entries, prefix)
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
        lib_path = os.path.join(out_dir, f"lib{name}.{'a' if static else 'so'}")
        h_path = os.path.join(out_dir, f"{name}.h")
        files = {"library": lib_path, "header": h_path}
        key = artifact_key(name, entries, cpu, triple, runtime_obj, prefix)
        hit = not static and key is not None and \
            cache.load_files(key, {"so": lib_path, "h": h_path})
        if hit:
            manifest = _manifest_of(lib_path)
        else:
            shared: dict = {}
            # LLVM in forked children, started now to load it while the IR is emitted
            # (compile_fork.py); the split is the same whether or not they start
            children = compile_fork.early()
            try:
                texts, manifest = build_module(name, entries, cpu, triple,
                                               parallel=bool(runtime_obj), prefix=prefix,
                                               routines=shared, parts=compile_fork.parts())
                children = compile_fork.late(children, len(texts))
                # the header first: it validates the manifest, and nothing is written
                # when that fails (a library without its header would look like a
                # good build)
                header = cheader.header_text(manifest, os.path.basename(lib_path)).encode()
                shared[compiler.LIBCALLS] = compiler.libcalls_code(cpu, "pic", triple)
                objs, shared, _ = compiler.cached_objects(texts, cpu, triple, "pic",
                                                          children, shared)
            finally:
                if children is not None:
                    children.close()
            with timings.stage("link"):      # the C runtime's cc, the support objects, ld
                if runtime_obj and not runtime.wait():
                    raise BuildError("the C compiler failed on jx's parallel runtime "
                                     f"({runtime_obj}); check `cc --version` or set CC")
                support = _support_objects(objs, runtime_obj, cpu, triple, shared)
            try:
                with timings.stage("link"):
                    if static:
                        link_static(objs, lib_path, support, exported_symbols(manifest))
                        files.update(_package_files(name, manifest, out_dir))
                    else:
                        link_shared(objs, lib_path, support, exported_symbols(manifest))
                cache.replace_file(h_path, header, 0o644)
            except OSError as e:
                raise BuildError(f"cannot write into {out_dir} ({e.strerror}); pass -o a "
                                 "folder that can be written") from None
            if not static and key is not None:
                cache.store_files(key, {"so": lib_path, "h": h_path})
    finally:
        runtime.wait()             # never leave cc running or its folder behind
    with open(lib_path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return {**files, "manifest": manifest, "cache_hit": hit, "sha256": digest}


def _package_files(name: str, manifest: dict, out_dir: str) -> dict:
    """<name>.pc (pkg-config) and <name>Config.cmake (find_package) for the static
    library, both locating it relative to their own folder."""
    from . import packaging
    paths = {"pkgconfig": os.path.join(out_dir, f"{name}.pc"),
             "cmake": os.path.join(out_dir, f"{name}Config.cmake")}
    cache.replace_file(paths["pkgconfig"], packaging.pkg_config(name, manifest).encode(), 0o644)
    cache.replace_file(paths["cmake"], packaging.cmake_config(name, manifest).encode(), 0o644)
    return paths
