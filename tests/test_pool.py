"""The result-buffer pool: large results reuse blocks, views keep them alive."""
import gc

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.runtime import pool


@pytest.fixture(autouse=True)
def fresh_pool():
    pool.clear()
    yield
    pool.clear()


def test_small_results_are_plain_arrays():
    a = pool.empty((3, 4), np.float32)
    assert a.shape == (3, 4) and a.dtype == np.float32 and a.flags.owndata


def test_large_result_is_aligned_writeable_and_reused():
    shape = (1024, 512)                     # 2 MiB of float32
    a = pool.empty(shape, np.float32)
    assert a.shape == shape and a.dtype == np.float32 and a.flags.writeable
    assert a.flags.c_contiguous and a.ctypes.data % pool.ALIGN == 0
    ptr = a.ctypes.data
    del a
    gc.collect()
    assert pool.idle_bytes() == 1024 * 512 * 4
    b = pool.empty(shape, np.float32)
    assert b.ctypes.data == ptr and pool.idle_bytes() == 0


def test_a_view_keeps_the_block_out_of_the_pool():
    a = pool.empty((1 << 20,), np.float32)
    a[:] = 7.0
    view = a[10:20].reshape(2, 5)
    del a
    gc.collect()
    assert pool.idle_bytes() == 0            # still referenced through the view
    other = pool.empty((1 << 20,), np.float32)
    other[:] = -1.0
    np.testing.assert_array_equal(view, 7.0)
    del view
    gc.collect()
    assert pool.idle_bytes() == 4 << 20


def test_pool_is_bounded(monkeypatch):
    monkeypatch.setattr(pool, "POOL_BYTES", 3 << 20)
    blocks = [pool.empty((1 << 20,), np.uint8) for _ in range(5)]
    del blocks
    gc.collect()
    assert pool.idle_bytes() <= 3 << 20


def test_jit_results_from_the_pool_stay_correct_across_calls():
    f = jx.jit(lambda x: jnp.tanh(x) * 2.0 + 1.0)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((700, 600)).astype(np.float32) for _ in range(3)]
    outs = [f(x) for x in xs]               # all alive at once: distinct blocks
    for x, o in zip(xs, outs):
        np.testing.assert_allclose(o, np.tanh(x) * 2 + 1, rtol=2e-6, atol=2e-6)
    del outs
    gc.collect()
    again = f(xs[0])                        # reuses a returned block
    np.testing.assert_allclose(again, np.tanh(xs[0]) * 2 + 1, rtol=2e-6, atol=2e-6)


def test_results_dying_inside_the_pool_lock_do_not_deadlock():
    """A lease collected by the cyclic GC while this thread holds the pool's lock
    (GC can run at any allocation) must not wait for that lock."""
    class Holder:
        pass
    h = Holder()
    h.me, h.out = h, pool.empty((1 << 20,), np.float32)   # a cycle: only gc frees it
    del h
    with pool._lock:
        gc.collect()                 # the lease dies here, lock held
    assert pool.idle_bytes() == 4 << 20
    again = pool.empty((1 << 20,), np.float32)
    assert pool.idle_bytes() == 0 and again.shape == (1 << 20,)


def test_pooled_results_keep_extension_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = pool.empty((1 << 20,), ml_dtypes.bfloat16)
    assert a.dtype == np.dtype(ml_dtypes.bfloat16) and a.nbytes == 2 << 20
    a[:] = 1.5
    assert float(a[7]) == 1.5
