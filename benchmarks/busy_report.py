"""The --busy report: each engine's quiet and busy medians, its slowdown (busy /
quiet), and jx's slowdown relative to JAX's, as a rich table, markdown and JSON.

Issue 14's target: on the GEMM-bound entries (TARGET_CASES) jx slows down under
load no more than TARGET_RATIO times as much as JAX does.
"""
from __future__ import annotations

from . import report

TARGET_CASES = ("matmul 1024", "matmul 4096", "MLP predict", "MLP SGD step",
                "attention block")
TARGET_RATIO = 1.2
ENGINES = ("jx", "jax", "numpy")


def rows(results: list) -> list:
    """One dict per entry: per engine quiet_s, busy_s, slowdown; ratio (jx/JAX)."""
    out = []
    for res in results:
        row = {"name": res["name"], "size": res.get("size", ""),
               "target": res["name"] in TARGET_CASES, "agree": res.get("agree"),
               "engines": {}}
        for name in ENGINES:
            rec = res["engines"].get(name)
            if rec is None:
                continue
            b = rec.get("busy", {})
            row["engines"][name] = {
                "label": rec.get("label", name), "error": rec.get("error"),
                "quiet_s": rec.get("median_s"), "busy_s": b.get("median_s"),
                "slowdown": rec.get("busy_slowdown"),
                "quiet_samples": rec.get("samples"), "busy_samples": b.get("samples"),
                "busy_min_s": b.get("min_s"), "busy_max_s": b.get("max_s")}
        sj, sx = (row["engines"].get(n, {}).get("slowdown") for n in ("jx", "jax"))
        row["ratio"] = sj / sx if sj and sx else None
        row["within_target"] = (row["ratio"] <= TARGET_RATIO
                                if row["target"] and row["ratio"] else None)
        out.append(row)
    return out


def heading(machine: dict, n_busy: int) -> str:
    n = machine["threads"]
    return (f"CPU: {machine['cpu']}, {machine['cores']} cores, engines on {n} thread"
            f"{'' if n == 1 else 's'}; busy: {n_busy} of those cores kept busy by "
            f"spinning processes; times are medians")


def _fmt_slow(x) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _verdict(row: dict, markup: bool) -> str:
    ok = row["within_target"]
    if ok is None:
        return "-" if not row["target"] else "n/a"
    text = "ok" if ok else f"over {TARGET_RATIO}x"
    if not markup:
        return text
    return f"[green]{text}[/green]" if ok else f"[red]{text}[/red]"


def _cells(row: dict, markup: bool) -> list:
    if row["agree"] is False:
        return ["DISAGREE: not timed"] + ["-"] * 8
    cells = []
    for name in ("jx", "jax"):
        e = row["engines"].get(name)
        if e is None or e["error"]:
            cells += ["failed" if e else "-", "-", "-"]
            continue
        cells += [report.fmt_time(e["quiet_s"]), report.fmt_time(e["busy_s"]),
                  _fmt_slow(e["slowdown"])]
    cells.append(_fmt_slow(row["engines"].get("numpy", {}).get("slowdown")))
    cells.append("-" if row["ratio"] is None else f"{row['ratio']:.2f}")
    cells.append(_verdict(row, markup))
    return cells


COLUMNS = ("jx quiet", "jx busy", "jx slowdown", "JAX quiet", "JAX busy", "JAX slowdown",
           "NumPy slowdown", "jx/JAX", f"target <={TARGET_RATIO}")


def table(table_rows: list, machine: dict, n_busy: int):
    from rich.table import Table
    from rich.text import Text
    t = Table(title=f"jx under load: {n_busy} of {machine['threads']} cores busy "
                    f"({machine['cpu']})", title_justify="left",
              caption="slowdown = busy median / quiet median; jx/JAX = jx's slowdown / "
                      "JAX's", caption_justify="left")
    t.add_column("entry", no_wrap=True)
    t.add_column("size", no_wrap=True)
    for col in COLUMNS:
        t.add_column(col, justify="right", no_wrap=True)
    for row in table_rows:
        t.add_row(Text(row["name"]), Text(row["size"]), *_cells(row, markup=True))
    return t


