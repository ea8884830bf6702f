"""jx.numpy's index helpers, grids, insert/delete, select/choose and the
function-mapping helpers (frontend/numpy/_gridtools.py) against NumPy and JAX:
values, dtypes and weak types, eagerly and under jx.jit, in 32- and 64-bit mode."""
import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.errors import TracerConversionError

RNG = np.random.default_rng(0)


def _rand(shape, dtype):
    if np.dtype(dtype) == np.bool_:
        return RNG.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(0, 7, size=shape).astype(dtype)
    return RNG.normal(size=shape).astype(dtype)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [v for e in x for v in _leaves(e)]
    return [x]


def _same(got, want, tol=None, weak=True):
    """got (jx) equals want (JAX or NumPy): structure, shape, values; dtype and weak
    type too when want is JAX's."""
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        b_np = np.asarray(b)
        a_np = np.asarray(a)
        assert a_np.shape == b_np.shape, (a_np.shape, b_np.shape)
        if type(b).__module__.startswith("jax"):
            assert a_np.dtype == b_np.dtype, (a_np.dtype, b_np.dtype)
            if weak:
                assert getattr(a, "weak_type", False) == getattr(b, "weak_type", False), \
                    ("weak", getattr(a, "weak_type", None), b.weak_type)
        if a_np.dtype.kind == "f" or b_np.dtype.kind == "f":
            t = max(tol or 0, 4e-6 if a_np.dtype.itemsize <= 4 else 1e-12)
            np.testing.assert_allclose(a_np.astype(np.float64), b_np.astype(np.float64),
                                       rtol=t, atol=t, equal_nan=True)
        else:
            np.testing.assert_array_equal(a_np, b_np)


