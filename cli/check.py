"""`jx compile --check`: is the committed artifact what this source builds now?

Builds are reproducible (same model, options, target and jx: byte-identical
files), so the check builds into a temporary folder and compares every file with
the one in the output folder, writing nothing there. For each file that differs
or is missing it says why, from the two manifests: the jx version, the target
CPU, the symbol prefix or library kind, the entries (added, removed, other
shapes), baked constants, and the entries whose code changed (each manifest
records a hash of every entry's fused program).
"""
from __future__ import annotations

import os

from . import artifact_file
from .errors import CliError


def compare(built: dict, out_dir: str, model: str, sources: dict) -> list:
    """[(where, message)] for each file of `built` (compile_model's result, in a
    temporary folder) that the same name in out_dir does not equal byte for byte.
    sources: entry name -> file:line of its declaration (where a changed entry's
    finding points)."""
    problems = []
    for key in ("library", "header", "pkgconfig", "cmake", "ptx", "cubin"):
        new_path = built.get(key)
        if not new_path:
            continue
        old_path = os.path.join(out_dir, os.path.basename(new_path))
        with open(new_path, "rb") as f:
            new = f.read()
        try:
            with open(old_path, "rb") as f:
                old = f.read()
        except FileNotFoundError:
            problems.append((old_path, f"{old_path} is missing; build it with `jx compile "
                                       f"{model}` and commit it"))
            continue
        except OSError as e:
            problems.append((old_path, f"{old_path} cannot be read ({e.strerror})"))
            continue
        if old == new:
            continue
        if key == "library":
            problems += _why(old_path, built["manifest"], sources, model)
            break             # the files beside it follow the library (the header's hash)
        else:
            problems.append((old_path, f"{old_path} differs from what {model} builds now "
                                       "(rebuild and commit it)"))
    return problems


def _why(path: str, new: dict, sources: dict, model: str) -> list:
    """The reasons the artifact at path differs from a build with manifest `new`."""
    try:
        old = artifact_file.describe(path)["manifest"]
    except CliError as e:
        return [(path, f"{path} is not a readable jx artifact ({e.message}); rebuild it")]
    todo = f"rebuild with `jx compile {model}` and commit the artifact"
    reasons = []
    if old.get("jx_version") != new.get("jx_version"):
        reasons.append(f"it was built by jx {old.get('jx_version')}, this is jx "
                       f"{new.get('jx_version')}")
    if (old.get("cpu"), old.get("target")) != (new.get("cpu"), new.get("target")):
        reasons.append(f"it was built for CPU {old.get('cpu')} ({old.get('target')}), this "
                       f"build is for {new.get('cpu')} ({new.get('target')}); pass --cpu "
                       f"{old.get('cpu')} to check that target")
    if old.get("tuning") != new.get("tuning"):
        diff = sorted(k for k in set(old.get("tuning") or {}) | set(new.get("tuning") or {})
                      if (old.get("tuning") or {}).get(k) != (new.get("tuning") or {}).get(k))
        reasons.append("it was built with other code-generation constants (" + ", ".join(
            f"{k} {(old.get('tuning') or {}).get(k)} -> {(new.get('tuning') or {}).get(k)}"
            for k in diff) + "), measured on another host or with JX_TUNE; build with "
            "JX_TUNE=off on both sides for constants that do not depend on the host")
    if old.get("prefix", "jx") != new.get("prefix", "jx"):
        reasons.append(f"its symbol prefix is {old.get('prefix', 'jx')!r}, this build's "
                       f"{new.get('prefix', 'jx')!r} (--prefix)")
    out = [(path, f"{path} differs: {r}; {todo}") for r in reasons]
    olds = {e["name"]: e for e in old.get("entries", [])}
    news = {e["name"]: e for e in new.get("entries", [])}
    for name in news:
        where = sources.get(name) or model
        if name not in olds:
            out.append((where, f"entry {name!r} is new: {path} does not have it; {todo}"))
            continue
        a, b = olds[name], news[name]
        what = _entry_change(a, b)
        if what:
            out.append((where, f"entry {name!r} in {path} differs: {what}; {todo}"))
    for name in olds:
        if name not in news:
            out.append((path, f"{path} has entry {name!r}, which this build does not (removed "
                              f"from the model, or not selected with --entry); {todo}"))
    if not out:
        out.append((path, f"{path} differs from this build with the same entries, shapes and "
                          "code (its constants, e.g. a module-level array, or its link "
                          f"step changed); {todo}"))
    return out


def _entry_change(a: dict, b: dict) -> str | None:
    for side in ("inputs", "outputs"):
        sa = [(x["path"], x["dtype"], x["shape"]) for x in a.get(side, [])]
        sb = [(x["path"], x["dtype"], x["shape"]) for x in b.get(side, [])]
        if sa != sb:
            return f"its {side} were {_leaves(sa)}, now {_leaves(sb)}"
    ba = [(r.get("arg"), r.get("sha256")) for r in a.get("baked") or ()]
    bb = [(r.get("arg"), r.get("sha256")) for r in b.get("baked") or ()]
    if ba != bb:
        return "its baked constants changed (" + ", ".join(
            f"{arg} sha256 {sha[:12]}…" for arg, sha in bb) + ")" if bb else \
            "it had baked constants, this build has none"
    if a.get("code_sha256") != b.get("code_sha256"):
        return "its code changed (the model's source, or how jx lowers it)"
    return None


def _leaves(items: list) -> str:
    return ", ".join(f"{p or '<result>'} {dt}{list(sh)}" for p, dt, sh in items) or "none"
