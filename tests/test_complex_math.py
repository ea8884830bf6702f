"""passes/complex_math.py: complex elementwise math on (re, im) pairs of real arrays.

Each entry runs compiled (jx.jit over the real and imaginary parts) on random
inputs over several ranges, float32 and float64, against NumPy's complex
long double functions (64-bit significands: exact enough for float64). The
error of a part is in ulp of that part ("comp"), or in ulp of |result|
("norm") for parts that cancel for an inherent reason (Re log z near |z| = 1,
Re expm1 z near e^x cos y = 1, products and quotients). Special values
(zeros of both signs, infinities, NaN) match JAX's complex64/complex128 results
or, where the module documents a difference, NumPy's (C99's).

`python tests/test_complex_math.py` prints the measured maxima.
"""
from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest

import jx
from jx.passes.complex_math import COMPLEX_MATH

LD = np.clongdouble
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
DTYPES = [F32, F64]
N = 3000          # random points per range

# name -> (ranges, measure of (re, im), limit in ulp). The limits hold with
# margin at 10x the points (every function <= 4.3 there).
UNARY = {
    "neg": (["unit", "wide"], ("comp", "comp"), 0),
    "abs": (["unit", "small", "wide", "huge"], ("comp", None), 1.5),
    "sign": (["unit", "small", "wide", "huge"], ("comp", "comp"), 3),
    "exp": (["unit", "small", "trig", "exp", "exp_edge"], ("comp", "comp"), 3),
    "expm1": (["unit", "small", "trig", "exp"], ("norm", "comp"), 4),
    "log": (["unit", "small", "wide", "huge", "cut", "circle"], ("norm", "comp"), 3),
    "log1p": (["unit", "small", "wide", "huge", "cut1", "circle1"], ("norm", "comp"), 3),
    "sqrt": (["unit", "small", "wide", "huge", "cut", "circle"], ("comp", "comp"), 3),
    # rsqrt: 3.2 (float32), 3.3 (float64) at 10x the points (4.8, 4.3 before its
    # |z|^2 form: a rounded |z| divided into a rounded sqrt costs about 1 ulp more)
    "rsqrt": (["unit", "small", "wide", "huge", "cut", "circle"], ("comp", "comp"), 4),
    "sin": (["unit", "small", "trig", "cosh", "cosh_edge"], ("comp", "comp"), 4),
    "cos": (["unit", "small", "trig", "cosh", "cosh_edge"], ("comp", "comp"), 4),
    # tan, tanh: 3.2, 3.2 (float32), 3.4, 3.3 (float64) at 10x the points (4.1,
    # 4.0, 5.0, 4.7 with cos^2 y rounded, float64 from jnp.cos's 1.4 ulp)
    "tan": (["unit", "small", "wide", "trig", "exp_t"], ("comp", "comp"), 4),
    "tanh": (["unit", "small", "wide", "trig", "exp"], ("comp", "comp"), 4),
    # logistic: 3.8 (float32), 3.2 (float64) at 10x the points (4.7, 5.0 with a
    # rounded 1 + e^-z squared in its denominator)
    "logistic": (["unit", "small", "exp_y2"], ("norm", "comp"), 4),
}
BINARY = {
    "add": (["unit", "wide"], ("norm", "norm"), 1),
    "sub": (["unit", "wide"], ("norm", "norm"), 1),
    "mul": (["unit", "small", "wide"], ("norm", "norm"), 2),
    "div": (["unit", "small", "wide", "huge"], ("norm", "norm"), 3),
}
INTEGER_POWERS = [0, 1, 2, 3, 5, 13, -1, -2, -7]


def _mag(rng, n, lo, hi):
    return np.exp(rng.uniform(np.log(lo), np.log(hi), n)) * rng.choice([-1.0, 1.0], n)


