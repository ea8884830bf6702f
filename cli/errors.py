"""User-facing CLI errors: one paragraph on stderr, no traceback unless --debug.

A message says what failed, where (file:line in the user's model, like a
compiler diagnostic) and what to do about it.
"""
from __future__ import annotations

import os
import shutil
import sys
import textwrap

import click

DEBUG_HINT = "Run with --debug to see the full traceback."


class CliError(Exception):
    """A failure caused by the user's input (model file, options), reported plainly.

    Raise it `from` the original exception so --debug shows both tracebacks.
    debug_hint=True ends the plain report with DEBUG_HINT; a message that ends with
    DEBUG_HINT itself counts as asking for it. The hint is never part of str(err), so
    the traceback --debug prints does not end by telling the user to pass --debug.
    """

    def __init__(self, message: str, where: str | None = None, debug_hint: bool = False):
        if message.endswith(DEBUG_HINT):
            message, debug_hint = message[:-len(DEBUG_HINT)].rstrip(), True
        super().__init__(message)
        self.message = message
        self.where = where
        self.debug_hint = debug_hint

    def text(self) -> str:
        return format_diagnostic(self.where, self.message, "text", self.debug_hint)


class Diagnostics(CliError):
    """Several findings at once (`jx compile --check`): each (where, message) is
    reported in the chosen --error-format; the command exits 1."""

    def __init__(self, items: list, summary: str):
        super().__init__(summary)
        self.items = items


# --error-format: how errors are printed on stderr (every command takes it)
FORMATS = ("text", "json", "github")


def _split_where(where: str | None) -> tuple:
    """'path:line' -> (path, line); a bare path -> (path, None)."""
    if not where:
        return None, None
    head, sep, tail = where.rpartition(":")
    return (head, int(tail)) if sep and tail.isdigit() else (where, None)


def _github_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def format_diagnostic(where: str | None, message: str, fmt: str, hint: bool = False) -> str:
    """One error line: `file:line: error: message` (text), a JSON object with
    severity, file, line and message (json), or a GitHub Actions workflow command
    `::error file=...,line=...::message` (github)."""
    if fmt == "json":
        import json
        file, line = _split_where(where)
        return json.dumps({"severity": "error", "file": file, "line": line,
                           "message": message})
    if fmt == "github":
        file, line = _split_where(where)
        props = ",".join(p for p in (f"file={_github_escape(file, True)}" if file else "",
                                      f"line={line}" if line else "") if p)
        return f"::error{' ' + props if props else ''}::{_github_escape(message)}"
    prefix = f"{where}: " if where else ""
    return f"{prefix}error: {message}{' ' + DEBUG_HINT if hint else ''}"


def report(err: CliError, fmt: str = "text") -> None:
    """Print err to stderr in format fmt. Text is wrapped to the terminal width only
    on a terminal, so pipes and tests see a single stable line; json and github
    lines are never wrapped (a machine reads them)."""
    several = isinstance(err, Diagnostics)
    items = err.items if several else [(err.where, err.message)]
    hint = err.debug_hint and not several and fmt == "text"
    lines = [format_diagnostic(where, message, fmt, hint) for where, message in items]
    if fmt != "text":
        for text in lines:
            click.echo(text, err=True)
        return
    if several:
        lines.append(err.message)
    for text in lines:
        if sys.stderr.isatty():
            width = min(shutil.get_terminal_size((100, 20)).columns, 100)
            text = textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)
        click.echo(text, err=True)


def _same_file(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def model_location(exc: BaseException, model_file: str) -> str | None:
    """file:line of the innermost traceback frame in the model file.

    That is the line of the user's model that was running when exc was raised,
    however deep inside jx the error itself came from.
    """
    if isinstance(exc, SyntaxError) and exc.filename and _same_file(exc.filename, model_file):
        return f"{exc.filename}:{exc.lineno}"
    where = None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if _same_file(filename, model_file):
            where = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def describe(exc: BaseException) -> str:
    """`TypeName: message`, with the message's own trailing period kept single."""
    msg = str(exc).strip() or "(no message)"
    return f"{type(exc).__name__}: {msg}"


def ensure_period(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."
