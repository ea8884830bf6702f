"""Readable text for fused programs (`jx dump-ir --after fuse`): one block per
kernel with the buffers it reads and writes and its fused equations."""
from __future__ import annotations

import hashlib

import numpy as np

from jx.ir import Literal
from jx.printer import _Names, _atom, _binder, format_value


def _eqn_line(eqn, names, atom=_atom) -> str:
    outs = " ".join(_binder(v, names) for v in eqn.outputs)
    plain = {k: v for k, v in eqn.params.items() if not hasattr(v, "eqns") and not (
        isinstance(v, tuple) and any(hasattr(x, "eqns") for x in v))}
    params = " ".join(f"{k}={format_value(plain[k])}" for k in sorted(plain))
    ins = " ".join(atom(a, names) for a in eqn.inputs)
    return f"{outs} = {eqn.prim.name}" + (f"[{params}]" if params else "") + \
        (f" {ins}" if ins else "")


def _program_lines(program, names, stats: bool) -> list:
    g = program.graph
    lines = [f"program({', '.join(_binder(v, names) for v in g.inputs)}) {{"]
    for i, k in enumerate(program.kernels):
        reads = ", ".join(names(v) for v in k.inputs) or "-"
        roots = "+".join(r.prim.name for r in getattr(k, "roots", [k.root]))
        head = f"  kernel {i} {k.kind} {roots}: reads {reads}"
        if stats:
            from .cost import kernel_cost
            c = kernel_cost(k)
            ai = c.flops / c.bytes if c.bytes else 0.0
            head += f"  [{c.bytes} B, {c.flops} flop, {ai:.2f} flop/B]"
        lines.append(head)
        for e in k.eqns:
            lines.append("    " + _eqn_line(e, names))
        for label, sub in sorted(k.subprograms.items()):
            subs = sub if isinstance(sub, tuple) else (sub,)
            for j, sp in enumerate(subs):
                tag = f"{label}[{j}]" if isinstance(sub, tuple) else label
                body = _program_lines(sp, names, stats)
                lines.append(f"      {tag} = {body[0]}")
                lines.extend("      " + ln for ln in body[1:])
    lines.append(f"  return ({', '.join(_atom(a, names) for a in g.outputs)})")
    lines.append("}")
    return lines


def format_program(program, stats: bool = False) -> str:
    return "\n".join(_program_lines(program, _Names(), stats))


# ------------------------------------------------------------ kernel signatures
_PLAIN = (bool, int, float, str, bytes, type(None), np.dtype, np.generic)


def _plain(v) -> bool:
    """A param whose text says all there is to it (no graph, function or object)."""
    if isinstance(v, tuple):
        return all(_plain(x) for x in v)
    return isinstance(v, _PLAIN) or (isinstance(v, type) and issubclass(v, np.generic))


def _valued_atom(a, names) -> str:
    if isinstance(a, Literal) and np.ndim(a.val):
        arr = np.ascontiguousarray(a.val)
        return f"const<{a.aval}:{hashlib.sha1(arr.tobytes()).hexdigest()}>"
    return _atom(a, names)


def _kernel_lines(k, names) -> list | None:
    if k.subprograms or not all(_plain(v) for e in k.eqns for v in e.params.values()):
        return None
    lines = [f"{k.kind} {'+'.join(r.prim.name for r in k.roots)} "
             f"reads {' '.join(names(v) for v in k.inputs)} "
             f"writes {' '.join(names(v) for v in k.outputs)}"]
    lines += [_eqn_line(e, names, _valued_atom) for e in k.eqns]
    if k.epilogue is not None:
        tail = _kernel_lines(k.epilogue, names)
        if tail is None:
            return None
        lines += ["epilogue"] + tail
    return lines


def kernel_signature(members: list, atoms: list, rows: tuple = ()) -> str | None:
    """Text that two kernels (or row groups) share exactly when one compiled
    function computes both, called with each one's buffers (`atoms`, in the
    function's parameter order): structure, shapes, dtypes, params and constant
    values, with buffers named by position. None for kernels holding sub-programs
    or non-data params, which are never shared."""
    names = _Names()
    lines = [f"rows {rows} " + " ".join(_binder(a, names) for a in atoms)]
    for k in members:
        more = _kernel_lines(k, names)
        if more is None:
            return None
        lines += more
    return "\n".join(lines)
