"""Checks shared by the transformation tests: jvp and vjp against central finite
differences in float64, the <vjp(u), v> == <u, jvp(v)> identity, and vmap
against a Python loop over the batch for in_axes 0, 1, -1 and None.

Test modules list their cases in a dict TRANSFORM_CASES = {primitive name: Case};
test_transform_coverage fails when a primitive of a rule table has no case.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import jx


@dataclass
class Case:
    fn: Callable                      # f(*arrays) -> array, exercising the primitive
    shapes: list                      # one shape per argument
    domain: str = "any"               # "any" | "pos" (inputs kept positive)
    diff: bool = True                 # False: only vmap is checked
    int_args: tuple = ()              # argument positions that are integer arrays
    int_high: int = 3                 # bound for random integer arguments
    vmap_axes: tuple = (0, 1, -1, None)
    tol: float = 1e-6
    eps: float = 1e-6                 # finite-difference step
    extra: dict = field(default_factory=dict)


def make_args(case: Case, rng, batch: int | None = None):
    args = []
    for i, shape in enumerate(case.shapes):
        full = shape if batch is None else (batch,) + tuple(shape)
        if i in case.int_args:
            args.append(rng.integers(0, case.int_high, full).astype(np.int32))
        elif case.domain == "pos":
            args.append(rng.uniform(0.5, 2.0, full))
        else:
            args.append(rng.standard_normal(full))
    return args


def _float_positions(case: Case):
    return [i for i in range(len(case.shapes)) if i not in case.int_args]


def check_jvp(case: Case, rng):
    eps = case.eps
    args = make_args(case, rng)
    fl = _float_positions(case)
    tangents = [rng.standard_normal(np.shape(args[i])) for i in fl]

    def f_float(*xs):
        full = list(args)
        for i, x in zip(fl, xs):
            full[i] = x
        return case.fn(*full)

    primals = [args[i] for i in fl]
    out, tout = jx.jvp(f_float, primals, tangents)
    plus = f_float(*[p + eps * t for p, t in zip(primals, tangents)])
    minus = f_float(*[p - eps * t for p, t in zip(primals, tangents)])
    fd = (np.asarray(plus) - np.asarray(minus)) / (2 * eps)
    np.testing.assert_allclose(out, case.fn(*args), rtol=1e-12, atol=1e-12)
    scale = max(1.0, float(np.max(np.abs(fd)))) if np.size(fd) else 1.0
    np.testing.assert_allclose(tout, fd, rtol=max(1e-5, case.tol), atol=case.tol * scale * 10)
    return f_float, primals, tangents, out


def check_vjp(case: Case, rng):
    f_float, primals, tangents, out = check_jvp(case, rng)
    _, tout = jx.jvp(f_float, primals, tangents)
    u = rng.standard_normal(np.shape(out))
    _, vjp_fn = jx.vjp(f_float, *primals)
    cts = vjp_fn(u)
    lhs = sum(float(np.sum(c * t)) for c, t in zip(cts, tangents))
    rhs = float(np.sum(u * np.asarray(tout)))
    assert np.isclose(lhs, rhs, rtol=max(1e-9, case.tol), atol=1e-9), (lhs, rhs)
    # and the gradient of <u, f> against finite differences, one input at a time
    eps = case.eps
    for k, p in enumerate(primals):
        d = rng.standard_normal(np.shape(p))
        moved = list(primals)
        moved[k] = p + eps * d
        up = np.sum(u * f_float(*moved))
        moved[k] = p - eps * d
        down = np.sum(u * f_float(*moved))
        assert np.isclose(np.sum(cts[k] * d), (up - down) / (2 * eps),
                          rtol=max(1e-5, case.tol), atol=max(1e-6, case.tol))


def check_vmap(case: Case, rng, batch=3):
    """Map each argument in turn over each axis in case.vmap_axes."""
    base = make_args(case, rng)
    for axis in case.vmap_axes:
        for which in range(len(base)):
            axes = [None] * len(base)
            axes[which] = axis
            examples = [[make_args(case, rng)[i] if axes[i] is not None else base[i]
                         for i in range(len(base))] for _ in range(batch)]
            stacked = [base[i] if axes[i] is None else
                       np.stack([ex[i] for ex in examples], axis=axes[i] % (np.ndim(base[i]) + 1))
                       for i in range(len(base))]
            size = None if any(a is not None for a in axes) else batch
            got = jx.vmap(case.fn, in_axes=tuple(axes), axis_size=size)(*stacked)
            want = np.stack([np.asarray(case.fn(*ex)) for ex in examples])
            if axis is None:
                want = np.stack([np.asarray(case.fn(*base))] * batch)
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10,
                                       err_msg=f"in_axes={axes}")


def random_array(rng, shape, dt):
    """Random test data of any dtype: bools, floats (scale 3), small signed ints."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 3).astype(dt)
    return rng.integers(-50, 50, shape).astype(dt)


def fd_grad(f, x, eps=1e-6):
    """Central finite differences of a scalar function f at x, one element at a time."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def case_rng(name: str, k: int):
    """A generator seeded by a case's name and a per-check offset (stable across runs,
    unlike hash(), which Python randomises per process)."""
    return np.random.default_rng(sum(map(ord, name)) * 7 + k)


def case_tests(cases: dict) -> tuple:
    """The three checks of a TRANSFORM_CASES table as parametrised tests (jvp against
    finite differences, vjp against jvp and finite differences, vmap against a
    loop), for a test module to bind to test_* names of its own."""
    import pytest
    diff = [k for k, c in cases.items() if c.diff]

    @pytest.mark.parametrize("name", diff)
    def test_jvp_matches_finite_differences(name):
        check_jvp(cases[name], case_rng(name, 0))

    @pytest.mark.parametrize("name", diff)
    def test_vjp_consistent_with_jvp_and_fd(name):
        check_vjp(cases[name], case_rng(name, 1))

    @pytest.mark.parametrize("name", sorted(cases))
    def test_vmap_matches_loop(name):
        check_vmap(cases[name], case_rng(name, 2))
    return test_jvp_matches_finite_differences, test_vjp_consistent_with_jvp_and_fd, \
        test_vmap_matches_loop
