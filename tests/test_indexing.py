"""Indexing: dynamic_slice/update, gather and scatter against loop references
of XLA's semantics; x[idx], x.at[idx], take and take_along_axis against NumPy."""
import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import core, lax
from jx.ir import ShapedArray
from jx.prims import indexing as ix
from jx.prims.indexing import GatherDimensionNumbers as GDN
from jx.prims.indexing import ScatterDimensionNumbers as SDN

COVERED = {"dynamic_slice", "dynamic_update_slice", "gather", "scatter", "scatter_add",
           "scatter_mul", "scatter_min", "scatter_max"}

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


def rand(rng, shape, dt):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind == "i":
        return rng.integers(-50, 50, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def traced(prim, *args, **params):
    """make_graph -> verify -> eval_graph of one primitive; also checks eager agrees."""
    specs = [jx.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in args]
    g = jx.verify(jx.make_graph(lambda *xs: core.bind(prim, *xs, **params))(*specs))
    (out,) = jx.eval_graph(g, *args)
    (eager,) = core.bind(prim, *args, **params)
    np.testing.assert_array_equal(out, eager)
    assert out.shape == g.out_avals[0].shape and out.dtype == g.out_avals[0].dtype
    return out


# ---------------------------------------------------------------- dynamic slices

@pytest.mark.parametrize("dt", DTYPES)
def test_dynamic_slice_clamps(dt, rng):
    for shape, sizes in [((7,), (3,)), ((4, 5), (2, 5)), ((3, 4, 2), (1, 2, 2)), ((5,), (0,))]:
        x = rand(rng, shape, dt)
        for _ in range(4):
            starts = [np.int32(rng.integers(-3, n + 3)) for n in shape]
            lo = [min(max(int(s), 0), n - k) for s, n, k in zip(starts, shape, sizes)]
            want = x[tuple(slice(a, a + k) for a, k in zip(lo, sizes))]
            got = traced(ix.dynamic_slice, x, *starts, slice_sizes=sizes)
            np.testing.assert_array_equal(got, want)
    x = np.arange(6.0)
    (got,) = core.bind(ix.dynamic_slice, x, np.int64(100), slice_sizes=(2,))
    np.testing.assert_array_equal(got, [4.0, 5.0])      # clamped to the last window


@pytest.mark.parametrize("dt", DTYPES)
def test_dynamic_update_slice_clamps(dt, rng):
    for shape, ushape in [((7,), (3,)), ((4, 5), (2, 5)), ((3, 4, 2), (1, 2, 2))]:
        x, u = rand(rng, shape, dt), rand(rng, ushape, dt)
        for _ in range(4):
            starts = [np.int64(rng.integers(-3, n + 3)) for n in shape]
            lo = [min(max(int(s), 0), n - k) for s, n, k in zip(starts, shape, ushape)]
            want = x.copy()
            want[tuple(slice(a, a + k) for a, k in zip(lo, ushape))] = u
            np.testing.assert_array_equal(traced(ix.dynamic_update_slice, x, u, *starts), want)


# ---------------------------------------------------------------- gather / scatter references

def ref_gather(op, idx, dn, sizes, mode, fill=None):
    """XLA gather, one output element at a time."""
    kept = [d for d in range(op.ndim)
            if d not in dn.collapsed_slice_dims + dn.operand_batching_dims]
    out_rank = idx.ndim - 1 + len(dn.offset_dims)
    offs, bats = iter(sizes[d] for d in kept), iter(idx.shape[:-1])
    out_shape = tuple(next(offs) if i in dn.offset_dims else next(bats) for i in range(out_rank))
    out = np.empty(out_shape, op.dtype)
    for oi in np.ndindex(*out_shape):
        b = [oi[k] for k in range(out_rank) if k not in dn.offset_dims]
        o = iter(oi[k] for k in dn.offset_dims)
        start = [0] * op.ndim
        for k, d in enumerate(dn.start_index_map):
            start[d] = int(idx[tuple(b)][k])
        for od, idim in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            start[od] = b[idim]
        oob = any(not 0 <= s <= n - z for s, n, z in zip(start, op.shape, sizes))
        if mode == "fill" and oob:
            out[oi] = fill
            continue
        start = [min(max(s, 0), n - z) for s, n, z in zip(start, op.shape, sizes)]
        pos = [start[d] + (next(o) if d in kept else 0) for d in range(op.ndim)]
        out[oi] = op[tuple(pos)]
    return out


def ref_scatter(op, idx, upd, dn, mode, combine):
    out = op.copy()
    uwd = dn.update_window_dims
    skip = dn.inserted_window_dims + dn.operand_batching_dims
    wins = iter(upd.shape[d] for d in uwd)
    window = [1 if d in skip else next(wins) for d in range(op.ndim)]
    for ui in np.ndindex(*upd.shape):
        b = [ui[k] for k in range(upd.ndim) if k not in uwd]
        w = iter(ui[k] for k in uwd)
        start = [0] * op.ndim
        for k, d in enumerate(dn.scatter_dims_to_operand_dims):
            start[d] = int(idx[tuple(b)][k])
        for od, idim in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
            start[od] = b[idim]
        if any(not 0 <= s <= n - z for s, n, z in zip(start, op.shape, window)):
            if mode == "drop":
                continue
            start = [min(max(s, 0), n - z) for s, n, z in zip(start, op.shape, window)]
        pos = tuple(start[d] + (0 if d in skip else next(w)) for d in range(op.ndim))
        out[pos] = combine(out[pos], upd[ui])
    return out


# (operand shape, indices shape, dimension numbers, slice sizes)
GATHERS = [
    ((6, 4), (3, 1), GDN((1,), (0,), (0,)), (1, 4)),                  # take rows
    ((6, 4), (2, 3, 1), GDN((2,), (1,), (1,)), (6, 1)),               # take columns
    ((5, 6), (4, 2), GDN((), (0, 1), (0, 1)), (1, 1)),                # points
    ((5, 6), (4, 2), GDN((1, 2), (), (0, 1)), (2, 3)),                # windows
    ((4, 5, 3), (2, 1), GDN((0, 2), (1,), (1,)), (4, 1, 3)),          # offsets around batch
    ((3, 7), (3, 2, 1), GDN((), (1,), (1,), (0,), (0,)), (1, 1)),     # take_along_axis
    ((4, 3, 5), (5, 4, 1), GDN((2,), (0,), (0,), (2,), (0,)), (1, 3, 1)),  # batching, offset
    ((6,), (3, 0), GDN((1,), (), ()), (6,)),                         # empty index vector
]


@pytest.mark.parametrize("case", range(len(GATHERS)))
@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_gather_matches_loop_reference(case, mode, rng):
    oshape, ishape, dn, sizes = GATHERS[case]
    for dt in DTYPES:
        x = rand(rng, oshape, dt)
        hi = max(oshape) + 2
        idx = rng.integers(-2, hi, ishape).astype(np.int32 if dt != np.int64 else np.int64)
        got = traced(ix.gather, x, idx, dimension_numbers=dn, slice_sizes=sizes, mode=mode)
        want = ref_gather(x, idx, dn, sizes, mode, ix.default_fill_value(dt))
        np.testing.assert_array_equal(got, want)


def test_gather_fill_values(rng):
    dn = GDN((), (0,), (0,))
    idx = np.array([[1], [9], [-1]], np.int32)
    for dt, fill in [(np.float32, np.nan), (np.int32, -2**31), (np.uint8, 255), (np.bool_, True)]:
        x = np.zeros(4, dt)
        (got,) = core.bind(ix.gather, x, idx, dimension_numbers=dn, slice_sizes=(1,),
                           mode="fill")
        np.testing.assert_array_equal(got, np.array([0, fill, fill], dt))
    (got,) = core.bind(ix.gather, np.ones(4, np.float32), idx, dimension_numbers=dn,
                       slice_sizes=(1,), mode="fill", fill_value=-7.0)
    np.testing.assert_array_equal(got, [1.0, -7.0, -7.0])


# (operand shape, indices shape, updates shape, dimension numbers)
SCATTERS = [
    ((6, 4), (3, 1), (3, 4), SDN((1,), (0,), (0,))),                 # rows
    ((5, 6), (4, 2), (4,), SDN((), (0, 1), (0, 1))),                  # points
    ((5, 6), (2, 2), (2, 2, 3), SDN((1, 2), (), (0, 1))),             # windows
    ((4, 5, 3), (2, 1), (4, 2, 3), SDN((0, 2), (1,), (1,))),          # window around batch
    ((3, 7), (3, 2, 1), (3, 2), SDN((), (1,), (1,), (0,), (0,))),     # batching
]
COMBINES = {"scatter": lambda a, b: b, "scatter_add": np.add, "scatter_mul": np.multiply,
            "scatter_min": np.minimum, "scatter_max": np.maximum}


@pytest.mark.parametrize("case", range(len(SCATTERS)))
@pytest.mark.parametrize("mode", ["drop", "clip"])
@pytest.mark.parametrize("name", sorted(COMBINES))
def test_scatter_matches_loop_reference(case, mode, name, rng):
    oshape, ishape, ushape, dn = SCATTERS[case]
    prim = core.PRIMITIVES[name]
    for dt in DTYPES:
        if dt == np.bool_ and name in ("scatter_add", "scatter_mul"):
            continue
        x, u = rand(rng, oshape, dt), rand(rng, ushape, dt)
        idx = rng.integers(-2, max(oshape) + 2, ishape).astype(np.int32)
        if name == "scatter":       # set: distinct windows, so no order question
            idx = _distinct(rng, oshape, ishape, ushape, dn)
        got = traced(prim, x, idx, u, dimension_numbers=dn, mode=mode)
        with np.errstate(all="ignore"):
            want = ref_scatter(x, idx, u, dn, mode, COMBINES[name])
        if np.dtype(dt).kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5)
        else:
            np.testing.assert_array_equal(got, want)


