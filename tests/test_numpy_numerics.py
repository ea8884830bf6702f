"""jx.numpy's numerical routines (histograms, interp, cov, convolve, finite
differences, nan- reductions, partition, float anatomy, bits, polynomials, set
operations, windows) against NumPy, and against jax.numpy where it is installed:
values and dtypes, eagerly and under jx.jit, in 32- and 64-bit mode."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import jx
import jx.numpy as jnp

RNG = np.random.default_rng(0)


def _jax():
    return pytest.importorskip("jax")


@contextlib.contextmanager
def x64(on=True):
    """64-bit mode in jx and, where installed, in the JAX it is compared with."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(jx.enable_x64(on))
        try:
            import jax
        except ImportError:
            pass
        else:
            stack.enter_context(jax.enable_x64(on))
        yield


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    return np.asarray(x)


def close(got, want, rtol=1e-5, atol=1e-6, dtype=True):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            close(g, w, rtol, atol, dtype)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if dtype:
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
    if g.dtype.kind in "fc":
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def vs_jax(name, *args, rtol=1e-5, atol=1e-6, jit=True, static=(), **kw):
    """jx.numpy.<name> and jax.numpy.<name> on the same arguments: equal values and
    dtypes, eagerly and (array arguments traced) under jx.jit."""
    jax = _jax()
    want = getattr(jax.numpy, name)(*args, **kw)
    got = getattr(jnp, name)(*args, **kw)
    close(got, _np(want) if isinstance(want, (tuple, list)) else want, rtol, atol)
    if jit:
        traced = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)
                  and i not in static]

        def f(*t):
            full = list(args)
            for i, v in zip(traced, t):
                full[i] = v
            return getattr(jnp, name)(*full, **kw)
        got = jx.jit(f)(*[args[i] for i in traced])
        close(got, _np(want) if isinstance(want, (tuple, list)) else want, rtol, atol)
    return got


def rand(shape, dtype=np.float32, lo=-3, hi=3):
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(lo, hi, shape).astype(dtype)
    return RNG.uniform(lo, hi, shape).astype(dtype)


# ------------------------------------------------------------------ counting


@pytest.mark.parametrize("n", [0, 1, 7, 50])
def test_bincount(n):
    x = rand((n,), np.int32, 0, 9)
    w = rand((n,))
    np.testing.assert_array_equal(jnp.bincount(x), np.bincount(x))
    vs_jax("bincount", x, length=12)
    vs_jax("bincount", x, w, length=5)          # values past length are dropped
    vs_jax("bincount", x, minlength=15, jit=False)
    got = jx.jit(lambda x, w: jnp.bincount(x, w, length=10))(x, w)
    close(got, np.bincount(x, w, minlength=10)[:10].astype(np.float32))


def test_bincount_negative_counts_as_zero_and_errors():
    vs_jax("bincount", np.array([-2, 0, 3], np.int32), length=4)
    with pytest.raises(TypeError, match="length="):
        jx.jit(jnp.bincount)(np.array([1, 2], np.int32))
    with pytest.raises(TypeError, match="integer dtype"):
        jnp.bincount(np.array([1.0]))
    with pytest.raises(jx.ShapeError, match="1-d"):
        jnp.bincount(np.ones((2, 2), np.int32))


@pytest.mark.parametrize("bins", [1, 5, 10])
def test_histogram(bins):
    a = rand((40,))
    w = rand((40,), lo=0, hi=1)
    vs_jax("histogram", a, bins)
    vs_jax("histogram", a, bins, range=(-1.0, 2.0), weights=w)
    vs_jax("histogram", a, bins, density=True)
    vs_jax("histogram_bin_edges", a, bins)
    counts, edges = jnp.histogram(a, bins)
    want_c, want_e = np.histogram(a, bins)
    np.testing.assert_array_equal(counts, want_c)
    np.testing.assert_allclose(edges, want_e, rtol=1e-5)
    vs_jax("histogram", a, np.array([-2.0, 0.0, 0.5, 3.0], np.float32))
    vs_jax("histogram", np.full(5, 2.0, np.float32), 4)      # an empty range widens