def sample(kind: str, dtype, rng, n=N):
    """Random complex inputs of one range (complex of dtype's precision)."""
    big = 1e300 if dtype == F64 else 1e37
    edge = float(np.log(np.finfo(dtype).max))
    u = rng.uniform
    x, y = {
        "unit": lambda: (u(-2, 2, n), u(-2, 2, n)),
        "small": lambda: (_mag(rng, n, 1e-12, 0.1), _mag(rng, n, 1e-12, 0.1)),
        "wide": lambda: (_mag(rng, n, 1e-3, 1e3), _mag(rng, n, 1e-3, 1e3)),
        "huge": lambda: (_mag(rng, n, 1 / big, big), _mag(rng, n, 1 / big, big)),
        "cut": lambda: (-np.exp(u(np.log(1e-3), np.log(1e3), n)), _mag(rng, n, 1e-30, 1e-3)),
        "cut1": lambda: (-1 - np.exp(u(np.log(1e-3), np.log(1e3), n)),
                         _mag(rng, n, 1e-30, 1e-3)),
        "circle": lambda: _polar(rng, n, 1.0),
        "circle1": lambda: _shift(_polar(rng, n, 1.0), -1.0),
        "trig": lambda: (u(-30, 30, n), u(-10, 10, n)),
        "exp": lambda: (u(-80, 80, n), u(-30, 30, n)),
        "exp_t": lambda: (u(-30, 30, n), u(-80, 80, n)),
        "exp_y2": lambda: (u(-80, 80, n), u(-2, 2, n)),
        "exp_edge": lambda: (u(edge - 0.5, edge + 1.5, n), u(-30, 30, n)),
        "cosh": lambda: (u(-30, 30, n), u(-80, 80, n)),
        "cosh_edge": lambda: (u(-30, 30, n), _mag(rng, n, edge - 0.5, edge + 1.5)),
    }[kind]()
    cdt = np.complex64 if dtype == F32 else np.complex128
    return (np.asarray(x) + 1j * np.asarray(y)).astype(cdt)


def _shift(xy, dx):
    return xy[0] + dx, xy[1]


def _polar(rng, n, r0):
    t = rng.uniform(-np.pi, np.pi, n)
    r = r0 + rng.normal(0, 1e-3, n) * rng.choice([1.0, 1e-4], n)
    return r * np.cos(t), r * np.sin(t)


def reference(name, z, w=None, **params):
    """The exact-enough result in complex long double. log1p and expm1 by
    formulas whose only cancellation is the inherent one (NumPy's complex
    log1p and expm1 lose the small part)."""
    z = z.astype(LD)
    with np.errstate(all="ignore"):
        x, y = z.real, z.imag
        if name == "log1p":
            u = 2 * x + (x * x + y * y)
            re = np.where(u >= -0.5, 0.5 * np.log1p(u), np.log(np.hypot(1 + x, y)))
            return re + 1j * np.arctan2(y, 1 + x)
        if name == "expm1":
            return (np.expm1(x) * np.cos(y) - 2 * np.sin(y / 2) ** 2) + 1j * (np.exp(x) * np.sin(y))
        if name == "integer_pow":
            return z ** params["y"]
        fns = {"neg": np.negative, "abs": np.abs, "sign": lambda v: v / np.abs(v),
               "rsqrt": lambda v: 1 / np.sqrt(v), "logistic": lambda v: 1 / (1 + np.exp(-v)),
               "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
               "pow": np.power}
        fn = fns.get(name) or getattr(np, name)
        return fn(z) if w is None else fn(z, w.astype(LD))


def run(name, z, w=None, **params):
    """COMPLEX_MATH[name] compiled over the parts of z (and w); complex result
    (or the real result of abs, eq, ne)."""
    f = COMPLEX_MATH[name]
    parts = [z.real.copy(), z.imag.copy()]
    if w is None:
        out = jx.jit(lambda a, b: f((a, b), **params))(*parts)
    else:
        out = jx.jit(lambda a, b, c, d: f((a, b), (c, d), **params))(
            *parts, w.real.copy(), w.imag.copy())
    if isinstance(out, tuple):
        return _complex(*(np.asarray(v) for v in out))
    return np.asarray(out)


def _complex(re, im):
    out = np.empty(re.shape, np.complex64 if re.dtype == F32 else np.complex128)
    out.real, out.imag = re, im
    return out


def ulp_errors(got, want, dtype, measure):
    """Per point, the larger of the two parts' errors in ulp (see the module
    docstring), over points whose reference is finite in dtype."""
    g, w = got.astype(LD), want.astype(LD)

    def ulp(v):
        return np.spacing(np.abs(v).astype(np.float64).astype(dtype)).astype(np.longdouble)

    with np.errstate(all="ignore"):
        size = np.abs(w)
        fin = np.isfinite(w.real.astype(dtype)) & np.isfinite(w.imag.astype(dtype)) & \
            np.isfinite(size.astype(dtype))
        err = np.zeros(g.shape, np.float64)
        for part, how in zip(("real", "imag"), measure):
            if how is None:
                continue
            gp, wp = getattr(g, part), getattr(w, part)
            err = np.maximum(err, (np.abs(gp - wp) / ulp(wp if how == "comp" else size))
                             .astype(np.float64))
    return np.where(fin, err, 0.0)


