"""jx.example_libraries: stax layers and optimizers, trained under jx.jit and compared
with JAX's example_libraries (same data, same init key) when JAX is installed, and
with NumPy re-implementations of one update step always."""
import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.example_libraries import optimizers as opt
from jx.example_libraries import stax

RS = np.random.RandomState(0)
X = RS.randn(16, 5).astype(np.float32)
Y = np.eye(3, dtype=np.float32)[RS.randint(0, 3, 16)]

OPTIMIZERS = [("sgd", (0.1,)), ("momentum", (0.1, 0.9)), ("nesterov", (0.1, 0.9)),
              ("adagrad", (0.1,)), ("rmsprop", (0.01,)), ("rmsprop_momentum", (0.01,)),
              ("adam", (0.01,)), ("adamax", (0.01,)), ("sm3", (0.1,))]


def _mlp(lib):
    return lib.serial(lib.Dense(8), lib.Relu, lib.Dense(8), lib.Tanh, lib.Dense(3),
                      lib.LogSoftmax)


def _train(api, stax_lib, opt_lib, make, steps=5):
    """Params after `steps` jitted updates, and the losses before and after."""
    init_fun, apply_fun = _mlp(stax_lib)
    _, params = init_fun(api.random.PRNGKey(0), (-1, 5))
    init, update, get_params = make(opt_lib)

    def loss(p):
        return -(apply_fun(p, X) * Y).sum() / X.shape[0]

    @api.jit
    def step(i, state, p):
        # get_params outside jit: JAX's sm3 keeps the shape as leaves, which a
        # jitted reshape cannot use
        return update(i, api.grad(loss)(p), state)

    state = init(params)
    before = float(loss(get_params(state)))
    for i in range(steps):
        state = step(i, state, get_params(state))
    p = get_params(state)
    return [np.asarray(a) for a in api.tree_util.tree_leaves(p)], before, float(loss(p))


@pytest.mark.parametrize("name,args", OPTIMIZERS)
def test_training_decreases_loss(name, args):
    _, before, after = _train(jx, stax, opt, lambda o: getattr(o, name)(*args))
    assert after < before


SCHEDULED = [("sgd", lambda o: o.exponential_decay(0.1, 2, 0.5)),
             ("adam", lambda o: o.piecewise_constant([2], [0.1, 0.01])),
             ("momentum", lambda o: o.inverse_time_decay(0.1, 2, 0.5, staircase=True)),
             ("rmsprop", lambda o: o.polynomial_decay(0.01, 3, 0.001, 2.0))]


@pytest.mark.parametrize("name,args", OPTIMIZERS)
def test_training_matches_jax(name, args):
    jax = pytest.importorskip("jax")
    from jax.example_libraries import optimizers as jopt
    from jax.example_libraries import stax as jstax
    make = lambda o: getattr(o, name)(*args)  # noqa: E731
    ours, b0, a0 = _train(jx, stax, opt, make)
    theirs, b1, a1 = _train(jax, jstax, jopt, make)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose([b0, a0], [b1, a1], rtol=1e-5)


@pytest.mark.parametrize("name,schedule", SCHEDULED)
def test_scheduled_training_matches_jax(name, schedule):
    jax = pytest.importorskip("jax")
    from jax.example_libraries import optimizers as jopt
    from jax.example_libraries import stax as jstax
    extra = {"momentum": (0.9,)}.get(name, ())
    make = lambda o: getattr(o, name)(schedule(o), *extra)  # noqa: E731
    ours, _, _ = _train(jx, stax, opt, make)
    theirs, _, _ = _train(jax, jstax, jopt, make)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


# ---- one update step against NumPy re-implementations (no JAX needed)

