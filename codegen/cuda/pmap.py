"""jx.pmap(f, backend="cuda"): one process per GPU, collectives through NCCL.

Each process maps its local slice (leading size 1: its one GPU). The per-device
program is traced with the axis bound to the device's rank over the whole NCCL
world, compiled like jx.jit(backend="cuda"), and its collective steps run
through runtime/nccl.py.
"""
from __future__ import annotations

import numpy as np

from jx import tree


class CudaStep:
    def __init__(self, compiled, out_tree, dims, size):
        self.compiled, self.out_tree, self.dims, self.size = compiled, out_tree, dims, size


def compile_step(fn, axis_name, args, dims) -> CudaStep:
    from jx.api import ShapeDtypeStruct, trace_pytree
    from jx.passes.fuse import fuse
    from jx.passes.pipeline import run
    from jx.pmap import axis_bound
    from jx.runtime.cuda import import_cupy
    from jx.runtime.nccl import world

    from .jit import CompiledFunction, leaf_aval
    cp = import_cupy("jx.pmap(..., backend='cuda')")
    _, _, size, _ = world(cp)
    leaves, treedef = tree.flatten(tuple(args))
    avals = [leaf_aval(x) for x in leaves]
    shard = [ShapeDtypeStruct(a.shape if d is None else a.shape[:d] + a.shape[d + 1:], a.dtype)
             for a, d in zip(avals, dims)]
    g = axis_bound(fn, axis_name, size)
    graph, consts = trace_pytree(g, (ShapeDtypeStruct((), np.int32),) +
                                 tuple(tree.unflatten(treedef, shard)), name="pmap")
    assert not consts
    out_tree = graph.out_tree
    program = fuse(run(graph, check=False))
    return CudaStep(CompiledFunction(program, "pmap"), out_tree, list(dims), size)


def run_step(step: CudaStep, leaves, out_axes):
    """This rank's slice in, this rank's results out (with the mapped axis of size 1)."""
    from jx.runtime.cuda import import_cupy
    from jx.runtime.nccl import world
    cp = import_cupy()
    _, rank, _, _ = world(cp)
    sliced = [x if d is None else cp.take(cp.asarray(x), 0, axis=d)
              for x, d in zip(leaves, step.dims)]
    outs = step.compiled(cp.asarray(np.int32(rank)), *sliced)
    axes = tree.broadcast_prefix(out_axes, tree.unflatten(step.out_tree, outs))
    outs = [o if a is None else cp.expand_dims(o, a) for o, a in zip(outs, axes)]
    return tree.unflatten(step.out_tree, outs)
