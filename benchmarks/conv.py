"""Convolutions and windowed reductions: jx against JAX (XLA) and a NumPy
formulation, in one run, each case's rate set against the machine's limits.

    jx bench --suite conv [--only NAME] [--min-time S] [--out DIR]

Each case is one operation at one size (float32, channels last), written once
against a namespace of the library (`L.lax`, `L.np`, `L.grad`) and jitted for jx
and JAX; its NumPy column runs a NumPy formulation of the same operation (a sum
over the kernel's taps of shifted-slice products, NUMPY below) where one is
practical. Before anything is timed, jx's result is checked against NumPy's (or
against JAX's where there is no NumPy column; JAX's against NumPy's as a check of
the check): a jx result that disagrees is reported as a MISMATCH instead of a time,
an operation with no CPU kernel in jx yet as "no kernel".

Compute-bound cases report GFLOP/s (2 flops per multiply-add of a direct
convolution, whatever algorithm an engine runs) against the FMA probe's peak; the
3x3 convolution also times jx's own GEMM on the same flops (the im2col product,
(N*Ho*Wo x KH*KW*Cin) @ (KH*KW*Cin x Cout)), the roof a convolution kernel is
judged by. Memory-bound cases report GB/s (the bytes of the inputs and the output,
each once) against the machine's measured bandwidth (machine.limits).

The LeNet training step (conv_programs/lenet.py) is a user's JAX script with stax,
run as written on JAX and by corpus.py's import swap on jx; it is checked against
JAX (against a NumPy forward pass of its loss where JAX is not here).

A time is the fastest of ROUNDS rounds in which the engines take turns (linalg.py's
way): on a shared machine the minimum is the figure least moved by the others' load.
"""
from __future__ import annotations

import itertools
import os
import pathlib
import time
import types
from dataclasses import dataclass, field

import numpy as np

from . import machine, measure
from .corpus import _t, load, parse_args, publish
from .linalg import ROUNDS, _block, _jx_cell, _times, _x, result_rows

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = pathlib.Path(HERE) / "conv_programs"

# (rtol, atol relative to the reference's largest magnitude): float32 sums of up to
# 576 products (or 100352 for a weight gradient) in each engine's own order.
TOLERANCE = (2e-3, 2e-3)

# what the NumPy column computes, per kind of case (the report states it)
NUMPY = {
    "conv": "a sum over the 3x3 taps of GEMMs, (N*H*W x Cin) slice of the padded input "
            "@ (Cin x Cout) tap of the kernel (OpenBLAS)",
    "conv grad": "per tap: dW[tap] = slice^T @ g and d(padded x)[slice] += g @ W[tap]^T "
                 "(two GEMMs a tap), the padding cropped off",
    "depthwise": "a sum over the 3x3 taps of elementwise products, slice * W[tap]",
    "conv1d": "np.correlate(x, w, 'same') (direct, in C) for one channel; a sum over the "
              "taps of (N*W x Cin) @ (Cin x Cout) GEMMs for several",
    "max-pool": "x.reshape(N, H/2, 2, W/2, 2, C).max(axis=(2, 4))",
    "max-pool grad": "g put at each 2x2 window's first maximum (argmax over the "
                     "windows' four values, put_along_axis, transposes back)",
    "program": "none (a training step: no NumPy gradient); its loss is checked against "
               "a NumPy forward pass only where JAX is not here",
}


@dataclass
class Case:
    name: str
    kind: str                   # a key of NUMPY
    size: str
    inputs: object = None       # rng -> tuple of float32 NumPy arrays
    fn: object = None           # library namespace -> the function to time (unjitted)
    numpy: object = None        # the NumPy formulation (a function of the inputs), or None
    flops: float | None = None
    bytes: float | None = None  # inputs + output, each once
    rate: str = "flops"         # flops | bytes: what the report rates the case by
    gemm: tuple | None = None   # (m, k, n): jx's GEMM on the same flops
    program: str | None = None  # a conv_programs/ script with bench(**program_args)
    program_args: dict = field(default_factory=dict)
    # integer results of a chaotic iteration (an escape count): the fraction of
    # elements that must equal the reference's (rounding flips boundary points)
    agree: float | None = None


