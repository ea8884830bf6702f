"""Trace one entry through the pipeline and format what `jx dump-ir` prints."""
from __future__ import annotations

from jx import tree
from jx.api import trace_pytree
from jx.errors import JxError, ShapeError, VerifyError
from jx.export import Entry
from jx.ir import Graph
from jx.passes import pipeline
from jx.verify import verify

from .errors import DEBUG_HINT, CliError, describe, ensure_period, model_location

_FIX_HINT = ("Fix the model code at that line (jx traces entries with abstract shapes "
             "and dtypes, not values).")


def trace_entry(entry: Entry, model_file: str, after: str | None, batch: int = 8) -> tuple:
    """(traced graph, program after stage `after`, [(stage, op count)]); CliError on a
    user error."""
    args, static_argnums = entry.call_args()
    try:
        graph, consts = trace_pytree(entry.fn, args, {}, static_argnums, name=entry.name)
    except Exception as e:
        where = model_location(e, model_file) or entry.source
        hint = _hint(e, entry)
        raise CliError(f"tracing entry {entry.name!r} failed: {ensure_period(describe(e))}"
                       f"{hint} {DEBUG_HINT}", where=where) from e
    assert not consts, "a top-level trace captures no outer values"
    try:
        verify(graph, where=f"entry {entry.name!r}")
        log: list = []
        return graph, pipeline.run(graph, after=after, batch=batch, log=log), log
    except VerifyError as e:
        # The user cannot cause this: it is a jx bug, but still no traceback by default.
        raise CliError(f"internal error: {ensure_period(str(e))} This is a bug in jx; "
                       f"please report it with the model file. {DEBUG_HINT}",
                       where=entry.source) from e
    except JxError as e:
        raise CliError(f"entry {entry.name!r}: {ensure_period(str(e))}",
                       where=entry.source) from e


def _hint(e: Exception, entry: Entry) -> str:
    """What to do, where the error message itself does not say."""
    if isinstance(e, ShapeError):
        return (f" Check the input shapes declared for {entry.name!r} at {entry.source} "
                "(or given with --shape) against what the code expects.")
    return "" if isinstance(e, JxError) else " " + _FIX_HINT


def format_tree(treedef, leaves) -> str:
    """A pytree with leaves rendered as text: {b: f32[10], w: f32[784,10]}."""
    it = iter(leaves)

    def rec(td) -> str:
        if td.kind is None:
            return next(it)
        parts = [rec(c) for c in td.children]
        if td.kind is dict:
            return "{" + ", ".join(f"{k}: {p}" for k, p in zip(td.aux, parts)) + "}"
        if td.kind is list:
            return "[" + ", ".join(parts) + "]"
        if td.kind is tuple:
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if td.kind is type(None):
            return "None"
        return f"{td.kind.__name__}(" + ", ".join(parts) + ")"

    return rec(treedef)


def _spec_text(value) -> str:
    leaves, td = tree.flatten(value)
    return format_tree(td, [str(x) for x in leaves])


def signature(entry: Entry, graph: Graph) -> str:
    """predict(params: {...}, x: f32[128,784]) -> f32[128,10]; statics as name=value."""
    specs = iter(entry.args)
    parts = []
    for name in entry.arg_names:
        if name in entry.static:
            parts.append(f"{name}={entry.static[name]!r}")
        else:
            parts.append(f"{name}: {_spec_text(next(specs))}")
    outs = [str(a) for a in graph.out_avals]
    result = format_tree(graph.out_tree, outs) if graph.out_tree is not None else \
        ", ".join(outs)
    return f"{entry.name}({', '.join(parts)}) -> {result}"


def counts_line(counts: list) -> str:
    """# ops: trace 10 -> grad 31 -> simplify 21"""
    return "# ops: " + " -> ".join(f"{name} {n}" for name, n in counts)


def header_lines(entry: Entry, graph: Graph, stage: str, counts: list) -> list:
    return [f"# {entry.name}  {entry.source}  (after {stage})",
            f"# {signature(entry, graph)}", counts_line(counts)]
