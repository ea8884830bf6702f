"""jax.lax's convolutions in jx: every option of conv_general_dilated, the helpers,
jnp.convolve/correlate, eager and compiled, against a direct-loop NumPy reference
written here (independent of the primitive's reference) and against JAX."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx import lax

COVERED = {"conv_general_dilated"}
pytestmark = pytest.mark.x64           # float64 cases stay float64, as in JAX's own tests

try:
    import jax
    import jax.numpy as jjnp
except ImportError:            # JAX is only a test oracle
    jax = None


def loop_conv(lhs, rhs, strides, padding, lhs_dil, rhs_dil, specs, groups=1, bgroups=1):
    """Direct loops over every output element and window position (small sizes only).
    specs: (lhs, rhs, out) strings as lax's, e.g. ("NHWC", "HWIO", "NHWC")."""
    ls, rs, os_ = specs
    sp = [c for c in rs if c not in "OI"]                  # spatial chars, rhs order
    N, C = lhs.shape[ls.index("N")], lhs.shape[ls.index("C")]
    O, I = rhs.shape[rs.index("O")], rhs.shape[rs.index("I")]
    S = [lhs.shape[ls.index(c)] for c in sp]
    K = [rhs.shape[rs.index(c)] for c in sp]
    out_sp = []
    for s, k, st, (lo, hi), ld, rd in zip(S, K, strides, padding, lhs_dil, rhs_dil):
        padded = (s - 1) * ld + 1 + lo + hi if s else lo + hi
        win = (k - 1) * rd + 1 if k else 0
        out_sp.append(max(0, (padded - win) // st + 1) if padded >= win else 0)
    out_shape = {"N": N // bgroups, "C": O, **dict(zip(sp, out_sp))}
    out = np.zeros([out_shape[c] for c in os_], np.float64)
    og, ob = O // groups, O // bgroups
    for n, o in itertools.product(range(N // bgroups), range(O)):
        g, b = o // og, o // ob
        for pos in itertools.product(*map(range, out_sp)):
            acc = 0.0
            for i in range(I):
                c = g * I + i
                for k in itertools.product(*map(range, K)):
                    idx = {"N": b * (N // bgroups) + n, "C": c}
                    ok = True
                    for d, ch in enumerate(sp):
                        q = pos[d] * strides[d] + k[d] * rhs_dil[d] - padding[d][0]
                        if q < 0 or q % lhs_dil[d] or q // lhs_dil[d] >= S[d]:
                            ok = False
                            break
                        idx[ch] = q // lhs_dil[d]
                    if not ok:
                        continue
                    widx = {"O": o, "I": i, **dict(zip(sp, k))}
                    acc += float(lhs[tuple(idx[ch] for ch in ls)]) * \
                        float(rhs[tuple(widx[ch] for ch in rs)])
            oidx = {"N": n, "C": o, **dict(zip(sp, pos))}
            out[tuple(oidx[ch] for ch in os_)] = acc
    return out


def _pads(padding, lhs_shape, rhs_shape, strides, rhs_dil, specs):
    if not isinstance(padding, str):
        return padding
    sp = [c for c in specs[1] if c not in "OI"]
    ins = [lhs_shape[specs[0].index(c)] for c in sp]
    win = [(rhs_shape[specs[1].index(c)] - 1) * r + 1 for c, r in zip(sp, rhs_dil)]
    return lax.padtype_to_pads(ins, win, strides, padding)


NHWC = ("NHWC", "HWIO", "NHWC")
NCHW = ("NCHW", "OIHW", "NCHW")
# (lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, specs, G, B)
CASES = [
    ((2, 7, 6, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1), (1, 1), NHWC, 1, 1),
    ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), "VALID", (1, 1), (1, 1), NCHW, 1, 1),
    ((1, 9, 8, 2), (2, 3, 2, 5), (2, 3), "SAME_LOWER", (1, 1), (1, 1), NHWC, 1, 1),
    ((2, 8, 9, 2), (2, 2, 2, 3), (3, 3), "VALID", (1, 1), (1, 1), NHWC, 1, 1),  # stride > k
    ((1, 6, 7, 2), (3, 2, 2, 2), (1, 2), ((2, 1), (0, 3)), (1, 1), (1, 1), NHWC, 1, 1),
    ((1, 6, 7, 2), (3, 3, 2, 2), (1, 1), ((0, -1), (-2, 1)), (1, 1), (1, 1), NHWC, 1, 1),
    ((2, 5, 6, 2), (3, 3, 2, 3), (1, 1), ((1, 1), (2, 0)), (2, 3), (1, 1), NHWC, 1, 1),
    ((1, 9, 9, 2), (3, 2, 2, 2), (2, 1), ((1, 1), (1, 1)), (1, 1), (2, 3), NHWC, 1, 1),
    ((2, 6, 6, 6), (3, 3, 1, 6), (1, 1), "SAME", (1, 1), (1, 1), NHWC, 6, 1),    # depthwise
    ((2, 6, 6, 4), (3, 3, 1, 8), (2, 2), "SAME", (1, 1), (1, 1), NHWC, 4, 1),    # x2 multiplier
    ((2, 6, 7, 6), (2, 3, 3, 4), (1, 1), "VALID", (1, 1), (1, 1), NHWC, 2, 1),   # 2 groups
    ((6, 5, 5, 2), (3, 3, 2, 6), (1, 1), "VALID", (1, 1), (1, 1), NHWC, 1, 3),   # batch groups
    ((4, 2, 5, 6), (4, 2, 2, 3), (1, 1), "SAME", (1, 1), (1, 1), ("CNHW", "IOHW", "HWNC"), 1, 2),
    ((2, 11, 3), (3, 3, 4), (2,), "SAME", (1,), (2,), ("NWC", "WIO", "NWC"), 1, 1),
    ((2, 3, 13), (4, 3, 5), (1,), ((4, 4),), (1,), (1,), ("NCW", "OIW", "NCW"), 1, 1),
    ((1, 4, 5, 6, 2), (2, 3, 2, 2, 3), (1, 2, 1), "SAME", (1, 1, 1), (1, 1, 1),
     ("NDHWC", "DHWIO", "NDHWC"), 1, 1),
    ((2, 5, 5, 3), (5, 5, 3, 2), (1, 1), "VALID", (1, 1), (1, 1), NHWC, 1, 1),  # 1x1 output
    ((2, 4, 4, 3), (4, 4, 3, 2), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), NHWC, 1, 1),
    ((2, 3, 3, 2), (3, 3, 2, 2), (4, 4), "VALID", (1, 1), (1, 1), NHWC, 1, 1),
]


def _ids():
    return [f"{c[6][0]}-s{c[2]}-{c[3] if isinstance(c[3], str) else 'pad'}-ld{c[4]}-"
            f"rd{c[5]}-G{c[7]}B{c[8]}" for c in CASES]


def _run(case, dtype, compiled, rng):
    xs, ws, strides, padding, ld, rd, specs, G, B = case
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(-4, 5, xs).astype(dtype)
        w = rng.integers(-4, 5, ws).astype(dtype)
    else:
        x = rng.standard_normal(xs).astype(dtype)
        w = rng.standard_normal(ws).astype(dtype)

    def f(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, ld, rd, specs,
                                        feature_group_count=G, batch_group_count=B)
    got = np.asarray((jx.jit(f) if compiled else f)(x, w))
    ref = loop_conv(x, w, strides, _pads(padding, xs, ws, strides, rd, specs), ld, rd, specs,
                    G, B)
    return got, ref, x, w, f


@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_compiled_matches_loops(case):
    rng = np.random.default_rng(abs(hash(str(case))) % 2**32)
    for dtype in (np.float32, np.float64):
        got, ref, *_ = _run(case, dtype, True, rng)
        assert got.dtype == dtype and got.shape == ref.shape
        tol = 1e-4 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * max(1, np.abs(ref).max()))


@pytest.mark.parametrize("case", CASES[::3], ids=_ids()[::3])
def test_eager_and_integer_match_loops(case):
    rng = np.random.default_rng(7)
    got, ref, *_ = _run(case, np.float32, False, rng)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * max(1, np.abs(ref).max()))
    got, ref, *_ = _run(case, np.int32, True, rng)          # integer: the product lowering
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ref.astype(np.int32))


@pytest.mark.skipif(jax is None, reason="JAX is not installed (test oracle)")
@pytest.mark.parametrize("case", CASES[1::4], ids=_ids()[1::4])
def test_matches_jax(case):
    rng = np.random.default_rng(11)
    got, _, x, w, _ = _run(case, np.float32, True, rng)
    xs, ws, strides, padding, ld, rd, specs, G, B = case
    if not isinstance(padding, str) and min(min(p) for p in padding) < 0:
        # XLA's CPU convolution mis-crops some negative pads (lo -2, hi 1 loses a
        # column): the defined semantics, crop and pad then convolve, is the oracle
        config = [(0, 0, 0)] * x.ndim
        for ch, (lo, hi) in zip([c for c in specs[1] if c not in "OI"], padding):
            config[specs[0].index(ch)] = (lo, hi, 0)
        x, padding = jax.lax.pad(x, np.float32(0), config), "VALID"
    want = jax.lax.conv_general_dilated(x, w, strides, padding, ld, rd, specs,
                                        feature_group_count=G, batch_group_count=B)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-4, atol=1e-4)


