"""Constants the CPU backend measures on its host instead of assuming them.

Each entry of DEFAULTS is a choice whose best value depends on the machine: how
much work pays for waking the thread pool, how many vector iterations a
transcendental chain should interleave, which vector width the loop vectoriser
should prefer. A host measures them once, at its first compile (jx/autotune.py
builds the probes with jx.jit, so the measuring lives above the code generator
that reads the values here), and caches them in <cache dir>/tuning.json beside
the machine limits, keyed by fingerprint(): another CPU, cache, thread count or
jx version measures again. `jx bench --machine` shows them; `jx bench --machine
--remeasure` measures them again. JX_TUNE=off keeps the defaults (the test
suite does, so its code does not depend on one run's timings).

The values shape the IR (parallel regions, loop metadata) or the LLVM feature
string, both part of the object cache's key, so a new measurement can never
reuse code built under an old one.
"""
from __future__ import annotations

import contextlib
import os
import threading

from jx.errors import JxError
from jx.runtime.host import model_name
from jx.runtime.store import read_record, record_path, save_record
from jx.version import __version__

from . import parallel, target

FILE = "tuning.json"      # in jx's cache folder, beside the machine limits
VERSION = 1               # bump when a probe changes meaning: cached records re-measure

DEFAULTS = {
    # element-operations below which a loop kernel runs on one thread
    "parallel_min_work": 1 << 17,
    # multiply-adds per thread below which a product uses fewer threads
    "gemm_min_work": 1 << 22,
    # vector iterations interleaved in loops with chained transcendentals (0: LLVM's choice)
    "interleave": 4,
    # the loop vectoriser's preferred width on AVX-512 hosts (256 or 512 bits)
    "vector_bits": 512,
}

OVERRIDE: dict = {}         # name -> value: for probes (see using) and tests
_lock = threading.RLock()
_state = {"record": None, "read": False, "measuring": False}


def _renew_in_child() -> None:
    """A child forked while another thread measured has the lock held by a thread
    it does not have: a fresh lock, and the measurement is the parent's."""
    global _lock
    _lock = threading.RLock()
    _state["measuring"] = False


os.register_at_fork(after_in_child=_renew_in_child)


def value(name: str):
    """The value code generation uses: an override (see using), the host's measured
    value, or the default (always, under JX_TUNE=off, even where a record exists)."""
    if name in OVERRIDE:
        return OVERRIDE[name]
    if mode() == "off":
        return DEFAULTS[name]
    rec = record()
    return (rec or {}).get("values", {}).get(name, DEFAULTS[name])


@contextlib.contextmanager
def using(**values):
    """Code built inside uses these values (probes and tests)."""
    unknown = set(values) - set(DEFAULTS)
    if unknown:
        raise KeyError(f"no tuned constant named {', '.join(sorted(unknown))}")
    with _lock:
        saved = dict(OVERRIDE)
        OVERRIDE.update(values)
    try:
        yield
    finally:
        with _lock:
            OVERRIDE.clear()
            OVERRIDE.update(saved)


def llvm_features(cpu: str) -> str:
    """The feature string for LLVM's target machine: the host's exact set for the
    host (LLVM's CPU name alone can include extensions a VM hides), the CPU's
    defaults otherwise. On AVX-512 CPUs the loop vectoriser's preferred width is
    set explicitly (Intel's tunings default to 256 bits, against clock drops on old
    parts): for the host as measured there (tuning "vector_bits"), else 512."""
    feats = target.host_feature_string() if cpu == target.host_cpu() else ""
    if "avx512f" in target.features(cpu):
        bits = value("vector_bits") if cpu == target.host_cpu() else 512
        feats = (feats + "," if feats else "") + ("+" if bits == 256 else "-") + \
            "prefer-256-bit"
    return feats


def mode() -> str:
    """JX_TUNE: 'auto' (measure at the first compile; the default) or 'off'."""
    m = os.environ.get("JX_TUNE", "auto").strip().lower() or "auto"
    if m not in ("auto", "off"):
        raise JxError(f"JX_TUNE={m!r} is not a tuning mode; use 'auto' (measure the "
                         "host once, at the first compile) or 'off' (built-in defaults)")
    return m


def fingerprint() -> str:
    """What the measurements depend on: the CPU, its caches, the threads the
    runtime uses, and the code that is measured."""
    caches = target.cache_sizes()
    return "|".join([
        model_name(), target.host_cpu(), ",".join(sorted(target.host_features())),
        ",".join(f"L{k}={v}" for k, v in sorted(caches.items())),
        "x".join(map(str, target.l1_geometry())),
        f"threads={parallel.num_threads() or 1}", f"jx {__version__}", f"v{VERSION}"])


def path() -> str:
    return record_path(FILE)


def record() -> dict | None:
    """This host's measured record ({'values', 'measured', 'seconds'}), or None."""
    with _lock:
        if not _state["read"]:
            rec = read_record(FILE, fingerprint())
            ok = isinstance(rec, dict) and isinstance(rec.get("values"), dict) and \
                set(rec["values"]) <= set(DEFAULTS)
            _state["record"], _state["read"] = (rec if ok else None), True
        return _state["record"]


def save(rec: dict) -> None:
    """Store this host's record (atomically: concurrent first compiles may race)."""
    with _lock:
        save_record(FILE, fingerprint(), rec)  # read-only: the values hold here
        _state["record"], _state["read"] = rec, True


def ensure(measure, force: bool = False) -> dict | None:
    """Measure the host with `measure()` unless it is measured already, tuning is
    off, or a measurement is under way (its probes compile too). Returns the record."""
    if mode() == "off" and not force:
        return None
    with _lock:
        if _state["measuring"] or (record() is not None and not force):
            return _state["record"]
        _state["measuring"] = True
        try:
            rec = measure()
        finally:
            _state["measuring"] = False
        save(rec)
        return rec


def forget() -> None:
    """Drop what this process read (tests that point JX_CACHE_DIR elsewhere)."""
    with _lock:
        _state["record"], _state["read"] = None, False


def describe() -> dict:
    """The values in use and where they came from, for `jx bench --machine`."""
    rec = record()
    src = "measured" if rec else ("defaults (JX_TUNE=off)" if mode() == "off"
                                  else "defaults (not measured yet)")
    vals = {name: value(name) for name in DEFAULTS}
    out = {"tuning": f"{src}; {path()}" if rec else src,
           "parallel loops from": f"{vals['parallel_min_work']} element-operations",
           "GEMM work per thread": f">= {vals['gemm_min_work']} multiply-adds",
           "transcendental interleave": str(vals["interleave"] or "LLVM's choice"),
           "AVX-512 loops prefer": f"{vals['vector_bits']}-bit vectors"}
    for probe, figure in (rec or {}).get("measured", {}).items():
        out[f"probe: {probe}"] = str(figure)
    return out