def _distinct(rng, oshape, ishape, ushape, dn):
    """Indices whose (clamped) windows never overlap: scatter-set has one answer."""
    for _ in range(200):
        idx = rng.integers(-2, max(oshape) + 2, ishape).astype(np.int32)
        hits = ref_scatter(np.zeros(oshape, np.int64), idx, np.ones(ushape, np.int64), dn,
                           "clip", np.add)
        if hits.max() <= 1:
            return idx
    raise AssertionError("no distinct indices found")


def test_scatter_drops_and_clips_out_of_bounds():
    x = np.zeros(5, np.float32)
    idx = np.array([[7], [-1], [2]], np.int32)
    u = np.array([1.0, 2.0, 3.0], np.float32)
    dn = SDN((), (0,), (0,))
    (dropped,) = core.bind(ix.scatter_add, x, idx, u, dimension_numbers=dn, mode="drop")
    np.testing.assert_array_equal(dropped, [0, 0, 3, 0, 0])
    (clipped,) = core.bind(ix.scatter_add, x, idx, u, dimension_numbers=dn, mode="clip")
    np.testing.assert_array_equal(clipped, [2, 0, 3, 0, 1])
    # a window that sticks out is dropped whole (XLA), not cut
    (win,) = core.bind(ix.scatter, x, np.array([[4]], np.int32), np.ones((1, 2), np.float32),
                       dimension_numbers=SDN((1,), (), (0,)), mode="drop")
    np.testing.assert_array_equal(win, np.zeros(5))


