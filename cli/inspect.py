"""`jx inspect ARTIFACT`: what a compiled artifact holds, read from the file without
loading it (cli/artifact_file.py): entries with their argument trees, shapes and
dtypes, exported symbols, baked constants, target CPU and the ISA extensions its
code uses, jx and ABI versions, hashes. `--json` prints the same as one object."""
from __future__ import annotations

import json
import textwrap

import click

from jx.runtime import treespec

from . import artifact_file


def _tree(obj) -> str:
    try:
        return str(treespec.decode(obj))
    except Exception:       # a manifest that validated has trees that decode; be safe
        return "?"


def _entry(e: dict) -> dict:
    return {"name": e["name"], "symbol": e.get("symbol"), "arg_names": e.get("arg_names"),
            "in_tree": _tree(e.get("in_tree")), "out_tree": _tree(e.get("out_tree")),
            "inputs": e["inputs"], "outputs": e["outputs"], "baked": e.get("baked")}


def report(path: str) -> dict:
    """The JSON object `jx inspect --json` prints."""
    info = artifact_file.describe(path)
    m = info["manifest"]
    out = {"path": path, "format": info["format"], "machine": info["machine"],
           "size": info["size"], "sha256": info["sha256"],
           "manifest_sha256": info["manifest_sha256"], "content_hash": info["content_hash"],
           "seal": info["seal"], "jx_version": m["jx_version"],
           "abi_version": m["abi_version"], "target": m["target"], "cpu": m["cpu"],
           "cpu_features": m.get("cpu_features", []), "prefix": m.get("prefix"),
           "entries": [_entry(e) for e in m["entries"]],
           "symbols": info["symbols"], "baked": info["baked"]}
    if "files" in info:
        out["files"] = info["files"]
    out["manifest"] = m
    return out


def _leaf(leaf: dict) -> str:
    return f"{leaf['dtype']}[{', '.join(map(str, leaf['shape']))}]"


def _leaf_lines(leaves: list, fallback: str) -> list:
    names = [leaf.get("path") or (fallback if len(leaves) == 1 else f"{fallback}[{i}]")
             for i, leaf in enumerate(leaves)]
    width = max((len(n) for n in names), default=0)
    return [f"    {n:<{width}}  {_leaf(leaf)}" for n, leaf in zip(names, leaves)]


def _wrapped(label: str, words: list) -> list:
    text = " ".join(words) if words else "(none)"
    return textwrap.wrap(text, 88, initial_indent=f"  {label:<16}",
                         subsequent_indent=" " * 18, break_on_hyphens=False)


def _baked_lines(baked, indent: str = "  ") -> list:
    """Baked constants: jx.bake's records ({arg, origin, sha256, leaves}) or, for a
    form this jx does not know, each item as it is."""
    items = baked.items() if isinstance(baked, dict) else enumerate(baked or ())
    lines = []
    for key, value in items:
        if not isinstance(value, dict):
            lines.append(f"{indent}{key}  {value}")
            continue
        name = value.get("arg") or value.get("name") or value.get("path") or key
        parts = [_leaf(value)] if "dtype" in value and "shape" in value else []
        parts += [f"{'from' if k == 'origin' else k} {v}" for k, v in value.items()
                  if k not in ("arg", "name", "path", "dtype", "shape", "leaves")]
        lines.append(f"{indent}{name}  {'  '.join(map(str, parts))}".rstrip())
        leaves = value.get("leaves")
        if isinstance(leaves, list) and all(isinstance(x, dict) and "dtype" in x
                                            and "shape" in x for x in leaves):
            lines += ["  " + line for line in _leaf_lines(leaves, str(name))]
    return lines


def text(rep: dict) -> str:
    """The human-readable report (plain text: stable in pipes and tests)."""
    lines = [rep["path"],
             f"  {'format':<16}{rep['format']}, {rep['machine']}, {rep['size']} bytes",
             f"  {'jx version':<16}{rep['jx_version']}  (ABI version {rep['abi_version']})",
             f"  {'target':<16}{rep['target']}, CPU {rep['cpu']}"]
    if rep["prefix"]:
        lines.append(f"  {'symbol prefix':<16}{rep['prefix']}_")
    lines += _wrapped("ISA extensions", rep["cpu_features"])
    lines += [f"  {'sha256':<16}{rep['sha256']}  (the file)",
              f"  {'manifest':<16}{rep['manifest_sha256']}  (sha256 of the manifest)",
              f"  {'content hash':<16}{rep['content_hash']}",
              f"  {'seal':<16}{rep['seal']}"]
    for key, f in rep.get("files", {}).items():
        lines.append(f"  {key:<16}{f['path']}  " + (f"sha256 {f['sha256']}" if f["sha256"]
                                                     else "(missing)"))
    for e in rep["entries"]:
        args = ", ".join(e["arg_names"]) if e["arg_names"] is not None else "..."
        lines += ["", f"entry {e['name']}({args})" + (f"  symbol {e['symbol']}"
                                                      if rep["symbols"] else ""),
                  f"  arguments  {e['in_tree']}"]
        lines += _leaf_lines(e["inputs"], "arg")
        lines.append(f"  results    {e['out_tree']}")
        lines += _leaf_lines(e["outputs"], "result")
        if e.get("baked"):
            lines += ["  baked (stored in the artifact, not arguments)"]
            lines += _baked_lines(e["baked"], "    ")
    if rep["baked"]:
        lines += ["", "baked constants"] + _baked_lines(rep["baked"])
    if rep["symbols"]:
        entry_syms = {e["symbol"] for e in rep["entries"]}
        ours = [s["name"] for s in rep["symbols"] if s["name"] in entry_syms]
        rest = [s["name"] for s in rep["symbols"] if s["name"] not in entry_syms]
        lines += ["", f"symbols ({len(rep['symbols'])} exported)"]
        lines += _wrapped("entries", ours) + _wrapped("others", rest)
    return "\n".join(lines)


def register(main: click.Group, reports_errors) -> None:
    @main.command("inspect")
    @click.argument("artifact", type=click.Path(dir_okay=True))
    @click.option("--json", "as_json", is_flag=True,
                  help="Print the report as one JSON object (the manifest included).")
    @reports_errors
    def inspect_cmd(artifact: str, as_json: bool):
        """Show what ARTIFACT (a lib<name>.so, lib<name>.a or <name>.cuda.json from `jx
        compile`) holds: entries, argument shapes and dtypes, symbols, target CPU and
        ISA extensions, versions and hashes. The file is read, never loaded."""
        rep = report(artifact)
        click.echo(json.dumps(rep, indent=1, sort_keys=False) if as_json else text(rep))
