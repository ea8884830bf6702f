"""`jx compile`: trace a model's entries, run the pipeline, fuse, and build the
artifact (shared object + C header) for the target."""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time

import click

from jx import gc_pause
from jx.errors import JxError

from . import check as check_mod, dump, loading
from .errors import CliError, Diagnostics


def compile_model(model: str, out_dir: str | None, entries: tuple, shapes: tuple,
                  target: str, cpu: str | None, name: str | None, arch: str | None = None,
                  lenient: bool = False, prefix: str | None = None,
                  static: bool = False, bakes: tuple = (), specialize: tuple = ()) -> dict:
    """Build MODEL's artifact. lenient (several models in one call): --entry names and
    --shape / --bake arguments the model lacks are skipped (loading.NoEntrySelected if
    it has none of the entries). prefix: of its C symbols (default: the artifact name);
    static: a static library instead of a shared object; bakes: --bake ARG=FILE items
    (declared bakes apply too)."""
    if target not in ("cpu", "cuda"):
        raise CliError(f"unknown --target {target!r}; jx compiles for 'cpu' and 'cuda'.")
    if cpu is not None and target == "cpu":
        from jx.codegen.cpu.target import UnknownCpuError, check_cpu
        try:
            cpu = check_cpu(cpu)
        except UnknownCpuError as err:
            raise CliError(str(err)) from None
    if target == "cuda" and (prefix is not None or static):
        raise CliError(f"{'--static' if static else '--prefix'} is for --target cpu: a CUDA "
                       "build is PTX and a JSON manifest, loaded by jx.runtime.load")
    if prefix is not None:
        check_prefix_option(prefix)
    module = loading.load_model(model)
    selected = loading.select_entries(module, entries, only_present=lenient)
    loading.apply_shapes(selected, shapes, only_present=lenient)
    selected = loading.apply_bakes(selected, bakes, only_present=lenient)
    _apply_specialize(selected, specialize, lenient)
    shown = loading.display_path(model)
    stem = _stem(model, name, prefix)
    if not stem or os.sep in stem or (os.altsep and os.altsep in stem) or stem in (".", "..") \
            or not stem.isprintable():
        raise CliError(f"--name {stem!r} is not a file name: it names lib<NAME>.so and "
                       "<NAME>.h inside the output folder; use printable characters and no "
                       "path separators, and choose the folder with -o")
    out_dir = out_dir or os.path.join(os.path.dirname(model) or ".", "build")
    from jx import timings
    from jx.codegen.cpu import artifact
    from jx.codegen.cpu.artifact import BuildError, EntryProgram, build_artifact
    from jx.staging import fuse_graph
    programs, seconds, stages = [], {}, {}
    timings.take()               # what loading the model spent is no entry's
    for e in selected:
        t0 = time.perf_counter()
        with timings.stage("trace"):
            traced, _, _ = dump.trace_entry(e, shown, "trace")
        if not traced.outputs:
            raise CliError(f"entry {e.name!r} returns no arrays (a missing `return`?): a "
                           "compiled entry must return at least one array",
                           where=e.source)
        _, program = fuse_graph(traced, dump.entry_constraints(e))
        traced_names = [n for n in e.arg_names if n not in e.static]
        fixed = []
        for values in e.specializations():      # the fixed-size versions (specialize=)
            with timings.stage("trace"):
                at, _, _ = dump.trace_entry(e.fixed(values), shown, "trace")
            fixed.append((values, fuse_graph(at)[1]))
        programs.append(EntryProgram(e.name, program, traced.in_tree.children[0],
                                     traced.out_tree, traced_names, list(e.baked), fixed))
        seconds[e.name] = time.perf_counter() - t0
        stages[e.name] = timings.take()         # its trace, passes, fuse (and import)
    t0 = time.perf_counter()
    tune_s = 0.0
    try:
        if target == "cuda":
            from jx.codegen.cuda.artifact import build_artifact as build_cuda
            res = build_cuda(stem, programs, out_dir, arch=arch)
        else:
            _tune_host()             # (once per host: its jits are not this build's stages)
            tune_s = time.perf_counter() - t0
            timings.take()
            res = build_artifact(stem, programs, out_dir, cpu=cpu, prefix=prefix, static=static)
    except (BuildError, JxError) as err:
        raise CliError(f"compiling {shown} failed: {err}") from err
    build_s = time.perf_counter() - t0
    build_stages = timings.take()
    emitted = dict(artifact.EMIT_SECONDS) if target == "cpu" and not res.get("cache_hit") \
        else {}
    # where each entry is declared, the time to trace, transform and fuse it
    # (entry_seconds) and where its time went, its IR's emission included
    # (entry_stages); the artifact's module-wide work (its own IR, LLVM, link, load)
    # is build_s, by stage in build_stages
    return {**res, "sources": {e.name: e.source for e in selected},
            "entry_seconds": seconds, "build_s": build_s,
            "entry_stages": {n: {**st, "emit": emitted.get(n, 0.0)}
                             for n, st in stages.items()},
            "build_stages": _module_stages(build_stages, sum(emitted.values()), build_s,
                                           tune_s)}


