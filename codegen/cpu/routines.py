"""Routines: functions whose body is fixed by their name and the target, the same
in every program that calls them (the math routines of mathcalls.py, GEMM's
panel packing and packed micro-kernel, the FFT's passes and twiddle fill),
compiled once per host and shared.

A CPU program's module only declares a routine; its definition goes into a
module of its own (`define`), which the JIT loads and an artifact links from the
cache's runtime folder, where it stays like the C runtime's build: a later
program, in any process, finds it compiled. Each copy inside every program's
module was LLVM work repeated per program (a 10-layer MLP gradient: its packing
routines were most of its compile time). A module that cannot call out (the
CUDA backend's NVPTX module, whose serial kernels share this code) keeps them
as internal functions of its own, as before.
"""
from __future__ import annotations

import re

import llvmlite.ir as ir

BUILT: set = set()       # names defined by routine objects this process loaded or linked


def external(module: ir.Module) -> bool:
    return module.__dict__.get("_jx_external_routines", False)


def define(module: ir.Module, name: str, ftype: ir.FunctionType) -> ir.Function | None:
    """The function to fill with routine `name`'s body, or None when there is
    nothing to fill: module has it already, or the host has its object compiled
    (found by name: the body is a function of the name and the target, so neither
    its IR nor its emission is needed). Module calls it by module.globals[name]
    either way: a declaration, or where routines stay inside, the internal
    definition itself."""
    if name in module.globals:
        return None
    if not external(module):
        fn = ir.Function(module, ftype, name)
        fn.linkage = "internal"
        return fn
    ir.Function(module, ftype, name)
    lookup = module.__dict__.get("_jx_routine_lookup")      # (compiler.find_routine)
    found = lookup(name) if lookup is not None else None
    table = module.__dict__.setdefault("_jx_routines", {})
    if found is not None:
        table[name] = found
        return None
    own = table[name] = ir.Module(name=name)
    own.jx_cpu = getattr(module, "jx_cpu", None)        # target-dependent lowerings read it
    return ir.Function(own, ftype, name)


def declare_beside(module: ir.Module, fn: ir.Function) -> ir.Function:
    """fn, defined in a routine's module next to the routine, as module sees it."""
    if fn.module is module:
        fn.linkage = "internal"
        return fn
    return module.globals.get(fn.name) or ir.Function(module, fn.ftype, fn.name)


def declared(module: ir.Module) -> dict:
    """{name: IR text to compile, or the object already compiled} for the routines
    module declares; their symbols are hidden (llvmlite prints no visibility on
    functions)."""
    return {name: own if isinstance(own, bytes) else
            re.sub(r"\ndefine (?!internal )", "\ndefine hidden ", str(own))
            for name, own in module.__dict__.get("_jx_routines", {}).items()}
