"""Complex arithmetic on split vectors and the small forward DFTs of the FFT stages.

A complex value is a pair (re, im) of LLVM vectors of one width: the lanes are
independent butterflies. Everything is emitted with `contract` so LLVM may fuse a
multiply and an add into an FMA (one rounding fewer, never more).
"""
from __future__ import annotations

import math

import llvmlite.ir as ir

_FLAGS = ("contract",)


def splat(b, scalar, lanes: int):
    vt = ir.VectorType(scalar.type, lanes)
    v = b.insert_element(ir.Constant(vt, ir.Undefined), scalar, ir.Constant(ir.IntType(32), 0))
    return b.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                            ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))


def vconst(elem: ir.Type, value: float, lanes: int):
    return ir.Constant(ir.VectorType(elem, lanes), [value] * lanes)


def add(b, x, y):
    return b.fadd(x[0], y[0], flags=_FLAGS), b.fadd(x[1], y[1], flags=_FLAGS)


def sub(b, x, y):
    return b.fsub(x[0], y[0], flags=_FLAGS), b.fsub(x[1], y[1], flags=_FLAGS)


def mul(b, x, w):
    """x * w, complex."""
    (a, c), (d, e) = x, w
    re = b.fsub(b.fmul(a, d, flags=_FLAGS), b.fmul(c, e, flags=_FLAGS), flags=_FLAGS)
    im = b.fadd(b.fmul(a, e, flags=_FLAGS), b.fmul(c, d, flags=_FLAGS), flags=_FLAGS)
    return re, im


def scale(b, x, k):
    return b.fmul(x[0], k, flags=_FLAGS), b.fmul(x[1], k, flags=_FLAGS)


def _mi(b, x):
    """-i x = (im, -re)."""
    return x[1], b.fneg(x[0])


def _pi(b, x):
    """+i x = (-im, re)."""
    return b.fneg(x[1]), x[0]


def _dft2(b, x):
    return [add(b, x[0], x[1]), sub(b, x[0], x[1])]


def _dft4(b, x):
    t0, t1 = add(b, x[0], x[2]), sub(b, x[0], x[2])
    t2, t3 = add(b, x[1], x[3]), sub(b, x[1], x[3])
    return [add(b, t0, t2), add(b, t1, _mi(b, t3)), sub(b, t0, t2), add(b, t1, _pi(b, t3))]


def _dft8(b, x, elem, lanes):
    e = _dft4(b, x[0::2])
    o = _dft4(b, x[1::2])
    h = vconst(elem, math.sqrt(0.5), lanes)
    # o_k * exp(-2 pi i k / 8): k=1 (1 - i)/sqrt2, k=2 -i, k=3 -(1 + i)/sqrt2
    o1 = scale(b, (b.fadd(o[1][0], o[1][1], flags=_FLAGS),
                   b.fsub(o[1][1], o[1][0], flags=_FLAGS)), h)
    o2 = _mi(b, o[2])
    o3 = scale(b, (b.fsub(o[3][1], o[3][0], flags=_FLAGS),
                   b.fneg(b.fadd(o[3][0], o[3][1], flags=_FLAGS))), h)
    o = [o[0], o1, o2, o3]
    return [add(b, e[k], o[k]) for k in range(4)] + [sub(b, e[k], o[k]) for k in range(4)]