ENTRY_STAGES = ("trace", "passes", "fuse", "emit")
MODULE_STAGES = ("emit", "optimise", "codegen", "link", "load")   # (llvm: the worker's)


def _module_stages(took: dict, entries_emit: float, build_s: float, tune_s: float) -> dict:
    """The build's stages with the entries' own IR emission taken out of "emit" (what
    is left: the module's shared functions, its text, the manifest), "tune" (measuring
    the host's code-generation constants, the first build on a host) and "other",
    what no stage covers (the header, the caches' files, hashing)."""
    out = {k: 0.0 for k in MODULE_STAGES}
    out.update(took)
    if tune_s:
        out["tune"] = tune_s
    out["emit"] = max(0.0, out["emit"] - entries_emit)
    out["other"] = max(0.0, build_s - entries_emit - sum(out.values()))
    return out


def entry_times(res: dict, name: str) -> tuple:
    """({stage: seconds}, total seconds) of entry `name` in a compile_model result:
    its trace, passes, fuse and emit (import too when the entry loaded the passes),
    each rounded down, the total (its trace and fuse window plus its emission)
    rounded up, so the stages never sum past the total."""
    st = {k: 0.0 for k in ENTRY_STAGES}
    st.update(res.get("entry_stages", {}).get(name, {}))
    total = res["entry_seconds"].get(name, 0.0) + st["emit"]
    return ({k: math.floor(v * 1e6) / 1e6 for k, v in st.items()},
            math.ceil(total * 1e6) / 1e6)


def _apply_specialize(selected: list, items: tuple, lenient: bool) -> None:
    """--specialize B=1,128: fixed-size versions of every selected entry with B."""
    from jx.export import EntryError, check_specialize
    for item in items:
        name, eq, sizes = item.partition("=")
        try:
            values = [int(n) for n in sizes.split(",") if n.strip()]
            spec = check_specialize({name.strip(): values}, "") if eq and values else None
        except (ValueError, EntryError):
            spec = None
        if spec is None:
            raise CliError(f"bad --specialize {item!r}: give SYMBOL=N[,N...], e.g. B=1,128")
        hit = [e for e in selected if name.strip() in e.symbols()]
        if not hit and not lenient:
            raise CliError(f"bad --specialize {item!r}: no selected entry has a symbolic "
                           f"dimension {name.strip()!r}")
        for e in hit:
            merged = sorted(set(e.specialize.get(name.strip(), [])) | set(spec[name.strip()]))
            e.specialize = {**e.specialize, name.strip(): merged}
    for e in selected:
        try:
            e.check_specialize()
        except EntryError as err:
            raise CliError(f"--specialize: {err}") from None


def _stem(model: str, name: str | None, prefix: str | None) -> str:
    """The artifact's file name: --name, else --prefix (so two builds of one model
    with different prefixes get different files, which one program can link), else
    the model's."""
    return name or prefix or os.path.splitext(os.path.basename(model))[0]


def check_prefix_option(prefix: str) -> None:
    """CliError for a --prefix that cannot start C symbols."""
    from jx.codegen.cpu.artifact import BuildError, check_prefix
    try:
        check_prefix(prefix)
    except BuildError as err:
        raise CliError(f"--prefix: {err}") from None


