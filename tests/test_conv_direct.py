"""The direct convolution kernel (codegen/cpu/conv_direct.py): canonical convs with
few channels per group, compiled through it, against the primitive's NumPy
reference and a direct loop over taps and channels written here."""
import itertools

import numpy as np
import pytest

import jx
import jx.lax
from jx.codegen.cpu import conv as _conv_kernel  # noqa: F401  (its rule registered
from jx.codegen.cpu import conv_direct, opaque, parallel   # before the fixture's)
from jx.passes import expand_conv
from jx.prims.convolution import _conv, channels_last_numbers

DN = {1: ("NWC", "WIO", "NWC"), 2: ("NHWC", "HWIO", "NHWC"), 3: ("NDHWC", "DHWIO", "NDHWC")}


class _Seen(Exception):
    pass


@pytest.fixture
def direct(monkeypatch):
    """Every conv kernel compiled through conv_direct (and asserted to suit it); the
    padding of each kernel compiled, listed. Padded convs reach the kernel unpadded
    (expand_conv.KERNEL_PADS)."""
    seen = []

    def rule(ctx, kernel):
        assert conv_direct.suits(kernel), kernel.root.params
        seen.append(tuple(map(tuple, kernel.root.params["padding"])))
        conv_direct.emit(ctx, kernel)
    monkeypatch.setitem(opaque.OPAQUE, "conv_general_dilated", rule)
    monkeypatch.setattr(expand_conv, "KERNEL_PADS", True)
    return seen


def _conv_fn(d, st, dil, G, pad="VALID"):
    return lambda x, w: jx.lax.conv_general_dilated(
        x, w, st, pad, rhs_dilation=dil, dimension_numbers=DN[d], feature_group_count=G)