# -- NumPy formulations --------------------------------------------------------------

def same_pads(kernel: tuple) -> list:
    """lax's SAME padding at stride 1: (k - 1) // 2 below, the rest above."""
    return [((k - 1) // 2, k - 1 - (k - 1) // 2) for k in kernel]


def _pad(x: np.ndarray, pads: list) -> np.ndarray:
    return np.pad(x, [(0, 0), *pads, (0, 0)])


def _window(xp: np.ndarray, tap: tuple, out: tuple) -> tuple:
    return (slice(None), *(slice(t, t + o) for t, o in zip(tap, out)))


def np_conv(x: np.ndarray, w: np.ndarray, pads: list, depthwise: bool = False) -> np.ndarray:
    """A stride-1 convolution (cross-correlation), x (N, *spatial, C), w (*kernel, I,
    O): a sum over the taps of the shifted slice's product with the tap (a GEMM, or
    for a depthwise kernel, I = 1 and O = C, an elementwise product)."""
    nd = x.ndim - 2
    kernel = w.shape[:nd]
    xp = _pad(x, pads)
    out_sp = tuple(xp.shape[1 + i] - kernel[i] + 1 for i in range(nd))
    out = np.zeros((x.shape[0], *out_sp, w.shape[-1]), x.dtype)
    for tap in itertools.product(*map(range, kernel)):
        sl = xp[_window(xp, tap, out_sp)]
        if depthwise:
            out += sl * w[tap][0]
        else:
            out += (np.ascontiguousarray(sl).reshape(-1, x.shape[-1]) @ w[tap]).reshape(
                out.shape)
    return out


def np_conv_grad(x: np.ndarray, w: np.ndarray, g: np.ndarray, pads: list) -> tuple:
    """(dx, dw) of sum(conv(x, w) * g): per tap, dW[tap] = slice^T @ g and the padded
    input's slice gets g @ W[tap]^T."""
    nd = x.ndim - 2
    kernel = w.shape[:nd]
    xp = _pad(x, pads)
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    out_sp = g.shape[1:-1]
    g2 = g.reshape(-1, g.shape[-1])
    for tap in itertools.product(*map(range, kernel)):
        win = _window(xp, tap, out_sp)
        sl = np.ascontiguousarray(xp[win]).reshape(-1, x.shape[-1])
        dw[tap] = sl.T @ g2
        dxp[win] += (g2 @ w[tap].T).reshape(*g.shape[:-1], x.shape[-1])
    crop = (slice(None), *(slice(lo, lo + n) for (lo, _), n in zip(pads, x.shape[1:-1])))
    return dxp[crop], dw


def np_correlate_same(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The one-channel 1-d SAME convolution of (1, W, 1) by (K, 1, 1), odd K."""
    return np.correlate(x[0, :, 0], w[:, 0, 0], "same")[None, :, None]


def np_maxpool(x: np.ndarray) -> np.ndarray:
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def np_maxpool_grad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """d sum(maxpool(x) * g) / dx: each window's g at its first maximum (row-major),
    JAX's rule where a window holds ties."""
    n, h, w, c = x.shape
    blocks = x.reshape(n, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4)
    first = blocks.reshape(n, h // 2, w // 2, c, 4).argmax(axis=-1)
    out = np.zeros((n, h // 2, w // 2, c, 4), x.dtype)
    np.put_along_axis(out, first[..., None], g[..., None], axis=-1)
    return out.reshape(n, h // 2, w // 2, c, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(x.shape)


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def lenet_loss(params, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """lenet.py's loss in NumPy: what jx's is checked against when JAX is not here."""
    (w1, b1), _, _, (w2, b2), _, _, _, (w3, b3), _, (w4, b4), _, (w5, b5), _ = \
        [tuple(np.asarray(p) for p in layer) for layer in params]
    h = np_maxpool(np.maximum(np_conv(x, w1, same_pads(w1.shape[:2])) + b1, 0))
    h = np_maxpool(np.maximum(np_conv(h, w2, [(0, 0), (0, 0)]) + b2, 0))
    h = h.reshape(len(h), -1)
    h = np.maximum(h @ w3 + b3, 0)
    h = np.maximum(h @ w4 + b4, 0)
    logp = _log_softmax(h @ w5 + b5)
    return np.asarray(-np.mean(np.sum(logp * y, axis=-1)), np.float32)


# -- the library functions ----------------------------------------------------------

def conv2d(L, groups: int = 1):
    return lambda x, w: L.lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=groups)


def conv1d(L):
    return lambda x, w: L.lax.conv_general_dilated(
        x, w, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))


def conv2d_grad(L):
    conv = conv2d(L)
    return L.grad(lambda x, w, g: L.np.sum(conv(x, w) * g), argnums=(0, 1))


def maxpool(L):
    """2x2 max-pool, stride 2, NHWC: lax.reduce_window, the call pooling.py times."""
    return lambda x: L.lax.reduce_window(x, -L.np.inf, L.lax.max, (1, 2, 2, 1),
                                         (1, 2, 2, 1), "VALID")


def maxpool_grad(L):
    pool = maxpool(L)
    return L.grad(lambda x, g: L.np.sum(pool(x) * g))


# -- the cases ----------------------------------------------------------------------

def _normal(rng, shape, scale=1.0) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(scale))


def _nbytes(*shapes) -> int:
    return 4 * sum(int(np.prod(s)) for s in shapes)


def cases(small: bool = False) -> list:
    """The suite; small: toy sizes (the tests)."""
    return _conv2d_cases(*((2, 8, 8) if small else (32, 56, 64))) + \
        _conv1d_cases(*((4096, 63, 2, 512, 16, 9) if small else (2**20, 63, 8, 65536, 16, 9))) + \
        _pool_cases(*((2, 8, 4) if small else (32, 112, 64))) + \
        [Case("LeNet training step", "program", f"batch {8 if small else 128}, 28x28x1",
              program="lenet", program_args={"batch": 8 if small else 128})]


def _conv2d_cases(n: int, hw: int, c: int) -> list:
    x_shape, w_shape = (n, hw, hw, c), (3, 3, c, c)
    conv_flops = 2 * n * hw * hw * 9 * c * c
    pads3 = same_pads((3, 3))
    return [
        Case("conv3x3", "conv", f"{n}x{hw}x{hw}x{c} * 3x3x{c}x{c}, SAME",
             lambda rng: (_normal(rng, x_shape), _normal(rng, w_shape, (9 * c) ** -0.5)),
             conv2d, lambda x, w: np_conv(x, w, pads3), flops=conv_flops,
             bytes=_nbytes(x_shape, w_shape, x_shape), gemm=(n * hw * hw, 9 * c, c)),
        Case("conv3x3 grad", "conv grad", f"d/dx, d/dw of {n}x{hw}x{hw}x{c} * 3x3x{c}x{c}",
             lambda rng: (_normal(rng, x_shape), _normal(rng, w_shape, (9 * c) ** -0.5),
                          _normal(rng, x_shape)),
             conv2d_grad, lambda x, w, g: np_conv_grad(x, w, g, pads3), flops=2 * conv_flops,
             bytes=_nbytes(x_shape, w_shape, x_shape, x_shape, w_shape)),
        Case("depthwise3x3", "depthwise", f"{n}x{hw}x{hw}x{c} * 3x3x1x{c}, {c} groups",
             lambda rng: (_normal(rng, x_shape), _normal(rng, (3, 3, 1, c), 1 / 3)),
             lambda L: conv2d(L, c), lambda x, w: np_conv(x, w, pads3, depthwise=True),
             flops=2 * n * hw * hw * 9 * c, bytes=_nbytes(x_shape, x_shape), rate="bytes"),
    ]


def _conv1d_cases(length: int, k: int, b: int, length2: int, ch: int, k2: int) -> list:
    return [
        Case(f"conv1d 1ch k{k}", "conv1d", f"1x{length}x1 * {k}x1x1, SAME",
             lambda rng: (_normal(rng, (1, length, 1)), _normal(rng, (k, 1, 1), k ** -0.5)),
             conv1d, np_correlate_same, flops=2 * length * k,
             bytes=_nbytes((length,), (length,)), rate="bytes"),
        Case(f"conv1d {ch}ch k{k2}", "conv1d", f"{b}x{length2}x{ch} * {k2}x{ch}x{ch}, SAME",
             lambda rng: (_normal(rng, (b, length2, ch)),
                          _normal(rng, (k2, ch, ch), (k2 * ch) ** -0.5)),
             conv1d, lambda x, w: np_conv(x, w, same_pads((k2,))),
             flops=2 * b * length2 * k2 * ch * ch,
             bytes=_nbytes((b, length2, ch), (k2, ch, ch), (b, length2, ch)), rate="bytes"),
    ]


def _pool_cases(n: int, hw: int, c: int) -> list:
    p_in, p_out = (n, hw, hw, c), (n, hw // 2, hw // 2, c)
    return [
        Case("maxpool2x2", "max-pool", f"{n}x{hw}x{hw}x{c} -> {n}x{hw // 2}x{hw // 2}x{c}",
             lambda rng: (_normal(rng, p_in),), maxpool, np_maxpool,
             bytes=_nbytes(p_in, p_out), rate="bytes"),
        Case("maxpool2x2 grad", "max-pool grad", f"d/dx of {n}x{hw}x{hw}x{c}",
             lambda rng: (_normal(rng, p_in), _normal(rng, p_out)), maxpool_grad,
             np_maxpool_grad, bytes=_nbytes(p_in, p_out, p_in), rate="bytes"),
    ]


# -- the engines ---------------------------------------------------------------------

def _namespace(engine: str):
    """jit, grad, np and lax of jx or JAX."""
    if engine == "jx":
        import jx
        import jx.lax
        import jx.numpy
        return types.SimpleNamespace(jit=jx.jit, grad=jx.grad, np=jx.numpy, lax=jx.lax)
    import jax
    import jax.lax
    import jax.numpy
    return types.SimpleNamespace(jit=jax.jit, grad=jax.grad, np=jax.numpy, lax=jax.lax)


def _flat(x) -> list:
    """The leaves of nested lists, tuples and dicts, as NumPy arrays."""
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _flat(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flat(item)]
    return [np.asarray(x)]


def _status(e: Exception) -> str:
    from jx.errors import MissingRuleError
    if isinstance(e, NotImplementedError) or (isinstance(e, MissingRuleError)
                                              and "no lowering" in str(e)):
        return "no kernel"
    return f"error: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def _steps(case: Case, engines: list, rng, status: dict) -> dict:
    """{engine: (callable, arguments)}; an engine that cannot even build its step gets
    its status here."""
    args = case.inputs(rng) if case.inputs else None
    out = {}
    for e in engines:
        try:
            if case.program:
                step, call_args = load(case.program, e == "jx", PROGRAMS).bench(
                    **case.program_args)
            elif e == "NumPy":
                step, call_args = case.numpy, args
            else:
                L = _namespace(e)
                step, call_args = L.jit(case.fn(L)), args
            if e == "JAX":
                import jax
                call_args = jax.device_put(call_args)
        except Exception as ex:  # noqa: BLE001 - reported in the row, the run goes on
            status[e] = _status(ex)
            continue
        out[e] = (step, call_args)
    return out


def _gemm(case: Case, rng, res: dict):
    """jx's GEMM on the case's flops, checked against NumPy's: its timed call, or None."""
    import jx
    m, k, n = case.gemm
    a, b = _normal(rng, (m, k)), _normal(rng, (k, n), k ** -0.5)
    mm = jx.jit(lambda a, b: a @ b)
    res["gemm"] = {"shape": f"({m} x {k}) @ ({k} x {n})", "flops": 2 * m * k * n}
    try:
        res["gemm"]["first_s"], got = measure.first_call(lambda: mm(a, b))
    except Exception as ex:  # noqa: BLE001
        res["gemm"]["status"] = _status(ex)
        return None
    problems = measure.compare("jx GEMM", [np.asarray(got)], [a @ b], TOLERANCE)
    res["gemm"]["status"] = "MISMATCH" if problems else "ok"
    res["mismatches"] += [str(p) for p in problems]
    return None if problems else (lambda: mm(a, b))


def _agreement(engine: str, got, ref, fraction: float) -> list:
    """Mismatches unless at least `fraction` of each result's elements equal the
    reference's."""
    out = []
    for i, (g, r) in enumerate(zip(got, ref)):
        same = float(np.mean(np.asarray(g) == np.asarray(r))) if g.shape == r.shape else 0.0
        if same < fraction:
            out.append(f"{engine} at output [{i}]: {same:.4%} of the elements equal the "
                       f"reference's (at least {fraction:.2%} must)")
    return out


def bench_case(case: Case, seed: int, min_time: float, with_jax: bool, limits: dict) -> dict:
    engines = ["jx"] + (["NumPy"] if case.numpy else []) + (["JAX"] if with_jax else [])
    res = {"case": case.name, "kind": case.kind, "size": case.size, "flops": case.flops,
           "bytes": case.bytes, "rate": case.rate, "status": {}, "first_s": {},
           "seconds": {}, "gflop_s": {}, "gb_s": {}, "peak_fraction": {},
           "bandwidth_fraction": {}, "speedup": {}, "reference": None, "mismatches": [],
           "notes": []}
    rng = np.random.default_rng(seed)
    steps = _steps(case, engines, rng, res["status"])
    outs = {}
    for e, (step, args) in steps.items():
        block = _block(e)
        try:
            res["first_s"][e], out = measure.first_call(lambda: block(step(*args)))
        except Exception as ex:  # noqa: BLE001 - reported in the row, the run goes on
            res["status"][e] = _status(ex)
            continue
        outs[e] = _flat(out)
        res["status"][e] = "ok"
    ref_name = "NumPy" if "NumPy" in outs else "JAX" if "JAX" in outs else None
    ref = outs.get(ref_name)
    if case.program and ref_name is None and "jx" in outs:
        params, x, y = steps["jx"][1]                  # the loss only: NumPy has no grad
        ref_name, ref = "NumPy (loss)", [lenet_loss(params, np.asarray(x), np.asarray(y))]
    res["reference"] = ref_name
    if ref is not None:
        for e in outs:
            if e == ref_name:
                continue
            got = outs[e][-1:] if ref_name == "NumPy (loss)" else outs[e]
            problems = [f"{p} (against {ref_name})"
                        for p in (_agreement(e, got, ref, case.agree) if case.agree else
                                  measure.compare(e, got, ref, TOLERANCE))]
            if e == "jx" and problems:
                res["status"]["jx"] = "MISMATCH"
                res["mismatches"] += problems
            elif problems:           # a baseline against the other: the check's check
                res["notes"] += problems
    timed = {e: (lambda step=step, args=args, block=_block(e): block(step(*args)))
             for e, (step, args) in steps.items() if res["status"].get(e) == "ok"}
    if case.gemm and "jx" in timed:
        gemm = _gemm(case, rng, res)
        if gemm is not None:
            timed["jx GEMM"] = gemm
    peak, roof = machine.peak_for(limits, 32), machine.bandwidth_roof(limits)
    for e, t in _times(timed, min_time).items():
        if e == "jx GEMM":
            res["gemm"].update(seconds=t, gflop_s=res["gemm"]["flops"] / t / 1e9)
            continue
        res["seconds"][e] = t
        if case.flops:
            res["gflop_s"][e] = case.flops / t / 1e9
            res["peak_fraction"][e] = res["gflop_s"][e] / peak
        if case.bytes:
            res["gb_s"][e] = case.bytes / t / 1e9
            res["bandwidth_fraction"][e] = res["gb_s"][e] / roof
    jx_t = res["seconds"].get("jx")
    for e in ("NumPy", "JAX"):
        if jx_t and e in res["seconds"]:
            res["speedup"][e] = res["seconds"][e] / jx_t
    if "seconds" in res.get("gemm", {}) and "jx" in res["gflop_s"]:
        res["gemm"]["conv_over_gemm"] = res["gflop_s"]["jx"] / res["gemm"]["gflop_s"]
    return res


# -- the report --------------------------------------------------------------------------

def _rate(r: dict, e: str) -> str:
    if r["rate"] == "bytes":
        g, frac, unit, of = r["gb_s"].get(e), r["bandwidth_fraction"].get(e), "GB/s", "bw"
    else:
        g, frac, unit, of = r["gflop_s"].get(e), r["peak_fraction"].get(e), "GFLOP/s", "peak"
    if g is None:
        return "-"
    also = r["gflop_s"].get(e) if r["rate"] == "bytes" else None
    return f"{g:.3g} {unit} ({_percent(frac)} {of})" + \
        (f", {also:.3g} GFLOP/s" if also is not None else "")


def _percent(fraction: float) -> str:
    p = 100 * fraction
    return f"{p:.0f}%" if p >= 10 else f"{p:.2g}%"


# the targets: (case, what, the figure's getter, the target, how it is shown)
TARGETS = [
    ("conv3x3", "jx conv / jx GEMM on the same flops",
     lambda r: r.get("gemm", {}).get("conv_over_gemm"), 0.70, "{:.0%}"),
    ("depthwise3x3", "jx GB/s / measured bandwidth",
     lambda r: r["bandwidth_fraction"].get("jx"), 0.60, "{:.0%}"),
    ("depthwise3x3", "speedup over JAX", lambda r: r["speedup"].get("JAX"), 1.2, "{:.2f}x"),
    ("LeNet training step", "speedup over JAX", lambda r: r["speedup"].get("JAX"), 1.2,
     "{:.2f}x"),
]


def targets(results: list) -> list:
    """[(case, what, shown figure or None, target shown, met)] for the cases run."""
    out = []
    by_name = {r["case"]: r for r in results}
    for name, what, get, target, fmt in TARGETS:
        r = by_name.get(name)
        if r is None:
            continue
        v = get(r) if r["status"].get("jx") == "ok" else None
        out.append((name, what, None if v is None else fmt.format(v), fmt.format(target),
                    v is not None and v >= target))
    return out


def report(results: list, limits: dict, command: str, with_jax: bool,
           load: tuple = ()) -> str:
    """The markdown report: one row per case; `load` the 1-minute load averages at the
    start and end of the run."""
    head = ["case", "size", "jx", "NumPy"] + (["JAX"] if with_jax else []) + \
        ["vs NumPy"] + (["vs JAX"] if with_jax else []) + ["jx rate", "NumPy rate"] + \
        (["JAX rate"] if with_jax else []) + ["jx first call"] + \
        (["JAX first call"] if with_jax else [])
    lines = ["# Convolutions and windowed reductions: jx vs JAX and NumPy", "",
             f"Command: `{command}`", "",
             f"CPU: {limits.get('cpu', '?')}, {limits.get('cores', '?')} cores (every "
             f"engine uses all of them); BLAS: {limits.get('blas', '?')}; f32 peak "
             f"{machine.peak_for(limits, 32):.4g} GFLOP/s (FMA probe), NumPy's f32 GEMM "
             f"{limits.get('gemm_f32_gflop_s', '?')} GFLOP/s; bandwidth "
             f"{machine.bandwidth_roof(limits):.3g} GB/s (the better of copy "
             f"{limits.get('copy_gb_s', '?')} and read {limits.get('read_gb_s', '?')})." +
             (f" Load average at the start and end of the run: {load[0]:.2f}, "
              f"{load[1]:.2f}." if load else ""), "",
             f"float32, channels last. Time per call (jitted for jx and JAX): the fastest "
             f"of {ROUNDS} rounds, the engines taking turns in each; speedups are the "
             "other engine's time / jx's (above 1: jx faster). Rates: GFLOP/s (% of the "
             "f32 peak) for the dense convolutions, GB/s (% of the bandwidth) for the "
             "memory-bound cases (their GFLOP/s after it), from the flop and byte counts "
             "below." +
             ("" if with_jax else " JAX is not installed: no JAX columns."), "",
             "| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    lines += result_rows(results, "size", with_jax, _jx_cell, _x, _rate)
    gemms = [r for r in results if "gemm" in r]
    for r in gemms:
        g = r["gemm"]
        if "seconds" in g:
            lines += ["", f"jx's GEMM on the {r['case']} flops, {g['shape']}: "
                          f"{_t(g['seconds'])}, {g['gflop_s']:.3g} GFLOP/s "
                          f"({_percent(g['gflop_s'] / machine.peak_for(limits, 32))} peak)" +
                      (f"; the convolution reaches {g['conv_over_gemm']:.0%} of it."
                       if "conv_over_gemm" in g else ".")]
        else:
            lines += ["", f"jx's GEMM on the {r['case']} flops, {g['shape']}: "
                          f"{g.get('status', 'not timed')}."]
    met = targets(results)
    if met:
        lines += ["", "## The issue's targets", "", "| case | figure | jx | target | met |",
                  "|---|---|---:|---:|---|"]
        lines += [f"| {name} | {what} | {v or '-'} | >= {t} | {'yes' if ok else 'NO'} |"
                  for name, what, v, t, ok in met]
    lines += ["", "What the NumPy column computes:", ""]
    lines += [f"- {kind}: {what}" for kind, what in NUMPY.items()
              if any(r["kind"] == kind for r in results)]
    lines += ["", "Counts: flops 2 per multiply-add of the direct convolution (the "
              "gradient: dx and dw, two convolutions of the forward's size); bytes the "
              "inputs and the output, each read or written once (the gradients: x, g and "
              "dx, plus w and dw for the convolution). The bandwidth is measured on arrays "
              f"of {machine.BANDWIDTH_MIB} MiB, past any cache; a case whose traffic is "
              "smaller (the depthwise convolution's 51 MB, the one-channel 1-d "
              "convolution's 8 MB) is partly served from the last-level cache between "
              "calls and can pass it."]
    missing = [r["case"] for r in results if r["status"].get("jx") == "no kernel"]
    if missing:
        lines += ["", "No CPU kernel in jx yet (no jx time): " + ", ".join(missing) + "."]
    bad = [r for r in results if r["status"].get("jx") not in ("ok", "no kernel")]
    if bad:
        lines += ["", "## jx results that FAILED", ""]
        for r in bad:
            lines.append(f"- **{r['case']}**: {r['status'].get('jx', '-')}")
            lines += [f"  - {p}" for p in r["mismatches"]]
    notes = [(r, n) for r in results for n in r["notes"]] + \
        [(r, f"{e}: {s}") for r in results for e, s in r["status"].items()
         if e != "jx" and s != "ok"]
    if notes:
        lines += ["", "Baselines disagreeing with each other or failing (not jx):", ""]
        lines += [f"- {r['case']}: {n}" for r, n in notes]
    return "\n".join(lines) + "\n"


def failed(r: dict) -> bool:
    return r["status"].get("jx") not in ("ok", "no kernel") or \
        r.get("gemm", {}).get("status") == "MISMATCH"


def run_suite(name: str, all_cases: list, report_fn, numpy: dict, argv=None,
              extra=None) -> int:
    """`jx bench --suite NAME`: every case (or --only's), checked then timed, the
    report and JSON published; `extra(case, seed, result)` adds to a case's result.
    Exit status 1 when a jx result failed."""
    args, with_jax = parse_args(argv, name, f"results-{name}.md")
    limits = machine.limits()
    t0, load = time.perf_counter(), [os.getloadavg()[0]]
    results = []
    for seed, case in enumerate(all_cases):
        if args.only and not any(o in case.name for o in args.only):
            continue
        r = bench_case(case, seed, args.min_time, with_jax, limits)
        if extra is not None:
            extra(case, seed, r)
        results.append(r)
        print(f"{case.name}: jx {_jx_cell(r)}, NumPy {_t(r['seconds'].get('NumPy'))}, "
              f"JAX {_t(r['seconds'].get('JAX'))}", flush=True)
    command = f"jx bench --suite {name}" + "".join(f" --only {o!r}" if " " in o else
                                                   f" --only {o}" for o in args.only)
    load.append(os.getloadavg()[0])
    publish(args.out, report_fn(results, limits, command, with_jax, tuple(load)),
            {"command": command, "machine": limits, "numpy_formulations": numpy,
             "load": load, "seconds": time.perf_counter() - t0, "results": results})
    return 1 if any(failed(r) for r in results) else 0


def main(argv=None) -> int:
    return run_suite("conv", cases(), report, NUMPY, argv)


if __name__ == "__main__":
    raise SystemExit(main())
