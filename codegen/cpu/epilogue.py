"""Output fusion: a matrix product (or a convolution, conv.py) and the elementwise
kernel that consumes it run as one kernel, as XLA fuses a dot's elementwise consumers.

The GEMM writes its product straight into the consumer's output buffer, and each
task, right after finishing its slab of C, applies the consumer to that slab in
place while it is still in cache. SGD's `w - lr * (x.T @ g)` then never writes the
gradient to memory and reads it back, and an MLP layer's bias and activation ride
along with its matmul. In place is safe because the consumer reads the product only
at the element it writes (elementwise use, same shape and dtype).

This is a CPU backend decision (the CUDA backend keeps its cuBLAS steps and
separate epilogue kernels), so it runs on the fused Program here, not in fuse.py.
"""
from __future__ import annotations

from jx.ir import Var
from jx.passes.fuse import Kernel, Program

from . import irutil as U
from .opaque import _is_matvec
from .rowfuse import _reads_only_in_place

def _gemm_kernel(k) -> bool:
    if k.kind != "opaque" or k.epilogue is not None:
        return False
    if k.root.prim.name == "conv_general_dilated":       # (conv.py: per finished row slab)
        from . import conv
        return conv.takes_epilogue(k)
    if k.root.prim.name != "dot_general":
        return False
    from . import gemm
    p = gemm.plan(k)
    # (a symbolic K may be 0 at run time: gemm.emit zeroes C before the epilogue)
    return p is not None and (U.is_symbolic(p.k) or p.k > 0) and not _is_matvec(k)


def _fits(consumer, d) -> bool:
    """Same shape and dtype, and d read only at the element being written, through
    every fused layout op (roll(tanh(x @ w)) reads other rows: not in place)."""
    return (consumer.kind == "loop" and len(consumer.outputs) == 1
            and consumer.outputs[0].aval.shape == d.aval.shape
            and consumer.outputs[0].aval.dtype == d.aval.dtype
            and _reads_only_in_place(consumer, d))


def attach(program: Program) -> Program:
    """The program with each GEMM whose result only one elementwise kernel reads
    merged with that kernel, at the consumer's place (everything the product reads
    exists by then; what the consumer reads besides it may not exist earlier)."""
    kernels = program.kernels
    readers: dict = {}
    for i, k in enumerate(kernels):
        for v in k.inputs:
            readers.setdefault(id(v), []).append(i)
    results = {id(a) for a in program.graph.outputs if isinstance(a, Var)}
    merged: dict = {}                      # consumer index -> product index
    for i, k in enumerate(kernels):
        if not _gemm_kernel(k):
            continue
        (d,) = k.outputs
        users = readers.get(id(d), [])
        if id(d) not in results and len(users) == 1 and _fits(kernels[users[0]], d):
            merged[users[0]] = i
    if not merged:
        return program
    moved = set(merged.values())
    out = []
    for j, k in enumerate(kernels):
        if j in moved:
            continue
        if j in merged:
            prod = kernels[merged[j]]
            d = prod.outputs[0]
            inputs = list(prod.inputs)
            inputs += [v for v in k.inputs if v is not d and all(v is not u for u in inputs)]
            k = Kernel("opaque", prod.root, list(prod.eqns) + list(k.eqns), inputs,
                       list(k.outputs), epilogue=k)
        out.append(k)
    return Program(program.graph, out, program.materialised, program.constraints)
