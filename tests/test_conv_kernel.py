"""The CPU kernel of canonical convolutions (codegen/cpu/conv.py: an implicit
im2col GEMM on the GEMM's micro-kernel) against the primitive's NumPy reference
and an independent direct-loop one: float32 and float64, 1, 2 and 3 spatial
dims, strides (also past the kernel), rhs dilation, feature groups, tiles and
column panels cut short, K blocks splitting a tap, merged rows, empty outputs
and sums, the fused bias + relu epilogue, threads on and off. Canonical convs
are written directly (VALID, channels-last); no timing here."""
from __future__ import annotations

import itertools
import types

import numpy as np
import pytest

import jx
import jx.lax as lax
import jx.numpy as jnp
from jx.errors import JxError
from jx.ir import ShapedArray
from jx.prims.convolution import _conv, channels_last_numbers

pytestmark = pytest.mark.x64

pytest.importorskip("llvmlite")

from jx.codegen.cpu import conv, epilogue, parallel, tuning  # noqa: E402
from jx.codegen.cpu.jit import CompiledFunction  # noqa: E402

COVERED = {"conv_general_dilated"}
FLOATS = [np.float32, np.float64]
NUMBERS = {1: ("NWC", "WIO", "NWC"), 2: ("NHWC", "HWIO", "NHWC"),
           3: ("NDHWC", "DHWIO", "NDHWC")}


@pytest.fixture(autouse=True)
def _gemm_form(monkeypatch):
    """This module tests the GEMM form: conv_direct (small channel counts) is off."""
    monkeypatch.setattr(conv, "USE_DIRECT", False)


def _f(strides, rhs_dilation, groups, pads=None):
    d = len(strides)
    return lambda x, w: lax.conv_general_dilated(
        x, w, strides, pads or "VALID", rhs_dilation=rhs_dilation,
        dimension_numbers=NUMBERS[d], feature_group_count=groups)


