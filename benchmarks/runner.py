"""Bench one entry on every engine: first calls, the engines-agree check, timing,
and the derived figures (GB/s, GFLOP/s, fractions of the machine's limits, speedups).

Every engine is credited with the bytes and flops of jx's fused program (the
minimum traffic and the arithmetic of the computation), so their GB/s and
GFLOP/s compare like with like.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field

import jx

from . import busy, engines, inputs, machine as machine_mod, measure


@dataclass
class BenchItem:
    name: str                          # shown in the table: "mlp.py:predict", a case name
    entry: object = None               # jx Entry of the model (None: artifact alone)
    artifact_entry: object = None      # runtime CompiledEntry (None: compile with jx.jit)
    jax_fn: object = None              # the entry's function loaded with JAX names
    jax_note: str | None = None        # why there is no JAX engine
    scales: dict = field(default_factory=dict)
    tolerance: tuple | None = None     # (rtol, atol relative to max |reference|)
    size: str = ""                     # short description of the problem size


# --busy: samples per engine and phase, quiet and busy alike (busy times spread
# widely, so their median needs more of them than a quiet run's).
BUSY_MIN_REPS = 3 * measure.MIN_REPS


@dataclass
class Options:
    min_time: float = 1.0
    min_reps: int = measure.MIN_REPS
    engines: tuple = ("jx", "numpy", "jax")
    debug: bool = False
    busy: int = 0         # > 0: time every engine again with this many cores kept busy


class Disagreement(Exception):
    pass


def _engines(item: BenchItem, opts: Options) -> tuple:
    """(engines, inputs, notes)."""
    notes = []
    if item.entry is not None:
        args = inputs.entry_inputs(item.entry, scales=item.scales)
        static = inputs.static_argnums(item.entry)
    else:
        args, static = list(inputs.manifest_inputs(item.artifact_entry.spec)), ()
    chosen = []
    if item.artifact_entry is not None:
        traced = tuple(a for i, a in enumerate(args) if i not in static)
        chosen.append(engines.artifact_engine(item.artifact_entry, traced))
    else:
        chosen.append(engines.jit_engine(item.entry, args, static))
    if "numpy" in opts.engines and item.entry is not None:
        chosen.append(engines.numpy_engine(item.entry, args))
    elif item.entry is None:
        notes.append("no model source found: NumPy and JAX engines and the agreement check "
                     "skipped (pass --model MODEL.py)")
    if "jax" in opts.engines:
        if item.jax_fn is not None:
            chosen.append(engines.jax_engine(item.jax_fn, args, static))
        elif item.jax_note and item.entry is not None:
            notes.append(item.jax_note)
    return chosen, args, static, notes


def bench_item(item: BenchItem, opts: Options, machine: dict, progress=None) -> dict:
    """Measure one entry; the result dict is what --json writes for it."""
    res = {"name": item.name, "size": item.size, "engines": {}, "notes": [],
           "agree": None, "mismatches": []}
    step = progress.step if progress else (lambda desc: (lambda frac: None))
    on = step(f"{item.name}: first calls")
    chosen, args, static, notes = _engines(item, opts)
    res["notes"] += notes
    outputs = {}
    for eng in chosen:
        try:
            dt, raw = measure.first_call(eng.call)
            outputs[eng.name] = eng.result(raw)
        except Exception as e:  # noqa: BLE001 - reported per engine, the others go on
            if opts.debug:
                raise
            res["engines"][eng.name] = {"label": eng.label, "error": _describe(e)}
            continue
        if eng.after_first:
            eng.after_first(eng)
        res["engines"][eng.name] = {"label": eng.label, "first_call_s": dt}
        if "object_cache_hit" in eng.info:
            res["engines"][eng.name]["object_cache_hit"] = eng.info["object_cache_hit"]
    on(1.0)
    _costs(item, chosen, args, static, res)
    _agreement(item, outputs, res)
    if res["agree"] is False:
        return res
    for eng in chosen:
        rec = res["engines"][eng.name]
        if "error" in rec:
            continue
        on = step(f"{item.name}: {eng.label}")
        t = measure.time_calls(eng.call, opts.min_time, on, min_reps=opts.min_reps)
        q1, q3 = t.quartiles
        rec.update(median_s=t.median, min_s=t.min, max_s=t.max, q1_s=q1, q3_s=q3,
                   calls=t.calls, samples=len(t.samples))
        on(1.0)
    if opts.busy:
        _time_busy(item, chosen, res, opts, step)
    _figures(res, machine)
    return res


def _time_busy(item, chosen, res: dict, opts: Options, step) -> None:
    """Time every engine again, same inputs, while opts.busy spinners run (--busy).

    The figure kept is the median: with a spinner on a core the scheduler slices
    time between it and the engine's threads, so call times spread widely (often
    two clusters: the spinner descheduled or not). The minimum would pick the
    lucky call that ran as on a quiet machine, hiding the slowdown being measured;
    the median is the typical call under contention."""
    timed = [e for e in chosen if "median_s" in res["engines"][e.name]]
    with busy.Spinners(opts.busy) as spin:
        for eng in timed:
            rec = res["engines"][eng.name]
            on = step(f"{item.name}: {eng.label}, {opts.busy} busy")
            t = measure.time_calls(eng.call, opts.min_time, on, min_reps=opts.min_reps)
            spin.check()          # a spinner that died would make the run a quiet one
            rec["busy"] = {"median_s": t.median, "min_s": t.min, "max_s": t.max,
                           "calls": t.calls, "samples": len(t.samples)}
            rec["busy_slowdown"] = t.median / rec["median_s"]
            on(1.0)


def _describe(e: Exception) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {msg}"[:300]


def _costs(item, chosen, args, static, res) -> None:
    program = next((e.info.get("program") for e in chosen if e.info.get("program")), None)
    if program is None and item.entry is not None:
        try:      # the artifact's engine has no program: lower the model's entry
            program = jx.jit(item.entry.fn, static_argnums=static).lower(*args)
        except Exception as e:  # noqa: BLE001 - costs are optional
            res["notes"].append(f"no byte/flop counts: {_describe(e)}")
    if program is None:
        res.update(bytes=None, flops=None, intensity=None)
        return
    cost = measure.program_cost(program)
    res.update(bytes=cost.bytes, flops=cost.flops, intensity=cost.intensity,
               kernels=len(program.kernels))
    res["notes"] += cost.notes
    bits = max((v.aval.dtype.itemsize * 8 for v in program.graph.inputs
                if v.aval.dtype.kind == "f"), default=32)
    res["float_bits"] = 64 if bits == 64 else 32


def _agreement(item, outputs: dict, res: dict) -> None:
    ref_name = "numpy" if "numpy" in outputs else None
    if ref_name is None or len(outputs) < 2:
        if len(outputs) == 1 and item.entry is not None:
            res["notes"].append("only one engine ran: no agreement check")
        if "jx" in outputs and "jax" in outputs:
            ref_name = "jax"
        else:
            return
    ref = outputs[ref_name]
    problems = []
    for name, out in outputs.items():
        if name != ref_name:
            problems += measure.compare(name, out, ref, item.tolerance)
    res["agree"] = not problems
    res["reference"] = ref_name
    res["mismatches"] = [str(p) for p in problems]


def _figures(res: dict, machine: dict) -> None:
    nbytes, flops = res.get("bytes"), res.get("flops")
    roof = machine_mod.bandwidth_roof(machine) if machine else None
    peak = machine_mod.peak_for(machine, res.get("float_bits", 32)) if machine else None
    medians = {n: r.get("median_s") for n, r in res["engines"].items()}
    for name, rec in res["engines"].items():
        t = rec.get("median_s")
        if not t:
            continue
        if nbytes is not None:
            rec["gb_s"] = nbytes / t / 1e9
            rec["gflop_s"] = flops / t / 1e9
            rec["bandwidth_fraction"] = rec["gb_s"] / roof if roof else None
            rec["peak_fraction"] = rec["gflop_s"] / peak if peak else None
        for other in ("numpy", "jax"):
            base = medians.get(other)
            rec[f"speedup_vs_{other}"] = base / t if base else None


def format_exception(e: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(e), e)).strip()


def run_all(items: list, opts: Options, machine: dict, show_progress: bool | None = None):
    """bench_item over items under one progress bar; the list of result dicts."""
    from .report import ProgressBar
    per_item = 1 + len(opts.engines) * (2 if opts.busy else 1)
    results = []
    with ProgressBar(per_item * len(items), enabled=show_progress) as bar:
        for item in items:
            done = bar.done
            results.append(bench_item(item, opts, machine, bar))
            bar.done = done + per_item              # skipped engines still count
    return results
