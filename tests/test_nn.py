"""jx.nn against NumPy formulas, eagerly and traced; stability on large inputs."""
import math

import numpy as np
import pytest

import jx
from jx import nn

COVERED = set()   # jx.nn declares no primitives; it is jx.numpy code

_erf = np.vectorize(math.erf)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(x, 0)


def _elu(x, a=1.0):
    return np.where(x > 0, x, a * np.expm1(np.minimum(x, 0)))


SELU_A, SELU_S = 1.6732632423543772848, 1.0507009873554804934

REFS = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6)),
    "sigmoid": (nn.sigmoid, _sigmoid),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -_softplus(-x)),
    "softplus": (nn.softplus, _softplus),
    "soft_sign": (nn.soft_sign, lambda x: x / (1 + np.abs(x))),
    "silu": (nn.silu, lambda x: x * _sigmoid(x)),
    "swish": (nn.swish, lambda x: x * _sigmoid(x)),
    "gelu_tanh": (nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))),
    "gelu_erf": (lambda x: nn.gelu(x, approximate=False),
                 lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    "elu": (lambda x: nn.elu(x, 0.7), lambda x: _elu(x, 0.7)),
    "celu": (lambda x: nn.celu(x, 2.0), lambda x: np.maximum(x, 0) + np.minimum(
        2.0 * np.expm1(x / 2.0), 0)),
    "selu": (nn.selu, lambda x: SELU_S * _elu(x, SELU_A)),
    "leaky_relu": (lambda x: nn.leaky_relu(x, 0.1), lambda x: np.where(x >= 0, x, 0.1 * x)),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hard_silu": (nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "softmax": (nn.softmax, lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    "softmax0": (lambda x: nn.softmax(x, axis=0),
                 lambda x: np.exp(x) / np.exp(x).sum(0, keepdims=True)),
    "log_softmax": (nn.log_softmax, lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True))),
    "logsumexp": (nn.logsumexp, lambda x: np.log(np.exp(x).sum())),
    "logsumexp1": (lambda x: nn.logsumexp(x, axis=-1, keepdims=True),
                   lambda x: np.log(np.exp(x).sum(-1, keepdims=True))),
    "standardize": (nn.standardize, lambda x: (x - x.mean(-1, keepdims=True))
                    / np.sqrt(x.var(-1, keepdims=True) + 1e-5)),
    "glu": (nn.glu, lambda x: x[..., :x.shape[-1] // 2] * _sigmoid(x[..., x.shape[-1] // 2:])),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(REFS))
def test_against_numpy(rng, name, dtype):
    fn, ref = REFS[name]
    tol = 2e-6 if dtype == np.float32 else 1e-12
    for shape in [(6,), (3, 8)]:
        x = (rng.standard_normal(shape) * 4).astype(dtype)
        x.flat[0] = 0.0
        out = fn(x)
        assert out.dtype == dtype and out.shape == np.shape(ref(x))
        np.testing.assert_allclose(out, ref(x.astype(np.float64)), rtol=tol, atol=tol)
        g = jx.verify(jx.make_graph(fn)(jx.ShapeDtypeStruct(shape, dtype)))
        np.testing.assert_allclose(jx.eval_graph(g, x)[0], out, rtol=tol, atol=tol)


def test_integer_inputs_promote_to_float():
    x = np.array([-2, 0, 3], np.int32)
    assert nn.relu(x).dtype == np.int32
    np.testing.assert_array_equal(nn.relu(x), [0, 0, 3])
    assert nn.sigmoid(x).dtype == np.float32
    np.testing.assert_allclose(nn.softmax(x), np.exp(x) / np.exp(x).sum(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_inputs_are_stable(dtype):
    x = np.array([[1e4, -1e4, 0.0, 1e4 - 1], [-1e4, -1e4 - 2, -1e4 - 4, -1e4]], dtype)
    sm = nn.softmax(x)
    assert np.all(np.isfinite(sm))
    np.testing.assert_allclose(sm.sum(-1), 1, rtol=1e-6)
    e1 = np.exp(-1.0)
    np.testing.assert_allclose(sm[0], [1 / (1 + e1), 0, 0, e1 / (1 + e1)], rtol=1e-6)
    lse = nn.logsumexp(x, axis=1)
    np.testing.assert_allclose(lse, [1e4 + np.log1p(e1),
                                     -1e4 + np.log(1 + np.exp(-2) + np.exp(-4) + 1)],
                               rtol=1e-7)
    ls = nn.log_softmax(x)
    x64 = x.astype(np.float64)
    m = x64.max(-1, keepdims=True)
    ref = x64 - m - np.log(np.exp(x64 - m).sum(-1, keepdims=True))
    np.testing.assert_allclose(ls, ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(nn.softplus(x[0]), [1e4, 0, np.log(2), 1e4 - 1], rtol=1e-7)
    np.testing.assert_allclose(nn.log_sigmoid(-x[0]), [-1e4, 0, -np.log(2), -(1e4 - 1)],
                               rtol=1e-7)
    assert nn.sigmoid(x).min() >= 0 and nn.elu(x).min() >= -1


@pytest.mark.x64
def test_logsumexp_variants():
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4, 5))
    b = rng.uniform(0.1, 2, (3, 4, 5))
    for axis in (None, 0, (0, 2), -1):
        for keepdims in (False, True):
            np.testing.assert_allclose(nn.logsumexp(a, axis=axis, keepdims=keepdims),
                                       special.logsumexp(a, axis=axis, keepdims=keepdims),
                                       rtol=1e-12)
        np.testing.assert_allclose(nn.logsumexp(a, axis=axis, b=b),
                                   special.logsumexp(a, axis=axis, b=b), rtol=1e-12)
    signed = np.array([1.0, 2.0]), np.array([1.0, -2.0])
    out, sign = nn.logsumexp(signed[0], b=signed[1], return_sign=True)
    want, wsign = special.logsumexp(signed[0], b=signed[1], return_sign=True)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    assert sign == wsign == -1
    assert np.isnan(nn.logsumexp(signed[0], b=signed[1]))
    assert nn.logsumexp(np.array([-np.inf, -np.inf])) == -np.inf
    assert nn.logsumexp(np.array([np.inf, 1.0])) == np.inf
    # a zero weight removes an infinite term
    assert nn.logsumexp(np.array([np.inf, 0.0]), b=np.array([0.0, 1.0])) == 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_one_hot(rng, dtype):
    x = rng.integers(-1, 6, (4, 3))
    eye = np.vstack([np.eye(5), np.zeros(5)])
    want = eye[np.where((x >= 0) & (x < 5), x, 5)]
    out = nn.one_hot(x, 5, dtype=dtype)
    assert out.shape == (4, 3, 5) and out.dtype == dtype
    np.testing.assert_array_equal(out, want.astype(dtype))
    out0 = nn.one_hot(x.astype(np.int64), 5, axis=0)
    np.testing.assert_array_equal(out0, np.moveaxis(want, -1, 0).astype(np.float32))
    g = jx.make_graph(lambda i: nn.one_hot(i, 5, dtype=dtype))(jx.i32[4, 3])
    np.testing.assert_array_equal(jx.eval_graph(g, x.astype(np.int32))[0], out)


def test_standardize_given_stats_and_glu_error():
    x = np.arange(6.0).reshape(2, 3)
    out = nn.standardize(x, axis=0, mean=1.0, variance=4.0, epsilon=0.0)
    np.testing.assert_allclose(out, (x - 1) / 2)
    with pytest.raises(ValueError, match="even"):
        nn.glu(np.zeros((2, 3)))


def test_more_activations_against_their_formulas_and_jax():
    x = np.linspace(-3, 3, 25).astype(np.float32)
    pos = np.linspace(0.01, 5, 25).astype(np.float32)
    sp = np.log1p(np.exp(x.astype(np.float64)))
    want = {"tanh": np.tanh(x), "identity": x, "mish": x * np.tanh(sp),
            "squareplus": (x + np.sqrt(x.astype(np.float64) ** 2 + 4)) / 2,
            "sparse_plus": np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1.0) ** 2 / 4)),
            "sparse_sigmoid": np.clip((x + 1.0) / 2, 0, 1)}
    for name, w in want.items():
        got = jx.jit(getattr(nn, name))(x)
        assert got.dtype == np.float32, name
        np.testing.assert_allclose(np.asarray(got), w, rtol=2e-6, atol=2e-6, err_msg=name)
    np.testing.assert_allclose(np.asarray(nn.log1mexp(pos)),
                               np.log(-np.expm1(-pos.astype(np.float64))), rtol=2e-6)
    m = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(nn.logmeanexp(m, axis=1)),
                               np.log(np.mean(np.exp(m.astype(np.float64)), axis=1)), rtol=2e-6)
    with pytest.raises(AttributeError, match="dot_product_attention .*not implemented"):
        nn.dot_product_attention
    jax = pytest.importorskip("jax")
    for name in list(want) + ["log1mexp"]:
        arg = pos if name == "log1mexp" else x
        np.testing.assert_allclose(np.asarray(getattr(nn, name)(arg)),
                                   np.asarray(getattr(jax.nn, name)(arg)), rtol=1e-6, atol=1e-6)
