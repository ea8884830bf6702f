"""The compilation pipeline as a list of named stages.

Each stage is a function Graph -> Graph. `run(graph, after=NAME)` applies the
stages in order and stops after NAME, which is what `jx dump-ir --after NAME`
prints. A new pass joins the pipeline by adding one entry to STAGES, in the
position where it runs; the CLI picks it up from here.
"""
from __future__ import annotations

from typing import Callable

from jx.errors import JxError
from jx.ir import Graph
from jx.verify import verify

Pass = Callable[[Graph], Graph]


def _identity(graph: Graph) -> Graph:
    """The graph exactly as the tracer produced it."""
    return graph


# Ordered: dict order is pipeline order.
STAGES: dict[str, Pass] = {
    "trace": _identity,
}


def stage_names() -> list[str]:
    return list(STAGES)


def run(graph: Graph, after: str | None = None, check: bool = True) -> Graph:
    """Run the stages up to and including `after` (all of them when None).

    With check=True the verifier runs on the output of every stage, so a pass
    that breaks the IR is named right where it does so.
    """
    if after is not None and after not in STAGES:
        raise JxError(f"unknown pipeline stage {after!r}; the stages are, in order: "
                      f"{', '.join(STAGES)}")
    for name, stage in STAGES.items():
        graph = stage(graph)
        if check:
            verify(graph, where=f"after stage {name!r}")
        if name == after:
            break
    return graph
