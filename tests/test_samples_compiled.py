"""Every sample entry, and transformed versions of them (grad, vmap(grad), the
SGD step), compiled with jx.jit against eager mode at reduced sizes; and the
samples built with `jx compile` at their declared sizes and loaded with the
runtime."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import jx
import jx.numpy as jnp

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
sys.path.insert(0, str(SAMPLES))

import attention  # noqa: E402
import cnn  # noqa: E402
import elementwise  # noqa: E402
import gp  # noqa: E402
import mlp  # noqa: E402
import ode  # noqa: E402
import spectral  # noqa: E402
import train  # noqa: E402

RNG = np.random.default_rng(0)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _close(got, want, rtol=2e-4, atol=2e-5):
    for g, w in zip(jx.tree_util.tree_leaves(got), jx.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _mlp_params(sizes=(784, 64, 32, 10)):
    p = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        p[f"w{i + 1}"] = f32(a, b, scale=a ** -0.5)
        p[f"b{i + 1}"] = f32(b, scale=0.1)
    return p


def test_mlp_predict_loss_and_grad():
    p, x, y = _mlp_params(), f32(16, 784), RNG.integers(0, 10, 16).astype(np.int32)
    _close(jx.jit(mlp.predict)(p, x), mlp.predict(p, x))
    _close(jx.jit(mlp.loss)(p, x, y), mlp.loss(p, x, y))
    _close(jx.jit(jx.grad(mlp.loss))(p, x, y), jx.grad(mlp.loss)(p, x, y), rtol=1e-3, atol=1e-5)


def test_sgd_step_and_per_example_grads():
    p, x, y = _mlp_params(), f32(16, 784), RNG.integers(0, 10, 16).astype(np.int32)
    _close(jx.jit(train.sgd_step)(p, x, y), train.sgd_step(p, x, y), rtol=1e-3, atol=1e-5)
    w, b, xs = f32(64), np.float32(0.1), f32(32, 64)
    ys = (RNG.random(32) < 0.5).astype(np.float32)
    _close(jx.jit(train.per_example_grads)(w, b, xs, ys), train.per_example_grads(w, b, xs, ys))


def test_attention_samples():
    x = f32(2, 16, 16)
    _close(jx.jit(attention.softmax)(x), attention.softmax(x))
    t, g, bt = f32(32, attention.WIDTH), f32(attention.WIDTH), f32(attention.WIDTH)
    _close(jx.jit(attention.layernorm)(t, g, bt), attention.layernorm(t, g, bt))
    params = jx.tree_util.tree_map(lambda s: f32(*s.shape, scale=0.1), attention.PARAMS)
    _close(jx.jit(attention.attention_block)(params, t), attention.attention_block(params, t),
           rtol=1e-3, atol=1e-4)


def test_elementwise_samples():
    x = f32(64, 96)
    _close(jx.jit(elementwise.chain)(x), elementwise.chain(x), rtol=1e-5, atol=1e-6)
    _close(jx.jit(elementwise.sum_of_squares)(x), elementwise.sum_of_squares(x), rtol=1e-5)


def test_ode_sample():
    a = f32(8, 8, scale=0.3)
    y0 = f32(8)
    f = jx.jit(ode.integrate, static_argnums=(2, 3))
    _close(f(a, y0, 0.01, 50), ode.integrate(a, y0, 0.01, 50), rtol=1e-4, atol=1e-5)


def _gp_nll_numpy(params, x, y):
    """The GP sample's likelihood in float64 NumPy (the reference)."""
    ls, sf2, sn2 = np.exp(params.astype(np.float64))
    x, y = x.astype(np.float64) / ls, y.astype(np.float64)
    d2 = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    k = sf2 * np.exp(-0.5 * d2) + sn2 * np.eye(len(x))
    chol = np.linalg.cholesky(k)
    return (0.5 * y @ np.linalg.solve(k, y) + np.sum(np.log(np.diagonal(chol)))
            + 0.5 * len(x) * np.log(2 * np.pi))


def test_gp_sample():
    params = np.array([np.log(0.8), 0.1, np.log(0.05)], np.float32)
    x, y = RNG.random((48, 8)).astype(np.float32), f32(48)
    want = _gp_nll_numpy(params, x, y)
    _close(jx.jit(gp.nll)(params, x, y), want, rtol=1e-4)
    _close(gp.nll(params, x, y), want, rtol=1e-4)
    value, grad = jx.jit(gp.nll_and_grad)(params, x, y)
    eps = 1e-6                                  # central differences of the float64 reference
    fd = [(_gp_nll_numpy(params + eps * e, x, y) - _gp_nll_numpy(params - eps * e, x, y))
          / (2 * eps) for e in np.eye(3)]
    _close(value, want, rtol=1e-4)
    _close(grad, np.array(fd), rtol=2e-3, atol=2e-3 * np.max(np.abs(fd)))
    _close(grad, gp.nll_and_grad(params, x, y)[1], rtol=1e-3, atol=1e-4)


def _cnn_params():
    return {k: f32(*v.shape, scale=0.1 if k[0] in "cw" else 0.0) for k, v in cnn.PARAMS.items()}


