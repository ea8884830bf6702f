"""complex128 through jx.numpy, jx.lax and jx.random in 64-bit mode: the tables of
test_complex_api.py on complex128 inputs (eager, traced, jit) against jax.numpy
with jax_enable_x64, branch cuts against NumPy, and the 64-bit creation rules
(complex128 data is kept, Python complex is a weak complex128)."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from test_complex_api import (BINARY, CREATE, CUTS, MODES, PRODUCTS, REDUCE, STRUCTURE, UNARY,
                              assert_like_jax, check, crand, jax, jjnp, parts)

pytestmark = pytest.mark.x64

C128, F64 = np.dtype("complex128"), np.dtype("float64")


@pytest.fixture(autouse=True)
def _jax_x64():
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, mode, rng):
    x = crand(rng, (3, 7), C128)
    check(mode, lambda m, x: getattr(m, name)(x), [x], 8 if name in ("tan", "sinc") else 2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["arcsin", "arccos", "arctan", "arcsinh", "arccosh",
                                  "arctanh", "sqrt", "log"])
def test_branch_cuts_as_numpy(name, mode):
    z = CUTS.astype(C128)
    check(mode, lambda m, x: getattr(m, name)(x), [z], 2, want=getattr(np, name)(z))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", BINARY)
def test_binary(name, mode, rng):
    x, y = crand(rng, (4, 5), C128), crand(rng, (5,), C128)
    x[0] = y.real + 1j * (y.imag + rng.choice([-1, 0, 1]))
    check(mode, lambda m, a, b: getattr(m, name)(a, b), [x, y], tol=4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(REDUCE))
def test_reductions(name, mode, rng):
    x = crand(rng, (4, 5), C128)
    x[1, :3] = x[0, :3].real + 1j * rng.standard_normal(3)
    check(mode, REDUCE[name], [x], tol=10)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products(name, mode, rng):
    check(mode, PRODUCTS[name], [crand(rng, (3, 5), C128), crand(rng, (5, 4), C128)], tol=10)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(STRUCTURE))
def test_structure_and_indexing(name, mode, rng):
    check(mode, STRUCTURE[name], [crand(rng, (4, 5), C128)])


@pytest.mark.parametrize("name", list(CREATE))
def test_creation(name):
    assert_like_jax(CREATE[name])


def test_64_bit_defaults():
    assert jnp.asarray(1j).dtype == C128 and jnp.asarray(1j).weak_type
    assert jnp.asarray(np.array([1j])).dtype == C128
    assert jnp.zeros(2, complex).dtype == C128 and jnp.complex128(1).dtype == C128
    assert (jnp.arange(3.0) * 1j).dtype == C128
    assert (jnp.ones(2, jnp.float32) * 1j).dtype == np.complex64     # f32 meets weak c
    assert jnp.real(jnp.ones(2, C128)).dtype == F64
    assert jnp.abs(jnp.ones(2, C128)).dtype == F64
    assert jnp.var(jnp.ones(2, C128)).dtype == F64
    x = parts(np.array([1.0, -2.0]), np.array([0.5, -0.0]), C128)
    g = jx.make_graph(lambda z: jnp.angle(z))(jx.ShapeDtypeStruct((2,), C128))
    assert g.out_avals[0].dtype == F64
    np.testing.assert_array_equal(np.asarray(jx.eval_graph(g, x)[0]), np.angle(x))


def test_random_normal_complex128_as_jax():
    for seed, shape in ((0, (3, 4)), (5, (40,))):
        got = jx.random.normal(jx.random.key(seed), shape, jnp.complex128)
        want = jax.random.normal(jax.random.key(seed), shape, jjnp.complex128)
        assert got.dtype == want.dtype == C128 and not got.weak_type
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-14, atol=1e-14)
