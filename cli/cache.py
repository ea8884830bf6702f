"""`jx cache info` and `jx cache clear`: the on-disk compilation cache
(codegen/cpu/cache.py: location, LRU size cap from $JX_CACHE_MAX)."""
from __future__ import annotations

import json
import os
import time

import click

from .errors import CliError


def human(n: int) -> str:
    """Bytes in powers of 1024, as JX_CACHE_MAX is written: 1.5G, 320M, 12K, 512B."""
    for unit, size in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f}{unit}".replace(".0" + unit, unit)
    return f"{n}B"


def _when(t: float | None, now: float) -> str:
    if t is None:
        return "-"
    ago = max(now - t, 0)
    for unit, secs in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if ago >= secs:
            span = f"{ago / secs:.0f} {unit} ago"
            break
    else:
        span = "just now"
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(t))}  ({span})"


def _cap_text(cap: int | None) -> str:
    source = "JX_CACHE_MAX" if os.environ.get("JX_CACHE_MAX", "").strip() else "default"
    return "none (JX_CACHE_MAX)" if cap is None else f"{human(cap)} ({source})"


def info_text(u: dict) -> str:
    lines = [f"{'location':<10}{u['location']}" + ("" if u["exists"] else "  (not created yet)"),
             f"{'size':<10}{human(u['total_bytes'])} on disk; cap {_cap_text(u['max_bytes'])}",
             f"{'entries':<10}{u['entries']} ({human(u['entry_bytes'])}): "
             + ", ".join(f"{v['entries']} {k}" for k, v in u["by_folder"].items())
             + f"; {human(u['other_bytes'])} in the built runtime and measured records",
             f"{'oldest':<10}{_when(u['oldest'], u['now'])}",
             f"{'newest':<10}{_when(u['newest'], u['now'])}"]
    return "\n".join(lines)


def _cache():
    from jx.codegen.cpu import cache   # the stat-only part: loads no LLVM
    return cache


def _check_cap() -> None:
    text = os.environ.get("JX_CACHE_MAX")
    if text and text.strip():
        try:
            _cache().parse_size(text)
        except ValueError as e:
            raise CliError(f"JX_CACHE_MAX: {e}.") from None


def register(main: click.Group, reports_errors) -> None:
    @main.group("cache")
    def cache_group():
        """The compilation cache ($JX_CACHE_DIR, else ~/.cache/jx), capped at
        $JX_CACHE_MAX (default 1G; least recently used entries go first)."""

    @cache_group.command("info")
    @click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
    @reports_errors
    def info_cmd(as_json: bool):
        """Location, size on disk, cap, number of entries, oldest and newest use."""
        _check_cap()
        u = _cache().usage()
        click.echo(json.dumps(u, indent=1) if as_json else info_text(u))

    @cache_group.command("clear")
    @click.option("--all", "everything", is_flag=True,
                  help="Also forget the measured host records (tuning constants, machine "
                       "limits), which are measured again on the next compile or bench.")
    @reports_errors
    def clear_cmd(everything: bool):
        """Delete the cached objects and artifacts and the built runtime; the next
        compile of each model takes LLVM's time again."""
        cache = _cache()
        files, freed = cache.clear(records=everything)
        click.echo(f"removed {files} files ({human(freed)}) from {cache.cache_dir()}")
