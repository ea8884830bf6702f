"""Autodiff and vmap of complex code in float64/complex128, as JAX defines them
(its autodiff cookbook's complex section): grad of real functions of complex
inputs (the conjugate convention: grad of |z|**2 is 2 * conj(z)), holomorphic
grad/jacfwd/jacrev, jvp/vjp of non-holomorphic functions, all against finite
differences, the jvp/vjp pairing and JAX itself. test_complex_autodiff.py runs
the same programs in complex64."""
import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.core import PRIMITIVES, bind
from transform_harness import Case, case_tests

# JAX's own convert_element_type warns when it drops an imaginary part on purpose
pytestmark = [pytest.mark.x64,
              pytest.mark.filterwarnings("ignore:Casting complex values to real")]


def _prim(name):
    return lambda *xs: bind(PRIMITIVES[name], *xs)[0]


class Ops:
    """One program runs against jx and against JAX: the NumPy API as `np` plus
    lax's complex parts (jx's through its primitives, whatever jx.numpy offers)."""

    def __init__(self, np_, lax, real, imag, conj, complex_):
        self.np, self.lax = np_, lax
        self.real, self.imag, self.conj, self.complex = real, imag, conj, complex_

    def angle(self, z):
        return self.np.arctan2(self.imag(z), self.real(z))


JX = Ops(jnp, jx.lax, _prim("real"), _prim("imag"), _prim("conj"), _prim("complex"))


def jax_ops():
    jax = pytest.importorskip("jax")
    lax = jax.lax
    return Ops(jax.numpy, lax, lax.real, lax.imag, lax.conj, lax.complex)


def with_jax(fn):
    """fn(jax) with JAX in 64-bit mode (jx's mode is the test's)."""
    jax = pytest.importorskip("jax")
    with jax.enable_x64(True):
        return fn(jax)


# ---------------------------------------------------------------- the programs
# o: Ops; z: a complex vector of length 4 with Re z > 0 (off log's and sqrt's cut)
HOLOMORPHIC = {
    "poly": lambda o, z: 3 * z ** 3 - 2 * z + 1j,
    "exp": lambda o, z: o.np.exp(z) * z,
    "log": lambda o, z: o.np.log(z) / (1 + z * z),
    "sin_cos": lambda o, z: o.np.sin(z) + o.np.cos(z) ** 2,
    "tan_tanh": lambda o, z: o.np.tan(0.3 * z) - o.np.tanh(z),
    "sqrt_rsqrt": lambda o, z: o.np.sqrt(z) + o.lax.rsqrt(z + 1),
    "log1p_expm1": lambda o, z: o.np.log1p(z) * o.np.expm1(0.5 * z),
    "pow": lambda o, z: o.np.power(z, 1.5 + 0.5j) + o.np.power(2.0 + 1j, z),
    "prod_cumprod": lambda o, z: o.np.cumprod(z) * o.np.prod(z[1:]),
    "cumsum_dot": lambda o, z: o.np.cumsum(z) * o.np.dot(z, z[::-1]),
    "matmul": lambda o, z: o.np.matmul(o.np.outer(z, z) + 2 * o.np.eye(4), z),
    "indexing": lambda o, z: z[o.np.array([3, 0, 0, 2])] * o.lax.dynamic_slice(z, (1,), (4,)),
    "scatter_add": lambda o, z: o.np.zeros(4, z.dtype).at[o.np.array([0, 0, 3, 1])].add(z * z),
    "select": lambda o, z: o.np.where(o.np.arange(4) % 2 == 0, z * z, o.np.exp(z)),
    "structural": lambda o, z: o.np.concatenate([z[::-1], z[1:3]]).reshape(2, 3).T.sum(1),
}
NON_HOLOMORPHIC = {
    "abs": lambda o, z: o.np.abs(z) * z,
    "conj": lambda o, z: o.conj(z) * z ** 2,
    "real_imag": lambda o, z: o.real(z) * z + o.imag(z ** 2),
    "complex": lambda o, z: o.complex(o.imag(z), o.real(z) ** 2) * z,
    "angle": lambda o, z: o.angle(z) * z,
    "convert": lambda o, z: o.lax.convert_element_type(
        o.lax.convert_element_type(z * z, o.real(z).dtype), z.dtype) * z,
}
# JAX defines sign's derivative as zero, complex included (not the true z/|z| one):
# compared with JAX only
JAX_DEFINED = {"sign": lambda o, z: o.np.sign(z) * z}
# real-valued functions of complex inputs (jax.grad takes these)
REAL = {
    "abs2": lambda o, z: o.np.sum(o.np.abs(z) ** 2),
    "real_cube": lambda o, z: o.np.sum(o.real(z ** 3)),
    "abs_exp": lambda o, z: o.np.sum(o.np.abs(o.np.exp(z) / z)),
    "angle": lambda o, z: o.np.sum(o.angle(z) ** 2),
    "mixed": lambda o, z: o.np.sum(o.imag(o.np.log(z)) * o.real(o.conj(z) * z[::-1])),
    "norm_dot": lambda o, z: o.real(o.np.dot(o.conj(z), z)),
}
COMPLEX_OUT = {**HOLOMORPHIC, **NON_HOLOMORPHIC}
ALL = {**COMPLEX_OUT, **{"real_" + k: v for k, v in REAL.items()}}


