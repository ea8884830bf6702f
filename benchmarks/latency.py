"""Compile latency (issue 27, item 1): the first call of every benchmark-suite case
and of every entry of samples/*.py, on jx and on JAX, each in a fresh process, cold
and warm:

  jx cold    empty object cache, seeded with jx's host runtime only (its C runtime
             and the host's tuned constants, as on a machine that compiled once)
  jx warm    a second fresh process sharing the cache the cold one filled
  JAX cold   no persistent compilation cache
  JAX warm   JAX's persistent compilation cache, filled by a process before it

    jx bench --suite latency [--only NAME] [--out DIR] [--json FILE|-] [--repeats N]
                             [--compile-breakdown]

The first call is timed from just before the jitted entry is called (model loaded,
inputs built, jx/JAX imported) until its results are NumPy arrays: trace,
transform, compile, load, and one run of the program (the backend's lazy imports
during it included: jx's `import` stage; JAX's backend starting). A second call in
the same process times the run alone. jx's first calls are split into the
`jx.timings` stages. Every process builds the same seeded inputs; the jx and JAX
results are compared leaf by leaf (measure.compare, the suite's tolerances).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from jx import timings

from . import machine, suite
from .compile_scaling import _seed_cache, build_runtime, byte_compile

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 900.0
# Sample entries not measured, and why.
SKIP = {("data_parallel.py", "device_step"):
        "a pmap per-device step (jx.bind_axis over 8 devices, run by jx_pmap_run across "
        "MPI ranks): no single-process jax.jit equivalent"}
# Sample entries with a symbolic dimension, measured at one size (the batch of mlp.py).
SHAPES = {("serve.py", "predict"): ("x=f32[128,784]",),
          ("serve.py", "classify"): ("x=f32[128,784]",)}
# The child: the benchmarks package (installed as jx.benchmarks, or the folder).
CHILD = ("import importlib, sys\n"
         "from jx.cli.bench import benchmarks_package\n"
         "importlib.import_module(benchmarks_package().__name__ + '.latency')"
         ".child(sys.argv[1:])\n")


@dataclass
class Row:
    name: str
    model: str                   # path of the model file
    entry: str
    shapes: tuple = ()           # --shape style overrides
    size: str = ""
    scales: dict = field(default_factory=dict)
    tolerance: tuple | None = None
    skip: str | None = None      # why it is not measured


def rows(only: tuple = ()) -> list:
    """The suite's cases (their full sizes), then every sample entry (declared shapes)."""
    out = [Row(c.name, c.model, c.entry, c.shapes, c.size, c.scales, c.tolerance)
           for c in suite.CASES]
    import jx
    from jx.cli import loading
    for path in sorted(glob.glob(os.path.join(suite.SAMPLES, "*.py"))):
        base = os.path.basename(path)
        try:
            entries = jx.entries_of(loading.load_model(path))
        except Exception as e:  # noqa: BLE001 - reported as a row
            out.append(Row(f"samples/{base}", path, "", skip=f"not loadable: {e}"))
            continue
        for e in entries:
            shapes = SHAPES.get((base, e.name), ())
            size = _specs(e) + (f" (at {', '.join(shapes)})" if shapes else "")
            out.append(Row(f"samples/{base}:{e.name}", path, e.name, shapes, size,
                           skip=SKIP.get((base, e.name))))
    if only:
        wanted = [o.lower() for o in only]
        out = [r for r in out if any(w in r.name.lower() for w in wanted)]
    return out


def _specs(entry) -> str:
    from .inputs import spec_text
    try:
        return spec_text(entry)
    except Exception:  # noqa: BLE001 - a description only
        return ""


# --- the measured process ------------------------------------------------------------