def _cases():
    """(name, args, kwargs, compare with NumPy too)."""
    f32, i32 = np.float32, np.int32
    out = []
    for n in (0, 1, 5):
        out += [("logspace", (0.0, 2.0, n), {}, True),
                ("geomspace", (1.0, 16.0, n), {}, True)]
    out += [
        ("logspace", (np.arange(3.0, dtype=f32), 3, 4), {"axis": 1, "base": 2.0}, True),
        ("logspace", (1, 3, 4), {"endpoint": False, "dtype": i32}, False),
        ("logspace", (1, 3), {}, True),
        ("geomspace", (np.array([1.0, -1000.0], f32), np.array([27.0, -1.0], f32), 4), {}, True),
        ("geomspace", (1, 256, 9), {"dtype": f32, "axis": 0}, True),
        ("geomspace", (np.array([2.0, 3.0], f32), 50.0, 5), {"axis": -1}, True),
        ("geomspace", (1, 1000, 4), {"endpoint": False}, True),
    ]
    for n, k, m in [(3, 0, None), (4, 1, 5), (4, -2, 3), (0, 0, 0), (3, 5, None)]:
        out += [("tril_indices", (n, k, m), {}, True), ("triu_indices", (n, k, m), {}, True)]
    out += [("tril_indices_from", (np.ones((3, 4)),), {"k": -1}, True),
            ("triu_indices_from", (np.ones((4, 2)),), {"k": 1}, True),
            ("diag_indices", (4,), {}, True), ("diag_indices", (3, 3), {}, True),
            ("diag_indices", (0,), {}, True),
            ("diag_indices_from", (np.ones((3, 3, 3)),), {}, True)]
    for dt in (f32, i32, np.bool_):
        for s in ((3,), (2, 2), ()):
            for k in (0, 2, -1):
                out.append(("diagflat", (_rand(s, dt), k), {}, True))
    out += [("indices", ((2, 3),), {}, True), ("indices", ((2, 0, 3),), {"dtype": f32}, True),
            ("indices", ((4, 3),), {"sparse": True}, True), ("indices", ((),), {}, True),
            ("ix_", (np.array([0, 1]), np.array([2, 4, 5])), {}, True),
            ("ix_", (np.array([0.5, 2.0], f32),), {}, True),
            ("ix_", (np.zeros(0, i32), np.array([1])), {}, True)]
    for idx, shape in [(np.array([0, 5, 11, 7]), (3, 4)), (np.array([[3], [20]]), (4, 5)),
                       (np.array([-1, 30, 2]), (2, 3)), (np.uint8(7), (2, 2, 2)),
                       (np.array([4, 9], np.int64), 10)]:
        out.append(("unravel_index", (idx, shape), {}, bool(np.all((idx >= 0) &
                                                                     (idx < np.prod(shape))))))
    mi = (np.array([1, 0, 2]), np.array([3, 1, 0]))
    for mode in ("raise", "clip", "wrap"):
        out.append(("ravel_multi_index", (mi, (3, 4)), {"mode": mode}, True))
    bad = (np.array([-1, 3, 5]), np.array([7, 1, -9]))
    out += [("ravel_multi_index", (bad, (3, 4)), {"mode": "clip"}, True),
            ("ravel_multi_index", (bad, (3, 4)), {"mode": "wrap"}, True),
            ("ravel_multi_index", (mi, (3, 4)), {"order": "F"}, True),
            ("ravel_multi_index", (tuple(m.astype(np.uint8) for m in mi), (3, 4)), {}, True),
            ("ravel_multi_index", (mi, (3, 4)), {"dtype": np.int16}, False)]
    for dt in (f32, i32):
        x = _rand((4,), dt)
        out += [("vander", (x,), {}, True), ("vander", (x, 6), {"increasing": True}, True),
                ("vander", (x, 0), {}, True)]
    for s in ((2, 3), (2, 3, 4)):
        x = _rand(s, f32)
        for k in (0, 1, 2, 3, -1, 5):
            out.append(("rot90", (x, k), {}, True))
        out += [("rot90", (x, 1, (1, 0)), {}, True), ("rot90", (x, 3, (0, -1)), {}, True),
                ("rollaxis", (x, -1), {}, True), ("rollaxis", (x, 0, len(s)), {}, True),
                ("rollaxis", (x, 1, -1), {}, True)]
    x = _rand((4, 6, 2), f32)
    out += [("vsplit", (x, 2), {}, True), ("vsplit", (x, [1, 3]), {}, True),
            ("hsplit", (x, 3), {}, True), ("hsplit", (x, np.array([2, 5])), {}, True),
            ("hsplit", (np.arange(6), 2), {}, True), ("dsplit", (x, 2), {}, True),
            ("dsplit", (x, [1]), {}, True)]
    a2, b2 = _rand((2, 2), f32), _rand((2, 3), i32)
    out += [("block", ([[a2, b2], [_rand((1, 5), f32)]],), {}, True),
            ("block", ([1, 2, np.array([3, 4])],), {}, True),
            ("block", ([[1.0, 2.0], [3.0, 4.0]],), {}, True),
            ("block", (np.ones(3, f32),), {}, True),
            ("block", ([[[a2]], [[a2]]],), {}, True)]
    for shape in ((7,), (2, 3), (0,), (2, 0), ()):
        out.append(("resize", (np.arange(5), shape), {}, True))
    out += [("resize", (_rand((2, 2), f32), (3, 3)), {}, True),
            ("resize", (np.zeros(0, f32), (2,)), {}, False),
            ("resize", (3.0, (2, 2)), {}, True)]
    c1, c2 = _rand((4, 5), np.bool_), _rand((5,), np.bool_)
    out += [("select", ([c1, c2], [_rand((4, 5), f32), _rand((5,), f32)]), {}, True),
            ("select", ([c1], [1.5]), {"default": -1}, True),
            ("select", ([c1, c1], [1, 2]), {}, True),
            ("select", ([c2.astype(i32)], [_rand((5,), i32)]), {"default": 3.0}, False),
            ("choose", (np.array([0, 2, 1, 0]), [np.arange(4), np.arange(4) * 10,
                                                 np.arange(4) * 100]), {}, True),
            ("choose", (np.array([[0], [1]]), [_rand((3,), f32), _rand((2, 3), f32)]), {},
             True),
            ("choose", (np.array([-1, 3, 5]), [1, 2, 3]), {"mode": "clip"}, True),
            ("choose", (np.array([-1, 3, 5]), [1, 2, 3]), {"mode": "wrap"}, True),
            ("choose", (np.array([0, 1]), [1.0, np.array([2, 3], i32)]), {}, True)]
    xc = _rand((4, 3), f32)
    for cond in (np.array([True, False, True, True]), np.array([False, True]),
                 np.array([True, False, True, False, False, False])):
        out += [("compress", (cond, xc), {"axis": 0}, True),
                ("compress", (cond, xc), {}, True)]
    out += [("compress", (np.array([1, 0, 1]), xc), {"axis": 1}, True),
            ("compress", (np.array([1, 0, 1]), xc), {"axis": 1, "size": 2}, False),
            ("compress", (np.array([0, 1, 1, 0]), xc), {"axis": 0, "size": 3,
                                                        "fill_value": -7}, False),
            ("extract", (xc > 0, xc), {}, True),
            ("extract", (xc > 0, xc), {"size": 5, "fill_value": 9}, False),
            ("extract", (np.array([[1, 0], [0, 2]]), np.arange(4)), {}, True)]
    xd = _rand((5, 4), i32)
    for obj, axis in [(2, None), (-1, 0), (np.array([0, 3]), 1), (np.array([4, 0, 4]), 0),
                      (slice(1, None, 2), 1), (np.array([True, False, True, False]), 1),
                      (np.zeros(0, np.int32), 0), (np.int32(3), None), ([1, 2], 0)]:
        out.append(("delete", (xd, obj, axis), {}, True))
    out += [("delete", (xd, np.array([3, 0]), 0), {"assume_unique_indices": True}, True),
            ("delete", (xd, np.array([-1, 1]), 1), {"assume_unique_indices": True}, True)]
    for obj, vals, axis in [(1, 9, None), (np.array([1, 3]), np.array([7, 8]), None),
                            (2, np.array([1, 2, 3, 4, 5]), 1), (0, 0.5, 0),
                            (np.array([4, 0, 4]), 9, 0), (slice(None, None, 2), 9, 1),
                            (-1, np.array([[1], [2], [3], [4], [5]]), 1),
                            (np.array([1]), np.array([[1, 2, 3, 4], [5, 6, 7, 8]]), 0),
                            (np.array([1]), np.array([1, 2, 3, 4, 5]), 1),
                            (np.zeros(0, np.int32), np.zeros(0, np.int32), 0),
                            ([1], np.array([1, 2, 3, 4, 5]), 1), (1, [1, 2, 3, 4], 0)]:
        out.append(("insert", (xd, obj, vals, axis), {}, np.size(obj) > 0))
    for t in ("fb", "f", "b", "x"):
        out += [("trim_zeros", (np.array([0, 0, 3, 0, 4, 0]), t), {}, t != "x"),
                ("trim_zeros", (np.zeros(3, f32), t), {}, t != "x")]
    out += [("trim_zeros", (np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]]),), {}, False),
            ("trim_zeros", (np.array([[0, 0, 0], [0, 1, 2]]), "fb", 1), {}, False)]
    out += [("array_equiv", (np.ones(3), np.ones((2, 3))), {}, True),
            ("array_equiv", (np.ones(3), np.ones(2)), {}, True),
            ("array_equiv", (np.array([1, 2]), np.array([[1, 2], [1, 3]])), {}, True),
            ("isreal", (_rand((2, 3), f32),), {}, True), ("isreal", (3,), {}, True),
            ("iscomplex", (_rand((2,), i32),), {}, True)]
    for dt in (f32, i32, np.uint8):
        x = _rand((6,), dt)
        out += [("ediff1d", (x,), {}, dt != np.uint8),
                ("ediff1d", (x.reshape(2, 3), np.array([9, 8]), -1), {}, dt != np.uint8)]
    out += [("ediff1d", (np.ones(1, f32),), {}, True), ("ediff1d", (np.ones(0, f32),), {}, True)]
    for dt in (f32, i32):
        for s in ((3, 3), (4, 4, 4), (2, 5)):
            v = _rand((), dt)
            out += [("fill_diagonal", (_rand(s, dt), v), {"inplace": False}, False)]
        out += [("fill_diagonal", (_rand((5, 3), dt), np.arange(2, dtype=dt)),
                 {"inplace": False}, False),
                ("fill_diagonal", (_rand((3, 3), dt), 2.5), {"inplace": False}, False)]
    return out


