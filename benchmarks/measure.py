"""Timing loops, bytes/flops of fused programs, and the engines-agree check."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

# --- timing -------------------------------------------------------------------

# A sample shorter than this is timed as a batch of calls (timer overhead and jitter
# would otherwise dominate a microsecond call); the batch's mean is one sample.
MIN_SAMPLE_S = 2e-4
MIN_REPS = 5          # samples wanted at least, unless one sample is very long
LONG_FACTOR = 5       # ... stop anyway once min_time * LONG_FACTOR has been spent
MAX_REPS = 100_000


@dataclass
class Timing:
    samples: list                 # seconds per call, one entry per sample
    batch: int = 1                # calls per sample

    @property
    def median(self) -> float:
        return float(np.median(self.samples))

    @property
    def min(self) -> float:
        return float(np.min(self.samples))

    @property
    def max(self) -> float:
        return float(np.max(self.samples))

    @property
    def quartiles(self) -> tuple:
        """(25th, 75th) percentile: their spread over the median is the noise a
        comparison between runs allows (benchmarks/compare.py)."""
        q1, q3 = np.percentile(self.samples, [25, 75])
        return float(q1), float(q3)

    @property
    def calls(self) -> int:
        return len(self.samples) * self.batch


def time_calls(call, min_time: float, on_sample=None, min_reps: int = MIN_REPS) -> Timing:
    """Time call() (already warmed up) for at least min_time seconds.

    At least min_reps samples are taken unless the samples alone take more than
    LONG_FACTOR * min_time (a 20 s matmul is timed once or twice, not five times).
    on_sample(fraction_done) lets a progress bar follow.
    """
    clock = time.perf_counter
    t0 = clock()
    call()
    first = clock() - t0
    batch = 1 if first >= MIN_SAMPLE_S else min(10_000, math.ceil(MIN_SAMPLE_S / max(first,
                                                                                   1e-9)))
    samples: list = [first] if batch == 1 else []
    spent = first
    while len(samples) < MAX_REPS:
        if spent >= min_time and (len(samples) >= min_reps or
                                  spent >= LONG_FACTOR * min_time):
            break
        t0 = clock()
        for _ in range(batch):
            call()
        dt = clock() - t0
        samples.append(dt / batch)
        spent += dt
        if on_sample is not None:
            on_sample(min(1.0, spent / max(min_time, 1e-9)))
    return Timing(samples, batch)


def first_call(call) -> tuple:
    """(seconds, result) of the first call: compilation included for compilers."""
    t0 = time.perf_counter()
    out = call()
    return time.perf_counter() - t0, out


# --- bytes and flops ----------------------------------------------------------

@dataclass
class ProgramCost:
    bytes: int = 0
    flops: int = 0
    notes: list = field(default_factory=list)

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0


def program_cost(program) -> ProgramCost:
    """Sum of kernel costs (passes/cost.py) over a fused Program.

    Control-flow kernels count their own operands and results plus their bodies:
    a scan's body `length` times, a cond's most expensive branch, a while loop's
    body once (its trip count is not known before running; noted).
    """
    from jx.passes.cost import kernel_cost
    total = ProgramCost()
    for k in program.kernels:
        c = kernel_cost(k)
        if not k.subprograms:
            total.bytes += c.bytes
            total.flops += c.flops
            continue
        io = c.bytes               # the root's own "flops" are not arithmetic: skip them
        params = k.root.params
        if k.root.prim.name == "scan":
            body = program_cost(k.subprograms["body"])
            trips = int(params.get("length", 1))
        elif k.root.prim.name == "while":
            body = ProgramCost()
            for sub in k.subprograms.values():
                body = _add(body, program_cost(sub))
            trips = 1
            total.notes.append("while loop counted for one iteration")
        else:                       # cond and anything else holding graphs: the worst branch
            branches = [program_cost(sp) for sub in k.subprograms.values()
                        for sp in (sub if isinstance(sub, tuple) else (sub,))]
            body = max(branches, key=lambda b: (b.flops, b.bytes))
            trips = 1
        total.bytes += io + trips * body.bytes
        total.flops += trips * body.flops
        total.notes.extend(body.notes)
    total.notes = list(dict.fromkeys(total.notes))
    return total


def _add(a: ProgramCost, b: ProgramCost) -> ProgramCost:
    return ProgramCost(a.bytes + b.bytes, a.flops + b.flops, a.notes + b.notes)


# --- agreement -----------------------------------------------------------------

# (rtol, atol relative to the reference's largest magnitude) per float width.
TOLERANCES = {2: (2e-2, 2e-3), 4: (2e-3, 2e-4), 8: (1e-9, 1e-10)}


@dataclass
class Mismatch:
    engine: str
    leaf: str
    detail: str

    def __str__(self) -> str:
        where = f" at output {self.leaf}" if self.leaf else ""
        return f"{self.engine}{where}: {self.detail}"


def leaves_with_paths(tree, prefix: str = "") -> list:
    """[(path, numpy array)] of a result pytree (dicts, lists, tuples, arrays)."""
    if isinstance(tree, dict):
        out = []
        for k in sorted(tree):
            out += leaves_with_paths(tree[k], f"{prefix}[{k!r}]")
        return out
    if isinstance(tree, (list, tuple)):
        out = []
        for i, v in enumerate(tree):
            out += leaves_with_paths(v, f"{prefix}[{i}]")
        return out
    return [(prefix, np.asarray(tree))]


def compare(engine: str, got, ref, tolerance: tuple | None = None) -> list:
    """Mismatches of engine's result against the reference result (empty: they agree)."""
    a, b = leaves_with_paths(got), leaves_with_paths(ref)
    if [p for p, _ in a] != [p for p, _ in b]:
        return [Mismatch(engine, "", f"result structure {[p for p, _ in a]} differs from "
                                     f"the reference's {[p for p, _ in b]}")]
    problems = []
    for (path, x), (_, r) in zip(a, b):
        if x.shape != r.shape:
            problems.append(Mismatch(engine, path, f"shape {x.shape} != {r.shape}"))
            continue
        if r.dtype.kind == "c" or x.dtype.kind == "c":     # both components compared
            x, r = (np.stack([np.real(v), np.imag(v)], -1) for v in (x, r))
        if r.dtype.kind in "fc":
            rtol, atol = tolerance or TOLERANCES.get(r.dtype.itemsize, TOLERANCES[4])
            x64, r64 = x.astype(np.float64), r.astype(np.float64)
            nan_x, nan_r = np.isnan(x64), np.isnan(r64)
            if (nan_x != nan_r).any():
                i = _first(nan_x != nan_r)
                problems.append(Mismatch(engine, path, f"NaN mismatch at index {i}: "
                                         f"{x64[i]:.6g} vs reference {r64[i]:.6g}"))
                continue
            finite = np.isfinite(r64) & np.isfinite(x64)
            inf_bad = ~finite & ~nan_r & (x64 != r64)
            scale = float(np.max(np.abs(r64[finite]), initial=0.0))
            err = np.where(finite, np.abs(x64 - r64), 0.0)
            bad = (err > rtol * np.abs(r64) + atol * scale) | inf_bad
            if bad.any():
                i = _first(bad)
                problems.append(Mismatch(
                    engine, path, f"{int(bad.sum())} of {bad.size} elements differ; first at "
                    f"index {i}: {x64[i]:.6g} vs reference {r64[i]:.6g}; max abs error "
                    f"{float(err.max()):.3g} (reference max |x| {scale:.3g}, rtol {rtol:g})"))
        elif not np.array_equal(x, r):
            bad = np.asarray(x != r)
            i = _first(bad)
            problems.append(Mismatch(engine, path, f"{int(np.sum(bad))} of {bad.size} "
                                     f"elements differ; first at index {i}: "
                                     f"{x[i].item()!r} vs reference {r[i].item()!r}"))
    return problems


def _first(mask: np.ndarray) -> tuple:
    return tuple(int(j) for j in np.argwhere(mask)[0]) if mask.ndim else ()


def perturb(tree):
    """The test hook's wrong answer: every output leaf visibly changed."""
    if isinstance(tree, dict):
        return {k: perturb(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(perturb(v) for v in tree)
    x = np.array(tree)
    if x.dtype == np.bool_:
        return ~x
    if x.dtype.kind in "fc":
        return x + np.asarray(1.0 + 0.1 * np.max(np.abs(x), initial=0.0), x.dtype)
    return x + np.ones((), x.dtype)
