"""Two `jx bench --json` runs compared entry by entry: the performance gate of a CI
job (`jx bench --baseline OLD.json --fail-slower PCT`, or `jx bench --compare
A.json B.json` on stored results).

For each entry both runs timed, the change of the median time of one engine (jx by
default) and the noise either run had: the spread between its 25th and 75th
percentile over its median (runs recorded before quartiles were: median minus
minimum). An entry *regressed* when it is slower by more than PCT percent beyond
that noise. Runs from different machines (CPU model, cores, threads) are refused
unless the caller allows it: their times say nothing about the code.
"""
from __future__ import annotations

import json
import math

from .report import fmt_time


class CompareError(Exception):
    """A file that is not a comparable `jx bench --json` run, or runs that may not
    be compared; the message says which and what to do."""


def load(path: str) -> dict:
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise CompareError(f"{path}: no such file; save a run with `jx bench ... --json "
                           f"{path}`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CompareError(f"{path}: not a JSON file ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list) or \
            not isinstance(doc.get("machine"), dict):
        raise CompareError(f"{path}: not a `jx bench --json` run (it needs \"machine\" and "
                           "\"entries\"; the suites' results.json qualify, "
                           "results-patterns.json does not)")
    return doc


def machine_key(machine: dict) -> tuple:
    return (machine.get("cpu"), machine.get("cores"), machine.get("threads"))


def noise(rec: dict) -> float:
    """Relative spread of one engine's samples (0 when it cannot be told)."""
    med = rec.get("median_s")
    if not med:
        return 0.0
    if rec.get("q1_s") is not None and rec.get("q3_s") is not None:
        return max(0.0, (rec["q3_s"] - rec["q1_s"]) / med)
    if rec.get("min_s") is not None:
        return max(0.0, (med - rec["min_s"]) / med)
    return 0.0


def compare(old: dict, new: dict, engine: str = "jx", fail_slower: float | None = None,
            any_machine: bool = False, names: tuple = ("old", "new")) -> dict:
    """{"rows": [...], "regressed": [names], "machine": ...}. Each row: name, the two
    medians, change (new / old - 1), noise, and status: slower (beyond noise and
    fail_slower percent: a regression), faster, within noise, or only in one run."""
    ma, mb = machine_key(old["machine"]), machine_key(new["machine"])
    if ma != mb and not any_machine:
        raise CompareError(
            f"the runs come from different machines ({names[0]}: {_machine_text(ma)}; "
            f"{names[1]}: {_machine_text(mb)}): their times do not compare; run both on "
            "one machine, or pass --any-machine to compare anyway")
    limit = (fail_slower or 0.0) / 100.0
    before = {e["name"]: e for e in old["entries"]}
    after = {e["name"]: e for e in new["entries"]}
    rows, regressed = [], []
    for name in list(before) + [n for n in after if n not in before]:
        a = before.get(name, {}).get("engines", {}).get(engine, {})
        b = after.get(name, {}).get("engines", {}).get(engine, {})
        ta, tb = a.get("median_s"), b.get("median_s")
        row = {"name": name, "old_s": ta, "new_s": tb}
        if not ta or not tb:
            row["status"] = ("only in " + (names[0] if ta else names[1])) if (ta or tb) \
                else f"{engine} not timed"
            rows.append(row)
            continue
        change = tb / ta - 1.0
        spread = max(noise(a), noise(b))
        row.update(change=change, noise=spread)
        if change > spread + limit and fail_slower is not None:
            row["status"] = "REGRESSED"
            regressed.append(name)
        elif change > spread:
            row["status"] = "slower"
        elif change < -spread:
            row["status"] = "faster"
        else:
            row["status"] = "within noise"
        rows.append(row)
    geo = [r["new_s"] / r["old_s"] for r in rows if "change" in r]
    return {"engine": engine, "rows": rows, "regressed": regressed,
            "fail_slower": fail_slower, "machine": _machine_text(mb),
            "geomean_ratio": math.exp(sum(map(math.log, geo)) / len(geo)) if geo else None}


def _machine_text(key: tuple) -> str:
    cpu, cores, threads = key
    return f"{cpu}, {cores} cores, {threads} threads"


def table(result: dict, names: tuple = ("old", "new")):
    """A rich Table of the comparison (text cells, never markup)."""
    from rich.table import Table
    from rich.text import Text
    t = Table(title=f"{result['engine']} median time, {names[0]} -> {names[1]} "
                    f"({result['machine']})", title_justify="left")
    for col in ("entry", names[0], names[1], "change", "noise", "status"):
        t.add_column(col, justify="left" if col in ("entry", "status") else "right")
    for r in result["rows"]:
        cells = [r["name"], fmt_time(r.get("old_s")), fmt_time(r.get("new_s")),
                 f"{r['change'] * 100:+.1f}%" if "change" in r else "-",
                 f"±{r['noise'] * 100:.1f}%" if "noise" in r else "-", r["status"]]
        style = "bold red" if r["status"] == "REGRESSED" else None
        t.add_row(*[Text(c, style=style) for c in cells])
    return t
