"""jvp, vjp and vmap of conv_general_dilated (passes/conv_rules.py): the harness
checks on TRANSFORM_CASES (finite differences in float64, the <ct, J t> ==
<J^T ct, t> identity, Python loops over each operand mapped alone), both operands
mapped against loops, gradients and batching against JAX, the rules staged into
verified graphs, and preferred_element_type.

Layouts NCHW and NHWC (and scrambled ones), strides, explicit / SAME / negative
padding, lhs (transposed) and rhs (atrous) dilation, feature groups (depthwise),
batch groups, 1-D to 3-D.

The compiled (jx.jit) checks skip while the CPU backend has no lowering for the
primitive, and only for that error."""
from __future__ import annotations

import numpy as np
import pytest

import jx
import jx.lax as L
import jx.numpy as jnp
from jx.errors import MissingRuleError
from transform_harness import Case, case_rng, case_tests

pytestmark = pytest.mark.x64

COVERED = {"conv_general_dilated"}

NAME = "conv_general_dilated"


def _conv(**kw):
    return lambda x, w: L.conv_general_dilated(x, w, **kw)


def _case(lhs_shape, rhs_shape, **kw):
    return Case(_conv(**kw), [lhs_shape, rhs_shape])


NHWC = ("NHWC", "HWIO", "NHWC")

