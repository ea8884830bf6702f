"""Linear algebra: jx's decompositions and solvers against NumPy/SciPy (LAPACK) and
JAX, in one run, with each case's achieved GFLOP/s set against the machine's peak.

    jx bench --suite linalg [--only NAME] [--min-time S] [--out DIR]

Each case is one operation at one size and dtype, written once against a namespace
of the library (`L.np` is jx.numpy, numpy or jax.numpy; `L.sl` the matching
scipy.linalg) and jitted for jx and JAX. Before anything is timed, jx's result is
checked against the NumPy/SciPy one (JAX's too, as a check of the check): plain
allclose, with Q and R, eigenvectors and singular vectors first brought to one
sign per column. A jx result that disagrees is reported as a MISMATCH instead of a
time; an operation whose primitive has no CPU kernel yet is reported as "no kernel".

The Gaussian-process step (linalg_programs/gp_regression.py) is a user's JAX
script, run as written on JAX and by corpus.py's import swap on jx; NumPy has no
gradient, so its NumPy column is empty and its value is checked against a NumPy
forward pass (the gradient against JAX's).

Flop counts are the textbook ones (FLOPS below), independent of the algorithm an
engine runs; GFLOP/s = flops / time, and "% peak" is of the FMA probe's peak for
the dtype (machine.limits: measured once, cached). A time is the fastest of ROUNDS
rounds in which the engines take turns: on a shared machine the minimum is the
figure least moved by the others' load (recorded in the report).
"""
from __future__ import annotations

import contextlib
import math
import os
import pathlib
import time
import types
from dataclasses import dataclass

import numpy as np

from . import machine, measure
from .corpus import _t, load, parse_args, publish

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = pathlib.Path(HERE) / "linalg_programs"

# (rtol, atol relative to the reference's largest magnitude) per dtype: LAPACK,
# XLA and jx each sum in their own order (blocked or not), so float32 results of
# n = 1024 factorisations differ in the fourth digit.
TOLERANCE = {"float32": (2e-3, 2e-3), "float64": (1e-7, 1e-8)}
# eigenvectors and singular vectors move by eps * |A| / gap: looser
VECTOR_TOLERANCE = {"float32": (1e-2, 1e-2), "float64": (1e-6, 1e-6)}

# operation -> the flop count's formula, as the report states it
FLOPS = {
    "cholesky": "n³/3",
    "triangular solve": "n²k (k right-hand sides)",
    "solve": "2n³/3 + 2n²k (LU, then two triangular solves with k right-hand sides)",
    "qr": "8n³/3 (geqrf 4n³/3 + orgqr 4n³/3, square, reduced)",
    "eigh": "9n³ (symmetric QR with vectors, Golub & Van Loan)",
    "svd": "21n³ (Golub-Reinsch with U, Σ, V: 4m²n + 8mn² + 9n³ at m = n, Golub & Van "
           "Loan)",
    "gp": "not counted (a whole program)",
}


@dataclass
class Case:
    name: str
    op: str                 # a key of FLOPS
    dtype: str
    size: str
    flops: float | None
    inputs: object          # rng, dtype -> tuple of NumPy arrays
    fn: object              # library namespace -> the function to time (unjitted)
    check: str = "plain"    # plain | qr | eigh | svd | gp
    baseline: str = "NumPy"


# -- inputs ------------------------------------------------------------------------

def _spd(rng, n: int, batch: tuple = ()) -> np.ndarray:
    """Well-conditioned symmetric positive definite: G Gᵀ / n + I."""
    g = rng.standard_normal((*batch, n, n))
    return g @ np.swapaxes(g, -1, -2) / n + np.eye(n)


def _shifted(rng, n: int, batch: tuple = ()) -> np.ndarray:
    """A general matrix with eigenvalues near 3: condition numbers below ~10 for
    every matrix of a large batch (plain Gaussian 4 x 4 ones reach 1e5)."""
    return rng.standard_normal((*batch, n, n)) / math.sqrt(n) + 3.0 * np.eye(n)


def _cast(dtype, *arrays) -> tuple:
    return tuple(np.ascontiguousarray(a, dtype=dtype) for a in arrays)


# -- the cases ---------------------------------------------------------------------

