"""Big programs compile (issue 31): a 10,000-op chain under jx.jit and jx compile,
grad and vmap of a 2,000-op chain, 1,000 independent branches, 500 unrolled steps of
a pytree state and the grad of a 300-layer MLP, each against NumPy. The chains run
in a subprocess whose recursion limit is 300, so any compile-path walk that recurses
once per operation fails the test. No timings."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jx
import jx.numpy as jnp

RNG = np.random.default_rng(31)


def _chain(xp, x, n):
    """sin, *, tanh, + ... in turn (mostly cheap ops, a transcendental every few)."""
    for i in range(n):
        k = i % 8
        if k == 0:
            x = xp.sin(x)
        elif k == 4:
            x = xp.tanh(x)
        elif k % 2:
            x = x * 1.001
        else:
            x = x + 0.01
    return x


CHAIN = textwrap.dedent('''
    import sys
    import numpy as np
    import jx, jx.numpy as jnp
    sys.path.insert(0, {here!r})
    from test_big_programs import _chain
    sys.setrecursionlimit(300)          # far below any per-operation recursion
    x = np.random.default_rng(0).uniform(-2, 2, 4096).astype(np.float32)
    ref = _chain(np, x.astype(np.float64), 10_000)
    got = np.asarray(jx.jit(lambda x: _chain(jnp, x, 10_000))(x))
    assert np.abs(got - ref).max() < 1e-3, np.abs(got - ref).max()
    xs = x[:512]
    def loss(x):
        return jnp.sum(_chain(jnp, x, 2_000))
    g = np.asarray(jx.jit(jx.grad(loss))(xs))
    h = 1e-3
    fd = (_chain(np, xs.astype(np.float64) + h, 2_000) -
          _chain(np, xs.astype(np.float64) - h, 2_000)) / (2 * h)
    assert np.abs(g - fd).max() < 1e-2 * max(1.0, np.abs(fd).max()), np.abs(g - fd).max()
    v = np.asarray(jx.jit(jx.vmap(lambda r: _chain(jnp, r, 2_000)))(x.reshape(64, 64)))
    assert np.abs(v - _chain(np, x.reshape(64, 64).astype(np.float64), 2_000)).max() < 1e-3
    print("ok")
''')


def test_deep_chains_under_a_low_recursion_limit():
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", CHAIN.format(here=here)], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


def test_deep_chain_through_jx_compile(tmp_path):
    from click.testing import CliRunner
    from jx.cli.main import main
    here = os.path.dirname(os.path.abspath(__file__))
    (tmp_path / "deep.py").write_text(textwrap.dedent(f'''
        import sys
        import jx, jx.numpy as jnp
        sys.path.insert(0, {here!r})
        from test_big_programs import _chain

        @jx.export(x=jx.f32[1000])
        def deep(x):
            return _chain(jnp, x, 10_000)
    '''))
    r = CliRunner().invoke(main, ["compile", str(tmp_path / "deep.py"), "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    x = RNG.uniform(-2, 2, 1000).astype(np.float32)
    got = jx.runtime.load(tmp_path / "libdeep.so").deep(x)
    np.testing.assert_allclose(got, _chain(np, x.astype(np.float64), 10_000), atol=1e-3)


def test_a_thousand_independent_branches():
    x = RNG.uniform(-1, 1, (8, 64)).astype(np.float32)
    c = np.linspace(0.5, 1.5, 1000).astype(np.float32)

    def f(x, c):
        return sum(jnp.tanh(x * c[i]).sum(axis=1) * (i % 3 - 1) for i in range(1000))
    want = sum(np.tanh(x.astype(np.float64) * c[i]).sum(axis=1) * (i % 3 - 1)
               for i in range(1000))
    np.testing.assert_allclose(np.asarray(jx.jit(f)(x, c)), want, rtol=1e-4, atol=1e-3)


def _rk2(xp, s, steps, h=0.01):
    def deriv(s):
        return {"q": s["p"], "p": -xp.sin(s["q"])}
    for _ in range(steps):
        k1 = deriv(s)
        mid = {k: s[k] + 0.5 * h * k1[k] for k in s}
        k2 = deriv(mid)
        s = {k: s[k] + h * k2[k] for k in s}
    return s


def test_five_hundred_unrolled_steps_of_a_pytree_state():
    s = {"q": RNG.uniform(-1, 1, 64).astype(np.float32), "p": np.zeros(64, np.float32)}
    got = jx.jit(lambda s: _rk2(jnp, s, 500))(s)
    want = _rk2(np, {k: v.astype(np.float64) for k, v in s.items()}, 500)
    for k in s:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-4, atol=1e-4)


def test_grad_of_a_300_layer_mlp():
    n, width = 300, 8
    params = {f"w{i}": (RNG.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
              for i in range(n)}
    params.update({f"b{i}": (0.1 * RNG.standard_normal(width)).astype(np.float32)
                   for i in range(n)})
    x = RNG.standard_normal((4, width)).astype(np.float32)

    def loss(p, x, xp=jnp):
        for i in range(n):
            x = xp.tanh(x @ p[f"w{i}"] + p[f"b{i}"])
        return (x ** 2).sum()
    g = jx.jit(jx.grad(loss))(params, x)
    # finite differences in float64 on a few weights of the first and last layers
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    for name, idx in [("w0", (1, 2)), (f"w{n - 1}", (3, 0)), (f"b{n // 2}", (5,))]:
        h = 1e-4
        up, dn = dict(p64), dict(p64)
        up[name] = p64[name].copy()
        up[name][idx] += h
        dn[name] = p64[name].copy()
        dn[name][idx] -= h
        fd = (loss(up, x.astype(np.float64), np) - loss(dn, x.astype(np.float64), np)) / (2 * h)
        assert np.asarray(g[name])[idx] == pytest.approx(fd, rel=2e-2, abs=1e-4), name


def test_wide_unrolled_and_deep_programs_through_jx_compile(tmp_path):
    """The fan-out, the unrolled pytree state and the deep gradient as entries of one
    artifact (`jx compile`): repeated kernels share functions, routines are linked
    beside the object; loaded with the runtime alone and checked against NumPy."""
    from click.testing import CliRunner
    from jx.cli.main import main
    here = os.path.dirname(os.path.abspath(__file__))
    (tmp_path / "big.py").write_text(textwrap.dedent(f'''
        import sys
        import numpy as np
        import jx, jx.numpy as jnp
        sys.path.insert(0, {here!r})
        from test_big_programs import _rk2

        C = np.linspace(0.5, 1.5, 1000).astype(np.float32)
        N, W = 300, 8
        PARAMS = {{**{{f"w{{i}}": jx.f32[W, W] for i in range(N)}},
                   **{{f"b{{i}}": jx.f32[W] for i in range(N)}}}}

        @jx.export(x=jx.f32[8, 64])
        def branches(x):
            return sum(jnp.tanh(x * C[i]).sum(axis=1) * (i % 3 - 1) for i in range(1000))

        @jx.export(s={{"q": jx.f32[64], "p": jx.f32[64]}})
        def steps(s):
            return _rk2(jnp, s, 500)

        def loss(p, x):
            for i in range(N):
                x = jnp.tanh(x @ p[f"w{{i}}"] + p[f"b{{i}}"])
            return (x ** 2).sum()

        @jx.export(p=PARAMS, x=jx.f32[4, W])
        def grad(p, x):
            return jx.grad(loss)(p, x)
    '''))
    r = CliRunner().invoke(main, ["compile", str(tmp_path / "big.py"), "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    lib = jx.runtime.load(tmp_path / "libbig.so")

    x = RNG.uniform(-1, 1, (8, 64)).astype(np.float32)
    c = np.linspace(0.5, 1.5, 1000)
    want = sum(np.tanh(x.astype(np.float64) * c[i]).sum(axis=1) * (i % 3 - 1)
               for i in range(1000))
    np.testing.assert_allclose(lib.branches(x), want, rtol=1e-4, atol=2e-3)

    s = {"q": RNG.uniform(-1, 1, 64).astype(np.float32), "p": np.zeros(64, np.float32)}
    got = lib.steps(s)
    want = _rk2(np, {k: v.astype(np.float64) for k, v in s.items()}, 500)
    for k in s:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-4, atol=1e-4)

    n, w = 300, 8
    p = {f"w{i}": (RNG.standard_normal((w, w)) / np.sqrt(w)).astype(np.float32)
         for i in range(n)}
    p.update({f"b{i}": (0.1 * RNG.standard_normal(w)).astype(np.float32) for i in range(n)})
    xs = RNG.standard_normal((4, w)).astype(np.float32)
    g = lib.grad(p, xs)
    for name, want in tanh_mlp_grad(p, xs, n).items():
        np.testing.assert_allclose(np.asarray(g[name]), want, rtol=5e-3, atol=1e-4)


def tanh_mlp_grad(p: dict, x, n: int) -> dict:
    """The gradient of sum(mlp(x)**2), mlp = n layers of tanh(x @ w_i + b_i), by
    backpropagation by hand in float64: {"w0": ..., "b0": ..., ...}."""
    P = {k: v.astype(np.float64) for k, v in p.items()}
    hs = [x.astype(np.float64)]
    for i in range(n):
        hs.append(np.tanh(hs[-1] @ P[f"w{i}"] + P[f"b{i}"]))
    out, ct = {}, 2 * hs[-1]
    for i in reversed(range(n)):
        dz = ct * (1 - hs[i + 1] ** 2)
        out[f"w{i}"], out[f"b{i}"] = hs[i].T @ dz, dz.sum(0)
        ct = dz @ P[f"w{i}"].T
    return out
