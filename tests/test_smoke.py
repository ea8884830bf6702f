import numpy as np

import jx
import jx.numpy as jnp


def test_trace_eval_matches_numpy(rng):
    def f(x, y):
        return jnp.tanh(x @ y + 1.0).sum(axis=1)
    g = jx.verify(jx.make_graph(f)(jx.f32[3, 4], jx.f32[4, 5]))
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    (out,) = jx.eval_graph(g, x, y)
    np.testing.assert_allclose(out, np.tanh(x @ y + 1).sum(1), rtol=1e-5)
    assert out.dtype == np.float32


def test_import_jx_loads_no_backend():
    """`import jx` (and its API modules) must not import llvmlite or cupy."""
    import subprocess
    import sys
    code = ("import sys, jx, jx.numpy, jx.lax, jx.nn, jx.random; "
            "print(sorted(m for m in ('llvmlite', 'cupy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
