"""Compile cost as programs grow (issue 31): the first call of a jitted function
(trace + transform + compile + run) on jx and JAX, each in a fresh process, at
growing sizes of four program shapes written against JAX's API:

  chain     N elementwise ops (sin, *, tanh, +) on f32[4096], one after another
  branches  N independent `tanh(x @ w_i).sum()` branches summed (16x32 @ 32x32)
  rk2       N Python-unrolled RK2 steps of a {"q", "p"} state, f32[64]
  mlp_grad  jit(grad(loss)) of an N-layer tanh MLP (16 wide, a dict of 2N leaves)

    jx bench --suite compile [--only NAME] [--out FILE.md]

jx starts from an empty object cache each time (its C runtime and the host's
tuned constants are copied in, as on a machine that compiled something before);
JAX runs without its persistent cache. The report gives the jx/JAX ratio of the
first-call times and jx's time per equation of the traced program at each size.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

from jx import timings

from . import machine
from .corpus import parse_args, publish

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = {"chain": (50, 200, 1000, 4000), "branches": (64, 256), "rk2": (10, 50, 200),
         "mlp_grad": (10, 100)}

# One program per shape, written against JAX; {np} is numpy, {jax} the engine's module.
PROGRAM = textwrap.dedent('''
    import json, sys, time
    import numpy as np
    if sys.argv[1] == "jx":
        import jx as jax
        import jx.numpy as jnp
    else:
        import jax
        import jax.numpy as jnp
    kind, n = sys.argv[2], int(sys.argv[3])
    rng = np.random.default_rng(0)
    if kind == "chain":
        def f(x):
            for i in range(n):
                k = i % 4
                x = jnp.sin(x) if k == 0 else jnp.tanh(x) if k == 1 else \\
                    x * 1.01 if k == 2 else x + 0.1
            return x
        args = (rng.standard_normal(4096).astype(np.float32),)
    elif kind == "branches":
        def f(x, w):
            return sum(jnp.tanh(x @ (w * (1 + i / n))).sum() for i in range(n))
        args = (rng.standard_normal((16, 32)).astype(np.float32),
                rng.standard_normal((32, 32)).astype(np.float32))
    elif kind == "rk2":
        def f(s, h=0.01):
            def d(s):
                return {"q": s["p"], "p": -jnp.sin(s["q"])}
            for _ in range(n):
                k1 = d(s)
                k2 = d({k: s[k] + 0.5 * h * k1[k] for k in s})
                s = {k: s[k] + h * k2[k] for k in s}
            return s
        args = ({"q": rng.standard_normal(64).astype(np.float32),
                 "p": np.zeros(64, np.float32)},)
    else:
        def loss(p, x):
            for i in range(n):
                x = jnp.tanh(x @ p["w%d" % i] + p["b%d" % i])
            return (x ** 2).sum()
        f = jax.grad(loss)
        p = {"w%d" % i: (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)
             for i in range(n)}
        p.update({"b%d" % i: np.zeros(16, np.float32) for i in range(n)})
        args = (p, rng.standard_normal((8, 16)).astype(np.float32))
    step = jax.jit(f)
    t0 = time.perf_counter()
    out = step(*args)
    leaves = jax.tree_util.tree_leaves(out)
    [np.asarray(x) for x in leaves]
    first = time.perf_counter() - t0
    eqns = breakdown = None
    if sys.argv[1] == "jx":
        from jx import timings
        breakdown = timings.take()
        eqns = len(jax.make_graph(f)(*args).eqns)
    print(json.dumps({"first_s": first, "eqns": eqns, "breakdown": breakdown,
                      "checksum": float(sum(np.asarray(x, np.float64).sum() for x in leaves))}))
''')


def build_runtime() -> None:
    """jx's runtime pieces (the C runtime, the libcalls object, the routines)
    built in this process's cache, from where each measured process's cache is
    seeded: each is compiled once per host, whatever the program."""
    import numpy as np

    import jx
    from jx.codegen.cpu import compiler, target
    jx.jit(lambda x: x + 1)(np.ones(2, np.float32))
    for reloc in ("pic", "default"):     # jx.jit's shared objects; MCJIT's objects
        compiler.build_routines(target.jit_cpu(), reloc)


def _seed_cache(folder: str) -> None:
    """jx's C runtime and the host's tuned constants, as a machine that compiled
    once has them: the first call measures compiling the program, not those."""
    from jx.runtime import store
    src = os.path.dirname(store.record_path("tuning.json"))
    if os.path.isdir(os.path.join(src, "runtime")):
        shutil.copytree(os.path.join(src, "runtime"), os.path.join(folder, "runtime"))
    for name in ("tuning.json", "machine.json", "host-llvm.json", "sources.json"):
        if os.path.isfile(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), folder)


def byte_compile() -> None:
    """jx's modules as bytecode, as pip leaves an installed package (and as JAX's
    are): an editable checkout under PYTHONDONTWRITEBYTECODE has none, and each fresh
    process would parse jx's sources again (about 60 ms) inside its first call."""
    import compileall

    import jx
    import jx.cli
    import jx.codegen
    import jx.passes
    import jx.runtime
    for mod in (jx, jx.cli, jx.codegen, jx.passes, jx.runtime):
        compileall.compile_dir(os.path.dirname(mod.__file__), quiet=2)