def markdown(table_rows: list) -> str:
    head = "| benchmark | size | " + " | ".join(COLUMNS) + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for row in table_rows:
        lines.append("| " + " | ".join([row["name"], row["size"],
                                        *_cells(row, markup=False)]) + " |")
    return "\n".join(lines)


def summarise(table_rows: list) -> dict:
    """Geometric means over the target entries measured on both jx and JAX."""
    target = [r for r in table_rows if r["target"] and r["ratio"]]
    s = {"target_entries": len(target),
         "within_target": sum(1 for r in target if r["within_target"]),
         "geomean_ratio": report.geomean([r["ratio"] for r in target]),
         "geomean_jx_slowdown": report.geomean(
             [r["engines"]["jx"]["slowdown"] for r in target]),
         "geomean_jax_slowdown": report.geomean(
             [r["engines"]["jax"]["slowdown"] for r in target])}
    if target:
        s["lines"] = [
            f"GEMM-bound entries (issue 14's target: jx/JAX <= {TARGET_RATIO}): "
            f"{s['within_target']} of {len(target)} within; geometric means: jx slowdown "
            f"{s['geomean_jx_slowdown']:.2f}x, JAX {s['geomean_jax_slowdown']:.2f}x, "
            f"jx/JAX {s['geomean_ratio']:.2f}"]
    else:
        s["lines"] = ["no GEMM-bound entry measured on both jx and JAX: no jx/JAX ratio"]
    return s


def markdown_doc(table_rows: list, machine: dict, n_busy: int, command: str,
                 summary: dict, notes: list, elapsed: float) -> str:
    lines = ["# jx benchmark results under load (--busy)", "",
             f"Command: `{command}` ({elapsed:.0f} s)", "", heading(machine, n_busy), "",
             report.machine_line(machine), "", markdown(table_rows), "",
             "slowdown = busy median / quiet median (same run, same inputs: quiet first, "
             "then busy); jx/JAX = jx's slowdown / JAX's.", ""]
    lines += [f"- {ln}" for ln in summary["lines"]]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def json_doc(table_rows: list, machine: dict, n_busy: int, command: str, summary: dict,
             notes: list, elapsed: float) -> dict:
    return {"command": command, "cpu": machine["cpu"], "cores": machine["cores"],
            "threads": machine["threads"], "busy_cores": n_busy,
            "spinner": "one Python process per busy core, in a tight loop",
            "statistic": "median", "target_ratio": TARGET_RATIO,
            "target_cases": list(TARGET_CASES), "machine": machine,
            "entries": table_rows, "notes": notes, "elapsed_s": elapsed,
            **{k: v for k, v in summary.items() if k != "lines"}}


def emit(console, results: list, machine: dict, n_busy: int, command: str, folder: str,
         elapsed: float) -> None:
    """Print the table and write results-busy.md and results-busy.json into folder."""
    import os
    table_rows = rows(results)
    notes = report.notes_lines(results)
    summary = summarise(table_rows)
    console.print(table(table_rows, machine, n_busy))
    for line in notes:
        console.print(f"note: {line}", soft_wrap=True, markup=False)
    console.print(heading(machine, n_busy), soft_wrap=True, markup=False)
    console.print(report.machine_line(machine), soft_wrap=True, markup=False)
    for line in summary["lines"]:
        console.print(line, soft_wrap=True, markup=False)
    os.makedirs(folder, exist_ok=True)
    md = os.path.join(folder, "results-busy.md")
    with open(md, "w") as f:
        f.write(markdown_doc(table_rows, machine, n_busy, command, summary, notes, elapsed))
    report.write_json(os.path.join(folder, "results-busy.json"),
                      json_doc(table_rows, machine, n_busy, command, summary, notes, elapsed))
    console.print(f"wrote {md} and results-busy.json ({elapsed:.0f} s)", markup=False)