CASES = _cases()
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _np_call(name, args, kwargs):
    kwargs = dict(kwargs)
    if name == "fill_diagonal":
        a = np.array(args[0])
        kwargs.pop("inplace")
        np.fill_diagonal(a, args[1])
        return a
    if name in ("compress", "extract") and "size" in kwargs:
        return None
    if name == "delete":
        kwargs.pop("assume_unique_indices", None)
    if name == "choose" and "mode" in kwargs:
        pass
    return getattr(np, name)(*args, **kwargs)


def _static_positions(name, args):
    """The argument positions jit may trace (arrays whose values do not size the
    result)."""
    traced = {"logspace": (0, 1), "geomspace": (0, 1), "diagflat": (0,), "vander": (0,),
              "rot90": (0,), "rollaxis": (0,), "vsplit": (0,), "hsplit": (0,), "dsplit": (0,),
              "resize": (0,), "select": (), "choose": (1,), "compress": (1,), "extract": (1,),
              "delete": (0,), "insert": (0, 2), "array_equiv": (0, 1), "isreal": (0,),
              "iscomplex": (0,), "ediff1d": (0, 1, 2), "fill_diagonal": (0, 1),
              "unravel_index": (0,), "ix_": (0, 1), "diag_indices_from": (0,)}
    return [i for i in traced.get(name, ()) if i < len(args) and
            isinstance(args[i], np.ndarray)]