def _tune_host() -> None:
    """The host's tuned constants (codegen/cpu/tuning.py), measured on the first
    compile; say so, as it takes a few seconds."""
    from jx.autotune import ensure
    from jx.codegen.cpu import tuning
    if tuning.mode() == "auto" and tuning.record() is None:
        click.echo(f"measuring this host's code-generation constants (once; cached in "
                   f"{tuning.path()})...", err=True)
    ensure()


def _artifact_base(model: str, out_dir: str | None, name: str | None,
                   prefix: str | None = None) -> str:
    """out_dir/<stem>: where compile_model writes this model's files."""
    stem = _stem(model, name, prefix)
    return os.path.join(out_dir or os.path.join(os.path.dirname(model) or ".", "build"), stem)


def _check_models(models: tuple, out_dir: str | None, name: str | None,
                  prefix: str | None = None) -> None:
    """Several models in one call: each its own artifact, none overwriting another."""
    if len(models) > 1 and name:
        raise CliError(f"--name {name!r} names one artifact but {len(models)} models were "
                       "given; compile them one per call to name each, or drop --name "
                       "(each artifact is then named after its model)")
    if len(models) > 1 and prefix:
        raise CliError(f"--prefix {prefix!r} would give {len(models)} models the same C "
                       "symbols; compile them one per call to choose each prefix, or drop "
                       "--prefix (each then uses its model's name)")
    seen: dict = {}
    for m in models:
        base = os.path.normpath(os.path.abspath(_artifact_base(m, out_dir, name)))
        if base in seen and os.path.abspath(seen[base]) != os.path.abspath(m):
            raise CliError(f"{seen[base]} and {m} would both be written as "
                           f"{loading.display_path(base)} (same file name, same output "
                           "folder); compile them in separate calls with different -o")
        seen[base] = m


def _existing_entries(model: str, out_dir: str | None, name: str | None,
                      prefix: str | None = None) -> dict:
    """{artifact path: its entry names, or None if unreadable} of the artifacts this
    build may replace, read from the files (not loaded)."""
    from . import artifact_file
    base = _artifact_base(model, out_dir, name, prefix)
    found = {}
    folder, stem = os.path.split(base)
    for path in (os.path.join(folder, f"lib{stem}.so"), os.path.join(folder, f"lib{stem}.a"),
                 base + artifact_file.CUDA_SUFFIX):
        if os.path.isfile(path):
            try:
                found[os.path.abspath(path)] = [e["name"] for e in
                                                artifact_file.describe(path)["manifest"]["entries"]]
            except CliError:
                found[os.path.abspath(path)] = None
    return found


def _warn_replaced(before: dict, res: dict) -> None:
    """A rebuild whose entries differ from the artifact it replaced says so."""
    path = res["library"]
    if os.path.abspath(path) not in before:
        return
    old = before[os.path.abspath(path)]
    new = [e["name"] for e in res["manifest"]["entries"]]
    if old is None:
        click.echo(f"warning: replaced {path}, which was not a readable jx artifact", err=True)
        return
    dropped = [n for n in old if n not in new]
    added = [n for n in new if n not in old]
    if dropped or added:
        parts = ([f"dropped entries {', '.join(dropped)}"] if dropped else []) + \
            ([f"added {', '.join(added)}"] if added else [])
        click.echo(f"warning: replaced {path}, which had entries {', '.join(old)}: "
                   f"{'; '.join(parts)} (compile with every --entry to keep them)", err=True)