def test_scatter_set_duplicates_last_wins_in_reference():
    (out,) = core.bind(ix.scatter, np.zeros(3, np.int32), np.array([[1], [1], [0], [1]]),
                       np.array([5, 6, 7, 8], np.int32), dimension_numbers=SDN((), (0,), (0,)),
                       mode="drop")
    np.testing.assert_array_equal(out, [7, 8, 0])


def S(dt, *shape):
    return ShapedArray(shape, np.dtype(dt))


F, I = np.float32, np.int32
ERRORS = [
    (ix.dynamic_slice, [S(F, 4), S(I)], dict(slice_sizes=(5,)), "slice_sizes"),
    (ix.dynamic_slice, [S(F, 4, 2), S(I)], dict(slice_sizes=(1, 1)), "one start index"),
    (ix.dynamic_slice, [S(F, 4), S(F)], dict(slice_sizes=(1,)), "integer scalars"),
    (ix.dynamic_slice, [S(F, 4, 2), S(I), S(np.int64)], dict(slice_sizes=(1, 1)), "one dtype"),
    (ix.dynamic_update_slice, [S(F, 4), S(F, 5), S(I)], {}, "no dim larger"),
    (ix.dynamic_update_slice, [S(F, 4), S(I, 2), S(I)], {}, "dtype of operand"),
    (ix.gather, [S(F, 5), S(F, 2, 1)],
     dict(dimension_numbers=GDN((), (0,), (0,)), slice_sizes=(1,), mode="clip"), "integers"),
    (ix.gather, [S(F, 5), S(I)],
     dict(dimension_numbers=GDN((), (0,), (0,)), slice_sizes=(1,), mode="clip"), "index vector"),
    (ix.gather, [S(F, 5, 3), S(I, 2, 1)],
     dict(dimension_numbers=GDN((), (0,), (0,)), slice_sizes=(1, 3), mode="clip"), "offset_dims"),
    (ix.gather, [S(F, 5, 3), S(I, 2, 2)],
     dict(dimension_numbers=GDN((1,), (0,), (0,)), slice_sizes=(1, 3), mode="clip"),
     "start_index_map"),
    (ix.gather, [S(F, 5, 3), S(I, 2, 1)],
     dict(dimension_numbers=GDN((1,), (0,), (0,)), slice_sizes=(2, 3), mode="clip"),
     "slice size 1"),
    (ix.gather, [S(F, 5, 3), S(I, 2, 1)],
     dict(dimension_numbers=GDN((1,), (0,), (0,)), slice_sizes=(1, 3), mode="wrap"), "mode"),
    (ix.gather, [S(F, 3, 7), S(I, 4, 1)],
     dict(dimension_numbers=GDN((), (1,), (1,), (0,), (0,)), slice_sizes=(1, 1), mode="clip"),
     "differ in size"),
    (ix.scatter_add, [S(F, 5), S(I, 2, 1), S(F, 3)],
     dict(dimension_numbers=SDN((), (0,), (0,)), mode="drop"), "batch dims"),
    (ix.scatter_add, [S(F, 5), S(I, 2, 1), S(I, 2)],
     dict(dimension_numbers=SDN((), (0,), (0,)), mode="drop"), "dtype of operand"),
    (ix.scatter_add, [S(np.bool_, 5), S(I, 2, 1), S(np.bool_, 2)],
     dict(dimension_numbers=SDN((), (0,), (0,)), mode="drop"), "bool"),
    (ix.scatter, [S(F, 5, 2), S(I, 2, 1), S(F, 2, 3)],
     dict(dimension_numbers=SDN((1,), (0,), (0,)), mode="drop"), "larger than operand"),
    (ix.scatter, [S(F, 5, 2), S(I, 2, 1), S(F, 2, 2)],
     dict(dimension_numbers=SDN((1,), (0,), (0,)), mode="fill"), "mode"),
]


