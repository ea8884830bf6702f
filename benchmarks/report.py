"""Output: the rich table, the progress bar, JSON and markdown."""
from __future__ import annotations

import json
import math
import os
import sys

ENGINE_ORDER = ("jx", "numpy", "jax")
# Every figure an engine record can carry (JSON writes each, null when not measured).
ENGINE_FIELDS = ("label", "median_s", "min_s", "max_s", "first_call_s", "calls", "samples",
                 "gb_s", "gflop_s", "bandwidth_fraction", "peak_fraction",
                 "speedup_vs_numpy", "speedup_vs_jax")
ENTRY_FIELDS = ("name", "size", "bytes", "flops", "intensity", "agree", "reference",
                "mismatches", "notes", "engines")


def console(stderr: bool = False):
    from rich.console import Console
    c = Console(stderr=stderr, highlight=False)
    if not c.is_terminal:       # pipes and files: wide enough for the whole table,
        columns = os.environ.get("COLUMNS", "")     # unless COLUMNS says otherwise
        c = Console(stderr=stderr, highlight=False, no_color=True,
                    width=int(columns) if columns.isdigit() else 200)
    return c


def fmt_time(s) -> str:
    if s is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_num(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 10**digits else f"{x:.0f}"


def fmt_frac(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def fmt_speedup(x) -> str:
    return "-" if x is None else f"{x:.2f}x"


def fmt_bytes(n) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


# The table's columns: (key, header, compact header, priority). The compact table
# keeps priority 0 always and adds the others, most important first, while they fit.
COLUMNS = (("entry", "entry", "entry", 0), ("engine", "engine", "engine", 0),
           ("median", "median", "median", 0), ("min", "min", "min", 5),
           ("max", "max", "max", 5), ("first", "first call", "1st call", 3),
           ("gb_s", "GB/s", "GB/s", 4), ("bw", "% BW", "%BW", 2),
           ("gflop_s", "GFLOP/s", "GFLOP/s", 4), ("peak", "% peak", "%peak", 2),
           ("vs_numpy", "vs NumPy", "vs NumPy", 1), ("vs_jax", "vs JAX", "vs JAX", 1))
SHORT_LABELS = {"jx jit": "jx", "jx artifact": "jx .so", "NumPy eager": "NumPy",
                "JAX jit": "JAX"}
CACHED_NOTE = ("* first call loaded the compiled code from jx's object cache "
               "(--cold compiles afresh)")
ENTRY_MIN = 12          # the compact table folds longer entry names onto more lines
WHOLE_NAMES = 3.5       # the priority of whole entry names: after first calls, before GB/s


def _rows(results: list, compact: bool) -> list:
    """[(starts a section, {column key: text}, style)] for every engine of every entry."""
    rows = []
    for res in results:
        first = True
        for name in ENGINE_ORDER:
            rec = res["engines"].get(name)
            if rec is None:
                continue
            label = rec.get("label", name)
            cells = {"entry": res["name"] if first else "",
                     "engine": SHORT_LABELS.get(label, label) if compact else label}
            if "error" in rec:
                rows.append((first, {**cells, "median": "failed"}, "red"))
                first = False
                continue
            first_call = fmt_time(rec.get("first_call_s"))
            if rec.get("object_cache_hit"):
                first_call += "*" if compact else " (cached)"
            cells.update(median=fmt_time(rec.get("median_s")), min=fmt_time(rec.get("min_s")),
                         max=fmt_time(rec.get("max_s")), first=first_call,
                         gb_s=fmt_num(rec.get("gb_s")),
                         bw=fmt_frac(rec.get("bandwidth_fraction")),
                         gflop_s=fmt_num(rec.get("gflop_s")),
                         peak=fmt_frac(rec.get("peak_fraction")),
                         vs_numpy=fmt_speedup(rec.get("speedup_vs_numpy")),
                         vs_jax=fmt_speedup(rec.get("speedup_vs_jax")))
            rows.append((first, cells, None))
            first = False
        if res.get("agree") is False:     # (compact: the label would widen its column)
            rows.append((first, {"entry": res["name"] if first else "",
                                 "engine": "" if compact else "DISAGREE",
                                 "median": "DISAGREE" if compact else "not timed"}, "red"))
    return rows


def _build(rows: list, keys: list, title: str, compact: bool, note: str | None):
    from rich import box
    from rich.table import Table
    from rich.text import Text
    if compact:   # no rules between columns: two spaces apart, a rule under the header
        t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, collapse_padding=True, caption=note,
                  caption_justify="left")
    else:
        t = Table(title=title, title_justify="left", caption=note, caption_justify="left")
    heads = {k: (short if compact else full) for k, full, short, _ in COLUMNS}
    for k in keys:
        if k == "entry":
            # the one column that may fold: numbers never shrink to "1.63…"
            t.add_column(heads[k], overflow="fold", min_width=min(ENTRY_MIN, _width(
                rows, k, heads[k])))
        else:
            t.add_column(heads[k], justify="left" if k == "engine" else "right",
                         no_wrap=True)
    for i, (section, cells, style) in enumerate(rows):
        if section and i:
            t.add_section()
        # Text, not markup: an entry named "f[bench]" prints as written
        t.add_row(*[Text(cells.get(k, ""), style=style or "") for k in keys])
    return t


def _width(rows: list, key: str, head: str) -> int:
    from rich.cells import cell_len
    return max([cell_len(head)] + [cell_len(c.get(key, "")) for _, c, _ in rows])


def _overhead(n: int) -> int:
    """Columns of the compact table's borders and padding around n columns."""
    return 2 * (n - 1)


def table(results: list, machine: dict | None, title: str = "jx bench",
          width: int | None = None, wide: bool = False):
    """The results as a rich Table. Every column, at its natural width (the widest
    cell), when wide, when no width is given or when that fits in width; else the
    compact table: short labels and headers, no rules between columns, and the most
    important columns that fit (entry, engine and median always), entry names folded
    to fit rather than any cell cut short."""
    full_rows = _rows(results, compact=False)
    keys = [k for k, *_ in COLUMNS]
    cached = any(c.get("first", "").endswith(" (cached)") for _, c, _ in full_rows)
    full = _build(full_rows, keys, title, False, None)
    if wide or width is None or measure(full) <= width:
        return full
    rows = _rows(results, compact=True)
    heads = {k: short for k, _, short, _ in COLUMNS}
    widths = {k: _width(rows, k, heads[k]) for k in keys}
    entry_full, widths["entry"] = widths["entry"], min(widths["entry"], ENTRY_MIN)
    chosen = [k for k, *_, prio in COLUMNS if prio == 0]
    # columns of one priority come together (min with max), and whole entry names
    groups: dict = {WHOLE_NAMES: []}
    for k, *_, prio in COLUMNS:
        if prio:
            groups.setdefault(prio, []).append(k)
    for prio in sorted(groups):
        trial = chosen + groups[prio]
        grown = {**widths, "entry": entry_full} if prio == WHOLE_NAMES else widths
        if sum(grown[c] for c in trial) + _overhead(len(trial)) <= width:
            chosen, widths = trial, grown
    chosen = [k for k in keys if k in chosen]      # the full table's column order
    marked = cached and "first" in chosen
    return _build(rows, chosen, title, True, CACHED_NOTE if marked else None)


def show(out, results: list, machine: dict | None, title: str = "jx bench",
         wide: bool = False) -> None:
    """Print the table (compact to fit out's width unless wide), the notes and the
    machine line, which wrap to the width too. No text is read as rich markup."""
    from rich.text import Text
    t = table(results, machine, title=title, width=out.width, wide=wide)
    natural = measure(t)
    if wide and natural > out.width:    # whole lines, however the terminal shows them
        width, out.width = out.width, natural
        try:
            out.print(t)
        finally:
            out.width = width
    else:
        out.print(t)
    for line in notes_lines(results):
        out.print(Text(f"note: {line}"))
    if machine:
        out.print(Text(machine_line(machine)))


def measure(renderable) -> int:
    """The width a renderable takes when nothing limits it."""
    from rich.console import Console
    from rich.measure import Measurement
    c = Console(width=10_000)
    return Measurement.get(c, c.options, renderable).maximum


def notes_lines(results: list) -> list:
    lines = []
    for res in results:
        for name, rec in res["engines"].items():
            if "error" in rec:
                lines.append(f"{res['name']}: {rec.get('label', name)} failed: {rec['error']}")
        for n in dict.fromkeys(res.get("notes", [])):
            lines.append(f"{res['name']}: {n}")
    return lines


def machine_line(machine: dict) -> str:
    n = machine["threads"]
    return (f"machine: {machine['cpu']}, {machine['cores']} cores ({n} thread"
            f"{'' if n == 1 else 's'}); copy {machine['copy_gb_s']:.1f} GB/s, read "
            f"{machine['read_gb_s']:.1f} GB/s; {_fma_text(machine)}GEMM f32 "
            f"{machine['gemm_f32_gflop_s']:.0f} GFLOP/s, f64 {machine['gemm_f64_gflop_s']:.0f} "
            f"GFLOP/s ({machine['blas']})")


def _fma_text(machine: dict) -> str:
    if "fma_f32_gflop_s" not in machine:
        return ""
    return (f"FMA peak f32 {machine['fma_f32_gflop_s']:.0f} GFLOP/s, "
            f"f64 {machine['fma_f64_gflop_s']:.0f} GFLOP/s; ")


def machine_table(machine: dict):
    from rich.table import Table
    from rich.text import Text
    t = Table(title="machine limits", title_justify="left", show_header=False)
    t.add_column("what")
    t.add_column("value", justify="right")
    rows = [("CPU", machine["cpu"]), ("cores", str(machine["cores"])),
            ("threads used", str(machine["threads"])),
            ("copy bandwidth", f"{machine['copy_gb_s']:.2f} GB/s"),
            ("read bandwidth", f"{machine['read_gb_s']:.2f} GB/s"),
            *[(f"f{b} FMA peak", f"{machine[f'fma_f{b}_gflop_s']:.1f} GFLOP/s")
              for b in (32, 64) if f"fma_f{b}_gflop_s" in machine],
            ("f32 GEMM peak", f"{machine['gemm_f32_gflop_s']:.1f} GFLOP/s"),
            ("f64 GEMM peak", f"{machine['gemm_f64_gflop_s']:.1f} GFLOP/s"),
            ("BLAS", machine["blas"]),
            ("measured", machine["measured"] + (" (cached)" if machine.get("cached") else ""))]
    for r in rows:
        t.add_row(*map(Text, r))       # a CPU or BLAS name is text, not rich markup
    return t


def facts_table(title: str, facts: dict):
    from rich.table import Table
    from rich.text import Text
    t = Table(title=title, title_justify="left", show_header=False)
    t.add_column("what")
    t.add_column("value", justify="right")
    for k, v in facts.items():
        t.add_row(Text(k), Text(str(v)))
    return t


def json_doc(results: list, machine: dict | None, command: str, extra: dict | None = None):
    entries = []
    for res in results:
        e = {k: res.get(k) for k in ENTRY_FIELDS if k != "engines"}
        e["engines"] = {name: ({k: rec.get(k) for k in ENGINE_FIELDS} | _extra(rec))
                        for name, rec in res["engines"].items()}
        entries.append(e)
    doc = {"command": command, "machine": machine, "entries": entries}
    doc.update(extra or {})
    return doc


def _extra(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k not in ENGINE_FIELDS}


def write_json(path: str, doc: dict) -> None:
    """doc as JSON into the file at path, or onto stdout when path is "-"."""
    if path == "-":
        json.dump(doc, sys.stdout, indent=1, default=_jsonable)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, default=_jsonable)
        f.write("\n")


