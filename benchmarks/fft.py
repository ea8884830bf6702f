"""Complex numbers and the FFT: jx against NumPy (pocketfft) and JAX (XLA's CPU FFT)
in one run, each case's rate set against the machine's limits.

    jx bench --suite fft [--only NAME] [--min-time S] [--out DIR]

Each case is one call of the jax.numpy API (`L.np.fft.fft`, ...) jitted for jx and
JAX, the same NumPy function as the NumPy column, on complex64 data (float32 for
the real-input transform). Before anything is timed, jx's result is checked against
NumPy's (conv.py's bench_case); each FFT's relative L2 error against a float64
transform is reported beside the bound c * eps * log2(n) (c = 1; the issue allows a
small c). The Mandelbrot case is the escape-count iteration as users write it: a
complex fori_loop carry, z = z * z + c, counted where |z| <= 2.

Rates: GFLOP/s as 5 n log2 n per complex transform of length n (half for a real
one), the convention FFT benchmarks use, against the FMA probe's f32 peak; the
Mandelbrot case 8 flops per point and step (a complex square-and-add, 6, and |z|^2,
2, whatever an engine computes). Its counts are checked against NumPy's allowing
0.1% of the points to differ: rounding differences (|z| computed by another
formula, a fused multiply-add) move points at the set's boundary by a step.

The complex chain (an elementwise expression on 2^22 complex64 values) is rated
in GB/s against the measured bandwidth: it measures the split layout's loops
(decomplex.py), which read the interleaved inputs and write the interleaved
output once. Its flop count (34 per element:
two complex products, a sum, and exp(1j t) as a sine and a cosine at ~10 each)
is nominal.
"""
from __future__ import annotations

import math

import numpy as np

from . import machine
from .conv import Case, _rate, failed, run_suite
from .linalg import ROUNDS, _jx_cell, _x, result_rows

EPS32 = float(np.finfo(np.float32).eps)

NUMPY = {
    "fft": "numpy.fft (pocketfft, C), the same call",
    "chain": "the same expression on NumPy complex64 arrays (a temporary per operation)",
    "mandelbrot": "the same iteration on NumPy complex64 arrays, step by step",
}


def _cplx(rng, shape) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=np.float32)
            + 1j * rng.standard_normal(shape, dtype=np.float32)).astype(np.complex64)


LENGTH: dict = {}     # case name -> the transform's length (all its axes together)


def _fft_case(name: str, call: str, shape: tuple, axes: tuple, real: bool = False,
              numpy=None) -> Case:
    n = math.prod(shape[a] for a in axes)
    batch = math.prod(shape) // n
    flops = 5 * n * math.log2(n) * batch * (0.5 if real else 1.0)
    inputs = (lambda rng: (rng.standard_normal(shape, dtype=np.float32),)) if real else \
        (lambda rng: (_cplx(rng, shape),))
    out_bytes = 8 * (math.prod(shape) // shape[-1] * (shape[-1] // 2 + 1) if real
                     else math.prod(shape))
    size = "x".join(map(str, shape)) + (" float32" if real else " complex64")
    LENGTH[name] = n
    return Case(name, "fft", size, inputs, lambda L: getattr(L.np.fft, call),
                numpy or getattr(np.fft, call), flops=flops,
                bytes=(4 if real else 8) * math.prod(shape) + out_bytes)


def mandelbrot(L, steps: int = 100):
    def counts(c):
        def body(i, s):
            z, n = s
            z = z * z + c
            return z, n + (L.np.abs(z) <= 2).astype(L.np.int32)
        init = (L.np.zeros_like(c), L.np.zeros(c.shape, L.np.int32))
        return L.lax.fori_loop(0, steps, body, init)[1]
    return counts


def np_mandelbrot(c: np.ndarray, steps: int = 100) -> np.ndarray:
    z, n = np.zeros_like(c), np.zeros(c.shape, np.int32)
    with np.errstate(all="ignore"):
        for _ in range(steps):
            z = z * z + c
            n += np.abs(z) <= 2
    return n


def _grid(side: int) -> np.ndarray:
    x = np.linspace(-2.0, 1.0, side, dtype=np.float32)
    y = np.linspace(-1.5, 1.5, side, dtype=np.float32)
    return (x[None, :] + 1j * y[:, None]).astype(np.complex64)


def cases(small: bool = False) -> list:
    """The suite; small: toy sizes (the tests)."""
    powers = (6, 10) if small else (10, 12, 14, 16, 18, 20, 22)
    out = [_fft_case(f"fft 2^{p}", "fft", (1 << p,), (0,)) for p in powers]
    b, n, side, prime = (8, 64, 64, 97) if small else (1024, 1024, 2048, 10007)
    out += [_fft_case(f"fft batch {b}x{n}", "fft", (b, n), (1,)),
            _fft_case(f"rfft 2^{powers[-2]}", "rfft", (1 << powers[-2],), (0,), real=True),
            _fft_case(f"fft2 {side}x{side}", "fft2", (side, side), (0, 1)),
            _fft_case(f"fft {prime} (prime)", "fft", (prime,), (0,))]
    m = 1 << (12 if small else 22)
    out.append(Case(f"complex chain 2^{m.bit_length() - 1}", "chain",
                    f"{m} complex64: z * w + conj(z) * exp(1j * t)",
                    lambda rng: (_cplx(rng, (m,)), _cplx(rng, (m,)),
                                 rng.standard_normal(m, dtype=np.float32)),
                    lambda L: lambda z, w, t: z * w + L.np.conj(z) * L.np.exp(1j * t),
                    lambda z, w, t: z * w + np.conj(z) * np.exp(1j * t),
                    flops=m * (6 + 6 + 2 + 20), bytes=m * (8 + 8 + 4 + 8), rate="bytes"))
    grid, steps = (48, 10) if small else (1000, 100)
    out.append(Case(f"mandelbrot {grid}x{grid}x{steps}", "mandelbrot",
                    f"{grid}x{grid} complex64, {steps} steps",
                    lambda rng: (_grid(grid),), lambda L: mandelbrot(L, steps),
                    lambda c: np_mandelbrot(c, steps), flops=8 * grid * grid * steps,
                    agree=0.999))
    return out


