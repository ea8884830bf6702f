"""jx.pmap(f, backend="cuda"): one GPU per process, collectives through NCCL. On
one GPU the world has one rank; every collective is checked against the
reference (jx.pmap's NumPy semantics) there. Skipped without CuPy and a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as lax
import jx.numpy as jnp


def _gpu_reason():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
        from cupy.cuda import nccl  # noqa: F401
    except Exception as e:       # ImportError, or a CUDA driver error
        return f"needs CuPy with NCCL and a GPU ({type(e).__name__}: {e})"
    return None


REASON = _gpu_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

COLLECTIVES = {
    "psum": lambda x: lax.psum(x, "d") * 2.0,
    "pmean": lambda x: lax.pmean(jnp.sin(x), "d"),
    "pmax": lambda x: lax.pmax(x, "d") - x,
    "pmin": lambda x: lax.pmin(x, "d"),
    "all_gather": lambda x: lax.all_gather(x, "d"),
    "ppermute": lambda x: lax.ppermute(x, "d", perm=[(0, 0)]),
    "all_to_all": lambda x: lax.all_to_all(x, "d", 0, 0),
    "axis_index": lambda x: x + lax.axis_index("d").astype(x.dtype),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_collectives_match_reference_on_one_gpu(name, dtype):
    import cupy
    fn = COLLECTIVES[name]
    x = np.random.default_rng(0).standard_normal((1, 1, 5)).astype(dtype)
    want = jx.pmap(fn, axis_name="d", backend="reference")(x)
    got = jx.pmap(fn, axis_name="d", backend="cuda")(cupy.asarray(x))
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-6, atol=1e-6)


def test_data_parallel_grad_step_on_one_gpu():
    import cupy

    def loss(w, x, y):
        return jnp.mean((x @ w - y) ** 2)

    def step(w, x, y):
        g = lax.pmean(jx.grad(loss)(w, x, y), "d")
        return w - 0.1 * g
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 2)).astype(np.float32)
    x = rng.standard_normal((1, 8, 4)).astype(np.float32)
    y = rng.standard_normal((1, 8, 2)).astype(np.float32)
    got = jx.pmap(step, axis_name="d", in_axes=(None, 0, 0), backend="cuda")(
        w, cupy.asarray(x), cupy.asarray(y))
    want = w - 0.1 * jx.grad(loss)(w, x[0], y[0])
    np.testing.assert_allclose(cupy.asnumpy(got)[0], want, rtol=1e-5, atol=1e-6)


def test_more_slices_than_gpus_is_a_clear_error():
    import cupy
    with pytest.raises(jx.JxError, match="one slice per process"):
        jx.pmap(lambda x: x, axis_name="d", backend="cuda")(cupy.zeros((2, 3)))