def _cases() -> list:
    out = []
    for dt in ("float32", "float64"):
        n, k = 1024, 1024
        out += [
            Case(f"cholesky {n}", "cholesky", dt, f"{n}x{n}", n**3 / 3,
                 lambda rng, dt, n=n: _cast(dt, _spd(rng, n)),
                 lambda L: L.np.linalg.cholesky),
            Case(f"triangular solve {n}, {k} rhs", "triangular solve", dt,
                 f"{n}x{n}, b {n}x{k}", n * n * k,
                 lambda rng, dt, n=n, k=k: _cast(dt, np.linalg.cholesky(_spd(rng, n)),
                                                 rng.standard_normal((n, k))),
                 lambda L: lambda a, b: L.sl.solve_triangular(a, b, lower=True),
                 baseline="SciPy"),
            Case(f"solve {n}, 1 rhs", "solve", dt, f"{n}x{n}, b {n}",
                 2 * n**3 / 3 + 2 * n * n,
                 lambda rng, dt, n=n: _cast(dt, rng.standard_normal((n, n)),
                                            rng.standard_normal(n)),
                 lambda L: L.np.linalg.solve),
            Case(f"solve {n}, {k} rhs", "solve", dt, f"{n}x{n}, b {n}x{k}",
                 2 * n**3 / 3 + 2 * n * n * k,
                 lambda rng, dt, n=n, k=k: _cast(dt, rng.standard_normal((n, n)),
                                                 rng.standard_normal((n, k))),
                 lambda L: L.np.linalg.solve),
            Case(f"qr {n}", "qr", dt, f"{n}x{n} reduced", 8 * n**3 / 3,
                 lambda rng, dt, n=n: _cast(dt, rng.standard_normal((n, n))),
                 lambda L: L.np.linalg.qr, check="qr"),
        ]
        m = 512
        out += [
            Case(f"eigh {m}", "eigh", dt, f"{m}x{m}", 9 * m**3,
                 lambda rng, dt, m=m: _cast(dt, _symmetric(rng, m)),
                 lambda L: L.np.linalg.eigh, check="eigh"),
            Case(f"svd {m}", "svd", dt, f"{m}x{m}", 21 * m**3,
                 lambda rng, dt, m=m: _cast(dt, rng.standard_normal((m, m))),
                 lambda L: lambda a: L.np.linalg.svd(a, full_matrices=False), check="svd"),
        ]
        for batch, n in ((10_000, 4), (1_000, 32)):
            out += [
                Case(f"batched cholesky {batch} x {n}x{n}", "cholesky", dt,
                     f"{batch} x {n}x{n}", batch * n**3 / 3,
                     lambda rng, dt, n=n, batch=batch: _cast(dt, _spd(rng, n, (batch,))),
                     lambda L: L.np.linalg.cholesky),
                Case(f"batched solve {batch} x {n}x{n}", "solve", dt,
                     f"{batch} x {n}x{n}, b {n}x1", batch * (2 * n**3 / 3 + 2 * n * n),
                     lambda rng, dt, n=n, batch=batch: _cast(
                         dt, _shifted(rng, n, (batch,)), rng.standard_normal((batch, n, 1))),
                     lambda L: L.np.linalg.solve),
            ]
        out.append(Case("GP regression nll + grad", "gp", dt, "X 1024x8, RBF", None,
                        None, None, check="gp", baseline="NumPy"))
    return out


def _symmetric(rng, n: int) -> np.ndarray:
    g = rng.standard_normal((n, n))
    return (g + g.T) / 2


# -- the engines ---------------------------------------------------------------------

def _namespace(engine: str):
    """jit, np and sl (scipy.linalg) of an engine."""
    if engine == "jx":
        import jx
        import jx.numpy
        import jx.scipy.linalg
        return types.SimpleNamespace(jit=jx.jit, np=jx.numpy, sl=jx.scipy.linalg)
    if engine == "JAX":
        import jax
        import jax.numpy
        import jax.scipy.linalg
        return types.SimpleNamespace(jit=jax.jit, np=jax.numpy, sl=jax.scipy.linalg)
    import scipy.linalg
    return types.SimpleNamespace(jit=lambda f: f, np=np, sl=scipy.linalg)


@contextlib.contextmanager
def _x64(on: bool, with_jax: bool):
    """64-bit mode of jx and JAX on for a float64 case, off for a float32 one."""
    import jx
    with contextlib.ExitStack() as stack:
        stack.enter_context(jx.enable_x64(on))
        if with_jax:
            import jax
            stack.enter_context(jax.enable_x64(on))
        yield


def _leaves(x) -> list:
    if isinstance(x, (list, tuple)):
        return [np.asarray(v) for v in x]
    return [np.asarray(x)]


