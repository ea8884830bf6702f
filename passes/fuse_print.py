"""Readable text for fused programs (`jx dump-ir --after fuse`): one block per
kernel with the buffers it reads and writes and its fused equations."""
from __future__ import annotations

from jx.printer import _Names, _atom, _binder, format_value


def _eqn_line(eqn, names) -> str:
    outs = " ".join(_binder(v, names) for v in eqn.outputs)
    plain = {k: v for k, v in eqn.params.items() if not hasattr(v, "eqns") and not (
        isinstance(v, tuple) and any(hasattr(x, "eqns") for x in v))}
    params = " ".join(f"{k}={format_value(plain[k])}" for k in sorted(plain))
    ins = " ".join(_atom(a, names) for a in eqn.inputs)
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