def _np_step(name, args, i, g, x):
    """The first update (fresh state) of each optimizer, in float64 NumPy."""
    lr = args[0]
    if name == "sgd":
        return x - lr * g
    if name == "momentum":
        return x - lr * g
    if name == "nesterov":
        return x - lr * (args[1] * g + g)
    if name == "adagrad":
        m = (1 - 0.9) * g / np.sqrt(g * g)
        return x - lr * m
    if name == "rmsprop":
        return x - lr * g / np.sqrt(0.1 * g * g + 1e-8)
    if name == "rmsprop_momentum":
        return x - lr * g / np.sqrt(0.1 * g * g + 1e-8)
    if name == "adam":
        m, v = 0.1 * g, 0.001 * g * g
        return x - lr * (m / 0.1) / (np.sqrt(v / 0.001) + 1e-8)
    if name == "adamax":
        m, u = 0.1 * g, np.abs(g)
        return x - lr / 0.1 * m / (u + 1e-8)
    if name == "sm3":
        accum = np.full_like(g, 0.0)
        accum = accum + g * g
        return x - lr * 0.1 * g / np.sqrt(accum)
    raise AssertionError(name)


@pytest.mark.parametrize("name,args", OPTIMIZERS)
@pytest.mark.parametrize("shape", [(4, 3), (7,), (2, 3, 2)])
def test_first_step_formula(name, args, shape):
    rs = np.random.RandomState(1)
    x, g = rs.randn(*shape).astype(np.float32), rs.randn(*shape).astype(np.float32)
    init, update, get_params = getattr(opt, name)(*args)
    state = jx.jit(update)(0, {"w": g}, init({"w": x}))
    want = _np_step(name, args, 0, g.astype(np.float64), x.astype(np.float64))
    np.testing.assert_allclose(get_params(state)["w"], want, rtol=2e-5, atol=1e-6)


def test_adam_second_step_formula():
    rs = np.random.RandomState(2)
    x, g1, g2 = (rs.randn(5).astype(np.float32) for _ in range(3))
    init, update, get_params = opt.adam(0.05, b1=0.8, b2=0.95, eps=1e-6)
    s = update(1, g2, update(0, g1, init(x)))
    m1, v1 = 0.2 * g1, 0.05 * g1 ** 2
    x1 = x - 0.05 * (m1 / 0.2) / (np.sqrt(v1 / 0.05) + 1e-6)
    m2, v2 = 0.2 * g2 + 0.8 * m1, 0.05 * g2 ** 2 + 0.95 * v1
    x2 = x1 - 0.05 * (m2 / (1 - 0.8 ** 2)) / (np.sqrt(v2 / (1 - 0.95 ** 2)) + 1e-6)
    np.testing.assert_allclose(get_params(s), x2, rtol=1e-5)


def test_scalar_params_and_sm3_shape():
    init, update, get_params = opt.sm3(0.1)
    s = jx.jit(update)(0, {"a": 2.0, "b": np.ones((2, 3), np.float32)},
                       init({"a": jnp.float32(1.0), "b": jnp.zeros((2, 3))}))
    p = get_params(s)
    assert p["a"].shape == () and p["b"].shape == (2, 3)
    # get_params works under jit too (only the rank of the saved shape is used)
    q = jx.jit(get_params)(s)
    np.testing.assert_array_equal(q["a"], p["a"])


# ---- schedules

def test_schedules():
    steps = np.arange(0, 12)
    np.testing.assert_allclose([float(opt.constant(0.3)(i)) for i in steps], 0.3)
    np.testing.assert_allclose([float(opt.exponential_decay(0.1, 4, 0.5)(i)) for i in steps],
                               0.1 * 0.5 ** (steps / 4), rtol=1e-6)
    np.testing.assert_allclose([float(opt.inverse_time_decay(1.0, 3, 2.0)(i)) for i in steps],
                               1.0 / (1 + 2.0 * steps / 3), rtol=1e-6)
    np.testing.assert_allclose(
        [float(opt.inverse_time_decay(1.0, 3, 2.0, staircase=True)(i)) for i in steps],
        1.0 / (1 + 2.0 * np.floor(steps / 3)), rtol=1e-6)
    np.testing.assert_allclose(
        [float(opt.polynomial_decay(1.0, 5, 0.1, 2.0)(i)) for i in steps],
        (1 - np.minimum(steps, 5) / 5) ** 2 * 0.9 + 0.1, rtol=1e-6, atol=1e-7)
    pc = opt.piecewise_constant([2, 5], [1.0, 0.5, 0.1])
    np.testing.assert_allclose([float(pc(i)) for i in steps],
                               np.where(steps <= 2, 1.0, np.where(steps <= 5, 0.5, 0.1)))
    jitted = jx.jit(pc)
    np.testing.assert_allclose([float(jitted(i)) for i in steps],
                               [float(pc(i)) for i in steps])