def _block(engine: str):
    if engine == "JAX":
        import jax
        return jax.block_until_ready
    return lambda x: x


def _steps(case: Case, engines: list, rng) -> dict:
    """{engine: (callable, arguments)}: the case's function jitted for each engine."""
    if case.check == "gp":
        out = {}
        for e in engines:
            if e == "NumPy":
                continue
            module = load("gp_regression", e == "jx", PROGRAMS)
            step, args = module.bench(case.dtype)
            if e == "JAX":
                import jax
                args = jax.device_put(args)
            out[e] = (step, args)
        return out
    args = case.inputs(rng, case.dtype)
    out = {}
    for e in engines:
        L = _namespace(e)
        call_args = args
        if e == "JAX":
            import jax
            call_args = tuple(jax.device_put(a) for a in args)
        out[e] = (L.jit(case.fn(L)), call_args)
    return out


# -- agreement -------------------------------------------------------------------------

def _column_signs(v: np.ndarray) -> np.ndarray:
    """+1 or -1 per column of v: the sign of its largest-magnitude entry."""
    i = np.argmax(np.abs(v), axis=-2)
    pick = np.take_along_axis(v, i[..., None, :], axis=-2)
    return np.where(pick < 0, -1, 1).astype(v.dtype)


def canonical(kind: str, leaves: list) -> list:
    """Results brought to one form where decompositions are unique only up to signs:
    R's diagonal positive, each eigenvector's largest entry positive, u_i and v_i
    flipped together so u_i's largest entry is positive."""
    if kind == "qr":
        q, r = leaves
        s = np.where(np.diagonal(r, axis1=-2, axis2=-1) < 0, -1, 1).astype(q.dtype)
        return [q * s[..., None, :], r * s[..., :, None]]
    if kind == "eigh":
        w, v = leaves
        return [w, v * _column_signs(v)]
    if kind == "svd":
        u, s, vh = leaves
        flip = _column_signs(u)
        return [u * flip, s, vh * np.swapaxes(flip, -1, -2)]
    return leaves