def child(argv: list) -> None:
    """One first call: argv = engine (jx | jax), a JSON job {model, entry, shapes,
    scales, out, jax_cache}; prints one JSON line {first_s, run_s, breakdown, ...}."""
    engine, job = argv[0], json.loads(argv[1])
    import numpy as np
    from jx.cli import loading

    from . import inputs
    module = loading.load_model(job["model"])
    entry = loading.select_entries(module, (job["entry"],))[0]
    loading.apply_shapes([entry], tuple(job["shapes"]))
    args = inputs.entry_inputs(entry, scales=job["scales"])
    static = inputs.static_argnums(entry)
    if engine == "jx":
        import jx
        fn, leaves_of = jx.jit(entry.fn, static_argnums=static), jx.tree.tree_leaves
    else:
        import jax
        from . import jaxshim
        if job.get("jax_cache"):
            jax.config.update("jax_compilation_cache_dir", job["jax_cache"])
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        fns, note = jaxshim.jax_entries(job["model"])
        if job["entry"] not in fns:
            raise SystemExit(note or f"no JAX function for {job['entry']}")
        jaxshim.enable_x64_if_needed(jax.tree_util.tree_leaves(
            [a for i, a in enumerate(args) if i not in static]))
        fn, leaves_of = jax.jit(fns[job["entry"]], static_argnums=static), \
            jax.tree_util.tree_leaves
    timings.take()                        # what loading the model compiled is not ours
    t0 = time.perf_counter()
    out = fn(*args)
    arrays = [np.asarray(x) for x in leaves_of(out)]
    first = time.perf_counter() - t0
    breakdown = timings.take() if engine == "jx" else None
    t0 = time.perf_counter()
    [np.asarray(x) for x in leaves_of(fn(*args))]
    run = time.perf_counter() - t0
    rec = {"first_s": first, "run_s": run, "breakdown": breakdown,
           "checksum": float(sum(np.asarray(a, np.float64).sum() for a in arrays
                                 if a.dtype.kind in "biufc").real)}
    if engine == "jx":
        compiled = next(iter(getattr(fn, "_cache", {}).values()), None)
        hit = getattr(getattr(getattr(compiled, "fn", None), "jit", None), "cache_hit", None)
        rec["object_cache_hit"] = None if hit is None else bool(hit)
    if job.get("out"):
        np.savez(job["out"], *arrays)
    print(json.dumps(rec))


def first_call(engine: str, row: Row, env_extra: dict, out: str | None = None,
               jax_cache: str | None = None, timeout: float = TIMEOUT_S) -> dict:
    """{first_s, run_s, breakdown, checksum[, object_cache_hit]} of one fresh process,
    or {error}."""
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.update(env_extra)
    job = {"model": row.model, "entry": row.entry, "shapes": list(row.shapes),
           "scales": row.scales, "out": out, "jax_cache": jax_cache}
    try:
        r = subprocess.run([sys.executable, "-c", CHILD, engine, json.dumps(job)], env=env,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"not done in {timeout:.0f} s"}
    if r.returncode != 0:
        return {"error": _last_error(r.stderr)}
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "no result printed: " + r.stdout[-200:]}


