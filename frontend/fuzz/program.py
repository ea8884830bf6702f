"""A fuzz program: typed statements in blocks, rendered to Python source.

One operation per statement (SSA), so the shrinker can drop a statement or
forward one of its operands by renaming. Control flow and transformations
carry their bodies as nested blocks, rendered as nested `def`s that may close
over outer variables.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import numpy as np

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int32", "uint8", "uint32")
DTYPES = FLOATS + INTS + ("bool",)


@dataclass
class Var:
    name: str
    shape: tuple
    dtype: str
    exact: bool = True      # no rounding on its path: safe under floor, compare, argmax
    err: float = 0.0        # bound on its error relative to its scale (the tolerance)


@dataclass
class Input:
    var: Var
    kind: str = "normal"    # how its values are drawn (see values.make_input)
    bound: int = 0          # for kind "index": the extent indexed


@dataclass
class Stmt:
    out: Var
    op: str
    args: list              # names of operand variables
    params: dict = field(default_factory=dict)
    bodies: list = field(default_factory=list)


@dataclass
class Block:
    params: list            # Vars
    stmts: list
    outs: list              # names


@dataclass
class Program:
    seed: int
    inputs: list            # Inputs
    block: Block            # its params are the inputs' vars
    x64: bool = False       # JAX runs it with x64 on: fixed at generation, so a
                            # shrunk program keeps the mode it failed in

    def copy(self) -> "Program":
        return copy.deepcopy(self)

    @property
    def source(self) -> str:
        return render(self)

    def uses_f64(self) -> bool:
        return self.x64 or "float64" in {v.dtype for v in all_vars(self.block)}

    def ops(self) -> list:
        return sorted({s.op if s.op != "un" else s.params.get("f", "un")
                       for s in all_stmts(self.block)})

    def size(self) -> int:
        return sum(1 for _ in all_stmts(self.block)) + sum(
            int(np.prod(i.var.shape, dtype=np.int64)) > 1 for i in self.inputs)


def all_stmts(block: Block):
    for s in block.stmts:
        yield s
        for b in s.bodies:
            yield from all_stmts(b)


def all_vars(block: Block):
    yield from block.params
    for s in block.stmts:
        yield s.out
        for b in s.bodies:
            yield from all_vars(b)


def var_table(block: Block) -> dict:
    return {v.name: v for v in all_vars(block)}


# ---------------------------------------------------------------- rendering

def _dt(d: str) -> str:
    return repr(d)


def render_expr(s: Stmt, a: list, fns: list) -> str:
    """The right-hand side of statement s, operands named a, bodies named fns."""
    p, op = s.params, s.op
    if op == "un":
        return f"{p.get('mod', 'jnp')}.{p['f']}({a[0]})"
    if op == "bin":
        return f"jnp.{p['f']}({a[0]}, {a[1]})"
    if op == "binop":
        return f"({a[0]} {p['sym']} {a[1]})"
    if op == "scalar":
        return f"({a[0]} {p['sym']} {p['c']!r})" if not p.get("left") else \
            f"({p['c']!r} {p['sym']} {a[0]})"
    if op == "idiv":
        return f"jnp.{p['f']}({a[0]}, ({a[1]} & 7) + 1)"
    if op == "shift":
        return f"jnp.{p['f']}({a[0]}, {a[1]} & {p['mask']})"
    if op == "where":
        return f"jnp.where({a[0]}, {a[1]}, {a[2]})"
    if op == "select":
        return f"lax.select({a[0]}, {a[1]}, {a[2]})"
    if op == "cast":
        return f"{a[0]}.astype({_dt(p['dtype'])})"
    if op == "castclip":
        return (f"jnp.clip(jnp.nan_to_num({a[0]}), {p['lo']}, {p['hi']})"
                f".astype({_dt(p['dtype'])})")
    if op == "clip":
        return f"jnp.clip({a[0]}, {p['lo']!r}, {p['hi']!r})"
    if op == "red":
        kd = ", keepdims=True" if p.get("keepdims") else ""
        return f"jnp.{p['f']}({a[0]}, axis={p['axis']!r}{kd})"
    if op == "argred":
        return f"jnp.{p['f']}({a[0]}, axis={p['axis']!r})"
    if op == "cum":
        return f"jnp.{p['f']}({a[0]}, axis={p['axis']})"
    if op == "sort":
        return f"jnp.sort({a[0]}, axis={p['axis']})"
    if op == "reshape":
        return f"jnp.reshape({a[0]}, {tuple(p['shape'])!r})"
    if op == "transpose":
        return f"jnp.transpose({a[0]}, {tuple(p['perm'])!r})"
    if op == "bcast":
        return f"jnp.broadcast_to({a[0]}, {tuple(p['shape'])!r})"
    if op == "concat":
        return f"jnp.concatenate([{', '.join(a)}], axis={p['axis']})"
    if op == "slice":
        return f"{a[0]}[{p['idx']}]"
    if op == "squeeze":
        return f"jnp.squeeze({a[0]}, axis={p['axis']})"
    if op == "expand":
        return f"jnp.expand_dims({a[0]}, {p['axis']})"
    if op == "flip":
        return f"jnp.flip({a[0]}, axis={p['axis']})"
    if op == "pad":
        return f"jnp.pad({a[0]}, {p['widths']!r})"
    if op == "lpad":
        return f"lax.pad({a[0]}, jnp.zeros((), {a[0]}.dtype), {p['config']!r})"
    if op == "gather":          # x[idx] along an axis, idx an int array or constant list
        ix = a[1] if len(a) > 1 else f"jnp.array({p['const']!r}, 'int32')"
        return f"{a[0]}[{':, ' * p['axis']}{ix}]"
    if op == "scatter":
        ix = a[1] if p.get("const") is None else f"jnp.array({p['const']!r}, 'int32')"
        return f"{a[0]}.at[{':, ' * p['axis']}{ix}].{p['mode']}({a[-1]})"
    if op == "dslice":
        starts = ", ".join(a[1:]) + ("," if len(a) == 2 else "")
        return f"lax.dynamic_slice({a[0]}, ({starts}), {tuple(p['sizes'])!r})"
    if op == "dus":
        starts = ", ".join(a[2:]) + ("," if len(a) == 3 else "")
        return f"lax.dynamic_update_slice({a[0]}, {a[1]}, ({starts}))"
    if op == "dot":
        return f"jnp.{p['f']}({a[0]}, {a[1]})"
    if op == "const":
        return p["expr"]
    if op == "random":
        key = f"jx.random.PRNGKey({p['seed']})"
        if p.get("fold"):
            key = f"jx.random.fold_in({key}, {a[0]})"
        if p.get("split"):
            key = f"jx.random.split({key})[{p['split'] - 1}]"
        return f"jx.random.{p['f']}({key}, {tuple(p['shape'])!r}, {_dt(p['dtype'])})"
    if op == "coerce":
        return f"jnp.broadcast_to(jnp.asarray({a[0]}, {_dt(p['dtype'])}), {tuple(p['shape'])!r})"
    if op == "cond":
        return f"lax.cond(jnp.any({a[0]} != 0), {fns[0]}, {fns[1]}, {a[1]})"
    if op == "fori":
        return f"lax.fori_loop(0, {p['n']}, {fns[0]}, {a[0]})"
    if op == "while":
        return (f"lax.while_loop(lambda s: s[0] < {p['n']}, lambda s: (s[0] + 1, "
                f"{fns[0]}(s[0], s[1])), (0, {a[0]}))[1]")
    if op == "scan":
        return f"lax.scan({fns[0]}, {a[0]}, {a[1]})[{p['which']}]"
    if op == "grad":
        return f"jx.grad({fns[0]})({a[0]})"
    if op == "vmap":
        return f"jx.vmap({fns[0]}, in_axes={p['axis']})({a[0]})"
    if op == "jvp":
        return f"jx.jvp({fns[0]}, ({a[0]},), ({a[1]},))[{p['which']}]"
    if op == "gradvmap":
        return f"jx.grad(lambda q: jnp.sum(jx.vmap({fns[0]})(q)))({a[0]})"
    if op == "vmapgrad":
        return f"jx.vmap(jx.grad({fns[0]}))({a[0]})"
    raise ValueError(f"unknown fuzz op {op!r}")


def render_block(block: Block, name: str, indent: str) -> list:
    lines = [f"{indent}def {name}({', '.join(v.name for v in block.params)}):"]
    inner = indent + "    "
    for s in block.stmts:
        fns = []
        for k, b in enumerate(s.bodies):
            fn = f"fn_{s.out.name}" + (f"_{k}" if len(s.bodies) > 1 else "")
            lines += render_block(b, fn, inner)
            fns.append(fn)
        lines.append(f"{inner}{s.out.name} = {render_expr(s, s.args, fns)}")
    outs = block.outs
    ret = outs[0] if len(outs) == 1 and indent else f"({', '.join(outs)},)"
    lines.append(f"{inner}return {ret}")
    return lines


def render(prog: Program) -> str:
    return "\n".join(render_block(prog.block, "f", "")) + "\n"


# ---------------------------------------------------------------- editing

def rename(block: Block, old: str, new: str) -> None:
    """Replace uses of variable `old` by `new` in block and its bodies."""
    pat = re.compile(rf"\b{re.escape(old)}\b")
    for s in block.stmts:
        s.args = [new if x == old else x for x in s.args]
        for b in s.bodies:
            rename(b, old, new)
        if s.op == "const":
            s.params["expr"] = pat.sub(new, s.params["expr"])
    block.outs = [new if x == old else x for x in block.outs]


def used_names(block: Block) -> set:
    used = set(block.outs)
    for s in block.stmts:
        used.update(s.args)
        for b in s.bodies:
            used |= used_names(b)
    return used


def dce(block: Block) -> None:
    """Drop statements nothing uses (bodies first)."""
    for s in block.stmts:
        for b in s.bodies:
            dce(b)
    changed = True
    while changed:
        used = used_names(block)
        keep = [s for s in block.stmts if s.out.name in used]
        changed = len(keep) != len(block.stmts)
        block.stmts = keep