def test_histogram_errors():
    with pytest.raises(NotImplementedError, match="string bins"):
        jnp.histogram(np.ones(3), "auto")
    with pytest.raises(TypeError, match="bins"):
        jx.jit(lambda b: jnp.histogram(np.ones(3), b))(3)


def test_histogram2d_and_dd():
    x, y = rand((30,)), rand((30,))
    w = rand((30,), lo=0, hi=1)
    vs_jax("histogram2d", x, y, 4)
    vs_jax("histogram2d", x, y, [3, 5], weights=w, density=True, jit=False)
    vs_jax("histogram2d", x, y, 3, range=[(-1.0, 1.0), (-2.0, 2.0)])
    s = rand((25, 3))
    vs_jax("histogramdd", s, [2, 3, 4], jit=False)
    got, edges = jnp.histogramdd(s, 3)
    want, wedges = np.histogramdd(s, 3)
    np.testing.assert_array_equal(got, want)
    for g, w in zip(edges, wedges):
        np.testing.assert_allclose(g, w, rtol=1e-5)


@pytest.mark.parametrize("right", [False, True])
def test_digitize(right):
    x = rand((4, 5))
    x[0, 0] = 1.0                            # on an edge
    inc = np.array([-1.0, 0.0, 1.0, 2.5], np.float32)
    vs_jax("digitize", x, inc, right)
    vs_jax("digitize", x, inc[::-1].copy(), right)
    np.testing.assert_array_equal(jnp.digitize(x, inc, right), np.digitize(x, inc, right))
    vs_jax("digitize", x, np.zeros(0, np.float32), jit=False)


def test_interp():
    xp = np.sort(rand((8,)))
    fp = rand((8,))
    x = rand((3, 7), lo=-4, hi=4)
    vs_jax("interp", x, xp, fp)
    vs_jax("interp", x, xp, fp, left=-9.0, right=9.0)
    vs_jax("interp", x, xp, fp, left="extrapolate", right="extrapolate")
    vs_jax("interp", x, xp, fp, period=2.0)
    np.testing.assert_allclose(jnp.interp(x, xp, fp), np.interp(x, xp, fp), rtol=1e-5,
                               atol=1e-6)
    g = jx.grad(lambda x: jnp.interp(x, xp, fp).sum())(x)
    jax = _jax()
    want = jax.grad(lambda x: jax.numpy.interp(x, xp, fp).sum())(x)
    close(g, want, rtol=1e-4)
    with pytest.raises(ValueError, match="extrapolate"):
        jnp.interp(x, xp, fp, left="other")


# ---------------------------------------------------------------- statistics


