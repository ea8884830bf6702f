"""Comparing an engine's outputs with the reference's.

Shapes and dtypes must be equal, integers and booleans exact, NaNs in the same
places, infinities in the same places with the same sign. Finite floats may
differ by a tolerance: a few of the dtype's epsilons plus `err`, the generator's
bound on the error the roundings on the value's path may have gathered (in
the coarsest dtype they happened in),
relative to the output's largest finite magnitude: a sum that cancels can
lose digits relative to itself, never relative to its operands' scale.
"""
from __future__ import annotations

import numpy as np

EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23,
       "float64": 2.0 ** -52}
MAXF = {"float16": 65504.0, "bfloat16": 3.39e38, "float32": 3.4e38, "float64": 1.79e308}


def tolerance(dtype: str, err: float) -> float:
    return EPS[dtype] * 8 + 4 * err


def compare(ref: np.ndarray, got: np.ndarray, err: float = 0.0, same_kind_only: bool = False):
    """None when got matches ref, else (kind, detail)."""
    ref, got = np.asarray(ref), np.asarray(got)
    if ref.shape != got.shape:
        return "shape", f"shape {got.shape} != reference {ref.shape}"
    rdt, gdt = ref.dtype.name, got.dtype.name
    if rdt != gdt:
        if not same_kind_only or _kind(rdt) != _kind(gdt):
            return "dtype", f"dtype {gdt} != reference {rdt}"
        if _kind(rdt) != "f":       # JAX's x64 ints are wider: they wrap elsewhere
            return None
    if _kind(rdt) != "f":
        if same_kind_only:
            ref, got = ref.astype(np.float64), got.astype(np.float64)
        bad = ref != got
        if bad.any():
            k = _first(bad)
            return "value", (f"{int(bad.sum())} of {bad.size} differ; at {k}: {got[k]!r} != "
                             f"reference {ref[k]!r}")
        return None
    dt = rdt if rdt in EPS else gdt
    r64, g64 = ref.astype(np.float64), got.astype(np.float64)
    rn, gn = np.isnan(r64), np.isnan(g64)
    if (rn != gn).any():
        k = _first(rn != gn)
        return "nan", f"NaN positions differ ({int((rn != gn).sum())}); at {k}: {got[k]!r} vs " \
                      f"reference {ref[k]!r}"
    ri, gi = np.isinf(r64), np.isinf(g64)
    near_max = np.abs(np.where(ri, g64, r64)) >= 0.5 * MAXF[dt]
    bad_inf = ((ri != gi) & ~near_max) | (ri & gi & (np.sign(r64) != np.sign(g64)))
    if bad_inf.any():
        k = _first(bad_inf)
        return "inf", f"infinities differ; at {k}: {got[k]!r} vs reference {ref[k]!r}"
    fin = ~(rn | ri | gi)
    if not fin.any():
        return None
    scale = max(float(np.abs(r64[fin]).max()), float(np.abs(g64[fin]).max()))
    tol = tolerance(dt, err) * scale + 4 * np.finfo(np.float32).tiny
    err = np.where(fin, np.abs(r64 - g64), 0.0)
    if (err > tol).any():
        k = _first(err > tol)
        ulps = float(err.max()) / (EPS[dt] * max(scale, 1e-300))
        return "value", (f"{int((err > tol).sum())} of {err.size} differ beyond {tol:.3g}; "
                         f"at {k}: {got[k]!r} vs reference {ref[k]!r} "
                         f"(max error {ulps:.3g} eps of the output's scale)")
    return None


def _kind(dtype: str) -> str:
    return "f" if dtype in EPS else np.dtype(dtype).kind


def _first(mask: np.ndarray) -> tuple:
    return tuple(int(i) for i in np.argwhere(mask)[0])
