"""The manifest embedded in an artifact (returned by `jx_manifest()`), version 1:

    {"abi_version": 1, "jx_version": "0.1.0", "target": "<llvm triple>", "cpu": "<cpu>",
     "cpu_features": ["avx2", "fma", ...],   (optional: ISA extensions the code may use)
     "prefix": "mlp",        (optional: the symbols' prefix; absent before prefixes: "jx")
     "tuning": {"interleave": 4, ...},   (optional: the code-generation constants used)
     "content_hash": "<64 hex digits>",
     "entries": [{"name": "predict", "symbol": "mlp_predict",
                  "arg_names": ["params", "x"],                       (optional)
                  "inputs": [{"shape": [784, 1024], "dtype": "float32",
                              "path": "params['w1']"}, ...],
                  "outputs": [{"shape": [128, 10], "dtype": "float32", "path": ""}],
                  "in_tree": <treespec JSON>, "out_tree": <treespec JSON>,
                  "code_sha256": "<64 hex>",  (optional: the entry's fused program as text)
                  "baked": [{"arg": "params", "origin": "weights.npz",     (optional:
                             "sha256": "<64 hex>", "leaves": [...]}]}]}  arguments stored
                                                    inside, no longer in inputs/in_tree)

An entry with symbolic dimensions (jx.f32["B", 784]) has shapes holding their
expressions as strings (["B", 784], ["2*B"]) and a "dims" object:

    "dims": {"symbols": ["B"],                       the order of the entry's dims array
             "constraints": [{"name": "B", "min": 1, "max": null, "multiple_of": 1}],
             "read": [[1, 0, 1, 0]]}                 per symbol: input leaf, axis, c, k:
                                                     that dimension is c*symbol + k

inputs/outputs list the flattened leaves in ABI order; in_tree's root is the
tuple of positional arguments (arg_names, when present, lets callers pass them
by keyword). dtype is a NumPy dtype name ("float32", "int64", "bool", ...).
content_hash = sha256(canonical_json(manifest) + ir_text): the manifest without
its hash, serialised canonically, followed by the LLVM IR text.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import re
from dataclasses import dataclass

import numpy as np

from . import treespec
from .abi import LEGACY_PREFIX, entry_symbol
from .errors import HashMismatchError, ManifestError

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


@dataclass(frozen=True)
class LeafSpec:
    path: str
    shape: tuple
    dtype: np.dtype

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def symbolic(self) -> bool:
        return any(isinstance(d, str) for d in self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.name}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class DimsSpec:
    """An entry's symbolic dimensions: names (the dims array's order), their
    constraints ((name, min, max or None, multiple_of) each), and where the loader
    reads each value ((input leaf, axis, c, k): that dim is c * value + k)."""
    symbols: tuple
    constraints: tuple
    read: tuple


@dataclass(frozen=True)
class EntrySpec:
    name: str
    symbol: str
    inputs: tuple          # LeafSpec per flattened input leaf, in ABI order
    outputs: tuple
    in_tree: treespec.TreeSpec
    out_tree: treespec.TreeSpec
    arg_names: tuple | None
    dims: DimsSpec | None = None


def canonical_json(manifest: dict) -> str:
    """The manifest without content_hash, serialised deterministically."""
    body = {k: v for k, v in manifest.items() if k != "content_hash"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def content_hash(manifest: dict, ir_text: str) -> str:
    data = canonical_json(manifest).encode("utf-8") + ir_text.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def manifest_json(manifest: dict) -> str:
    """The text to embed as jx_manifest(): canonical, hash included."""
    return json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def verify_content_hash(manifest: dict, ir_text: str) -> None:
    """HashMismatchError unless the manifest's hash matches itself and ir_text."""
    want = content_hash(manifest, ir_text)
    if manifest.get("content_hash") != want:
        raise HashMismatchError(f"manifest content_hash {manifest.get('content_hash')!r} does "
                                f"not match its contents and IR ({want}): the artifact was "
                                "modified after it was built; rebuild it with `jx compile`")