@pytest.mark.parametrize("prim,avals,params,msg", ERRORS)
def test_shape_rule_errors(prim, avals, params, msg):
    with pytest.raises(jx.ShapeError, match=msg):
        prim.abstract_eval(*avals, **params)
    specs = [jx.ShapeDtypeStruct(a.shape, a.dtype) for a in avals]
    with pytest.raises(jx.ShapeError, match=prim.name):
        jx.make_graph(lambda *xs: core.bind(prim, *xs, **params))(*specs)


# ---------------------------------------------------------------- x[idx] vs NumPy

MASK = np.array([True, False, True, True])
GETITEMS = [
    ((5,), lambda x: x[2]), ((5,), lambda x: x[-1]), ((5,), lambda x: x[1:4]),
    ((5,), lambda x: x[::-1]), ((5,), lambda x: x[::-2]), ((5,), lambda x: x[4:0:-3]),
    ((5,), lambda x: x[3:1]), ((5,), lambda x: x[None]), ((5,), lambda x: x[...]),
    ((3, 4), lambda x: x[1, -2]), ((3, 4), lambda x: x[:, 1:3]), ((3, 4), lambda x: x[::2, ::-1]),
    ((3, 4), lambda x: x[None, :, None, 1]), ((2, 3, 4), lambda x: x[..., 1]),
    ((2, 3, 4), lambda x: x[1, ..., None]), ((2, 3, 4), lambda x: x[:, -1:, 1::2]),
    ((5,), lambda x: x[[0, 4, -1, 2]]), ((3, 4), lambda x: x[[2, 0]]),
    ((3, 4), lambda x: x[:, [3, 0, 0]]), ((3, 4), lambda x: x[[0, 2], [1, 3]]),
    ((3, 4), lambda x: x[np.array([[0], [2]]), np.array([1, 3, 0])]),
    ((3, 4), lambda x: x[[[0, 1], [2, 2]]]), ((3, 4), lambda x: x[1, [0, 3]]),
    ((2, 3, 4), lambda x: x[0, :, [0, 1]]), ((2, 3, 4), lambda x: x[:, 0, [1, 2]]),
    ((2, 3, 4), lambda x: x[[1, 0], :, [0, 3]]), ((2, 3, 4), lambda x: x[:, [0, 2], None]),
    ((2, 3, 4), lambda x: x[[0, 1], None, [0, 1]]), ((2, 3, 4), lambda x: x[..., [0, 3], None]),
    ((2, 3, 4, 5), lambda x: x[:, [0, 1, 2], None, [0, 1, 2]]),
    ((2, 3, 4, 5), lambda x: x[:, [0, 1, 2], ..., [0, 1, 2]]),
    ((2, 3, 4), lambda x: x[::-1, [2, 0], 1::2]), ((2, 3, 4), lambda x: x[1:, ::2, [-1]]),
    ((4,), lambda x: x[MASK]), ((3, 4), lambda x: x[:, MASK]),
    ((4, 3), lambda x: x[MASK, 1:]), ((2, 4), lambda x: x[np.array([[1, 0, 0, 1], [0, 1, 1, 0]],
                                                                     bool)]),
    ((3, 4), lambda x: x[[]]), ((0, 3), lambda x: x[:, [1, 2]]),
]