def test_schedules_match_jax():
    pytest.importorskip("jax")
    from jax.example_libraries import optimizers as jopt
    for make in [lambda o: o.exponential_decay(0.1, 4, 0.5),
                 lambda o: o.inverse_time_decay(1.0, 3, 2.0, True),
                 lambda o: o.polynomial_decay(1.0, 5, 0.1, 0.5),
                 lambda o: o.piecewise_constant([2, 5], [1.0, 0.5, 0.1])]:
        for i in range(10):
            np.testing.assert_allclose(float(make(opt)(i)), float(make(jopt)(i)), rtol=1e-6)


def test_schedule_errors():
    with pytest.raises(ValueError, match="one shorter"):
        opt.piecewise_constant([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="sequences"):
        opt.piecewise_constant(1, [1.0, 2.0])
    with pytest.raises(TypeError, match="scalar or a schedule"):
        opt.make_schedule([0.1, 0.2])
    assert opt.make_schedule(0.5)(3) == 0.5


# ---- utilities and the state pytree

def test_l2_norm_and_clip_grads():
    tree = {"a": np.array([3.0, 0.0], np.float32), "b": (np.array([[4.0]], np.float32),)}
    assert float(opt.l2_norm(tree)) == pytest.approx(5.0)
    clipped = jx.jit(lambda t: opt.clip_grads(t, 1.0))(tree)
    np.testing.assert_allclose(clipped["a"], [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(clipped["b"][0], [[0.8]], rtol=1e-6)
    same = opt.clip_grads(tree, 10.0)
    np.testing.assert_array_equal(same["a"], tree["a"])


def test_state_is_pytree_and_packs():
    init, update, get_params = opt.momentum(0.1, 0.9)
    params = {"w": np.ones((2, 2), np.float32), "b": [np.zeros(3, np.float32)]}
    state = init(params)
    assert isinstance(state, opt.OptimizerState)
    leaves = jx.tree_util.tree_leaves(state)
    assert len(leaves) == 4           # (x, velocity) per parameter
    marked = opt.unpack_optimizer_state(state)
    assert isinstance(marked["w"], opt.JoinPoint)
    back = opt.pack_optimizer_state(marked)
    assert back.tree_def == state.tree_def and back.subtree_defs == state.subtree_defs
    for a, b in zip(jx.tree_util.tree_leaves(back), leaves):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="gradient tree"):
        update(0, {"w": params["w"]}, state)


def test_custom_optimizer_decorator():
    @opt.optimizer
    def halving():
        return (lambda x0: (x0, jnp.zeros_like(x0)),
                lambda i, g, s: (s[0] / 2 - g, s[1] + 1),
                lambda s: s[0])
    init, update, get_params = halving()
    s = jx.jit(update)(0, (np.float32(1.0), np.ones(2, np.float32)),
                       init((np.float32(4.0), np.zeros(2, np.float32))))
    p = get_params(s)
    assert float(p[0]) == 1.0 and np.asarray(p[1]).tolist() == [-1.0, -1.0]


# ---- stax layers

def test_layer_shapes_and_values():
    key = jx.random.PRNGKey(1)
    init_fun, apply_fun = stax.serial(stax.Dense(6), stax.Selu, stax.Dense(4), stax.Softmax)
    out_shape, params = init_fun(key, (-1, 5))
    assert out_shape == (-1, 4)
    assert [np.shape(a) for a in jx.tree_util.tree_leaves(params)] == [(5, 6), (6,), (6, 4), (4,)]
    y = apply_fun(params, X)
    np.testing.assert_allclose(np.asarray(y).sum(-1), 1.0, rtol=1e-6)
    W1, b1 = params[0]
    h = np.asarray(jx.nn.selu(X @ np.asarray(W1) + np.asarray(b1)))
    W2, b2 = params[2]
    z = h @ np.asarray(W2) + np.asarray(b2)
    want = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(y, want / want.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer,ref", [
    (stax.Relu, lambda x: np.maximum(x, 0)), (stax.Tanh, np.tanh), (stax.Exp, np.exp),
    (stax.Sigmoid, lambda x: 1 / (1 + np.exp(-x))), (stax.Softplus, lambda x: np.log1p(np.exp(x))),
    (stax.Elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    (stax.LeakyRelu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    (stax.LogSoftmax, lambda x: x - x.max(-1, keepdims=True)
     - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))),
    (stax.Identity, lambda x: x), (stax.Flatten, lambda x: x.reshape(x.shape[0], -1))])
def test_elementwise_layers(layer, ref):
    x = RS.randn(4, 3, 2).astype(np.float32)
    init_fun, apply_fun = layer
    shape, params = init_fun(None, x.shape)
    y = np.asarray(apply_fun(params, x))
    assert tuple(shape) == y.shape
    np.testing.assert_allclose(y, ref(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_gelu_layer():
    x = RS.randn(3, 4).astype(np.float32)
    np.testing.assert_allclose(stax.Gelu[1]((), x), jx.nn.gelu(x), rtol=1e-6)


def test_fan_and_parallel():
    key = jx.random.PRNGKey(2)
    block = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity),
                        stax.FanInConcat())
    init_fun, apply_fun = block
    shape, params = init_fun(key, (-1, 4))
    assert shape == (-1, 7)
    x = RS.randn(2, 4).astype(np.float32)
    y = np.asarray(jx.jit(apply_fun)(params, x))
    W, b = params[1][0]
    np.testing.assert_allclose(y, np.concatenate([x @ np.asarray(W) + np.asarray(b), x], -1),
                               rtol=1e-5, atol=1e-6)
    res_init, res_apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(4), stax.Identity),
                                      stax.FanInSum)
    shape, params = res_init(key, (-1, 4))
    assert shape == (-1, 4)
    W, b = params[1][0]
    np.testing.assert_allclose(res_apply(params, x), x @ np.asarray(W) + np.asarray(b) + x,
                               rtol=1e-5, atol=1e-6)