def parse_dtype(name, where: str) -> np.dtype:
    if name == "bfloat16":
        try:
            importlib.import_module("ml_dtypes")   # registers bfloat16 with NumPy
        except ImportError:
            raise ManifestError(f"{where}: dtype bfloat16 needs the ml_dtypes package; "
                                "pip install ml_dtypes") from None
    try:
        dt = np.dtype(name) if isinstance(name, str) else None
    except TypeError:
        dt = None
    if dt is None or dt.name != name or not (dt.kind in "biufc" or name == "bfloat16") \
            or dt.itemsize > 16:
        raise ManifestError(f"{where}: {name!r} is not a supported dtype name (bool, "
                            "int8..int64, uint8..uint64, float16/32/64, bfloat16, "
                            "complex64/128)")
    return dt


_EXPR = re.compile(r"[A-Za-z0-9_ +\-*/()^]+\Z")


def _leaf(obj, where: str, symbolic: bool = False) -> LeafSpec:
    if not isinstance(obj, dict):
        raise ManifestError(f"{where}: expected {{'shape', 'dtype', 'path'}}, got {obj!r:.80}")
    shape = obj.get("shape")
    if not isinstance(shape, list) or not all(
            (type(d) is int and d >= 0) or (symbolic and isinstance(d, str) and _EXPR.match(d))
            for d in shape):
        raise ManifestError(f"{where}: shape must be a list of non-negative ints"
                            f"{' or dimension expressions' if symbolic else ''}, "
                            f"got {shape!r:.80}")
    size = 1
    for d in shape:
        size *= d if type(d) is int else 1
    if size >= 1 << 48:
        raise ManifestError(f"{where}: shape {shape!r:.80} is larger than any buffer")
    path = obj.get("path", "")
    if not isinstance(path, str):
        raise ManifestError(f"{where}: path must be a string, got {path!r:.80}")
    return LeafSpec(path, tuple(shape), parse_dtype(obj.get("dtype"), where))


def _require(obj: dict, key: str, kind: type, where: str):
    value = obj.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ManifestError(f"{where}: field {key!r} must be a {kind.__name__}, "
                            f"got {value!r:.80}")
    return value


def prefix_of(manifest: dict) -> str:
    """The prefix of the artifact's symbols (LEGACY_PREFIX for one built before
    prefixes)."""
    return manifest.get("prefix", LEGACY_PREFIX)


def _entry(obj, where: str, source: str, prefix: str = LEGACY_PREFIX) -> EntrySpec:
    if not isinstance(obj, dict):
        raise ManifestError(f"{where}: expected an entry object")
    name = _require(obj, "name", str, where)
    if not _IDENT.match(name):
        raise ManifestError(f"{where}: entry name {name!r} is not a C identifier")
    where = f"{source}: entry {name!r}"
    symbol = obj.get("symbol", entry_symbol(name, prefix))
    if not isinstance(symbol, str) or not _IDENT.match(symbol):
        raise ManifestError(f"{where}: symbol {symbol!r} is not a C identifier")
    dims = _dims(obj.get("dims"), where) if "dims" in obj else None
    leaves = {}
    for side in ("inputs", "outputs"):
        items = _require(obj, side, list, where)
        leaves[side] = tuple(_leaf(x, f"{where} {side}[{i}]", dims is not None)
                             for i, x in enumerate(items))
    if dims is not None:
        for k, (leaf, axis, c, _) in enumerate(dims.read):
            if not (0 <= leaf < len(leaves["inputs"]) and
                    0 <= axis < len(leaves["inputs"][leaf].shape) and c != 0):
                raise ManifestError(f"{where}: dims read[{k}] {list(dims.read[k])} names no "
                                    "dimension of an input")
    in_tree = treespec.decode(obj.get("in_tree"), f"{where} in_tree")
    out_tree = treespec.decode(obj.get("out_tree"), f"{where} out_tree")
    if in_tree.kind != "tuple":
        raise ManifestError(f"{where}: in_tree must be the tuple of arguments, got {in_tree}")
    for side, tree in (("inputs", in_tree), ("outputs", out_tree)):
        if tree.num_leaves != len(leaves[side]):
            raise ManifestError(f"{where}: tree {tree} has {tree.num_leaves} leaves but "
                                f"{len(leaves[side])} {side} are listed")
    names = obj.get("arg_names")
    if names is not None:
        if (not isinstance(names, list) or len(names) != len(in_tree.children)
                or not all(isinstance(n, str) for n in names)):
            raise ManifestError(f"{where}: arg_names must list one name per argument")
        names = tuple(names)
    return EntrySpec(name, symbol, leaves["inputs"], leaves["outputs"], in_tree, out_tree,
                     names, dims)