def register(main: click.Group, reports_errors) -> None:
    @main.command("compile")
    @click.argument("models", nargs=-1, required=True, metavar="MODEL.py...",
                    type=click.Path(dir_okay=False))
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
    @click.option("--prefix", default=None, metavar="NAME",
                  help="Prefix of every exported C symbol: NAME_<entry>, NAME_manifest, ... "
                       "(default: the artifact name); names the files too unless --name "
                       "is given.")
    @click.option("--bake", "bakes", multiple=True, metavar="ARG=FILE",
                  help="Store argument ARG's arrays in the artifact (a .npz keyed by leaf "
                       "path, e.g. w1 or layers.0.b, or a .npy for an array argument): the "
                       "entry then takes the other arguments (repeatable).")
    @click.option("--specialize", "specialize", multiple=True, metavar="SYMBOL=N[,N...]",
                  help="Also compile entries with symbolic dimension SYMBOL at these sizes "
                       "(e.g. B=1,128): a call at exactly them runs that version, the "
                       "symbolic one serves the rest (repeatable).")
    @click.option("--static", is_flag=True,
                  help="Write a static library lib<NAME>.a, with <NAME>.pc (pkg-config) and "
                       "<NAME>Config.cmake (CMake find_package), instead of a shared object.")
    @click.option("--check", is_flag=True,
                  help="Build in a temporary folder and compare with the artifacts already "
                       "in the output folder, writing nothing there: exit 0 if they are "
                       "identical, 1 naming each that differs or is missing and why.")
    @click.option("--json", "json_path", default=None, metavar="FILE|-",
                  help="Write what was built (or checked) as JSON: artifacts, entries, "
                       "shapes, content hashes, compile times (per entry by stage); - "
                       "prints it on stdout.")
    @click.option("-v", "--verbose", is_flag=True,
                  help="Print where each entry's compile time went (trace, passes, fuse, "
                       "emit) and the module-wide LLVM and link time.")
    @reports_errors
    def compile_cmd(models, out_dir, entries, shapes, target, cpu, name, arch, prefix, bakes,
                    specialize, static, check, json_path, verbose):
        """Compile each MODEL's entries into a shared object with a C ABI and a C header
        (--static: a static library; --target cuda: PTX, cubin where ptxas exists, and
        a .cuda.json manifest). Exported symbols start with the artifact's prefix.
        With several models, --entry and --shape apply to the models that have
        those entries and arguments."""
        models = tuple({os.path.abspath(m): m for m in models}.values())   # once each
        _check_models(models, out_dir, name, prefix)
        many = len(models) > 1
        built, records, problems = [], [], []
        echo = (lambda *a, **k: None) if json_path == "-" else click.echo
        for model in models:
            before = {} if check else _existing_entries(model, out_dir, name, prefix)
            dest = os.path.dirname(_artifact_base(model, out_dir, name, prefix))
            t0 = time.perf_counter()
            # --check builds in a temporary folder, compared with dest and then dropped
            place = tempfile.TemporaryDirectory(prefix="jx-check-") if check else \
                contextlib.nullcontext(out_dir)
            with place as tmp:
                try:
                    with gc_pause.paused():      # (see jx/gc_pause.py)
                        res = compile_model(model, tmp, entries, shapes, target, cpu, name,
                                            arch, lenient=many, prefix=prefix, static=static,
                                            bakes=bakes, specialize=specialize)
                except loading.NoEntrySelected as e:
                    click.echo(f"skipped {loading.display_path(model)}: {e.message}", err=True)
                    continue
                found = check_mod.compare(res, dest, loading.display_path(model),
                                          res["sources"]) if check else []
                res = _relocated(res, tmp, dest) if check else res
            if check:
                _report_check(res, found, echo)
                problems += found
            else:
                _report(res, time.perf_counter() - t0, echo)
                _warn_replaced(before, res)
            if verbose:
                _report_times(res, echo)
            built.append(res["manifest"])
            records.append(_record(model, res, time.perf_counter() - t0, found, check))
        if many:
            _check_all_used(entries, shapes, bakes, built)
        if json_path:
            _write_json(json_path, records, check)
        if problems:
            raise Diagnostics(problems, f"{len(problems)} difference"
                              f"{'' if len(problems) == 1 else 's'} from the committed "
                              "artifacts (jx compile --check)")


def _check_all_used(entries: tuple, shapes: tuple, bakes: tuple, manifests: list) -> None:
    """With several models: an --entry, --shape or --bake that matched no model is an
    error (a typo must not pass silently), reported after the builds that did match."""
    names = {e["name"] for m in manifests for e in m["entries"]}
    args = {a for m in manifests for e in m["entries"] for a in e.get("arg_names") or ()}
    baked = {b["arg"] for m in manifests for e in m["entries"] for b in e.get("baked") or ()}
    for item in bakes:
        if item.partition("=")[0].strip() not in baked:
            raise CliError(f"bad --bake {item!r}: no compiled entry has that argument")
    missing = [n for n in entries if n not in names]
    if missing:
        raise CliError(f"no model given has an entry {missing[0]!r}; check the --entry names")
    for item in shapes:
        arg = item.partition("=")[0].strip().split(".")[0]
        if arg not in args:
            raise CliError(f"bad --shape {item!r}: no compiled entry has an argument {arg!r}")


