"""Kernels compiled once per module (issue 31): an unrolled loop or a deep network
repeats the same kernel step after step; the CPU module emits it once and calls it
with each step's buffers. Kernels that differ in anything the code depends on
(constants, shapes, dtypes, structure) keep their own functions. Every result is
checked against NumPy."""
from __future__ import annotations

import re

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.codegen.cpu.module import ModuleBuilder
from jx.passes.fuse_print import kernel_signature

from test_big_programs import tanh_mlp_grad

RNG = np.random.default_rng(27)


def _module_text(fn, *args) -> str:
    program = jx.jit(fn).lower(*args)
    mb = ModuleBuilder("t")
    mb.entry("t", program)
    return mb.text()


def _counts(text: str) -> tuple:
    """(kernel functions defined, kernel calls made by the entry)."""
    defined = len(re.findall(r'^define internal i32 @"k\d+\.', text, re.M))
    calls = len(re.findall(r'call i32 @"k\d+\.', text))
    return defined, calls


def _rk2(xp, s, n, h=0.01):
    for _ in range(n):
        k1 = {"q": s["p"], "p": -xp.sin(s["q"])}
        mid = {k: s[k] + 0.5 * h * k1[k] for k in s}
        k2 = {"q": mid["p"], "p": -xp.sin(mid["q"])}
        s = {k: s[k] + h * k2[k] for k in s}
    return s


def test_unrolled_steps_share_their_kernels():
    s = {"q": RNG.standard_normal(64).astype(np.float32),
         "p": RNG.standard_normal(64).astype(np.float32)}
    f = lambda s: _rk2(jnp, s, 40)      # noqa: E731
    defined, calls = _counts(_module_text(f, s))
    assert calls >= 40 and defined <= 4, (defined, calls)
    got = jx.jit(f)(s)
    want = _rk2(np, {k: v.astype(np.float64) for k, v in s.items()}, 40)
    for k in s:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-4, atol=1e-5)


def test_deep_mlp_gradient_shares_its_layers():
    n, width = 24, 16
    p = {f"w{i}": (0.3 * RNG.standard_normal((width, width))).astype(np.float32)
         for i in range(n)}
    p.update({f"b{i}": (0.1 * RNG.standard_normal(width)).astype(np.float32)
              for i in range(n)})
    x = RNG.standard_normal((8, width)).astype(np.float32)

    def loss(p, x):
        for i in range(n):
            x = jnp.tanh(x @ p[f"w{i}"] + p[f"b{i}"])
        return jnp.sum(x ** 2)

    g = jx.grad(loss)
    defined, calls = _counts(_module_text(g, p, x))
    assert defined * 4 <= calls, (defined, calls)
    got = jx.jit(g)(p, x)
    for name, want in tanh_mlp_grad(p, x, n).items():
        np.testing.assert_allclose(np.asarray(got[name]), want, rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize("variant", ["scalar", "array", "shape", "dtype", "op"])
def test_kernels_that_differ_keep_their_own_functions(variant):
    """Two steps alike but for one thing: both computed right (a shared function
    would give the second step the first one's constant, shape, dtype or op)."""
    x = RNG.standard_normal((6, 10)).astype(np.float32)
    c1, c2 = RNG.standard_normal(10).astype(np.float32), RNG.standard_normal(10).astype(
        np.float32)

    def step(xp, v, k):
        if variant == "scalar":
            return xp.sin(v * (1.5 if k == 0 else 2.5)) + 0.25
        if variant == "array":
            return xp.sin(v * (c1 if k == 0 else c2)) + 0.25
        if variant == "shape":
            return xp.sin(v[: 6 - k] * 1.5) + 0.25
        if variant == "dtype":
            return xp.sin(v.astype(np.float32 if k == 0 else np.float16) * 1.5) + 0.25
        return (xp.sin if k == 0 else xp.cos)(v * 1.5) + 0.25

    def f(xp, v):
        a = step(xp, v, 0)
        b = step(xp, v, 1)
        return a.sum(0), b.sum(0)

    got = jx.jit(lambda v: f(jnp, v))(x)
    want = f(np, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), w,
                                   rtol=5e-3 if variant == "dtype" else 1e-5, atol=1e-3)