@functools.cache
def measured(name: str, dtype) -> float:
    """The largest error over the function's ranges (one compile, all ranges)."""
    rng = np.random.default_rng(zlib.crc32(f"{name} {dtype}".encode()))
    table = UNARY if name in UNARY else BINARY
    kinds, measure, _ = table[name]
    z = np.concatenate([sample(k, dtype, rng) for k in kinds])
    w = np.concatenate([sample(k, dtype, rng) for k in kinds]) if name in BINARY else None
    got = run(name, z, w)
    if name == "abs":
        got = got.astype(z.dtype)
    return float(ulp_errors(got, reference(name, z, w), dtype, measure).max())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(UNARY) + list(BINARY))
def test_accuracy(name, dtype):
    limit = (UNARY if name in UNARY else BINARY)[name][2]
    err = measured(name, dtype)
    assert err <= max(limit, 0.5), f"{name} {dtype}: {err:.2f} ulp > {limit}"


def pow_error(dtype) -> float:
    """pow's relative error in units of eps (1 + |b log a|): the exponent's
    rounding is amplified by |b log a|, as for any exp-log power."""
    rng = np.random.default_rng(7)
    z = np.concatenate([sample("unit", dtype, rng), sample("wide", dtype, rng)])
    w = sample("unit", dtype, rng, len(z)) * 1.5
    got, want = run("pow", z, w).astype(LD), reference("pow", z, w)
    with np.errstate(all="ignore"):
        scale = np.finfo(dtype).eps * (1 + np.abs(w.astype(LD) * np.log(z.astype(LD))))
        rel = np.abs(got - want) / np.abs(want) / scale
    return float(rel[np.isfinite(rel)].max())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_pow_accuracy(dtype):
    assert pow_error(dtype) <= 2


def integer_pow_errors(dtype) -> dict:
    """integer_pow's normwise relative error in units of eps, per exponent."""
    rng = np.random.default_rng(8)
    z = np.concatenate([sample("unit", dtype, rng), sample("small", dtype, rng)])
    fi = np.finfo(dtype)
    out = {}
    for y in INTEGER_POWERS:
        got, want = run("integer_pow", z, y=y).astype(LD), reference("integer_pow", z, y=y)
        with np.errstate(all="ignore"):
            rel = np.abs(got - want) / np.abs(want) / fi.eps
            normal = (np.abs(want) > fi.tiny / fi.eps) & (np.abs(want) < fi.max)
        out[y] = float(rel[normal].max())
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_integer_pow_accuracy(dtype):
    for y, err in integer_pow_errors(dtype).items():
        assert err <= max(2 * abs(y), 0.5), (y, err)     # y = 0, 1: exact


def test_branch_cuts_follow_the_sign_of_zero():
    z = np.array([complex(-4, -0.0), complex(-4, 0.0), complex(-0.25, -0.0)], np.complex64)
    np.testing.assert_array_equal(run("sqrt", z), [-2j, 2j, -0.5j])
    assert np.signbit(run("sqrt", z).imag).tolist() == [True, False, True]
    log = run("log", z)
    assert log.imag.tolist() == pytest.approx([-np.pi, np.pi, -np.pi])


def test_no_spurious_overflow():
    big = np.float32(2e38)
    z = np.array([big + big * 1j, 1e-40 + 1e-41j, 1e30 + 1e30j], np.complex64)
    np.testing.assert_allclose(run("abs", z), np.abs(z.astype(np.complex128)), rtol=1e-6,
                               atol=1e-44)       # (1e-40 is subnormal)
    np.testing.assert_allclose(run("sqrt", z), np.sqrt(z.astype(np.complex128)), rtol=1e-6)
    np.testing.assert_allclose(run("log", z), np.log(z.astype(np.complex128)), rtol=1e-6)
    q = run("div", np.array([1 + 1j], np.complex64), np.array([big + big * 1j], np.complex64))
    np.testing.assert_allclose(q, [(1 + 1j) / (2e38 + 2e38j)], rtol=1e-5)
    q = run("div", np.array([1e-30 + 1e-30j], np.complex64), np.array([1e-42 + 0j], np.complex64))
    np.testing.assert_allclose(q, [complex(np.complex64(1e-30 + 1e-30j)) / float(np.float32(1e-42))],
                               rtol=1e-6)
    t = run("tanh", np.array([100 + 1j, -500 + 2j, 1e30 + 0.5j], np.complex64))
    np.testing.assert_allclose(t, np.tanh(np.array([100 + 1j, -500 + 2j, 1e30 + 0.5j])),
                               rtol=1e-6, atol=1e-30)
    e = run("exp", np.array([88.9 + 0.8j], np.complex64))     # e^88.9 overflows; the parts do not
    np.testing.assert_allclose(e, np.exp(np.complex64(88.9 + 0.8j).astype(np.complex128)), rtol=1e-5)


