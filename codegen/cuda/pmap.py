"""jx.pmap(f, backend="cuda"): one process per GPU, collectives through NCCL.

Each process maps its local slice (leading size 1: its one GPU). jx.pmap traces
the per-device program with the axis bound to the device's rank over the whole
NCCL world (world_size) and fuses it; here it is compiled like
jx.jit(backend="cuda"), and its collective steps run through runtime/nccl.py.
"""
from __future__ import annotations

import numpy as np

from jx import tree


class CudaStep:
    def __init__(self, compiled, out_tree, dims, size):
        self.compiled, self.out_tree, self.dims, self.size = compiled, out_tree, dims, size


def world_size() -> int:
    """The number of devices (processes, one GPU each) of the NCCL world: the size
    jx.pmap binds the axis to while staging the per-device program."""
    from jx.runtime.cuda import import_cupy
    from jx.runtime.nccl import world
    cp = import_cupy("jx.pmap(..., backend='cuda')")
    _, _, size, _ = world(cp)
    return size


def compile_step(program, out_tree, dims, size: int) -> CudaStep:
    """Compile the fused per-device program jx.pmap staged (its first input is the
    device index, then this rank's shards along dims) like jx.jit(backend="cuda")."""
    from .jit import CompiledFunction
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
