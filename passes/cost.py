"""Bytes and flops of a kernel, counted from the IR: the minimum bytes it must
move (each materialised input read once, each output written once) and the
arithmetic of its equations. Benchmarks divide by time for GB/s and GFLOP/s."""
from __future__ import annotations

import math
from dataclasses import dataclass

from jx.ir import Var

# Flops per output element; transcendentals count as one (like XLA's cost model).
_FREE = frozenset({"broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims",
                   "slice", "rev", "pad", "concatenate", "iota", "convert_element_type",
                   "stop_gradient", "dynamic_slice", "dynamic_update_slice", "gather"})


@dataclass
class Cost:
    bytes: int
    flops: int


def eqn_flops(eqn) -> int:
    name = eqn.prim.name
    if name in _FREE:
        return 0
    if name == "dot_general":
        (lc, _), _ = eqn.params["dimension_numbers"]
        k = 1
        for d in lc:
            k *= eqn.inputs[0].aval.shape[d]
        return 2 * k * eqn.outputs[0].aval.size
    if name.startswith("reduce_") or name in ("argmax", "argmin"):
        return eqn.inputs[0].aval.size
    if name in _FFTS and all(isinstance(d, int) for d in eqn.inputs[0].aval.shape):
        return _fft_flops(eqn)
    return sum(v.aval.size for v in eqn.outputs)


_FFTS = frozenset({"fft_c2c", "fft_r2c", "fft_c2r", "fft_z"})


def _fft_flops(eqn) -> int:
    """5 n log2 n per complex transform (along the last axis, or fft_c2c's `axis`),
    half that for a real one."""
    shape = eqn.inputs[0].aval.shape
    axis = eqn.params.get("axis", -1)
    n = eqn.params["n"] if eqn.prim.name == "fft_c2r" else shape[axis]
    rows = math.prod(shape) // max(shape[axis], 1)
    per = 5 * n * math.log2(n) if n > 1 else 0
    return int(rows * per * (1 if eqn.prim.name in ("fft_c2c", "fft_z") else 0.5))


def kernel_cost(kernel) -> Cost:
    nbytes = sum(v.aval.size * v.aval.dtype.itemsize for v in kernel.inputs
                 if isinstance(v, Var))
    nbytes += sum(v.aval.size * v.aval.dtype.itemsize for v in kernel.outputs)
    return Cost(nbytes, sum(eqn_flops(e) for e in kernel.eqns))
