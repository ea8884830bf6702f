"""Trace one entry through the pipeline and format what `jx dump-ir` prints."""
from __future__ import annotations

from jx import dtypes, tree
from jx.api import trace_pytree
from jx.errors import JxError, ShapeError, VerifyError
from jx.export import Entry, tracing
from jx.ir import Graph
from jx.passes import pipeline
from jx.verify import verify

from .errors import CliError, describe, ensure_period, model_location

_FIX_HINT = ("Fix the model code at that line (jx traces entries with abstract shapes "
             "and dtypes, not values).")


def trace_entry(entry: Entry, model_file: str, after: str | None, batch: int = 8) -> tuple:
    """(traced graph, program after stage `after`, [(stage, op count)]); CliError on a
    user error."""
    args, static_argnums = entry.call_args()
    try:
        with tracing():
            graph, consts = trace_pytree(entry.fn, args, {}, static_argnums, name=entry.name)
    except Exception as e:
        where = model_location(e, model_file) or entry.source
        hint = _hint(e, entry)
        raise CliError(f"tracing entry {entry.name!r} failed: {ensure_period(describe(e))}"
                       f"{hint}", where=where, debug_hint=True) from e
    assert not consts, "a top-level trace captures no outer values"
    try:
        verify(graph, where=f"entry {entry.name!r}")
        log: list = []
        with symbolic_scope(entry, graph):
            return graph, pipeline.run(graph, after=after, batch=batch, log=log), log
    except VerifyError as e:
        # The user cannot cause this: it is a jx bug, but still no traceback by default.
        raise CliError(f"internal error: {ensure_period(str(e))} This is a bug in jx; "
                       "please report it with the model file.", where=entry.source,
                       debug_hint=True) from e
    except JxError as e:
        raise CliError(f"entry {entry.name!r}: {ensure_period(str(e))}",
                       where=entry.source) from e


def entry_constraints(entry: Entry):
    """The constraints an entry's specs declare on their symbolic sizes, or None."""
    from jx import tree_util
    from jx.api import declared_constraints
    cons = declared_constraints(tree_util.tree_leaves(entry.args))
    return cons if cons.specs else None


def symbolic_scope(entry: Entry, graph):
    """The scope an entry with symbolic sizes runs the passes in (its constraints;
    heuristics at the hint sizes: staging.fuse_graph), else no scope."""
    import contextlib
    from jx import dims
    if not dims.symbols_of(v.aval.shape for v in graph.inputs):
        return contextlib.nullcontext()
    return dims.scope(entry_constraints(entry), hinting=True)


def dims_line(entry: Entry, graph) -> list:
    """['# dims: B >= 1, B <= 4096'] for an entry with symbolic sizes, else []."""
    from jx import dims
    names = dims.symbols_of(v.aval.shape for v in graph.inputs)
    if not names:
        return []
    cons = entry_constraints(entry) or dims.Constraints()
    return ["# dims: " + "; ".join(dims.describe_spec(cons.spec(n)).replace(" and ", ", ")
                                   for n in names)]


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


def _arg_texts(entry: Entry, leaf_texts: list) -> list:
    """`name: tree` per argument (statics as name=value), leaves drawn in order from
    leaf_texts; a leaf given as None is shown as `-`."""
    it = iter(leaf_texts)
    specs = iter(entry.args)
    parts = []
    for name in entry.arg_names:
        if name in entry.static:
            parts.append(f"{name}={entry.static[name]!r}")
            continue
        leaves, td = tree.flatten(next(specs))
        texts = [next(it) for _ in leaves]
        parts.append(f"{name}: {format_tree(td, ['-' if t is None else t for t in texts])}")
    return parts


def signature(entry: Entry, graph: Graph, program: Graph | None = None) -> str:
    """predict(params: {...}, x: f32[128,784]) -> f32[128,10]; statics as name=value.

    The signature of `program` (the graph printed below it: after vmap its inputs and
    outputs carry the batch axis, after grad it returns the value and the gradients),
    laid out with the entry's argument names and trees from the traced `graph`."""
    program = graph if program is None else program
    ins = program.in_avals if len(program.inputs) == len(graph.inputs) else graph.in_avals
    parts = _arg_texts(entry, [str(a) for a in ins])
    outs = [str(a) for a in program.out_avals]
    if len(outs) == len(graph.out_avals):
        result = format_tree(graph.out_tree, outs) if graph.out_tree is not None else \
            ", ".join(outs)
    elif len(outs) == 1 + sum(map(dtypes.is_float, (a.dtype for a in ins))):
        # value_and_grad (--after grad): the value, then one gradient per float input
        grads = iter(outs[1:])
        per_leaf = [next(grads) if dtypes.is_float(a.dtype) else None for a in ins]
        diffable = [p for p, name in zip(_arg_texts(entry, per_leaf), entry.arg_names)
                    if name not in entry.static and p != f"{name}: -"]
        result = f"({outs[0]}, grad: ({', '.join(diffable)}))"
    else:
        result = ", ".join(outs)
    return f"{entry.name}({', '.join(parts)}) -> {result}"


def counts_line(counts: list) -> str:
    """# ops: trace 10 -> grad 31 -> simplify 21"""
    return "# ops: " + " -> ".join(f"{name} {n}" for name, n in counts)


def header_lines(entry: Entry, sig: str, stage: str, counts: list, extra=()) -> list:
    """The comment lines above an entry's IR; sig from signature(); extra: more
    (the symbolic sizes' dims_line)."""
    return [f"# {entry.name}  {entry.source}  (after {stage})", f"# {sig}",
            *extra, counts_line(counts)]
