"""Concurrency and process lifecycle: jitted and pmapped functions called from
several threads, fork (after use and while another thread compiles), native
memory over many jitted functions and many calls, pooled results dying at
interpreter shutdown, and the C runtime under ThreadSanitizer and
AddressSanitizer/UBSan (tests/csrc/)."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax


def run_python(code: str, timeout: float = 120, env: dict | None = None, args=()):
    """Run `code` in a fresh interpreter; (returncode, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    return proc.returncode, proc.stdout, proc.stderr


# ---------------------------------------------------------------- threads

def test_pmap_from_two_threads_at_once(monkeypatch):
    """Each call owns its pointer tables: two threads stepping one pmap at the same
    time used to overwrite each other's buffer pointers (wrong sums)."""
    monkeypatch.setenv("JX_NUM_CPU_DEVICES", "2")
    f = jx.pmap(lambda x: lax.psum(x * 2.0, "i"), "i")
    f(np.ones((2, 1000), np.float32))
    wrong = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(60):
            x = rng.standard_normal((2, 1000)).astype(np.float32)
            want = np.broadcast_to((x * 2.0).sum(0), x.shape)
            if not np.allclose(f(x), want, rtol=1e-5, atol=1e-5):
                wrong.append(seed)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


# ---------------------------------------------------------------- the result pool

def test_pooled_result_dying_at_shutdown_is_released_quietly():
    """At shutdown the pool module's globals are cleared while results still die;
    a lease must not look them up then. The module's globals are reordered so that
    the result dies after the pool's functions were cleared but before its lock."""
    code = """
        import os
        import numpy as np
        from jx.runtime import pool
        g = vars(pool)
        for name in ("_returned", "_lock"):      # cleared after the result
            g[name] = g.pop(name)
        g["_zz_result"] = pool.empty((1 << 20,), np.float32)
        for name in ("_returned", "_lock"):
            g[name] = g.pop(name)
        real = pool._Lease.__del__
        def watched(self, real=real, write=os.write):
            try:
                real(self)
                write(1, b"released\\n")
            except BaseException as e:
                write(1, f"failed: {type(e).__name__}: {e}\\n".encode())
        pool._Lease.__del__ = watched
    """
    rc, out, err = run_python(code)
    assert rc == 0, err
    assert out.splitlines() == ["released"], out + err


def test_eight_threads_call_one_jitted_function():
    """Calls overlap (the foreign call releases the GIL) and share the thread pool
    and the result pool; every result must be the NumPy one for its own input."""
    f = jx.jit(lambda x, y: jnp.tanh(x) * y + jnp.sum(x * y, axis=1, keepdims=True))
    shape = (512, 600)                    # results of 1.2 MB come from the pool
    f(np.zeros(shape, np.float32), np.zeros(shape, np.float32))
    wrong = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(25):
            x = rng.standard_normal(shape).astype(np.float32)
            y = rng.standard_normal(shape).astype(np.float32)
            want = np.tanh(x) * y + np.sum(x * y, axis=1, keepdims=True)
            got = f(x, y)
            if not np.allclose(got, want, rtol=1e-4, atol=1e-3):
                wrong.append(seed)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


# ---------------------------------------------------------------- fork

FORK_AFTER_USE = """
    import multiprocessing as mp
    import numpy as np
    import jx, jx.numpy as jnp

    def child(q):
        x = np.linspace(-1, 1, 1 << 20, dtype=np.float32)
        g = jx.jit(lambda v: jnp.exp(v) * 2.0 - v)           # a new compile in the child
        q.put(bool(np.allclose(g(x), np.exp(x) * 2.0 - x, rtol=1e-5, atol=1e-5)) and
              bool(np.allclose(f(x), np.sin(x) + 1.0, rtol=1e-5, atol=1e-5)))

    x = np.linspace(-1, 1, 1 << 20, dtype=np.float32)
    f = jx.jit(lambda v: jnp.sin(v) + 1.0)                   # parallel: the pool runs
    assert np.allclose(f(x), np.sin(x) + 1.0, rtol=1e-5, atol=1e-5)
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    print("child ok" if q.get(timeout=90) else "child wrong")
    p.join(30)
    print("exit", p.exitcode)
"""


def test_fork_after_use_child_jits_and_calls(tmp_path):
    rc, out, err = run_python(FORK_AFTER_USE, env={"JX_CACHE_DIR": str(tmp_path)})
    assert rc == 0, err
    assert out.split() == ["child", "ok", "exit", "0"], out + err


# The forking scripts' wait for a child: its exit code, or "hung" (killed) after
# `seconds`.
WAIT_CHILD = """
    import os, time

    def wait_child(pid, seconds):
        deadline = time.time() + seconds
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            if time.time() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                return "hung"
            time.sleep(0.02)
"""


FORK_WHILE_COMPILING = WAIT_CHILD + """
    import os, threading, time
    import numpy as np
    import jx, jx.numpy as jnp

    x = np.ones(4096, np.float32)
    jx.jit(lambda v: v + 1.0)(x)
    busy = True

    def compile_forever():
        k = 0
        while busy:
            k += 1
            jx.jit(lambda v, k=k: jnp.tanh(v) * (k + 0.25) + jnp.exp(v) / k)(x)

    threading.Thread(target=compile_forever, daemon=True).start()
    results = []
    for i in range(4):
        time.sleep(0.05)
        pid = os.fork()
        if pid == 0:
            y = jx.jit(lambda v: jnp.sin(v) * (3.0 + i))(x)
            os._exit(0 if np.allclose(y, np.sin(x) * (3.0 + i), atol=1e-6) else 3)
        results.append(wait_child(pid, 30))
    busy = False
    print(results)
"""


def test_fork_while_another_thread_compiles(tmp_path):
    """The fork waits for the compile in flight (jx's compile lock and llvmlite's
    are taken before it), so the child can compile; it used to hang on a lock held
    by the compiling thread, which the child does not have."""
    rc, out, err = run_python(FORK_WHILE_COMPILING, timeout=300,
                              env={"JX_CACHE_DIR": str(tmp_path)})    # compiles reach LLVM
    assert rc == 0, err
    assert out.strip() == "[0, 0, 0, 0]", out + err


FORK_WHILE_STEPPING = WAIT_CHILD + """
    import os, threading, time
    import numpy as np
    import jx
    from jx import lax

    f = jx.pmap(lambda x: lax.psum(x * 2.0, "i"), "i")
    xs = np.ones((2, 1 << 16), np.float32)
    f(xs)
    busy = True

    def step_forever():
        while busy:
            f(xs)

    threading.Thread(target=step_forever, daemon=True).start()
    results = []
    for i in range(4):
        time.sleep(0.02)
        pid = os.fork()
        if pid == 0:
            y = f(xs * (i + 1))
            os._exit(0 if np.allclose(y, 4.0 * (i + 1)) else 3)
        results.append(wait_child(pid, 20))
    busy = False
    print(results)
"""


def test_fork_while_another_thread_runs_pmap_steps():
    """pmap's step lock is renewed in a forked child: one copied while another
    thread held it made the child's first step wait forever."""
    rc, out, err = run_python(FORK_WHILE_STEPPING, timeout=300,
                              env={"JX_NUM_CPU_DEVICES": "2"})
    assert rc == 0, err
    assert out.strip() == "[0, 0, 0, 0]", out + err


# ---------------------------------------------------------------- native memory

RSS = """
    import gc, os, sys
    import numpy as np
    import jx, jx.numpy as jnp

    def rss_kb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

    x = np.ones(7, np.float32)
    def make(k):
        return jx.jit(lambda v: jnp.sin(v) * float(k) + float(k) * 0.5)
    for k in range(30):
        make(k)(x)
    gc.collect()
    before = rss_kb()
    n = int(sys.argv[1])
    for k in range(30, 30 + n):
        assert np.allclose(make(k)(x), np.sin(x) * k + k * 0.5, atol=1e-5)
    gc.collect()
    print((rss_kb() - before) / n)
"""


def test_rss_bounded_over_distinct_jitted_functions(tmp_path):
    """200 distinct functions, each traced, compiled (object code from a warm
    cache: see the cold test below) and dropped: RSS per function stays small."""
    env = {"JX_CACHE_DIR": str(tmp_path)}
    rc, out, err = run_python(RSS, timeout=300, env=env, args=[200])   # fills the cache
    assert rc == 0, err
    rc, out, err = run_python(RSS, timeout=300, env=env, args=[200])
    assert rc == 0, err
    assert float(out) < 40.0, f"{out} KB per jitted function"


def test_rss_bounded_over_distinct_functions_compiled_cold(tmp_path):
    """Cold: LLVM optimises every function. llvmlite 0.50 keeps ~120 KB per run of
    its pass pipeline, so after a process's first compiles they run in a worker
    process (compiler.IN_PROCESS), which this one's RSS does not carry."""
    rc, out, err = run_python(RSS, timeout=300, env={"JX_CACHE_DIR": str(tmp_path)},
                              args=[60])
    assert rc == 0, err
    assert float(out) < 40.0, f"{out} KB per jitted function"


def test_rss_flat_over_many_calls():
    code = """
        import gc, os
        import numpy as np
        import jx, jx.numpy as jnp

        def rss_kb():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

        f = jx.jit(lambda v, w: jnp.tanh(v) * w)
        x, y = np.ones(300, np.float32), np.full(300, 2.0, np.float32)
        big = np.ones(1 << 18, np.float32)                  # a pooled (1 MiB) result
        for _ in range(2000):
            f(x, y); f(big, big)
        gc.collect()
        before = rss_kb()
        for _ in range(10000):
            f(x, y); f(big, big)
        gc.collect()
        assert np.allclose(f(x, y), np.tanh(x) * y)
        print(rss_kb() - before)
    """
    rc, out, err = run_python(code, timeout=300)
    assert rc == 0, err
    assert float(out) < 20 * 64, f"RSS grew {out} KB over 20,000 calls"


# ---------------------------------------------------------------- the C runtime under sanitizers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIVER = os.path.join(ROOT, "tests", "csrc", "runtime_driver.c")
CRUNTIME = os.path.join(ROOT, "codegen", "cpu", "cruntime")


def build_with(sanitizers: str, out_dir) -> str:
    """The driver and the runtime built with -fsanitize=`sanitizers` (skip when the
    compiler or the sanitizer's runtime library is missing)."""
    import shutil
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (cc, gcc or $CC)")
    flags = [f"-fsanitize={sanitizers}", "-g", "-O1", "-pthread"]
    probe = out_dir / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    if subprocess.run([cc, *flags, str(probe), "-o", str(out_dir / "probe")],
                      capture_output=True).returncode:
        pytest.skip(f"{cc} cannot link -fsanitize={sanitizers} (its runtime library is "
                    "not installed)")
    exe = str(out_dir / "driver")
    proc = subprocess.run([cc, *flags, "-fno-sanitize-recover=undefined", "-DJX_VISIBLE",
                           "-I", CRUNTIME, DRIVER, "-o", exe], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return exe


def run_driver(exe: str, env: dict):
    proc = subprocess.run([exe], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    if "ThreadSanitizer: unexpected memory mapping" in proc.stderr:
        pytest.skip("ThreadSanitizer cannot run with this kernel's address-space layout")
    return proc


def test_thread_pool_and_collectives_are_race_free(tmp_path):
    """ThreadSanitizer over regions from three threads, nested regions, thread
    counts changed meanwhile and pmap steps of 1-4 devices: no report. (The pool
    read its thread count unsynchronised while jx_set_num_threads wrote it.)"""
    exe = build_with("thread", tmp_path)
    proc = run_driver(exe, {"TSAN_OPTIONS": "halt_on_error=0 exitcode=66"})
    assert "ThreadSanitizer" not in proc.stderr, proc.stderr[-4000:]
    assert proc.returncode == 0 and proc.stdout.strip() == "runtime_driver: ok", proc.stderr


def test_thread_pool_and_collectives_under_address_and_ub_sanitizers(tmp_path):
    exe = build_with("address,undefined", tmp_path)
    env = {"ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "print_stacktrace=1"}
    proc = run_driver(exe, env)
    if "LeakSanitizer has encountered a fatal error" in proc.stderr:   # under ptrace
        proc = run_driver(exe, {**env, "ASAN_OPTIONS": "detect_leaks=0"})
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, \
        proc.stderr[-4000:]
    assert proc.returncode == 0 and proc.stdout.strip() == "runtime_driver: ok", proc.stderr


# ---------------------------------------------------------------- SIGINT

INTERRUPT = """
    import os, signal, threading, time
    signal.signal(signal.SIGINT, signal.default_int_handler)   # (a background job starts with it ignored)
    import numpy as np
    import jx, jx.numpy as jnp
    from jx import lax

    MODE = {mode!r}
    if MODE == "while":        # a traced bound: a while loop, on one thread
        def long(x, n):
            body = lambda c: (c[0] + 1, jnp.sin(c[1]) + 0.5)
            return lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]
        x, args = np.ones(64, np.float32), (2**31 - 1,)
        small = (3,)
        want = np.sin(np.sin(np.sin(x) + 0.5) + 0.5) + 0.5
    else:                      # a static bound: a scan whose body runs in parallel chunks
        def long(x):
            return lax.fori_loop(0, 10**7, lambda i, v: jnp.sin(v) * 0.5 + 0.25, x)
        x, args = np.ones(1 << 20, np.float32), ()
    f = jx.jit(long)
    if MODE == "handler":      # the program's own handler, which raises nothing
        caught = []
        signal.signal(signal.SIGINT, lambda *a: caught.append(1))
    threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    t0 = time.time()
    try:
        f(x, *args)
        print("finished")
    except KeyboardInterrupt as e:
        print(f"interrupted {{time.time() - t0:.2f}}", str(e) or "-")
    if MODE == "handler":
        print("handler ran", len(caught))
    if MODE == "while":        # the same function runs to the end afterwards
        print("after", bool(np.allclose(f(x, *small), want, atol=1e-6)))
"""


@pytest.mark.parametrize("mode", ["while", "scan", "handler"])
def test_sigint_interrupts_a_long_compiled_call(mode):
    """SIGINT reaches a long compiled call: the runtime's handler sets a flag that
    loops check at each iteration and the pool before each chunk; the call raises
    KeyboardInterrupt within about a second instead of running on."""
    if mode == "handler":
        code = INTERRUPT.format(mode="while").replace('MODE == "handler"', "True")
    else:
        code = INTERRUPT.format(mode=mode)
    rc, out, err = run_python(code, timeout=120)
    assert rc == 0, err
    lines = out.splitlines()
    word, seconds, *_ = lines[0].split()
    assert word == "interrupted" and float(seconds) < 6.0, out
    if mode == "handler":
        assert "was interrupted before it finished" in lines[0], out
        assert "handler ran 1" in lines, out
    elif mode == "while":
        assert lines[0].endswith(" -") and "after True" in lines, out


def test_sigint_interrupts_a_long_pmap_step():
    code = """
        import os, signal, threading, time
        signal.signal(signal.SIGINT, signal.default_int_handler)   # (a background job starts with it ignored)
        import numpy as np
        import jx, jx.numpy as jnp
        from jx import lax

        def step(x, n):
            body = lambda c: (c[0] + 1, jnp.sin(c[1]) + 0.5)
            return lax.psum(lax.while_loop(lambda c: c[0] < n[0], body, (0, x))[1], "i")

        f = jx.pmap(step, "i")
        xs = np.ones((2, 64), np.float32)
        short = np.full((2, 1), 2, np.int32)
        want = 2 * (np.sin(np.sin(xs) + 0.5) + 0.5)
        threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        t0 = time.time()
        try:
            f(xs, np.full((2, 1), 2**31 - 1, np.int32))
            print("finished")
        except KeyboardInterrupt:
            print(f"interrupted {time.time() - t0:.2f}")
        print("after", bool(np.allclose(f(xs, short), want, atol=1e-5)))
    """
    rc, out, err = run_python(code, timeout=120, env={"JX_NUM_CPU_DEVICES": "2"})
    assert rc == 0, err
    first, second = out.splitlines()
    assert first.split()[0] == "interrupted" and float(first.split()[1]) < 6.0, out
    assert second == "after True", out


def test_sigint_is_not_lost_to_calls_starting_on_other_threads():
    """Each call notes the cancel count as it starts, so another thread starting
    calls meanwhile cannot clear a cancellation made for the long call. (SIGINT
    cancels every compiled call in flight; a background thread's short call may
    raise KeyboardInterrupt too.)"""
    code = """
        import os, signal, threading, time
        signal.signal(signal.SIGINT, signal.default_int_handler)   # (a background job starts with it ignored)
        import numpy as np
        import jx, jx.numpy as jnp
        from jx import lax

        def long(x, n):
            body = lambda c: (c[0] + 1, jnp.sin(c[1]) + 0.5)
            return lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]

        f, g = jx.jit(long), jx.jit(lambda v: v * 2.0)
        x = np.ones(1 << 20, np.float32)   # an iteration takes long next to a short call
        f(x, 1), g(x[:64])
        busy = True

        def short_calls():
            while busy:
                try:
                    g(x[:64])
                except KeyboardInterrupt:
                    pass

        threading.Thread(target=short_calls, daemon=True).start()
        threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        t0 = time.time()
        try:
            f(x, 2**31 - 1)
            print("finished")
        except KeyboardInterrupt:
            print(f"interrupted {time.time() - t0:.2f}")
        busy = False
    """
    rc, out, err = run_python(code, timeout=120)
    assert rc == 0, err
    word, seconds = out.split()
    assert word == "interrupted" and float(seconds) < 6.0, out


# ---------------------------------------------------------------- the compile worker

def test_compile_worker_builds_restarts_and_reports(monkeypatch, tmp_path):
    """Compiles past compiler.IN_PROCESS run in a worker process: its code is the
    same, a worker that died is replaced, and IR LLVM rejects is a clear error.
    (jx.jit's compiles go to the worker where they are not forked: JX_COMPILE_FORK=0.)"""
    from jx.codegen.cpu import compiler
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("JX_COMPILE_FORK", "0")
    monkeypatch.setattr(compiler, "IN_PROCESS", 0)
    monkeypatch.setattr(compiler, "WORKER_COMPILES", 2)
    x = np.linspace(-2, 2, 33, dtype=np.float32)
    for k in range(5):                        # crosses two worker replacements
        got = jx.jit(lambda v: jnp.tanh(v) * float(k + 1))(x)
        np.testing.assert_allclose(got, np.tanh(x) * (k + 1), rtol=2e-6, atol=1e-6)
    proc = compiler._WORKER["proc"]
    assert proc is not None and proc.poll() is None
    proc.kill()
    proc.wait()
    np.testing.assert_allclose(jx.jit(lambda v: v * 7.0)(x), x * 7.0)
    assert compiler._WORKER["proc"] is not proc
    bad = "define i32 @f() {\n  ret i64 0\n}\n"
    with pytest.raises(compiler.CompileWorkerError, match="LLVM could not compile"):
        compiler.emit_object(bad)
    np.testing.assert_allclose(jx.jit(lambda v: v - 1.0)(x), x - 1.0)
    compiler._stop_worker()


def test_compile_worker_that_cannot_start_compiles_here(monkeypatch, tmp_path):
    """No interpreter to start the worker with (an embedded Python): the compile
    runs in this process instead of failing."""
    from jx.codegen.cpu import compiler
    compiler._stop_worker()
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))        # a miss: LLVM must run
    monkeypatch.setenv("JX_COMPILE_FORK", "0")
    monkeypatch.setattr(compiler, "IN_PROCESS", 0)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(jx.jit(lambda v: v * 3.0 + 0.25)(x), x * 3.0 + 0.25)
    assert compiler._WORKER["proc"] is None
