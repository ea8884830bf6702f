"""Scratch memory of compiled calls (codegen/cpu/cruntime/jx_scratch.c): large blocks
are kept between calls and reused for the same size, so a loop's big carried buffer
is not a fresh mmap whose pages fault in every call. Checked through ctypes on the
jx.jit runtime (alignment, reuse, the slot and byte caps, release), by counting page
faults of a jitted stencil loop (its results against a NumPy loop), and through an
artifact's exported P_release_scratch. No timings."""
from __future__ import annotations

import ctypes
import resource

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax
from jx.codegen.cpu import parallel

LIB_PATH = parallel.jit_library()
pytestmark = pytest.mark.skipif(LIB_PATH is None, reason="no C compiler to build the runtime")
MIB = 1 << 20


@pytest.fixture
def lib():
    lib = ctypes.CDLL(LIB_PATH)
    lib.jx_scratch_get.restype = ctypes.c_void_p
    lib.jx_scratch_get.argtypes = [ctypes.c_uint64]
    lib.jx_scratch_put.argtypes = [ctypes.c_void_p]
    lib.jx_scratch_kept_bytes.restype = ctypes.c_int64
    lib.jx_release_scratch()
    yield lib
    lib.jx_release_scratch()


def test_blocks_are_aligned_writable_and_reused_by_size(lib):
    sizes = [1, 100, MIB - 1, MIB, 3 * MIB + 5]
    ptrs = [lib.jx_scratch_get(n) for n in sizes]
    for p, n in zip(ptrs, sizes):
        assert p and p % 64 == 0
        ctypes.memset(p, 0xAB, n)            # every byte is ours
    for p in ptrs:
        lib.jx_scratch_put(p)
    # below 1 MiB nothing is kept; the two large blocks are
    assert lib.jx_scratch_kept_bytes() == MIB + 3 * MIB + 5
    again = lib.jx_scratch_get(3 * MIB + 5)
    assert again == ptrs[-1]
    assert lib.jx_scratch_kept_bytes() == MIB
    other = lib.jx_scratch_get(2 * MIB)      # no block of that size: a new one
    assert other not in ptrs
    lib.jx_scratch_put(again)
    lib.jx_scratch_put(other)
    assert lib.jx_scratch_kept_bytes() == 6 * MIB + 5
    lib.jx_release_scratch()
    assert lib.jx_scratch_kept_bytes() == 0
    lib.jx_scratch_put(None)                 # as free(NULL)
    for n in (1 << 62, (1 << 63) + 8, (1 << 64) - 1, (1 << 64) - 32):
        assert not lib.jx_scratch_get(n)     # refused (NULL), as malloc does


def test_caps_give_up_the_oldest_blocks(lib):
    blocks = [lib.jx_scratch_get((k + 1) * MIB) for k in range(10)]   # 10 sizes, 8 slots
    for p in blocks:
        lib.jx_scratch_put(p)
    assert lib.jx_scratch_kept_bytes() == sum(range(3, 11)) * MIB     # the newest 8
    p = lib.jx_scratch_get(2 * MIB)          # 2 MiB was given up: not from the kept ones
    assert lib.jx_scratch_kept_bytes() == sum(range(3, 11)) * MIB
    lib.jx_scratch_put(p)                    # (kept now, the oldest, 3 MiB, given up)
    assert lib.jx_scratch_kept_bytes() == (sum(range(4, 11)) + 2) * MIB
    lib.jx_release_scratch()
    big = [lib.jx_scratch_get(200 * MIB) for _ in range(3)]           # 600 MiB > 512
    for p in big:
        lib.jx_scratch_put(p)
    assert lib.jx_scratch_kept_bytes() == 400 * MIB
    huge = lib.jx_scratch_get(600 * MIB)     # larger than the cap: never kept
    lib.jx_scratch_put(huge)
    assert lib.jx_scratch_kept_bytes() == 400 * MIB


def _heat(u, alpha, steps, xp):
    def body(_, u):
        c = u[1:-1, 1:-1, 1:-1]
        lap = (u[2:, 1:-1, 1:-1] + u[:-2, 1:-1, 1:-1] + u[1:-1, 2:, 1:-1]
               + u[1:-1, :-2, 1:-1] + u[1:-1, 1:-1, 2:] + u[1:-1, 1:-1, :-2] - 6 * c)
        return xp.pad(c + alpha * lap, 1)
    if xp is np:
        for i in range(steps):
            u = body(i, u)
        return u
    return lax.fori_loop(0, steps, body, u)


@pytest.mark.parametrize("n", [67, 208])
def test_a_loop_carry_is_not_faulted_in_every_call(n):
    """The scan's second carry buffer (n^3 floats: 1.2 MiB, and 34 MiB, past the
    32 MiB from which glibc's malloc maps every block afresh) comes back from the
    kept blocks: later calls fault in far fewer pages than it has."""
    rng = np.random.default_rng(n)
    u = rng.standard_normal((n, n, n)).astype(np.float32)
    f = jx.jit(lambda u: _heat(u, 0.1, 4, jnp))
    want = _heat(u.astype(np.float64), 0.1, 4, np)
    np.testing.assert_allclose(np.asarray(f(u)), want, rtol=1e-4, atol=1e-4)
    pages = u.nbytes // 4096
    faults = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        out = f(u)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-4, atol=1e-4)
        del out
    assert min(faults) < pages // 4, (faults, pages)


def test_artifacts_export_release_scratch(tmp_path):
    from jx.runtime import load
    model = tmp_path / "stencil.py"
    model.write_text(
        "import jx\nimport jx.numpy as jnp\nfrom jx import lax\n\n"
        "@jx.export(u=jx.f32[70, 70, 70])\n"
        "def heat(u):\n"
        "    def body(_, u):\n"
        "        c = u[1:-1, 1:-1, 1:-1]\n"
        "        return jnp.pad(c + 0.1 * (u[2:, 1:-1, 1:-1] - c), 1)\n"
        "    return lax.fori_loop(0, 3, body, u)\n")
    from jx.cli.main import main
    with pytest.raises(SystemExit) as done:
        main(["compile", str(model), "-o", str(tmp_path / "build")], prog_name="jx")
    assert done.value.code in (0, None)
    so = tmp_path / "build" / "libstencil.so"
    art = load(str(so))
    u = np.random.default_rng(1).standard_normal((70, 70, 70)).astype(np.float32)
    want = u.astype(np.float64)
    for _ in range(3):
        c = want[1:-1, 1:-1, 1:-1]
        want = np.pad(c + 0.1 * (want[2:, 1:-1, 1:-1] - c), 1)
    for _ in range(2):
        np.testing.assert_allclose(art.heat(u), want, rtol=1e-5, atol=1e-5)
    raw = ctypes.CDLL(str(so))
    raw.stencil_release_scratch()
    np.testing.assert_allclose(art.heat(u), want, rtol=1e-5, atol=1e-5)