def _loops(x, w, strides, rd, groups, pads=None):
    """Direct loops: every output pixel and tap, each group's channels a product."""
    if pads:
        x = np.pad(x, [(0, 0)] + list(pads) + [(0, 0)])
    n, *s, c = x.shape
    *k, i, o = w.shape
    og = o // groups
    out_sp = [max(0, (s[j] - (k[j] - 1) * rd[j] - 1) // strides[j] + 1) for j in range(len(s))]
    out = np.zeros([n] + out_sp + [o], np.float64)
    for pix in itertools.product(*map(range, out_sp)):
        for tap in itertools.product(*map(range, k)):
            at = tuple(p * st + t * r for p, st, t, r in zip(pix, strides, tap, rd))
            patch = x[(slice(None),) + at]                       # (n, c)
            for g in range(groups):
                out[(slice(None),) + pix + (slice(g * og, (g + 1) * og),)] += \
                    patch[:, g * i:(g + 1) * i] @ w[tap][:, g * og:(g + 1) * og]
    return out


def _check(got, x, w, strides, rd, groups, pads=None):
    """got against both references in float64, within the rounding bound of any
    summation order: |err| <= 2 K eps (|x| |w|)."""
    d = len(strides)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    want = _loops(x64, w64, strides, rd, groups, pads)
    prim = _conv(x64, w64, strides, list(pads or [(0, 0)] * d), (1,) * d, rd,
                 channels_last_numbers(d), groups, 1)
    np.testing.assert_allclose(prim, want, rtol=1e-12, atol=1e-12)
    bound = _loops(np.abs(x64), np.abs(w64), strides, rd, groups, pads)
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == x.dtype
    k = max(1, w[..., 0].size)                      # taps x I
    eps = np.finfo(x.dtype).eps
    err = np.abs(got - want)
    assert np.all(err <= 2 * k * eps * bound + np.finfo(x.dtype).tiny), err.max()


def _rand(rng, shape, dt):
    return rng.standard_normal(shape).astype(dt)


def _compiled(f, args):
    """A CompiledFunction of f (built now, so monkeypatched settings apply)."""
    return CompiledFunction(jx.jit(f).lower(*args), "conv_test")


def _run(rng, dt, n, space, c, kernel, o, strides, rd=None, groups=1, pads=None):
    rd = rd or (1,) * len(space)
    x = _rand(rng, (n,) + space + (c,), dt)
    w = _rand(rng, kernel + (c // groups, o), dt)
    f = _f(strides, rd, groups, pads)
    got = jx.jit(f)(x, w) if pads is None else _compiled(f, (x, w))(x, w)[0]
    _check(got, x, w, strides, rd, groups, pads)


# (n, space, c, kernel, o, strides, rhs dilation, groups)
CASES = [
    (2, (8, 8), 4, (3, 3), 6, (1, 1), None, 1),
    (2, (10, 13), 8, (3, 2), 40, (2, 1), (1, 2), 2),            # groups, dilation
    (3, (17,), 5, (4,), 7, (3,), (2,), 1),                      # 1-D
    (1, (5, 6, 7), 4, (2, 2, 3), 8, (1, 2, 1), None, 4),        # 3-D, 4 groups
    (2, (11, 9), 3, (2, 2), 5, (3, 4), None, 1),                # strides past the kernel
    (1, (7, 30), 16, (1, 1), 33, (1, 1), None, 1),              # 1x1: one merged row
    (2, (9, 9), 6, (1, 1), 4, (2, 2), None, 2),                 # 1x1 strided, groups
    (1, (3, 3), 2, (3, 3), 3, (1, 1), None, 1),                 # a single pixel
    (2, (6, 29), 12, (2, 3), 70, (1, 1), (2, 1), 1),            # Og past two NR panels
    (1, (4, 40), 8, (1, 5), 16, (1, 1), (1, 3), 4),             # wide dilation, groups
    (2, (7, 9), 16, (2, 2), 24, (1, 1), None, 8),               # many small groups
    (3, (12, 12), 2, (10, 10), 4, (1, 1), None, 1),             # weight-gradient-like
]


@pytest.mark.parametrize("dt", FLOATS)
def test_canonical_convs(rng, dt):
    for n, space, c, kernel, o, strides, rd, groups in CASES:
        _run(rng, dt, n, space, c, kernel, o, strides, rd, groups)


# (n, space, c, kernel, o, strides, rhs dilation, groups, padding)
PADDED = [
    (2, (9, 11), 8, (3, 3), 20, (1, 1), None, 1, ((1, 1), (1, 1))),     # SAME
    (1, (7, 6), 12, (3, 2), 9, (2, 1), (1, 2), 3, ((0, 2), (3, 1))),    # groups, dilation
    (3, (13,), 5, (4,), 7, (3,), (2,), 1, ((5, 0),)),                   # a whole tap in zeros
    (1, (4, 5, 6), 4, (2, 2, 3), 8, (1, 2, 1), None, 2, ((1, 0), (2, 3), (0, 0))),
    (2, (2, 3), 3, (3, 3), 4, (1, 1), None, 1, ((2, 2), (0, 1))),       # rows all padding
    (2, (5, 5), 6, (1, 1), 5, (1, 1), None, 1, ((1, 1), (0, 0))),       # 1x1 (no merged rows)
]


@pytest.mark.parametrize("dt", FLOATS)
def test_padding_the_kernel_supplies(rng, monkeypatch, dt):
    """Canonical convs may carry padding >= 0 (expand_conv.KERNEL_PADS): the rows
    are staged with their zeros, a tap's row in the padding all zeros; threaded
    with small blocks too (slabs, chunks, K blocks splitting taps)."""
    from jx.passes import expand_conv
    monkeypatch.setattr(expand_conv, "KERNEL_PADS", True)
    for case in PADDED:
        _run(rng, dt, *case)
    monkeypatch.setattr(conv, "OVERRIDE", {"kc": 8, "nc": 32, "mc": 48})
    monkeypatch.setattr(conv, "SLAB", 2)
    monkeypatch.setattr(conv, "CHUNK", 4)
    monkeypatch.setitem(tuning.OVERRIDE, "gemm_min_work", 1)
    for case in PADDED[:3]:
        _run(rng, dt, *case)


SMALL = {"kc": 8, "nc": 32, "mc": 48}


@pytest.mark.parametrize("threads", [True, False])
@pytest.mark.parametrize("pack_a", [True, None])
def test_every_block_boundary(rng, monkeypatch, threads, pack_a):
    """Small blocks: K blocks that split a tap (I > KC) and a row of taps, column
    blocks, slabs of several units and rows cut into chunks; every A tile packed
    or read in place (short tiles at the end of lhs packed); pool on (packing the
    weights too) and off."""
    monkeypatch.setattr(conv, "OVERRIDE", dict(SMALL))
    monkeypatch.setattr(conv, "PACK_A", pack_a)
    monkeypatch.setattr(conv, "PACK_THREADS_FROM", 0)       # weights packed by the pool
    monkeypatch.setitem(tuning.OVERRIDE, "gemm_min_work", 1)
    if not threads:
        monkeypatch.setattr(parallel, "available", lambda: False)
    cases = [(np.float32, (2, (7, 19), 20, (2, 3), 37, (1, 2), None, 1), None, None),
             (np.float64, (1, (9, 23), 40, (3, 2), 10, (2, 1), (1, 2), 2), 3, 5),   # I 20: taps split
             (np.float32, (3, (26,), 9, (3,), 70, (1,), None, 1), 2, None)]
    for dt, (n, space, c, kernel, o, strides, rd, groups), slab, chunk in cases:
        monkeypatch.setattr(conv, "SLAB", slab)
        monkeypatch.setattr(conv, "CHUNK", chunk)
        rd = rd or (1,) * len(space)
        x, w = _rand(rng, (n,) + space + (c,), dt), _rand(rng, kernel + (c // groups, o), dt)
        cf = _compiled(_f(strides, rd, groups), (x, w))
        assert ("jx_parallel_for" in cf.ir_text) == threads
        _check(cf(x, w)[0], x, w, strides, rd, groups)


def test_thread_counts_and_repeated_calls(rng, monkeypatch):
    """One thread, and more threads than cores (more tasks than units: a thread
    past the scratch slots allocates its own); the same function called again."""
    if not parallel.available():
        pytest.skip("no C compiler: no thread pool")
    monkeypatch.setitem(tuning.OVERRIDE, "gemm_min_work", 1)
    x, w = _rand(rng, (1, 5, 40, 6), np.float32), _rand(rng, (2, 3, 6, 20), np.float32)
    cf = _compiled(_f((1, 1), (1, 1), 1), (x, w))
    try:
        for n in (1, 3, 7, 2):
            parallel.set_num_threads(n)
            _check(cf(x, w)[0], x, w, (1, 1), (1, 1), 1)
    finally:
        import os
        parallel.set_num_threads(int(os.environ.get("JX_NUM_THREADS", os.cpu_count() or 1)))


def test_plans_of_the_shapes_that_matter(monkeypatch):
    """The blocking choices: a row of taps is one K segment when it is contiguous
    (one group, no dilation along the last dim), else a tap; a 1x1 stride-1 conv
    is one long row; weights past half of L2 get slabs and column blocks; few
    rows are cut into chunks."""
    def kernel(x, w, strides=(1, 1), rd=(1, 1), groups=1):
        return types.SimpleNamespace(root=jx.jit(_f(strides, rd, groups)).lower(
            np.zeros(x, np.float32), np.zeros(w, np.float32)).kernels[0].root)
    p = conv.plan(kernel((32, 58, 58, 64), (3, 3, 64, 64)))
    assert (p.seg, p.nkb, p.wo, p.nrows, p.slab, p.nc) == (192, 3, 56, 32 * 56, 1, 64)
    assert p.blk.mr in (7, 8, 14)                     # no short tile at the end of a row
    p = conv.plan(kernel((2, 12, 12, 8), (3, 3, 4, 8), groups=2))
    assert (p.seg, p.nkb) == (4, 9)
    p = conv.plan(kernel((2, 12, 12, 8), (3, 3, 8, 8), rd=(1, 2)))
    assert (p.seg, p.nkb) == (8, 9)
    p = conv.plan(kernel((4, 14, 14, 256), (1, 1, 256, 1024)))
    assert (p.rows, p.wo) == ((), 4 * 14 * 14)
    assert p.units >= min(conv.MIN_UNITS, -(-p.wo // p.blk.mr)) and p.chunk % p.blk.mr == 0
    p = conv.plan(kernel((8, 9, 9, 512), (3, 3, 512, 512)))
    # (a row of 3 taps, 1536 long, in as few K blocks as the host's KC allows)
    assert p.slab > 1 and p.nc <= p.blk.nc and p.seg == 1536
    assert p.nkb == 3 * -(-1536 // p.blk.kc)


def test_empty_outputs_and_sums(rng):
    """No pixels (the window does not fit, or no batch): nothing written; no
    input channels or no taps: zeros."""
    for dt in FLOATS:
        for n, space, c, kernel, o in [(2, (3, 2), 4, (3, 3), 5), (0, (6, 6), 3, (2, 2), 4),
                                       (2, (5, 4), 0, (2, 2), 3), (2, (5,), 3, (0,), 4)]:
            x, w = _rand(rng, (n,) + space + (c,), dt), _rand(rng, kernel + (c, o), dt)
            f = _f((1,) * len(space), (1,) * len(space), 1)
            got = np.asarray(jx.jit(f)(x, w))
            want = _conv(x, w, (1,) * len(space), [(0, 0)] * len(space), (1,) * len(space),
                         (1,) * len(space), channels_last_numbers(len(space)), 1, 1)
            assert got.shape == want.shape and got.dtype == dt
            np.testing.assert_array_equal(got, want)


def _epilogue_kernels(f, args):
    prog = epilogue.attach(jx.jit(f).lower(*args))
    return [k for k in prog.kernels if k.epilogue is not None]


@pytest.mark.parametrize("threads", [True, False])
def test_bias_and_relu_run_as_the_conv_epilogue(rng, monkeypatch, threads):
    """conv + bias + relu is one kernel: the tasks apply the consumer to each
    finished slab of the output in place (slabs of several units, chunks)."""
    monkeypatch.setitem(tuning.OVERRIDE, "gemm_min_work", 1 if threads else 1 << 40)
    monkeypatch.setattr(conv, "SLAB", 3)
    monkeypatch.setattr(conv, "CHUNK", 4)
    for dt in FLOATS:
        x, w, bias = _rand(rng, (2, 9, 11, 8), dt), _rand(rng, (3, 3, 8, 20), dt), \
            _rand(rng, (20,), dt)

        def f(x, w, bias):
            return jnp.maximum(_f((1, 1), (1, 1), 1)(x, w) + bias, 0.0)
        (k,) = _epilogue_kernels(f, (x, w, bias))
        assert k.root.prim.name == "conv_general_dilated"
        cf = _compiled(f, (x, w, bias))
        assert ".epilogue" in cf.ir_text
        want = np.maximum(_loops(x.astype(np.float64), w.astype(np.float64), (1, 1), (1, 1), 1)
                          + bias, 0.0)
        tol = 1e-4 if dt == np.float32 else 1e-11
        np.testing.assert_allclose(cf(x, w, bias)[0], want, rtol=tol, atol=tol * 10)


def test_convs_with_other_readers_keep_their_buffer(rng):
    """No epilogue when the conv's result is also a result or read elsewhere."""
    x, w = _rand(rng, (1, 6, 6, 4), np.float32), _rand(rng, (2, 2, 4, 8), np.float32)
    c = _f((1, 1), (1, 1), 1)
    for f in (lambda x, w: (c(x, w), c(x, w) + 1.0), lambda x, w: jnp.flip(c(x, w) + 1.0, 1)):
        assert _epilogue_kernels(f, (x, w)) == []
        got, want = jx.jit(f)(x, w), f(x.astype(np.float64), w.astype(np.float64))
        for g, v in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, v, rtol=1e-4, atol=1e-4)


def test_small_channel_convs_go_to_conv_direct_when_it_takes_them(rng, monkeypatch):
    calls = []

    def emit(ctx, kernel):
        calls.append(kernel)
        conv.emit(ctx, kernel)
    fake = types.SimpleNamespace(suits=lambda k: k.root.inputs[1].aval.shape[-2] == 1,
                                 emit=emit)
    monkeypatch.setattr(conv, "USE_DIRECT", True)
    monkeypatch.setattr(conv, "conv_direct", fake)
    _run(rng, np.float32, 2, (6, 7), 5, (3, 3), 5, (1, 1), None, 5)      # depthwise
    assert len(calls) == 1
    _run(rng, np.float32, 2, (6, 7), 4, (3, 3), 5, (1, 1), None, 1)
    assert len(calls) == 1


def test_convs_conv_direct_takes_keep_their_consumers_apart(rng, monkeypatch):
    """A depthwise conv goes to conv_direct (when it is there and takes it), which
    takes no epilogue unless it says so: bias + relu stays its own kernel."""
    monkeypatch.setattr(conv, "USE_DIRECT", True)
    x, w, bias = _rand(rng, (2, 8, 9, 6), np.float32), _rand(rng, (3, 3, 1, 6), np.float32), \
        _rand(rng, (6,), np.float32)

    def f(x, w, bias):
        return jnp.maximum(_f((1, 1), (1, 1), 6)(x, w) + bias, 0.0)
    (k,) = [k for k in jx.jit(f).lower(x, w, bias).kernels if k.kind == "opaque"]
    if not conv._direct(k):
        pytest.skip("no conv_direct, or it does not take depthwise convs")
    if not getattr(conv.conv_direct, "takes_epilogue", lambda k: False)(k):
        assert _epilogue_kernels(f, (x, w, bias)) == []
    want = np.maximum(_loops(x.astype(np.float64), w.astype(np.float64), (1, 1), (1, 1), 6)
                      + bias, 0.0)
    np.testing.assert_allclose(jx.jit(f)(x, w, bias), want, rtol=1e-4, atol=1e-4)


def test_non_canonical_convs_are_refused():
    """A conv the expand pass did not canonicalise is a clear error here."""
    def eqn(lhs, rhs, out, **params):
        p = dict(window_strides=(1, 1), padding=((0, 0), (0, 0)), lhs_dilation=(1, 1),
                 rhs_dilation=(1, 1), dimension_numbers=channels_last_numbers(2),
                 feature_group_count=1, batch_group_count=1, preferred_element_type=None)
        p.update(params)
        var = [types.SimpleNamespace(aval=ShapedArray(s, np.dtype(np.float32)))
               for s in (lhs, rhs, out)]
        return types.SimpleNamespace(root=types.SimpleNamespace(
            params=p, inputs=var[:2], outputs=var[2:], source=None))
    good = eqn((1, 5, 5, 2), (3, 3, 2, 4), (1, 3, 3, 4))
    conv._check(good)
    for bad in (eqn((1, 5, 5, 2), (3, 3, 2, 4), (1, 5, 5, 4), padding=((-1, 1), (1, 1))),
                eqn((1, 5, 5, 2), (3, 3, 2, 4), (1, 5, 5, 4), lhs_dilation=(2, 1)),
                eqn((1, 2, 5, 5), (4, 2, 3, 3), (1, 4, 3, 3),
                    dimension_numbers=((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3)))):
        with pytest.raises(JxError, match="non-canonical"):
            conv._check(bad)
