"""python -m benchmarks [--quick] [--only NAME ...] [--min-time S] [--threads N] [--out DIR]
                     [--busy N]

Runs the suite (suite.py) on jx, eager NumPy and JAX; prints the table and the
geometric-mean speedups of jx over JAX and over NumPy; writes results.md and
results.json (default: into this folder).

--busy N times each engine quiet and then again while N spinning processes keep
N cores busy (busy.py), and reports the slowdowns instead (busy_report.py):
results-busy.md and results-busy.json.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import time

from . import busy, busy_report, engines, machine as machine_mod, measure, report, \
    runner, suite


def parse(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks",
                                description="Run jx's benchmark suite.")
    p.add_argument("--quick", action="store_true",
                   help="smaller sizes, short timing and a quick machine measurement")
    p.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="cases whose name contains NAME (repeatable)")
    p.add_argument("--min-time", type=float, default=None, metavar="S",
                   help="seconds to time each engine (default 1, 0.05 with --quick)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="threads for every engine (default: all cores)")
    p.add_argument("--out", default=suite.HERE, metavar="DIR",
                   help="folder for results.md and results.json")
    p.add_argument("--no-jax", action="store_true", help="skip the JAX engine")
    p.add_argument("--cold", action="store_true",
                   help="compile without jx's object cache: first calls include LLVM")
    p.add_argument("--remeasure", action="store_true",
                   help="measure the machine's limits again (else the cached ones)")
    p.add_argument("--busy", type=int, default=0, metavar="N",
                   help="time every engine quiet, then with N cores kept busy by spinning "
                        "processes; report the slowdowns (results-busy.md/.json)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    machine_mod.ensure_threads(args.threads, "benchmarks")
    min_time = args.min_time if args.min_time is not None else (0.05 if args.quick else 1.0)
    out = report.console()
    if args.busy and not 1 <= args.busy <= busy.max_spinners():
        out.print(f"--busy {args.busy}: choose 1 to {busy.max_spinners()} (the cores "
                  "this run may use)")
        return 2
    cases = suite.select(tuple(args.only))
    if not cases:
        out.print(f"no case matches {args.only}; cases: {', '.join(c.name for c in suite.CASES)}")
        return 2
    threads = args.threads or machine_mod.default_threads()
    machine = machine_mod.limits(threads, remeasure=args.remeasure, quick=args.quick)
    items = suite.items(cases, quick=args.quick, jax=not args.no_jax)
    opts = runner.Options(min_time=min_time, engines=("jx", "numpy") if args.no_jax
                          else ("jx", "numpy", "jax"), busy=args.busy,
                          min_reps=runner.BUSY_MIN_REPS if args.busy else measure.MIN_REPS)
    t0 = time.perf_counter()
    with engines.fresh_object_cache() if args.cold else contextlib.nullcontext():
        results = runner.run_all(items, opts, machine)
    elapsed = time.perf_counter() - t0
    command = "python -m benchmarks " + shlex.join(sys.argv[1:] if argv is None else argv)
    if args.busy:
        busy_report.emit(out, results, machine, args.busy, command.strip(), args.out, elapsed)
        return 1 if any(r.get("agree") is False for r in results) else 0
    out.print(report.table(results, machine, title="jx benchmark suite"))
    for line in report.notes_lines(results):
        out.print(f"note: {line}", soft_wrap=True)
    out.print(report.machine_line(machine), soft_wrap=True)
    summary = report.summarise(results)
    for line in summary["lines"]:
        out.print(line)
    os.makedirs(args.out, exist_ok=True)
    md = os.path.join(args.out, "results.md")
    with open(md, "w") as f:
        f.write(markdown_doc(results, machine, command.strip(), summary, elapsed))
    report.write_json(os.path.join(args.out, "results.json"), report.json_doc(
        results, machine, command.strip(),
        {"geomean_speedup_vs_numpy": summary["numpy"], "geomean_speedup_vs_jax":
         summary["jax"], "elapsed_s": elapsed}))
    out.print(f"wrote {md} and results.json ({elapsed:.0f} s)")
    return 1 if any(r.get("agree") is False for r in results) else 0


def markdown_doc(results, machine, command, summary, elapsed) -> str:
    lines = ["# jx benchmark results", "", f"Command: `{command}` ({elapsed:.0f} s)", "",
             report.machine_line(machine), "", report.markdown(results, machine), ""]
    lines += [f"- {ln}" for ln in summary["lines"]]
    notes = report.notes_lines(results)
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
