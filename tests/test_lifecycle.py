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


def run_python(code: str, timeout: float = 120, env: dict | None = None):
    """Run `code` in a fresh interpreter; (returncode, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})
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
