"""Launch plans: a fused Program -> ordered steps over numbered buffers (JSON).

    {"buffers": [{"kind": "in"|"out"|"tmp"|"const", "index"|"offset"|"const": n,
                  "shape": [...], "dtype": "float32"}, ...],
     "workspace": bytes, "status": bool,
     "steps": [{"op": "launch", "kernel": name, "grid": g, "block": t, "args": [buf...]},
               {"op": "matmul", "lhs": buf, "rhs": buf, "out": buf,
                "dimension_numbers": [[lc, rc], [lb, rb]]},
               {"op": "copy", "dst": buf, "src": buf},
               {"op": "collective", "prim": "psum"|..., "in": buf, "out": buf, "size": n,
                "perm": [[src, dst], ...]}, {"op": "copy_atoms", "in": buf, "out": buf}]}

Graph inputs are the caller's arrays, graph outputs are written in place where a
kernel produces them (copied otherwise), intermediates live in one workspace
laid out by the CPU backend's plan_buffers (dead values' memory reused, never
within one launch: a launch is one unit). Offset 0 of the workspace holds the
status word of the serial kernels when there are any.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass

import numpy as np

from jx.ir import Literal, Var

from jx.codegen.cpu.module import plan_buffers
from jx.codegen.cpu.rowfuse import row_groups
from jx.passes.siblings import split_siblings
from jx.prims.collectives import COLLECTIVES

from .kernels import GpuModule, Launch

STATUS_BYTES = 256        # the status word's slot, keeping the rest aligned


class ConstTable:
    """Array literals that steps read from device memory (matmul operands, outputs)."""

    def __init__(self):
        self.items: list = []
        self._index: dict = {}

    def add(self, val) -> int:
        val = np.ascontiguousarray(val)
        key = (val.dtype.str, val.shape, val.tobytes())
        if key not in self._index:
            self._index[key] = len(self.items)
            self.items.append(val)
        return self._index[key]

    def manifest(self) -> list:
        return [{"shape": list(v.shape), "dtype": v.dtype.name,
                 "data": base64.b64encode(v.astype(np.uint8) if v.dtype == np.bool_
                                          else v).decode("ascii")} for v in self.items]


@dataclass(eq=False)
class _Unit:
    inputs: list
    outputs: list
    step: object            # Launch or a matmul dict with atoms


@dataclass(eq=False)
class _Units:
    graph: object
    kernels: list


def _matmul(kernel) -> _Unit:
    eqn = kernel.root
    lhs, rhs = eqn.inputs
    (out,) = eqn.outputs
    dn = [[list(x) for x in pair] for pair in eqn.params["dimension_numbers"]]
    step = {"op": "matmul", "lhs": lhs, "rhs": rhs, "out": out, "dimension_numbers": dn}
    return _Unit([a for a in (lhs, rhs) if isinstance(a, Var)], [out], step)


_BUFFER_KEYS = ("lhs", "rhs", "out", "in")


def _collective(kernel) -> _Unit:
    """A collective over the device axis: an NCCL call in the runtime (one rank per
    GPU). axis_index reads the device's index, which is the program's input."""
    eqn = kernel.root
    name = eqn.prim.name
    (out,) = eqn.outputs
    if name == "axis_index":
        step = {"op": "copy_atoms", "in": eqn.inputs[0], "out": out}
    else:
        step = {"op": "collective", "prim": name, "in": eqn.inputs[0], "out": out,
                "size": eqn.params["size"],
                "perm": [list(p) for p in eqn.params.get("perm", ())]}
    return _Unit([a for a in eqn.inputs[:1] if isinstance(a, Var)], [out], step)


def program_units(gm: GpuModule, program) -> list:
    # a block reduces one row to one value: merged sibling reductions run apart
    program = split_siblings(program)
    units = []
    for rows, members in row_groups(program):
        k = members[0]
        if rows:
            launches = gm.rows(members, rows)
        elif k.kind == "loop":
            launches = gm.loop(k)
        elif k.kind == "reduce":
            launches = gm.reduce(k)
        elif k.root.prim.name == "dot_general":
            units.append(_matmul(k))
            continue
        elif k.root.prim.name in COLLECTIVES:
            units.append(_collective(k))
            continue
        else:
            launches = gm.serial(k)
        units += [_Unit(list(ln.reads), list(ln.writes), ln) for ln in launches]
    return units


def _record(atom, **where) -> dict:
    return {**where, "shape": list(atom.aval.shape), "dtype": np.dtype(atom.aval.dtype).name}


def refuse_symbols(program) -> None:
    """The CUDA target compiles fixed sizes only: a program with symbolic ones (jx.f32
    ["B", 784]) gets an error saying so, before any kernel meets a size it cannot use."""
    from jx.dims import symbols_of
    from jx.errors import JxError
    names = symbols_of(v.aval.shape for v in program.graph.inputs)
    if names:
        raise JxError(f"the CUDA target does not take symbolic dimensions ({', '.join(names)}) "
                      "yet: give fixed sizes (e.g. --shape x=f32[128,784]), or compile for "
                      "the CPU, whose artifacts serve every size")


# Their CPU loops would run on one GPU thread (the serial fallback): correct, but
# slower than the host by orders of magnitude, so the target says no instead.
NOT_ON_GPU = frozenset({"cholesky", "triangular_solve", "lu", "qr", "eigh", "svd",
                        "conv_general_dilated", "fft_c2c", "fft_r2c", "fft_c2r",
                        "fft_z"})


def refuse_decompositions(program) -> None:
    """Matrix decompositions have no GPU kernels yet: an error naming the first one
    and where it comes from, before any code is emitted."""
    from jx.errors import JxError
    for kernel in program.kernels:
        for sub in kernel.subprograms.values():       # a Program, or a tuple (branches)
            for prog in (sub if isinstance(sub, tuple) else (sub,)):
                refuse_decompositions(prog)
        for eqn in kernel.eqns:
            if eqn.prim.name in ("real", "imag", "complex"):    # a complex boundary
                where = f" (from {eqn.source})" if eqn.source else ""
                raise JxError(f"the CUDA target does not support complex values yet{where}: "
                              "compile this function for the CPU (--target cpu, or "
                              "jx.jit(..., backend='cpu')), or pass real and imaginary parts "
                              "as separate real arrays")
            if eqn.prim.name in NOT_ON_GPU:
                where = f" (from {eqn.source})" if eqn.source else ""
                raise JxError(f"the CUDA target has no kernel for {eqn.prim.name}{where} yet: "
                              "compile this function for the CPU (--target cpu, or "
                              "jx.jit(..., backend='cpu')), which has its own kernel for it")


def plan_program(gm: GpuModule, program, consts: ConstTable) -> dict:
    g = program.graph
    refuse_symbols(program)
    refuse_decompositions(program)
    units = program_units(gm, program)
    buffers: list = []
    index: dict = {}

    def add(atom, rec) -> int:
        buffers.append(rec)
        index[id(atom)] = len(buffers) - 1
        return index[id(atom)]

    for i, v in enumerate(g.inputs):
        add(v, _record(v, kind="in", index=i))
    out_bufs, copies = [], []
    for j, a in enumerate(g.outputs):
        rec = _record(a, kind="out", index=j)
        if isinstance(a, Var) and id(a) not in index:
            out_bufs.append(add(a, rec))          # kernels write this output in place
        else:
            buffers.append(rec)
            out_bufs.append(len(buffers) - 1)
            copies.append((len(buffers) - 1, a))
    status = any(isinstance(u.step, Launch) and gm.status in u.step.args for u in units)
    fixed = {vid: True for vid in index}
    fixed[id(gm.status)] = True
    offsets, total = plan_buffers(_Units(g, units), fixed)
    pad = STATUS_BYTES if status else 0
    if status:
        add(gm.status, _record(gm.status, kind="tmp", offset=0))
    for u in units:
        for v in u.outputs:
            if id(v) not in index:
                add(v, _record(v, kind="tmp", offset=offsets[id(v)] + pad))

    def ref(atom) -> int:
        if isinstance(atom, Literal):
            key = ("const", consts.add(np.asarray(atom.val, dtype=atom.aval.dtype)))
            if key not in index:
                add_const = _record(atom, kind="const", const=key[1])
                buffers.append(add_const)
                index[key] = len(buffers) - 1
            return index[key]
        return index[id(atom)]

    steps = []
    for u in units:
        s = u.step
        if isinstance(s, Launch):
            steps.append({"op": "launch", "kernel": s.kernel, "grid": s.grid,
                          "block": s.block, "args": [ref(a) for a in s.args]})
        else:       # matmul and collective steps name their buffers by atom
            steps.append({k: ref(v) if k in _BUFFER_KEYS else v for k, v in s.items()})
    for dst, a in copies:
        if a.aval.size:
            steps.append({"op": "copy", "dst": dst, "src": ref(a)})
    return {"buffers": buffers, "workspace": total + pad, "status": status, "steps": steps,
            "outputs": out_bufs}