def test_batchnorm():
    x = RS.randn(8, 3, 5).astype(np.float32)
    init_fun, apply_fun = stax.BatchNorm(axis=(0, 1))
    shape, (beta, gamma) = init_fun(jx.random.PRNGKey(0), x.shape)
    assert shape == x.shape and beta.shape == (5,) and gamma.shape == (5,)
    beta, gamma = beta + 0.5, gamma * 2
    y = np.asarray(apply_fun((beta, gamma), x))
    x64 = x.astype(np.float64)
    z = (x64 - x64.mean((0, 1))) / np.sqrt(x64.var((0, 1)) + 1e-5)
    np.testing.assert_allclose(y, 2 * z + 0.5, rtol=1e-4, atol=1e-5)
    _, nothing = stax.BatchNorm(axis=0, center=False, scale=False)[0](jx.random.PRNGKey(0), (4, 2))
    assert nothing == ((), ())


def test_batchnorm_matches_jax():
    jax = pytest.importorskip("jax")
    from jax.example_libraries import stax as jstax
    x = RS.randn(4, 2, 3, 6).astype(np.float32)
    for kw in [{}, dict(axis=(0,), center=False), dict(axis=(0, 3), scale=False)]:
        _, p = stax.BatchNorm(**kw)[0](jx.random.PRNGKey(0), x.shape)
        p = jx.tree_util.tree_map(lambda a: a + 0.25, p)
        ours = stax.BatchNorm(**kw)[1](p, x)
        theirs = jstax.BatchNorm(**kw)[1](jax.tree_util.tree_map(np.asarray, p), x)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_dropout():
    x = np.ones((200, 50), np.float32)
    init_fun, apply_fun = stax.Dropout(0.75)
    y = np.asarray(apply_fun((), x, rng=jx.random.PRNGKey(3)))
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02          # rate is the keep probability (as JAX)
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    np.testing.assert_array_equal(stax.Dropout(0.5, mode="test")[1]((), x, rng=1), x)
    with pytest.raises(ValueError, match="PRNG key"):
        apply_fun((), x)