def _dims(obj, where: str) -> DimsSpec:
    if not isinstance(obj, dict):
        raise ManifestError(f"{where}: dims must be an object")
    symbols = _require(obj, "symbols", list, f"{where} dims")
    if not symbols or not all(isinstance(n, str) and _IDENT.match(n) for n in symbols) \
            or len(set(symbols)) != len(symbols):
        raise ManifestError(f"{where}: dims symbols must be distinct identifiers")
    cons = []
    for c in _require(obj, "constraints", list, f"{where} dims"):
        ok = isinstance(c, dict) and c.get("name") in symbols and \
            all(type(c.get(k)) is int for k in ("min", "multiple_of")) and \
            (c.get("max") is None or type(c.get("max")) is int) and c["multiple_of"] >= 1
        if not ok:
            raise ManifestError(f"{where}: dims constraint {c!r:.80} is malformed")
        cons.append((c["name"], c["min"], c["max"], c["multiple_of"]))
    read = _require(obj, "read", list, f"{where} dims")
    if len(read) != len(symbols) or not all(
            isinstance(r, list) and len(r) == 4 and all(type(x) is int for x in r) for r in read):
        raise ManifestError(f"{where}: dims read must give [leaf, axis, c, k] per symbol")
    return DimsSpec(tuple(symbols), tuple(cons), tuple(tuple(r) for r in read))


def parse(text, source: str) -> tuple:
    """Manifest text -> (manifest dict, [EntrySpec]); ManifestError naming source."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        manifest = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ManifestError(f"{source}: the embedded manifest is not valid JSON ({e}); the "
                            "file is damaged or was not built by jx: rebuild it with "
                            "`jx compile`") from None
    return manifest, validate(manifest, source)


def validate(manifest, source: str) -> list:
    """Check a manifest dict; its entries as EntrySpecs, or ManifestError."""
    if not isinstance(manifest, dict):
        raise ManifestError(f"{source}: the manifest is not a JSON object")
    where = f"{source}: manifest"
    _require(manifest, "abi_version", int, where)
    for key in ("jx_version", "target", "cpu", "content_hash"):
        _require(manifest, key, str, where)
    feats = manifest.get("cpu_features", [])
    if not isinstance(feats, list) or not all(isinstance(f, str) for f in feats):
        raise ManifestError(f"{where}: cpu_features must be a list of strings")
    if not _HEX64.match(manifest["content_hash"]):
        raise ManifestError(f"{where}: content_hash must be 64 lowercase hex digits")
    prefix = prefix_of(manifest)
    if not isinstance(prefix, str) or not _IDENT.match(prefix):
        raise ManifestError(f"{where}: prefix {prefix!r} is not a C identifier")
    raw = _require(manifest, "entries", list, where)
    entries = [_entry(e, f"{where} entries[{i}]", source, prefix) for i, e in enumerate(raw)]
    seen: set = set()
    for e in entries:
        if e.name in seen:
            raise ManifestError(f"{where}: entry {e.name!r} is listed twice")
        seen.add(e.name)
    return entries
