"""Read what a jx artifact says about itself from its bytes alone: no dlopen, so an
artifact built for another machine (or a damaged file) is described or refused
without any of its code running, and nothing of the compiler is imported.

A CPU artifact (lib<name>.so, or a static lib<name>.a) carries its manifest as a
NUL-terminated JSON string in read-only data, next to the sha256 hex of that string
(the checksum the loader compares); a CUDA build's manifest is the <name>.cuda.json
file itself. The manifest is found by content rather than through its symbol, so
any symbol prefix the artifact was built with reads the same way.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import struct

from jx.runtime import elf, manifest as manifest_mod
from jx.runtime.errors import ManifestError

from .errors import CliError

CUDA_SUFFIX = ".cuda.json"
_MACHINES = {3: "x86", 62: "x86-64", 40: "ARM", 183: "AArch64", 243: "RISC-V",
             20: "PowerPC", 21: "PowerPC64", 22: "S/390", 8: "MIPS"}
_SHT_SYMTAB, _SHT_DYNSYM = 2, 11
_BINDINGS = {0: "local", 1: "global", 2: "weak"}
_TYPES = {0: "none", 1: "object", 2: "function", 3: "section", 4: "file", 6: "tls"}
_AR_MAGIC = b"!<arch>\n"
# The canonical manifest's first key (sorted): where its JSON text starts.
_MANIFEST_START = b'{"abi_version":'
_REBUILD = "rebuild it with `jx compile MODEL.py`"


def _fail(path: str, problem: str, todo: str = _REBUILD) -> CliError:
    return CliError(f"{path} {problem}; {todo}.")


def read_bytes(path: str) -> bytes:
    """The file's bytes, or a CliError saying what the path is instead."""
    try:
        return elf.read_regular(path)
    except elf.NotRegularFile as e:
        hint = ("pass the lib<name>.so inside it" if e.kind == "a directory"
                else "pass the .so (or .cuda.json) written by `jx compile`")
        raise CliError(f"{path} is {e.kind}, not an artifact file; {hint}.") from None
    except FileNotFoundError:
        raise CliError(f"{path}: no such file; build the artifact with "
                       "`jx compile MODEL.py` (it lands in build/ beside the model).") from None
    except OSError as e:
        raise CliError(f"{path}: cannot read the file ({e.strerror}).") from None


