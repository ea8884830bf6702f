"""The CPU code is built for, by LLVM's names.

A *target* is an LLVM CPU name: the host's own (the default), one named with
`jx compile --cpu NAME`, or for jx.jit the environment variable JX_CPU. What
the backend derives from it: the instruction-set extensions the code may use
(the manifest lists them, the loader checks them), the widest vector register
(the GEMM's register blocking), and, for the host, its cache sizes (the GEMM's
cache blocking, see gemm.py). The host's own facts (flags, caches, the
extension-to-flag table) are read by jx.runtime.host; this module names them
as LLVM does. The feature string a target machine is built with also depends on
tuned constants, so it is made by tuning.llvm_features.
"""
from __future__ import annotations

import functools
import os
import sys

from jx.errors import JxError
from jx.runtime import host

# x86-64 levels by LLVM feature names; each includes the one before.
_V2 = ("sse3", "ssse3", "sse4.1", "sse4.2", "popcnt")
_V3 = _V2 + ("avx", "avx2", "fma", "bmi", "bmi2", "f16c", "lzcnt", "movbe")
_V4 = _V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_ICX = _V4 + ("avx512vbmi", "avx512vbmi2", "avx512ifma", "avx512vnni", "avx512bitalg",
              "avx512vpopcntdq", "gfni", "vaes", "vpclmulqdq")
_SPR = _ICX + ("avx512bf16", "avx512fp16")
_ZEN4 = _ICX + ("avx512bf16",)

# The 64-bit CPUs LLVM knows, each with the extensions its code may use (those
# the loader can check; see jx.runtime.host.X86_FLAGS). Names not listed here
# are refused: they are 32-bit CPUs or unknown to LLVM.
CPUS = {
    "x86-64": (), "generic": (), "k8": (), "athlon64": (), "athlon-fx": (), "opteron": (),
    "nocona": ("sse3",), "k8-sse3": ("sse3",), "athlon64-sse3": ("sse3",),
    "opteron-sse3": ("sse3",), "amdfam10": ("sse3", "popcnt", "lzcnt"),
    "barcelona": ("sse3", "popcnt", "lzcnt"), "core2": ("sse3", "ssse3"),
    "penryn": ("sse3", "ssse3", "sse4.1"), "bonnell": ("sse3", "ssse3", "movbe"),
    "atom": ("sse3", "ssse3", "movbe"), "btver1": ("sse3", "ssse3", "popcnt", "lzcnt"),
    "x86-64-v2": _V2, "nehalem": _V2, "corei7": _V2, "westmere": _V2,
    "silvermont": _V2 + ("movbe",), "slm": _V2 + ("movbe",), "goldmont": _V2 + ("movbe",),
    "goldmont-plus": _V2 + ("movbe",), "tremont": _V2 + ("movbe",),
    "sandybridge": _V2 + ("avx",), "corei7-avx": _V2 + ("avx",),
    "ivybridge": _V2 + ("avx", "f16c"), "core-avx-i": _V2 + ("avx", "f16c"),
    "btver2": _V2 + ("avx", "f16c", "bmi", "lzcnt", "movbe"),
    "bdver1": _V2 + ("avx", "fma4", "xop", "lzcnt"),
    "bdver2": _V2 + ("avx", "fma", "fma4", "xop", "f16c", "bmi", "lzcnt"),
    "bdver3": _V2 + ("avx", "fma", "fma4", "xop", "f16c", "bmi", "lzcnt"),
    "bdver4": _V3 + ("fma4", "xop"),
    "x86-64-v3": _V3, "haswell": _V3, "core-avx2": _V3, "broadwell": _V3, "skylake": _V3,
    "alderlake": _V3, "raptorlake": _V3, "meteorlake": _V3, "gracemont": _V3,
    "arrowlake": _V3, "arrowlake-s": _V3, "lunarlake": _V3, "pantherlake": _V3,
    "sierraforest": _V3, "grandridge": _V3, "clearwaterforest": _V3,
    "znver1": _V3, "znver2": _V3, "znver3": _V3,
    "x86-64-v4": _V4, "skylake-avx512": _V4, "skx": _V4, "cascadelake": _V4 + ("avx512vnni",),
    "cooperlake": _V4 + ("avx512vnni", "avx512bf16"),
    "cannonlake": _V4 + ("avx512vbmi", "avx512ifma"),
    "knl": _V3 + ("avx512f", "avx512cd"), "knm": _V3 + ("avx512f", "avx512cd",
                                                         "avx512vpopcntdq"),
    "icelake-client": _ICX, "icelake-server": _ICX, "tigerlake": _ICX, "rocketlake": _ICX,
    "znver4": _ZEN4, "znver5": _ZEN4,
    "sapphirerapids": _SPR, "emeraldrapids": _SPR, "graniterapids": _SPR,
    "graniterapids-d": _SPR, "diamondrapids": _SPR,
}


