"""Horizontal fusion of sibling reductions.

`(dx * inv_r3) @ m`, `(dy * inv_r3) @ m`, `(dz * inv_r3) @ m` become three
reductions over the same (N, N) domain that share the pairwise distance and its
power. As three kernels each recomputes the shared values (or one more kernel
stores them); as one kernel with three outputs the shared values are computed
once per element and each output keeps its own accumulator.

Reductions are siblings when they reduce operands of one shape and dtype over
the same axes (sum, max, min or prod, mixed freely) and their fused inputs
overlap: a fused equation or a materialised array read by both. A reduction
never joins one it depends on, directly or through other kernels, and a group
that would close a cycle with other groups is not formed. The merged kernel
takes the place of its last member; kernels in between that read an earlier
member's output move after it (order_kernels).
"""
from __future__ import annotations

import heapq

from jx.ir import Var, postorder

from .sizes import BODY_LIMIT, MAX_SIBLINGS, code_size

MERGEABLE = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod"})


def _key(eqn):
    (x,) = eqn.inputs
    return (tuple(x.aval.shape), x.aval.dtype, tuple(eqn.params["axes"]))


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class _Group:
    def __init__(self, eqn, bit: int, deps: int, footprint: set, size: int):
        self.members = [eqn]
        self.mask = 1 << bit         # the members' bits
        self.deps = deps             # bits of the reductions the members depend on
        self.footprint = footprint   # ids of fused equations and arrays the members read
        self.size = size             # code-size units of the members' bodies


def sibling_groups(graph, pull, mat: set) -> list:
    """Lists (2 or more, graph order) of graph's reductions to compute in one kernel.
    pull(eqn) gives a root's fused equations (root included) under materialised `mat`."""
    cands = [e for e in graph.eqns if e.prim.name in MERGEABLE and len(e.inputs) == 1
             and isinstance(e.inputs[0], Var) and e.inputs[0].aval.size > 0]
    if len(cands) < 2:
        return []
    bit = {id(e): i for i, e in enumerate(cands)}
    # which candidates each value depends on (as bits), through every equation
    below: dict = {}
    for e in graph.eqns:
        m = 0
        for a in e.inputs:
            if isinstance(a, Var):
                m |= below.get(id(a), 0)
        if id(e) in bit:
            m |= 1 << bit[id(e)]
        for v in e.outputs:
            below[id(v)] = m
    groups: list = []
    group_of: list = []              # bit -> index into groups
    by_key: dict = {}                # _key -> indices of the groups over that domain
    for e in cands:
        deps = below.get(id(e.inputs[0]), 0)
        body = pull(e)
        new = _Group(e, bit[id(e)], deps, _footprint(e, body, mat),
                     sum(code_size(q) for q in body))
        target = None
        same = by_key.setdefault(_key(e), [])
        for gi in same:
            g = groups[gi]
            if len(g.members) < MAX_SIBLINGS and \
                    g.size + new.size <= BODY_LIMIT and \
                    not deps & g.mask and g.footprint & new.footprint and \
                    not _closes_cycle(groups, group_of, g, new):
                target = gi
                break
        if target is None:
            group_of.append(len(groups))
            same.append(len(groups))
            groups.append(new)
        else:
            g = groups[target]
            g.members.append(e)
            g.mask |= new.mask
            g.deps |= deps
            g.footprint |= new.footprint
            g.size += new.size
            group_of.append(target)
    return [g.members for g in groups if len(g.members) > 1]


def _footprint(eqn, body: list, mat: set) -> set:
    """What a reduction's kernel shares with others (body: its fused equations,
    root included): those equations but the root and the non-scalar materialised
    arrays it reads."""
    out = {id(e) for e in body if e is not eqn}
    out |= {id(a) for e in body for a in e.inputs
            if isinstance(a, Var) and id(a) in mat and a.aval.size > 1}
    return out


def _closes_cycle(groups, group_of, g, new) -> bool:
    """Would g with `new` merged in wait, through other groups, on itself?"""
    mask, seen = g.mask | new.mask, 0
    todo = g.deps | new.deps
    while todo:
        if todo & mask:
            return True
        seen |= todo
        nxt = 0
        for b in _bits(todo):
            if b < len(group_of):
                nxt |= groups[group_of[b]].deps
        todo = nxt & ~seen
    return False


def order_kernels(kernels: list) -> list:
    """kernels in an order where each runs after the kernels whose outputs it reads:
    the given order wherever it already is one (a stable topological sort)."""
    made = {id(v): i for i, k in enumerate(kernels) for v in k.outputs}
    waits = [{made[id(v)] for v in k.inputs if id(v) in made and made[id(v)] != i}
             for i, k in enumerate(kernels)]
    if all(j < i for i, w in enumerate(waits) for j in w):
        return kernels
    readers: dict = {}
    for i, w in enumerate(waits):
        for j in w:
            readers.setdefault(j, []).append(i)
    left = [len(w) for w in waits]
    ready = [i for i, n in enumerate(left) if n == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(kernels[i])
        for r in readers.get(i, ()):
            left[r] -= 1
            if left[r] == 0:
                heapq.heappush(ready, r)
    if len(out) != len(kernels):
        raise AssertionError("fusion: merged reductions left a cycle between kernels")
    return out


def split_siblings(program):
    """program with every merged reduction kernel split back into one kernel per
    output, recursively (for a backend without multi-output reductions)."""
    Kernel, Program = type(program.kernels[0]) if program.kernels else None, type(program)
    kernels = []
    for k in program.kernels:
        subs = {name: (tuple(split_siblings(p) for p in sub) if isinstance(sub, tuple)
                       else split_siblings(sub)) for name, sub in k.subprograms.items()}
        if not k.siblings:
            if subs != k.subprograms:
                k = Kernel(k.kind, k.root, k.eqns, k.inputs, k.outputs, subs, k.epilogue)
            kernels.append(k)
            continue
        producer = {id(v): e for e in k.eqns for v in e.outputs}
        for root in k.roots:
            body = _pull_within(root, producer)
            inputs = [v for v in k.inputs
                      if any(a is v for e in body for a in e.inputs)]
            kernels.append(Kernel("reduce", root, body, inputs, list(root.outputs)))
    return Program(program.graph, kernels, program.materialised, program.constraints)


def _pull_within(root, producer: dict) -> list:
    order = {id(e): i for i, e in enumerate(producer.values())}
    body = postorder([root], lambda e: [producer[id(a)] for a in e.inputs
                                        if isinstance(a, Var) and id(a) in producer])
    return sorted(body, key=lambda e: order[id(e)])