def _jsonable(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def geomean(values: list):
    vals = [v for v in values if v]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def summarise(results: list) -> dict:
    """Geometric means of jx's speedups (entries where both engines were timed)."""
    summary = {"lines": []}
    for other, name in (("jax", "JAX"), ("numpy", "NumPy")):
        vals = [r["engines"].get("jx", {}).get(f"speedup_vs_{other}") for r in results]
        vals = [v for v in vals if v]
        g = geomean(vals)
        summary[other] = g
        text = f"{g:.2f}x" if g else "n/a"
        summary["lines"].append(f"geometric-mean speedup of jx over {name}: {text} "
                                f"({len(vals)} of {len(results)} benchmarks)")
    return summary


def markdown(results: list, machine: dict | None) -> str:
    """One row per entry: the jx engine's figures and the three medians."""
    head = ("| benchmark | size | jx | NumPy | JAX | jx first call | jx GB/s | jx GFLOP/s "
            "| % BW | % peak | vs NumPy | vs JAX |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for res in results:
        jxr = res["engines"].get("jx", {})
        med = {n: res["engines"].get(n, {}).get("median_s") for n in ENGINE_ORDER}
        status = None
        if res.get("agree") is False:
            status = "DISAGREE"
        elif "error" in jxr:
            status = "jx failed: " + jxr["error"].replace("|", "/")[:60]
        if status:
            lines.append(f"| {res['name']} | {res.get('size', '')} | {status} | "
                         f"{fmt_time(med['numpy'])} | {fmt_time(med['jax'])} |"
                         + " - |" * 7)
            continue
        first = fmt_time(jxr.get("first_call_s"))
        if jxr.get("object_cache_hit"):
            first += " (cached)"
        lines.append("| " + " | ".join([
            res["name"], res.get("size", ""), fmt_time(med["jx"]), fmt_time(med["numpy"]),
            fmt_time(med["jax"]), first, fmt_num(jxr.get("gb_s")), fmt_num(jxr.get("gflop_s")),
            fmt_frac(jxr.get("bandwidth_fraction")), fmt_frac(jxr.get("peak_fraction")),
            fmt_speedup(jxr.get("speedup_vs_numpy")), fmt_speedup(jxr.get("speedup_vs_jax"))])
            + " |")
    return "\n".join(lines)


class ProgressBar:
    """A rich progress bar over (entry, engine) steps, on stderr, terminals only."""

    def __init__(self, total_steps: int, enabled: bool | None = None):
        from rich.progress import (BarColumn, Progress, SpinnerColumn, TextColumn,
                                   TimeElapsedColumn)
        self.console = console(stderr=True)
        if enabled is None:
            enabled = self.console.is_terminal
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}",
                                                             markup=False),
                                 BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                                 TimeElapsedColumn(), console=self.console, transient=True,
                                 disable=not enabled)
        self.task = self.progress.add_task("measuring", total=max(1, total_steps))
        self.done = 0

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def step(self, desc: str):
        """Start a step; returns on_fraction(f) that moves the bar within it."""
        base = self.done
        self.done += 1
        self.progress.update(self.task, description=desc, completed=base)

        def on_fraction(f: float):
            self.progress.update(self.task, completed=base + min(1.0, f))
        return on_fraction

    def add_steps(self, n: int) -> None:
        total = self.progress.tasks[0].total or 0
        self.progress.update(self.task, total=total + n)


def markdown_doc(results: list, machine: dict, command: str, summary: dict,
                 elapsed: float) -> str:
    """results.md of a suite run: the command, the machine, the table, the
    geometric means and the notes."""
    lines = ["# jx benchmark results", "", f"Command: `{command}` ({elapsed:.0f} s)", "",
             machine_line(machine), "", markdown(results, machine), ""]
    lines += [f"- {ln}" for ln in summary["lines"]]
    notes = notes_lines(results)
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"
