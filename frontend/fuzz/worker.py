"""Running one case on every engine, and a pool of worker processes that
does it so that a crash or a hang is a result instead of the end of the run."""
from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from multiprocessing.connection import wait

import numpy as np

from jx import flags

from . import engines
from .compare import compare
from .program import Program, var_table
from .values import make_inputs


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def run_case(prog: Program, names: list, stage=lambda name: None, ref_impl=None) -> dict:
    """Run prog on the reference and each engine in `names`; compare.

    status: "ok", "fail" (failures lists engine, kind, detail) or "invalid"
    (the reference rejects the program and no other engine says it is valid).
    """
    source = prog.source
    inputs = make_inputs(prog)
    table = var_table(prog.block)
    errs = [table[n].err if n in table else 0.0 for n in prog.block.outs]
    x64 = prog.uses_f64()
    res: dict = {"status": "ok", "failures": [], "times": {}}
    run_ref = ref_impl or engines.run_ref
    stage("ref")
    # a program with float64 is a 64-bit program: jx runs it in 64-bit mode, as JAX
    with np.errstate(all="ignore"), flags.enable_x64(x64):
        t0 = time.perf_counter()
        try:
            ref = run_ref(source, inputs)
        except Exception as e:  # noqa: BLE001
            ref, ref_err = None, _err(e)
        res["times"]["ref"] = time.perf_counter() - t0
        for name in names:
            stage(name)
            t0 = time.perf_counter()
            try:
                got = (engines.run_jax(source, inputs, x64) if name == "jax"
                       else engines.ENGINES[name](source, inputs))
                err = None
            except Exception as e:  # noqa: BLE001
                got, err = None, _err(e)
                if os.environ.get("JX_FUZZ_TRACEBACK"):
                    traceback.print_exc()
            res["times"][name] = time.perf_counter() - t0
            if ref is None:
                if name == "jax" and err is None:
                    res["failures"].append({"engine": "ref", "kind": "error:" + ref_err.split(":")[0],
                                            "detail": f"jx rejects, JAX runs it: {ref_err}"})
                continue
            if err is not None:
                res["failures"].append({"engine": name, "kind": "error:" + err.split(":")[0],
                                        "detail": err})
                continue
            if len(got) != len(ref):
                res["failures"].append({"engine": name, "kind": "arity",
                                        "detail": f"{len(got)} outputs, reference {len(ref)}"})
                continue
            for k, (r, g, d) in enumerate(zip(ref, got, errs)):
                bad = compare(r, g, d, same_kind_only=(name == "jax" and x64))
                if bad is not None:
                    kind = bad[0] if bad[0] in ("shape", "dtype") else "wrong"
                    res["failures"].append({"engine": name, "kind": kind, "output": k,
                                            "detail": f"{bad[0]}: {bad[1]}",
                                            "dtype": str(r.dtype)})
                    break
    if ref is None and not res["failures"]:
        res["status"], res["detail"] = "invalid", ref_err
    elif res["failures"]:
        res["status"] = "fail"
    return res


def signatures(res: dict) -> set:
    return {(f["engine"], f["kind"]) for f in res.get("failures", [])}


# ---------------------------------------------------------------- the pool

def _worker_main(conn, names, ref_impl) -> None:
    import warnings
    warnings.simplefilter("ignore")
    engines.jx_namespace()
    if "jax" in names:
        engines.jax_namespace()
    conn.send(("ready", None))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        prog = msg
        try:
            res = run_case(prog, names, lambda s: conn.send(("stage", s)), ref_impl)
        except Exception as e:  # noqa: BLE001 - the harness itself failing is a result too
            res = {"status": "fail", "failures": [{"engine": "harness", "kind": "error",
                                                   "detail": _err(e)}]}
        conn.send(("done", res))


class _Slot:
    def __init__(self, pool):
        self.pool = pool
        self.proc = self.conn = None
        self.item = None
        self.stage = None
        self.started = 0.0
        self.cases = 0
        self.spawn()

    def spawn(self):
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, self.pool.names,
                                                           self.pool.ref_impl), daemon=True)
        self.proc.start()
        child.close()
        self.conn, self.cases, self.ready = parent, 0, False

    def kill(self):
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.join(5)
        self.conn.close()


class Pool:
    """Long-lived worker processes; a worker that crashes, hangs past `timeout`
    seconds or has run `recycle` cases is replaced."""

    def __init__(self, names: list, workers: int = 1, timeout: float = 60.0,
                 recycle: int = 150, ref_impl=None):
        self.names, self.timeout, self.recycle = list(names), timeout, recycle
        self.ref_impl = ref_impl
        self.slots = [_Slot(self) for _ in range(workers)]

    def close(self):
        for s in self.slots:
            try:
                s.conn.send(None)
            except OSError:
                pass
            s.kill()

    def map(self, progs):
        """Yield (program, result) for each program, in completion order."""
        todo = list(progs)[::-1]
        busy = 0
        while todo or busy:
            for s in self.slots:
                if s.item is None and todo and s.ready:
                    s.item, s.stage, s.started = todo.pop(), "start", time.monotonic()
                    s.conn.send(s.item)
                    busy += 1
            conns = {s.conn: s for s in self.slots}
            for c in wait(list(conns), timeout=0.5):
                s = conns[c]
                try:
                    kind, val = c.recv()
                except (EOFError, OSError):
                    s.proc.join(2)
                    code = s.proc.exitcode
                    if s.item is not None:
                        busy -= 1
                        yield s.item, _lost(s, "crash", f"worker died (exit code {code}) "
                                                       f"in engine {s.stage}")
                    self._restart(s)
                    continue
                if kind == "ready":
                    s.ready = True
                elif kind == "stage":
                    s.stage = val
                elif kind == "done":
                    item, s.item = s.item, None
                    busy -= 1
                    s.cases += 1
                    if s.cases >= self.recycle:
                        self._restart(s)
                    yield item, val
            now = time.monotonic()
            for s in self.slots:
                if s.item is not None and now - s.started > self.timeout:
                    busy -= 1
                    yield s.item, _lost(s, "timeout", f"no result after {self.timeout:.0f} s "
                                                      f"in engine {s.stage}")
                    self._restart(s)

    def _restart(self, s: _Slot):
        s.kill()
        s.item = None
        s.spawn()


class InProcess:
    """The Pool's interface without processes (tests, debugging): no crash or
    hang protection."""

    def __init__(self, names: list, ref_impl=None):
        self.names, self.ref_impl = list(names), ref_impl

    def map(self, progs):
        for p in progs:
            yield p, run_case(p, self.names, ref_impl=self.ref_impl)

    def close(self):
        pass


def _lost(s: _Slot, kind: str, detail: str) -> dict:
    engine = s.stage if s.stage not in (None, "start") else "harness"
    res = {"status": "fail", "failures": [{"engine": engine, "kind": kind, "detail": detail}]}
    s.item = None
    return res