def gp_forward(args) -> np.ndarray:
    """The GP's negative log marginal likelihood in NumPy/SciPy (the value only), in
    the inputs' dtype: what jx's value is checked against when JAX is not here."""
    import scipy.linalg
    params, x, y = args
    ls, sf2, sn2 = np.exp(params)
    xs = x / ls
    sq = np.sum(xs * xs, axis=-1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (xs @ xs.T)
    k = sf2 * np.exp(-0.5 * np.maximum(d2, 0.0)) + sn2 * np.eye(len(x), dtype=x.dtype)
    chol = np.linalg.cholesky(k)
    alpha = scipy.linalg.cho_solve((chol, True), y)
    n = len(x)
    return np.asarray(0.5 * y @ alpha + np.sum(np.log(np.diagonal(chol)))
                      + 0.5 * n * math.log(2.0 * math.pi), x.dtype)


def _problems(case: Case, engine: str, got: list, ref: list, ref_name: str) -> list:
    if case.check == "gp" and ref_name == "NumPy":
        got = got[:1]                                 # the value; NumPy has no gradient
    tol = TOLERANCE[case.dtype]
    if case.check in ("eigh", "svd"):
        tol = VECTOR_TOLERANCE[case.dtype]
    got, ref = canonical(case.check, got), canonical(case.check, ref)
    return [f"{p} (against {ref_name})" for p in measure.compare(engine, got, ref, tol)]


def _status(e: Exception) -> str:
    from jx.errors import MissingRuleError
    if isinstance(e, MissingRuleError) and "no lowering" in str(e):
        return "no kernel"
    return f"error: {type(e).__name__}: {str(e).splitlines()[0][:200]}"


ROUNDS = 5


def _times(calls: dict, min_time: float) -> dict:
    """{engine: seconds per call}: rounds of at least min_time / ROUNDS per engine, the
    engines taking turns within each round (a shared machine's load falls on all
    alike), the fastest round kept (symbolic.py's way)."""
    best = {e: float("inf") for e in calls}
    for _ in range(ROUNDS):
        for e, call in calls.items():
            n, t0 = 0, time.perf_counter()
            while True:
                call()
                n += 1
                dt = time.perf_counter() - t0
                if dt >= min_time / ROUNDS:
                    break
            best[e] = min(best[e], dt / n)
    return best


def bench_case(case: Case, seed: int, min_time: float, with_jax: bool, limits: dict) -> dict:
    engines = ["jx", "NumPy"] + (["JAX"] if with_jax else [])
    res = {"case": case.name, "op": case.op, "dtype": case.dtype, "size": case.size,
           "flops": case.flops, "baseline": case.baseline, "status": {}, "first_s": {},
           "seconds": {}, "gflop_s": {}, "peak_fraction": {}, "speedup": {},
           "mismatches": [], "notes": []}
    peak = machine.peak_for(limits, 64 if case.dtype == "float64" else 32)
    with _x64(case.dtype == "float64", with_jax):
        steps = _steps(case, engines, np.random.default_rng(seed))
        outs = {}
        for e, (step, args) in steps.items():
            block = _block(e)
            try:
                res["first_s"][e], out = measure.first_call(lambda: block(step(*args)))
            except Exception as ex:  # noqa: BLE001 - reported in the row, the run goes on
                res["status"][e] = _status(ex)
                continue
            outs[e] = _leaves(out)
            res["status"][e] = "ok"
        ref_name = "JAX" if case.check == "gp" and "JAX" in outs else "NumPy"
        ref = outs.get(ref_name)
        if case.check == "gp" and ref_name == "NumPy":
            ref = [gp_forward(steps["jx"][1])]
        if ref is not None:
            for e in outs:
                if e == ref_name:
                    continue
                problems = _problems(case, e, outs[e], ref, ref_name)
                if e == "jx" and problems:
                    res["status"]["jx"] = "MISMATCH"
                    res["mismatches"] += problems
                elif problems:           # a baseline against the other: the check's check
                    res["notes"] += problems
        timed = {e: (lambda step=step, args=args, block=_block(e): block(step(*args)))
                 for e, (step, args) in steps.items() if res["status"].get(e) == "ok"}
        for e, t in _times(timed, min_time).items():
            res["seconds"][e] = t
            if case.flops:
                res["gflop_s"][e] = case.flops / t / 1e9
                res["peak_fraction"][e] = case.flops / t / 1e9 / peak
    jx_t = res["seconds"].get("jx")
    for e in ("NumPy", "JAX"):
        if jx_t and e in res["seconds"]:
            res["speedup"][e] = res["seconds"][e] / jx_t
    return res


# -- the report --------------------------------------------------------------------------

def _jx_cell(r: dict) -> str:
    status = r["status"].get("jx", "-")
    if status == "ok":
        return _t(r["seconds"]["jx"])
    if status == "MISMATCH":
        return "**MISMATCH**"
    return status if status == "no kernel" else "**error**"


def _rate(r: dict, e: str) -> str:
    g = r["gflop_s"].get(e)
    if g is None:
        return "-"
    return f"{g:.3g}" + (f" ({100 * r['peak_fraction'][e]:.2g}%)" if e == "jx" else "")


def _x(r: dict, e: str) -> str:
    s = r["speedup"].get(e)
    return f"{s:.2f}x" if s else "-"


def report(results: list, limits: dict, command: str, with_jax: bool,
           load: tuple = ()) -> str:
    """The markdown report: one row per case; `load` the 1-minute load averages at the
    start and end of the run."""
    jax_cols = with_jax
    head = ["case", "dtype", "jx", "NumPy/SciPy"] + (["JAX"] if jax_cols else []) + \
        ["vs NumPy/SciPy"] + (["vs JAX"] if jax_cols else []) + \
        ["jx GFLOP/s (% peak)", "NumPy/SciPy GFLOP/s"] + \
        (["JAX GFLOP/s"] if jax_cols else []) + ["jx first call"] + \
        (["JAX first call"] if jax_cols else [])
    lines = ["# Linear algebra: jx vs NumPy/SciPy (LAPACK) and JAX", "",
             f"Command: `{command}`", "",
             f"CPU: {limits.get('cpu', '?')}, {limits.get('cores', '?')} cores "
             f"(every engine uses all of them); BLAS: {limits.get('blas', '?')}; peaks: f32 "
             f"{machine.peak_for(limits, 32):.4g} GFLOP/s, f64 "
             f"{machine.peak_for(limits, 64):.4g} GFLOP/s (FMA probe); NumPy's own GEMM "
             f"reaches f32 {limits.get('gemm_f32_gflop_s', '?')}, f64 "
             f"{limits.get('gemm_f64_gflop_s', '?')} GFLOP/s." +
             (f" Load average at the start and end of the run: {load[0]:.2f}, "
              f"{load[1]:.2f}." if load else ""), "",
             f"Time per call (jitted for jx and JAX): the fastest of {ROUNDS} rounds, the "
             "engines taking turns in each; speedups are baseline time / "
             "jx time (above 1: jx faster). The baseline is NumPy (np.linalg) but SciPy "
             "for the triangular solve (scipy.linalg.solve_triangular); the GP step has no "
             "NumPy baseline (no gradient), its value is checked against NumPy's and its "
             "gradient against JAX's." + ("" if jax_cols else " JAX is not installed: "
                                           "no JAX columns."), "",
             "| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    lines += result_rows(results, "dtype", jax_cols, _jx_cell, _x, _rate)
    lines += ["", "Flop counts (the standard ones, whatever algorithm an engine runs):", ""]
    lines += [f"- {op}: {formula}" for op, formula in FLOPS.items()]
    bad = [r for r in results if r["status"].get("jx") not in ("ok", "no kernel")]
    missing = [r["case"] + f" ({r['dtype']})" for r in results
               if r["status"].get("jx") == "no kernel"]
    if missing:
        lines += ["", "No CPU kernel in jx yet (no jx time): " + ", ".join(missing) + "."]
    if bad:
        lines += ["", "## jx results that FAILED", ""]
        for r in bad:
            lines.append(f"- **{r['case']} ({r['dtype']})**: {r['status']['jx']}")
            lines += [f"  - {p}" for p in r["mismatches"]]
    notes = [(r, n) for r in results for n in r["notes"]] + \
        [(r, f"{e}: {s}") for r in results for e, s in r["status"].items()
         if e != "jx" and s != "ok"]
    if notes:
        lines += ["", "Baselines disagreeing with each other or failing (not jx):", ""]
        lines += [f"- {r['case']} ({r['dtype']}): {n}" for r, n in notes]
    return "\n".join(lines) + "\n"


def geomean(values: list) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv=None) -> int:
    args, with_jax = parse_args(argv, "linalg", "results-linalg.md")
    limits = machine.limits()
    t0, load = time.perf_counter(), [os.getloadavg()[0]]
    results = []
    for seed, case in enumerate(_cases()):
        label = f"{case.name} {case.dtype}"
        if args.only and not any(o in label for o in args.only):
            continue
        r = bench_case(case, seed, args.min_time, with_jax, limits)
        results.append(r)
        print(f"{label}: jx {_jx_cell(r)}, NumPy/SciPy {_t(r['seconds'].get('NumPy'))}, "
              f"JAX {_t(r['seconds'].get('JAX'))}", flush=True)
    command = "jx bench --suite linalg" + "".join(f" --only {o!r}" if " " in o else
                                                  f" --only {o}" for o in args.only)
    load.append(os.getloadavg()[0])
    publish(args.out, report(results, limits, command, with_jax, tuple(load)),
            {"command": command, "machine": limits, "flop_formulas": FLOPS, "load": load,
             "seconds": time.perf_counter() - t0, "results": results})
    return 1 if any(r["status"].get("jx") not in ("ok", "no kernel") for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())


def result_rows(results, second: str, with_jax: bool, jx_cell, speedup, rate) -> list:
    """The suites' results table rows (case, r[second], times, speedups, rates, first
    calls; JAX's columns with_jax) and the geometric-mean line, from each suite's cell
    functions."""
    lines = []
    for r in results:
        m, f = r["seconds"], r["first_s"]
        cells = [r["case"], r[second], jx_cell(r), _t(m.get("NumPy"))]
        if with_jax:
            cells.append(_t(m.get("JAX")))
        cells.append(speedup(r, "NumPy"))
        if with_jax:
            cells.append(speedup(r, "JAX"))
        cells += [rate(r, "jx"), rate(r, "NumPy")]
        if with_jax:
            cells.append(rate(r, "JAX"))
        cells.append(_t(f.get("jx")))
        if with_jax:
            cells.append(_t(f.get("JAX")))
        lines.append("| " + " | ".join(cells) + " |")
    ratios = {e: [r["speedup"][e] for r in results if e in r["speedup"]]
              for e in ("NumPy", "JAX")}
    means = [f"{geomean(v):.2f}x over {e} ({len(v)} cases)" for e, v in ratios.items() if v]
    if means:
        lines += ["", "Geometric-mean speedup of jx: " + ", ".join(means) + "."]
    return lines