_FILES = ("library", "header", "pkgconfig", "cmake", "ptx", "cubin")


def _report(res: dict, dt: float, echo=click.echo) -> None:
    names = ", ".join(e["name"] for e in res["manifest"]["entries"])
    echo(f"wrote {res['library']}  ({os.path.getsize(res['library'])} bytes, "
         f"entries: {names})")
    for extra in _FILES[1:]:
        if res.get(extra):
            echo(f"wrote {res[extra]}")
    echo(f"content hash {res['manifest']['content_hash'][:16]}…  "
         f"{'cache hit' if res.get('cache_hit') else 'compiled'} in {dt:.2f} s")


def _report_times(res: dict, echo) -> None:
    """-v: one line per entry (where its time went) and one for the module-wide work."""
    for e in res["manifest"]["entries"]:
        st, total = entry_times(res, e["name"])
        parts = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in st.items()
                          if k in ENTRY_STAGES or v >= 5e-5)
        echo(f"entry {e['name']}: {parts}, total {total * 1e3:.1f} ms")
    mod = res.get("build_stages", {})
    parts = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in mod.items()
                      if k in MODULE_STAGES or v >= 5e-5)
    echo(f"module (all entries at once; LLVM and link): {parts}, total "
         f"{res.get('build_s', 0.0) * 1e3:.1f} ms"
         f"{' (artifact cache hit)' if res.get('cache_hit') else ''}")


def _report_check(res: dict, found: list, echo) -> None:
    if not found:
        names = ", ".join(e["name"] for e in res["manifest"]["entries"])
        echo(f"up to date: {res['library']} (entries: {names})")


def _relocated(res: dict, tmp: str, dest: str) -> dict:
    """A --check build's result with its file paths in the folder it was checked
    against (the temporary folder is gone once the check is done)."""
    return {k: (os.path.join(dest, os.path.relpath(v, tmp))
                if k in _FILES and isinstance(v, str) else v) for k, v in res.items()}


def _record(model: str, res: dict, dt: float, found: list, check: bool) -> dict:
    """One model's entry of `--json`: its artifact files and what they hold."""
    m = res["manifest"]
    rec = {"model": loading.display_path(model),
           "files": {k: res[k] for k in _FILES if res.get(k)},
           "sha256": res.get("sha256"), "content_hash": m.get("content_hash"),
           "jx_version": m.get("jx_version"), "target": m.get("target"), "cpu": m.get("cpu"),
           "prefix": m.get("prefix"), "cache_hit": res.get("cache_hit"),
           "seconds": round(dt, 4), "build_seconds": round(res.get("build_s", 0.0), 4),
           "build_stages": {k: round(v, 6) for k, v in res.get("build_stages", {}).items()},
           "entries": [{"name": e["name"], "source": res["sources"].get(e["name"]),
                        "trace_seconds": round(res["entry_seconds"].get(e["name"], 0.0), 4),
                        "stages": entry_times(res, e["name"])[0],
                        "total_seconds": entry_times(res, e["name"])[1],
                        "code_sha256": e.get("code_sha256"),
                        "inputs": e["inputs"], "outputs": e["outputs"],
                        **({"baked": e["baked"]} if e.get("baked") else {})}
                       for e in m["entries"]]}
    if check:
        rec["check"] = {"up_to_date": not found,
                        "differences": [{"where": w, "message": msg} for w, msg in found]}
    return rec


def _write_json(path: str, records: list, check: bool) -> None:
    import json
    from jx.version import __version__
    text = json.dumps({"command": "check" if check else "compile", "jx_version": __version__,
                       "models": records}, indent=1, sort_keys=True)
    if path == "-":
        click.echo(text)
        return
    try:
        with open(path, "w") as f:
            f.write(text + "\n")
    except OSError as e:
        raise CliError(f"--json {path}: cannot write the file ({e.strerror}).") from None