def _dft_odd(b, x, elem, lanes):
    """Odd r: X_j = x0 + sum_k cos(2 pi jk/r) (x_k + x_{r-k}) - i sin(..) (x_k - x_{r-k})
    over k = 1..(r-1)/2, and X_{r-j} with +i: (r-1)^2/2 real multiply-adds a pair."""
    r = len(x)
    h = r // 2
    sums = [add(b, x[k], x[r - k]) for k in range(1, h + 1)]
    difs = [sub(b, x[k], x[r - k]) for k in range(1, h + 1)]
    out = [None] * r
    total = x[0]
    for s_ in sums:
        total = add(b, total, s_)
    out[0] = total
    for j in range(1, h + 1):
        re, im = x[0]
        sre = sim = None
        for k in range(1, h + 1):
            c = vconst(elem, math.cos(2 * math.pi * j * k / r), lanes)
            s = vconst(elem, math.sin(2 * math.pi * j * k / r), lanes)
            re = b.fadd(re, b.fmul(c, sums[k - 1][0], flags=_FLAGS), flags=_FLAGS)
            im = b.fadd(im, b.fmul(c, sums[k - 1][1], flags=_FLAGS), flags=_FLAGS)
            tr, ti = b.fmul(s, difs[k - 1][0], flags=_FLAGS), b.fmul(s, difs[k - 1][1],
                                                                      flags=_FLAGS)
            sre = tr if sre is None else b.fadd(sre, tr, flags=_FLAGS)
            sim = ti if sim is None else b.fadd(sim, ti, flags=_FLAGS)
        # X_j = R - i S, X_{r-j} = R + i S
        out[j] = (b.fadd(re, sim, flags=_FLAGS), b.fsub(im, sre, flags=_FLAGS))
        out[r - j] = (b.fsub(re, sim, flags=_FLAGS), b.fadd(im, sre, flags=_FLAGS))
    return out


def dft(b, x: list, elem: ir.Type, lanes: int) -> list:
    """The forward DFT of len(x) complex vectors (radix 1, 2, 4, 8 or odd)."""
    r = len(x)
    if r == 1:
        return list(x)
    if r == 2:
        return _dft2(b, x)
    if r == 4:
        return _dft4(b, x)
    if r == 8:
        return _dft8(b, x, elem, lanes)
    if r % 2:
        return _dft_odd(b, x, elem, lanes)
    raise ValueError(f"fft: no butterfly for radix {r}")


def pick(b, vecs: list, picks: list):
    """The vector whose lane l is vecs[picks[l][0]][picks[l][1]], by two-input
    shuffles (one per source vector after the first)."""
    lanes = len(picks)
    mt = ir.VectorType(ir.IntType(32), lanes)
    order = list(dict.fromkeys(v for v, _ in picks))
    if len(order) == 1:
        v = vecs[order[0]]
        return b.shuffle_vector(v, v, ir.Constant(mt, [ln for _, ln in picks]))
    first, second = order[:2]
    mask = [ln if v == first else lanes + ln if v == second else 0 for v, ln in picks]
    acc = b.shuffle_vector(vecs[first], vecs[second], ir.Constant(mt, mask))
    for src in order[2:]:           # keep acc's lanes, take src's own
        mask = [lanes + ln if v == src else i for i, (v, ln) in enumerate(picks)]
        acc = b.shuffle_vector(acc, vecs[src], ir.Constant(mt, mask))
    return acc


def interleave(b, vecs: list, block: int, lanes: int) -> list:
    """The vectors' blocks of `block` lanes interleaved (block 0 of each vector in
    turn, then block 1, ...), as len(vecs) vectors; for a power-of-two count and
    block: a perfect-shuffle network, log2(r) rounds of r two-input shuffles."""
    streams = [[v] for v in vecs]
    size = block
    while len(streams) > 1:
        streams = [_zip(b, streams[i], streams[i + 1], size, lanes)
                   for i in range(0, len(streams), 2)]
        size *= 2
    return streams[0]


def _zip(b, xs: list, ys: list, size: int, lanes: int) -> list:
    """Two equal streams of vectors with their blocks of `size` alternating."""
    if size >= lanes:                     # whole vectors: a reordering, no shuffles
        k = size // lanes
        out = []
        for i in range(0, len(xs), k):
            out += xs[i:i + k] + ys[i:i + k]
        return out
    blocks = lanes // size
    mt = ir.VectorType(ir.IntType(32), lanes)
    masks = []
    for half in (0, blocks // 2):
        mask = []
        for blk in range(blocks):
            src = (lanes if blk % 2 else 0) + (half + blk // 2) * size
            mask += range(src, src + size)
        masks.append(ir.Constant(mt, mask))
    out = []
    for x, y in zip(xs, ys):
        out += [b.shuffle_vector(x, y, m) for m in masks]
    return out