class UnknownCpuError(JxError, ValueError):
    """A CPU name LLVM cannot build 64-bit x86 code for."""


@functools.lru_cache(maxsize=None)
def _llvm():
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


# LLVM's view of this host (CPU name, triple, exact feature string) is kept in the
# cache under a stamp of what determines it (the CPU's identity and flags as the
# kernel reports them, the machine, llvmlite's version): a process that only loads
# code it compiled before then never loads LLVM (~20 ms of a first call).
HOST_FILE = "host-llvm.json"
_STAMP_KEYS = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags")


def _host_stamp() -> str | None:
    """A digest of /proc/cpuinfo's identity and flags of the first CPU, the machine
    and llvmlite's version; None where there is no /proc/cpuinfo to read."""
    import hashlib
    import platform
    fields = {k: v for k, v in host.cpu_fields().items() if k in _STAMP_KEYS}
    if "flags" not in fields:
        return None
    import llvmlite           # (the package's version only: not its LLVM library)
    text = repr((sorted(fields.items()), platform.machine(), llvmlite.__version__))
    return hashlib.sha256(text.encode()).hexdigest()


@functools.lru_cache(maxsize=None)
def _host() -> dict:
    """{"cpu", "triple", "features"} as LLVM reports them for this host, from the
    record when its stamp matches, else from LLVM (and recorded)."""
    from jx.runtime.store import read_record, save_record
    stamp = _host_stamp()
    rec = read_record(HOST_FILE, stamp) if stamp else None
    if isinstance(rec, dict) and all(isinstance(rec.get(k), str)
                                     for k in ("cpu", "triple", "features")):
        return rec
    llvm = _llvm()
    rec = {"cpu": llvm.get_host_cpu_name(), "triple": llvm.get_process_triple(),
           "features": llvm.get_host_cpu_features().flatten()}
    if stamp:
        try:
            save_record(HOST_FILE, stamp, rec)
        except OSError:
            pass              # a read-only cache only costs speed
    return rec


def host_cpu() -> str:
    return _host()["cpu"]


def host_triple() -> str:
    return _host()["triple"]


def host_feature_string() -> str:
    """LLVM's feature string of this host ("+avx2,-avx512f,...")."""
    return _host()["features"]


@functools.lru_cache(maxsize=None)
def host_features() -> frozenset:
    """LLVM's names of the extensions this CPU has (and the OS enables)."""
    return frozenset(f[1:] for f in _host()["features"].split(",") if f.startswith("+"))


