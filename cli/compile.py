"""`jx compile`: trace a model's entries, run the pipeline, fuse, and build the
artifact (shared object + C header) for the target."""
from __future__ import annotations

import os
import time

import click

from jx.errors import JxError
from jx.passes import pipeline

from . import dump, loading
from .errors import CliError


def compile_model(model: str, out_dir: str | None, entries: tuple, shapes: tuple,
                  target: str, cpu: str | None, name: str | None, arch: str | None = None) -> dict:
    if target not in ("cpu", "cuda"):
        raise CliError(f"unknown --target {target!r}; jx compiles for 'cpu' and 'cuda'.")
    if cpu is not None and target == "cpu":
        from jx.codegen.cpu.target import UnknownCpuError, check_cpu
        try:
            cpu = check_cpu(cpu)
        except UnknownCpuError as err:
            raise CliError(str(err)) from None
    module = loading.load_model(model)
    selected = loading.select_entries(module, entries)
    loading.apply_shapes(selected, shapes)
    shown = loading.display_path(model)
    stem = name or os.path.splitext(os.path.basename(model))[0]
    if not stem or os.sep in stem or (os.altsep and os.altsep in stem) or stem in (".", "..") \
            or not stem.isprintable():
        raise CliError(f"--name {stem!r} is not a file name: it names lib<NAME>.so and "
                       "<NAME>.h inside the output folder; use printable characters and no "
                       "path separators, and choose the folder with -o")
    out_dir = out_dir or os.path.join(os.path.dirname(model) or ".", "build")
    from jx.codegen.cpu.artifact import BuildError, EntryProgram, build_artifact
    from jx.passes.fuse import fuse
    programs = []
    for e in selected:
        traced, _, _ = dump.trace_entry(e, shown, "trace")
        if not traced.outputs:
            raise CliError(f"entry {e.name!r} returns no arrays (a missing `return`?): a "
                           "compiled entry must return at least one array",
                           where=e.source)
        graph = pipeline.run(traced, check=False)
        traced_names = [n for n in e.arg_names if n not in e.static]
        programs.append(EntryProgram(e.name, fuse(graph), traced.in_tree.children[0],
                                     traced.out_tree, traced_names))
    try:
        if target == "cuda":
            from jx.codegen.cuda.artifact import build_artifact as build_cuda
            return build_cuda(stem, programs, out_dir, arch=arch)
        _tune_host()
        return build_artifact(stem, programs, out_dir, cpu=cpu)
    except (BuildError, JxError) as err:
        raise CliError(f"compiling {shown} failed: {err}") from err


def _tune_host() -> None:
    """The host's tuned constants (codegen/cpu/tuning.py), measured on the first
    compile; say so, as it takes a few seconds."""
    from jx.autotune import ensure
    from jx.codegen.cpu import tuning
    if tuning.mode() == "auto" and tuning.record() is None:
        click.echo(f"measuring this host's code-generation constants (once; cached in "
                   f"{tuning.path()})...", err=True)
    ensure()


def register(main: click.Group, reports_errors) -> None:
    @main.command("compile")
    @click.argument("model", type=click.Path(dir_okay=False))
    @click.option("-o", "--output", "out_dir", default=None, metavar="DIR",
                  help="Output folder (default: build/ beside the model).")
    @click.option("--entry", "-e", "entries", multiple=True, metavar="NAME",
                  help="Entry to compile (repeatable); default: every entry.")
    @click.option("--shape", "-s", "shapes", multiple=True, metavar="ARG=SPEC",
                  help="Override a declared input, e.g. x=f32[256,784].")
    @click.option("--target", default="cpu", show_default=True, help="Backend.")
    @click.option("--cpu", default=None, metavar="NAME",
                  help="LLVM CPU name to compile for, e.g. x86-64-v3 (default: this "
                       "machine's, 'native').")
    @click.option("--name", default=None, help="Artifact name (default: the model's stem).")
    @click.option("--arch", default=None, metavar="SM",
                  help="GPU architecture for --target cuda (default sm_80; sm_90 for Hopper).")
    @reports_errors
    def compile_cmd(model, out_dir, entries, shapes, target, cpu, name, arch):
        """Compile MODEL's entries into a shared object with a C ABI and a C header
        (--target cuda: PTX, cubin where ptxas exists, and a .cuda.json manifest)."""
        t0 = time.perf_counter()
        res = compile_model(model, out_dir, entries, shapes, target, cpu, name, arch)
        dt = time.perf_counter() - t0
        names = ", ".join(e["name"] for e in res["manifest"]["entries"])
        click.echo(f"wrote {res['library']}  ({os.path.getsize(res['library'])} bytes, "
                   f"entries: {names})")
        for extra in ("header", "ptx", "cubin"):
            if res.get(extra):
                click.echo(f"wrote {res[extra]}")
        click.echo(f"content hash {res['manifest']['content_hash'][:16]}…  "
                   f"{'cache hit' if res['cache_hit'] else 'compiled'} in {dt:.2f} s")