def _last_error(stderr: str) -> str:
    """The exception line of a child's traceback (JAX appends notes after it)."""
    lines = stderr.strip().splitlines() or ["?"]
    for line in reversed(lines):
        if re.match(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line[:300]
    return lines[-1][:300]


def _load(path: str) -> list | None:
    import numpy as np
    if not os.path.isfile(path):
        return None
    with np.load(path) as z:
        return [z[f"arr_{i}"] for i in range(len(z.files))]


def _agrees(got: list | None, ref: list | None, tolerance) -> tuple:
    """(True/False/None, mismatches): jx's leaves against JAX's."""
    from . import measure
    if got is None or ref is None:
        return None, []
    if len(got) != len(ref):
        return False, [f"{len(got)} results from jx, {len(ref)} from JAX"]
    problems = measure.compare("jx", got, ref, tolerance)
    return not problems, [str(p) for p in problems][:3]


def measure_row(row: Row, with_jax: bool = True, repeats: int = 1) -> dict:
    """The four first calls of one entry (jx cold and warm, JAX cold and warm), each
    `repeats` times (every time with fresh caches); of each, the record of the median
    time is kept, all times in samples_s."""
    res = {"name": row.name, "size": row.size, "model": os.path.relpath(row.model,
                                                                        suite.ROOT),
           "entry": row.entry}
    if row.skip:
        res["skipped"] = row.skip
        return res
    kinds = ("jx_cold", "jx_warm") + (("jax_cold", "jax_fill", "jax_warm") if with_jax
                                      else ())
    recs = {k: [] for k in kinds}
    got = ref = None
    for rep in range(repeats):
        with tempfile.TemporaryDirectory(prefix="jx-latency-") as tmp:
            cache = os.path.join(tmp, "jx-cache")
            os.makedirs(cache)
            _seed_cache(cache)
            env = {"JX_CACHE_DIR": cache}
            jx_out, jax_out = os.path.join(tmp, "jx.npz"), os.path.join(tmp, "jax.npz")
            recs["jx_cold"].append(first_call("jx", row, env, out=jx_out if rep == 0
                                              else None))
            recs["jx_warm"].append(first_call("jx", row, env))
            got = _load(jx_out) if rep == 0 else got
            if with_jax:
                jcache = os.path.join(tmp, "jax-cache")
                recs["jax_cold"].append(first_call("jax", row, {}, out=jax_out if rep == 0
                                                   else None))
                recs["jax_fill"].append(first_call("jax", row, {}, jax_cache=jcache))
                recs["jax_warm"].append(first_call("jax", row, {}, jax_cache=jcache))
                res["jax_cache_entries"] = len(os.listdir(jcache)) \
                    if os.path.isdir(jcache) else 0
                ref = _load(jax_out) if rep == 0 else ref
    for k in kinds:
        res[k] = _median_record(recs[k])
    if with_jax:
        res["agrees"], res["mismatches"] = _agrees(got, ref, row.tolerance)
    for kind in ("cold", "warm"):
        a = res.get(f"jx_{kind}", {}).get("first_s")
        b = (res.get(f"jax_{kind}") or {}).get("first_s")
        res[f"ratio_{kind}"] = a / b if a and b else None
    return res


def _median_record(recs: list) -> dict:
    """The record whose first call took the median time (the lower middle of an even
    count), with every time in samples_s; the first error when none finished."""
    ok = sorted((r for r in recs if r.get("first_s") is not None),
                key=lambda r: r["first_s"])
    if not ok:
        return recs[0]
    out = dict(ok[(len(ok) - 1) // 2])
    if len(recs) > 1:
        out["samples_s"] = [r.get("first_s") for r in recs]
    return out


def run(only: tuple = (), with_jax: bool = True, progress=print, row_list=None,
        repeats: int = 1) -> list:
    byte_compile()
    build_runtime()
    out = []
    for row in (row_list if row_list is not None else rows(only)):
        r = measure_row(row, with_jax, repeats)
        out.append(r)
        if r.get("skipped"):
            progress(f"{row.name}: skipped ({r['skipped']})")
        else:
            progress(f"{row.name}: jx {_s(r, 'jx_cold')} / {_s(r, 'jx_warm')}, "
                     f"JAX {_s(r, 'jax_cold')} / {_s(r, 'jax_warm')}")
    return out


# --- the report ------------------------------------------------------------------

def _s(r: dict, key: str) -> str:
    rec = r.get(key)
    if not rec:
        return "-"
    if rec.get("first_s") is not None:
        t = rec["first_s"]
        return f"{1e3 * t:.0f} ms" if t < 10 else f"{t:.1f} s"
    return "error: " + rec.get("error", "?")[:80].replace("|", "/")


def _ms(t) -> str:
    return "-" if t is None else f"{1e3 * t:.0f} ms" if t >= 0.01 else f"{1e3 * t:.2f} ms"


def _ratio(x) -> str:
    return f"{x:.2f}" if x else "-"


def summary(results: list) -> dict:
    measured = [r for r in results if not r.get("skipped")]
    cold = [r for r in measured if r.get("ratio_cold")]
    warm = [r for r in measured if r.get("ratio_warm")]
    return {"rows": len(measured), "skipped": len(results) - len(measured),
            "cold_compared": len(cold), "warm_compared": len(warm),
            "jx_cold_le_jax_cold": sorted(r["name"] for r in cold if r["ratio_cold"] <= 1),
            "jx_warm_le_jax_warm": sorted(r["name"] for r in warm if r["ratio_warm"] <= 1),
            "geomean_ratio_cold": _geomean([r["ratio_cold"] for r in cold]),
            "geomean_ratio_warm": _geomean([r["ratio_warm"] for r in warm])}


def _geomean(xs: list):
    import math
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def report(results: list, command: str, commit: str | None = None, repeats: int = 1) -> str:
    s = summary(results)
    lines = ["# Compile latency: first call, cold and warm, jx vs JAX (issue 27)", "",
             f"Command: `{command}`" + (f" at commit {commit}" if commit else ""), "",
             f"CPU: {machine.cpu_model()}, {machine.cores()} cores. Each first call runs "
             "in a fresh process, timed from the call of the jitted entry (imports, model "
             "and inputs done) until its results are NumPy arrays: trace, compile, load "
             "and one run. jx cold: empty object cache seeded with jx's host runtime; jx "
             "warm: a second process on the cache the cold one filled. JAX cold: no "
             "persistent cache; JAX warm: its persistent compilation cache, filled by a "
             "process before. `run` is a second call in the cold jx process (the program "
             "alone)." + (f" Each time is the median of {repeats} such processes (all in "
                          "the JSON's samples_s)." if repeats > 1 else ""), "",
             "| entry | size | jx cold | jx warm | JAX cold | JAX warm | jx/JAX cold | "
             "jx/JAX warm | jx run | agrees |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.get("skipped"):
            lines.append(f"| {r['name']} | {r['size']} | skipped: {r['skipped']} "
                         "| | | | | | | |")
            continue
        run_s = (r.get("jx_cold") or {}).get("run_s")
        agrees = {True: "yes", False: "NO", None: "-"}[r.get("agrees")]
        lines.append(f"| {r['name']} | {r['size']} | {_s(r, 'jx_cold')} | "
                     f"{_s(r, 'jx_warm')} | {_s(r, 'jax_cold')} | {_s(r, 'jax_warm')} | "
                     f"{_ratio(r.get('ratio_cold'))} | {_ratio(r.get('ratio_warm'))} | "
                     f"{_ms(run_s)} | {agrees} |")
    lines += ["", f"jx cold <= JAX cold: {len(s['jx_cold_le_jax_cold'])} of "
              f"{s['cold_compared']} entries; jx warm <= JAX warm (persistent cache): "
              f"{len(s['jx_warm_le_jax_warm'])} of {s['warm_compared']}. Geometric mean "
              f"jx/JAX: cold {_ratio(s['geomean_ratio_cold'])}, warm "
              f"{_ratio(s['geomean_ratio_warm'])}."]
    lines += breakdown(results)
    return "\n".join(lines) + "\n"


def breakdown(results: list) -> list:
    """Where jx's first calls went, cold and warm, stage by stage (ms)."""
    recs = [(r["name"], kind, r[f"jx_{kind}"]) for r in results for kind in ("cold", "warm")
            if (r.get(f"jx_{kind}") or {}).get("breakdown") is not None]
    if not recs:
        return []
    stages = [st for st in timings.STAGES if any(st in b["breakdown"] for _, _, b in recs)]
    stages += sorted({st for _, _, b in recs for st in b["breakdown"]} - set(stages))
    out = ["", "Where jx's first call goes (ms; `jx.timings` stages: import = the backend's "
           "modules on first use, trace, passes, fuse, emit = LLVM IR, optimise and "
           "codegen = LLVM in this process, llvm = both in the compile worker, load = the "
           "object into the process; other = what no stage covers: running the program "
           "and the Python between stages):", "",
           "| entry | cache | " + " | ".join(stages) + " | other | total |",
           "|---|---|" + "---|" * (len(stages) + 2)]
    for name, kind, rec in recs:
        b, total = rec["breakdown"], rec["first_s"]
        cells = [f"{1e3 * b[st]:.0f}" if st in b else "-" for st in stages]
        hit = rec.get("object_cache_hit")
        label = kind + (" (hit)" if kind == "warm" and hit else
                        " (MISS)" if kind == "warm" and hit is False else "")
        out.append(f"| {name} | {label} | " + " | ".join(cells) +
                   f" | {1e3 * (total - sum(b.values())):.0f} | {1e3 * total:.0f} |")
    return out


def _commit() -> str | None:
    """The checkout's commit, and the source files it had changed (the measured code)."""
    try:
        r = subprocess.run(["git", "-C", suite.ROOT, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        d = subprocess.run(["git", "-C", suite.ROOT, "status", "--porcelain"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if not r.stdout.strip():
        return None
    changed = [line[3:] for line in d.stdout.splitlines()
               if line[3:].endswith(".py") and not line[3:].startswith(("tests/",
                                                                        "benchmarks/"))]
    return r.stdout.strip() + (f" (with uncommitted changes to {', '.join(changed)})"
                               if changed else "")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="jx bench --suite latency")
    p.add_argument("--out", default=os.path.join(HERE, "results-latency.md"),
                   help="markdown report (a .json beside it holds the raw numbers)")
    p.add_argument("--only", action="append", default=[])
    p.add_argument("--json", default=None, help="also write the JSON here (- : stdout, "
                   "instead of the report)")
    p.add_argument("--compile-breakdown", action="store_true",
                   help="accepted: the report always ends with the breakdown")
    p.add_argument("--no-jax", action="store_true")
    p.add_argument("--repeats", type=int, default=1,
                   help="measure each first call N times (fresh caches each time) and "
                        "keep the median")
    args = p.parse_args(argv)
    with_jax = not args.no_jax
    if with_jax:
        try:
            import jax  # noqa: F401
        except ImportError:
            with_jax = False
    quiet = args.json == "-"
    commit_start = _commit()
    t0 = time.perf_counter()
    results = run(tuple(args.only), with_jax,
                  progress=lambda m: print(m, file=sys.stderr if quiet else sys.stdout,
                                           flush=True), repeats=max(1, args.repeats))
    command = "jx bench --suite latency" + "".join(f" --only {o}" for o in args.only) + \
        (f" --repeats {args.repeats}" if args.repeats > 1 else "")
    commit_end = _commit()
    commit = commit_start if commit_end == commit_start else \
        f"{commit_start}, the checkout moving to {commit_end} during the run"
    text = report(results, command, commit, max(1, args.repeats))
    doc = {"command": command, "commit": commit, "repeats": max(1, args.repeats),
           "cpu": machine.cpu_model(),
           "cores": machine.cores(), "with_jax": with_jax, "summary": summary(results),
           "stages": list(timings.STAGES), "rows": results,
           "seconds": time.perf_counter() - t0}
    if not quiet:
        print(text)
    with open(args.out, "w") as f:
        f.write(text)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(doc, f, indent=1, default=float)
    if args.json == "-":
        json.dump(doc, sys.stdout, indent=1, default=float)
        print()
    elif args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, default=float)
    return 1 if any(r.get("agrees") is False for r in results) else 0