def check_cpu(name: str, where: str = "--cpu") -> str:
    """`name` if it is the host's or a 64-bit CPU in CPUS; else UnknownCpuError
    listing the valid names (LLVM would print a warning and abort the process)."""
    if name in ("native", host_cpu()) or name in CPUS:
        return host_cpu() if name == "native" else name
    known = ", ".join(sorted(CPUS))
    if _llvm_accepts(name):
        # an alias (skylake_avx512) or a CPU newer than this table: its code may use
        # extensions jx cannot name, so the manifest could not list them and the
        # loader would run it anywhere (an illegal instruction, not an error)
        raise UnknownCpuError(
            f"{where} {name!r} is a CPU LLVM knows but jx does not: it cannot tell which "
            "instruction-set extensions its code may use, so the loader could not refuse "
            "the code on a CPU without them. Use 'native', a generic level (x86-64, "
            f"x86-64-v2, x86-64-v3, x86-64-v4) or one of: {known}")
    raise UnknownCpuError(
        f"{where} {name!r} is not a 64-bit x86 CPU this LLVM knows. Use 'native' (this "
        f"host, {host_cpu()}), a generic level (x86-64, x86-64-v2, x86-64-v3, x86-64-v4) "
        f"or one of: {known}")


@functools.lru_cache(maxsize=None)
def _llvm_accepts(name: str) -> bool:
    """Ask LLVM in a child process: an unknown name is a warning on stderr there and
    a fatal error at the first object emitted."""
    code = ("import llvmlite.binding as l; l.initialize_native_target(); "
            "l.initialize_native_asmprinter(); t = l.Target.from_triple(l.get_process_triple()); "
            f"tm = t.create_target_machine(cpu={name!r}); "
            "m = l.parse_assembly('define void @f() { ret void }'); tm.emit_object(m)")
    import subprocess            # (not on a cache hit's path: ~3 ms)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return proc.returncode == 0 and "not a recognized processor" not in proc.stderr


def of_module(module) -> str:
    """The CPU an llvmlite module is being built for (ModuleBuilder records it)."""
    return getattr(module, "jx_cpu", None) or host_cpu()


def jit_cpu() -> str:
    """The CPU jx.jit compiles for: JX_CPU (as `jx compile --cpu`), else the host."""
    name = os.environ.get("JX_CPU")
    if not name:
        return host_cpu()
    cpu = check_cpu(name, "JX_CPU=")
    why = runnable_here(cpu)
    if why:     # jx.jit runs what it compiles here: an illegal instruction otherwise
        raise UnknownCpuError(f"JX_CPU={name}: jx.jit runs its code on this host, and {why}; "
                              f"use a CPU this host can run (its own is {host_cpu()}), or "
                              f"build an artifact with `jx compile --cpu {name}` instead")
    return cpu


def features(cpu: str) -> frozenset:
    """The extensions code built for `cpu` may use (LLVM names)."""
    if cpu == host_cpu():
        return host_features()
    return frozenset(CPUS.get(cpu, ()))


def required_features(cpu: str) -> list:
    """The extensions the loader must find on the running CPU, by LLVM name."""
    return sorted(f for f in features(cpu) if f in host.X86_FLAGS)


def runnable_here(cpu: str) -> str | None:
    """None if this host can run code built for `cpu`, else why not."""
    if cpu == host_cpu():
        return None
    lacking = host.missing(required_features(cpu))
    return f"this CPU lacks {', '.join(lacking)}" if lacking else None


def vector_bytes(cpu: str) -> int:
    """The widest vector register code for `cpu` has: 64 (AVX-512), 32 (AVX), 16."""
    return host.vector_bytes(features(cpu))


# The host's caches, as host.py reads them (names here so that a test can play
# another host's caches for everything code generation derives from them).
l1_geometry = host.l1_geometry
cache_sizes = host.cache_sizes


def describe() -> dict:
    """What code generation derives from this host, for `jx bench --machine`."""
    c = cache_sizes()
    kib = lambda n: f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"  # noqa: E731
    return {"LLVM CPU": host_cpu(), "vector registers": f"{vector_bytes(host_cpu()) * 8}-bit",
            "caches per core": f"L1d {kib(c[1])}, L2 {kib(c[2])}, L3 share {kib(c[3])}"}

