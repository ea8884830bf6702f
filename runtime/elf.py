"""Sanity checks of an ELF shared object before the dynamic loader sees it.

dlopen maps a file's segments as its program headers describe them; a file cut
short maps pages past its end, and touching them kills the process with SIGBUS.
So the loader first checks here, with the struct module alone, that the header
describes a shared object for this machine and that every table and loadable
segment lies inside the file. Returns a problem description, or None if fine.
"""
from __future__ import annotations

import struct
import sys

_ET_DYN = 3
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
        return "its program or section header table lies past the end (the file is truncated)"
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