# name: (lhs shape, rhs shape, conv_general_dilated keywords)
CONFIGS = {
    NAME: ((2, 3, 5, 4), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    NAME + "/nhwc_same_strided": ((2, 5, 6, 3), (3, 2, 3, 4),
                                  dict(window_strides=(2, 3), padding="SAME",
                                       dimension_numbers=NHWC)),
    NAME + "/padding_negative": ((2, 2, 6, 5), (3, 2, 2, 3),
                                 dict(window_strides=(1, 2), padding=((2, -1), (-1, 2)))),
    NAME + "/lhs_dilation": ((1, 2, 4, 3), (3, 2, 3, 2),
                             dict(window_strides=(1, 2), padding=((1, 2), (0, 1)),
                                  lhs_dilation=(2, 3))),
    NAME + "/rhs_dilation": ((2, 2, 7, 6), (3, 2, 2, 3),
                             dict(window_strides=(2, 1), padding=((1, 0), (0, -1)),
                                  rhs_dilation=(3, 2))),
    NAME + "/depthwise_nhwc": ((2, 5, 5, 4), (3, 3, 1, 8),
                               dict(window_strides=(1, 2), padding="SAME",
                                    dimension_numbers=NHWC, feature_group_count=4)),
    NAME + "/feature_groups": ((2, 4, 5, 4), (6, 2, 2, 2),
                               dict(window_strides=(2, 1), padding=((1, 1), (0, 1)),
                                    rhs_dilation=(1, 2), feature_group_count=2)),
    NAME + "/batch_groups": ((4, 3, 5, 4), (4, 3, 2, 2),
                             dict(window_strides=(1, 2), padding=((0, 1), (1, -1)),
                                  batch_group_count=2)),
    NAME + "/batch_groups_nhwc": ((6, 4, 5, 2), (2, 3, 2, 3),
                                  dict(window_strides=(2, 1), padding=((1, 0), (0, 0)),
                                       lhs_dilation=(1, 2), dimension_numbers=NHWC,
                                       batch_group_count=3)),
    NAME + "/1d": ((2, 7, 3), (3, 3, 2),
                   dict(window_strides=(2,), padding=((2, 1),), lhs_dilation=(2,),
                        rhs_dilation=(2,), dimension_numbers=("NWC", "WIO", "NWC"))),
    NAME + "/3d": ((1, 2, 4, 3, 4), (2, 2, 2, 2, 3),
                   dict(window_strides=(1, 2, 1), padding=((1, 0), (0, 1), (1, 1)),
                        rhs_dilation=(1, 1, 2))),
    NAME + "/scrambled_layout": ((3, 4, 2, 5), (3, 2, 4, 2),
                                 dict(window_strides=(2, 1), padding=((1, 1), (0, 1)),
                                      dimension_numbers=("HCNW", "WIOH", "NWHC"),
                                      feature_group_count=2)),
}

TRANSFORM_CASES = {name: _case(ls, rs, **kw) for name, (ls, rs, kw) in CONFIGS.items()}
TRANSFORM_CASES[NAME + "/conv_transpose"] = Case(
    lambda x, w: L.conv_transpose(x, w, (2, 1), "SAME", dimension_numbers=NHWC),
    [(1, 3, 4, 2), (2, 3, 2, 3)])

(test_jvp_matches_finite_differences, test_vjp_consistent_with_jvp_and_fd,
 test_vmap_matches_loop) = case_tests(TRANSFORM_CASES)


def _args(name, rng):
    ls, rs, _ = CONFIGS[name]
    return rng.standard_normal(ls), rng.standard_normal(rs)


def _jax():
    jax = pytest.importorskip("jax")
    return jax


def _compiled(f, *args):
    """jx.jit(f)(*args), skipped while the CPU backend cannot lower the convolution."""
    try:
        return jx.jit(f)(*args)
    except MissingRuleError as e:
        if "no lowering for primitive 'conv_general_dilated'" in str(e):
            pytest.skip("the CPU backend has no conv_general_dilated lowering yet")
        raise


# ------------------------------------------------------------------ both operands mapped
@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("axes", [(0, 0), (1, -1)])
def test_vmap_both_operands_matches_loop(name, axes):
    rng = case_rng(name, 7)
    _, _, kw = CONFIGS[name]
    f = _conv(**kw)
    batch = [_args(name, rng) for _ in range(3)]
    xs = np.stack([b[0] for b in batch], axes[0] % (len(batch[0][0].shape) + 1))
    ws = np.stack([b[1] for b in batch], axes[1] % (len(batch[0][1].shape) + 1))
    got = jx.vmap(f, in_axes=axes)(xs, ws)
    want = np.stack([np.asarray(f(x, w)) for x, w in batch])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_vmap_of_empty_batch():
    f = _conv(window_strides=(1,), padding="VALID")
    x, w = np.ones((2, 3, 5)), np.ones((4, 3, 2))
    for axes, xs, ws in (((0, None), np.ones((0,) + x.shape), w),
                         ((None, 0), x, np.ones((0,) + w.shape)),
                         ((0, 0), np.ones((0,) + x.shape), np.ones((0,) + w.shape))):
        assert jx.vmap(f, in_axes=axes)(xs, ws).shape == (0, 2, 4, 4)


# ------------------------------------------------------------------ against JAX
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_forward_matches_jax(name):
    jax = _jax()
    _, _, kw = CONFIGS[name]
    x, w = _args(name, case_rng(name, 8))
    with jax.enable_x64(True):
        want = jax.lax.conv_general_dilated(x, w, **kw)
    np.testing.assert_allclose(_conv(**kw)(x, w), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_vjp_matches_jax(name):
    jax = _jax()
    _, _, kw = CONFIGS[name]
    x, w = _args(name, case_rng(name, 9))
    out, pull = jx.vjp(_conv(**kw), x, w)
    u = case_rng(name, 10).standard_normal(np.shape(out))
    with jax.enable_x64(True):
        _, jpull = jax.vjp(lambda a, b: jax.lax.conv_general_dilated(a, b, **kw), x, w)
        want = jpull(u)
    for g, e in zip(pull(u), want):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-10)


def _cnn(np_, lax, x, w1, b1, w2, w3):
    """conv (NHWC, SAME, stride 2) + bias + relu, a depthwise conv, a 1x1 conv."""
    dn = ("NHWC", "HWIO", "NHWC")
    h = lax.conv_general_dilated(x, w1, (2, 2), "SAME", dimension_numbers=dn) + b1
    h = np_.maximum(h, 0.0)
    h = lax.conv_general_dilated(h, w2, (1, 1), ((1, 1), (1, 1)), rhs_dilation=(2, 1),
                                 dimension_numbers=dn, feature_group_count=4)
    h = np_.maximum(h, 0.0)
    h = lax.conv_general_dilated(h, w3, (1, 1), "VALID", dimension_numbers=dn)
    return np_.sum(h * h) * 0.5 + np_.sum(h)


def _cnn_params(rng):
    return [rng.standard_normal((2, 8, 7, 3)), rng.standard_normal((3, 3, 3, 4)) * 0.5,
            rng.standard_normal((4,)) * 0.1, rng.standard_normal((3, 2, 1, 8)) * 0.5,
            rng.standard_normal((1, 1, 8, 2)) * 0.5]


def _jax_cnn_grad(jax, params):
    with jax.enable_x64(True):
        return jax.grad(lambda *a: _cnn(jax.numpy, jax.lax, *a),
                        argnums=tuple(range(len(params))))(*params)


def test_grad_of_cnn_loss_matches_jax():
    jax = _jax()
    params = _cnn_params(np.random.default_rng(11))
    got = jx.grad(lambda *a: _cnn(jnp, L, *a), argnums=tuple(range(5)))(*params)
    for g, e in zip(got, _jax_cnn_grad(jax, params)):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-10)


def test_grad_of_cnn_loss_compiled_matches_jax():
    jax = _jax()
    params = _cnn_params(np.random.default_rng(12))
    got = _compiled(jx.grad(lambda *a: _cnn(jnp, L, *a), argnums=tuple(range(5))), *params)
    for g, e in zip(got, _jax_cnn_grad(jax, params)):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-10)


