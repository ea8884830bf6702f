"""A module's definitions split into parts that LLVM compiles side by side, one
object each (compile_fork.py, compiler.cached_objects), linked together
afterwards (native.py for jx.jit, artifact.py for `jx compile`).

LLVM is single-threaded per module and llvmlite serialises its calls in a
process, so the only way to use a second core on a cold compile is a second
process over part of the module. LLVM has no module splitter that llvmlite
exposes; the split is made here, on the llvmlite.ir module before printing:
each part is the whole module with the other parts' function bodies left out
(printed as declarations). Small module-local constants are printed in every
part, each object keeping those its functions use; a large one is defined by
the part that uses it first and declared by the others (LARGE_BYTES).

Functions are split along the call graph's cheap edges only: an internal
function goes with everything it references (a kernel with its outlined
parallel body and helpers), so LLVM sees the same call graph inside each part
as in the whole; only exported functions (entries, which run unoptimised: irutil.plain)
call across parts. An internal function called from another part becomes a
hidden global: the linker resolves it, and the shared object still exports
its entries only (the version script).
"""
from __future__ import annotations

import contextlib

import llvmlite.ir as ir

# LLVM's time for a function, in ms on the 2-core EPYC the figures come from: a
# fixed cost (the function and loop pass pipelines, instruction selection) and a
# cost per instruction; an optnone function (irutil.plain) skips the optimiser.
# A least-squares fit over the functions of four sample programs, each compiled
# alone (mean error 30%: loops weigh more than their instruction count says).
# Only the ratios matter for balancing; MIN_COST is in the same unit.
COST = {"optimised": (8.0, 0.047), "plain": (1.0, 0.022)}
# The same fit by text length, for a module only seen as text (a routine's IR):
# per character of the printed IR (compile_fork.py, with the fixed cost above).
COST_PER_CHAR = 0.0005
# A module estimated under this is compiled whole: a part costs a fork, a pipe
# round trip and a parse of the module's declarations.
MIN_COST = 25.0
# Nor is one whose largest part would still hold this share of the work.
MAX_SHARE = 0.85


def _cost(fn: ir.Function) -> float:
    fixed, per = COST["plain" if "optnone" in fn.attributes else "optimised"]
    return fixed + per * sum(len(b.instructions) for b in fn.blocks)


def references(module: ir.Module) -> dict:
    """{function: the names of the module's defined functions and large constants
    its instructions reference}, for each defined function: read once for plan and
    texts (a walk over every instruction, ~15 ms on a large gradient)."""
    known = {**_functions(module), **_large(module)}
    out = {}
    for name, fn in _functions(module).items():
        refs = out[name] = set()
        for block in fn.blocks:
            for ins in block.instructions:
                for op in getattr(ins, "operands", ()):
                    if isinstance(op, ir.GlobalValue) and op.name in known:
                        refs.add(op.name)
    return out


# A module-local constant this large is defined in one part and declared in the
# others (each object would otherwise carry its own copy); a smaller one is
# printed in every part, where LLVM can still fold its values into the code.
LARGE_BYTES = 4096


def _nbytes(t) -> int:
    if isinstance(t, ir.ArrayType):
        return t.count * _nbytes(t.element)
    if isinstance(t, ir.LiteralStructType):
        return sum(_nbytes(e) for e in t.elements)
    return max(1, getattr(t, "width", 64) // 8) if isinstance(t, ir.IntType) else 8


def _large(module: ir.Module) -> dict:
    """{name: global} of the module's large module-local initialised variables."""
    return {g.name: g for g in module.global_values
            if isinstance(g, ir.GlobalVariable) and g.initializer is not None and
            g.linkage in ("internal", "private") and not g.section and
            _nbytes(g.value_type) >= LARGE_BYTES}


def _functions(module: ir.Module) -> dict:
    """{name: function} of the module's definitions, in module order."""
    return {f.name: f for f in module.functions if f.blocks}


def plan(module: ir.Module, parts: int, min_cost: float,
         refs: dict | None = None) -> list | None:
    """The defined functions' names in at most `parts` lists of balanced cost, or
    None when the module is not worth splitting: its estimated cost is under
    min_cost, or one call-graph component holds most of it. refs: references(module)."""
    defined = _functions(module)
    if parts < 2 or len(defined) < 2:
        return None
    cost = {name: _cost(f) for name, f in defined.items()}
    if sum(cost.values()) < min_cost:
        return None
    parent = {name: name for name in defined}

    def root(n):
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    refs = references(module) if refs is None else refs
    for name, f in defined.items():
        if f.linkage in ("internal", "private"):
            for other in refs[name]:
                if other in defined:
                    parent[root(other)] = root(name)
    groups: dict = {}
    for name in defined:                # (module order: the same plan every time)
        groups.setdefault(root(name), []).append(name)
    units = sorted(groups.values(), key=lambda g: -sum(cost[n] for n in g))
    bins = [[0.0, []] for _ in range(parts)]
    for unit in units:                  # longest processing time first
        b = min(bins, key=lambda b: b[0])
        b[0] += sum(cost[n] for n in unit)
        b[1].extend(unit)
    loads = [b[0] for b in bins if b[1]]
    if len(loads) < 2 or max(loads) > MAX_SHARE * sum(loads):
        return None
    order = {name: i for i, name in enumerate(defined)}
    return [sorted(b[1], key=order.__getitem__) for b in bins if b[1]]


def texts(module: ir.Module, plan_: list, refs: dict | None = None) -> list:
    """The IR text of each part of plan_ (plan's lists of function names).
    refs: references(module)."""
    functions, large = _functions(module), _large(module)
    refs = references(module) if refs is None else refs
    part_of = {name: i for i, names in enumerate(plan_) for name in names}
    crossing, owner = set(), {}
    for name in functions:
        for other in refs[name]:
            if other in large:
                owner.setdefault(other, part_of[name])
            elif part_of[other] != part_of[name] and \
                    functions[other].linkage in ("internal", "private"):
                crossing.add(other)
    out = []
    for i, names in enumerate(plan_):
        with _only(module, set(names), crossing,
                   {n: g for n, g in large.items() if owner.get(n, 0) == i},
                   {n: g for n, g in large.items() if owner.get(n, 0) != i}):
            out.append(str(module))
    return out


@contextlib.contextmanager
def _only(module: ir.Module, keep: set, crossing: set, owned: dict, declared: dict):
    """The module printing only `keep`'s function bodies (the others declared),
    the functions in `crossing` (internal, called across parts) as hidden globals,
    the large constants it owns as hidden globals and the others' declared."""
    saved = []
    for f in _functions(module).values():
        saved.append((f, f.blocks, f.linkage, f.storage_class))
        local = f.linkage in ("internal", "private")
        if f.name not in keep:
            f.blocks = []           # (a declaration cannot be internal: hidden)
        if local and (f.name in crossing or f.name not in keep):
            f.linkage = "hidden"
    for g in (*owned.values(), *declared.values()):
        saved.append((g, g.initializer, g.linkage, g.storage_class))
        g.linkage, g.storage_class = "", "hidden"
    for g in declared.values():
        g.initializer, g.linkage = None, "external"
    _forget_text(owned, declared)
    try:
        yield
    finally:
        for v, body, linkage, storage in saved:
            if isinstance(v, ir.Function):
                v.blocks = body
            else:
                v.initializer = body
            v.linkage, v.storage_class = linkage, storage
        _forget_text(owned, declared)


def _forget_text(*groups) -> None:
    # llvmlite keeps a global variable's text once printed (functions it prints anew)
    for group in groups:
        for g in group.values():
            getattr(g, "_clear_string_cache", lambda: None)()
