"""The host: what this machine is, read once, for every layer that needs to know.

The CPU's name and flags (Linux's /proc/cpuinfo), the table from LLVM's names of
the x86 extensions to those flags (the loader checks an artifact's list of them
before it runs any code; an artifact built for a CPU with, say, AVX-512 would
otherwise die of an illegal instruction at its first call), the widest vector
register, the data caches (sysfs) and the CPUs this process may use. Read by the
code generator (codegen/cpu/target.py puts LLVM's names on these facts; tuning.py
keys its measured constants by them), the runtime's ISA check and `jx bench
--machine`. Measured records are stored by store.py. Needs no LLVM: where Linux
does not say, the values are conservative defaults and nothing is checked.
"""
from __future__ import annotations

import functools
import os

# LLVM feature name -> /proc/cpuinfo flag, for the x86 extensions code may use.
X86_FLAGS = {
    "sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "popcnt": "popcnt",
    "avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c", "bmi": "bmi1",
    "bmi2": "bmi2", "lzcnt": "abm", "movbe": "movbe", "fma4": "fma4", "xop": "xop",
    "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512cd": "avx512cd",
    "avx512dq": "avx512dq", "avx512vl": "avx512vl", "avx512vbmi": "avx512vbmi",
    "avx512ifma": "avx512ifma", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
    "avx512fp16": "avx512_fp16", "avx512vpopcntdq": "avx512_vpopcntdq",
    "avx512bitalg": "avx512_bitalg", "avx512vbmi2": "avx512_vbmi2", "gfni": "gfni",
    "vaes": "vaes", "vpclmulqdq": "vpclmulqdq",
}


@functools.lru_cache(maxsize=None)
def cpu_fields() -> dict:
    """{field: value} of the first CPU in /proc/cpuinfo ({} where it cannot be read)."""
    try:
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n", 1)[0]
    except OSError:
        return {}
    fields = {}
    for line in first.splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields.setdefault(name.strip(), value.strip())
    return fields


def _cpuinfo(field: str) -> str | None:
    """The first value of a /proc/cpuinfo field, or None where it cannot be read."""
    return cpu_fields().get(field)


@functools.lru_cache(maxsize=None)
def host_flags() -> frozenset | None:
    """The CPU flags Linux reports, or None where they cannot be read."""
    flags = _cpuinfo("flags")
    return None if flags is None else frozenset(flags.split())


@functools.lru_cache(maxsize=None)
def model_name() -> str:
    """The CPU's marketing name ('AMD EPYC', 'Intel(R) Xeon(R) ...'), for reports
    and the keys of what is measured on a host."""
    import platform
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def missing(features, flags=None) -> list:
    """The listed LLVM feature names a CPU with `flags` (default: this one's) lacks;
    empty when its flags are unknown."""
    flags = host_flags() if flags is None else flags
    if flags is None:
        return []
    return [f for f in features if f in X86_FLAGS and X86_FLAGS[f] not in flags]


def vector_bytes(features=None) -> int:
    """The widest vector register of code that may use `features` (LLVM names; by
    default this CPU's flags, which agree with LLVM's names here): 64 (AVX-512),
    32 (AVX), 16."""
    f = (host_flags() or frozenset()) if features is None else features
    if "avx512f" in f:
        return 64
    return 32 if "avx" in f else 16


def cpus_usable() -> int:
    """The CPUs this process may run on (its affinity mask; all of them elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:       # not Linux
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=None)
def _sysfs_caches() -> tuple:
    """The host's data (or unified) caches as sysfs describes cpu0's: dicts with
    level, size (bytes), sharers (CPUs sharing it), sets and ways (0 if unknown)."""
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return ()

    def field(entry, name, default=None):
        try:
            with open(os.path.join(root, entry, name)) as f:
                return f.read().strip()
        except OSError:
            return default

    caches = []
    for entry in entries:
        try:
            text = field(entry, "size")
            size = int(text[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[text[-1]] \
                if text[-1] in "KMG" else int(text)
            cache = {"level": int(field(entry, "level")), "size": size,
                     "sharers": _count_cpus(field(entry, "shared_cpu_list")),
                     "sets": int(field(entry, "number_of_sets", "0")),
                     "ways": int(field(entry, "ways_of_associativity", "0"))}
        except (TypeError, ValueError, IndexError):
            continue
        if field(entry, "type") in ("Data", "Unified"):
            caches.append(cache)
    return tuple(caches)


def l1_geometry() -> tuple:
    """(sets, ways) of the host's L1 data cache; (64, 8) where sysfs does not say."""
    for c in _sysfs_caches():
        if c["level"] == 1 and c["sets"] > 0 and c["ways"] > 0:
            return c["sets"], c["ways"]
    return 64, 8


def cache_sizes() -> dict:
    """The host's per-core data cache sizes in bytes {1: L1d, 2: L2, 3: L3 share}, read
    from sysfs; conservative defaults where they cannot be read."""
    sizes = {1: 32 << 10, 2: 1 << 20, 3: 2 << 20}
    for c in _sysfs_caches():
        sizes[c["level"]] = c["size"] // max(1, c["sharers"]) if c["level"] >= 3 else c["size"]
    return sizes


def _count_cpus(spec: str) -> int:
    n = 0
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n