def _run_jitted(name, args, kwargs):
    pos = _static_positions(name, args)
    if not pos:
        return None
    fn = getattr(jnp, name)

    def f(*traced):
        full = list(args)
        for p, t in zip(pos, traced):
            full[p] = t
        return fn(*full, **kwargs)
    return jx.jit(f)(*[args[p] for p in pos])


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_numpy_and_jit(case, x64):
    name, args, kwargs, with_numpy = case
    with jx.enable_x64(x64):
        got = getattr(jnp, name)(*args, **kwargs)
        if with_numpy:
            want = _np_call(name, args, kwargs)
            if want is not None:
                _same(got, want, tol=2e-5)
        jitted = _run_jitted(name, args, kwargs)
        if jitted is not None:
            _same(jitted, got, tol=1e-6, weak=False)


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_jax(case, x64):
    jax = pytest.importorskip("jax")
    name, args, kwargs, _ = case
    with jx.enable_x64(x64), jax.enable_x64(x64):
        try:
            want = getattr(jax.numpy, name)(*args, **kwargs)
        except Exception as e:       # JAX refuses it: so does jx, with the same type
            if "requires ndarray or scalar arguments" in str(e):
                pytest.skip("JAX refuses lists here; jx.numpy takes them as arrays, as its "
                            "other functions do")
            if (name, len(args[0]) if name == "array_equiv" else 0) == ("array_equiv", 3):
                pytest.skip("JAX 0.10.2 raises TypeError for shapes that do not broadcast "
                            "(its code means to return False, as NumPy does and jx does)")
            with pytest.raises(type(e)):
                getattr(jnp, name)(*args, **kwargs)
            return
        got = getattr(jnp, name)(*args, **kwargs)
        _same(got, want)


# ---------------------------------------------------------------- index tricks

GRID_KEYS = [(slice(0, 5),), (slice(0, 4, 2), slice(1, 3)), (slice(-1, 1, 5j), slice(0, 3)),
             (slice(0.5, 2.0, 0.5),), (slice(3),), ()]


@pytest.mark.parametrize("key", GRID_KEYS, ids=str)
def test_mgrid_ogrid(key):
    jax = pytest.importorskip("jax")
    k = key[0] if len(key) == 1 else key
    for grid in ("mgrid", "ogrid"):
        if grid == "ogrid" and key == ():
            continue
        got, want = getattr(jnp, grid)[k], getattr(jax.numpy, grid)[k]
        _same(got, want)
        _same(got, getattr(np, grid)[k], tol=1e-6)


R_KEYS = [(slice(1, 4), 0, np.array([5, 6])), ("0,2", np.array([1, 2]), np.array([3, 4])),
          ("1,2,0", np.array([1, 2, 3]), np.array([4, 5, 6])), ("r", np.array([1, 2])),
          ("c", np.array([1, 2])), ("0,2,-2", np.array([1, 2]), np.array([3, 4])),
          (slice(-1, 1, 4j), np.array([2.5], np.float32)), (1.0, 2, np.array([3], np.int32))]


@pytest.mark.parametrize("key", R_KEYS, ids=str)
def test_r_c(key):
    jax = pytest.importorskip("jax")
    for which in ("r_", "c_"):
        try:
            want_np = getattr(np, which)[key]
        except ValueError:
            want_np = None
        try:
            want = getattr(jax.numpy, which)[key]
        except (TypeError, ValueError):
            with pytest.raises((TypeError, ValueError)):
                getattr(jnp, which)[key]
            continue
        got = getattr(jnp, which)[key]
        _same(got, want)
        if want_np is not None:
            _same(got, want_np)
    assert jnp.s_[1:2, ::3] == np.s_[1:2, ::3] and jnp.index_exp[2] == (2,)
    with pytest.raises(ValueError, match="directive"):
        jnp.r_["a,b", 1]
    with pytest.raises(ValueError, match="beginning"):
        jnp.r_[1, "0"]


# ---------------------------------------------------------------- traced behaviour

def test_traced_forms_work_under_jit():
    x = _rand((5, 4), np.float32)
    idx = np.array([1, 3], np.int32)
    out = jx.jit(lambda x, i: jnp.delete(x, i, 0, assume_unique_indices=True))(x, idx)
    np.testing.assert_array_equal(np.asarray(out), np.delete(x, idx, 0))
    out = jx.jit(lambda x, i, v: jnp.insert(x, i, v, axis=1))(x, idx, np.float32(9))
    np.testing.assert_array_equal(np.asarray(out), np.insert(x, idx, 9, axis=1))
    out = jx.jit(lambda c, x: jnp.compress(c, x, axis=0, size=3))(x[:, 0] > 0, x)
    want = np.concatenate([x[x[:, 0] > 0], np.zeros((5, 4), np.float32)])[:3]
    np.testing.assert_array_equal(np.asarray(out), want)
    out = jx.jit(lambda c, x: jnp.extract(c, x, size=20, fill_value=-1))(x > 0, x)
    want = np.concatenate([x[x > 0], -np.ones(20, np.float32)])[:20]
    np.testing.assert_array_equal(np.asarray(out), want)
    i0, i1 = np.array([0, 4, 7]), np.array([1, -2, 2])
    for mode in ("clip", "wrap"):
        out = jx.jit(lambda a, b: jnp.ravel_multi_index((a, b), (5, 3), mode=mode))(i0, i1)
        np.testing.assert_array_equal(np.asarray(out),
                                      np.ravel_multi_index((i0, i1), (5, 3), mode=mode))
        rows = [x[0, :2], x[1, :2], x[2, :2]]
        out = jx.jit(lambda a: jnp.choose(a, rows, mode=mode))(idx - 2)
        np.testing.assert_array_equal(np.asarray(out), np.choose(idx - 2, rows, mode=mode))
    conds = jx.jit(lambda x: jnp.select([x > 1, x < -1], [x, -x], 0.0))(x)
    np.testing.assert_array_equal(np.asarray(conds), np.select([x > 1, x < -1], [x, -x], 0.0))
    out = jx.jit(lambda i: jnp.unravel_index(i, (4, 5)))(np.array([0, 7, 19]))
    np.testing.assert_array_equal(np.stack(out), np.stack(np.unravel_index([0, 7, 19], (4, 5))))