def describe(path: str) -> dict:
    """Everything `jx inspect` shows, as plain JSON-able data."""
    data = read_bytes(path)
    info = {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if path.endswith(CUDA_SUFFIX):
        info.update(_cuda(path, data))
    elif data.startswith(b"\x7fELF"):
        info.update(_shared_object(path, data))
    elif data.startswith(_AR_MAGIC):
        info.update(_static_library(path, data))
    elif not data:
        raise _fail(path, "is empty")
    elif path.endswith(".py"):
        raise CliError(f"{path} is a model source, not an artifact; compile it first "
                       f"(`jx compile {path}`) and inspect the lib<name>.so it writes.")
    else:
        raise CliError(f"{path} is not a jx artifact (it starts with {data[:8]!r}, neither an "
                       "ELF shared object, a static library nor a .cuda.json manifest); pass "
                       "the lib<name>.so written by `jx compile`.")
    manifest = info["manifest"]
    _validate(path, manifest)
    info["content_hash"] = manifest["content_hash"]
    info["baked"] = manifest.get("baked")
    return info


# -- ELF ---------------------------------------------------------------------------------
def _elf_header(path: str, data: bytes) -> tuple:
    """(is64, endian, e_type, machine, shoff, shentsize, shnum) with the section
    table inside the file, or CliError."""
    if len(data) < 64 or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise _fail(path, "has an ELF header that is cut short or malformed (the file is "
                    "truncated or damaged)")
    is64, endian = data[4] == 2, "<" if data[5] == 1 else ">"
    fields = struct.unpack_from(endian + ("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH"),
                                data, 16)
    e_type, machine, shoff, shentsize, shnum = (fields[0], fields[1], fields[5], fields[10],
                                                fields[11])
    if shoff + shnum * shentsize > len(data) or (shnum and shentsize < (64 if is64 else 40)):
        raise _fail(path, "has its section header table past the end of the file (it is "
                    "truncated or damaged)")
    return is64, endian, e_type, machine, shoff, shentsize, shnum


def _sections(data: bytes, head: tuple) -> list:
    """[(type, offset, size, link, entsize)] of every section that lies in the file."""
    is64, endian, _, _, shoff, shentsize, shnum = head
    fmt = endian + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
    out = []
    for i in range(shnum):
        sh = struct.unpack_from(fmt, data, shoff + i * shentsize)
        out.append((sh[1], sh[4], sh[5], sh[6], sh[9]))
    return out


def _symbols(data: bytes, head: tuple, kind: int) -> list:
    """The defined global and weak symbols of the symbol table of `kind` (.dynsym:
    what a program linking the library sees), sorted by name."""
    is64, endian = head[0], head[1]
    secs = _sections(data, head)
    fmt = endian + ("IBBHQQ" if is64 else "IIIBBH")
    width = struct.calcsize(fmt)
    found = {}
    for sh_type, offset, size, link, entsize in secs:
        if sh_type != kind or link >= len(secs) or entsize < width \
                or offset + size > len(data):
            continue
        _, str_off, str_size, _, _ = secs[link]
        if str_off + str_size > len(data):
            continue
        names = data[str_off:str_off + str_size]
        for at in range(offset, offset + size - width + 1, entsize):
            if is64:
                name_at, info, other, shndx, _, sym_size = struct.unpack_from(fmt, data, at)
            else:
                name_at, _, sym_size, info, other, shndx = struct.unpack_from(fmt, data, at)
            bind, typ = info >> 4, info & 0xF
            if shndx == 0 or bind not in (1, 2) or name_at >= len(names):
                continue            # undefined (imported) or local
            end = names.find(b"\0", name_at)
            name = names[name_at:end if end >= 0 else len(names)].decode("utf-8", "replace")
            if name:
                found[name] = {"name": name, "type": _TYPES.get(typ, str(typ)),
                               "binding": _BINDINGS[bind], "size": sym_size,
                               "hidden": (other & 3) in (1, 2)}
    return [found[n] for n in sorted(found)]


def _machine(machine: int, is64: bool) -> str:
    return f"{_MACHINES.get(machine, f'ELF machine {machine}')} ({64 if is64 else 32}-bit)"


def _shared_object(path: str, data: bytes) -> dict:
    head = _elf_header(path, data)
    if head[2] != 3:
        raise CliError(f"{path} is an ELF file of type {head[2]}, not a shared object; pass "
                       "the lib<name>.so written by `jx compile`.")
    problem = elf.check_seal(data)
    if problem is not None and "differ" in problem:
        raise _fail(path, f"is damaged: {problem}")
    body = data if problem else data[:-elf.SEAL_SIZE]
    manifest, text = _embedded_manifest(path, body)
    symbols = _symbols(body, head, _SHT_DYNSYM)
    return {"format": "shared object", "machine": _machine(head[3], head[0]),
            "seal": "absent (jx.runtime.load refuses the file)" if problem else "intact",
            "manifest": manifest, "manifest_sha256": hashlib.sha256(text).hexdigest(),
            "symbols": [s for s in symbols if not s["hidden"]]}


def _members(path: str, data: bytes):
    """(name, bytes) of each member of an ar archive."""
    at = len(_AR_MAGIC)
    longnames = b""
    while at + 60 <= len(data):
        hdr = data[at:at + 60]
        try:
            size = int(hdr[48:58].decode().strip())
        except ValueError:
            raise _fail(path, "is a damaged archive (a member header is malformed)") from None
        name = hdr[:16].decode("ascii", "replace").strip()
        body = data[at + 60:at + 60 + size]
        if name == "//":
            longnames = body
        elif name.startswith("/") and name[1:].isdigit() and longnames:
            start = int(name[1:])
            name = longnames[start:longnames.find(b"/\n", start)].decode("utf-8", "replace")
        yield name.rstrip("/"), body
        at += 60 + size + (size & 1)


def _static_library(path: str, data: bytes) -> dict:
    symbols, machine = {}, None
    for name, body in _members(path, data):
        if not body.startswith(b"\x7fELF"):
            continue
        head = _elf_header(f"{path}({name})", body)
        machine = machine or _machine(head[3], head[0])
        for s in _symbols(body, head, _SHT_SYMTAB):
            if not s["hidden"]:
                symbols[s["name"]] = s
    manifest, text = _embedded_manifest(path, data)
    problem = elf.check_seal(data)
    return {"format": "static library", "machine": machine or "unknown",
            "seal": "none (a static library is checked by the linker, not jx's loader)"
            if problem else "intact", "manifest": manifest,
            "manifest_sha256": hashlib.sha256(text).hexdigest(),
            "symbols": [symbols[n] for n in sorted(symbols)]}


def _embedded_manifest(path: str, data: bytes) -> tuple:
    """(manifest dict, its text): the JSON string in read-only data whose sha256 hex
    is also in the file, as jx writes them."""
    start = data.find(_MANIFEST_START)
    unmatched = False
    while start >= 0:
        end = data.find(b"\0", start)
        text = data[start:end if end >= 0 else len(data)]
        if hashlib.sha256(text).hexdigest().encode() in data:
            try:
                return json.loads(text.decode("utf-8")), text
            except (UnicodeDecodeError, ValueError):
                pass
        unmatched = True
        start = data.find(_MANIFEST_START, start + 1)
    if unmatched:
        raise _fail(path, "holds a jx manifest that does not match the checksum built "
                    "beside it: the file was modified or corrupted after `jx compile`")
    raise CliError(f"{path} holds no jx manifest: it is not an artifact built by `jx compile` "
                   "(or by a jx whose artifacts this one cannot read); pass the "
                   "lib<name>.so written by `jx compile`, or rebuild it with this jx.")


# -- CUDA --------------------------------------------------------------------------------
def _cuda(path: str, data: bytes) -> dict:
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _fail(path, f"is not valid JSON ({e}): the file is damaged",
                    "rebuild it with `jx compile MODEL.py --target cuda`") from None
    if not isinstance(manifest, dict):
        raise _fail(path, "is not a jx CUDA manifest (not a JSON object)",
                    "rebuild it with `jx compile MODEL.py --target cuda`")
    folder = os.path.dirname(path)
    files = {}
    for key in ("ptx", "cubin"):
        name = manifest.get(key)
        if isinstance(name, str):
            full = os.path.join(folder, os.path.basename(name))
            try:
                with open(full, "rb") as f:
                    files[key] = {"path": full, "sha256": hashlib.sha256(f.read()).hexdigest()}
            except OSError:
                files[key] = {"path": full, "sha256": None}
    return {"format": "CUDA manifest", "machine": f"NVIDIA GPU ({manifest.get('cpu')})",
            "seal": "none (a CUDA build is checked by its content hash)",
            "manifest": manifest, "manifest_sha256": hashlib.sha256(data).hexdigest(),
            "symbols": [], "files": files}


def _validate(path: str, manifest) -> None:
    """The runtime's manifest checks (what jx.runtime.load would say). bfloat16 is
    checked as float16 (the same width): reading a manifest must not need ml_dtypes."""
    probe = copy.deepcopy(manifest)
    if isinstance(probe, dict) and isinstance(probe.get("entries"), list):
        for e in probe["entries"]:
            for side in ("inputs", "outputs"):
                for leaf in (e.get(side) or []) if isinstance(e, dict) else []:
                    if isinstance(leaf, dict) and leaf.get("dtype") == "bfloat16":
                        leaf["dtype"] = "float16"
    try:
        manifest_mod.validate(probe, path)
    except ManifestError as e:
        raise CliError(f"{e}; the manifest is not one this jx reads: {_REBUILD}.") from None
