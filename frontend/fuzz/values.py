"""Input values for fuzz programs, drawn from (program seed, input position),
and their rendering as exact literals for a regression test."""
from __future__ import annotations

import numpy as np

from .program import Input, Program

# No huge or tiny finite values: a product's overflow or underflow would then
# depend on the order of its terms, which engines may choose.
_SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, -3.5, 2.0, 100.0])


def make_input(seed: int, pos: int, inp: Input) -> np.ndarray:
    rng = np.random.default_rng([seed, pos])
    shape, dt = tuple(inp.var.shape), np.dtype(inp.var.dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dt == np.bool_:
        return rng.random(n).reshape(shape) < 0.5
    if inp.kind == "index":      # in and out of range of an extent `bound`
        b = max(inp.bound, 1)
        vals = rng.integers(-2 * b - 1, 2 * b + 2, n)
        if dt.kind == "u":
            vals = np.abs(vals)
        return vals.astype(dt).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if inp.kind == "small":
            vals = rng.integers(-9 if dt.kind == "i" else 0, 10, n)
        else:
            vals = rng.integers(info.min, int(info.max) + 1, n, dtype=np.int64)
            edge = rng.random(n) < 0.1
            vals[edge] = rng.choice([info.min, info.max, 0, 1, -1 if dt.kind == "i" else 2],
                                    int(edge.sum()))
        return vals.astype(dt).reshape(shape)
    vals = rng.standard_normal(n) * 2.0
    if inp.kind == "special":
        pick = rng.random(n) < 0.3
        vals[pick] = rng.choice(_SPECIAL, int(pick.sum()))
    elif inp.kind == "positive":
        vals = np.abs(vals) + 0.25
    elif inp.kind == "unit":
        vals = np.tanh(vals) * 0.95
    with np.errstate(all="ignore"):
        return vals.astype(dt).reshape(shape)


def make_inputs(prog: Program) -> list:
    return [make_input(prog.seed, k, inp) for k, inp in enumerate(prog.inputs)]


def literal(x: np.ndarray) -> str:
    """Python source that rebuilds x bit for bit."""
    return (f"np.frombuffer(bytes.fromhex({x.tobytes().hex()!r}), {x.dtype.name!r})"
            f".reshape({tuple(x.shape)!r})")