def test_static_requirements_raise_clear_errors():
    x = np.arange(6.0, dtype=np.float32)
    mask = np.array([1, 0, 1, 0, 1, 0], np.int32)
    for fn, what, arg in [(lambda c: jnp.compress(c, x), "size=", mask),
                          (lambda c: jnp.extract(c, x), "size=", mask),
                          (lambda i: jnp.delete(x, i), "assume_unique_indices", mask),
                          (lambda i: jnp.choose(i, [x, x]), "mode='wrap'", mask),
                          (lambda i: jnp.ravel_multi_index((i,), (6,)), "mode='wrap'", mask),
                          (lambda c: jnp.trim_zeros(c), "concrete", mask),
                          (lambda n: jnp.tril_indices(n), "static", np.int32(3)),
                          (lambda k: jnp.hsplit(x, k), "static", np.int32(2)),
                          (lambda n: jnp.vander(x, n), "static", np.int32(2))]:
        with pytest.raises(TracerConversionError, match=what):
            jx.jit(fn)(arg)


def test_argument_errors():
    x = np.ones((3, 3), np.float32)
    with pytest.raises(NotImplementedError, match="inplace=False"):
        jnp.fill_diagonal(x, 1.0)
    with pytest.raises(NotImplementedError, match="wrap"):
        jnp.fill_diagonal(x, 1.0, wrap=True, inplace=False)
    with pytest.raises(ValueError, match="equal length"):
        jnp.fill_diagonal(np.ones((2, 3, 3)), 1.0, inplace=False)
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.choose(np.array([0, 2]), [1, 2])
    with pytest.raises(ValueError, match="integer typed"):
        jnp.choose(np.array([0.0]), [1, 2])
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.ravel_multi_index((np.array([3]),), (3,))
    with pytest.raises(ValueError, match="not large enough"):
        jnp.ravel_multi_index((np.array([3]), np.array([1])), (300, 300), dtype=np.int8)
    with pytest.raises(ValueError, match="mode"):
        jnp.ravel_multi_index((np.array([0]),), (3,), mode="bogus")
    with pytest.raises(ValueError, match="condlist"):
        jnp.select([x > 0], [x, x])
    with pytest.raises(ValueError, match="functions are"):
        jnp.piecewise(x, [x > 0], [1, 2, 3])
    with pytest.raises(ValueError, match="tuples"):
        jnp.block((x, x))
    with pytest.raises(ValueError, match="depths"):
        jnp.block([x, [x]])
    with pytest.raises(ValueError, match="ndim at least"):
        jnp.rot90(np.ones(3))
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.compress(np.array([0, 0, 0, 1]), np.ones(3))
    with pytest.raises(ValueError, match="size must be"):
        jnp.compress(np.array([0, 1]), np.ones(2), size=3)
    with pytest.raises(ValueError, match="non-negative"):
        jnp.resize(np.ones(3), (-1, 2))
    with pytest.raises(ValueError, match="one-dimensional"):
        jnp.vander(x)
    with pytest.raises(ValueError, match="must be integer"):
        jnp.insert(np.ones(3), np.array([0.5]), 1.0)
    with pytest.raises(ValueError, match="boolean indices"):
        jnp.delete(np.ones(3), np.array([True, False]))
    with pytest.raises(ValueError, match="2-d"):
        jnp.tril_indices_from(np.ones(3))
    with pytest.raises(ValueError, match="nonnegative"):
        jnp.diag_indices(-1)
    with pytest.raises(ValueError, match="1-dimensional"):
        jnp.ix_(x)
    with pytest.raises(NotImplementedError, match="Boolean"):
        jnp.ix_(np.array([True, False]))