@pytest.mark.parametrize("case", range(len(GETITEMS)))
def test_getitem_matches_numpy(case, rng):
    shape, f = GETITEMS[case]
    for dt in (np.float32, np.int64, np.bool_):
        x = rand(rng, shape, dt)
        g = jx.verify(jx.make_graph(f)(jx.ShapeDtypeStruct(shape, dt)))
        (got,) = jx.eval_graph(g, x)
        want = f(x)
        assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
        np.testing.assert_array_equal(got, want)


def test_static_indexing_uses_no_gather():
    g = jx.make_graph(lambda x: x[1, ::-2, None, 1:3])(jx.f32[3, 5, 4])
    assert set(g.op_counts()) <= {"slice", "rev", "squeeze", "expand_dims"}, g.op_counts()
    g = jx.make_graph(lambda x, i: x[i, 2:])(jx.f32[3, 5], jx.i32[()])
    assert "dynamic_slice" in g.op_counts() and "gather" not in g.op_counts()


TRACED = [  # (x shape, index shape, f(x, i))
    ((6,), (), lambda x, i: x[i]), ((4, 5), (), lambda x, i: x[i, 1:]),
    ((4, 5), (), lambda x, i: x[::-1, i]), ((4, 5), (), lambda x, i: x[None, 2, i]),
    ((6,), (3,), lambda x, i: x[i]), ((4, 5), (2, 3), lambda x, i: x[i]),
    ((4, 5), (3,), lambda x, i: x[1:, i]), ((4, 5), (3,), lambda x, i: x[i, i]),
    ((3, 4, 5), (2,), lambda x, i: x[i, :, i]), ((3, 4, 5), (2,), lambda x, i: x[:, i, 3]),
    ((3, 4, 5), (), lambda x, i: x[[0, 2], i]), ((3, 4, 5), (2,), lambda x, i: x[i, ::2, [0, -1]]),
]


@pytest.mark.parametrize("case", range(len(TRACED)))
def test_getitem_traced_indices(case, rng):
    shape, ishape, f = TRACED[case]
    x = rand(rng, shape, np.float32)
    for dt in (np.int32, np.int64):
        g = jx.verify(jx.make_graph(f)(jx.ShapeDtypeStruct(shape, np.float32),
                                       jx.ShapeDtypeStruct(ishape, dt)))
        for _ in range(3):
            i = rng.integers(-min(shape), min(shape), ishape).astype(dt)   # negatives wrap
            (got,) = jx.eval_graph(g, x, i)
            np.testing.assert_array_equal(got, f(x, i))


