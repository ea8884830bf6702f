"""The fuzz loop: generate, run on the pool, shrink failures, write tests and a
summary."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter

from .gen import Gen
from .shrink import shrink, write_test
from .worker import InProcess, Pool, signatures

# Failures of one (engine, kind, dtype) beyond this many are counted, not shrunk.
SHRINK_PER_CLASS = 3


def _class_key(f: dict) -> tuple:
    return (f["engine"], f["kind"], f.get("dtype", ""))


def fuzz(seconds: float = 600, seed: int = 0, out: str = "fuzz-failures", use_jax: bool = False,
         artifact: bool = False, workers: int = 1, programs: int | None = None,
         in_process: bool = False, shrink_budget: int = 120, max_stmts: int = 8,
         log=print, ref_impl=None, features: set | None = None, timeout: float = 60.0,
         shrink_per_class: int = SHRINK_PER_CLASS) -> dict:
    names = ["graph", "jit"] + (["artifact"] if artifact else []) + (["jax"] if use_jax else [])
    cache = tempfile.mkdtemp(prefix="jx-fuzz-cache-")
    os.environ.setdefault("JX_CACHE_DIR", cache)   # programs never repeat: keep ~/.cache clean
    os.environ.setdefault("JX_TUNE", "off")
    runner = (InProcess(names, ref_impl) if in_process
              else Pool(names, workers, timeout=timeout, ref_impl=ref_impl))
    t_end = time.monotonic() + seconds
    stats = Counter()
    per_engine = Counter()
    classes: dict = {}
    shrunk_per_class = Counter()
    next_seed = seed
    try:
        while time.monotonic() < t_end and (programs is None or stats["run"] < programs):
            n = workers * 4 if not in_process else 1
            if programs is not None:
                n = min(n, programs - stats["run"])
            batch = []
            for _ in range(n):
                g = Gen(next_seed, max_stmts=max_stmts, features=features)
                batch.append(g.program())
                stats["gen_rejected"] += g.rejected
                next_seed += 1
            for prog, res in list(runner.map(batch)):   # drained: shrinking reuses it
                stats["run"] += 1
                stats[res["status"]] += 1
                if stats["run"] % 200 == 0:
                    log(f"{stats['run']} programs ({stats['fail']} failed) by seed {prog.seed}")
                if res["status"] != "fail":
                    continue
                for f in res["failures"]:
                    per_engine[f["engine"]] += 1
                    stats[f["kind"]] += f["kind"] in ("crash", "timeout")
                f0 = res["failures"][0]
                key = _class_key(f0)
                entry = classes.setdefault(key, {"count": 0, "seeds": [], "examples": []})
                entry["count"] += 1
                entry["seeds"].append(prog.seed)
                log(f"seed {prog.seed}: FAIL {f0['engine']} {f0['kind']}: {f0['detail'][:160]}")
                if shrunk_per_class[key] >= shrink_per_class or shrink_budget <= 0:
                    continue
                shrunk_per_class[key] += 1
                # A hang costs the whole timeout per candidate: shrink it only a little.
                budget = shrink_budget if f0["kind"] not in ("timeout",) else min(shrink_budget, 4)
                small, sres, spent = shrink(prog, (f0["engine"], f0["kind"]), runner,
                                            budget=budget, batch=max(1, workers))
                fs = [f for f in (sres or res)["failures"]
                      if (f["engine"], f["kind"]) == (f0["engine"], f0["kind"])]
                path = write_test(small, fs[0] if fs else f0, out)
                entry["examples"].append({"seed": prog.seed, "source": small.source,
                                          "detail": (fs[0] if fs else f0)["detail"],
                                          "test": path, "shrink_runs": spent})
                log(f"  shrunk in {spent} runs to {path}:\n{small.source}")
    except KeyboardInterrupt:       # stopped early: still write what was found
        log("interrupted")
    finally:
        runner.close()
        shutil.rmtree(cache, ignore_errors=True)
    summary = {"programs": stats["run"], "ok": stats["ok"], "failed": stats["fail"],
               "invalid": stats["invalid"], "crashes": stats["crash"],
               "timeouts": stats["timeout"], "per_engine": dict(per_engine),
               "engines": names, "seed": seed, "last_seed": next_seed - 1,
               "generator_rejected": stats["gen_rejected"],
               "classes": [{"engine": k[0], "kind": k[1], "dtype": k[2], **v}
                           for k, v in sorted(classes.items(), key=lambda kv: -kv[1]["count"])]}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    return summary


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m jx.fuzz", description=__doc__)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=0, help="first program seed")
    ap.add_argument("--programs", type=int, default=None, help="stop after this many")
    ap.add_argument("--out", default="fuzz-failures", help="where shrunk tests go")
    ap.add_argument("--jax", action="store_true", help="compare with JAX too")
    ap.add_argument("--artifact", action="store_true", help="also build and load artifacts")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    ap.add_argument("--max-stmts", type=int, default=8)
    ap.add_argument("--shrink-budget", type=int, default=120, help="candidate runs per shrink")
    ap.add_argument("--shrink-per-class", type=int, default=SHRINK_PER_CLASS,
                    help="failures shrunk per (engine, kind, dtype) class")
    a = ap.parse_args(argv)
    import signal

    def stop(signum, frame):         # `kill PID` ends a background run with its summary
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    if a.jax:
        from .engines import jax_available
        if not jax_available():
            print("--jax: JAX is not installed; running without it", file=sys.stderr)
            a.jax = False
    s = fuzz(a.seconds, a.seed, a.out, a.jax, a.artifact, a.workers, a.programs,
             shrink_budget=a.shrink_budget, max_stmts=a.max_stmts, timeout=a.timeout,
             shrink_per_class=a.shrink_per_class, log=lambda m: print(m, flush=True))
    print(json.dumps({k: v for k, v in s.items() if k != "classes"}, indent=1))
    for c in s["classes"]:
        print(f"{c['count']:6d}  {c['engine']} {c['kind']} {c['dtype']}  seeds {c['seeds'][:8]}")
    return 1 if s["failed"] else 0