# ---------------------------------------------------------------- predicates

def test_object_predicates():
    assert jnp.iterable([1, 2]) and not jnp.iterable(3) and jnp.iterable(jnp.ones(2))
    assert not jnp.iscomplexobj(jnp.ones(2)) and jnp.isrealobj(np.ones(2, np.float32))
    assert jnp.iscomplexobj(1j) and jnp.iscomplexobj(np.ones(2, np.complex64))
    assert not jnp.iscomplexobj(None) and not jnp.iscomplexobj([1.0, 2.0])
    assert jnp.isrealobj(3) and not jnp.isrealobj(np.complex128(1))
    assert bool(jx.jit(jnp.array_equiv)(np.ones(3), np.ones((2, 3))))


# ---------------------------------------------------------------- grads

def test_gradients_flow():
    x = np.linspace(0.5, 2.0, 6, dtype=np.float32)
    g = jx.grad(lambda x: jnp.sum(jnp.insert(x, np.array([1, 2]), 0.0) ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * x, rtol=1e-6)
    g = jx.grad(lambda x: jnp.sum(jnp.delete(x, np.array([0, 5])) * 3))(x)
    np.testing.assert_allclose(np.asarray(g), [0, 3, 3, 3, 3, 0])
    g = jx.grad(lambda x: jnp.sum(jnp.select([x > 1], [x ** 2], x)))(x)
    np.testing.assert_allclose(np.asarray(g), np.where(x > 1, 2 * x, 1), rtol=1e-6)
    g = jx.grad(lambda x: jnp.sum(jnp.vander(x, 3)))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * x + 1, rtol=1e-6)
    g = jx.grad(lambda s: jnp.sum(jnp.geomspace(s, 8.0, 4)))(np.float32(1.0))
    want = sum((1 - t) * 8.0 ** t for t in np.linspace(0, 1, 4))
    np.testing.assert_allclose(float(g), want, rtol=1e-5)
    g = jx.grad(lambda x: jnp.sum(jnp.vectorize(lambda r: jnp.sum(r) ** 2,
                                                signature="(n)->()")(x.reshape(2, 3))))(x)
    sums = x.reshape(2, 3).sum(1)
    np.testing.assert_allclose(np.asarray(g), np.repeat(2 * sums, 3), rtol=1e-5)
    g = jx.grad(lambda x: jnp.sum(jnp.apply_along_axis(jnp.cumsum, 0, x.reshape(3, 2))))(x)
    np.testing.assert_allclose(np.asarray(g), [3, 3, 2, 2, 1, 1])
    g = jx.grad(lambda x: jnp.sum(jnp.piecewise(x, [x < 1, x > 1.5], [jnp.sin, lambda v: v * v,
                                                                     1.0])))(x)
    want = np.where(x > 1.5, 2 * x, np.where(x < 1, np.cos(x), 0))
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6)


# ---------------------------------------------------------------- mapping functions

def test_piecewise():
    jax = pytest.importorskip("jax")
    x = np.linspace(-2.5, 2.5, 11, dtype=np.float32)
    for conds, funcs in [([x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2]),
                         ([x < -1, x > 1], [-1.0, 1.0, lambda v: v]),
                         ([x < 0], [jnp.cos]), ([x > 0, x > 1], [1, 2])]:
        got = jnp.piecewise(x, conds, funcs)
        jfuncs = [getattr(jax.numpy, f.__name__) if f is jnp.cos else f for f in funcs]
        _same(got, jax.numpy.piecewise(x, conds, jfuncs))
        _same(got, np.piecewise(x, conds, [np.cos if f is jnp.cos else f for f in funcs]))
        _same(jx.jit(lambda v: jnp.piecewise(v, [v < 0], funcs[:1]))(x),
              np.piecewise(x, [x < 0], [np.cos if f is jnp.cos else f for f in funcs[:1]]))
    xi = np.arange(-3, 4, dtype=np.int32)
    _same(jnp.piecewise(xi, [xi < 0], [lambda v: v * 1.5, 2.7]),
          jax.numpy.piecewise(xi, [xi < 0], [lambda v: v * 1.5, 2.7]))