def test_getitem_out_of_bounds_clamps(rng):
    x = rand(rng, (5, 3), np.float32)
    g = jx.make_graph(lambda x, i: x[i])(jx.f32[5, 3], jx.i32[()])
    np.testing.assert_array_equal(jx.eval_graph(g, x, np.int32(9))[0], x[4])
    np.testing.assert_array_equal(jx.eval_graph(g, x, np.int32(-9))[0], x[0])
    g = jx.make_graph(lambda x, i: x[i])(jx.f32[5, 3], jx.i32[2])
    np.testing.assert_array_equal(jx.eval_graph(g, x, np.array([7, -8], np.int32))[0],
                                  x[[4, 0]])
    g = jx.make_graph(lambda x, i: x.at[i].get(mode="fill", fill_value=-1.0))(
        jx.f32[5, 3], jx.i32[2])
    got = jx.eval_graph(g, x, np.array([7, 1], np.int32))[0]
    np.testing.assert_array_equal(got, np.stack([np.full(3, -1.0), x[1]]))


def test_getitem_errors():
    def trace(f, *specs):
        return jx.make_graph(f)(*(specs or (jx.f32[3, 4],)))
    with pytest.raises(IndexError, match="jx.numpy.where"):
        trace(lambda x: x[x > 0])
    with pytest.raises(IndexError, match="dynamic_slice"):
        trace(lambda x, i: x[i:], jx.f32[3], jx.i32[()])
    with pytest.raises(IndexError, match="too many indices"):
        trace(lambda x: x[0, 0, 0])
    with pytest.raises(IndexError, match="out of bounds"):   # x[3] clamps; size 0 cannot
        trace(lambda x: x[:, 3], jx.f32[3, 0])
    with pytest.raises(IndexError, match="integer or boolean"):
        trace(lambda x: x[np.array([0.5])])
    with pytest.raises(IndexError, match="single ellipsis"):
        trace(lambda x: x[..., ...])
    with pytest.raises(IndexError, match="does not match"):
        trace(lambda x: x[np.array([True, False])])


def test_getitem_eager_is_a_jx_array_with_jax_bounds(rng):
    """Concrete indexing runs the same primitives as traced indexing: a jx array out
    (JAX's jax.Array), and out-of-range reads clamp as in JAX instead of raising."""
    x = rand(rng, (3, 4), np.float32)
    got = jnp.getitem(x, (1, [0, 2]))
    assert type(got) is jx.Array if hasattr(jx, "Array") else isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, x[1, [0, 2]])
    np.testing.assert_array_equal(jnp.getitem(x, (slice(None), [3, 0])), x[:, [3, 0]])
    np.testing.assert_array_equal(jnp.getitem(x, (7, [9, -9])), x[2, [3, 0]])


# ---------------------------------------------------------------- x.at[idx]

UPDATES = [  # (x shape, index, update shape); indices distinct so set has one answer
    ((5,), 2, ()), ((5,), -1, ()), ((5,), slice(1, 4), (3,)), ((5,), slice(None, None, -1), (5,)),
    ((5,), slice(None, None, 2), (3,)), ((5,), slice(4, 0, -3), (2,)), ((5,), [0, 3, -1], (3,)),
    ((3, 4), (1,), (4,)), ((3, 4), (slice(None), 2), (1,)), ((3, 4), (None, 1, slice(1, 3)), (2,)),
    ((3, 4), ([2, 0], [1, 3]), (2,)), ((3, 4), (slice(None), [3, 0]), (3, 2)),
    ((3, 4), (Ellipsis, [1]), ()), ((2, 3, 4), (0, slice(None), [0, 1]), (2, 3)),
    ((2, 3, 4), (slice(None), [0, 2], None, slice(None, None, -2)), (2, 2, 1, 2)),
    ((3, 4), (MASK[:3], slice(None)), (4,)), ((3, 4), (slice(3, 1),), ()),
]
OPS = {"set": lambda y, i, v: y.__setitem__(i, v), "add": np.add.at, "multiply": np.multiply.at,
       "min": np.minimum.at, "max": np.maximum.at}


