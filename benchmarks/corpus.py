"""The compatibility corpus as a benchmark: each program's main jitted step on jx
(the program run by import swap) and on JAX (the program as written).

    jx bench --suite corpus [--min-time S] [--out DIR]

The programs are tests/corpus/*.py: JAX-style code with a `main()` (what the tests
compare) and a `bench()` returning (jitted step, arguments). Both engines run the
same step on the same arguments; the first call (trace and compile) is reported
apart from the median of steady calls.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import re
import time
import types

import numpy as np

from . import machine, measure

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = pathlib.Path(HERE).parent / "tests" / "corpus"


def swap_imports(source: str) -> str:
    """`import jax...` / `from jax... import` lines rewritten to jx, nothing else:
    `import jax` becomes `import jx as jax`, so the program's `jax.jit` is jx's."""
    out = []
    for line in source.splitlines():
        m = re.match(r"^(\s*)import jax(\.[\w.]+)?(\s+as\s+\w+)?\s*$", line)
        if m:
            indent, sub, alias = m.group(1), m.group(2) or "", m.group(3)
            line = f"{indent}import jx as jax" if not sub and not alias else \
                f"{indent}import jx{sub}{alias or ''}"
        elif re.match(r"^\s*from jax(\.[\w.]+)?\s+import\b", line):
            line = re.sub(r"\bfrom jax\b", "from jx", line, count=1)
        out.append(line)
    return "\n".join(out) + "\n"


def programs(folder=CORPUS) -> list:
    """The program names (file stems) in `folder`: the corpus unless told."""
    return sorted(p.stem for p in pathlib.Path(folder).glob("*.py")
                  if not p.stem.startswith("_"))


def load(name: str, use_jx: bool, folder=CORPUS) -> types.ModuleType:
    """The program `name` of `folder` (the corpus unless told) as a fresh module, on jx
    (imports swapped) or on JAX."""
    path = pathlib.Path(folder) / f"{name}.py"
    source = path.read_text()
    if use_jx:
        source = swap_imports(source)
    module = types.ModuleType(f"{pathlib.Path(folder).name}_{name}")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def _timed(step, args, block, min_time: float) -> tuple:
    first, out = measure.first_call(lambda: block(step(*args)))
    return first, measure.time_calls(lambda: block(step(*args)), min_time).median, out


def bench_program(name: str, min_time: float, with_jax: bool) -> dict | None:
    module = load(name, use_jx=True)
    if not hasattr(module, "bench"):
        return None
    res = {"program": name, "first_s": {}, "median_s": {}}
    step, args = module.bench()
    res["first_s"]["jx"], res["median_s"]["jx"], got = _timed(step, args, lambda x: x,
                                                                 min_time)
    if with_jax:
        import jax
        jmod = load(name, use_jx=False)
        jstep, jargs = jmod.bench()
        jargs = jax.device_put(jargs)
        first, med, want = _timed(jstep, jargs, jax.block_until_ready, min_time)
        res["first_s"]["JAX"], res["median_s"]["JAX"] = first, med
        res["speedup_vs_jax"] = med / res["median_s"]["jx"]
        # registered nodes (an optimizer state) flattened by each library's own registry
        import jx
        got = [np.asarray(x) for x in jx.tree_util.tree_leaves(got)]
        want = [np.asarray(x) for x in jax.tree_util.tree_leaves(want)]
        problems = measure.compare("jx", got, want, (2e-3, 2e-3))
        res["agrees_with_jax"] = not problems
    return res


def _t(s) -> str:
    if s is None:
        return "-"
    return f"{s * 1e6:.3g} µs" if s < 1e-3 else f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def report(results: list, cpu: str, command: str) -> str:
    lines = ["# Compatibility corpus: main jitted step, jx vs JAX", "", f"Command: `{command}`",
             "", f"CPU: {cpu}, {machine.cores()} cores usable", "",
             "| program | jx | JAX | jx speedup | jx first call | JAX first call | agrees |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        m, f = r["median_s"], r["first_s"]
        sp = r.get("speedup_vs_jax")
        lines.append(f"| {r['program']} | {_t(m['jx'])} | {_t(m.get('JAX'))} | "
                     f"{f'{sp:.2f}x' if sp else '-'} | {_t(f['jx'])} | {_t(f.get('JAX'))} | "
                     f"{'yes' if r.get('agrees_with_jax', True) else 'NO'} |")
    speedups = [r["speedup_vs_jax"] for r in results if r.get("speedup_vs_jax")]
    if speedups:
        geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        lines += ["", f"Geometric-mean speedup of jx over JAX: {geo:.2f}x "
                      f"({len(speedups)} programs)."]
    return "\n".join(lines) + "\n"


def parse_args(argv, suite: str, report: str):
    """The options the program suites share (corpus, patterns), and whether JAX is
    here to time against."""
    p = argparse.ArgumentParser(prog=f"jx bench --suite {suite}")
    p.add_argument("--min-time", type=float, default=0.5)
    p.add_argument("--out", default=os.path.join(HERE, report),
                   help="markdown report (a .json beside it holds the raw numbers)")
    p.add_argument("--only", action="append", default=[])
    args = p.parse_args(argv)
    try:
        import jax  # noqa: F401
        with_jax = True
    except ImportError:
        with_jax = False
    return args, with_jax


def publish(out: str, text: str, doc: dict) -> None:
    """A program suite's report: printed, written to `out` (markdown) and its raw
    figures, `doc`, as JSON beside it."""
    print(text)
    with open(out, "w") as f:
        f.write(text)
    with open(os.path.splitext(out)[0] + ".json", "w") as f:
        json.dump(doc, f, indent=1, default=float)


def main(argv=None) -> int:
    args, with_jax = parse_args(argv, "corpus", "results-corpus.md")
    t0 = time.perf_counter()
    results = []
    for name in programs():
        if args.only and not any(o in name for o in args.only):
            continue
        r = bench_program(name, args.min_time, with_jax)
        if r is not None:
            results.append(r)
            print(f"{name}: jx {_t(r['median_s']['jx'])}, JAX {_t(r['median_s'].get('JAX'))}",
                  flush=True)
    command = "jx bench --suite corpus" + ("".join(f" --only {o}" for o in args.only))
    publish(args.out, report(results, machine.cpu_model(), command),
            {"cpu": machine.cpu_model(), "seconds": time.perf_counter() - t0,
             "results": results})
    return 0