def test_vectorize_matches_jax():
    jax = pytest.importorskip("jax")
    a, b = _rand((4, 1, 3), np.float32), _rand((5, 3), np.float32)
    cases = [
        (lambda x, y: x * y + 1, {}, (a, b)),
        (lambda x, y: jnp.dot(x, y), {"signature": "(n),(n)->()"}, (a, b)),
        (lambda x: (jnp.sum(x), jnp.max(x)), {"signature": "(n)->(),()"}, (b,)),
        (lambda x: jnp.outer(x, x), {"signature": "(n)->(n,n)"}, (b,)),
        (lambda x, p: x ** p, {"excluded": {1}}, (b, 2)),
        (lambda x, *, s: x * s, {"excluded": {"s"}}, (a,)),
        (lambda x: x.sum() if x.ndim == 0 else None, {}, (np.float32(2.0),)),
        (lambda x, y: jnp.where(x > y, x, y) - jnp.mean(x), {}, (a, b)),
    ]
    for fn, kw, args in cases:
        kwargs = {"s": 3.0} if "s" in kw.get("excluded", ()) else {}
        jfn = fn
        if fn is cases[1][0] or fn is cases[2][0] or fn is cases[3][0] or fn is cases[7][0]:
            jfn = _with_jax(fn, jax)
        got = jnp.vectorize(fn, **kw)(*args, **kwargs)
        want = jax.numpy.vectorize(jfn, **kw)(*args, **kwargs)
        _same(got, want, tol=1e-5)
        arrays = [i for i, v in enumerate(args) if isinstance(v, np.ndarray)]

        def traced(*vals, fn=fn, kw=kw, args=args, arrays=arrays, kwargs=kwargs):
            full = list(args)
            for i, v in zip(arrays, vals):
                full[i] = v
            return jnp.vectorize(fn, **kw)(*full, **kwargs)
        if arrays:
            _same(jx.jit(traced)(*[args[i] for i in arrays]), got, tol=1e-5, weak=False)


def _with_jax(fn, jax):
    """fn with jx.numpy's names swapped for jax.numpy's (the same code for JAX)."""
    import types
    glb = dict(fn.__globals__)
    glb["jnp"] = jax.numpy
    return types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, fn.__closure__)