@pytest.mark.parametrize("case", range(len(UPDATES)))
def test_at_updates_match_numpy(case, rng):
    shape, idx, vshape = UPDATES[case]
    for dt in (np.float32, np.int32, np.bool_):
        x, v = rand(rng, shape, dt), rand(rng, vshape, np.float64)
        for op, ref in OPS.items():
            g = jx.verify(jx.make_graph(lambda x, v: getattr(x.at[idx], op)(v))(
                jx.ShapeDtypeStruct(shape, dt), jx.f64[vshape]))
            (got,) = jx.eval_graph(g, x, v)
            want = x.copy()
            ref(want, idx, np.broadcast_to(v, np.shape(x[idx])).astype(dt))
            assert got.dtype == x.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_at_traced_indices_and_duplicates(rng):
    x = rand(rng, (5, 3), np.float32)
    f = lambda x, i, v: (x.at[i].add(v), x.at[i, 1].set(v[:, 0]), x.at[i].max(v))  # noqa: E731
    g = jx.verify(jx.make_graph(f)(jx.f32[5, 3], jx.i32[4], jx.f32[4, 3]))
    i = np.array([1, -4, 3, 0], np.int32)        # -4 wraps onto 1: added twice
    v = rand(rng, (4, 3), np.float32)
    add, set_, mx = jx.eval_graph(g, x, i, v)
    want = x.copy()
    np.add.at(want, i, v)
    np.testing.assert_allclose(add, want, rtol=1e-6)
    want = x.copy()
    np.maximum.at(want, i, v)
    np.testing.assert_array_equal(mx, want)
    assert set_[1, 1] in (v[0, 0], v[1, 0]) and set_[3, 1] == v[2, 0]
    g = jx.make_graph(lambda x, i: x.at[i].set(7.0))(jx.f32[5, 3], jx.i32[()])
    np.testing.assert_array_equal(jx.eval_graph(g, x, np.int32(-2))[0][3], [7.0] * 3)


def test_at_out_of_bounds_dropped_or_clipped(rng):
    x = rand(rng, (4,), np.float32)
    g = jx.make_graph(lambda x, i: x.at[i].set(9.0))(jx.f32[4], jx.i32[2])
    got = jx.eval_graph(g, x, np.array([6, 1], np.int32))[0]
    np.testing.assert_array_equal(got, [x[0], 9.0, x[2], x[3]])         # 6 is dropped
    g = jx.make_graph(lambda x, i: x.at[i].add(1.0, mode="clip"))(jx.f32[4], jx.i32[()])
    np.testing.assert_allclose(jx.eval_graph(g, x, np.int32(40))[0], x + [0, 0, 0, 1])
    g = jx.make_graph(lambda x, i: x.at[i].add(1.0))(jx.f32[4], jx.i32[()])
    np.testing.assert_array_equal(jx.eval_graph(g, x, np.int32(40))[0], x)


def test_at_static_uses_dynamic_update_slice_and_errors(rng):
    g = jx.make_graph(lambda x: x.at[1, ::-1].add(1.0))(jx.f32[3, 4])
    assert "dynamic_update_slice" in g.op_counts() and "scatter_add" not in g.op_counts()
    with pytest.raises(jx.ShapeError, match="cannot broadcast update"):
        jx.make_graph(lambda x: x.at[0].set(np.ones(3)))(jx.f32[3, 4])
    x = np.arange(4.0, dtype=np.float32)
    got = jnp.IndexUpdateHelper(x)[[0, 2]].set(np.array([5, 6]))      # eager: a jx array
    assert type(got) is jx.Array if hasattr(jx, "Array") else isinstance(got, np.ndarray)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [5, 1, 6, 3])


# ---------------------------------------------------------------- take, take_along_axis

def test_take_matches_numpy(rng):
    a = rand(rng, (4, 5, 3), np.float32)
    for axis in (None, 0, 1, -1):
        n = a.size if axis is None else a.shape[axis]
        idx = rng.integers(-n, n, (2, 3))
        want = np.take(a, idx, axis=axis)
        got = jnp.take(a, idx, axis=axis)                     # eager: jx arrays
        assert type(got) is jx.Array if hasattr(jx, "Array") else isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, want)
        g = jx.verify(jx.make_graph(lambda a, i: jnp.take(a, i, axis=axis))(
            jx.f32[4, 5, 3], jx.i64[2, 3]))
        np.testing.assert_array_equal(jx.eval_graph(g, a, idx)[0], want)
    big = np.array([-9, 7, 1])
    np.testing.assert_array_equal(jnp.take(a[0, :, 0], big, mode="clip"),
                                  np.take(a[0, :, 0], big, mode="clip"))
    np.testing.assert_array_equal(jnp.take(a[0, :, 0], big, mode="wrap"),
                                  np.take(a[0, :, 0], big, mode="wrap"))
    got = jnp.take(a[0, :, 0], big)
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == a[0, 1, 0]
    assert jnp.take(np.arange(5), 2) == 2
    with pytest.raises(IndexError):
        jnp.take(a, [100], axis=0, mode="raise")


