"""Greedy shrinking of a failing program, and writing it out as a pytest file.

An edit is kept when the smaller program still fails with the same
(engine, kind) signature. Edits, tried in order until none applies: drop an
output; forward an operand in place of a statement (the statement goes);
replace a statement by zeros of its type; shrink an input dimension.
Candidates that jx cannot even trace are discarded before they reach a worker.
"""
from __future__ import annotations

import os
import re

import numpy as np

from .program import Block, Program, Stmt, Var, dce, rename
from .values import literal, make_inputs


def _blocks(block: Block) -> list:
    out = [block]
    for s in block.stmts:
        for b in s.bodies:
            out += _blocks(b)
    return out


def _edits(prog: Program) -> list:
    edits = [("drop_out", k) for k in range(len(prog.block.outs) - 1, -1, -1)]
    for bi, b in enumerate(_blocks(prog.block)):
        for si in range(len(b.stmts) - 1, -1, -1):
            s = b.stmts[si]
            for ai in range(len(s.args)):
                edits.append(("forward", bi, si, ai))
            for b2 in range(len(s.bodies)):
                edits.append(("body_out", bi, si, b2))
            if s.op not in ("const",):
                edits.append(("zero", bi, si))
    for ii, inp in enumerate(prog.inputs):
        for ax, d in enumerate(inp.var.shape):
            for nd in sorted({1, d // 2, d - 1} - {d}):
                if 0 < nd < d:
                    edits.append(("dim", ii, ax, nd))
        if inp.kind not in ("index", "small") and inp.var.dtype != "bool":
            edits.append(("kind", ii, "small" if inp.var.dtype[0] in "iu" else "normal"))
    return edits


def _apply(prog: Program, edit: tuple) -> Program | None:
    p = prog.copy()
    blocks = _blocks(p.block)
    kind = edit[0]
    if kind == "drop_out":
        if len(p.block.outs) <= 1:
            return None
        del p.block.outs[edit[1]]
    elif kind == "forward":
        b = blocks[edit[1]]
        s = b.stmts[edit[2]]
        arg = s.args[edit[3]]
        del b.stmts[edit[2]]
        rename(b, s.out.name, arg)
    elif kind == "body_out":           # the statement becomes its body's result
        b = blocks[edit[1]]
        s = b.stmts[edit[2]]
        body = s.bodies[edit[3]]
        local = {v.name for v in body.params}
        if any(n in local for n in body.outs[:1]) or not body.stmts:
            return None
        b.stmts[edit[2]:edit[2] + 1] = body.stmts
        rename(b, s.out.name, body.outs[0])
    elif kind == "zero":
        b = blocks[edit[1]]
        s = b.stmts[edit[2]]
        b.stmts[edit[2]] = Stmt(s.out, "const", [], {
            "expr": f"jnp.zeros({tuple(s.out.shape)!r}, {s.out.dtype!r})"})
    elif kind == "dim":
        inp = p.inputs[edit[1]]
        shape = list(inp.var.shape)
        shape[edit[2]] = edit[3]
        inp.var.shape = tuple(shape)
    elif kind == "kind":
        p.inputs[edit[1]].kind = edit[2]
    dce(p.block)
    used = _used_inputs(p)
    p.inputs = [i for i in p.inputs if i.var.name in used]
    p.block.params = [i.var for i in p.inputs]
    return p


def _used_inputs(p: Program) -> set:
    from .program import used_names
    names = set()
    for b in _blocks(p.block):
        names |= used_names(b)
    return names


def traces(prog: Program) -> bool:
    """Whether jx can trace prog at its input types (cheap, in this process)."""
    import jx
    from .engines import _compile, jx_namespace
    try:
        fn = _compile(prog.source, jx_namespace())
        jx.make_graph(fn)(*[jx.ShapeDtypeStruct(i.var.shape, i.var.dtype) for i in prog.inputs])
        return True
    except Exception:  # noqa: BLE001
        return False


def shrink(prog: Program, sig: tuple, runner, budget: int = 150, batch: int = 2) -> tuple:
    """(smallest program found that still fails with signature sig, its result,
    candidate runs spent). runner.map(programs) yields (program, result)."""
    from .worker import signatures
    best, best_res, spent = prog, None, 0
    progress = True
    while progress and spent < budget:
        progress = False
        cands = []
        for e in _edits(best):
            c = _apply(best, e)
            if c is not None and (c.source != best.source or e[0] in ("dim", "kind")):
                cands.append(c)
        i = 0
        while i < len(cands) and spent < budget:
            chunk = [c for c in cands[i:i + batch] if traces(c)]
            i += batch
            if not chunk:
                continue
            spent += len(chunk)
            hits = {}
            for c, res in runner.map(chunk):
                if sig in signatures(res):
                    hits[id(c)] = (c, res)
            for c in chunk:                 # the first in edit order wins
                if id(c) in hits:
                    best, best_res = hits[id(c)]
                    progress = True
                    break
            if progress:
                break
    return best, best_res, spent


# ---------------------------------------------------------------- regression tests

def test_file(prog: Program, failure: dict) -> str:
    """A ready pytest file that reproduces failure on prog."""
    from .program import var_table
    engine, kind = failure["engine"], failure["kind"]
    table = var_table(prog.block)
    errs = [table[n].err if n in table else 0.0 for n in prog.block.outs]
    inputs = make_inputs(prog)
    lits = []
    for x, inp in zip(inputs, prog.inputs):
        if x.size <= 4096:
            lits.append(literal(x))
        else:
            lits.append(f"make_input({prog.seed}, {prog.inputs.index(inp)}, "
                        f"Input(Var({inp.var.name!r}, {inp.var.shape!r}, {inp.var.dtype!r}), "
                        f"{inp.kind!r}, {inp.bound}))")
    tag = re.sub(r"\W+", "_", f"{engine}_{kind}").strip("_").lower()
    detail = failure.get("detail", "").replace('"""', "'''")
    body = [
        f'"""jx.fuzz finding (seed {prog.seed}): engine {engine!r}, {kind}.',
        "",
        f"    {detail}",
        "",
        "Shrunk by jx.fuzz; rerun the seed with `python -m jx.fuzz --seed "
        f"{prog.seed} --programs 1`.",
        '"""',
        "import subprocess",
        "import sys",
        "",
        "import numpy as np",
        "import pytest",
        "",
        "import jx  # noqa: F401  (registers bfloat16 with NumPy)",
        "from jx.fuzz.compare import compare",
        "from jx.fuzz.engines import ENGINES, run_jax",
        "from jx.fuzz.program import Input, Var  # noqa: F401",
        "from jx.fuzz.values import make_input  # noqa: F401",
        "",
        f"SEED = {prog.seed}",
        f"SOURCE = '''\\\n{prog.source}'''",
        f"ERRS = {errs!r}",
        "",
        "",
        "def inputs():",
        "    return [" + (",\n            ".join(lits)) + "]",
        "",
        "",
    ]
    if kind in ("crash", "timeout"):
        body += [
            f"def test_fuzz_seed_{prog.seed}_{tag}():",
            "    # run in a child process: the failure takes the process down or hangs",
            "    code = f'exec(open({__file__!r}).read()); run()'",
            "    proc = subprocess.run([sys.executable, '-c', code], timeout=120)",
            "    assert proc.returncode == 0, f'{proc.returncode=}'",
            "",
            "",
            "def run():",
            f"    engine = {engine!r}",
            "    xs = inputs()",
            "    ref = ENGINES['ref'](SOURCE, xs)",
            "    got = run_jax(SOURCE, xs) if engine == 'jax' else ENGINES[engine](SOURCE, xs)",
            "    assert len(got) == len(ref)",
        ]
    else:
        body += [
            f"def test_fuzz_seed_{prog.seed}_{tag}():",
        ]
        if engine == "jax" or kind.startswith("error") and engine == "ref":
            body.append("    pytest.importorskip('jax')")
        body += [
            "    xs = inputs()",
            "    with np.errstate(all='ignore'):",
            "        ref = ENGINES['ref'](SOURCE, xs)           # eager NumPy reference",
        ]
        if engine == "ref":
            body.append("        got = run_jax(SOURCE, xs)")
        elif engine == "jax":
            body.append(f"        got = run_jax(SOURCE, xs, {prog.uses_f64()!r})")
        else:
            body.append(f"        got = ENGINES[{engine!r}](SOURCE, xs)")
        body += [
            "    assert len(got) == len(ref)",
            "    for r, g, e in zip(ref, got, ERRS):",
            f"        bad = compare(r, g, e, same_kind_only={engine == 'jax' and prog.uses_f64()!r})",
            "        assert bad is None, bad",
        ]
    return "\n".join(body) + "\n"


def write_test(prog: Program, failure: dict, out_dir: str) -> str:
    os.makedirs(out_dir, exist_ok=True)
    tag = re.sub(r"\W+", "_", f"{failure['engine']}_{failure['kind']}").strip("_").lower()
    path = os.path.join(out_dir, f"test_fuzz_{prog.seed}_{tag}.py")
    with open(path, "w") as fh:
        fh.write(test_file(prog, failure))
    return path


__all__ = ["shrink", "write_test", "test_file", "traces", "Var", "np"]