def accuracy(case: Case, seed: int) -> tuple | None:
    """(jx's relative L2 error against a float64 transform, the bound eps * log2(n))."""
    if case.kind != "fft":
        return None
    import jx
    (x,) = case.inputs(np.random.default_rng(seed))
    fn = case.fn(_jx_namespace())
    got = np.asarray(jx.jit(fn)(x)).astype(np.complex128)
    want = case.numpy(x.astype(np.float64 if x.dtype == np.float32 else np.complex128))
    n = LENGTH[case.name]
    err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    return err, EPS32 * math.log2(max(n, 2))


def _jx_namespace():
    from .conv import _namespace
    return _namespace("jx")


# the targets: (case prefix, what, getter, target, format)
def _targets(results: list) -> list:
    out = []
    for r in results:
        ok = r["status"].get("jx") == "ok"
        if r["kind"] == "fft":
            for e, target in (("JAX", 1.0), ("NumPy", 0.8)):
                v = r["speedup"].get(e) if ok else None
                if v is not None or e in r["status"]:
                    out.append((r["case"], f"speedup over {e}", v, target))
            acc = r.get("accuracy")
            if acc:
                out.append((r["case"], "rel. L2 error / (eps log2 n)", acc[0] / acc[1], None))
        elif r["kind"] == "mandelbrot":
            out.append((r["case"], "speedup over JAX", r["speedup"].get("JAX") if ok else None,
                        1.5))
    return out


def report(results: list, limits: dict, command: str, with_jax: bool,
           load: tuple = ()) -> str:
    head = ["case", "size", "jx", "NumPy"] + (["JAX"] if with_jax else []) + \
        ["vs NumPy"] + (["vs JAX"] if with_jax else []) + ["jx rate", "NumPy rate"] + \
        (["JAX rate"] if with_jax else []) + ["jx first call"] + \
        (["JAX first call"] if with_jax else [])
    lines = ["# Complex numbers and the FFT: jx vs JAX and NumPy", "",
             f"Command: `{command}`", "",
             f"CPU: {limits.get('cpu', '?')}, {limits.get('cores', '?')} cores (every "
             f"engine uses what it uses: NumPy's FFT is single-threaded); f32 peak "
             f"{machine.peak_for(limits, 32):.4g} GFLOP/s (FMA probe); bandwidth "
             f"{machine.bandwidth_roof(limits):.3g} GB/s." +
             (f" Load average at the start and end of the run: {load[0]:.2f}, "
              f"{load[1]:.2f}." if load else ""), "",
             f"Time per call (jitted for jx and JAX): the fastest of {ROUNDS} rounds, the "
             "engines taking turns in each; speedups are the other engine's time / jx's "
             "(above 1: jx faster). Rates: GFLOP/s at 5 n log2 n per complex transform "
             "(half for a real one) and 8 per Mandelbrot point and step, with the f32 "
             "peak's percentage." + ("" if with_jax else " JAX is not installed."), "",
             "| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    lines += result_rows(results, "size", with_jax, _jx_cell, _x, _rate)
    met = _targets(results)
    if met:
        lines += ["", "## The issue's targets", "", "| case | figure | jx | target | met |",
                  "|---|---|---:|---:|---|"]
        for name, what, v, target in met:
            if target is None:      # an accuracy ratio: the bound allows a small c
                lines.append(f"| {name} | {what} | {'-' if v is None else f'{v:.2f}'} | "
                             f"<= 5 | {'yes' if v is not None and v <= 5 else 'NO'} |")
            else:
                lines.append(f"| {name} | {what} | {'-' if v is None else f'{v:.2f}x'} | "
                             f">= {target}x | {'yes' if v is not None and v >= target else 'NO'} |")
    lines += ["", "What the NumPy column computes:", ""]
    lines += [f"- {kind}: {what}" for kind, what in NUMPY.items()
              if any(r["kind"] == kind for r in results)]
    bad = [r for r in results if failed(r)]
    if bad:
        lines += ["", "## jx results that FAILED", ""]
        for r in bad:
            lines.append(f"- **{r['case']}**: {r['status'].get('jx', '-')}")
            lines += [f"  - {p}" for p in r["mismatches"]]
    return "\n".join(lines) + "\n"


def _accuracy(case: Case, seed: int, r: dict) -> None:
    if r["status"].get("jx") == "ok":
        r["accuracy"] = accuracy(case, seed)


def main(argv=None) -> int:
    return run_suite("fft", cases(), report, NUMPY, argv, extra=_accuracy)


if __name__ == "__main__":
    raise SystemExit(main())
