"""The compatibility corpus: programs written against JAX's API, run by import swap.

Each tests/corpus/<name>.py is plain JAX-style code (`import jax`,
`import jax.numpy as jnp`, `from jax import lax`, ...) with a `main()` returning a
pytree of arrays. The test rewrites its imports to jx (`import jax` becomes
`import jx as jax`, `from jax.x import y` becomes `from jx.x import y`: nothing
else of the program changes) and runs it with jit on and with jit disabled
(jax_disable_jit: the jitted functions run eagerly), in both 64-bit modes, and
compares each result with JAX's run of the unmodified program in the same mode.
Without JAX, the jx runs are compared with each other.
"""
from __future__ import annotations

import numpy as np
import pytest

import jx
from jx.benchmarks.corpus import load, programs, swap_imports

PROGRAMS = programs()


def run_program(name: str, use_jx: bool):
    return load(name, use_jx).main()


def _leaves(tree):
    return [np.asarray(x) for x in jx.tree_util.tree_leaves(tree)]


def _compare(got, want, x64: bool, what: str):
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w), f"{what}: {len(g)} results, expected {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        assert a.shape == b.shape, f"{what} result {i}: shape {a.shape}, expected {b.shape}"
        assert a.dtype == b.dtype, f"{what} result {i}: dtype {a.dtype}, expected {b.dtype}"
        if a.dtype.kind in "fc":
            tol = 1e-9 if a.dtype == np.float64 else 2e-4
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"{what} result {i}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{what} result {i}")


@pytest.mark.parametrize("x64", [False, True], ids=["x64_off", "x64_on"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_jax(name, x64):
    try:
        import jax
    except ImportError:
        jax = None
    with jx.enable_x64(x64):
        jitted = run_program(name, use_jx=True)
        with jx.disable_jit():
            eager = run_program(name, use_jx=True)
        assert _leaves(jitted), f"{name} returned nothing to compare"
        for leaf in _leaves(jitted):
            if leaf.dtype.kind == "f":
                assert np.isfinite(leaf).all(), f"{name}: non-finite results"
        if jax is None:
            _compare(eager, jitted, x64, f"{name} eager vs jit (JAX not installed)")
            return
        with jax.enable_x64(x64):
            want = run_program(name, use_jx=False)
        _compare(jitted, want, x64, f"{name} under jit")
        _compare(eager, want, x64, f"{name} with jit disabled")


def test_swap_rewrites_only_imports():
    src = ("import jax\nimport jax.numpy as jnp\nfrom jax import lax, random\n"
           "from jax.scipy.special import logsumexp\nx = jax.jit(f)  # jax stays\n")
    assert swap_imports(src) == ("import jx as jax\nimport jx.numpy as jnp\n"
                                 "from jx import lax, random\n"
                                 "from jx.scipy.special import logsumexp\n"
                                 "x = jax.jit(f)  # jax stays\n")
