"""jx.pmap across MPI processes: `mpiexec -n 2` runs a script in a subprocess
(2 ranks x 2 local devices = 4 devices). Skipped, with the reason, when mpi4py
or an MPI launcher is missing (`pip install 'jx[mpi]'` brings both)."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def launcher():
    """mpiexec next to this Python (MPI wheels install it there), else on PATH."""
    for name in ("mpiexec", "mpirun"):
        here = Path(sys.executable).parent / name
        if here.exists():
            return str(here)
        found = shutil.which(name)
        if found:
            return found
    return None


def mpi_missing():
    try:
        import mpi4py  # noqa: F401  (only whether it imports)
    except ImportError:
        return "mpi4py is not installed (pip install 'jx[mpi]')"
    if launcher() is None:
        return "no MPI launcher (mpiexec/mpirun) found"
    # mpi4py's MPI (asked in a subprocess: importing mpi4py.MPI initialises MPI here)
    vendor = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; "
                             "print(MPI.get_vendor()[0])"], capture_output=True, text=True)
    found = subprocess.run([launcher(), "--version"], capture_output=True, text=True)
    text = found.stdout + found.stderr
    kind = "Open MPI" if ("Open MPI" in text or "OpenRTE" in text) else \
        "MPICH" if "HYDRA" in text.upper() else None
    if kind is not None and kind not in vendor.stdout:
        return (f"the launcher {launcher()} is {kind}'s but mpi4py uses "
                f"{vendor.stdout.strip() or 'another MPI'}")
    return None


pytestmark = pytest.mark.skipif(mpi_missing() is not None, reason=str(mpi_missing()))


def mpirun(args, n=2, devices=2, timeout=240):
    cmd = [launcher(), "-n", str(n)]
    env = dict(os.environ, JX_NUM_CPU_DEVICES=str(devices), JX_COLLECTIVE_TIMEOUT="60",
               JAX_ENABLE_X64="1",      # float64 data against float64 references
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    version = subprocess.run([launcher(), "--version"], capture_output=True, text=True)
    if "Open MPI" in version.stdout + version.stderr:      # containers often run as root
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd += ["--oversubscribe"]
    return subprocess.run(cmd + [sys.executable, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)


SCRIPT = textwrap.dedent('''
    import numpy as np
    import jx, jx.numpy as jnp
    from jx import lax
    from jx.codegen.cpu.collectives import CollectiveError

    r, P, n = jx.process_index(), jx.process_count(), jx.local_device_count()
    assert (P, n, jx.device_count()) == (2, 2, 4), (P, n, jx.device_count())
    assert [d.id for d in jx.local_devices()] == [2 * r, 2 * r + 1]
    N = n * P
    mine = slice(r * n, (r + 1) * n)
    rng = np.random.default_rng(0)                       # the same global data everywhere

    for dtype in (np.float32, np.int64):
        full = (rng.normal(size=(N, 3, 2)) * 10).astype(dtype)
        perm = [(i, (i + 1) % N) for i in range(N - 1)]
        f = jx.pmap(lambda x: (lax.psum(x, "i"), lax.pmax(x, "i"), lax.pmin(x, "i"),
                               lax.all_gather(x, "i"), lax.ppermute(x, "i", perm),
                               lax.axis_index("i")), "i")
        s, mx, mn, g, pp, idx = f(full[mine])
        tol = dict(rtol=1e-5) if dtype == np.float32 else dict(rtol=0)
        np.testing.assert_allclose(s, np.broadcast_to(full.sum(0), s.shape), **tol)
        np.testing.assert_array_equal(mx[1], full.max(0))
        np.testing.assert_array_equal(mn[0], full.min(0))
        np.testing.assert_array_equal(g[0], full)
        moved = np.zeros_like(full)
        for a, b in perm:
            moved[b] = full[a]
        np.testing.assert_array_equal(pp, moved[mine])
        assert idx.tolist() == list(range(r * n, (r + 1) * n))
    full = rng.normal(size=(N, N * 2, 3)).astype(np.float32)
    a2a = jx.pmap(lambda x: lax.all_to_all(x, "i", 0, 1, tiled=True), "i")(full[mine])
    chunks = full.reshape(N, N, 2, 3)
    want = np.stack([np.concatenate([chunks[j, d] for j in range(N)], axis=1)
                     for d in range(N)])
    np.testing.assert_array_equal(a2a, want[mine])

    # data-parallel SGD: 4 devices with 4 examples each == one device with all 16
    def loss(w, x, y):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    xs = rng.normal(size=(16, 3))
    ys = rng.normal(size=(16,))
    w0 = rng.normal(size=(3,))
    step = jx.pmap(lambda w, x, y: w - 0.5 * lax.pmean(jx.grad(loss)(w, x, y), "d"), "d",
                   in_axes=(None, 0, 0), out_axes=None)
    w, ref = w0, w0
    for _ in range(10):
        w = step(w, xs.reshape(N, 4, 3)[mine], ys.reshape(N, 4)[mine])
        ref = ref - 0.5 * jx.grad(loss)(ref, xs, ys)
    np.testing.assert_allclose(w, ref, rtol=1e-12, atol=1e-12)

    # shapes that differ between ranks: detected, an error on every rank, no hang
    try:
        jx.pmap(lambda x: lax.psum(x, "i"), "i")(np.ones((n, 3 + r), np.float32))
    except CollectiveError as e:
        assert "ranks disagree" in str(e) and "f32[3]" in str(e) and "f32[4]" in str(e), e
    else:
        raise AssertionError("mismatched shapes were not detected")
    print(f"OK rank {r}", flush=True)
''')


def test_collectives_sgd_and_mismatch_over_two_ranks(tmp_path):
    script = tmp_path / "mpi_check.py"
    script.write_text(SCRIPT)
    r = mpirun([str(script)])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK rank 0" in r.stdout and "OK rank 1" in r.stdout, r.stdout + r.stderr


def test_data_parallel_sample_over_two_ranks():
    r = mpirun([str(ROOT / "samples" / "data_parallel.py"), "--steps", "3", "--hidden", "32",
                "--batch", "32", "--check"], devices=1)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 process(es) x 1 device(s)" in r.stdout
    assert "max |data-parallel - one device|" in r.stdout
