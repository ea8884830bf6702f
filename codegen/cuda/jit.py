"""In-process compilation for jx.jit(f, backend="cuda"): one fused program ->
PTX for this GPU -> a CuPy module and an Executor running the launch plan."""
from __future__ import annotations

import numpy as np

from jx.runtime.cuda import Executor, device_arch, import_cupy, load_module, upload_consts

from .kernels import GpuModule
from .plan import ConstTable, plan_program
from .target import compile_ptx


def array_type():
    """CuPy's ndarray (the jit fast path's key type), or NumPy's without CuPy."""
    try:
        import cupy
        return cupy.ndarray
    except ImportError:
        return np.ndarray


def abstract(tree):
    """Device arrays inside tuples/lists/dicts replaced by jx.ShapeDtypeStruct, so
    tracing and cache keys never touch device memory."""
    from jx.api import ShapeDtypeStruct
    from jx.dtypes import canonical
    if hasattr(tree, "__cuda_array_interface__"):   # data: in the mode's dtypes, as on the CPU
        return ShapeDtypeStruct(tree.shape, canonical(tree.dtype))
    if isinstance(tree, (tuple, list)):
        return type(tree)(abstract(x) for x in tree)
    if isinstance(tree, dict):
        return {k: abstract(v) for k, v in tree.items()}
    return tree


def leaf_aval(x):
    from jx.api import leaf_aval as host_aval
    return host_aval(abstract(x))


class CompiledFunction:
    """Calls the plan on flat leaves (CuPy or NumPy arrays, or scalars); returns
    CuPy arrays."""

    def __init__(self, program, name: str = "fn", arch: str | None = None):
        cp = import_cupy("jx.jit(..., backend='cuda')")
        self.cp = cp
        gm = GpuModule(name)
        consts = ConstTable()
        self.plan = plan_program(gm, program, consts)
        self.ir_text = str(gm.module)
        self.arch = arch or device_arch(cp)
        self.ptx = compile_ptx(self.ir_text, self.arch)
        self.module = load_module(cp, self.ptx)
        self.executor = Executor(cp, self.module, self.plan,
                                 upload_consts(cp, consts.manifest(), name), f"jit {name}")
        g = program.graph
        self.in_specs = [(v.aval.shape, np.dtype(v.aval.dtype)) for v in g.inputs]

    def __call__(self, *leaves) -> list:
        cp = self.cp
        args = []
        for x, (shape, dtype) in zip(leaves, self.in_specs):
            if type(x) is not cp.ndarray or x.dtype != dtype or not x.flags.c_contiguous \
                    or x.data.ptr & 15:
                x = cp.array(cp.asarray(x) if isinstance(x, cp.ndarray) else
                             np.asarray(x, dtype=dtype), dtype=dtype, order="C")
            if x.shape != shape:
                x = x.reshape(shape)
            args.append(x)
        return self.executor.run(args)