def test_signature_names_buffers_by_position():
    """Same structure over other buffers: one signature; another constant, shape or
    dtype: another signature."""
    def two(v, w):
        return jnp.exp(v) * 2.0, jnp.exp(w) * 2.0, jnp.exp(v) * 3.0

    program = jx.jit(two).lower(jx.f32[5, 7], jx.f32[5, 7])
    sigs = [kernel_signature([k], list(k.inputs) + list(k.outputs))
            for k in program.kernels]
    assert len(sigs) == 3 and sigs[0] == sigs[1] != sigs[2]
    other = jx.jit(two).lower(jx.f32[5, 8], jx.f32[5, 8]).kernels[0]
    assert kernel_signature([other], list(other.inputs) + list(other.outputs)) != sigs[0]


MATH_PROGRAM = '''
import sys, numpy as np, jx, jx.numpy as jnp
from jx.codegen.cpu import compiler
n = int(sys.argv[1])
def f(x):
    for i in range(n):
        x = jnp.sin(x) * 0.9 if i % 2 else jnp.tanh(x) + 0.1
    return x
x = np.random.default_rng(n).uniform(-2, 2, 1000).astype(np.float32)
got = np.asarray(jx.jit(f)(x))
ref = x.astype(np.float64)
for i in range(n):
    ref = np.sin(ref) * 0.9 if i % 2 else np.tanh(ref) + 0.1
assert np.abs(got - ref).max() < 1e-5, np.abs(got - ref).max()
from jx.codegen.cpu.jit import jit_reloc
from jx.codegen.cpu.module import ModuleBuilder
mb = ModuleBuilder("again", reloc=jit_reloc())     # the routines' form jx.jit uses
mb.entry("again", jx.jit(f).lower(jx.f32[1000]))
print({name: type(code).__name__ for name, code in mb.routines().items()})
'''


def test_math_routines_are_runtime_objects_shared_by_programs(tmp_path):
    """A long transcendental chain calls jx.math routines that its module only
    declares; each routine is compiled once into the cache's runtime folder (kept
    with the C runtime) and the next program, in another process, reuses it."""
    import os
    import subprocess
    import sys
    from jx.codegen.cpu.module import ModuleBuilder

    f = lambda x: jnp.sin(jnp.tanh(jnp.sin(jnp.tanh(jnp.sin(x) * 2) * 2) * 2) * 2)  # noqa
    for _ in range(3):
        g = f
        f = lambda x, g=g: g(jnp.sin(x) + 0.5)       # noqa: E731
    mb = ModuleBuilder("t")
    mb.entry("t", jx.jit(f).lower(jx.f32[4096]))
    text = mb.text()
    assert 'declare float @"jx.math.sin.float32"' in text
    assert 'define float @"jx.math.sin.float32"' not in text

    env = dict(os.environ, JX_CACHE_DIR=str(tmp_path))
    script = tmp_path / "prog.py"
    script.write_text(MATH_PROGRAM)
    routines = tmp_path / "runtime" / "objects"
    for n in (40, 41):      # two programs, each new to the cache
        r = subprocess.run([sys.executable, str(script), str(n)], env=env,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        built = sorted(p.name for p in routines.glob("*/*.o"))
        # a module built after the routines were: found by name, no IR emitted for them
        kinds = eval(r.stdout.strip().splitlines()[-1])
        assert set(kinds) == {"jx.math.sin.float32", "jx.math.tanh.float32"}
        assert set(kinds.values()) == {"bytes"}, kinds
        if n == 40:
            first = built
            assert len(first) >= 3          # libcalls, sin and tanh (f32)
        else:
            assert built == first            # nothing new: the routines were reused