def points(rng, shape=(4,), dtype=np.complex128):
    re = rng.uniform(0.3, 1.5, shape)
    im = rng.uniform(-1.0, 1.0, shape)
    return (re + 1j * im).astype(dtype)


def crandn(rng, shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def inner(a, b):
    """The real inner product of complex arrays: Re(sum(conj(a) * b))."""
    return float(np.real(np.sum(np.conj(a) * b)))


def close(got, want, tol=1e-9):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _rng(name, k=0):
    return np.random.default_rng(sum(map(ord, name)) * 13 + k)


def _jx(fn):
    return lambda z: fn(JX, z)


# ---------------------------------------------------------------- jvp and vjp

@pytest.mark.parametrize("name", sorted(ALL))
def test_jvp_matches_finite_differences_in_both_directions(name):
    """The real direction (t = 1), the imaginary one (t = i) and a random one: jvp
    is the R-linear derivative, holomorphic or not."""
    f, rng, eps = _jx(ALL[name]), _rng(name), 1e-6
    z = points(rng)
    for t in (np.ones(4, complex), 1j * np.ones(4), crandn(rng, 4)):
        y, ty = jx.jvp(f, (z,), (t,))
        fd = (np.asarray(f(z + eps * t)) - np.asarray(f(z - eps * t))) / (2 * eps)
        close(y, f(z), 1e-12)
        np.testing.assert_allclose(ty, fd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(ALL))
def test_vjp_is_the_transpose_of_jvp(name):
    """<conj(ct), jvp(t)> = <conj(vjp(ct)), t> in the real inner product
    Re(sum(conj(a) * b)): JAX's cotangents pair with tangents unconjugated."""
    f, rng = _jx(ALL[name]), _rng(name, 1)
    z = points(rng)
    t = crandn(rng, 4)
    y, vjp_fn = jx.vjp(f, z)
    _, ty = jx.jvp(f, (z,), (t,))
    ct = crandn(rng, np.shape(y)) if np.iscomplexobj(y) else rng.standard_normal(np.shape(y))
    (cz,) = vjp_fn(ct)
    assert np.asarray(cz).dtype == np.complex128
    assert np.isclose(inner(np.conj(ct), ty), inner(np.conj(cz), t), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", sorted(ALL) + sorted(JAX_DEFINED))
def test_jvp_and_vjp_match_jax(name):
    rng = _rng(name, 2)
    z, t = points(rng), crandn(rng, 4)

    def run(jax):
        o = jax_ops()
        jf = lambda v: {**ALL, **JAX_DEFINED}[name](o, v)   # noqa: E731
        y, ty = jax.jvp(jf, (z,), (t,))
        ct = crandn(rng, y.shape) if np.iscomplexobj(y) else rng.standard_normal(y.shape)
        return y, ty, ct, jax.vjp(jf, z)[1](ct)[0]
    y, ty, ct, cz = with_jax(run)
    f = _jx({**ALL, **JAX_DEFINED}[name])
    got_y, got_ty = jx.jvp(f, (z,), (t,))
    close(got_y, y)
    close(got_ty, ty)
    close(jx.vjp(f, z)[1](ct)[0], cz)


# jx.numpy's complex API, built on the primitives above
JNP_FUNCTIONS = {
    **{n: (lambda n: lambda m, z: getattr(m, n)(z) * z)(n) for n in (
        "real", "imag", "conj", "angle", "sinh", "cosh", "arcsin", "arccos", "arctan",
        "arcsinh", "arccosh", "arctanh", "exp2", "log10", "log2", "square", "reciprocal")},
    "maximum": lambda m, z: m.maximum(z, z[::-1]),
    "max_sort": lambda m, z: m.max(z) * m.sort(z),
    "var_std": lambda m, z: m.var(z) * z + m.std(z),
    "vdot": lambda m, z: m.vdot(z, z * z) * z,
    "norm": lambda m, z: m.linalg.norm(z) * z,
    "logaddexp": lambda m, z: m.logaddexp(z, z[::-1]),
}


@pytest.mark.parametrize("name", sorted(JNP_FUNCTIONS))
def test_jnp_complex_functions_match_jax(name):
    rng = _rng(name, 11)
    z, t = points(rng), crandn(rng, 4)
    ct = crandn(rng, 4)
    f = lambda v: JNP_FUNCTIONS[name](jnp, v)     # noqa: E731
    try:
        y, ty = jx.jvp(f, (z,), (t,))
    except (AttributeError, NotImplementedError) as e:
        pytest.skip(f"jx.numpy lacks it: {e}")

    def run(jax):
        jf = lambda v: JNP_FUNCTIONS[name](jax.numpy, v)    # noqa: E731
        return jax.jvp(jf, (z,), (t,)), jax.vjp(jf, z)[1](ct)[0]
    (want_y, want_ty), want_ct = with_jax(run)
    close(y, want_y)
    close(ty, want_ty)
    close(jx.vjp(f, z)[1](ct)[0], want_ct)


# ---------------------------------------------------------------- grad

@pytest.mark.parametrize("name", sorted(REAL))
def test_grad_of_real_function_is_df_dx_minus_i_df_dy(name):
    """JAX's convention for f: C -> R: grad f(z) = df/dx - i df/dy, the conjugate
    of the steepest-ascent direction."""
    f, eps = _jx(REAL[name]), 1e-6
    z = points(_rng(name, 3))
    g = jx.grad(f)(z)
    want = np.zeros(4, complex)
    for k in range(4):
        e = np.zeros(4)
        e[k] = eps
        dx = (f(z + e) - f(z - e)) / (2 * eps)
        dy = (f(z + 1j * e) - f(z - 1j * e)) / (2 * eps)
        want[k] = dx - 1j * dy
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(REAL))
def test_grad_of_real_function_matches_jax(name):
    z = points(_rng(name, 4))
    want = with_jax(lambda jax: jax.value_and_grad(lambda v: REAL[name](jax_ops(), v))(z))
    got = jx.value_and_grad(_jx(REAL[name]))(z)
    close(got[0], want[0])
    close(got[1], want[1])


def test_cookbook_values():
    """The numbers of JAX's cookbook-style examples at Python complex scalars."""
    assert complex(jx.grad(lambda z: jnp.abs(z) ** 2)(3 + 4j)) == pytest.approx(6 - 8j)
    assert complex(jx.grad(jnp.abs)(3 + 4j)) == pytest.approx(0.6 - 0.8j)
    assert complex(jx.grad(jnp.abs)(0j)) == 0       # zero at the kink, as JAX
    assert complex(jx.grad(lambda z: z * z, holomorphic=True)(1 + 2j)) == pytest.approx(2 + 4j)
    assert complex(jx.grad(jnp.sin, holomorphic=True)(1 + 1j)) == pytest.approx(
        np.cos(1 + 1j))
    # a real function of real inputs computed through complex intermediates
    f = lambda x: JX.real(jnp.exp(JX.complex(x, 2 * x)))    # noqa: E731  e^x cos 2x
    assert float(jx.grad(f)(0.5)) == pytest.approx(
        np.exp(0.5) * (np.cos(1.0) - 2 * np.sin(1.0)))


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_grad_jacfwd_jacrev_match_jax(name):
    z = points(_rng(name, 5))
    f = _jx(HOLOMORPHIC[name])

    def run(jax):
        jf = lambda v: HOLOMORPHIC[name](jax_ops(), v)   # noqa: E731
        return (jax.grad(lambda v: jf(v)[2], holomorphic=True)(z),
                jax.jacfwd(jf, holomorphic=True)(z), jax.jacrev(jf, holomorphic=True)(z))
    g, jf_, jr = with_jax(run)
    close(jx.grad(lambda v: f(v)[2], holomorphic=True)(z), g)
    close(jx.jacfwd(f, holomorphic=True)(z), jf_)
    close(jx.jacrev(f, holomorphic=True)(z), jr)


def test_logistic_matches_jax():
    z = points(_rng("logistic"))
    t = crandn(_rng("logistic", 1), 4)
    y, ty = with_jax(lambda jax: jax.jvp(jax.nn.sigmoid, (z,), (t,)))
    got_y, got_ty = jx.jvp(jx.nn.sigmoid, (z,), (t,))
    close(got_y, y)
    close(got_ty, ty)


def test_holomorphic_derivatives_are_f_prime():
    z = points(_rng("fprime"))
    cases = [(lambda v: v ** 3, lambda v: 3 * v ** 2), (jnp.exp, np.exp),
             (jnp.log, lambda v: 1 / v), (jnp.sin, np.cos),
             (jnp.sqrt, lambda v: 0.5 / np.sqrt(v)), (jnp.tanh, lambda v: 1 / np.cosh(v) ** 2)]
    for f, df in cases:
        close(jx.jacfwd(f, holomorphic=True)(z), np.diag(df(z)))
        close(jx.jacrev(f, holomorphic=True)(z), np.diag(df(z)))
        close(jx.vmap(jx.grad(f, holomorphic=True))(z), df(z))


def test_value_and_grad_with_aux_and_linearize():
    z = points(_rng("aux"))
    (val, aux), g = jx.value_and_grad(lambda v: (jnp.sum(v ** 3), v[0]), has_aux=True,
                                      holomorphic=True)(z)
    close(val, np.sum(z ** 3))
    close(aux, z[0])
    close(g, 3 * z ** 2)
    t = crandn(_rng("aux", 1), 4)
    f = _jx(NON_HOLOMORPHIC["abs"])
    y, f_jvp = jx.linearize(f, z)
    close(y, f(z))
    close(f_jvp(t), jx.jvp(f, (z,), (t,))[1])


def test_holomorphic_second_derivatives():
    z = points(_rng("second"))
    f = lambda v: jnp.sum(v ** 4 + jnp.exp(v))   # noqa: E731
    want = np.diag(12 * z ** 2 + np.exp(z))
    close(jx.hessian(f, holomorphic=True)(z), want)
    g2 = jx.grad(jx.grad(lambda v: v ** 4, holomorphic=True), holomorphic=True)
    close(g2(z[0]), 12 * z[0] ** 2)
    close(jx.jacfwd(jx.jacrev(f, holomorphic=True), holomorphic=True)(z), want)


def test_hessian_of_real_function_of_real_inputs_through_complex():
    x = np.array([0.3, -0.7, 1.1])

    def f(o, v):
        return o.np.sum(o.real(o.np.exp(o.complex(v, v[::-1])))
                        * o.np.abs(o.complex(v, 1.0 + 0 * v)))
    want = with_jax(lambda jax: jax.hessian(lambda v: f(jax_ops(), v))(x))
    close(jx.hessian(lambda v: f(JX, v))(x), want)


def test_jacrev_of_real_output_in_complex_inputs_matches_jax():
    z = points(_rng("jacrev"))
    f = lambda o, v: o.np.abs(v) * o.real(v[::-1])    # noqa: E731
    want = with_jax(lambda jax: jax.jacrev(lambda v: f(jax_ops(), v))(z))
    close(jx.jacrev(lambda v: f(JX, v))(z), want)


def test_jacfwd_of_complex_output_of_real_inputs_matches_jax():
    x = np.array([0.3, -0.7, 1.1])
    f = lambda o, v: o.np.exp(o.complex(v, 2 * v)) * v[0]     # noqa: E731
    want = with_jax(lambda jax: jax.jacfwd(lambda v: f(jax_ops(), v))(x))
    close(jx.jacfwd(lambda v: f(JX, v))(x), want)


def test_real_to_complex_conversion_transposes_to_the_real_part():
    x = np.array([0.5, -1.5])
    c = np.array([1 + 2j, -3 + 0.5j])

    def f(o, v):
        return o.np.sum(o.real(o.lax.convert_element_type(v, np.complex128) * c))
    close(jx.grad(lambda v: f(JX, v))(x), np.real(c))
    close(jx.grad(lambda v: f(JX, v))(x), with_jax(lambda jax: jax.grad(
        lambda v: f(jax_ops(), v))(x)))
    # complex -> real keeps the real part, so grad is real: no imaginary component
    z = points(_rng("to_real"), (2,))
    g = jx.grad(lambda v: jnp.sum(jx.lax.convert_element_type(v, np.float64) ** 2))(z)
    close(g, 2 * np.real(z) + 0j)


# ---------------------------------------------------------------- control flow
# complex carries take tangents and cotangents through loops and branches
CONTROL = {
    "fori_loop": lambda o, z: o.lax.fori_loop(0, 3, lambda i, c: c * c * 0.5 + z, z),
    "scan": lambda o, z: o.np.sum(o.lax.scan(lambda c, x: (c * x, c * c), z[0], z)[1]),
    "cond": lambda o, z: o.lax.cond(o.real(z[0]) > 0, lambda c: o.np.exp(c), lambda c: c, z),
    "while_loop": lambda o, z: o.lax.while_loop(
        lambda c: c[1] < 3, lambda c: (c[0] * z + 1j, c[1] + 1), (z, 0))[0],
}


@pytest.mark.parametrize("name", sorted(CONTROL))
def test_control_flow_carries_complex_derivatives(name):
    rng = _rng(name, 10)
    z, t = points(rng), crandn(rng, 4)
    f = _jx(CONTROL[name])
    y, ty = jx.jvp(f, (z,), (t,))
    ct = crandn(rng, np.shape(y))

    reverse = name != "while_loop"      # JAX has no reverse mode of while_loop

    def run(jax):
        jf = lambda v: CONTROL[name](jax_ops(), v)   # noqa: E731
        if not reverse:
            return jax.jvp(jf, (z,), (t,))[1], None, None
        return (jax.jvp(jf, (z,), (t,))[1], jax.vjp(jf, z)[1](ct)[0],
                jax.grad(lambda v: jax.numpy.sum(jax.numpy.abs(jf(v)) ** 2))(z))
    want_t, want_ct, want_g = with_jax(run)
    close(ty, want_t)
    if reverse:
        close(jx.vjp(f, z)[1](ct)[0], want_ct)
        close(jx.grad(lambda v: jnp.sum(jnp.abs(f(v)) ** 2))(z), want_g)


# ---------------------------------------------------------------- vmap

@pytest.mark.parametrize("name", sorted(ALL))
def test_vmap_matches_loop(name):
    f = _jx(ALL[name])
    zs = points(_rng(name, 6), (3, 4))
    close(jx.vmap(f)(zs), np.stack([np.asarray(f(z)) for z in zs]), 1e-12)
    close(jx.vmap(f, in_axes=1)(zs.T.copy()), np.stack([np.asarray(f(z)) for z in zs]), 1e-12)


@pytest.mark.parametrize("name", sorted(REAL))
def test_vmap_of_grad_matches_loop(name):
    g = jx.grad(_jx(REAL[name]))
    zs = points(_rng(name, 7), (3, 4))
    close(jx.vmap(g)(zs), np.stack([np.asarray(g(z)) for z in zs]))


def test_vmap_of_jvp_and_vjp_over_complex_tangents():
    f = _jx(NON_HOLOMORPHIC["real_imag"])
    z = points(_rng("vmapjvp"))
    ts = crandn(_rng("vmapjvp", 1), (5, 4))
    got = jx.vmap(lambda t: jx.jvp(f, (z,), (t,))[1])(ts)
    close(got, np.stack([np.asarray(jx.jvp(f, (z,), (t,))[1]) for t in ts]))
    _, vjp_fn = jx.vjp(f, z)
    close(jx.vmap(vjp_fn)(ts)[0], np.stack([np.asarray(vjp_fn(t)[0]) for t in ts]))


def test_complex_parts_batch_with_unbatched_operands():
    x = np.arange(6.0).reshape(3, 2)
    y = np.array([0.5, -1.0])
    got = jx.vmap(lambda a: JX.complex(a, y), in_axes=0)(x)
    close(got, x + 1j * y)
    got = jx.vmap(lambda b: JX.complex(y, b), in_axes=1)(x.T.copy())
    close(got, y + 1j * x)


# ---------------------------------------------------------------- dtype checks

def test_grad_requires_real_outputs():
    with pytest.raises(TypeError, match="grad requires real-valued outputs .*holomorphic=True"):
        jx.grad(lambda z: z * z)(1 + 2j)
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        jx.jacrev(lambda z: z * z)(points(_rng("e")))


def test_holomorphic_requires_complex_inputs_and_outputs():
    with pytest.raises(TypeError, match="grad with holomorphic=True requires inputs with complex"):
        jx.grad(lambda x: x * x, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="grad with holomorphic=True requires outputs with complex"):
        jx.grad(lambda z: jnp.abs(z), holomorphic=True)(1j)
    with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires inputs"):
        jx.jacfwd(jnp.sin, holomorphic=True)(np.ones(2))
    with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires outputs"):
        jx.jacfwd(jnp.abs, holomorphic=True)(np.ones(2, complex))
    with pytest.raises(TypeError, match="jacrev with holomorphic=True requires inputs"):
        jx.jacrev(jnp.sin, holomorphic=True)(np.ones(2))
    with pytest.raises(TypeError, match="jacrev with holomorphic=True requires outputs"):
        jx.jacrev(jnp.abs, holomorphic=True)(np.ones(2, complex))


def test_jacfwd_rejects_complex_inputs_without_holomorphic():
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs .*holomorphic=True"):
        jx.jacfwd(jnp.sin)(np.ones(2, complex))


def test_integer_inputs_are_rejected():
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
        jx.grad(lambda n: n * 1.0)(3)
    with pytest.raises(TypeError, match="grad with holomorphic=True requires inputs with complex"):
        jx.grad(lambda n: n * 1j, holomorphic=True)(3)


def test_tangent_and_cotangent_dtypes_must_match():
    z = points(_rng("tdt"))
    with pytest.raises(TypeError, match="tangent .* does not match its primal"):
        jx.jvp(jnp.sin, (z,), (np.ones(4),))
    with pytest.raises(TypeError, match="tangent .* does not match its primal"):
        jx.jvp(jnp.sin, (np.ones(4),), (z,))
    _, vjp_fn = jx.vjp(jnp.sin, z)
    with pytest.raises(TypeError, match="cotangent .* does not match output"):
        vjp_fn(np.ones(4))
    _, vjp_fn = jx.vjp(jnp.abs, z)
    with pytest.raises(TypeError, match="cotangent .* does not match output"):
        vjp_fn(z)


def test_integer_primal_next_to_complex_gets_float0():
    z = points(_rng("f0"))
    _, vjp_fn = jx.vjp(lambda v, n: v * n, z, np.arange(4))
    cz, cn = vjp_fn(crandn(_rng("f0", 1), 4))
    assert np.asarray(cz).dtype == np.complex128 and cn.dtype == jx.float0


# ---------------------------------------------------------------- compiled

def _jit(f, *args):
    """jx.jit(f)(*args); skipped only while the compiler refuses complex code."""
    try:
        return jx.jit(f)(*args)
    except NotImplementedError as e:
        if "complex" not in str(e).lower():
            raise
        pytest.skip(f"compiled complex code is not available yet: {e}")


@pytest.mark.parametrize("name", ["abs2", "angle", "mixed"])
def test_jit_grad_of_real_function(name):
    f = _jx(REAL[name])
    z = points(_rng(name, 8))
    close(_jit(jx.grad(f), z), jx.grad(f)(z))


@pytest.mark.parametrize("name", ["poly", "log", "abs", "complex"])
def test_jit_jvp_vjp(name):
    f = _jx(ALL[name])
    rng = _rng(name, 9)
    z, t, ct = points(rng), crandn(rng, 4), crandn(rng, 4)
    close(_jit(lambda a, b: jx.jvp(f, (a,), (b,))[1], z, t), jx.jvp(f, (z,), (t,))[1])
    close(_jit(lambda a, c: jx.vjp(f, a)[1](c)[0], z, ct), jx.vjp(f, z)[1](ct)[0])


def test_jit_holomorphic_jacobian_and_vmap():
    f = _jx(HOLOMORPHIC["sin_cos"])
    z = points(_rng("jitjac"))
    close(_jit(jx.jacrev(f, holomorphic=True), z), jx.jacrev(f, holomorphic=True)(z))
    zs = points(_rng("jitjac", 1), (3, 4))
    close(_jit(jx.vmap(f), zs), jx.vmap(f)(zs))


# ---------------------------------------------------------------- rule coverage
# Real-valued programs of real inputs through each complex primitive, for the
# shared harness (finite differences, the jvp/vjp identity, vmap over each axis).
_re, _im, _conj, _cx = JX.real, JX.imag, JX.conj, JX.complex
S = (2, 3)
TRANSFORM_CASES = {
    "complex": Case(lambda x, y: _re(_cx(x, y) * _cx(y, x)) + _im(jnp.exp(_cx(x, y))), [S, S]),
    "real": Case(lambda x: _re(jnp.sin(_cx(x, 2 * x))), [S]),
    "imag": Case(lambda x: _im(jnp.log(_cx(x, 1.0 + x * x))), [S]),
    "conj": Case(lambda x, y: jnp.abs(_conj(_cx(x, y)) * _cx(y, 1.0 + x)) + _im(_conj(
        _cx(x, y) ** 2)), [S, S]),
}
(test_case_jvp_matches_finite_differences, test_case_vjp_consistent_with_jvp_and_fd,
 test_case_vmap_matches_loop) = case_tests(TRANSFORM_CASES)
