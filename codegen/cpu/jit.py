"""In-process compilation for jx.jit: one fused program -> a native function
called through ctypes with arrays of buffer pointers."""
from __future__ import annotations

import ctypes

import numpy as np

from jx.runtime import pool
from jx.runtime.abi import STATUS
from jx.runtime.entry import _data_ptr as data_ptr

from .compiler import JitModule
from .module import ModuleBuilder

_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)



class CompiledFunction:
    """Calls the entry on flat NumPy arrays; outputs are freshly allocated."""

    def __init__(self, program, name: str = "fn"):
        from . import parallel
        from .target import jit_cpu
        cpu = jit_cpu()
        mb = ModuleBuilder(name, parallel=parallel.available(), cpu=cpu)
        symbol = mb.entry(name, program)
        self.ir_text = mb.text()
        self.jit = JitModule(self.ir_text, cpu)
        self.fn = _ENTRY(self.jit.address(symbol))
        g = program.graph
        self.in_avals = [v.aval for v in g.inputs]
        self.out_specs = [(a.aval.shape, a.aval.dtype) for a in g.outputs]

        self._call = self._make_call()

    def _make_call(self):
        """The per-call closure, constants bound as locals (see runtime/entry.py)."""
        in_checks = tuple((a.shape, a.dtype) for a in self.in_avals)
        out_specs = tuple((pool.allocator(s, d), s, d) for s, d in self.out_specs)
        n_in = len(in_checks)
        table_type = ctypes.c_void_p * max(1, n_in + len(out_specs))
        out_offset = n_in * ctypes.sizeof(ctypes.c_void_p)
        fn, ndarray, addressof = self.fn, np.ndarray, ctypes.addressof
        # pointer tables not in use: a call owns the one it pops (the foreign call
        # releases the GIL, so calls from several threads overlap)
        tables: list = []

        def call(*args):
            table = tables.pop() if tables else table_type()
            keep = []
            for i, (x, (shape, dtype)) in enumerate(zip(args, in_checks)):
                if type(x) is not ndarray or x.dtype != dtype or not x.flags.c_contiguous:
                    x = np.ascontiguousarray(np.asarray(x, dtype=dtype)).reshape(shape)
                    keep.append(x)                    # alive until the call returns
                elif x.shape != shape:
                    raise ValueError(f"input {i} has shape {x.shape}, expected {shape}")
                table[i] = data_ptr(x)
            outs = [empty(shape, dtype) for empty, shape, dtype in out_specs]
            for j, o in enumerate(outs):
                table[n_in + j] = data_ptr(o)
            base = addressof(table)
            status = fn(base, base + out_offset)
            tables.append(table)
            if status:
                name, meaning = STATUS.get(status, ("?", "unknown status"))
                raise RuntimeError(f"compiled function failed with status {status} "
                                   f"({name}: {meaning})")
            return outs

        return call

    def __call__(self, *args) -> list:
        return self._call(*args)
