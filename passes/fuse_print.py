"""Readable text for fused programs (`jx dump-ir --after fuse`): one block per
kernel with the buffers it reads and writes and its fused equations."""
from __future__ import annotations

import hashlib

import numpy as np

from jx.ir import Literal, Var
from jx.printer import _Names, _atom, _binder, format_value


def _eqn_line(eqn, names, atom=_atom) -> str:
    outs = " ".join(_binder(v, names) for v in eqn.outputs)
    plain = {k: v for k, v in eqn.params.items() if not hasattr(v, "eqns") and not (
        isinstance(v, tuple) and any(hasattr(x, "eqns") for x in v))}
    params = " ".join(f"{k}={format_value(plain[k])}" for k in sorted(plain))
    ins = " ".join(atom(a, names) for a in eqn.inputs)
    return f"{outs} = {eqn.prim.name}" + (f"[{params}]" if params else "") + \
        (f" {ins}" if ins else "")


def _cost_text(c, dims: dict | None) -> str:
    """[bytes, flops, intensity] of a kernel; symbolic sizes print as expressions,
    or as figures at `dims` ({symbol: size}; the hint sizes for the intensity)."""
    from jx.dims import Dim, active, substitute
    nbytes, flops = c.bytes, c.flops
    if dims and (isinstance(nbytes, Dim) or isinstance(flops, Dim)):
        nbytes, flops = substitute(nbytes, dims), substitute(flops, dims)
    if isinstance(nbytes, Dim) or isinstance(flops, Dim):
        at = {**active().hints(nbytes), **active().hints(flops)}
        b, f = substitute(nbytes, at), substitute(flops, at)
        shown = ", ".join(f"{k}={v}" for k, v in sorted(at.items()))
        return f"[{nbytes} B, {flops} flop, {f / b if b else 0.0:.2f} flop/B at {shown}]"
    return f"[{nbytes} B, {flops} flop, {flops / nbytes if nbytes else 0.0:.2f} flop/B]"


def _program_lines(program, names, stats: bool, dims: dict | None = None) -> list:
    g = program.graph
    lines = [f"program({', '.join(_binder(v, names) for v in g.inputs)}) {{"]
    for i, k in enumerate(program.kernels):
        reads = ", ".join(names(v) for v in k.inputs) or "-"
        roots = "+".join(r.prim.name for r in getattr(k, "roots", [k.root]))
        head = f"  kernel {i} {k.kind} {roots}: reads {reads}"
        if stats:
            from .cost import kernel_cost
            head += "  " + _cost_text(kernel_cost(k), dims)
        lines.append(head)
        for e in k.eqns:
            lines.append("    " + _eqn_line(e, names))
        for label, sub in sorted(k.subprograms.items()):
            subs = sub if isinstance(sub, tuple) else (sub,)
            for j, sp in enumerate(subs):
                tag = f"{label}[{j}]" if isinstance(sub, tuple) else label
                body = _program_lines(sp, names, stats, dims)
                lines.append(f"      {tag} = {body[0]}")
                lines.extend("      " + ln for ln in body[1:])
    lines.append(f"  return ({', '.join(_atom(a, names) for a in g.outputs)})")
    lines.append("}")
    return lines


def format_program(program, stats: bool = False, dims: dict | None = None) -> str:
    return "\n".join(_program_lines(program, _Names(), stats, dims))


# ------------------------------------------------------------ kernel signatures
_PLAIN = (bool, int, float, str, bytes, type(None), np.dtype, np.generic)


def _plain(v) -> bool:
    """A param whose text says all there is to it (no graph, function or object)."""
    if isinstance(v, tuple):
        return all(_plain(x) for x in v)
    return isinstance(v, _PLAIN) or (isinstance(v, type) and issubclass(v, np.generic))


def _value_key(v):
    """A param as an exact, hashable key (floats by their bits: -0.0 is not 0.0)."""
    if isinstance(v, tuple):
        return tuple(_value_key(x) for x in v)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, float):
        return ("f", v.hex())
    if isinstance(v, np.generic):
        return (v.dtype.str, v.tobytes())
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    if isinstance(v, type):
        return ("type", v.__name__)
    return v


class _Keys:
    """Vars numbered by first appearance; avals and literals by exact value."""

    def __init__(self):
        self.index: dict = {}

    def var(self, v) -> int:
        return self.index.setdefault(id(v), len(self.index))

    def binder(self, v) -> tuple:
        return (self.var(v), v.aval.shape, np.dtype(v.aval.dtype).str)

    def atom(self, a):
        if isinstance(a, Literal):
            arr = np.ascontiguousarray(np.asarray(a.val, dtype=a.aval.dtype))
            data = arr.tobytes() if arr.size <= 64 else hashlib.sha1(arr.tobytes()).digest()
            return ("lit", arr.shape, arr.dtype.str, data)
        return self.var(a)


def _kernel_key(k, keys: _Keys) -> tuple | None:
    if k.subprograms or not all(_plain(v) for e in k.eqns for v in e.params.values()):
        return None
    head = (k.kind, tuple(r.prim.name for r in k.roots), tuple(keys.var(v) for v in k.inputs),
            tuple(keys.var(v) for v in k.outputs))
    body = tuple((e.prim.name, tuple(sorted((n, _value_key(v)) for n, v in e.params.items())),
                  tuple(keys.atom(a) for a in e.inputs),
                  tuple(keys.binder(v) for v in e.outputs)) for e in k.eqns)
    tail = None
    if k.epilogue is not None:
        tail = _kernel_key(k.epilogue, keys)
        if tail is None:
            return None
    return head, body, tail


def kernel_signature(members: list, atoms: list, rows: tuple = ()) -> tuple | None:
    """A key that two kernels (or row groups) share exactly when one compiled
    function computes both, called with each one's buffers (`atoms`, in the
    function's parameter order): structure, shapes, dtypes, params and constant
    values, with buffers numbered by position. None for kernels holding
    sub-programs or non-data params, which are never shared."""
    keys = _Keys()
    parts = [tuple(rows), tuple(keys.binder(a) if isinstance(a, Var) else keys.atom(a)
                                for a in atoms)]
    for k in members:
        part = _kernel_key(k, keys)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)
