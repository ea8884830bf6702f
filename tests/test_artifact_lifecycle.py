"""An artifact over its life in a process: many threads calling one entry at
once, memory that stays flat over tens of thousands of calls, two processes
building the same model into one fresh cache, and several artifacts (the same
file twice, different files with the same entry names, a file rebuilt in place)
loaded side by side. Every result is checked against NumPy."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")

ROOT = Path(__file__).resolve().parents[1]

# `small` stays on the caller's thread with results from malloc; `big` is past the
# thread-split threshold and its 1 MiB result comes from the runtime's buffer pool.
MODEL = textwrap.dedent('''
    import jx
    import jx.numpy as jnp

    SCALE = {scale}

    @jx.export(x=jx.f32[33, 65], w=jx.f32[65, 17])
    def small(x, w):
        return jnp.tanh(x @ w) * SCALE, jnp.sum(x, axis=1)

    @jx.export(x=jx.f32[1025, 257])
    def big(x):
        return jnp.exp(-x * x) * SCALE + jnp.sin(x)
''')


def small_ref(x, w, scale=1.0):
    return (np.tanh(x.astype(np.float64) @ w) * scale, x.sum(axis=1, dtype=np.float64))


def big_ref(x, scale=1.0):
    x = x.astype(np.float64)
    return np.exp(-x * x) * scale + np.sin(x)


def _close(got, want):
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


def write_model(folder: Path, scale: float = 1.0, stem: str = "life") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.py"
    path.write_text(MODEL.format(scale=scale))
    return path


def build(model: Path, out_dir: Path) -> str:
    from jx.cli.compile import compile_model
    return compile_model(str(model), str(out_dir), (), (), "cpu", None, None)["library"]


@pytest.fixture(scope="module")
def life_so(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("life")
    return build(write_model(d), d / "out")


def _inputs(rng, big=True):
    return (rng.standard_normal((33, 65)).astype(np.float32),
            (rng.standard_normal((65, 17)) * 0.2).astype(np.float32),
            rng.standard_normal((1025, 257)).astype(np.float32) if big else None)


# -- threads ---------------------------------------------------------------------------

def test_eight_threads_call_one_artifact(life_so):
    """8 threads x 300 calls, each call with its own inputs: calls overlap (ctypes
    drops the GIL), so pointer tables, the result pool and the artifact's thread
    pool are all shared; every result must be the NumPy one. `small` gets fresh
    inputs every call; `big` (every third call) cycles through three inputs of the
    thread's own, their references computed once."""
    import jx.runtime as rt
    art = rt.load(life_so)
    threads, calls = 8, 300
    errors, done = [], [0] * threads
    start = threading.Barrier(threads)

    def work(t):
        rng = np.random.default_rng(t)
        bigs = [rng.standard_normal((1025, 257)).astype(np.float32) for _ in range(3)]
        bigs = [(xb, big_ref(xb)) for xb in bigs]
        start.wait()
        try:
            for i in range(calls):
                x, w, _ = _inputs(rng, big=False)
                _close(art.small(x, w), small_ref(x, w))
                if i % 3 == t % 3:
                    xb, want = bigs[i % 9 // 3]
                    _close(art.big(xb), want)
                done[t] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {t}, call {done[t]}: {e}")

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors, "\n".join(errors[:5])
    assert done == [calls] * threads


# -- memory ------------------------------------------------------------------------------

RSS_SCRIPT = textwrap.dedent('''
    import json, os, sys, time
    import numpy as np
    import jx.runtime as rt

    path, entry, calls, warm = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    page = os.sysconf("SC_PAGE_SIZE")

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * page

    art = rt.load(path)
    rng = np.random.default_rng(0)
    if entry == "small":
        args = (rng.standard_normal((33, 65)).astype(np.float32),
                rng.standard_normal((65, 17)).astype(np.float32))
    else:
        args = (rng.standard_normal((1025, 257)).astype(np.float32),)
    fn = art[entry]
    first = out = fn(*args)
    for _ in range(warm):          # the measured loop's shape: two results alive
        out = fn(*args)
    before, t0 = rss(), time.perf_counter()
    for _ in range(calls):
        out = fn(*args)
    seconds, after = time.perf_counter() - t0, rss()
    as_tuple = lambda r: r if isinstance(r, tuple) else (r,)
    same = all(np.array_equal(a, b) for a, b in zip(as_tuple(first), as_tuple(out)))
    print(json.dumps({"before": before, "after": after, "seconds": seconds, "same": same}))
''')


def measure_rss(so: str, entry: str, calls: int, warm: int = 2000) -> dict:
    """RSS before and after `calls` calls of an entry (after `warm` warm-up calls),
    in a fresh process so nothing else in it allocates meanwhile."""
    r = subprocess.run([sys.executable, "-c", RSS_SCRIPT, so, entry, str(calls), str(warm)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("entry,calls,warm", [("small", 100_000, 2000), ("big", 2_000, 200)])
def test_rss_flat_over_many_calls(life_so, entry, calls, warm):
    """Growth below 1 KiB per 1,000 calls plus 64 KiB of noise (RSS moves in
    pages, and the allocator's arenas settle). `big` allocates 1 MiB a call: a
    result that missed the pool would add 1 MiB of RSS per live result, and a leak
    of one block per call would add 2 GiB here."""
    m = measure_rss(life_so, entry, calls, warm)
    assert m["same"], "the last call's result differs from the first's"
    growth = m["after"] - m["before"]
    assert growth <= 1024 * calls / 1000 + 64 * 1024, (
        f"RSS grew by {growth} bytes over {calls} calls of {entry} "
        f"({growth / calls * 1000:.0f} bytes per 1,000 calls)")


# -- two processes building into one fresh cache -------------------------------------------

def _run_compile(model: Path, out_dir: Path, cache: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "jx.cli.main", "compile", str(model), "-o",
                             str(out_dir)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "JX_CACHE_DIR": str(cache)})


@pytest.mark.parametrize("same_output", [False, True], ids=["two-outputs", "one-output"])
def test_two_processes_compile_into_one_fresh_cache(tmp_path, same_output):
    import jx.runtime as rt
    model = write_model(tmp_path, scale=2.5)
    cache = tmp_path / "cache"                     # fresh: both start with a miss
    outs = [tmp_path / "out"] * 2 if same_output else [tmp_path / "a", tmp_path / "b"]
    procs = [_run_compile(model, out, cache) for out in outs]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        assert "wrote" in out
    rng = np.random.default_rng(1)
    x, w, xb = _inputs(rng)
    libs = []
    for out in dict.fromkeys(outs):
        art = rt.load(out / "liblife.so")
        _close(art.small(x, w), small_ref(x, w, 2.5))
        _close(art.big(xb), big_ref(xb, 2.5))
        libs.append((out / "liblife.so").read_bytes())
    assert all(lib == libs[0] for lib in libs)          # deterministic builds
    # the cache the two filled serves a third build
    third = _run_compile(model, tmp_path / "c", cache)
    out, err = third.communicate(timeout=300)
    assert third.returncode == 0 and "cache hit" in out, err
    assert (tmp_path / "c" / "liblife.so").read_bytes() == libs[0]


# -- several artifacts in one process --------------------------------------------------------

def test_same_artifact_loaded_twice(life_so):
    import jx.runtime as rt
    a, b = rt.load(life_so), rt.load(life_so)
    assert a is not b
    x, w, xb = _inputs(np.random.default_rng(2))
    _close(a.small(x, w), small_ref(x, w))
    _close(b.small(x, w), small_ref(x, w))
    _close(b.big(xb), big_ref(xb))
    small_b = b.small
    del b                                   # an entry keeps its artifact's code alive
    _close(small_b(x, w), small_ref(x, w))
    _close(a.big(xb), big_ref(xb))


def test_different_artifacts_with_the_same_entry_names(tmp_path):
    """Same model stem, same entry names, different code: each artifact runs its
    own (both export life_small, life_big, life_manifest and the runtime's controls)."""
    import jx.runtime as rt
    so1 = build(write_model(tmp_path / "one", scale=1.0), tmp_path / "one" / "out")
    so3 = build(write_model(tmp_path / "three", scale=3.0), tmp_path / "three" / "out")
    a1, a3 = rt.load(so1), rt.load(so3)
    assert a1.content_hash != a3.content_hash
    x, w, xb = _inputs(np.random.default_rng(3))
    for _ in range(2):                      # interleaved, so neither shadows the other
        _close(a1.small(x, w), small_ref(x, w, 1.0))
        _close(a3.small(x, w), small_ref(x, w, 3.0))
        _close(a1.big(xb), big_ref(xb, 1.0))
        _close(a3.big(xb), big_ref(xb, 3.0))
    # both artifacts' thread pools busy at once
    errors, want = [], {1.0: big_ref(xb, 1.0), 3.0: big_ref(xb, 3.0)}

    def hammer(art, scale):
        try:
            for _ in range(50):
                _close(art.big(xb), want[scale])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ths = [threading.Thread(target=hammer, args=p) for p in ((a1, 1.0), (a3, 3.0)) * 2]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert not errors, errors[:3]


def test_artifact_rebuilt_in_place_while_loaded(tmp_path):
    """The same path rebuilt with other code: a new load runs the new code, and the
    artifact loaded before keeps running the old."""
    import jx.runtime as rt
    out = tmp_path / "out"
    old = rt.load(build(write_model(tmp_path / "m", scale=1.0), out))
    new = rt.load(build(write_model(tmp_path / "m", scale=4.0), out))
    assert old.content_hash != new.content_hash
    x, w, _ = _inputs(np.random.default_rng(4))
    _close(old.small(x, w), small_ref(x, w, 1.0))
    _close(new.small(x, w), small_ref(x, w, 4.0))


# ---------------------------------------------------------------- cancellation
LONG_MODEL = textwrap.dedent('''
    import jx
    import jx.numpy as jnp
    from jx import lax

    @jx.export(x=jx.f32[64], n=jx.i32[()])
    def relax(x, n):
        body = lambda c: (c[0] + 1, jnp.sin(c[1]) + 0.5)
        return lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]
''')

CANCEL_SCRIPT = textwrap.dedent('''
    import ctypes, os, signal, sys, threading, time
    signal.signal(signal.SIGINT, signal.default_int_handler)   # (a background job starts with it ignored)
    import numpy as np
    import jx.runtime as rt

    long_so, other_so, how = sys.argv[1:4]
    art = rt.load(long_so)
    if how == "sigint":
        rt.load(other_so)          # a second artifact chains its handler in front
        stop = lambda: os.kill(os.getpid(), signal.SIGINT)
    else:                          # the exported C control, from another thread
        stop = ctypes.CDLL(long_so).spin_request_cancel
    x = np.ones(64, np.float32)
    threading.Timer(1.5, stop).start()
    t0 = time.time()
    try:
        art.relax(x, 2**31 - 1)
        print("finished")
    except KeyboardInterrupt as e:
        print(f"interrupted {time.time() - t0:.2f}", "relax" in str(e) or "-")
    want = np.sin(np.sin(np.sin(x) + 0.5) + 0.5) + 0.5
    print("after", bool(np.allclose(art.relax(x, 3), want, atol=1e-6)))
''')


@pytest.mark.parametrize("how", ["sigint", "request"])
def test_long_artifact_call_is_cancelled(tmp_path, life_so, how):
    """SIGINT (through the handler the loader chains in) or the exported
    spin_request_cancel stops a long call of a loaded artifact within about a second;
    the call raises KeyboardInterrupt and the entry runs normally afterwards."""
    (tmp_path / "spin.py").write_text(LONG_MODEL)
    long_so = build(tmp_path / "spin.py", tmp_path / "out")
    header = (tmp_path / "out" / "spin.h").read_text()
    assert "void spin_request_cancel(void);" in header
    proc = subprocess.run([sys.executable, "-c", CANCEL_SCRIPT, long_so, life_so, how],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    word, seconds, *rest = lines[0].split()
    assert word == "interrupted" and float(seconds) < 6.0, proc.stdout
    if how == "request":           # no handler ran: jx's own message names the entry
        assert rest == ["True"], proc.stdout
    assert "after True" in lines, proc.stdout