@pytest.mark.parametrize("shape", [(3, 6), (1, 5), (6,), (2, 1)])
def test_cov_corrcoef(shape):
    m = rand(shape)
    vs_jax("cov", m)
    vs_jax("cov", m, rowvar=False)
    vs_jax("cov", m, bias=True)
    vs_jax("cov", m, ddof=0)
    vs_jax("corrcoef", m, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(jnp.cov(m), np.cov(m), rtol=1e-4, atol=1e-6)


def test_cov_weights_and_y():
    m = rand((3, 8))
    y = rand((2, 8))
    fw = rand((8,), np.int32, 1, 4)
    aw = rand((8,), lo=0.1, hi=1)
    vs_jax("cov", m, y)
    vs_jax("cov", m, fweights=fw)
    vs_jax("cov", m, aweights=aw)
    vs_jax("cov", m, fweights=fw, aweights=aw, ddof=2)
    vs_jax("corrcoef", m, y, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(jnp.cov(m, fweights=fw, aweights=aw),
                               np.cov(m, fweights=fw, aweights=aw), rtol=1e-4, atol=1e-6)
    with pytest.raises(TypeError, match="fweights"):
        jnp.cov(m, fweights=aw)
    vs_jax("cov", np.zeros((2, 0), np.float32), jit=False)


# --------------------------------------------------------------- convolution


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("na,nv", [(7, 3), (3, 7), (1, 1), (10, 4), (5, 5)])
def test_convolve_correlate(mode, na, nv):
    a, v = rand((na,)), rand((nv,))
    vs_jax("convolve", a, v, mode, rtol=1e-4, atol=1e-5)
    vs_jax("correlate", a, v, mode, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(jnp.convolve(a, v, mode), np.convolve(a, v, mode),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(jnp.correlate(a, v, mode), np.correlate(a, v, mode),
                               rtol=1e-4, atol=1e-5)


def test_convolve_ints_grad_and_errors():
    vs_jax("convolve", np.arange(5, dtype=np.int32), np.array([1, 2], np.int32))
    vs_jax("convolve", np.arange(5, dtype=np.int32), np.array([1, 2], np.int32),
           preferred_element_type=np.int32)
    a, v = rand((6,)), rand((3,))
    jax = _jax()
    close(jx.grad(lambda a: jnp.convolve(a, v).sum() ** 2)(a),
          jax.grad(lambda a: jax.numpy.convolve(a, v).sum() ** 2)(a), rtol=1e-4)
    with pytest.raises(ValueError, match="mode"):
        jnp.convolve(a, v, "circular")
    with pytest.raises(ValueError, match="empty"):
        jnp.correlate(a, np.zeros(0, np.float32))


# --------------------------------------------------------- finite differences


@pytest.mark.parametrize("shape,axis", [((6,), -1), ((4, 5), 0), ((3, 4, 2), 1)])
def test_trapezoid_gradient_unwrap(shape, axis):
    y = rand(shape)
    vs_jax("trapezoid", y, axis=axis)
    vs_jax("trapezoid", y, dx=0.5, axis=axis)
    x = np.sort(rand((shape[axis],)))
    vs_jax("trapezoid", y, x, axis=axis, rtol=1e-4)
    vs_jax("gradient", y, axis=axis)
    vs_jax("gradient", y, 0.5, axis=axis)
    vs_jax("gradient", y, x, axis=axis, rtol=1e-4, atol=1e-4)
    vs_jax("gradient", y)
    vs_jax("unwrap", rand(shape, lo=-10, hi=10), axis=axis)
    vs_jax("unwrap", rand(shape, lo=-10, hi=10), axis=axis, period=4.0, discont=3.0)
    np.testing.assert_allclose(jnp.trapezoid(y, axis=axis), np.trapezoid(y, axis=axis),
                               rtol=1e-5, atol=1e-5)


def test_unwrap_ints_and_gradient_errors():
    vs_jax("unwrap", np.array([0, 7, 15, 3, -20], np.int32), period=10)
    with pytest.raises(ValueError, match="at least 2"):
        jnp.gradient(np.ones((1, 3)))
    with pytest.raises(NotImplementedError, match="edge_order"):
        jnp.gradient(np.ones(4), edge_order=2)


# -------------------------------------------------------------- nan functions


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nan_functions(axis):
    a = rand((4, 5))
    a[0, 1] = a[2, 3] = np.nan
    a[3] = np.nan
    for name in ["nanargmax", "nanargmin", "nanvar", "nanstd", "nancumsum", "nancumprod"]:
        vs_jax(name, a, axis=axis)
    vs_jax("nanvar", a, axis=axis, ddof=1, keepdims=True)
    vs_jax("nanargmax", a, axis=axis, keepdims=True)
    ints = rand((3, 4), np.int32)
    vs_jax("nanargmin", ints, axis=axis)
    vs_jax("nancumsum", ints, axis=axis)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(jnp.nanvar(a[:3], axis=axis), np.nanvar(a[:3], axis=axis),
                                   rtol=1e-5)
    jax = _jax()
    close(jx.grad(lambda a: jnp.nanstd(a[:3]))(a), jax.grad(lambda a: jax.numpy.nanstd(a[:3]))(a),
          rtol=1e-4)


# ----------------------------------------------------------------- partition


@pytest.mark.parametrize("shape,kth,axis", [((7,), 3, -1), ((4, 6), 0, 1), ((5, 3), -1, 0),
                                            ((2, 3, 4), 2, -1)])
def test_partition(shape, kth, axis):
    for dt in (np.float32, np.int32, np.uint8):
        a = rand(shape, dt, 0, 5)             # ties
        vs_jax("partition", a, kth, axis=axis)
        vs_jax("argpartition", a, kth, axis=axis)
    with pytest.raises(ValueError, match="kth"):
        jnp.partition(np.ones(3), 5)


# ---------------------------------------------------------------- elementwise


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.uint16, np.int64])
def test_gcd_lcm(dt):
    with x64(dt == np.int64):
        lo = 0 if np.dtype(dt).kind == "u" else -50
        a, b = rand((20,), dt, lo, 50), rand((20,), dt, lo, 50)
        a[0] = b[0] = 0
        vs_jax("gcd", a, b)
        vs_jax("lcm", a, b)
        np.testing.assert_array_equal(jnp.gcd(a, b), np.gcd(a, b))
    big = np.array([2 ** 30, 1836311903, 1134903170], np.int32)   # Fibonacci: Euclid's worst
    vs_jax("gcd", big, np.array([2 ** 29 * 3, 1134903170, 701408733], np.int32))
    with pytest.raises(TypeError, match="integers"):
        jnp.gcd(1.5, 2)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_float_anatomy(dt):
    with x64(dt == np.float64):
        fi = np.finfo(dt)
        x = np.concatenate([rand((20,), dt, -100, 100), np.array(
            [0, -0.0, np.inf, -np.inf, np.nan, fi.tiny, fi.tiny / 4, -fi.smallest_subnormal,
             fi.max, 1, -1, 0.5], dt)])
        # JAX's frexp (and so ldexp) is wrong for subnormal floats and its float16
        # spacing(-inf) is inf where NumPy's is nan: those are checked against NumPy
        normal = x[(np.abs(x) >= fi.tiny) | (x == 0) | ~np.isfinite(x)]
        for name in ["frexp", "modf", "spacing"]:     # (JAX flushes subnormal results)
            vs_jax(name, normal, atol=0, rtol=0)
        m, e = jnp.frexp(x)
        wm, we = np.frexp(x)
        close(m, wm, atol=0, rtol=0)
        close(e, we.astype(np.int32), atol=0, rtol=0)
        with np.errstate(all="ignore"):
            finite = x[np.isfinite(x) & ~((x == 0) & np.signbit(x))]    # JAX: -0 -> -tiny
            close(jnp.spacing(finite), np.spacing(finite), atol=0, rtol=0)
            ex = rand((x.shape[0],), np.int32, -30, 30)
            close(jnp.ldexp(x, ex), np.ldexp(x, ex), atol=0, rtol=0)
        vs_jax("ldexp", normal, ex[:normal.shape[0]], atol=float(fi.tiny), rtol=0)
        vs_jax("ldexp", np.array([fi.tiny, fi.max / 2, 3.0], dt), np.array([-4, 1, -1000],
                                                                            np.int32))
    with pytest.raises(TypeError, match="integer"):
        jnp.ldexp(1.0, 2.5)


def test_sinc_i0():
    x = np.concatenate([rand((30,), lo=-30, hi=30), np.array([0.0, 1.0, -2.0, 25.0, 19.9,
                                                              20.1], np.float32)])
    vs_jax("sinc", x)
    vs_jax("i0", x, rtol=2e-6)
    np.testing.assert_allclose(jnp.i0(x), np.i0(x.astype(np.float64)), rtol=2e-6)
    with x64():
        xd = np.linspace(-80, 80, 101)
        np.testing.assert_allclose(jnp.i0(xd), np.i0(xd), rtol=1e-14)
        np.testing.assert_allclose(jnp.sinc(xd), np.sinc(xd), rtol=1e-14, atol=1e-16)
    jax = _jax()
    for order in (1, 2, 3, 4):
        f, g = jnp.sinc, jax.numpy.sinc
        for _ in range(order):
            f, g = jx.grad(f), jax.grad(g)
        np.testing.assert_allclose(f(0.0), g(0.0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(f(0.3), g(0.3), rtol=1e-4, atol=1e-5)
    close(jx.grad(lambda x: jnp.i0(x).sum())(x[:30] / 3),
          jax.grad(lambda x: jax.numpy.i0(x).sum())(x[:30] / 3), rtol=1e-4)
    assert float(jx.grad(jnp.i0)(0.0)) == 0.0


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64,
                                np.uint64, np.bool_])
def test_bitwise_count(dt):
    with x64(np.dtype(dt).itemsize == 8):
        if dt == np.bool_:
            x = RNG.integers(0, 2, 10).astype(bool)
        else:
            info = np.iinfo(dt)
            x = RNG.integers(info.min, info.max, 30, dtype=dt, endpoint=True)
            x[:2] = [info.min, info.max]
        vs_jax("bitwise_count", x)
        close(jnp.bitwise_count(x), np.bitwise_count(x))


@pytest.mark.parametrize("shape,axis", [((13,), None), ((3, 10), 1), ((9, 2), 0),
                                        ((2, 3, 4), None)])
@pytest.mark.parametrize("order", ["big", "little"])
def test_packbits(shape, axis, order):
    a = RNG.integers(0, 3, shape).astype(np.int32)
    vs_jax("packbits", a, axis, order)
    close(jnp.packbits(a, axis, order), np.packbits(a, axis, bitorder=order))
    b = RNG.integers(0, 256, shape).astype(np.uint8)
    for count in (None, 3, 40):
        vs_jax("unpackbits", b, axis, count, order)
        close(jnp.unpackbits(b, axis, count, order),
              np.unpackbits(b, axis, count, bitorder=order))
    with pytest.raises(TypeError, match="uint8"):
        jnp.unpackbits(a)
    with pytest.raises(ValueError, match="bitorder"):
        jnp.packbits(a, bitorder="middle")


# ---------------------------------------------------------------- polynomials


@pytest.mark.parametrize("n1,n2", [(1, 1), (3, 2), (2, 5), (4, 4)])
def test_polynomials(n1, n2):
    p, q = rand((n1,)), rand((n2,))
    q[0] = 1.5
    x = rand((3, 4))
    vs_jax("polyval", p, x)
    vs_jax("polyval", p, 2.0)
    for name in ["polyadd", "polysub", "polymul"]:
        vs_jax(name, p, q, rtol=1e-4)
    vs_jax("polydiv", p, q, rtol=1e-4, atol=1e-4)
    for m in (0, 1, 2):
        vs_jax("polyder", p, m)
        vs_jax("polyint", p, m)
    vs_jax("polyint", p, 2, k=np.array([1.0, 2.0], np.float32))
    vs_jax("poly", p, rtol=1e-4)
    np.testing.assert_allclose(jnp.polyval(p, x), np.polyval(p, x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jnp.polymul(p, q), np.polymul(p, q), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jnp.poly(p), np.poly(p), rtol=1e-5, atol=1e-5)
    vs_jax("polyval", rand((3, 2)), rand((2,)))       # several polynomials at once
    vs_jax("polyval", np.arange(3, dtype=np.int32), np.arange(4, dtype=np.int32))


def test_polynomial_trims_and_errors():
    p = np.array([0.0, 0.0, 1.0, 2.0], np.float32)
    vs_jax("polymul", p, p, trim_leading_zeros=True, jit=False)
    vs_jax("polydiv", np.array([1.0, 3.0, 2.0], np.float32), np.array([1.0, 1.0], np.float32),
           trim_leading_zeros=True, jit=False)
    with pytest.raises(TypeError, match="trim_leading_zeros"):
        jx.jit(lambda p: jnp.polymul(p, p, trim_leading_zeros=True))(p)
    with pytest.raises(NotImplementedError, match="eigvals"):
        jnp.poly(np.eye(2))
    with pytest.raises(ValueError, match="non-negative"):
        jnp.polyder(p, -1)


# ------------------------------------------------------------ set operations


@pytest.mark.parametrize("n1,n2,dt", [(0, 4, np.int32), (5, 0, np.int32), (6, 4, np.int32),
                                      (10, 10, np.int32), (7, 5, np.float32)])
def test_set_operations(n1, n2, dt):
    a, b = rand((n1,), dt, 0, 6), rand((n2,), dt, 0, 6)
    if dt == np.float32:
        a, b = np.round(a), np.round(b)
    for name in ["intersect1d", "union1d", "setdiff1d", "setxor1d"]:
        vs_jax(name, a, b, jit=False)
        want = getattr(np, name)(a, b)
        close(getattr(jnp, name)(a, b), want, dtype=False)
        for size in (1, 12):              # JAX's size=0 raises
            vs_jax(name, a, b, size=size, jit=size == 12 and dt == np.int32)
        vs_jax(name, a, b, size=3, fill_value=-1, jit=False)
    vs_jax("intersect1d", a, b, return_indices=True, jit=False)
    if n1 and n2:                   # JAX's sized return_indices fails on an empty input
        vs_jax("intersect1d", a, b, return_indices=True, size=4, jit=dt == np.int32)
    else:
        v, i1, i2 = jnp.intersect1d(a, b, return_indices=True, size=2, fill_value=7)
        close(v, np.full(2, 7, dt))
        close(i1, np.full(2, n1, np.int32))
        close(i2, np.full(2, n2, np.int32))
    ua, ub = np.unique(a), np.unique(b)
    for name in ["intersect1d", "setdiff1d", "setxor1d"]:
        vs_jax(name, ua, ub, assume_unique=True, jit=False)
        vs_jax(name, ua[::-1].copy(), ub, assume_unique=True, size=5, jit=False)
    vs_jax("isin", a, b, jit=dt == np.int32)
    vs_jax("isin", a, b, invert=True, jit=False)
    vs_jax("isin", a.reshape(-1, 1) if n1 else a, b, method="binary_search", jit=False)
    close(jnp.isin(a, b), np.isin(a, b))


def test_set_operations_need_size_under_jit():
    a = np.array([1, 2, 3], np.int32)
    for name in ["intersect1d", "union1d", "setdiff1d", "setxor1d"]:
        with pytest.raises(TypeError, match="size="):
            jx.jit(getattr(jnp, name))(a, a)
    with pytest.raises(ValueError, match="method"):
        jnp.isin(a, a, method="hash")


# ----------------------------------------------------------- products, windows


def test_matvec_vecmat():
    vs_jax("matvec", rand((3, 4)), rand((4,)))
    vs_jax("matvec", rand((2, 3, 4)), rand((5, 1, 4)))
    vs_jax("vecmat", rand((3,)), rand((3, 4)))
    vs_jax("vecmat", rand((2, 1, 3)), rand((6, 3, 4)))
    with pytest.raises(jx.ShapeError, match="matvec"):
        jnp.matvec(rand((3,)), rand((3,)))


@pytest.mark.parametrize("M", [0, 1, 2, 7, 16])
def test_windows(M):
    for name in ["bartlett", "blackman", "hamming", "hanning"]:
        vs_jax(name, M, jit=False, atol=1e-6)
        np.testing.assert_allclose(getattr(jnp, name)(M), getattr(np, name)(M), atol=1e-6)
    vs_jax("kaiser", M, 4.0, jit=False, rtol=1e-5)
    np.testing.assert_allclose(jnp.kaiser(M, 4.0), np.kaiser(M, 4.0), rtol=1e-5, atol=1e-7)
    with x64():
        assert jnp.hanning(M).dtype == np.float64
        np.testing.assert_allclose(jnp.kaiser(M, 8.6), np.kaiser(M, 8.6), rtol=1e-13)


def test_x64_mode_dtypes():
    with x64():
        x = rand((10,), np.float64)
        vs_jax("histogram", x, 4)
        vs_jax("cov", x.reshape(2, 5))
        vs_jax("interp", x, np.sort(x), x)
        vs_jax("bincount", np.array([1, 2, 2], np.int64), length=4)
        vs_jax("convolve", x, x[:3])
        vs_jax("nanvar", x)
        vs_jax("digitize", x, np.array([0.0, 1.0]))
        vs_jax("argpartition", x, 3)
        vs_jax("nanargmax", x)
        vs_jax("frexp", x)
        vs_jax("bitwise_count", np.array([3, -7], np.int64))
        vs_jax("isin", x, x[:3])
        vs_jax("intersect1d", x, x[:3], return_indices=True, size=4)
        vs_jax("polyval", x[:3], x)
        vs_jax("gcd", np.array([12, 0], np.int64), np.array([18, 5], np.int64))


def test_weak_types_follow_jax():
    jax = _jax()
    for name, args in [("sinc", (0.5,)), ("i0", (1.0,)), ("spacing", (1.0,)),
                       ("polyval", (np.array([1.0, 2.0], np.float32), 2.0))]:
        got = getattr(jnp, name)(*args)
        want = getattr(jax.numpy, name)(*args)
        assert got.dtype == want.dtype, name


def test_gradients_match_jax():
    jax = _jax()
    m, y, p = rand((3, 6)), rand((7,)), rand((4,))
    xp = np.sort(rand((6,)))
    fns = {
        "cov": lambda n, m: n.cov(m, aweights=np.linspace(0.5, 1.5, 6, dtype=np.float32)),
        "corrcoef": lambda n, m: n.corrcoef(m),
        "trapezoid": lambda n, m: n.trapezoid(m, xp, axis=1),
        "gradient": lambda n, m: n.gradient(m, axis=1),
        "unwrap": lambda n, m: n.unwrap(m * 4),
        "polyval": lambda n, m: n.polyval(m[0], m[1]),
        "polydiv": lambda n, m: n.polydiv(m[0], m[1, :3])[1],
        "polyint": lambda n, m: n.polyint(m[0], 2, k=m[1, :2]),
        "correlate": lambda n, m: n.correlate(m[0], m[1, :3], "same"),
        "histogram": lambda n, m: n.histogram(m, 4, range=(-3.0, 3.0), weights=m * m)[0],
        "nanvar": lambda n, m: n.nanvar(m, axis=0, ddof=1),
        "modf": lambda n, m: n.modf(m)[0],
        "ldexp": lambda n, m: n.ldexp(m, 3),
        "kaiser": lambda n, m: n.kaiser(5, m[0, 0] + 4),
        "interp": lambda n, m: n.interp(m[0], xp, m[1], period=2.5),
    }
    for name, f in fns.items():
        got = jx.grad(lambda m: (f(jnp, m) ** 2).sum())(m)
        want = jax.grad(lambda m: (f(jax.numpy, m) ** 2).sum())(m)
        try:
            close(got, want, rtol=2e-4, atol=2e-5)
        except AssertionError as e:
            raise AssertionError(f"grad of {name}: {e}") from None


def test_vmap_and_jit_of_sized_results():
    x = rand((4, 10), np.int32, 0, 6)
    got = jx.vmap(lambda r: jnp.bincount(r, length=7))(x)
    close(got, np.stack([np.bincount(r, minlength=7) for r in x]).astype(np.int32))
    f = jx.jit(lambda a, b: jnp.setdiff1d(a, b, size=6, fill_value=-1))
    close(f(x[0], x[1]), np.pad(np.setdiff1d(x[0], x[1]), (0, 6))[:6] * 0 - 1 + np.pad(
        np.setdiff1d(x[0], x[1]) + 1, (0, 6))[:6])
    h = jx.vmap(lambda r: jnp.histogram(r, 3, range=(0.0, 6.0))[0])(x.astype(np.float32))
    close(h, np.stack([np.histogram(r, 3, range=(0, 6))[0] for r in x]).astype(np.float32))


def test_static_arguments_are_named_when_traced():
    x = np.arange(5, dtype=np.float32)
    for fn, what in [(lambda k: jnp.partition(x, k), "kth"),
                     (lambda m: jnp.polyder(x, m), "m"),
                     (lambda n: jnp.hanning(n), "M"),
                     (lambda n: jnp.bincount(x.astype(np.int32), length=n), "length"),
                     (lambda n: jnp.union1d(x, x, size=n), "size")]:
        with pytest.raises(TypeError, match=what):
            jx.jit(fn)(3)
    with pytest.raises(jx.ShapeError, match="xp and fp"):
        jnp.interp(x, x, x[:3])
    with pytest.raises(jx.ShapeError, match="1-d"):
        jnp.convolve(x.reshape(1, 5), x)
    with pytest.raises(ValueError, match="range"):
        jnp.histogram(x, 3, range=(1.0, 2.0, 3.0))