def test_preferred_element_type_and_half():
    rng = np.random.default_rng(2)
    x = rng.integers(-100, 100, (1, 5, 5, 3)).astype(np.int8)
    w = rng.integers(-100, 100, (2, 2, 3, 2)).astype(np.int8)
    for pet in (np.int32, np.float32):
        f = jx.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                                         dimension_numbers=NHWC,
                                                         preferred_element_type=pet))
        got = np.asarray(f(x, w))
        ref = loop_conv(x.astype(np.int64), w.astype(np.int64), (1, 1), [(0, 0)] * 2,
                        (1, 1), (1, 1), NHWC)
        assert got.dtype == pet
        np.testing.assert_array_equal(got, ref.astype(pet))
    xh, wh = x.astype(np.float16) / 64, w.astype(np.float16) / 64
    got = np.asarray(jx.jit(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=NHWC))(xh, wh))
    assert got.dtype == np.float16
    ref = loop_conv(xh, wh, (1, 1), [(0, 1), (0, 1)], (1, 1), (1, 1), NHWC)
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=2e-2, atol=2e-2)


def test_fused_bias_relu_layer():
    """A conv layer as user code writes it: bias and ReLU after the product."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 10, 9, 8)).astype(np.float32)
    w = rng.standard_normal((3, 3, 8, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)

    @jx.jit
    def layer(x, w, b):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC)
        return jx.nn.relu(y + b)
    ref = np.maximum(loop_conv(x, w, (1, 1), [(1, 1), (1, 1)], (1, 1), (1, 1), NHWC) + b, 0)
    np.testing.assert_allclose(np.asarray(layer(x, w, b)), ref, rtol=1e-4, atol=1e-4)


def test_conv_helpers_match_jax():
    if jax is None:
        pytest.skip("JAX is not installed (test oracle)")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(lax.conv(x, w, (2, 1), "SAME")),
                               np.asarray(jax.lax.conv(x, w, (2, 1), "SAME")), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(
        np.asarray(lax.conv_with_general_padding(x, w, (1, 2), ((1, 0), (2, 1)), (2, 1), (1, 2))),
        np.asarray(jax.lax.conv_with_general_padding(x, w, (1, 2), ((1, 0), (2, 1)), (2, 1),
                                                     (1, 2))), rtol=1e-4, atol=1e-4)
    xh = np.transpose(x, (0, 2, 3, 1))
    for transpose_kernel in (False, True):
        wt = rng.standard_normal((3, 3, 3, 5) if not transpose_kernel else (3, 3, 5, 3))
        wt = wt.astype(np.float32)
        for padding in ("SAME", "VALID", ((1, 2), (0, 1))):
            want = jax.lax.conv_transpose(xh, wt, (2, 2), padding,
                                          transpose_kernel=transpose_kernel)
            got = jx.jit(lambda a, b: lax.conv_transpose(
                a, b, (2, 2), padding, transpose_kernel=transpose_kernel))(xh, wt)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
    for dn in (NHWC, NCHW, ("NCHW", "HWIO", "NHWC")):
        ls = (2, 9, 8, 6) if dn[0] == "NHWC" else (2, 6, 9, 8)
        rs = (3, 3, 6, 4) if dn[1] == "HWIO" else (4, 6, 3, 3)
        for pad in ("SAME", "VALID", ((1, 0), (2, 2))):
            assert lax.conv_general_shape_tuple(ls, rs, (2, 1), pad, dn) == tuple(
                map(int, jax.lax.conv_general_shape_tuple(ls, rs, (2, 1), pad, dn)))
        assert lax.conv_transpose_shape_tuple(ls, rs, (2, 2), "SAME", dn) == tuple(
            map(int, jax.lax.conv_transpose_shape_tuple(ls, rs, (2, 2), "SAME", dn)))
        assert tuple(lax.conv_dimension_numbers(ls, rs, dn)) == tuple(
            jax.lax.conv_dimension_numbers(ls, rs, dn))
    for pad in ("SAME", "SAME_LOWER", "VALID"):
        assert [tuple(p) for p in lax.padtype_to_pads((7, 8), (3, 4), (2, 3), pad)] == \
            [tuple(p) for p in jax.lax.padtype_to_pads((7, 8), (3, 4), (2, 3), pad)]
    got = lax.conv_general_dilated_patches(x, (2, 3), (1, 2), "SAME")
    want = jax.lax.conv_general_dilated_patches(x, (2, 3), (1, 2), "SAME")
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    for dn, xl in ((None, x), (NHWC, np.transpose(x, (0, 2, 3, 1)))):
        sp = (9, 4)
        wl = rng.standard_normal((5, 18) + sp if dn is None else sp + (18, 5)).astype(np.float32)
        got = jx.jit(lambda a, b: lax.conv_general_dilated_local(
            a, b, (1, 2), "SAME", (2, 3), dimension_numbers=dn))(xl, wl)
        want = jax.lax.conv_general_dilated_local(xl, wl, (1, 2), "SAME", (2, 3),
                                                  dimension_numbers=dn)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_correlate(mode):
    rng = np.random.default_rng(4)
    for na, nv in ((50, 7), (6, 11), (1, 1)):
        a, v = rng.standard_normal(na), rng.standard_normal(nv)
        for name in ("convolve", "correlate"):
            got = jx.jit(lambda a, v: getattr(jnp, name)(a, v, mode=mode))(a, v)
            want = getattr(np, name)(a, v, mode=mode)
            if name == "correlate" and na < nv:      # NumPy and JAX differ here: JAX's order
                if jax is None:
                    continue
                with jax.enable_x64(True):
                    want = np.asarray(getattr(jjnp, name)(a, v, mode=mode))
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("bad, match", [
    (dict(x=(1, 4, 4, 3), w=(3, 3, 2, 4)), "feature"),
    (dict(x=(1, 4, 4, 4), w=(3, 3, 2, 3), G=2), "multiple of feature_group_count"),
    (dict(x=(3, 4, 4, 2), w=(3, 3, 2, 4), B=2), "batch_group_count must divide"),
    (dict(x=(2, 4, 4, 4), w=(3, 3, 2, 4), G=2, B=2), "At most one"),
    (dict(x=(1, 4, 4, 3), w=(3, 3, 3, 4), strides=(1,)), "window_strides"),
    (dict(x=(1, 4, 4, 3), w=(3, 3, 3, 4), strides=(0, 1)), "positive"),
    (dict(x=(1, 4, 4, 3), w=(3, 3, 3, 4), padding=((-9, 0), (0, 0))), "Negative padding"),
])
def test_bad_arguments(bad, match):
    x = np.zeros(bad["x"], np.float32)
    w = np.zeros(bad["w"], np.float32)
    with pytest.raises((ValueError, TypeError, jx.errors.JxError), match=match):
        jx.jit(lambda x, w: lax.conv_general_dilated(
            x, w, bad.get("strides", (1, 1)), bad.get("padding", "VALID"),
            dimension_numbers=NHWC, feature_group_count=bad.get("G", 1),
            batch_group_count=bad.get("B", 1)))(x, w)


def test_bad_dimension_numbers_and_dtypes():
    x, w = np.zeros((1, 4, 4, 3), np.float32), np.zeros((3, 3, 3, 4), np.float32)
    with pytest.raises(TypeError, match="exactly once"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWN", "HWIO", "NHWC"))
    with pytest.raises(TypeError, match="same set of spatial"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HXIO", "NHWC"))
    with pytest.raises(RuntimeError, match="Unrecognized padding"):
        lax.conv_general_dilated(x, w, (1, 1), "SAMEISH", dimension_numbers=NHWC)
    with pytest.raises(ValueError, match="transposed convolution"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", lhs_dilation=(2, 2),
                                 dimension_numbers=NHWC)
    with pytest.raises(jx.errors.JxError, match="share one dtype"):
        lax.conv_general_dilated(x, w.astype(np.int32), (1, 1), "SAME", dimension_numbers=NHWC)
    with pytest.raises((ValueError, TypeError), match="1-d"):
        jnp.convolve(np.zeros((2, 2)), np.zeros(2))


def test_cuda_target_refuses_convolutions(tmp_path):
    """No GPU needed to see it: the CUDA target names the convolution and its line."""
    from test_compile import jx_cli
    sample = __import__("pathlib").Path(__file__).resolve().parents[1] / "samples" / "cnn.py"
    r = jx_cli("compile", sample, "--target", "cuda", "-o", tmp_path / "gpu")
    assert r.returncode != 0
    assert "CUDA target has no kernel for conv_general_dilated" in r.stderr, r.stderr
    assert "cnn.py:" in r.stderr and "--target cpu" in r.stderr
    assert not (tmp_path / "gpu").exists()
