"""The array API standard's conformance suite, whole, on jx.numpy and jax.numpy.

    jx bench --suite array-api [--max-examples N] [--only MODULE] [--out DIR]

Runs the vendored data-apis/array-api-tests (2024.12, complex dtypes skipped until
their issue) once per namespace in a subprocess, in 64-bit mode (the suite draws
int64/float64 values; JAX, too, fails much of it in 32-bit mode), and reports
passed/failed/skipped per test module beside each other, plus the tests jx fails
where jax.numpy passes: the to-do list. CI runs a quick subset
(tests/test_array_api.py); this is the whole suite, minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import collections
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

from . import machine
from .corpus import publish

HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = pathlib.Path(HERE).parent
NAMESPACES = {"jx": "jx.numpy", "JAX": "jax.numpy"}


def suite_dir() -> pathlib.Path | None:
    """The vendored suite: inside the checkout or in the shared folder beside it."""
    for p in (_ROOT / "shared/vendor/array-api-tests",
              _ROOT.parent / "shared/vendor/array-api-tests"):
        if (p / "array_api_tests").is_dir():
            return p
    return None


def run_namespace(module: str, suite: pathlib.Path, max_examples: int,
                  only: list) -> dict:
    """{test id: "passed" | "failed" | "skipped"} for one namespace (via JUnit XML,
    which pytest writes without plugins)."""
    env = dict(os.environ, JAX_ENABLE_X64="1", ARRAY_API_TESTS_MODULE=module,
               ARRAY_API_TESTS_VERSION="2024.12",
               ARRAY_API_TESTS_SKIP_DTYPES="complex64,complex128")
    targets = [f"array_api_tests/{m if m.endswith('.py') else m + '.py'}" for m in only] \
        or ["array_api_tests/"]
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "junit.xml")
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               f"--max-examples={max_examples}", "--hypothesis-seed=0",
               "--hypothesis-disable-deadline", f"--junitxml={xml}", *targets]
        subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True)
        if not os.path.exists(xml):
            raise RuntimeError(f"the conformance suite did not run for {module}")
        outcomes = parse_junit(ET.parse(xml).getroot())
    if not outcomes:
        raise SystemExit(f"no conformance test ran for {module} (--only {' '.join(only)}?): "
                         "name test modules of array_api_tests/, e.g. test_linalg")
    return outcomes


def parse_junit(root) -> dict:
    outcomes = {}
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcomes[name] = ("failed" if kinds & {"failure", "error"} else
                          "skipped" if "skipped" in kinds else "passed")
    return outcomes


def module_of(test_id: str) -> str:
    return test_id.split("::")[0].rsplit(".", 1)[-1]


def tally(outcomes: dict) -> dict:
    per = collections.defaultdict(collections.Counter)
    for tid, outcome in outcomes.items():
        per[module_of(tid)][outcome] += 1
    return {m: dict(c) for m, c in sorted(per.items())}


def report(results: dict, cpu: str, command: str, seconds: float) -> str:
    names = list(results)
    tallies = {n: tally(results[n]) for n in names}
    modules = sorted({m for t in tallies.values() for m in t})
    head = " | ".join(f"{n} pass / fail / skip" for n in names)
    lines = ["# The array API conformance suite (2024.12, complex skipped, 64-bit mode)", "",
             f"Command: `{command}` ({seconds / 60:.1f} min). CPU: {cpu}.", "",
             f"| module | {head} |", "|---|" + "---|" * len(names)]

    def cell(c):
        return f"{c.get('passed', 0)} / {c.get('failed', 0)} / {c.get('skipped', 0)}"
    for m in modules:
        lines.append(f"| {m} | " + " | ".join(cell(tallies[n].get(m, {})) for n in names) + " |")
    totals = {n: collections.Counter() for n in names}
    for n in names:
        for c in tallies[n].values():
            totals[n].update(c)
    lines.append("| **all** | " + " | ".join(f"**{cell(totals[n])}**" for n in names) + " |")
    if "JAX" in results:
        gap = sorted(t for t, o in results["jx"].items()
                     if o == "failed" and results["JAX"].get(t) == "passed")
        lines += ["", f"Failed by jx.numpy, passed by jax.numpy: {len(gap)}", ""]
        lines += [f"- `{t}`" for t in gap]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="jx bench --suite array-api")
    p.add_argument("--max-examples", type=int, default=5)
    p.add_argument("--only", action="append", default=[],
                   help="a test module (e.g. test_operators_and_elementwise_functions)")
    p.add_argument("--out", default=os.path.join(HERE, "results-array-api.md"))
    args = p.parse_args(argv)
    suite = suite_dir()
    if suite is None:
        print("the vendored array-api-tests suite is not beside this checkout "
              "(shared/vendor/array-api-tests)", file=sys.stderr)
        return 2
    try:
        import jax  # noqa: F401
        names = ["jx", "JAX"]
    except ImportError:
        names = ["jx"]
    t0 = time.perf_counter()
    results = {}
    for n in names:
        results[n] = run_namespace(NAMESPACES[n], suite, args.max_examples, args.only)
        c = collections.Counter(results[n].values())
        print(f"{NAMESPACES[n]}: {c['passed']} passed, {c['failed']} failed, "
              f"{c['skipped']} skipped", flush=True)
    command = "jx bench --suite array-api" + "".join(f" --only {o}" for o in args.only)
    seconds = time.perf_counter() - t0
    # per-module counts and the tests on which the namespaces disagree (every
    # outcome would be ~0.3 MB per run)
    differ = {t: {n: results[n].get(t) for n in names}
              for t in sorted(set().union(*results.values()))
              if len({results[n].get(t) for n in names}) > 1}
    publish(args.out, report(results, machine.cpu_model(), command, seconds),
            {"cpu": machine.cpu_model(), "seconds": seconds,
             "tallies": {n: tally(results[n]) for n in names}, "differ": differ})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
