"""Row fusion: consecutive loop/reduce kernels over the same leading "row" dims
run together, one row at a time, so a softmax or layernorm row is read from
memory once and re-read from cache by the kernels that follow.

A kernel may join a group when its loops start with the group's row dims (a
reduction must reduce only dims after them) and every value it reads from an
earlier kernel of the group is read at the current row. The second condition
is checked symbolically: each leading index of the consumer is followed through
the fused layout ops (broadcast, unit-dim reshapes, transpose, ...) to the
producer's buffer; anything not provably "same row" keeps the kernels apart.
"""
from __future__ import annotations

from jx.ir import Literal, Var

OTHER = ("other",)


def _row(d: int):
    return ("row", d)


def _reads(kernel, nrow: int, targets=None) -> dict:
    """{id(Var): [symbolic index tuples it is read at]} for one kernel's buffers
    (or for the given target Vars, followed through the fused equations)."""
    producer = {id(v): e for e in kernel.eqns for v in e.outputs}
    inputs = {id(v) for v in kernel.inputs} if targets is None else set(targets)
    reads: dict = {}

    def visit(atom, idx):
        if isinstance(atom, Literal):
            return
        if id(atom) in inputs:
            reads.setdefault(id(atom), []).append(tuple(idx))
            return
        eqn = producer.get(id(atom))
        if eqn is None:
            return
        for operand, sub in _operand_indices(eqn, idx):
            visit(operand, sub)

    root = kernel.root
    out = root.outputs[0]
    if kernel.kind == "reduce":
        for r in kernel.roots:          # merged siblings: one domain, several operands
            (x,) = r.inputs
            axes = r.params["axes"] if "axes" in r.params else (r.params["axis"],)
            kept = [d for d in range(x.aval.ndim) if d not in axes]
            idx = [OTHER] * x.aval.ndim
            for i, d in enumerate(kept):
                idx[d] = _row(i) if i < nrow else OTHER
            visit(x, idx)
    else:
        visit(out, [_row(d) if d < nrow else OTHER for d in range(out.aval.ndim)])
    return reads


def _operand_indices(eqn, idx):
    """(operand, symbolic index) pairs of one fused equation read at idx."""
    name = eqn.prim.name
    if name == "broadcast_in_dim":
        (x,) = eqn.inputs
        shape = eqn.params["shape"]
        return [(x, [("zero",) if x.aval.shape[i] == 1 and shape[d] != 1 else idx[d]
                     for i, d in enumerate(eqn.params["broadcast_dimensions"])])]
    if name in ("reshape", "squeeze", "expand_dims"):
        (x,) = eqn.inputs
        out_shape = eqn.outputs[0].aval.shape
        if [n for n in x.aval.shape if n != 1] != [n for n in out_shape if n != 1]:
            return [(x, [OTHER] * x.aval.ndim)]
        kept = iter([i for i, n in zip(idx, out_shape) if n != 1])
        return [(x, [("zero",) if n == 1 else next(kept) for n in x.aval.shape])]
    if name == "transpose":
        (x,) = eqn.inputs
        sub = [None] * x.aval.ndim
        for out_d, in_d in enumerate(eqn.params["permutation"]):
            sub[in_d] = idx[out_d]
        return [(x, sub)]
    if name == "iota":
        return []
    same_shape = all(a.aval.shape == eqn.outputs[0].aval.shape for a in eqn.inputs)
    if name in ("slice", "rev", "pad", "concatenate", "dynamic_slice") or not same_shape:
        return [(a, [OTHER] * a.aval.ndim) for a in eqn.inputs]
    return [(a, idx if a.aval.shape else []) for a in eqn.inputs]   # elementwise


def _fits(kernel, rows: tuple) -> bool:
    if kernel.kind not in ("loop", "reduce") or \
            (len(kernel.outputs) != 1 and not kernel.siblings):
        return False
    out = kernel.outputs[0].aval.shape
    if tuple(out[:len(rows)]) != rows:
        return False
    if kernel.kind == "reduce":
        root = kernel.root
        axes = root.params["axes"] if "axes" in root.params else (root.params["axis"],)
        return all(a >= len(rows) for a in axes)
    return True


def _rows_of(kernel) -> tuple:
    """The row dims a group starting with this kernel would use."""
    out = kernel.outputs[0].aval.shape
    return tuple(out) if kernel.kind == "reduce" else tuple(out[:-1])


def row_groups(program) -> list:
    """Partition program.kernels (in order) into lists; lists of length > 1 are
    row-fused groups, each as (rows, kernels)."""
    groups: list = []
    kernels = program.kernels
    i = 0
    while i < len(kernels):
        k = kernels[i]
        rows = _rows_of(k) if k.kind in ("loop", "reduce") and k.outputs else ()
        members = [k]
        if rows and _fits(k, rows) and _count(rows) > 1:
            produced = {id(v) for v in k.outputs}
            j = i + 1
            while j < len(kernels) and _fits(kernels[j], rows) and \
                    _row_local(kernels[j], produced, len(rows)):
                produced |= {id(v) for v in kernels[j].outputs}
                members.append(kernels[j])
                j += 1
        groups.append((rows if len(members) > 1 else (), members))
        i += len(members)
    return groups


def group_buffers(members: list) -> tuple:
    """(inputs read from outside the group, outputs written) of a row group."""
    produced = {id(v) for k in members for v in k.outputs}
    ins, seen = [], set()
    for k in members:
        for v in k.inputs:
            if id(v) not in produced and id(v) not in seen:
                seen.add(id(v))
                ins.append(v)
    return ins, [v for k in members for v in k.outputs]


def spill_plan(members: list) -> dict:
    """{id(reduce kernel): (value, output Var)}: a reduction whose input value a
    later loop kernel of the group recomputes at the same index, and that loop's
    output, where the reduction leaves the value for it (a softmax's exp(x - max)
    is then computed once: the output row is read back from cache, not recomputed)."""
    plan: dict = {}
    taken: set = set()
    for i, r in enumerate(members):
        if r.kind != "reduce" or r.siblings or r.root.prim.name not in (
                "reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
            continue
        x = r.root.inputs[0]
        if not isinstance(x, Var) or x in r.inputs:
            continue                     # nothing recomputed: it is a plain load
        for later in members[i + 1:]:
            if later.kind != "loop" or len(later.outputs) != 1:
                continue                 # (merged sibling reductions have several)
            (out,) = later.outputs
            if id(out) not in taken and \
                    out.aval.same_type(x.aval) and \
                    any(v is x for e in later.eqns for v in e.outputs) and \
                    _reads_only_in_place(later, x):
                plan[id(r)] = (x, out)
                taken.add(id(out))
                break
    return plan


def _reads_only_in_place(kernel, x) -> bool:
    """Is x read only at the kernel's own output index? (Its output buffer holds x
    until each element is overwritten, so any other read could see a new value.)"""
    n = kernel.outputs[0].aval.ndim
    here = tuple(_row(d) for d in range(n))
    return all(tuple(ix) == here for ix in _reads(kernel, n, {id(x)}).get(id(x), [()]))


def _row_local(kernel, produced: set, nrow: int) -> bool:
    for vid, idxs in _reads(kernel, nrow).items():
        if vid in produced and any(tuple(ix[:nrow]) != tuple(_row(d) for d in range(nrow))
                                   for ix in idxs):
            return False
    return True


def _count(rows) -> int:
    n = 1
    for r in rows:
        n *= r
    return n


__all__ = ["row_groups", "group_buffers", "Var"]
