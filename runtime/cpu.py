"""Does this CPU have the instruction-set extensions an artifact was built with?

An artifact is compiled for one CPU (the building host's, unless `jx compile
--cpu` names another); run on a CPU without, say, AVX-512 its first call would
die of an illegal instruction. The manifest lists the extensions the build
enabled (LLVM's names); the loader checks them against the kernel's CPU flags.
Needs no LLVM: Linux's /proc/cpuinfo; elsewhere nothing is checked.
"""
from __future__ import annotations

import functools

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


def _cpuinfo(field: str) -> str | None:
    """The first value of a /proc/cpuinfo field, or None where it cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(field):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


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


def missing(features) -> list:
    """The listed LLVM feature names this CPU lacks (empty when unknown)."""
    flags = host_flags()
    if flags is None:
        return []
    return [f for f in features if f in X86_FLAGS and X86_FLAGS[f] not in flags]
