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
