"""In-process compilation for jx.jit: one fused program -> a native function
called through ctypes with arrays of buffer pointers."""
from __future__ import annotations

import ctypes

import numpy as np

from jx.runtime.abi import STATUS

from .compiler import JitModule
from .module import ModuleBuilder

_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)


class CompiledFunction:
    """Calls the entry on flat NumPy arrays; outputs are freshly allocated."""

    def __init__(self, program, name: str = "fn"):
        mb = ModuleBuilder(name)
        symbol = mb.entry(name, program)
        self.ir_text = mb.text()
        self.jit = JitModule(self.ir_text)
        self.fn = _ENTRY(self.jit.address(symbol))
        g = program.graph
        self.in_avals = [v.aval for v in g.inputs]
        self.out_specs = [(a.aval.shape, a.aval.dtype) for a in g.outputs]
        self.in_ptrs = (ctypes.c_void_p * max(len(g.inputs), 1))()
        self.out_ptrs = (ctypes.c_void_p * max(len(g.outputs), 1))()

    def __call__(self, *args) -> list:
        ins = self.in_ptrs
        keep = []
        for i, (x, aval) in enumerate(zip(args, self.in_avals)):
            a = np.asarray(x, dtype=aval.dtype)      # (ascontiguousarray would make 0-d 1-d)
            if not a.flags.c_contiguous:
                a = a.copy()
            if a.shape != aval.shape:
                raise ValueError(f"input {i} has shape {a.shape}, expected {aval.shape}")
            keep.append(a)
            ins[i] = a.__array_interface__["data"][0]
        outs = [np.empty(shape, dtype) for shape, dtype in self.out_specs]
        for j, o in enumerate(outs):
            self.out_ptrs[j] = o.__array_interface__["data"][0]
        status = self.fn(ins, self.out_ptrs)
        if status:
            name, meaning = STATUS.get(status, ("?", "unknown status"))
            raise RuntimeError(f"compiled function failed with status {status} ({name}: "
                               f"{meaning})")
        return outs