def first_call(engine: str, kind: str, n: int, timeout: float = 900.0) -> dict:
    """{first_s, eqns, checksum} of one fresh process, or {error}."""
    with tempfile.TemporaryDirectory(prefix="jx-compile-bench-") as tmp:
        env = dict(os.environ)
        if engine == "jx":
            env["JX_CACHE_DIR"] = tmp
            _seed_cache(tmp)
        else:
            env.setdefault("JAX_PLATFORMS", "cpu")
        script = os.path.join(tmp, "program.py")
        with open(script, "w") as f:
            f.write(PROGRAM)
        try:
            r = subprocess.run([sys.executable, script, engine, kind, str(n)], env=env,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"not done in {timeout:.0f} s"}
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1][:300]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def run(only=(), with_jax: bool = True, progress=print) -> list:
    byte_compile()
    build_runtime()
    rows = []
    for kind, sizes in SIZES.items():
        if only and not any(o in kind for o in only):
            continue
        for n in sizes:
            row = {"program": kind, "n": n, "jx": first_call("jx", kind, n)}
            row["jax"] = first_call("jax", kind, n) if with_jax else None
            jx_s = row["jx"].get("first_s")
            jax_s = (row["jax"] or {}).get("first_s")
            row["ratio"] = jx_s / jax_s if jx_s and jax_s else None
            if jx_s and row["jx"].get("eqns"):
                row["ms_per_eqn"] = 1e3 * jx_s / row["jx"]["eqns"]
            c1, c2 = row["jx"].get("checksum"), (row["jax"] or {}).get("checksum")
            row["agrees"] = None if c1 is None or c2 is None else \
                abs(c1 - c2) <= 1e-3 * max(1.0, abs(c2))
            rows.append(row)
            progress(f"{kind} {n}: jx {_s(jx_s, row['jx'])}, JAX {_s(jax_s, row['jax'])}")
    return rows


def _s(t, rec) -> str:
    if t is not None:
        return f"{t:.2f} s"
    return rec.get("error", "-") if rec else "-"


def report(rows: list, command: str) -> str:
    lines = ["# Compile cost as programs grow: first call, jx vs JAX (issue 31)", "",
             f"Command: `{command}`", "",
             f"CPU: {machine.cpu_model()}, {machine.cores()} cores; each first call in a "
             "fresh process (jx: empty object cache, its C runtime built; JAX: no "
             "persistent cache).", "",
             "| program | N | equations | JAX | jx | jx/JAX | jx ms per equation | agrees |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r.get("ratio") else "-"
        per = f"{r['ms_per_eqn']:.2f}" if r.get("ms_per_eqn") else "-"
        agrees = {True: "yes", False: "NO", None: "-"}[r.get("agrees")]
        lines.append(f"| {r['program']} | {r['n']} | {r['jx'].get('eqns') or '-'} | "
                     f"{_s((r['jax'] or {}).get('first_s'), r['jax'])} | "
                     f"{_s(r['jx'].get('first_s'), r['jx'])} | {ratio} | {per} | {agrees} |")
    lines += breakdown(rows)
    return "\n".join(lines) + "\n"


def breakdown(rows: list) -> list:
    """Lines of a table: where each jx first call went, stage by stage (ms;
    jx.timings), `other` being what no stage covers (running the program, the
    Python between stages)."""
    rows = [r for r in rows if r["jx"].get("breakdown") is not None]
    if not rows:
        return []
    stages = [s for s in timings.STAGES if any(s in r["jx"]["breakdown"] for r in rows)]
    out = ["", "Where jx's first call goes (ms; `jx.timings` stages: import = the "
           "backend's modules on first use, emit = LLVM IR, llvm = optimise and codegen "
           "in the compile worker, load = the object into the process):", "",
           "| program | N | " + " | ".join(stages) + " | other | total |",
           "|---|---|" + "---|" * (len(stages) + 2)]
    for r in rows:
        b, total = r["jx"]["breakdown"], r["jx"]["first_s"]
        cells = [f"{1e3 * b.get(s, 0.0):.0f}" for s in stages]
        other = total - sum(b.values())
        out.append(f"| {r['program']} | {r['n']} | " + " | ".join(cells) +
                   f" | {1e3 * other:.0f} | {1e3 * total:.0f} |")
    return out


def main(argv=None) -> int:
    args, with_jax = parse_args(argv, "compile", "results-compile.md")
    t0 = time.perf_counter()
    rows = run(args.only, with_jax, progress=lambda s: print(s, flush=True))
    command = "jx bench --suite compile" + "".join(f" --only {o}" for o in args.only)
    publish(args.out, report(rows, command),
            {"command": command, "cpu": machine.cpu_model(), "rows": rows,
             "seconds": time.perf_counter() - t0})
    return 1 if any(r.get("agrees") is False for r in rows) else 0
