"""The `jx` command line.

    jx dump-ir MODEL.py [--entry NAME ...] [--shape ARG=SPEC ...] [--after STAGE] [--debug]
    jx compile MODEL.py [-o DIR] [--entry NAME ...] [--shape ARG=SPEC ...] [--cpu NAME]
               [--check] [--json FILE|-] [-v]
    jx bench [PATH] [--entry NAME] [--json FILE|-] [--wide] [--min-time S] [--threads N]
             [--machine]

Errors caused by the model or the options are printed as one paragraph on
stderr (no traceback unless --debug; `--error-format json|github` for CI).
Exit status: 0 success, 1 an error in the model or options, a failed build, a
`compile --check` that found differences or a `bench` gate that failed, 2 a
command line that does not parse (unknown option, missing argument).
"""
from __future__ import annotations

import functools
import sys

import click

import jx
from jx.passes import pipeline

from . import dump, loading
from .errors import FORMATS, CliError, report


def _reports_errors(command):
    """CliError -> message (in --error-format) and exit 1; --debug re-raises so the
    traceback shows."""
    @functools.wraps(command)
    def wrapper(*args, debug: bool = False, error_format: str = "text", **kwargs):
        try:
            return command(*args, **kwargs)
        except CliError as e:
            if debug:
                raise
            report(e, error_format)
            sys.exit(1)
    wrapper = click.option("--error-format", type=click.Choice(FORMATS), default="text",
                           show_default=True,
                           help="How errors are printed on stderr: text (file:line: error: "
                                "...), json (one object per line) or github (::error "
                                "workflow commands).")(wrapper)
    return click.option("--debug", is_flag=True,
                        help="Show full Python tracebacks on errors.")(wrapper)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(jx.__version__, "--version", "-V", prog_name="jx",
                      message="%(prog)s %(version)s")
def main():
    """jx: trace, transform, fuse and compile pure JAX-style numeric Python."""


@main.command("dump-ir")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--entry", "-e", "entries", multiple=True, metavar="NAME",
              help="Entry to dump (repeatable); default: every entry, in source order.")
@click.option("--shape", "-s", "shapes", multiple=True, metavar="ARG=SPEC",
              help="Override a declared input, e.g. x=f32[256,784] or params.w1=f32[784,512]; "
                   "applies to every selected entry with that argument (repeatable).")
@click.option("--after", default=None, metavar="STAGE[,STAGE...]",
              help="Print the program after this pipeline stage "
                   f"({', '.join(pipeline.STAGES)}; default: the last) or transformation "
                   f"({', '.join(pipeline.TRANSFORMS)}); a comma-separated list chains them, "
                   "e.g. grad,simplify.")
@click.option("--batch", default=8, show_default=True, type=click.IntRange(1),
              help="Batch size used by the vmap transformation.")
@click.option("--stats", is_flag=True,
              help="With --after fuse: bytes, flops and arithmetic intensity per kernel "
                   "(expressions of the symbolic sizes; figures with --dims).")
@click.option("--dims", "dim_values", default=None, metavar="NAME=N[,NAME=N...]",
              help="Symbolic sizes to give --stats figures at, e.g. B=128.")
@_reports_errors
def dump_ir(model: str, entries: tuple, shapes: tuple, after: str | None, batch: int,
            stats: bool, dim_values: str | None):
    """Trace MODEL's entry functions and print their IR."""
    try:
        stage = ",".join(pipeline.parse_after(after))
    except jx.JxError as e:
        raise CliError(f"bad --after: {e}.") from None
    values = _dim_values(dim_values)
    module = loading.load_model(model)
    selected = loading.select_entries(module, entries)
    loading.apply_shapes(selected, shapes)
    shown = loading.display_path(model)
    # Trace everything first: an error in the last entry leaves stdout empty.
    results = []
    for e in selected:
        traced, program, counts = dump.trace_entry(e, shown, stage, batch)
        sig = dump.signature(e, traced, program)     # of the graph printed, not the traced
        if stage.split(",")[-1] == pipeline.FINAL:
            from jx.passes.fuse import fuse
            from jx.passes.fuse_print import format_program
            with dump.symbolic_scope(e, traced):
                fused = fuse(program)
                program = format_program(fused, stats=stats, dims=values)
            counts = counts + [(pipeline.FINAL, len(fused.kernels))]
        results.append((e, sig, str(program), counts, dump.dims_line(e, traced)))
    _print_results(results, stage)


def _dim_values(text: str | None) -> dict:
    """--dims 'B=128,T=64' -> {'B': 128, 'T': 64}."""
    values: dict = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, eq, n = item.partition("=")
        if not eq or not name.strip().isidentifier() or not n.strip().isdigit():
            raise CliError(f"bad --dims item {item.strip()!r}: give NAME=N, e.g. B=128")
        values[name.strip()] = int(n)
    return values


def _print_results(results: list, stage: str) -> None:
    if sys.stdout.isatty():
        from rich.console import Console   # only for terminals: pipes get plain text
        from rich.text import Text
        console = Console(highlight=False)
        for i, (entry, sig, program, counts, extra) in enumerate(results):
            if i:
                console.print()
            console.rule(Text(entry.name, style="bold cyan"), align="left")
            console.print(Text(f"{entry.source}  (after {stage})", style="dim"))
            for line in extra:
                console.print(Text(line, style="dim"))
            console.print(Text(dump.counts_line(counts), style="dim"))
            # soft_wrap: long IR lines stay whole lines when copied from the terminal
            console.print(Text(sig, style="green"), soft_wrap=True)
            console.print(Text(program), soft_wrap=True)
        return
    blocks = ["\n".join(dump.header_lines(entry, sig, stage, counts, extra) + [program])
              for entry, sig, program, counts, extra in results]
    click.echo("\n\n".join(blocks))


from . import compile as _compile  # noqa: E402

_compile.register(main, _reports_errors)
from . import bench as _bench  # noqa: E402
_bench.register(main, _reports_errors)
from . import inspect as _inspect  # noqa: E402
_inspect.register(main, _reports_errors)
from . import cache as _cache  # noqa: E402
_cache.register(main, _reports_errors)


if __name__ == "__main__":
    # Re-import under the package name so jx's own frames are recognised as jx's.
    from jx.cli.main import main as _main
    _main(prog_name="jx")