def test_comparisons():
    a = np.array([1 + 2j, 1 + 2j, np.nan + 0j, 0 - 0j], np.complex64)
    b = np.array([1 + 2j, 1 - 2j, np.nan + 0j, 0 + 0j], np.complex64)
    assert run("eq", a, b).tolist() == (a == b).tolist() == [True, False, False, True]
    assert run("ne", a, b).tolist() == (a != b).tolist()


# ---------------------------------------------------------------- special values

VALS = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan]
# Documented differences from JAX where NumPy (C99) also differs from us:
# expm1's real-argument zero keeps y's sign past x = +-inf and NaN, as exp's;
# logistic(-inf + yi) has zero parts whose signs JAX takes from its own formula.
ALSO_ALLOWED = {"expm1": lambda z: (z.imag == 0) & ~np.isfinite(z.real),
                "logistic": lambda z: z.real == -np.inf}


def _same(g, w, scale):
    """Equal (any NaN matches any NaN; zero signs count), or finite and within
    16 eps of scale (JAX's own roundings differ from ours)."""
    eps = np.finfo(g.dtype).eps
    with np.errstate(all="ignore"):
        close = np.isfinite(g) & np.isfinite(w) & (np.abs(g - w) <= 16 * eps * scale) & \
            ~((g == 0) & (w == 0))
    return close | (np.isnan(g) & np.isnan(w)) | ((g == w) & (np.signbit(g) == np.signbit(w)))


def _matches(got, want):
    if got.dtype.kind in "bf":
        return got == want if got.dtype.kind == "b" else _same(got, want.real, np.abs(want))
    scale = np.maximum(np.abs(want.real), np.abs(want.imag))
    return _same(got.real, want.real, scale) & _same(got.imag, want.imag, scale)


def numpy_value(name, a, b=None, **params):
    """NumPy's own result in a's precision (its special values are C99's)."""
    fns = {"rsqrt": lambda v: 1 / np.sqrt(v), "logistic": lambda v: 1 / (1 + np.exp(-v)),
           "neg": np.negative, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
           "pow": np.power, "eq": np.equal, "ne": np.not_equal,
           "integer_pow": lambda v: v ** params["y"]}
    fn = fns.get(name) or getattr(np, name)
    with np.errstate(all="ignore"):
        return np.asarray(fn(a) if b is None else fn(a, b))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(COMPLEX_MATH))
def test_special_values(name, dtype):
    jax = pytest.importorskip("jax")
    cdt = np.complex64 if dtype == F32 else np.complex128
    z = np.array([complex(a, b) for a in VALS for b in VALS], cdt)
    binary = name in ("add", "sub", "mul", "div", "pow", "eq", "ne")
    a, b = (np.repeat(z, len(z)), np.tile(z, len(z))) if binary else (z, None)
    for params in ([{"y": y} for y in INTEGER_POWERS] if name == "integer_pow" else [{}]):
        got = run(name, a, b, **params)
        with jax.enable_x64(dtype == F64):
            fn = (lambda v: jax.lax.integer_pow(v, **params)) if params else getattr(jax.lax, name)
            want = np.asarray(fn(a) if b is None else fn(a, b))
        numpy = numpy_value(name, a, b, **params)
        ok = _matches(got, want) | _matches(got, numpy)
        if name in ALSO_ALLOWED:
            ok |= ALSO_ALLOWED[name](a)
        bad = np.flatnonzero(~ok)
        assert not bad.size, f"{name}{params} {dtype}: " + ", ".join(
            f"{a[i]}{'' if b is None else f' op {b[i]}'} -> {got[i]} (JAX {want[i]}, "
            f"NumPy {numpy[i]})" for i in bad[:6])


if __name__ == "__main__":
    from jx import flags
    for dt in DTYPES:
        with flags.enable_x64(dt == F64):
            for name in list(UNARY) + list(BINARY):
                print(f"{dt.name:8s} {name:9s} {measured(name, dt):6.2f} ulp "
                      f"({'/'.join(m or '-' for m in (UNARY | BINARY)[name][1])})")
            print(f"{dt.name:8s} pow       {pow_error(dt):6.2f} eps (1 + |b log a|)")
            print(f"{dt.name:8s} integer_pow (eps, per y) "
                  f"{ {y: round(e, 2) for y, e in integer_pow_errors(dt).items()} }")
