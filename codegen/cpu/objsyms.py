"""The global symbols an ELF object file (64-bit, little-endian) defines and needs.

LLVM may lower an instruction to a call into the compiler's runtime library
(`fptrunc double to half` becomes `__truncdfhf2` on CPUs without native FP16
conversion). Nothing links libgcc into jx.jit's code, and MCJIT binds a symbol
it cannot find to address 0: the first call would jump there. So every object is
read here before it is loaded or linked, and a symbol nobody provides is a build
error (see symbols.py)."""
from __future__ import annotations

import struct

_SHT_SYMTAB = 2
_SHN_UNDEF = 0
_STB_LOCAL = 0


def _sections(data: bytes) -> list:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF object")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    return [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
            for i in range(shnum)]


def global_symbols(data: bytes) -> tuple:
    """(defined, undefined): sets of the names of the object's non-local symbols."""
    sections = _sections(data)
    defined, undefined = set(), set()
    for sh in sections:
        if sh[1] != _SHT_SYMTAB:
            continue
        _, _, _, _, off, size, link, _, _, entsize = sh
        strtab = sections[link]
        str_off, str_size = strtab[4], strtab[5]
        for i in range(size // entsize):
            name_off, info, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", data,
                                                                off + i * entsize)
            if info >> 4 == _STB_LOCAL or not name_off or name_off >= str_size:
                continue
            end = data.index(b"\0", str_off + name_off)
            name = data[str_off + name_off:end].decode()
            (undefined if shndx == _SHN_UNDEF else defined).add(name)
    return defined, undefined