def test_take_along_axis_matches_numpy(rng):
    a = rand(rng, (4, 5, 3), np.float32)
    for axis, ishape in [(0, (2, 5, 3)), (1, (4, 7, 1)), (-1, (1, 5, 2)), (None, (9,))]:
        n = a.size if axis is None else a.shape[axis]
        idx = rng.integers(-n, n, ishape).astype(np.int32)
        want = np.take_along_axis(a, idx, axis=axis)
        np.testing.assert_array_equal(jnp.take_along_axis(a, idx, axis), want)
        spec = jx.ShapeDtypeStruct(ishape, np.int32)
        g = jx.verify(jx.make_graph(lambda a, i: jnp.take_along_axis(a, i, axis))(
            jx.f32[4, 5, 3], spec))
        np.testing.assert_array_equal(jx.eval_graph(g, a, idx)[0], want)
    with pytest.raises(jx.ShapeError, match="same number of dims"):
        jnp.take_along_axis(a, np.zeros((2, 2), np.int32), 0)


# ---------------------------------------------------------------- jx.lax

def test_lax_dynamic_slices(rng):
    x = rand(rng, (5, 4), np.float32)

    def f(x, i, j):
        return (lax.dynamic_slice(x, (i, j), (2, 3)),
                lax.dynamic_slice_in_dim(x, i, 3, axis=0),
                lax.dynamic_index_in_dim(x, j, axis=1, keepdims=False),
                lax.dynamic_update_slice(x, jnp.ones((2, 2), np.float32), (i, -1)),
                lax.dynamic_update_index_in_dim(x, jnp.zeros(4, np.float32), i, 0))
    g = jx.verify(jx.make_graph(f)(jx.f32[5, 4], jx.i32[()], jx.i64[()]))
    for i, j in [(1, 2), (-1, 3), (9, -7)]:
        outs = jx.eval_graph(g, x, np.int32(i), np.int64(j))
        ci = lambda v, n, k: min(max(v + n if v < 0 else v, 0), n - k)  # noqa: E731
        a, b = ci(i, 5, 2), ci(j, 4, 3)
        np.testing.assert_array_equal(outs[0], x[a:a + 2, b:b + 3])
        a = ci(i, 5, 3)
        np.testing.assert_array_equal(outs[1], x[a:a + 3])
        np.testing.assert_array_equal(outs[2], x[:, ci(j, 4, 1)])
        want = x.copy()
        a = ci(i, 5, 2)
        want[a:a + 2, 2:4] = 1
        np.testing.assert_array_equal(outs[3], want)
        want = x.copy()
        want[ci(i, 5, 1)] = 0
        np.testing.assert_array_equal(outs[4], want)


def test_lax_gather_scatter(rng):
    x = rand(rng, (6, 4), np.float32)
    idx = np.array([[2], [7], [0]], np.int32)
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
    got = lax.gather(x, idx, dn, (1, 4))       # default: promise_in_bounds (JAX 0.10), clamps
    np.testing.assert_array_equal(got, x[[2, 5, 0]])
    got = lax.gather(x, idx, dn, (1, 4), mode="fill")
    assert np.isnan(got[1]).all()
    np.testing.assert_array_equal(got[[0, 2]], x[[2, 0]])
    np.testing.assert_array_equal(lax.gather(x, idx, dn, (1, 4), mode="clip"), x[[2, 5, 0]])
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    u = rand(rng, (3, 4), np.float32)
    want = x.copy()
    want[[2, 0]] += u[[0, 2]]
    np.testing.assert_allclose(lax.scatter_add(x, idx, u, sdn), want)
    want = x.copy()
    want[[2, 0]] = u[[0, 2]]
    np.testing.assert_array_equal(lax.scatter(x, idx, u, sdn), want)
    np.testing.assert_array_equal(lax.scatter_max(x, idx, u, sdn, mode="clip")[5],
                                  np.maximum(x[5], u[1]))
