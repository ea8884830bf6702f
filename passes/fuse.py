"""Fusion and scheduling: Graph -> Program (an ordered list of kernels).

Every value is either *materialised* (it gets a buffer) or *fused* (computed on
the fly, at the index where a consumer needs it, inside the consumer's loop).
Graph inputs and outputs, and the results and operands of opaque primitives
(matrix products, gathers, sorts, control flow, ...) are materialised. A
reduction fuses the elementwise and layout work that produces its input, so
`sum(x * x)` reads x once. An elementwise value feeding several kernels is
recomputed in each when it is cheap and materialised otherwise; a value read
through an expanding broadcast is materialised unless trivially cheap, so it is
not recomputed for every element of the larger output.

A kernel is a root equation plus the fused equations it pulls in:
  loop    – map over the root's output shape (elementwise and layout ops)
  reduce  – loop over the kept dims, accumulate over the reduced dims; sibling
            reductions over one domain share a kernel, one output each
            (passes/siblings.py), so the values they share are computed once
  opaque  – one primitive with its own lowering (dot_general, gather, ...)
Control-flow kernels hold the Programs of their sub-graphs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from jx.ir import Eqn, Graph, Literal, Var, postorder

from .matvec import matvec_as_reduction
from .siblings import order_kernels, sibling_groups
from .sizes import _FREE, BODY_LIMIT, EXPENSIVE, code_size  # noqa: F401  (re-exported)

# Primitives computed inside loops: index-mapped reads plus scalar math.
FUSIBLE = frozenset({
    "neg", "abs", "sign", "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2",
    "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "logistic", "sin", "cos",
    "tan", "erf", "floor", "ceil", "round", "is_finite", "eq", "ne", "lt", "le", "gt", "ge",
    "and", "or", "xor", "not", "shift_left", "shift_right_logical",
    "shift_right_arithmetic", "select", "convert_element_type", "broadcast_in_dim",
    "reshape", "transpose", "squeeze", "expand_dims", "slice", "rev", "pad", "concatenate",
    "iota", "stop_gradient", "dynamic_slice", "bitcast_convert_type", "dimension_size",
    "real", "imag", "complex",
})
REDUCTIONS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax",
                        "argmin"})
# Recompute cost per element (a transcendental 4, other arithmetic 1) below which a
# value several kernels read is recomputed in each rather than stored.
CHEAP_LIMIT = 8      # one transcendental and a few ops: recompute rather than store


@dataclass(eq=False)
class Kernel:
    kind: str                  # "loop" | "reduce" | "opaque"
    root: Eqn                  # the equation whose outputs the kernel writes
    eqns: list                 # fused equations feeding the root, in graph order (root last)
    inputs: list               # materialised Vars read (graph inputs or earlier kernels' outputs)
    outputs: list              # Vars written
    subprograms: dict = field(default_factory=dict)   # param name -> Program (control flow)
    epilogue: "Kernel | None" = None   # a loop kernel applied to an opaque root's result
                                       # in place (the CPU backend's output fusion)
    siblings: list = field(default_factory=list)   # a reduce kernel's further roots,
                                       # over root's domain (outputs: one per root)

    @property
    def roots(self) -> list:
        return [self.root, *self.siblings]

    @property
    def name(self) -> str:
        return f"{self.kind}_{self.root.prim.name}" + \
            (f"_x{len(self.siblings) + 1}" if self.siblings else "")


@dataclass(eq=False)
class Program:
    graph: Graph
    kernels: list
    materialised: set          # ids of Vars with buffers
    # symbolic dimensions: their declared constraints (jx.dims.Constraints), which
    # code generation decides under; None for a program of fixed sizes
    constraints: object = None

    def __str__(self) -> str:
        from .fuse_print import format_program
        return format_program(self)


def _uses(graph: Graph) -> dict:
    uses: dict = {}
    for eqn in graph.eqns:
        for a in eqn.inputs:
            if isinstance(a, Var):
                uses.setdefault(id(a), []).append(eqn)
    return uses


def _static_update(eqn: Eqn) -> bool:
    """A dynamic_update_slice at constant starts (`x.at[1:-1, 1:-1].set(u)`): a loop
    kernel rooted at it writes [x | u | x] rows, u computed in place (no copy of x
    first, no materialised u); at traced starts it stays an opaque copy-then-write."""
    return eqn.prim.name == "dynamic_update_slice" and \
        all(isinstance(s, Literal) for s in eqn.inputs[2:])


def _fusible(eqn: Eqn) -> bool:
    return eqn.prim.name in FUSIBLE or _static_update(eqn)


def _is_opaque(eqn: Eqn) -> bool:
    return not _fusible(eqn) and eqn.prim.name not in REDUCTIONS


def _expands(eqn: Eqn) -> bool:
    """A consumer that reads its operand more often than once per element."""
    if eqn.prim.name == "broadcast_in_dim":
        return eqn.outputs[0].aval.size > eqn.inputs[0].aval.size
    return False


def fuse(graph: Graph) -> Program:
    # matrix-vector products become reductions first, in every nested body at once
    return _fuse(matvec_as_reduction(graph))


def _fuse(graph: Graph) -> Program:
    producer = {id(v): e for e in graph.eqns for v in e.outputs}
    uses = _uses(graph)
    mat = {id(v) for v in graph.inputs}
    mat |= {id(a) for a in graph.outputs if isinstance(a, Var)}
    for eqn in graph.eqns:
        if _is_opaque(eqn) or eqn.prim.name in REDUCTIONS or _static_update(eqn):
            mat |= {id(v) for v in eqn.outputs}     # (an update is its kernel's root)
        if _is_opaque(eqn):
            mat |= {id(a) for a in eqn.inputs if isinstance(a, Var)}
        if len(eqn.outputs) > 1:
            mat |= {id(v) for v in eqn.outputs}

    # sibling reductions become one kernel: the values they share have one consumer
    groups = sibling_groups(graph, lambda e: _pull(e, producer, mat), mat)
    rep = {id(e): id(g[0]) for g in groups for e in g}
    cost_memo: dict = {}

    def fused_inputs(v) -> list:
        return [a for a in producer[id(v)].inputs
                if isinstance(a, Var) and id(a) not in mat and id(a) not in cost_memo]

    def cost(v) -> int:
        """Cost of recomputing v from materialised values, per element (inputs first,
        without recursion: a chain of any length)."""
        if not isinstance(v, Var) or id(v) in mat:
            return 0
        if id(v) not in cost_memo:
            for u in postorder([v], fused_inputs):
                e = producer[id(u)]
                own = 4 if e.prim.name in EXPENSIVE else (0 if e.prim.name in _FREE else 1)
                cost_memo[id(u)] = own + sum(cost_memo.get(id(a), 0) for a in e.inputs
                                             if isinstance(a, Var) and id(a) not in mat)
        return cost_memo[id(v)]

    # Fixpoint: materialise fused values that would be recomputed expensively.
    changed = True
    while changed:
        changed = False
        cost_memo.clear()
        roots = _consumer_roots(graph, mat, uses, rep)
        for eqn in graph.eqns:
            if not _fusible(eqn):
                continue
            v = eqn.outputs[0]
            if id(v) in mat:
                continue
            n_roots = len(roots.get(id(v), ()))
            expanded = any(_expands(u) for u in uses.get(id(v), ()))
            if (n_roots > 1 and cost(v) > CHEAP_LIMIT) or \
                    (expanded and (cost(v) > 1 or _strided(v, producer, mat))):
                mat.add(id(v))
                changed = True
        # then bounded bodies; a cut makes new kernels, whose shared values the
        # rule above may store in turn (a gradient's backward pieces would otherwise
        # each recompute the forward chain from its start)
        changed = changed or _bound_bodies(graph, mat)

    last = {id(g[-1]): g for g in groups}
    kernels = []
    for eqn in graph.eqns:
        if not any(id(v) in mat for v in eqn.outputs):
            continue
        if id(eqn) in rep:               # a merged reduction: at its last member
            if id(eqn) in last:
                kernels.append(_merged(last[id(eqn)], graph, producer, mat))
            continue
        if _is_opaque(eqn):
            subs = {k: _fuse(g) for k, g in eqn.params.items() if isinstance(g, Graph)}
            for k, g in eqn.params.items():
                if isinstance(g, tuple) and any(isinstance(x, Graph) for x in g):
                    subs[k] = tuple(_fuse(x) for x in g)
            kernels.append(Kernel("opaque", eqn, [eqn],
                                  [a for a in eqn.inputs if isinstance(a, Var)],
                                  list(eqn.outputs), subs))
            continue
        body = _pull(eqn, producer, mat)
        inputs = _dedup([a for e in body for a in e.inputs
                         if isinstance(a, Var) and id(a) in mat])
        kind = "reduce" if eqn.prim.name in REDUCTIONS else "loop"
        kernels.append(Kernel(kind, eqn, body, inputs, list(eqn.outputs)))
    return Program(graph, order_kernels(kernels) if groups else kernels, mat)


def _merged(members: list, graph: Graph, producer: dict, mat: set) -> Kernel:
    """One reduce kernel for sibling reductions (members, in graph order)."""
    pos = {id(e): i for i, e in enumerate(graph.eqns)}
    body = {id(e): e for m in members for e in _pull(m, producer, mat)}
    body = sorted(body.values(), key=lambda e: pos[id(e)])
    inputs = _dedup([a for e in body for a in e.inputs if isinstance(a, Var) and id(a) in mat])
    return Kernel("reduce", members[0], body, inputs, [m.outputs[0] for m in members],
                  siblings=list(members[1:]))


_VIEWS = frozenset({"reshape", "squeeze", "expand_dims", "convert_element_type",
                    "stop_gradient"})


def _strided(v, producer: dict, mat: set) -> bool:
    """Whether fused reads of v go across memory with a stride (a transposed or
    column-sliced operand): under an expanding broadcast such reads repeat for
    every element of the larger output, so a contiguous copy (the size of the
    smaller operand) pays for itself. `x[:, 0:1].T - x` reads the column once."""
    while isinstance(v, Var) and id(v) not in mat and id(v) in producer:
        e = producer[id(v)]
        name = e.prim.name
        if name == "transpose":
            return True
        if name == "slice":
            shape = e.inputs[0].aval.shape
            start, limit = e.params["start_indices"], e.params["limit_indices"]
            strides = e.params.get("strides") or (1,) * len(shape)
            partial = [limit[d] - start[d] < shape[d] for d in range(len(shape))]
            first = next((d for d, p in enumerate(partial) if p), len(shape))
            if any(st != 1 for st in strides) or any(partial[first + 1:]):
                return True
        elif name not in _VIEWS:
            return False
        v = e.inputs[0]
    return False


def _bound_bodies(graph: Graph, mat: set) -> bool:
    """Materialise values so that no kernel's body passes BODY_LIMIT: in graph order,
    where an equation's fused expression would pass it, its largest fused inputs
    become kernel outputs. A chain of any length becomes kernels of bounded size;
    a store and a load per cut cost little beside a body that large. Returns
    whether it materialised anything."""
    size: dict = {}
    cut = False
    for eqn in graph.eqns:
        if _is_opaque(eqn):
            continue
        ins = _dedup([a for a in eqn.inputs if isinstance(a, Var) and id(a) not in mat
                      and id(a) in size])
        total = code_size(eqn) + sum(size[id(a)] for a in ins)
        while total > BODY_LIMIT and ins:
            big = max(ins, key=lambda a: size[id(a)])
            mat.add(id(big))
            total -= size[id(big)]
            ins.remove(big)
            cut = True
        for o in eqn.outputs:
            size[id(o)] = total
    return cut


def _pull(root: Eqn, producer: dict, mat: set) -> list:
    """The root and the fused equations it depends on, in graph order."""
    return postorder([root], lambda e: [producer[id(a)] for a in e.inputs
                                        if isinstance(a, Var) and id(a) not in mat
                                        and id(a) in producer])


def _dedup(vs: list) -> list:
    out, seen = [], set()
    for v in vs:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def _consumer_roots(graph: Graph, mat: set, uses: dict, rep: dict) -> dict:
    """For each fused value, the set of kernels (root eqn ids; a merged reduction's
    first member, rep) that will compute it."""
    roots: dict = {}
    for eqn in reversed(graph.eqns):
        for v in eqn.outputs:
            if id(v) in mat:
                continue
            acc = set()
            for u in uses.get(id(v), ()):
                if any(id(o) in mat for o in u.outputs) or u.prim.name in REDUCTIONS \
                        or _is_opaque(u):
                    acc.add(rep.get(id(u), id(u)))
                else:
                    acc |= roots.get(id(u.outputs[0]), set())
            roots[id(v)] = acc
    return roots


__all__ = ["fuse", "Program", "Kernel", "FUSIBLE", "REDUCTIONS", "Literal"]
