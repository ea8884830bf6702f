"""Elementwise scans run tile by tile (codegen/cpu/scan_tiles.py): the same
results, bit for bit, as stepping the whole carry, for tiles that do and do not
divide the arrays, scalar carries, complex carries and threads; other scans keep
stepping whole arrays."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax
from jx.codegen.cpu import scan_tiles


@pytest.fixture(autouse=True)
def small_l2(monkeypatch):
    """A 64 KiB L2: tiles of a few hundred elements, many tiles per test array
    whatever the host's cache."""
    from jx.runtime import host
    monkeypatch.setattr(host, "cache_sizes", lambda: {1: 32 << 10, 2: 64 << 10, 3: 1 << 20})


def _scan_eqn(f, *args):
    from jx.passes import pipeline
    g = jx.make_graph(f)(*args)
    for stage in pipeline.STAGES.values():
        g = stage(g)
    (eqn,) = [e for e in g.eqns if e.prim.name == "scan"]
    return eqn


def _damped(c, v):
    def body(i, s):
        x, y, k = s
        t = i.astype(jnp.float32) * 1e-3
        x2 = x * 0.99 + jnp.sin(y) * c + t
        y2 = jnp.where(x2 > 0, y - 0.1 * x2, y + 0.1 * x2 * v)   # continuous at 0
        return x2, y2, k + 2
    return lax.fori_loop(0, 37, body, (c, v, jnp.int32(1)))


@pytest.mark.parametrize("shape", [(300, 101), (512 * 8,), (5, 7, 1111)])
def test_tiles_match_whole_array_steps_bit_for_bit(shape, rng, monkeypatch):
    c = rng.standard_normal(shape).astype(np.float32)
    v = rng.standard_normal(shape).astype(np.float32)
    plan = scan_tiles.plan(_scan_eqn(_damped, c, v))
    assert plan is not None and plan[0] == shape
    tiled = jx.jit(_damped)(c, v)
    monkeypatch.setattr(scan_tiles, "MIN_TILES", 10 ** 12)     # stepping whole arrays
    assert scan_tiles.plan(_scan_eqn(_damped, c, v)) is None
    whole = jx.jit(_damped)(c, v)
    for a, b in zip(tiled, whole):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(tiled[2]) == 1 + 2 * 37
    x, y = c.copy(), v.copy()           # and NumPy, step by step
    for i in range(37):
        x2 = x * np.float32(0.99) + np.sin(y) * c + np.float32(i) * np.float32(1e-3)
        y = np.where(x2 > 0, y - np.float32(0.1) * x2, y + np.float32(0.1) * x2 * v)
        x = x2
    np.testing.assert_allclose(np.asarray(tiled[0]), x, rtol=1e-4, atol=1e-4)


def test_complex_carry_tiles(rng):
    z0 = (rng.standard_normal((200, 300)) + 1j * rng.standard_normal((200, 300))) * 0.1
    c = z0.astype(np.complex64)

    def orbit(c):
        return lax.fori_loop(0, 20, lambda i, z: z * z * 0.5 + c, c)
    assert scan_tiles.plan(_scan_eqn(orbit, c)) is not None
    want = c.copy()
    for _ in range(20):
        want = want * want * np.complex64(0.5) + c
    np.testing.assert_allclose(np.asarray(jx.jit(orbit)(c)), want, rtol=1e-4, atol=1e-5)


def test_other_scans_step_whole_arrays(rng):
    x = rng.standard_normal((256, 256)).astype(np.float32)
    rolls = _scan_eqn(lambda x: lax.fori_loop(0, 5, lambda i, v: jnp.roll(v, 1, 0) * 0.5, x), x)
    sums = _scan_eqn(lambda x: lax.fori_loop(0, 5, lambda i, v: v - v.mean(), x), x)
    scanned = _scan_eqn(lambda x: lax.scan(lambda c, r: (c + r, c), x[0], x), x)
    small = _scan_eqn(lambda x: lax.fori_loop(0, 5, lambda i, v: v * 2, x), x[:4, :4])
    for eqn in (rolls, sums, scanned, small):
        assert scan_tiles.plan(eqn) is None


def test_tile_size_follows_the_host_cache(monkeypatch):
    from jx.runtime import host
    x = np.ones((512, 512), np.float32)
    eqn = _scan_eqn(lambda x: lax.fori_loop(0, 3, lambda i, v: v * 2 + x, x), x)
    sizes = {}
    for l2 in (256 << 10, 2 << 20):
        monkeypatch.setattr(host, "cache_sizes", lambda l2=l2: {1: 32 << 10, 2: l2, 3: 8 << 20})
        sizes[l2] = scan_tiles.tile_elements(eqn)
    assert sizes[2 << 20] == 8 * sizes[256 << 10]
    assert all(n & (n - 1) == 0 for n in sizes.values())