def test_dropout_in_serial_matches_jax():
    jax = pytest.importorskip("jax")
    from jax.example_libraries import stax as jstax
    x = RS.randn(6, 4).astype(np.float32)
    ours = stax.serial(stax.Dropout(0.6), stax.Dropout(0.9))[1]([(), ()], x,
                                                                rng=jx.random.PRNGKey(5))
    theirs = jstax.serial(jstax.Dropout(0.6), jstax.Dropout(0.9))[1]([(), ()], x,
                                                                     rng=jax.random.PRNGKey(5))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_init_matches_jax():
    jax = pytest.importorskip("jax")
    from jax.example_libraries import stax as jstax
    layers = lambda s: s.serial(s.Dense(7), s.Relu, s.FanOut(2),  # noqa: E731
                                s.parallel(s.Dense(3), s.Dense(3)), s.FanInSum,
                                s.BatchNorm(axis=0), s.Dense(2))
    shape, ours = layers(stax)[0](jx.random.PRNGKey(4), (5, 6))
    jshape, theirs = layers(jstax)[0](jax.random.PRNGKey(4), (5, 6))
    assert tuple(shape) == tuple(jshape)
    a, b = jx.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=2e-6, atol=1e-6)


def test_shape_dependent():
    def make(shape):
        return stax.Dense(shape[-1] * 2)
    init_fun, apply_fun = stax.shape_dependent(make)
    shape, params = init_fun(jx.random.PRNGKey(0), (2, 3))
    assert shape == (2, 6)
    assert apply_fun(params, np.ones((2, 3), np.float32)).shape == (2, 6)


@pytest.mark.parametrize("name", ["MaxPool", "AvgPool", "SumPool"])
def test_pooling_layers_match_jax_stax(name):
    """Shapes and outputs of JAX's pooling layers: SAME padding (AvgPool divides by
    the taps inside the input), strides, a spec with channels first."""
    jax = pytest.importorskip("jax")
    from jax.example_libraries import stax as jstax
    x = np.random.default_rng(0).standard_normal((2, 7, 6, 3)).astype(np.float32)
    for args, kwargs, data in ((((3, 3),), dict(strides=(2, 1), padding="SAME"), x),
                               (((2, 2),), dict(strides=(2, 2)), x),
                               (((2, 3),), dict(padding="SAME", spec="NCHW"),
                                x.transpose(0, 3, 1, 2))):
        init, apply = getattr(stax, name)(*args, **kwargs)
        jinit, japply = getattr(jstax, name)(*args, **kwargs)
        shape, params = init(jx.random.PRNGKey(0), data.shape)
        assert shape == jinit(jax.random.PRNGKey(0), data.shape)[0]
        got = apply(params, data)
        assert got.shape == shape
        np.testing.assert_allclose(got, japply((), data), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(jx.jit(lambda v: apply(params, v))(data), got,
                                   rtol=1e-6, atol=1e-6)


def test_conv_layers_match_jax_stax():
    """Conv, ConvTranspose and GeneralConv layers: JAX's shapes, initial parameters
    (same PRNG bits) and outputs."""
    jax = pytest.importorskip("jax")
    from jax.example_libraries import stax as jstax

    def model(mod):
        return mod.serial(mod.Conv(6, (3, 3), padding="SAME"), mod.Relu,
                          mod.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (2, 3), (1, 2)),
                          mod.GeneralConvTranspose(("NCHW", "OIHW", "NCHW"), 3, (3, 3),
                                                   (2, 2), padding="SAME"),
                          mod.Flatten, mod.Dense(5))
    x = np.random.default_rng(3).standard_normal((2, 5, 9, 9)).astype(np.float32)
    init, apply = model(stax)
    jinit, japply = model(jstax)
    shape, params = init(jx.random.PRNGKey(1), x.shape)
    jshape, jparams = jinit(jax.random.PRNGKey(1), x.shape)
    assert tuple(map(int, shape)) == tuple(map(int, jshape))
    for p, q in zip(jx.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(jparams)):
        np.testing.assert_allclose(np.asarray(p), np.asarray(q), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(apply(params, x)), np.asarray(japply(jparams, x)),
                               rtol=2e-5, atol=2e-6)
    for mod in (stax, jstax):        # the 1-d transpose layer's shape rule
        s1, _ = mod.Conv1DTranspose(3, (4,), (2,))[0](
            (jx if mod is stax else jax).random.PRNGKey(0), (2, 7, 5))
        assert tuple(map(int, s1)) == (2, 16, 3)
