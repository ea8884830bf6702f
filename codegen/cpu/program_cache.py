"""Compiled code found by the fused program, before any LLVM IR is built.

The object cache (cache.py) keys code by its LLVM IR text, so a process had to
build and print a program's whole module just to find out that it had compiled it
before (for the attention block, ~40 ms of a ~110 ms cache hit). Here a jx.jit
program is keyed by what generates that IR instead (jit_key): the fused program's
digest (jx.passes.program_key), the entry's symbol, and every fact about the host
and the compiler that code generation reads (host_parts), jx's own sources among
them (cache.sources_fingerprint), so a changed code generator misses even at the
same version. The key names the shared object jx.jit loads (native.py); where
code is loaded with MCJIT instead, it leads to a small record in the cache's
`programs` folder: the IR key of the object and the shared routines it calls
(lookup, remember). A hit builds no IR; anything missing (an evicted object, a
routine not built on this host) is a miss, and the program is generated and
compiled as before.

JX_PROGRAM_CACHE=0 turns this off (objects are then found by their IR only), for
work on the code generator itself, whose patched state no key can see.
"""
from __future__ import annotations

import hashlib
import json
import os

from jx.passes.program_key import program_digest
from jx.version import __version__

from . import cache, target

FOLDER = "programs"


def host_parts(cpu: str, triple: str, reloc: str) -> list:
    """What code generation reads besides the program: the target and its exact
    LLVM feature string, the host's caches (the GEMM's blocking, tile sizes), the
    host-measured constants (tuning.py) and the versions of jx and LLVM."""
    import llvmlite

    from . import tuning
    return [cpu, triple, reloc, tuning.llvm_features(cpu),
            repr(sorted(target.cache_sizes().items())), repr(target.l1_geometry()),
            repr(sorted((k, tuning.value(k)) for k in tuning.DEFAULTS)),
            __version__, llvmlite.__version__, cache.sources_fingerprint()]


def enabled() -> bool:
    return os.environ.get("JX_PROGRAM_CACHE", "1").strip() != "0"


def jit_key(program, symbol: str, cpu: str, parallel: bool,
            reloc: str = "default") -> str | None:
    """The key of a jx.jit module holding one entry `symbol` for `program` (reloc:
    "pic", a shared object, native.py; "default", an MCJIT object), or None
    when the program has no canonical form (a param holding a Python object) or
    the program cache is off."""
    if not enabled():
        return None
    digest = program_digest(program)
    if digest is None:
        return None
    parts = ["jit", digest, symbol, f"parallel={bool(parallel)}",
             *host_parts(cpu, target.host_triple(), reloc)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def lookup(key: str, cpu: str) -> tuple | None:
    """(object, {routine name: object}) stored for key, or None (a miss)."""
    from .compiler import find_routine
    record = cache.load_record(key, FOLDER)
    if record is None:
        return None
    try:
        obj_key, names = record["object"], list(record["routines"])
    except (KeyError, TypeError):
        return None
    obj = cache.load(obj_key)
    if obj is None:
        return None
    routines = {}
    for name in names:
        routines[name] = find_routine(name, cpu, "default")
        if routines[name] is None:
            return None
    return obj, routines


def remember(key: str, object_key: str, routines) -> None:
    """Record that key's program compiled to the object under object_key, calling
    these routines."""
    record = {"object": object_key, "routines": sorted(routines)}
    cache.store_record(key, json.dumps(record, sort_keys=True).encode(), FOLDER)


# A traced graph's key leads to its program's key (above): the pass pipeline and
# fusion are functions of the graph, its constraints and jx's sources, so a hit
# skips them too (a gradient's passes were a third of its first call from the
# cache). Records live beside the programs' (a graph key is a digest of other
# text than a program key: they never meet).
def graph_key(graph, constraints, symbol: str, cpu: str, parallel: bool,
              reloc: str) -> str | None:
    """The key of a traced graph compiled as jx.jit entry `symbol` (with the same
    options as jit_key), or None (no canonical form, or the cache is off)."""
    if not enabled():
        return None
    from jx.passes.program_key import graph_digest
    digest = graph_digest(graph, constraints)
    if digest is None:
        return None
    parts = ["graph", digest, symbol, f"parallel={bool(parallel)}",
             *host_parts(cpu, target.host_triple(), reloc)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def program_of_graph(gkey: str) -> str | None:
    """The program key recorded for a graph key, or None."""
    record = cache.load_record(gkey, FOLDER)
    try:
        key = record["program"] if record is not None else None
    except (KeyError, TypeError):
        return None
    return key if isinstance(key, str) and len(key) == 64 else None


def remember_graph(gkey: str, program_key: str) -> None:
    cache.store_record(gkey, json.dumps({"program": program_key}).encode(), FOLDER)
