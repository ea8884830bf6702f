"""`jx bench`: time a model's entries compiled by jx against eager NumPy and JAX,
check that they agree, and relate the times to the machine's limits.

    jx bench MODEL.py [--entry NAME] [--shape ARG=SPEC] [--json FILE|-] [--wide] [--min-time S]
    jx bench build/libmodel.so [--model MODEL.py]     a compiled artifact
    jx bench benchmarks/ [--quick] [--only NAME] [--out DIR] [--busy N]   the suite
    jx bench --machine                                  the machine's limits
    jx bench --target cuda [--quick]                    the CUDA backend's GPU suite

The table fits the terminal (a compact one: the most telling columns, short
labels); --wide prints every column, --json FILE writes every figure (--json -
prints the JSON instead of the table).

The measuring code lives in the repository's benchmarks/ package, a library
(see its __init__); this module is the one command line around it.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time

import click
from rich.text import Text      # printed text is never read as rich markup

from .errors import CliError


def benchmarks_package():
    """The benchmarks package: installed as jx.benchmarks, or the folder beside cli/."""
    for name in ("jx.benchmarks", "benchmarks"):
        mod = sys.modules.get(name)
        if mod is not None and hasattr(mod, "__path__"):
            return mod
    try:
        return importlib.import_module("jx.benchmarks")
    except ImportError:
        pass
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "benchmarks")
    init = os.path.join(folder, "__init__.py")
    if not os.path.isfile(init):
        raise CliError("jx bench needs the benchmarks package of the jx repository, which "
                       f"is not at {folder}; run it from a source checkout (pip install -e .)")
    spec = importlib.util.spec_from_file_location("benchmarks", init,
                                                  submodule_search_locations=[folder])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks"] = mod
    spec.loader.exec_module(mod)
    return mod


def _sub(name: str):
    pkg = benchmarks_package()
    return importlib.import_module(f"{pkg.__name__}.{name}")


def _artifact_model(path: str, given: str | None) -> str | None:
    """The model source of an artifact: --model, else <stem>.py beside the artifact's
    folder (jx compile writes build/ beside the model) or inside it."""
    if given:
        return given
    base = os.path.basename(path)
    stem = os.path.splitext(base[3:] if base.startswith("lib") else base)[0]
    folder = os.path.dirname(os.path.abspath(path))
    for cand in (os.path.join(os.path.dirname(folder), stem + ".py"),
                 os.path.join(folder, stem + ".py")):
        if os.path.isfile(cand):
            return cand
    return None


def _model_items(path: str, names: tuple, shapes: tuple, jax: bool) -> list:
    from . import loading
    runner, inputs, jaxshim = _sub("runner"), _sub("inputs"), _sub("jaxshim")
    module = loading.load_model(path)
    selected = loading.select_entries(module, names)
    loading.apply_shapes(selected, shapes)
    fns, note = jaxshim.jax_entries(path) if jax else ({}, "JAX skipped (--no-jax)")
    shown = os.path.basename(path)
    return [runner.BenchItem(f"{shown}:{e.name}", e, jax_fn=fns.get(e.name), jax_note=note,
                             size=inputs.spec_text(e)) for e in selected]


def _artifact_items(path: str, names: tuple, shapes: tuple, model: str | None,
                    jax: bool) -> list:
    import jx.runtime
    from . import loading
    runner = _sub("runner")
    try:
        art = jx.runtime.load(path)
    except jx.runtime.ArtifactError as e:
        raise CliError(f"cannot bench {path}: {e}.") from e
    unknown = [n for n in names if n not in art]
    if unknown:
        raise CliError(f"{path} has no entry {unknown[0]!r}; its entries are: "
                       f"{', '.join(art.entries)}. Pick one of those with --entry.")
    chosen = list(dict.fromkeys(names)) or list(art.entries)
    model = _artifact_model(path, model)
    shown = os.path.basename(path)
    if model is None:
        return [runner.BenchItem(f"{shown}:{n}", artifact_entry=art[n]) for n in chosen]
    items = {it.entry.name: it for it in _model_items(model, (), shapes, jax)}
    out = []
    for n in chosen:
        item = items.get(n)
        if item is None:
            raise CliError(f"{loading.display_path(model)} has no entry {n!r} of {path}; "
                           "pass the artifact's model source with --model.")
        _check_shapes(art[n], item.entry, path, model)
        item.artifact_entry, item.name = art[n], f"{shown}:{n}"
        out.append(item)
    return out


def _check_shapes(centry, entry, path: str, model: str) -> None:
    from jx import tree
    declared = [(tuple(s.shape), s.dtype) for s in tree.tree_leaves(entry.args)]
    built = [(tuple(leaf.shape), leaf.dtype) for leaf in centry.inputs]
    if declared != built:
        raise CliError(f"{path} entry {entry.name!r} was compiled for inputs "
                       f"{[f'{d.name}{list(s)}' for s, d in built]}, but {model} declares "
                       f"{[f'{d.name}{list(s)}' for s, d in declared]}; pass the --shape "
                       "overrides it was compiled with.")


def _suite_items(quick: bool, names: tuple, jax: bool) -> list:
    suite = _sub("suite")
    cases = suite.select(names)
    if not cases:
        raise CliError(f"no suite case matches {', '.join(names)}; cases: "
                       f"{', '.join(c.name for c in suite.CASES)}.")
    return suite.items(cases, quick=quick, jax=jax)


def _items(path: str, names, shapes, model, jax: bool, quick: bool) -> list:
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "suite.py")):
            return _suite_items(quick, names, jax)
        files = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if f.endswith(".py") and not f.startswith("_"))
        files = [f for f in files if "jx.export" in open(f, encoding="utf-8").read()]
        if not files:
            raise CliError(f"{path} holds no model files (Python files with @jx.export).")
        return [it for f in files for it in _model_items(f, (), shapes, jax)]
    if not os.path.exists(path):
        raise CliError(f"{path} does not exist; pass a model file, a compiled artifact "
                       "(lib<model>.so) or the benchmarks/ folder.")
    if path.endswith(".py"):
        return _model_items(path, names, shapes, jax)
    return _artifact_items(path, names, shapes, model, jax)


def is_suite(path: str | None) -> bool:
    """Whether PATH names the benchmarks/ folder (the suite)."""
    return path is not None and os.path.isdir(path) and \
        os.path.isfile(os.path.join(path, "suite.py"))


def run_bench(path, names, shapes, json_path, min_time, threads, machine_only, remeasure,
              model, no_jax, quick, debug, cold=False, busy=0, out_dir=None,
              wide=False) -> None:
    machine_mod, report, runner = _sub("machine"), _sub("report"), _sub("runner")
    out = report.console()
    err = report.console(stderr=True)
    if (busy or out_dir) and not (is_suite(path) and not machine_only):
        raise CliError("--busy and --out are options of the suite: pass the benchmarks/ "
                       "folder (jx bench benchmarks/ --busy N --out DIR).")
    if machine_only or path is None:
        if path is None and not machine_only:
            raise CliError("nothing to bench: pass a model file, an artifact or the "
                           "benchmarks/ folder (or --machine for the machine's limits).")
        machine = _limits(machine_mod, err, threads, remeasure, quick)
        codegen = _codegen_facts(err, remeasure)
        if json_path != "-":
            out.print(report.machine_table(machine))
            out.print(report.facts_table("code generation for this host", codegen))
        if json_path:
            report.write_json(json_path, {"command": _command(), "machine": machine,
                                          "codegen": codegen})
        return
    suite = is_suite(path)
    if min_time is None:        # the suite's smoke runs (--quick) time briefly
        min_time = 0.05 if suite and quick else 1.0
    items = _items(path, names, shapes, model, not no_jax, quick)
    machine = _limits(machine_mod, err, threads, remeasure, quick)
    opts = runner.Options(min_time=min_time, debug=debug, busy=busy,
                          engines=("jx", "numpy") if no_jax else ("jx", "numpy", "jax"),
                          min_reps=runner.BUSY_MIN_REPS if busy else _sub("measure").MIN_REPS)
    t0 = time.perf_counter()
    try:
        if cold:
            with _sub("engines").fresh_object_cache():
                results = runner.run_all(items, opts, machine)
        else:
            results = runner.run_all(items, opts, machine)
    except MemoryError as e:
        raise CliError(f"out of memory while benchmarking ({e}): the inputs, results and "
                       "their float64 reference copies must fit in memory together; bench "
                       "smaller shapes with --shape ARG=SPEC") from None
    elapsed = time.perf_counter() - t0
    if busy:
        _sub("busy_report").emit(out, results, machine, busy, _command(),
                                 out_dir or _sub("suite").HERE, elapsed)
    else:
        _report(out, err, report, results, machine, json_path, suite, out_dir, elapsed,
                wide)
    _check_results(err, results)
    return report.json_doc(results, machine, _command(), {})


def _report(out, err, report, results, machine, json_path, suite: bool, out_dir,
            elapsed: float, wide: bool = False) -> None:
    """The table, notes and geometric means (or, with --json -, the JSON alone on
    stdout); the suite also writes results.md and results.json (into --out, by
    default the benchmarks/ folder)."""
    summary = report.summarise(results)
    if json_path != "-":
        report.show(out, results, machine, wide=wide,
                    **({"title": "jx benchmark suite"} if suite else {}))
        if suite or len(results) > 1:
            for line in summary["lines"]:
                out.print(Text(line))
    extra = {"geomean_speedup_vs_numpy": summary["numpy"],
             "geomean_speedup_vs_jax": summary["jax"]}
    if json_path:
        report.write_json(json_path, report.json_doc(results, machine, _command(), extra))
    if suite:
        folder = out_dir or _sub("suite").HERE
        os.makedirs(folder, exist_ok=True)
        md = os.path.join(folder, "results.md")
        with open(md, "w") as f:
            f.write(report.markdown_doc(results, machine, _command(), summary, elapsed))
        report.write_json(os.path.join(folder, "results.json"), report.json_doc(
            results, machine, _command(), {**extra, "elapsed_s": elapsed}))
        (err if json_path == "-" else out).print(
            Text(f"wrote {md} and results.json ({elapsed:.0f} s)"))


def _check_results(err, results) -> None:
    """Engines that disagree, or entries no engine could run, fail the command."""
    bad = [r for r in results if r.get("agree") is False]
    for r in bad:
        err.print(Text.assemble(("ENGINES DISAGREE", "bold red"), f" on {r['name']} "
                                f"(reference: {r.get('reference')}):"), soft_wrap=True)
        for m in r["mismatches"]:
            err.print(Text(f"  {m}"), soft_wrap=True)
    if bad:
        names_bad = ", ".join(r["name"] for r in bad)
        raise CliError(f"the engines disagree on {names_bad}: their results differ beyond "
                       "the tolerance (details above), so those entries were not timed. "
                       "A jx result that differs from eager NumPy is a compiler bug: "
                       "please report it with the model.")
    failed = [r for r in results if r["engines"] and
              all("error" in rec for rec in r["engines"].values())]
    if failed:
        why = "; ".join(f"{r['name']}: {rec['label']}: {rec['error']}" for r in failed
                        for rec in list(r["engines"].values())[:1])
        raise CliError(f"no engine could run {', '.join(r['name'] for r in failed)} ({why}); "
                       "fix the model (or its shapes, with --shape) and bench it again")


def _limits(machine_mod, err, threads, remeasure, quick) -> dict:
    threads = threads or machine_mod.default_threads()
    if remeasure or machine_mod.cached(threads) is None:
        err.print(Text("measuring the machine's limits (once per machine; cached in "
                       f"{machine_mod.cache_path()})..."))
    return machine_mod.limits(threads, remeasure=remeasure, quick=quick)


def _codegen_facts(err, remeasure: bool) -> dict:
    """What the CPU backend derives from this host: read from it (target, GEMM
    blocking) or measured once and cached (tuning; again with --remeasure)."""
    from jx.autotune import ensure
    from jx.codegen.cpu import gemm, parallel, target, tuning
    if remeasure or (tuning.mode() == "auto" and tuning.record() is None):
        err.print(Text("measuring the code-generation constants (once per host; cached "
                       f"in {tuning.path()})..."))
        ensure(force=remeasure)
    facts = target.describe()
    facts["runtime threads"] = str(parallel.num_threads() or 1)
    facts.update(gemm.describe())
    facts.update(tuning.describe())
    return facts


def _command() -> str:
    return " ".join(["jx", *sys.argv[1:]])


# The suites that run programs of their own: --suite NAME -> (module, report file,
# the options it takes)
_PROGRAM_SUITES = {"corpus": ("corpus", "results-corpus.md", ("min_time", "only")),
                   "patterns": ("patterns", "results-patterns.md", ("min_time", "only")),
                   "compile": ("compile_scaling", "results-compile.md", ("only",)),
                   "latency": ("latency", "results-latency.md",
                               ("only", "json", "compile_breakdown", "repeats")),
                   "array-api": ("array_api", "results-array-api.md", ("only",)),
                   "eager": ("eager_control", "results-eager.md", ("steps", "min_time")),
                   "symbolic": ("symbolic", "results-symbolic.md", ("min_time", "only")),
                   "linalg": ("linalg", "results-linalg.md", ("min_time", "only")),
                   "conv": ("conv", "results-conv.md", ("min_time", "only")),
                   "fft": ("fft", "results-fft.md", ("min_time", "only"))}


def _run_program_suite(suite: str, entries, min_time, steps, out_dir, json_path=None,
                       compile_breakdown=False, repeats=None) -> None:
    module, report_file, takes = _PROGRAM_SUITES[suite]
    argv = []
    if "repeats" in takes and repeats is not None:
        argv += ["--repeats", str(repeats)]
    if "json" in takes and json_path is not None:
        argv += ["--json", json_path]
    if "compile_breakdown" in takes and compile_breakdown:
        argv += ["--compile-breakdown"]
    if "steps" in takes and steps is not None:
        argv += ["--steps", str(steps)]
    if "min_time" in takes and min_time is not None:
        argv += ["--min-time", str(min_time)]
    if "only" in takes:
        argv += [a for e in entries for a in ("--only", e)]
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        argv += ["--out", os.path.join(out_dir, report_file)]
    raise SystemExit(_sub(module).main(argv))


def register(main: click.Group, reports_errors) -> None:
    @main.command("bench")
    @click.argument("path", required=False, type=click.Path())
    @click.option("--entry", "-e", "--only", "entries", multiple=True, metavar="NAME",
                  help="Entry to bench (repeatable); default: every entry. With the "
                       "benchmarks/ folder: suite cases whose name contains NAME.")
    @click.option("--shape", "-s", "shapes", multiple=True, metavar="ARG=SPEC",
                  help="Override a declared input, e.g. x=f32[256,784].")
    @click.option("--target", default="cpu", show_default=True, help="Backend.")
    @click.option("--json", "json_path", default=None,
                  type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE",
                  help="Write every figure to FILE as JSON; - prints the JSON on stdout "
                       "instead of the table.")
    @click.option("--wide", is_flag=True,
                  help="Every column of the table, however wide (by default the table "
                       "fits the terminal: the columns that fit, short labels).")
    @click.option("--min-time", default=None, type=click.FloatRange(0), metavar="S",
                  help="Seconds to time each engine for (at least); default 1 (0.05 for "
                       "the suite with --quick).")
    @click.option("--threads", default=None, type=click.IntRange(1), metavar="N",
                  help="Threads for every engine (jx, BLAS, XLA); default: all cores.")
    @click.option("--machine", "machine_only", is_flag=True,
                  help="Print the machine's limits (measured once, then cached).")
    @click.option("--remeasure", is_flag=True,
                  help="Measure the machine's limits and the code-generation constants "
                       "again.")
    @click.option("--model", default=None, type=click.Path(dir_okay=False), metavar="FILE",
                  help="For an artifact: the model source it was compiled from (default: "
                       "<stem>.py beside its folder), for the NumPy and JAX engines.")
    @click.option("--no-jax", is_flag=True, help="Skip the JAX engine.")
    @click.option("--cold", is_flag=True,
                  help="Compile without jx's object cache, so first-call times include "
                       "LLVM (as on a first run).")
    @click.option("--quick", is_flag=True,
                  help="Smaller suite sizes and a quick machine measurement (smoke runs).")
    @click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
                  metavar="DIR", help="The suite: folder for results.md and results.json "
                                      "(default: the benchmarks/ folder).")
    @click.option("--suite", type=click.Choice(["kernels", "models", "allreduce", "eager",
                                                "corpus", "patterns", "array-api",
                                                "compile", "latency", "symbolic", "linalg",
                                                "conv", "fft"]),
                  default="kernels", show_default=True,
                  help="Which suite (no PATH): kernels (CPU suite, or the GPU's kernels "
                       "with --target cuda), models (whole model steps on the GPU, with "
                       "--target cuda), allreduce (pmap's psum against MPI; run under "
                       "mpirun for ranks), eager (lax loops called outside jit: "
                       "interpreted, compiled, JAX; --steps), corpus (the compatibility "
                       "corpus' jitted steps, jx vs JAX), patterns (issue 19's patterns of "
                       "real programs, jx vs JAX, with roofline fractions), array-api (the "
                       "array API conformance suite, whole, on jx.numpy and jax.numpy), "
                       "compile (first-call time of growing programs, jx vs JAX, each in a "
                       "fresh process), latency (the first call of every suite case and "
                       "sample entry, jx vs JAX, cold and with their persistent caches, "
                       "jx's time split by stage; --json FILE too), symbolic (one "
                       "artifact with a symbolic batch against one compiled per size), "
                       "linalg (decompositions and solvers, jx vs NumPy/SciPy and JAX, "
                       "with GFLOP/s), conv (convolutions, pooling and "
                       "a LeNet training step, jx vs JAX and NumPy, with GFLOP/s and GB/s), "
                       "fft (FFTs and a complex Mandelbrot loop, jx vs NumPy and JAX, with "
                       "GFLOP/s and accuracy).")
    @click.option("--compile-breakdown", is_flag=True,
                  help="The compile suite (--suite compile, unless --suite latency), whose "
                       "report ends with where each jx first call's time went: import, "
                       "trace, passes, fuse, LLVM IR emission, optimisation, code "
                       "generation, loading.")
    @click.option("--steps", default=None, type=click.IntRange(1), metavar="N",
                  help="--suite eager: loop steps per case (default 5000).")
    @click.option("--repeats", default=None, type=click.IntRange(1), metavar="N",
                  help="--suite latency: each first call measured N times, every time "
                       "in fresh processes with fresh caches; the median is reported "
                       "(default 1).")
    @click.option("--busy", default=0, type=click.IntRange(0), metavar="N",
                  help="The suite: time every engine quiet, then with N cores kept busy by "
                       "spinning processes; report the slowdowns (results-busy.md/.json).")
    @click.option("--baseline", default=None, type=click.Path(dir_okay=False),
                  metavar="OLD.json",
                  help="Compare this run with a saved --json run, entry by entry (jx's "
                       "median time; the noise each figure had).")
    @click.option("--compare", "compare_files", nargs=2, default=None,
                  type=click.Path(dir_okay=False), metavar="A.json B.json",
                  help="Compare two saved --json runs (A the baseline) without running.")
    @click.option("--fail-slower", default=None, type=click.FloatRange(0), metavar="PCT",
                  help="With --baseline or --compare: exit 1 when an entry is slower by "
                       "more than PCT percent beyond its noise.")
    @click.option("--any-machine", is_flag=True,
                  help="With --baseline or --compare: compare runs from different machines.")
    @reports_errors
    def bench_cmd(path, entries, shapes, target, json_path, min_time, threads, machine_only,
                  remeasure, model, no_jax, cold, quick, out_dir, busy, suite, compile_breakdown,
                  steps, repeats, wide, baseline, compare_files, fail_slower, any_machine):
        """Time PATH's entries (a model file, an artifact, or benchmarks/) on jx, eager
        NumPy and JAX, after checking that their results agree. --baseline and
        --compare turn a run (or two saved ones) into a performance gate."""
        if compare_files:
            if path or baseline:
                raise CliError("--compare A.json B.json compares two saved runs and runs "
                               "nothing: drop PATH and --baseline.")
            gate(compare_files[0], compare_files[1], None, fail_slower, any_machine)
            return
        if fail_slower is not None and not baseline:
            raise CliError("--fail-slower PCT needs a run to compare with: --baseline "
                           "OLD.json (or --compare A.json B.json).")
        if baseline:               # a bad baseline fails before the run, not after it
            try:
                _sub("compare").load(baseline)
            except _sub("compare").CompareError as e:
                raise CliError(f"--baseline {e}.") from None
        if compile_breakdown and suite != "latency":
            suite = "compile"
        if suite == "allreduce":
            raise SystemExit(_sub("allreduce").main(
                ["--min-time", str(min_time)] if min_time is not None else []))
        if suite in _PROGRAM_SUITES:
            _run_program_suite(suite, entries, min_time, steps, out_dir, json_path,
                               compile_breakdown, repeats)
        if suite == "models" and target != "cuda":
            raise CliError("--suite models times model steps on the GPU: add --target cuda")
        if target == "cuda":
            # the GPU suites: fused kernels (or model steps) vs JAX on the GPU
            try:
                if suite == "models":
                    raise SystemExit(_sub("gpu_models").main())
                raise SystemExit(_sub("gpu_kernels").main(["--quick"] if quick else []))
            except ImportError as e:
                raise CliError(f"jx bench --target cuda needs CuPy and an NVIDIA GPU ({e}); "
                               "install the extra: pip install 'jx[cuda]'.") from None
        if target != "cpu":
            raise CliError(f"unknown --target {target!r}; choose cpu or cuda.")
        if busy:
            most = _sub("busy").max_spinners()
            if busy > most:
                raise click.BadParameter(f"choose 1 to {most} (the cores this run may use)",
                                         param_hint="--busy")
        _sub("machine").ensure_threads(threads, "jx.cli.main")
        debug = bool(click.get_current_context().params.get("debug"))
        doc = run_bench(path, entries, shapes, json_path, min_time, threads, machine_only,
                        remeasure, model, no_jax, quick, debug, cold, busy, out_dir, wide)
        if baseline and doc is not None:
            gate(baseline, None, doc, fail_slower, any_machine)


def gate(old_path: str, new_path: str | None, new_doc: dict | None,
         fail_slower: float | None, any_machine: bool) -> None:
    """Print the comparison of two runs; CliError (exit 1) when an entry regressed."""
    compare, report = _sub("compare"), _sub("report")
    names = (os.path.basename(old_path), os.path.basename(new_path) if new_path
             else "this run")
    try:
        old = compare.load(old_path)
        new = compare.load(new_path) if new_path else new_doc
        result = compare.compare(old, new, fail_slower=fail_slower, any_machine=any_machine,
                                 names=names)
    except compare.CompareError as e:
        raise CliError(str(e) + ".") from None
    out = report.console()
    out.print(compare.table(result, names))
    if result["geomean_ratio"]:
        out.print(Text(f"geometric mean of {names[1]} / {names[0]} times: "
                       f"{result['geomean_ratio']:.3f}"))
    if result["regressed"]:
        raise CliError(f"{len(result['regressed'])} entr"
                       f"{'y' if len(result['regressed']) == 1 else 'ies'} slower than "
                       f"{names[0]} by more than {fail_slower:g}% beyond their noise: "
                       f"{', '.join(result['regressed'])}")
