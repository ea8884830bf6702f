"""Sanity checks of an ELF shared object before the dynamic loader sees it.

dlopen maps a file's segments as its program headers describe them; a file cut
short maps pages past its end, and touching them kills the process with SIGBUS.
So the loader first checks here, with the struct module alone, that the header
describes a shared object for this machine and that every table and loadable
segment lies inside the file. Returns a problem description, or None if fine.

It also holds the artifact's seal (a trailer recording the sha256 of every byte
before it, appended by `jx compile`; the loader recomputes it before dlopen, so a
flipped byte anywhere, manifest included, is refused before any of the file's code
runs) and the check that a file is a regular one before anything opens it.
"""
from __future__ import annotations

import hashlib
import os
import stat
import struct
import sys

_ET_REL, _ET_DYN = 1, 3
_SHT_NOBITS = 8
_PT_LOAD, _PT_DYNAMIC = 1, 2
_MACHINES = {3: "x86", 62: "x86-64", 40: "ARM", 183: "AArch64", 243: "RISC-V",
             20: "PowerPC", 21: "PowerPC64", 22: "S/390", 8: "MIPS"}


def _header(data: bytes):
    """(is64, endian, fields) of an ELF header, or None if it is cut short."""
    if len(data) < 16 or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    is64, endian = data[4] == 2, "<" if data[5] == 1 else ">"
    fmt = endian + ("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH")
    if len(data) < 16 + struct.calcsize(fmt):
        return None
    return is64, endian, struct.unpack_from(fmt, data, 16)


def _host_machine():
    """(e_machine, class) of the running interpreter, None if it cannot be read."""
    try:
        with open(sys.executable, "rb") as f:
            head = _header(f.read(64))
    except OSError:
        return None
    return None if head is None else (head[2][1], head[0])


def check(f, size: int) -> str | None:
    """Problems of the ELF file open as binary f (size bytes), or None."""
    f.seek(0)
    head = _header(f.read(64))
    if head is None:
        return "its ELF header is cut short (the file is truncated)"
    is64, endian, fields = head
    e_type, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _ = fields
    if e_type != _ET_DYN:
        return f"it is an ELF file of type {e_type}, not a shared object (type {_ET_DYN})"
    host = _host_machine()
    if host is not None and host != (machine, is64):
        name = _MACHINES.get(machine, f"machine {machine}")
        here = _MACHINES.get(host[0], f"machine {host[0]}")
        return (f"it was built for {name} ({64 if is64 else 32}-bit) but this is {here} "
                f"({64 if host[1] else 32}-bit)")
    if phoff + phnum * phentsize > size or (shoff and shoff + shnum * shentsize > size):
        return ("its program or section header table lies past the end (the file is "
                "truncated or damaged)")
    phfmt = endian + ("IIQQQQQQ" if is64 else "IIIIIIII")
    if phnum and phentsize < struct.calcsize(phfmt):
        return "its program headers are malformed"
    f.seek(phoff)
    table = f.read(phnum * phentsize)
    for i in range(phnum):
        ph = struct.unpack_from(phfmt, table, i * phentsize)
        offset, filesz = (ph[2], ph[5]) if is64 else (ph[1], ph[4])
        if ph[0] in (_PT_LOAD, _PT_DYNAMIC) and offset + filesz > size:
            return (f"segment {i} needs bytes up to {offset + filesz} but the file has "
                    f"{size} (the file is truncated)")
    return None


def section(data: bytes, name: str) -> bytes | None:
    """The contents of the ELF file's section called name (data: the whole file),
    or None when it has none or its tables are malformed."""
    head = _header(data[:64])
    if data[:4] != b"\x7fELF" or head is None:
        return None
    is64, endian, fields = head
    shoff, shentsize, shnum, shstrndx = fields[5], fields[10], fields[11], fields[12]
    shfmt = endian + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
    if not shoff or shentsize < struct.calcsize(shfmt) or shstrndx >= shnum \
            or shoff + shnum * shentsize > len(data):
        return None
    table = [struct.unpack_from(shfmt, data, shoff + i * shentsize) for i in range(shnum)]
    names_at, names_size = table[shstrndx][4], table[shstrndx][5]
    want = name.encode()
    for sh in table:
        start = names_at + sh[0]
        if sh[0] >= names_size or data[start:start + len(want) + 1] != want + b"\0":
            continue
        offset, size = sh[4], sh[5]
        if sh[1] == _SHT_NOBITS or offset + size > len(data):
            return None
        return data[offset:offset + size]
    return None


# -- the artifact seal ---------------------------------------------------------------------
# ELF loaders and linkers read a file through its headers' offsets, so bytes appended
# after the last table are inert: the seal costs nothing to a C program linking it.
SEAL_TAG = b"\njx-seal sha256:"
SEAL_SIZE = len(SEAL_TAG) + 64 + 1


def seal(data: bytes) -> bytes:
    """data with its seal appended."""
    return data + SEAL_TAG + hashlib.sha256(data).hexdigest().encode() + b"\n"


def check_seal(data: bytes) -> str | None:
    """Why data (a whole file) is not a sealed artifact intact, or None."""
    trailer = data[-SEAL_SIZE:]
    if len(data) <= SEAL_SIZE or not trailer.startswith(SEAL_TAG) or trailer[-1:] != b"\n":
        return ("it carries no jx integrity seal at its end: it was not written by "
                "`jx compile` (or by a jx older than the seal), or it was cut short")
    want = trailer[len(SEAL_TAG):-1]
    if hashlib.sha256(data[:-SEAL_SIZE]).hexdigest().encode() != want:
        return ("its bytes differ from the sha256 recorded when it was built: the file "
                "was modified or corrupted after `jx compile`")
    return None


def check_object(data: bytes) -> str | None:
    """Problems of a relocatable ELF object (the compile cache's entries) that would
    make LLVM or the symbol reader walk outside it, or None."""
    head = _header(data[:64])
    if data[:4] != b"\x7fELF" or head is None:
        return "it is not an ELF file, or its header is cut short"
    is64, endian, fields = head
    e_type, shoff, shentsize, shnum = fields[0], fields[5], fields[10], fields[11]
    if e_type != _ET_REL:
        return f"it is an ELF file of type {e_type}, not an object file (type {_ET_REL})"
    shfmt = endian + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
    if shnum == 0 or shentsize < struct.calcsize(shfmt) or shoff + shnum * shentsize > len(data):
        return "its section header table is missing or lies past the end"
    for i in range(shnum):
        sh = struct.unpack_from(shfmt, data, shoff + i * shentsize)
        sh_type, offset, size = sh[1], sh[4], sh[5]
        if sh_type != _SHT_NOBITS and offset + size > len(data):
            return f"section {i} needs bytes up to {offset + size} but the file has {len(data)}"
    return None


# -- opening only regular files --------------------------------------------------------
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def file_kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


class NotRegularFile(OSError):
    """The path names something other than a regular file (kind in .kind)."""

    def __init__(self, path: str, kind: str):
        super().__init__(f"{path} is {kind}")
        self.kind = kind


def read_regular(path: str) -> bytes:
    """The bytes of the regular file at path. A FIFO, device or directory raises
    NotRegularFile without being read (reading a FIFO would wait for a writer
    forever); other failures raise OSError (ELOOP for a symbolic-link loop)."""
    kind = file_kind(os.stat(path).st_mode)
    if kind:
        raise NotRegularFile(path, kind)
    # O_NONBLOCK: should the path become a FIFO after the stat, open still returns
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
                 | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as f:
        kind = file_kind(os.fstat(fd).st_mode)
        if kind:
            raise NotRegularFile(path, kind)
        return f.read()
