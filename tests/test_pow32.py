"""float32 x ** +-0.5, +-1.5 computed in float32 with FMA error terms
(codegen/cpu/pow32.py): within 1 ulp of the correctly rounded result over the
whole float32 range (subnormal, tiny, huge inputs and results included), IEEE
pow's special values exactly, and the double path kept for targets without FMA."""
from __future__ import annotations

import numpy as np
import pytest

import jx
from jx.codegen.cpu import target
from jx.codegen.cpu.module import ModuleBuilder
from jx.passes.fuse import fuse
from jx.passes.pipeline import run

RNG = np.random.default_rng(31)
EXPONENTS = [0.5, -0.5, 1.5, -1.5]
HAS_FMA = "fma" in target.features(target.host_cpu())


def _ulps(a, b):
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def _inputs():
    """Every 4099th positive float32 bit pattern (all binades, subnormals too),
    random values over the ranges programs use, and the binade edges."""
    strided = np.arange(1, 0x7F800000, 4099, dtype=np.int64).astype(np.int32).view(np.float32)
    edges = np.array([np.finfo(np.float32).tiny, np.finfo(np.float32).max, 1e-45, 1.0,
                      np.nextafter(np.float32(1), np.float32(2)), 2.0 ** 84, 2.0 ** 85.3,
                      2.0 ** 99.3, 2.0 ** -84, 2.0 ** -85.3, 2.0 ** -126], np.float32)
    return np.concatenate([strided, RNG.uniform(0, 50, 200_000).astype(np.float32),
                           np.exp(RNG.uniform(-100, 88, 200_000)).astype(np.float32), edges])


@pytest.mark.parametrize("e", EXPONENTS)
def test_within_one_ulp_everywhere(e):
    x = _inputs()
    got = np.asarray(jx.jit(lambda x: x ** e)(x))
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), e).astype(np.float32)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert _ulps(got, want)[~same].max(initial=0) <= 1
    num = ~np.isnan(want)
    assert np.all(np.signbit(got[num]) == np.signbit(want[num]))     # no -0 for +0
    # inputs programs use (0.01 .. 50): correctly rounded
    mid = (x > 0.01) & (x < 50)
    assert np.mean(same[mid]) > 0.999


@pytest.mark.parametrize("e", EXPONENTS)
def test_special_values_and_negative_inputs(e):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -2.5, -1e-45, -3e38, 1e-45, 3e38,
                  1.0, 4.0], np.float32)
    got = np.asarray(jx.jit(lambda x: x ** e)(x))
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), e).astype(np.float32)
    if e == 0.5:      # IEEE pow (and JAX), not NumPy's sqrt: (-inf) ** .5 = inf, (-0) ** .5 = +0
        want[3], want[1] = np.inf, 0.0
    np.testing.assert_array_equal(got, want)
    num = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[num]), np.signbit(want[num]))


@pytest.mark.parametrize("e", EXPONENTS)
@pytest.mark.parametrize("shape", [(1,), (7,), (33, 17)])
def test_fused_into_other_work(e, shape):
    """Inside a fused expression and a reduction, as the n-body uses it."""
    x = RNG.uniform(0.1, 10, shape).astype(np.float32)
    f = jx.jit(lambda x: ((x * x + 0.01) ** e * x, jx.numpy.sum((x + 1.0) ** e)))
    y, s = f(x)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(np.asarray(y), (x64 * x64 + 0.01) ** e * x64, rtol=3e-7)
    np.testing.assert_allclose(float(s), np.sum((x64 + 1) ** e), rtol=2e-6)


def _ir(e, cpu):
    g = run(jx.make_graph(lambda x: x ** e)(jx.f32[64]), check=True)
    mb = ModuleBuilder("f", cpu=cpu)
    mb.entry("f", fuse(g))
    return mb.text()


@pytest.mark.parametrize("e", [-0.5, 1.5, -1.5])
def test_float32_only_with_fma(e):
    """With FMA the power is float32 throughout; without (x86-64 baseline) it is
    the double path (llvm.fma would be a libm call there)."""
    plain = _ir(e, "x86-64")
    assert "llvm.fma" not in plain and "fpext" in plain
    if HAS_FMA:
        here = _ir(e, target.host_cpu())
        assert "llvm.fma.f32" in here and "fpext" not in here