def test_staged_grad_verifies_and_matches_eager():
    params = _cnn_params(np.random.default_rng(13))
    grad = jx.grad(lambda *a: _cnn(jnp, L, *a), argnums=tuple(range(5)))
    graph = jx.make_graph(grad)(*[jx.f64[p.shape] for p in params])
    jx.verify(graph)
    for g, e in zip(jx.eval_graph(graph, *params), grad(*params)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


VMAP_NAMES = [NAME + s for s in ("/nhwc_same_strided", "/depthwise_nhwc", "/batch_groups",
                                 "/lhs_dilation")]
VMAP_AXES = [(0, None), (None, 0), (0, 0), (-1, 1)]


def _vmap_inputs(name, axes, rng):
    batch = [_args(name, rng) for _ in range(3)]
    return [np.stack([b[i] for b in batch], a % (batch[0][i].ndim + 1)) if a is not None
            else batch[0][i] for i, a in enumerate(axes)]


def _jax_vmap(jax, kw, axes, args):
    with jax.enable_x64(True):
        return jax.vmap(lambda a, b: jax.lax.conv_general_dilated(a, b, **kw),
                        in_axes=axes)(*args)


@pytest.mark.parametrize("name", VMAP_NAMES)
@pytest.mark.parametrize("axes", VMAP_AXES)
def test_vmap_matches_jax(name, axes):
    jax = _jax()
    _, _, kw = CONFIGS[name]
    args = _vmap_inputs(name, axes, case_rng(name, 14))
    got = jx.vmap(_conv(**kw), in_axes=axes)(*args)
    np.testing.assert_allclose(got, _jax_vmap(jax, kw, axes, args), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", VMAP_NAMES[:2])
@pytest.mark.parametrize("axes", VMAP_AXES)
def test_vmap_compiled_matches_jax(name, axes):
    jax = _jax()
    _, _, kw = CONFIGS[name]
    args = _vmap_inputs(name, axes, case_rng(name, 15))
    got = _compiled(jx.vmap(_conv(**kw), in_axes=axes), *args)
    np.testing.assert_allclose(got, _jax_vmap(jax, kw, axes, args), rtol=1e-10, atol=1e-10)


def test_vmap_of_grad_matches_loop():
    """Batching the rules' own convolutions (the cotangents inside a gradient)."""
    rng = np.random.default_rng(16)
    batch = [_cnn_params(rng) for _ in range(3)]
    stacked = [np.stack(col) for col in zip(*batch)]
    grad = jx.grad(lambda *a: _cnn(jnp, L, *a), argnums=tuple(range(5)))
    got = jx.vmap(grad)(*stacked)
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, np.stack([grad(*p)[k] for p in batch]),
                                   rtol=1e-10, atol=1e-10)


def test_second_order_matches_jax():
    jax = _jax()
    _, _, kw = CONFIGS[NAME + "/feature_groups"]
    x, w = _args(NAME + "/feature_groups", np.random.default_rng(17))

    def outer(np_, lax, grad):
        def loss(a, b):
            return np_.sum(np_.tanh(lax.conv_general_dilated(a, b, **kw)) ** 2)
        return lambda a, b: np_.sum(grad(loss, argnums=1)(a, b) ** 2)

    got = jx.grad(outer(jnp, L, jx.grad), argnums=(0, 1))(x, w)
    with jax.enable_x64(True):
        want = jax.grad(outer(jax.numpy, jax.lax, jax.grad), argnums=(0, 1))(x, w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-10)


@pytest.mark.x64
@pytest.mark.parametrize("pet", [None, np.float64])
def test_preferred_element_type_cotangents_take_operand_dtypes(pet):
    jax = _jax()
    rng = np.random.default_rng(18)
    x = rng.standard_normal((2, 6, 5, 4)).astype(np.float32)
    w = rng.standard_normal((2, 3, 2, 6)).astype(np.float32)
    kw = dict(window_strides=(2, 1), padding=((1, 0), (0, 2)), rhs_dilation=(1, 2),
              dimension_numbers=NHWC, feature_group_count=2, preferred_element_type=pet)

    def loss(np_, lax):
        return lambda a, b: np_.sum(np_.tanh(lax.conv_general_dilated(a, b, **kw)))

    got = jx.grad(loss(jnp, L), argnums=(0, 1))(x, w)
    with jax.enable_x64(True):
        want = jax.grad(loss(jax.numpy, jax.lax), argnums=(0, 1))(x, w)
    for g, e in zip(got, want):
        assert np.asarray(g).dtype == np.float32
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