def test_vectorize_errors_and_shapes():
    f = jnp.vectorize(lambda x, y: jnp.dot(x, y), signature="(n),(n)->()")
    with pytest.raises(ValueError, match="inconsistent size"):
        f(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        jnp.vectorize(lambda x: x, signature="(n->)")
    with pytest.raises(TypeError, match="wrong number of positional"):
        f(np.ones(3))
    with pytest.raises(ValueError, match="negative"):
        jnp.vectorize(lambda x: x, excluded={-1})
    g = jnp.vectorize(lambda x: x[:2], signature="(n)->(m)")
    assert g(np.ones((3, 5))).shape == (3, 2)
    h = jnp.vectorize(lambda x: x, signature="(n)->(n,n)")
    with pytest.raises(ValueError, match="core dimensions"):
        h(np.ones((2, 3)))
    # an empty batch keeps the output's shape and dtype
    out = jnp.vectorize(lambda x: jnp.sum(x), signature="(n)->()")(np.ones((0, 3), np.float32))
    assert out.shape == (0,) and out.dtype == np.float32
    # the batch runs as one scan under jit (the body traced once)
    calls = []

    def body(x):
        calls.append(1)
        return jnp.sum(jnp.sort(x))
    out = jx.jit(jnp.vectorize(body, signature="(n)->()"))(np.arange(12.0).reshape(4, 3))
    np.testing.assert_allclose(np.asarray(out), [3, 12, 21, 30])
    assert len(calls) == 1


def test_apply_along_and_over_axes():
    jax = pytest.importorskip("jax")
    x = _rand((3, 4, 5), np.float32)
    for axis in (0, 1, 2, -1):
        for fn, jfn, nfn in [(jnp.sum, jax.numpy.sum, np.sum),
                             (jnp.cumsum, jax.numpy.cumsum, np.cumsum),
                             (lambda r: jnp.outer(r, r[:2]), lambda r: jax.numpy.outer(r, r[:2]),
                              lambda r: np.outer(r, r[:2]))]:
            got = jnp.apply_along_axis(fn, axis, x)
            _same(got, jax.numpy.apply_along_axis(jfn, axis, x))
            _same(got, np.apply_along_axis(nfn, axis, x), tol=1e-5)
            _same(jx.jit(lambda v: jnp.apply_along_axis(fn, axis, v))(x), got, weak=False)
    got = jnp.apply_along_axis(lambda r, p: r ** p, 1, x, 2)
    _same(got, np.apply_along_axis(lambda r, p: r ** p, 1, x, 2), tol=1e-5)
    for axes in ([0], [0, 2], [1, -1]):
        got = jnp.apply_over_axes(jnp.sum, x, axes)
        _same(got, jax.numpy.apply_over_axes(jax.numpy.sum, x, axes))
        _same(got, np.apply_over_axes(np.sum, x, axes), tol=1e-5)
    with pytest.raises(ValueError, match="correct shape"):
        jnp.apply_over_axes(lambda a, ax: jnp.sum(a), x, [0])


def test_fromfunction():
    jax = pytest.importorskip("jax")
    for fn, shape, kw in [(lambda i, j: i * 10 + j, (3, 4), {}),
                          (lambda i, j: i == j, (3, 3), {"dtype": np.int32}),
                          (lambda i: i ** 2, 5, {}),
                          (lambda i, j, k: i + j * k, (2, 3, 2), {"dtype": np.float32})]:
        got = jnp.fromfunction(fn, shape, **kw)
        _same(got, jax.numpy.fromfunction(fn, shape, **kw))
        _same(got, np.fromfunction(fn, (shape,) if np.ndim(shape) == 0 else shape, **kw))


def test_frompyfunc_matches_jax():
    jax = pytest.importorskip("jax")
    x = _rand((3, 4), np.float32)
    xi = _rand((5,), np.int32)
    for lib_f in (lambda lib: lib.frompyfunc(lambda a, b: a * b + 1, 2, 1, identity=0),):
        f, g = lib_f(jnp), lib_f(jax.numpy)
        assert f.nin == 2 and f.nout == 1 and f.identity == 0 and "ufunc" in repr(f)
        checks = [
            lambda u: u(x, 2.0), lambda u: u(xi, 3), lambda u: u.reduce(x),
            lambda u: u.reduce(x, axis=1, keepdims=True), lambda u: u.reduce(x, axis=None),
            lambda u: u.reduce(x, initial=2.0, where=x > 0), lambda u: u.reduce(xi),
            lambda u: u.reduce(np.zeros((0, 2), np.float32)),
            lambda u: u.accumulate(x, axis=1), lambda u: u.accumulate(xi),
            lambda u: u.outer(xi, x[0]), lambda u: u.outer(x, xi[:2]),
            lambda u: u.at(x, (np.array([0, 0, 2]), np.array([1, 1, 3])), 3.0, inplace=False),
            lambda u: u.at(x, 1, 2.0, inplace=False),
            lambda u: u.reduceat(np.arange(8.0, dtype=np.float32), np.array([0, 4, 1, 5])),
        ]
        for check in checks:
            _same(check(f), check(g))
        _same(jx.jit(lambda v: f.reduce(v, axis=0))(x), g.reduce(x, axis=0), weak=False)
        _same(jx.jit(lambda v: f.accumulate(v, axis=0))(x), g.accumulate(x), weak=False)
        _same(jx.jit(lambda v: f(v, v))(x), g(x, x), weak=False)
    h = jnp.frompyfunc(lambda a: (a + 1, a * 2), 1, 2)
    _same(h(xi), jax.numpy.frompyfunc(lambda a: (a + 1, a * 2), 1, 2)(xi))
    with pytest.raises(ValueError, match="binary"):
        h.reduce(xi)
    with pytest.raises(NotImplementedError, match="inplace=False"):
        f.at(x, 0, 1.0)
    with pytest.raises(ValueError, match="identity"):
        jnp.frompyfunc(lambda a, b: a + b, 2, 1).reduce(x, where=x > 0)
    g = jx.grad(lambda v: jnp.sum(f.reduce(v)))(x)
    want = jax.grad(lambda v: jax.numpy.sum(jax.numpy.frompyfunc(
        lambda a, b: a * b + 1, 2, 1, identity=0).reduce(v)))(x)
    _same(g, np.asarray(want))


def test_vectorize_rank_promotion_setting():
    f = jnp.vectorize(lambda a, b: a + b)
    a, b = np.ones((2, 3), np.float32), np.ones(3, np.float32)
    with jx.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="rank promotion"):
            f(a, b)
        np.testing.assert_array_equal(np.asarray(f(a, np.float32(1))), a + 1)
    with jx.numpy_rank_promotion("warn"):
        with pytest.warns(UserWarning, match="rank promotion"):
            f(a, b)
    with pytest.raises(NotImplementedError, match="excluded="):
        jnp.vectorize(lambda a, s=1: a * s)(a, s=2)     # JAX drops s silently
    out = jnp.vectorize(lambda a, s=1: a * s, excluded={"s"})(a, s=2)
    np.testing.assert_array_equal(np.asarray(out), a * 2)
    out = jnp.vectorize(lambda a, b: a if b is None else a + b)(a, None)
    np.testing.assert_array_equal(np.asarray(out), a)


def test_piecewise_functions_see_elements():
    jax = pytest.importorskip("jax")
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    # a function that is not elementwise: under JAX's vmap it sees one element
    got = jnp.piecewise(x, [x > 2], [lambda v: jnp.sum(v) + 1, lambda v: v * jnp.ones(())])
    want = jax.numpy.piecewise(x, [x > 2], [lambda v: jax.numpy.sum(v) + 1, lambda v: v])
    _same(got, want)
    _same(jx.jit(lambda v: jnp.piecewise(v, [v > 2], [lambda e: jnp.sum(e) + 1, 0.5]))(x),
          np.where(x > 2, x + 1, 0.5).astype(np.float32), weak=False)
