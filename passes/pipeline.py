"""The compilation pipeline as named stages, and the transformations a user can
ask `jx dump-ir --after` to apply on the way.

Pipeline stages (STAGES) always run, in order: `--after simplify` runs every
stage up to and including simplify. Transformations (TRANSFORMS) run only when
named: `--after grad` differentiates the traced entry, and a comma-separated
list chains them, e.g. `--after grad,simplify` or `--after vmap,grad`. Every
stage's output is verified, so a pass that breaks the IR is caught where it
does so. A new pass joins by adding one entry to the table where it belongs.
"""
from __future__ import annotations

from typing import Callable

from jx import dtypes
from jx.errors import JxError
from jx.ir import Graph
from jx.verify import verify

from .decomplex import decomplex
from .expand import expand
from .inline import inline_calls
from .simplify import simplify

Pass = Callable[[Graph], Graph]


def _identity(graph: Graph) -> Graph:
    """The graph exactly as the tracer produced it."""
    return graph


def grad_transform(graph: Graph, **_) -> Graph:
    """value_and_grad of an entry with one scalar float output, w.r.t. every float input."""
    from .interpreters import transform_graph
    from .vjp import backward, forward
    from .zeros import zeros_like
    import numpy as np
    outs = graph.out_avals
    if len(outs) != 1 or outs[0].shape != () or not dtypes.is_float(outs[0].dtype):
        raise JxError(f"--after grad needs an entry returning one scalar float, this one "
                      f"returns {', '.join(map(str, outs)) or 'nothing'}; reduce the output "
                      "(e.g. a loss) or differentiate inside the model with jx.grad")
    wrt = [dtypes.is_float(v.aval.dtype) for v in graph.inputs]

    def walk(*args):
        env, (out,) = forward(graph, args)
        seed = np.ones((), outs[0].dtype)
        from .zeros import stage_like
        cts = backward(graph, env, [stage_like(seed, [out])])
        return [out] + [zeros_like(x) if c is None else c
                        for x, c, w in zip(args, cts, wrt) if w]

    return transform_graph(walk, graph.in_avals, "grad")


def vmap_transform(graph: Graph, batch: int = 8, **_) -> Graph:
    """The entry mapped over a new leading axis of size `batch` on every input."""
    from .vmap import vmap_graph
    return vmap_graph(graph, [0] * len(graph.inputs), batch)


# Ordered: dict order is pipeline order.
STAGES: dict[str, Pass] = {
    "trace": _identity,
    "inline": inline_calls,
    "decomplex": decomplex,
    "expand": expand,
    "simplify": simplify,
}

TRANSFORMS: dict[str, Callable] = {
    "grad": grad_transform,
    "vmap": vmap_transform,
}


# The last stage turns the graph into a Program of kernels (passes/fuse.py); it is
# printed by `dump-ir --after fuse` and compiled by the backends.
FINAL = "fuse"


def stage_names() -> list[str]:
    return list(STAGES) + [FINAL] + list(TRANSFORMS)


def parse_after(after: str | None) -> list:
    """'grad,simplify' -> ['grad', 'simplify'], checking every name."""
    names = list(STAGES)[-1:] if after is None else [a.strip() for a in after.split(",")]
    for i, n in enumerate(names):
        if n == FINAL and i == len(names) - 1:
            continue
        if n not in STAGES and n not in TRANSFORMS:
            raise JxError(f"unknown pipeline stage {n!r}; the stages are, in order: "
                          f"{', '.join(STAGES)}, {FINAL} (last); the transformations: "
                          f"{', '.join(TRANSFORMS)}")
    return names


def run(graph: Graph, after: str | None = None, check: bool = True, batch: int = 8,
        log: list | None = None) -> Graph:
    """Run the requested stages; `log` collects (stage, equation count) pairs."""
    done = 0                     # pipeline stages already applied
    order = list(STAGES)
    if log is not None:
        log.append(("trace", _count(graph)))
    for name in parse_after(after):
        if name == FINAL:
            name = order[-1]                 # fusing is the caller's job (it is not a graph)
        if name in TRANSFORMS:
            todo = [(name, lambda g, n=name: TRANSFORMS[n](g, batch=batch))]
        else:
            target = order.index(name)
            todo = [(s, STAGES[s]) for s in order[done:target + 1]]
            done = max(done, target + 1)
        for stage_name, stage in todo:
            graph = stage(graph)
            if check:
                verify(graph, where=f"after stage {stage_name!r}")
            if log is not None and stage_name != "trace":
                log.append((stage_name, _count(graph)))
    return graph


def _count(graph: Graph) -> int:
    return sum(graph.op_counts().values())