def test_cnn_sample_trains_and_matches_jax():
    """The LeNet sample: compiled against eager (the NumPy references), against JAX
    (same layers in jax.lax), and SGD lowers its loss on a fixed batch."""
    params = _cnn_params()
    x, y = f32(cnn.BATCH, 28, 28, 1), RNG.integers(0, 10, cnn.BATCH).astype(np.int32)
    _close(jx.jit(cnn.predict)(params, x), cnn.predict(params, x), rtol=1e-4, atol=1e-4)
    try:
        import jax
    except ImportError:
        jax = None
    if jax is not None:
        def jpredict(p, x):
            h = x
            for w, b in (("c1", "b1"), ("c2", "b2")):
                h = jax.lax.conv_general_dilated(h, p[w], (1, 1), "SAME",
                                                 dimension_numbers=cnn.DN) + p[b]
                h = jax.lax.reduce_window(jax.numpy.maximum(h, 0.0), -np.inf, jax.lax.max,
                                          (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            return h.reshape(h.shape[0], -1) @ p["w3"] + p["b3"]
        _close(jx.jit(cnn.predict)(params, x), jpredict(params, x), rtol=1e-4, atol=1e-4)
    step = jx.jit(cnn.sgd_step)
    losses = []
    for _ in range(15):
        params, value = step(params, x, y)
        losses.append(float(value))
    assert np.all(np.isfinite(losses)) and losses[-1] < 0.6 * losses[0], losses


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
def test_cnn_artifact(tmp_path):
    from jx.cli.compile import compile_model
    import jx.runtime as rt
    res = compile_model(str(SAMPLES / "cnn.py"), str(tmp_path), ("predict", "sgd_step"), (),
                        "cpu", None, None)
    art = rt.load(res["library"])
    params = _cnn_params()
    x, y = f32(cnn.BATCH, 28, 28, 1), RNG.integers(0, 10, cnn.BATCH).astype(np.int32)
    _close(art.predict(params, x), cnn.predict(params, x), rtol=1e-4, atol=1e-4)
    _close(art.sgd_step(params, x, y), jx.jit(cnn.sgd_step)(params, x, y), rtol=1e-4,
           atol=1e-5)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
@pytest.mark.parametrize("sample,entry", [("elementwise", "sum_of_squares"),
                                          ("attention", "layernorm"), ("ode", "integrate"),
                                          ("gp", "nll_and_grad"), ("spectral", "heat"),
                                          ("spectral", "spectrum")])
def test_compiled_artifacts_match_eager(sample, entry, tmp_path):
    from jx.cli.compile import compile_model
    import jx.runtime as rt
    res = compile_model(str(SAMPLES / f"{sample}.py"), str(tmp_path), (entry,), (), "cpu",
                        None, None)
    art = rt.load(res["library"])
    spec = art[entry]
    module = sys.modules[sample]
    fn = getattr(module, entry)
    ex = fn.__jx_entry__
    # three calls, the first result kept alive: large results come from the buffer
    # pool (runtime/pool.py) and must neither share nor lose their memory
    calls = []
    for _ in range(3):
        args = [f32(*leaf.shape, scale=0.3) for leaf in spec.inputs]
        want = fn(*args, **ex.static) if ex.static else fn(*args)
        calls.append((art[entry](*args), want))
        if len(calls) == 2:
            del calls[1]          # its blocks go back to the pool for the third call
    for got, want in calls:
        _close(got, want, rtol=1e-3, atol=1e-4)


def test_spectral_entries():
    """The FFT sample against NumPy: the heat equation's decay of each Fourier mode,
    Welch's spectrum of white noise (flat at the variance), the escape counts."""
    u0 = f32(spectral.N)
    t = np.float32(2.5)
    k = 2 * np.pi * np.fft.rfftfreq(spectral.N, d=1.0 / spectral.N)
    want = np.fft.irfft(np.fft.rfft(u0.astype(np.float64))
                        * np.exp(-spectral.NU * k * k * 2.5 / spectral.N ** 2), n=spectral.N)
    _close(jx.jit(spectral.heat)(u0, t), want, rtol=1e-4, atol=1e-5)
    x = f32(64 * spectral.SEGMENT)
    psd = np.asarray(jx.jit(spectral.spectrum)(x))
    _close(psd, spectral.spectrum(x), rtol=1e-4, atol=1e-5)
    assert psd.shape == (spectral.SEGMENT // 2 + 1,) and abs(psd[1:-1].mean() - 1) < 0.05
    side = np.linspace(-1.5, 1.5, 96, dtype=np.float32)
    c = (side[None, :] - 0.5 + 1j * side[:, None]).astype(np.complex64)
    z, n = np.zeros_like(c), np.zeros(c.shape, np.int32)
    with np.errstate(all="ignore"):
        for _ in range(64):
            z = z * z + c
            n += np.abs(z) <= 2
    got = np.asarray(jx.jit(spectral.mandelbrot, static_argnums=1)(c, 64))
    assert (got == n).mean() > 0.995