def same_pads(S, K, st, dil):
    """SAME padding (lo, hi) per spatial dim, as lax computes it."""
    out = []
    for s, k, t, r in zip(S, K, st, dil):
        total = max((-(-s // t) - 1) * t + (k - 1) * r + 1 - s, 0)
        out.append((total // 2, total - total // 2))
    return out


def loop_reference(x, w, st, dil, G, pads=None):
    """out[n, q..., o] = sum over taps k and group channels i of
    x[n, q s + k r, g(o) I + i] w[k, i, o], one tap and one channel at a time (x
    zero-padded by pads first)."""
    d = x.ndim - 2
    if pads is not None:
        x = np.pad(x, [(0, 0)] + [tuple(p) for p in pads] + [(0, 0)])
    K, (I, O) = w.shape[:d], w.shape[d:]
    Og = O // G
    Q = [(s - (k - 1) * r - 1) // t + 1 for s, k, r, t in zip(x.shape[1:-1], K, dil, st)]
    out = np.zeros((x.shape[0], *Q, O))
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    for k in itertools.product(*map(range, K)):
        win = tuple(slice(kj * r, kj * r + (q - 1) * t + 1, t)
                    for kj, r, q, t in zip(k, dil, Q, st))
        xs = xd[(slice(None),) + win]
        for o in range(O):
            g = o // Og
            for i in range(I):
                out[..., o] += xs[..., g * I + i] * wd[k + (i, o)]
    return out


def _run(xshape, kshape, I, O, G, st, dil, dt, seed=0, pad=None, seen=None):
    """pad: None (VALID), "SAME" or (lo, hi) pairs; seen (the direct fixture's list):
    the kernel is checked to have got that padding itself."""
    d = len(kshape)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xshape).astype(dt)
    w = rng.standard_normal(tuple(kshape) + (I, O)).astype(dt)
    pads = [(0, 0)] * d if pad is None else \
        same_pads(xshape[1:-1], kshape, st, dil) if pad == "SAME" else [tuple(p) for p in pad]
    got = np.asarray(jx.jit(_conv_fn(d, st, dil, G, pad or "VALID"))(x, w))
    if seen is not None:
        assert seen and seen[-1] == tuple(pads), (seen, pads)
    ref = _conv(x, w, st, pads, (1,) * d, dil, channels_last_numbers(d), G, 1)
    loops = loop_reference(x, w, st, dil, G, pads)
    assert got.shape == ref.shape == loops.shape and got.dtype == dt
    # a sum of T I products of unit normals: errors grow with sqrt(T I)
    scale = np.sqrt(np.prod(kshape) * I)
    tol = (2e-6 if dt == np.float32 else 1e-14) * scale
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, loops, rtol=tol, atol=tol)


# (lhs shape, kernel window, I, O, G, strides, rhs dilation)
CASES = [
    # d = 1: a one-channel signal, few channels, stride > kernel, multipliers
    ((1, 300, 1), (7,), 1, 1, 1, (1,), (1,)),
    ((2, 50, 3), (5,), 3, 2, 1, (2,), (3,)),
    ((2, 41, 2), (2,), 1, 4, 2, (3,), (1,)),
    ((3, 37, 4), (4,), 1, 4, 4, (1,), (2,)),
    ((2, 29, 1), (3,), 1, 3, 1, (2,), (1,)),             # Og = 3 (pixels form)
    ((2, 45, 24), (3,), 1, 24, 24, (2,), (2,)),          # depthwise, 24 = 16 + 8
    ((1, 260, 1), (20,), 1, 2, 1, (1,), (3,)),           # taps k, k + W share loads
    ((2, 90, 1), (17,), 1, 3, 1, (1,), (1,)),
    # d = 2: depthwise with C not a multiple of the vector width, multipliers,
    # I = 2 groups, a pixels-form image, windows larger than the unrolled taps
    ((2, 9, 11, 20), (3, 3), 1, 20, 20, (1, 1), (1, 1)),
    ((2, 9, 11, 20), (3, 3), 1, 40, 20, (2, 1), (1, 2)),
    ((1, 7, 9, 7), (2, 3), 1, 7, 7, (3, 2), (1, 1)),
    ((2, 8, 9, 8), (3, 3), 2, 8, 4, (1, 1), (1, 1)),
    ((1, 7, 8, 4), (3, 3), 1, 64, 4, (1, 1), (1, 1)),    # Og = 16, 32: vectors of
    ((1, 6, 7, 2), (2, 2), 1, 64, 2, (2, 1), (1, 1)),    # several registers
    ((2, 10, 13, 3), (2, 2), 1, 3, 3, (3, 3), (1, 1)),
    ((1, 9, 10, 2), (3, 2), 2, 4, 1, (1, 2), (2, 1)),
    ((1, 14, 15, 16), (9, 9), 1, 16, 16, (1, 1), (1, 1)),
    ((1, 12, 13, 1), (5, 5), 1, 1, 1, (2, 1), (1, 2)),
    # d = 3
    ((2, 5, 6, 7, 12), (2, 3, 2), 1, 24, 12, (1, 2, 1), (2, 1, 1)),
    ((1, 6, 5, 9, 2), (2, 2, 3), 2, 2, 1, (1, 1, 2), (1, 2, 1)),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"_k{c[1]}")
def test_direct_conv(direct, case, dt):
    _run(*case, dt)


# big enough for the pool: rows (depthwise), one long row cut into pixel blocks
THREADED = [
    ((2, 20, 22, 32), (3, 3), 1, 32, 32, (1, 1), (1, 1)),
    ((1, 5000, 1), (31,), 1, 1, 1, (1,), (1,)),
    ((1, 3001, 2), (9,), 2, 2, 1, (2,), (1,)),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", THREADED, ids=lambda c: "x".join(map(str, c[0])))
def test_direct_conv_threads(direct, case, threads):
    before = parallel.num_threads()
    parallel.set_num_threads(threads)
    try:
        _run(*case, np.float32, seed=threads)
    finally:
        if before:
            parallel.set_num_threads(before)


def test_direct_conv_batch_split(direct, monkeypatch):
    """A caller splitting the batch over threads (ctx.outer): its chunk's tasks."""
    monkeypatch.setitem(opaque.PARALLEL_OPAQUE, "conv_general_dilated",
                        lambda k: ([k.root.inputs[0].aval.shape[0]], 1 << 30))
    _run((5, 8, 9, 16), (3, 3), 1, 16, 16, (1, 1), (1, 1), np.float32)
    _run((3, 700, 1), (15,), 1, 1, 1, (1,), (1,), np.float32)


def _suits(monkeypatch, xshape, kshape, I, O, G, dt=np.float32):
    seen = []

    def rule(ctx, kernel):
        seen.append(conv_direct.suits(kernel))
        raise _Seen
    monkeypatch.setitem(opaque.OPAQUE, "conv_general_dilated", rule)
    d = len(kshape)
    x, w = np.ones(xshape, dt), np.ones(tuple(kshape) + (I, O), dt)
    with pytest.raises(_Seen):
        jx.jit(_conv_fn(d, (1,) * d, (1,) * d, G))(x, w)
    return seen[0]


@pytest.mark.x64
def test_suits(monkeypatch):
    # depthwise (multiplier 1 and 2), a one-channel signal, few channels: direct
    assert _suits(monkeypatch, (2, 16, 16, 64), (3, 3), 1, 64, 64)
    assert _suits(monkeypatch, (2, 16, 16, 64), (3, 3), 1, 128, 64, np.float64)
    assert _suits(monkeypatch, (1, 1000, 1), (63,), 1, 1, 1)
    assert _suits(monkeypatch, (1, 30, 30, 3), (3, 3), 3, 4, 1)
    # a dense 64 -> 64 conv, and a first layer (3 -> 64): the GEMM's
    assert not _suits(monkeypatch, (2, 16, 16, 64), (3, 3), 64, 64, 1)
    assert not _suits(monkeypatch, (2, 16, 16, 3), (3, 3), 3, 64, 1)
    # wide groups (I Og = 64) are GEMMs too
    assert not _suits(monkeypatch, (2, 16, 16, 64), (3, 3), 8, 64, 8)


@pytest.mark.x64
@pytest.mark.parametrize("vbytes", [16, 32])
@pytest.mark.parametrize("case", [CASES[i] for i in (1, 5, 7, 10, 12, 16)] + [THREADED[1]],
                         ids=lambda c: "x".join(map(str, c[0])))
def test_direct_conv_narrow_vectors(direct, monkeypatch, case, vbytes):
    """Plans for SSE and AVX2 hosts (16 registers, 4 or 8 float32 lanes)."""
    monkeypatch.setattr(conv_direct.target, "vector_bytes", lambda cpu: vbytes)
    _run(*case, np.float64 if vbytes == 16 else np.float32)


# padded convs: the kernel reads lhs unpadded and supplies the zeros. (lhs shape,
# kernel window, I, O, G, strides, rhs dilation, padding: "SAME" or (lo, hi) pairs)
PADDED = [
    # d = 1: SAME signals (taps sharing loads, pixels form), asymmetric pads, pads
    # larger than the window (outputs reading only zeros), strides and dilation
    ((1, 300, 1), (7,), 1, 1, 1, (1,), (1,), "SAME"),
    ((1, 260, 1), (20,), 1, 2, 1, (1,), (3,), "SAME"),
    ((2, 90, 1), (17,), 1, 3, 1, (1,), (1,), [(20, 25)]),
    ((2, 50, 3), (5,), 3, 2, 1, (2,), (3,), [(4, 1)]),
    ((2, 41, 2), (2,), 1, 4, 2, (3,), (1,), [(0, 5)]),
    ((2, 45, 24), (3,), 1, 24, 24, (2,), (2,), [(3, 0)]),
    ((2, 45, 24), (3,), 1, 24, 24, (1,), (1,), "SAME"),
    ((1, 5, 1), (7,), 1, 1, 1, (1,), (1,), [(8, 9)]),
    ((2, 6, 16), (3,), 1, 16, 16, (2,), (1,), [(9, 7)]),
    ((1, 100, 8), (80,), 1, 8, 8, (1,), (1,), "SAME"),       # taps looped (80 > UNROLL)
    # d = 2: depthwise SAME (all taps unrolled: rows dispatched), multipliers,
    # I = 2 groups, pixels-form images, a 9x9 window (leading taps looped), pads
    # larger than the image
    ((2, 9, 11, 20), (3, 3), 1, 20, 20, (1, 1), (1, 1), "SAME"),
    ((2, 9, 11, 20), (3, 3), 1, 40, 20, (2, 1), (1, 2), [(1, 2), (3, 0)]),
    ((1, 7, 9, 7), (2, 3), 1, 7, 7, (3, 2), (1, 1), [(4, 4), (0, 3)]),
    ((2, 8, 9, 8), (3, 3), 2, 8, 4, (1, 1), (1, 1), "SAME"),
    ((1, 7, 8, 4), (3, 3), 1, 64, 4, (1, 1), (1, 1), "SAME"),
    ((2, 10, 13, 3), (2, 2), 1, 3, 3, (3, 3), (1, 1), [(5, 1), (2, 6)]),
    ((1, 9, 10, 2), (3, 2), 2, 4, 1, (1, 2), (2, 1), "SAME"),
    ((1, 14, 15, 16), (9, 9), 1, 16, 16, (1, 1), (1, 1), "SAME"),
    ((1, 12, 13, 1), (5, 5), 1, 1, 1, (2, 1), (1, 2), "SAME"),
    ((2, 16, 40, 1), (3, 3), 1, 1, 1, (1, 1), (1, 1), "SAME"),
    ((1, 6, 7, 16), (3, 3), 1, 16, 16, (1, 1), (1, 1), [(6, 6), (7, 7)]),
    ((1, 3, 4, 2), (2, 2), 1, 2, 2, (2, 2), (2, 2), [(5, 4), (3, 6)]),
    # d = 3
    ((2, 5, 6, 7, 12), (2, 3, 2), 1, 24, 12, (1, 2, 1), (2, 1, 1), "SAME"),
    ((1, 6, 5, 9, 2), (2, 2, 3), 2, 2, 1, (1, 1, 2), (1, 2, 1), [(1, 1), (2, 0), (0, 3)]),
    ((1, 5, 6, 7, 16), (3, 3, 3), 1, 16, 16, (1, 1, 1), (1, 1, 1), "SAME"),
    ((1, 4, 5, 6, 1), (3, 3, 3), 1, 1, 1, (2, 1, 1), (1, 1, 2), [(2, 3), (1, 1), (4, 0)]),
]


def _pid(c):
    return "x".join(map(str, c[0])) + f"_k{c[1]}_" + \
        ("same" if c[-1] == "SAME" else "p" + "".join(f"{lo}{hi}" for lo, hi in c[-1]))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", PADDED, ids=_pid)
def test_direct_conv_padded(direct, case, dt):
    *shape, pad = case
    _run(*shape, dt, pad=pad, seen=direct)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", [c + ("SAME",) for c in THREADED] +
                         [((1, 4000, 2), (9,), 2, 2, 1, (2,), (1,), [(300, 200)]),
                          ((1, 4000, 16), (9,), 1, 16, 16, (1,), (1,), [(70, 90)]),
                          ((1, 2, 3000, 8), (3, 3), 1, 8, 8, (1, 1), (1, 1), "SAME")],
                         ids=_pid)
def test_direct_conv_padded_threads(direct, case, threads):
    """Pixel blocks of one row split over tasks: a task's range may start or end in
    a border."""
    before = parallel.num_threads()
    parallel.set_num_threads(threads)
    try:
        *shape, pad = case
        _run(*shape, np.float32, seed=threads, pad=pad, seen=direct)
    finally:
        if before:
            parallel.set_num_threads(before)


@pytest.mark.x64
@pytest.mark.parametrize("vbytes", [16, 32])
@pytest.mark.parametrize("case", [PADDED[i] for i in (1, 3, 6, 11, 13, 18, 24)], ids=_pid)
def test_direct_conv_padded_narrow_vectors(direct, monkeypatch, case, vbytes):
    monkeypatch.setattr(conv_direct.target, "vector_bytes", lambda cpu: vbytes)
    *shape, pad = case
    _run(*shape, np.float64 if vbytes == 16 else np.float32, pad=pad, seen=direct)


def _guarded(a, at_end, keep):
    """A copy of a placed flush against an inaccessible page (after its last byte
    when at_end, else before its first): a read outside it faults."""
    import ctypes
    import mmap
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    pg = mmap.PAGESIZE
    pages = -(-a.nbytes // pg) + 2
    m = mmap.mmap(-1, pages * pg)
    keep.append(m)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    for at in (base, base + (pages - 1) * pg):
        assert libc.mprotect(at, pg, 0) == 0
    off = (pages - 1) * pg - a.nbytes if at_end else pg
    out = np.frombuffer((ctypes.c_char * a.nbytes).from_address(base + off), a.dtype)
    out = out.reshape(a.shape)
    out[...] = a
    return out


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="mprotect")
@pytest.mark.parametrize("case", [PADDED[i] for i in (0, 2, 5, 7, 8, 10, 15, 19, 20, 25)],
                         ids=_pid)
def test_direct_conv_padded_reads_inside(direct, case):
    """lhs between inaccessible pages: the zeros of padding are never read from
    outside it (a padded border pixel's taps masked off or out of its loops)."""
    *shape, pad = case
    xshape, kshape, I, O, G, st, dil = shape
    d = len(kshape)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xshape).astype(np.float32)
    w = rng.standard_normal(tuple(kshape) + (I, O)).astype(np.float32)
    f = jx.jit(_conv_fn(d, st, dil, G, pad))
    want = np.asarray(f(x, w))
    keep = []
    for at_end in (False, True):
        np.testing.assert_array_equal(np.asarray(f(_guarded(x, at_end, keep), w)), want)
