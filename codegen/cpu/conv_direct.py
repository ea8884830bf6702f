"""Direct (non-GEMM) kernels for canonical convolutions with few channels per group.

A canonical convolution (jx.prims.convolution.is_canonical) reads lhs (N, S..., C)
and rhs (K..., I, O) and writes out (N, S'..., O); feature group g reads lhs
channels [g I, (g + 1) I) and writes out channels [g Og, (g + 1) Og). When I Og is
small (depthwise convolutions: I = 1; signals of a few channels) a GEMM tile would
be mostly empty, and the sums are written out directly instead, in one of two forms:

- "channels": vectors along the output channels, for each output pixel and tap one
  vector FMA per input channel of the group. Lane l of a block of W channels
  starting at o0 reads lhs channel ((o0 + l) // Og) I + i: a contiguous run of
  (W / Og) I lhs channels, shuffled into place (no shuffle for depthwise). P output
  pixels along the last spatial dim share each weight vector; the weights of every
  tap are held in registers across a row when they fit.
- "pixels": vectors along the last output spatial dim, for C and O of at most 4 (a
  long one-channel signal): lane l of a vector at pixel p0 reads lhs element
  ((p0 + l) s + k r) C + c, a run of ((W - 1) s + 1) C elements deinterleaved by
  shuffles (none for C s = 1); P vectors of pixels x O channels of partial sums
  stay in registers over every tap, the weights broadcast per tap; the O channels
  are interleaved back into one store. The taps loop (unrolled, LLVM merged the
  overlapping loads of neighbouring vectors and spilled them); with one channel at
  stride 1, taps k, k + W, ... run together and share their lhs vectors.

The channels form unrolls its taps (up to UNROLL per input channel; the leading tap
dims loop when a window is larger). Tails (a last channel block, the last pixels of a row) use
masked loads and stores, so nothing is read or written outside the buffers.
Padding (lo, hi >= 0 per spatial dim: the canonical form's zeros) is supplied here,
lhs read unpadded and never outside: along the leading dims each row computes the
range of taps that read inside lhs and loops over those only (the channels form,
whose leading taps are unrolled, runs the rows whose taps all read inside as without
padding, the others with those taps looped); along the last dim a row's pixels split
into an interior, where every tap reads inside and the vector loops run as without
padding, and its borders: in the channels form one pixel at a time, the same code
with each tap's loads masked off when it reads padding; in the pixels form vectors
of W pixels from the row's start until the interior, and from the interior's last
full vector to the row's end, each load masked to the lanes whose reads fall inside
lhs. A tap reading padding adds nothing (an output all of whose taps do is 0).
Threads split the output rows (n, o_1 .. o_{d-1}) and, when there are few rows (a
single long signal), each row into blocks of pixels.

conv.py's rule calls suits() and emit(); this module registers no rule.
"""
from __future__ import annotations

import itertools
import math
from contextlib import contextmanager

import llvmlite.ir as ir
import numpy as np

from jx.prims.convolution import is_canonical

from . import irutil as U
from . import target, tuning
from .conv_direct_ir import (_add, _c, _fma, _interleave, _mul, _pick, _splat,
                             _vload, _vload_if, _vload_mask, _vstore, _vt)

UNROLL = 64          # taps x input channels written out straight in the inner loop
GROUP_LIMIT = 32     # I * Og up to which the direct kernel beats a GEMM (see suits)
MAX_I = 8            # input channels per group the channels form shuffles for
PIXEL_CHANNELS = 4   # C and O up to which the pixels form is taken
TARGET_TASKS = 64    # tasks for the pool when there are few rows (a long signal)


class Geometry:
    """The sizes of a canonical convolution kernel."""

    def __init__(self, kernel):
        eqn = kernel.root
        x, w = eqn.inputs
        out = eqn.outputs[0]
        p = eqn.params
        self.x, self.w, self.out = x, w, out
        self.dt = np.dtype(x.aval.dtype)
        xs, ws, os_ = x.aval.shape, w.aval.shape, out.aval.shape
        self.d = len(xs) - 2
        self.N, self.S, self.C = xs[0], tuple(xs[1:-1]), xs[-1]
        self.K, self.I, self.O = tuple(ws[:-2]), ws[-2], ws[-1]
        self.Q = tuple(os_[1:-1])
        self.G = int(p["feature_group_count"])
        self.Og = self.O // self.G if self.G else 0
        self.st = tuple(int(s) for s in p["window_strides"])
        self.dil = tuple(int(r) for r in p["rhs_dilation"])
        self.pad = tuple((int(lo), int(hi)) for lo, hi in p["padding"])
        self.shapes = (xs, ws, os_)

    @property
    def taps(self) -> int:
        return math.prod(self.K)

    @property
    def rows(self) -> int:
        return self.N * math.prod(self.Q[:-1])

    def xstride(self, j: int) -> int:
        """Elements between neighbours along lhs spatial dim j."""
        return math.prod(self.S[j + 1:]) * self.C

    def tap_delta(self, k) -> int:
        """lhs offset of tap k (a full index) from the window's origin."""
        return sum(kj * r * self.xstride(j) for j, (kj, r) in enumerate(zip(k, self.dil)))

    def interior(self, j: int):
        """[lo, hi): the outputs along spatial dim j all of whose taps read inside lhs
        (q s - pad_lo >= 0 and q s + (K - 1) r - pad_lo < S), lo <= hi <= Q."""
        plo, s, r = self.pad[j][0], self.st[j], self.dil[j]
        lo = min(-(-plo // s), self.Q[j])
        hi = (self.S[j] - 1 + plo - (self.K[j] - 1) * r) // s + 1
        return lo, min(max(hi, lo), self.Q[j])

    def tap_index(self, k) -> int:
        """Flat index of tap k in the (K...) dims of rhs."""
        idx = 0
        for kj, n in zip(k, self.K):
            idx = idx * n + kj
        return idx


def _static(kernel) -> bool:
    shapes = [a.aval.shape for a in list(kernel.root.inputs) + list(kernel.root.outputs)]
    return not any(U.is_symbolic(n) for s in shapes for n in s)


def _pixels_form(g: Geometry) -> bool:
    return g.C <= PIXEL_CHANNELS and g.O <= PIXEL_CHANNELS


def suits(kernel) -> bool:
    """Whether this kernel computes a canonical convolution better than a GEMM: few
    channels per group (I Og <= GROUP_LIMIT, I <= MAX_I), and a form it has (output
    groups of a power-of-two size for the channels form, C, O <= 4 for the pixels
    form). Float32/64, static, nonempty shapes, no fused epilogue.

    The limit, measured against conv.py's GEMM form (AMD EPYC Zen 5, 2 threads,
    8 x 32 x 32 outputs of 64 channels, 3 x 3 taps, float32): the direct kernel was
    20-50x faster at I Og <= 4, 6-9x at 8, 2.5-8x at 16, 2.2-14x at 32 and 1.6x at
    64 (I = Og = 8), where a GEMM tile of Og columns is a quarter full; a dense
    64 -> 64 conv (I Og = 4096) is the GEMM's."""
    eqn = kernel.root
    if eqn.prim.name != "conv_general_dilated" or getattr(kernel, "epilogue", None) is not None:
        return False
    if not is_canonical(eqn) or not _static(kernel):
        return False
    g = Geometry(kernel)
    if 0 in g.shapes[0] or 0 in g.shapes[1] or 0 in g.shapes[2]:
        return False
    if g.I * g.Og > GROUP_LIMIT or g.I > MAX_I:
        return False
    pow2 = g.Og & (g.Og - 1) == 0
    return pow2 or _pixels_form(g)


class Plan:
    """How emit() lays the loops out for one kernel on one target."""

    def __init__(self, g: Geometry, vbytes: int):
        lanes = max(1, vbytes // g.dt.itemsize)
        regs = 32 if vbytes >= 64 else 16
        self.pixels = _pixels_form(g) or (g.Og & (g.Og - 1)) != 0
        if self.pixels:
            self.W = lanes
            budget = 12 if regs == 32 else 6          # accumulator vectors
            self.P = max(1, budget // g.O)
            self.unit = self.P * self.W
            per_tap = g.I * g.O                          # broadcast weights per tap
            width = 1
        else:
            self.W = max(min(lanes, 1 << (g.O - 1).bit_length()), g.Og)
            width = max(1, self.W // lanes)              # registers per vector
            per_tap = g.I * width                        # weight vectors per tap
            held = g.taps * per_tap if g.taps * g.I <= UNROLL else regs
            held = held if held <= regs - 4 - 2 * width else per_tap
            # P pixels' accumulators beside the weights held and a few loads
            self.P = max(1, min(8, (regs - 4 - held) // width))
            self.unit = self.P
        # taps: in the channels form the trailing dims whose product (x I) fits
        # UNROLL are unrolled, their weights held in registers across a row when
        # they fit. The pixels form loops over every tap: unrolled, LLVM shares the
        # loads of overlapping windows between vectors (x[p W + k] is x[(p + 1) W + k
        # - W]) and keeps them all live, spilling most (1-D, 63 taps: 4x slower).
        split = g.d
        while not self.pixels and split > 0 and math.prod(g.K[split - 1:]) * g.I <= UNROLL:
            split -= 1
        self.split = split
        # one channel read at stride 1: vectors of pixels p and p + q r (r: the last
        # dim's rhs dilation) read the same lhs vector for taps k and k + q W, so
        # each load serves up to ceil(K_d / W) taps (see _shared_block)
        self.share = self.pixels and g.C == 1 and g.st[-1] == 1 and g.K[-1] > 1
        self.hoist = split == 0 and g.taps * per_tap <= (regs - 4 - self.P * width
                                                         if not self.pixels else 16)
        # threads: rows, and each row in blocks of pixels when rows are few
        qd = g.Q[-1]
        nch = max(1, min(-(-qd // self.unit), -(-TARGET_TASKS // g.rows)))
        self.cw = -(-(-(-qd // nch)) // self.unit) * self.unit
        self.nch = -(-qd // self.cw)
        self.tasks = g.rows * self.nch


def _tap_bounds(b, g: Geometry, j: int, q):
    """[lo, hi) of the taps k along spatial dim j that read inside lhs from output
    index q (an i64 value): 0 <= q s + k r - pad_lo < S. Ints where no padding on that
    side makes them 0 and K; hi <= lo when every tap reads padding."""
    plo, phi = g.pad[j]
    s, r, K = g.st[j], g.dil[j], g.K[j]
    lo, hi = 0, K
    if plo:
        n = b.sub(U.i64(plo), _mul(b, q, s))            # > 0: the first taps read padding
        n = b.select(b.icmp_signed(">", n, U.i64(0)), n, U.i64(0))
        lo = n if r == 1 else b.udiv(b.add(n, U.i64(r - 1)), U.i64(r))
    if phi:
        m = b.sub(U.i64(g.S[j] - 1 + plo), _mul(b, q, s))  # the last tap's k r at most
        top = b.add(m if r == 1 else b.sdiv(m, U.i64(r)), U.i64(1))
        top = b.select(b.icmp_signed("<", top, U.i64(K)), top, U.i64(K))
        hi = b.select(b.icmp_signed("<", m, U.i64(0)), U.i64(0), top)
    return lo, hi


@contextmanager
def _tap_loops(b, g: Geometry, split: int, bounds=None):
    """Runtime loops over the leading `split` tap dims, dim j over bounds[j] (a
    [lo, hi) pair, for the dims bounds has) or all K_j; yields (lhs offset, rhs tap
    index, tap indices) of the loops' position (0, 0, [] without loops)."""
    if split == 0:
        yield 0, 0, []
        return
    stack, ks = [], []
    try:
        for j in range(split):
            lo, hi = bounds[j] if bounds is not None and j < len(bounds) else (0, g.K[j])
            cm = U.for_range(b, g.K[j], f"tap{j}") if (lo, hi) == (0, g.K[j]) else \
                U.for_between(b, _c(lo), _c(hi), f"tap{j}")
            ks.append(cm.__enter__())
            stack.append(cm)
        delta, widx = 0, 0
        for j, kj in enumerate(ks):
            delta = _add(b, delta, _mul(b, kj, g.dil[j] * g.xstride(j)))
            widx = _add(b, widx, _mul(b, kj, math.prod(g.K[j + 1:])))
        yield delta, widx, ks
    finally:
        for cm in reversed(stack):
            cm.__exit__(None, None, None)


def _inner_taps(g: Geometry, split: int):
    """(lhs offset, rhs tap index, last-dim tap index) of each unrolled tap, relative
    to the loops' (the last-dim index None when the loops cover that dim)."""
    out = []
    for k in itertools.product(*map(range, g.K[split:])):
        full = (0,) * split + k
        out.append((g.tap_delta(full), g.tap_index(full), k[-1] if k else None))
    return out


def _accumulate(b, g: Geometry, split: int, accs: list, step, bounds=None):
    """accs after every tap: step(accs, delta, widx, hoisted_index, kd) per unrolled
    tap (kd: its index along the last spatial dim, an int or a loop's value), inside
    runtime loops over the leading `split` tap dims (over bounds[j] for j < len(bounds)
    when given) when there are any."""
    inner = _inner_taps(g, split)
    if split == 0:
        for t, (delta, widx, kd) in enumerate(inner):
            accs = step(accs, delta, widx, t, kd)
        return accs
    slots = []
    for a in accs:
        s = U.alloca_entry(b, a.type, "acc")
        b.store(a, s)
        slots.append(s)
    with _tap_loops(b, g, split, bounds) as (d0, w0, ks):
        cur = [b.load(s) for s in slots]
        for delta, widx, kd in inner:
            cur = step(cur, _add(b, d0, delta), _add(b, w0, widx), None,
                       ks[-1] if kd is None else kd)
        for s, a in zip(slots, cur):
            b.store(a, s)
    return [b.load(s) for s in slots]


@contextmanager
def _borders(b, start, a, z, stop):
    """A loop over the pixels [start, a) and [z, stop) (a row's border pixels);
    yields each pixel's index."""
    nl = b.sub(a, start)
    n = b.add(nl, b.sub(stop, z))
    with U.for_between(b, U.i64(0), n, "edge") as i:
        yield b.add(i, b.select(b.icmp_signed("<", i, nl), start, b.sub(z, nl)))


def _split_row(b, g: Geometry, start, stop):
    """(a, z): [start, stop) cut into the left border [start, a), the interior [a, z)
    (every tap reads inside lhs along the last spatial dim) and the right border
    [z, stop); None when the last dim has no padding (all interior)."""
    if g.pad[-1] == (0, 0):
        return None
    lo, hi = g.interior(g.d - 1)

    def clamp(v):
        v = b.select(b.icmp_signed("<", start, U.i64(v)), U.i64(v), start)
        return b.select(b.icmp_signed("<", v, stop), v, stop)
    return clamp(lo), clamp(hi)


# ------------------------------------------------------------------ the kernel

def emit(ctx, kernel) -> None:
    """The convolution of `kernel` (suits(kernel) holds) into the kernel function at
    ctx.b: one function over a range of tasks (a row, or a block of one row's
    pixels), run by the pool when there is work enough. With ctx.outer (the batch
    split over threads by the caller), the tasks of those batch elements."""
    g = Geometry(kernel)
    b = ctx.b
    module = b.module
    plan = Plan(g, target.vector_bytes(target.of_module(module)))
    rows = _rows_fn(module, b.function.name, g, plan)
    xp, wp, op = ctx.ptr(g.x), ctx.ptr(g.w), ctx.ptr(g.out)
    if ctx.outer is not None:
        per_n = plan.tasks // g.N
        lo, hi = ctx.outer
        b.call(rows, [xp, wp, op, b.mul(lo, U.i64(per_n)), b.mul(hi, U.i64(per_n))])
        return
    pool = ctx.module._parallel_for
    work = g.out.aval.size * g.taps * g.I
    if pool is None or plan.tasks < 2 or work < tuning.value("parallel_min_work"):
        b.call(rows, [xp, wp, op, U.i64(0), U.i64(plan.tasks)])
        return
    body = ir.Function(module, ir.FunctionType(U.VOID, [U.PTR, U.I64, U.I64]),
                       f"{b.function.name}.conv.body")
    body.linkage = "internal"
    bb = ir.IRBuilder(body.append_basic_block("entry"))
    args, lo, hi = body.args
    ptrs = [bb.load(bb.gep(args, [U.i64(i)], source_etype=U.PTR), typ=U.PTR) for i in range(3)]
    bb.call(rows, ptrs + [lo, hi])
    bb.ret_void()
    entry = b.function.entry_basic_block
    with b.goto_block(entry):
        if entry.instructions:
            b.position_before(entry.instructions[0])
        arr = b.alloca(U.PTR, U.i64(3), name="conv.ctx")
    for i, p in enumerate((xp, wp, op)):
        b.store(p, b.gep(arr, [U.i64(i)], source_etype=U.PTR))
    b.call(pool, [body, arr, U.i64(plan.tasks)])


def _rows_fn(module, name, g: Geometry, plan: Plan):
    """rows(x, w, out, lo, hi): tasks [lo, hi), task t = row t // nch, pixels
    [(t % nch) cw, min(.. + cw, Q_d)) of it."""
    et = U.storage_type(g.dt)
    fn = ir.Function(module, ir.FunctionType(U.VOID, [U.PTR, U.PTR, U.PTR, U.I64, U.I64]),
                     f"{name}.conv.rows")
    fn.linkage = "internal"
    xp, wp, op, lo, hi = fn.args
    for a in (xp, wp, op):
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    qd = g.Q[-1]
    with U.for_between(b, lo, hi, "task") as t:
        if plan.nch == 1:
            row, start, stop = t, U.i64(0), U.i64(qd)
        else:
            row = b.udiv(t, U.i64(plan.nch))
            start = b.mul(b.urem(t, U.i64(plan.nch)), U.i64(plan.cw))
            end = b.add(start, U.i64(plan.cw))
            stop = b.select(b.icmp_signed("<", end, U.i64(qd)), end, U.i64(qd))
        idx = U.delinear(b, row, [g.N] + list(g.Q[:-1]))
        # lhs offset of the row's window origin (before padding: maybe negative)
        xrow = _mul(b, idx[0], math.prod(g.S) * g.C)
        xrow = _add(b, xrow, -sum(lo * g.xstride(j) for j, (lo, _) in enumerate(g.pad)))
        for j, oj in enumerate(idx[1:]):
            xrow = _add(b, xrow, _mul(b, oj, g.st[j] * g.xstride(j)))
        orow = _mul(b, row, qd * g.O)
        ptrs = (xp, wp, op)
        # the taps along the leading dims that read inside lhs from this row
        bounds = [_tap_bounds(b, g, j, oj) for j, oj in enumerate(idx[1:])]
        if all((lo, hi) == (0, k) for (lo, hi), k in zip(bounds, g.K)):
            bounds = None
        if plan.pixels:
            _pixel_row(b, g, plan, et, ptrs, xrow, orow, start, stop, bounds)
        elif bounds is None or plan.split >= g.d - 1:
            _channel_row(b, g, plan, et, ptrs, xrow, orow, start, stop, plan.split, bounds)
        else:
            # leading taps unrolled: rows that read padding loop over those taps
            inside = None
            for (lo, hi), k in zip(bounds, g.K):
                for v, full in ((lo, 0), (hi, k)):
                    if not isinstance(v, int):
                        c = b.icmp_signed("==", v, U.i64(full))
                        inside = c if inside is None else b.and_(inside, c)
            with b.if_else(inside) as (then, otherwise):
                with then:
                    _channel_row(b, g, plan, et, ptrs, xrow, orow, start, stop,
                                 plan.split, None)
                with otherwise:
                    _channel_row(b, g, plan, et, ptrs, xrow, orow, start, stop,
                                 g.d - 1, bounds)
    b.ret_void()
    return fn


@contextmanager
def _steps(b, start, stop, unit, name):
    """Yields (count loop, next start) over [start, stop) in steps of `unit`: the
    loop body gets each step's first index."""
    n = b.sdiv(b.sub(stop, start), U.i64(unit))
    after = b.add(start, b.mul(n, U.i64(unit)))

    @contextmanager
    def loop():
        with U.for_between(b, U.i64(0), n, name) as j:
            yield b.add(start, b.mul(j, U.i64(unit)))
    yield loop, after


# ------------------------------------------------------------------ channels form

def _channel_row(b, g, plan, et, ptrs, xrow, orow, start, stop, split, bounds):
    """Output pixels [start, stop) of one row, vectors along the output channels;
    taps looped over the leading `split` dims (bounds: see _accumulate)."""
    W = plan.W
    full, tail = divmod(g.O, W)
    span = W // g.Og * g.I                   # lhs channels a block of W reads
    args = (b, g, plan, et, ptrs, xrow, orow, start, stop, split, bounds)
    if full:
        with U.for_range(b, full, "cb") as q:
            _channel_block(*args, b.mul(q, U.i64(W)), b.mul(q, U.i64(span)), None, None)
    if tail:
        _channel_block(*args, full * W, full * span, tail, g.C - full * span)


def _channel_block(b, g, plan, et, ptrs, xrow, orow, start, stop, split, bounds,
                   o0, c0, lanes, chans):
    """Out channels [o0, o0 + W) (only `lanes` of them in a tail block, reading
    `chans` lhs channels from c0) of pixels [start, stop). Border pixels (a tap reads
    padding along the last dim) one at a time, each tap's load masked off when it
    reads padding."""
    xp, wp, op = ptrs
    W, I, Og = plan.W, g.I, g.Og
    span = W // Og * I
    picks = [None if (span == W and I == 1 and Og == 1) else
             [(l // Og) * I + i for l in range(W)] for i in range(I)]

    def weight(widx, i):
        return _vload(b, wp, _add(b, _add(b, _mul(b, widx, I * g.O), i * g.O), o0), et, W,
                      lanes)

    hoisted = [weight(widx, i) for _, widx, _ in _inner_taps(g, 0) for i in range(I)] \
        if plan.hoist and split == 0 else None
    s, sd = g.st[-1], g.st[-1] * g.C
    plo, r, Sd = g.pad[-1][0], g.dil[-1], g.S[-1]

    def pixels(ow, P, border=False):
        xpix = [_add(b, _add(b, xrow, _mul(b, _add(b, ow, p), sd)), c0) for p in range(P)]
        pos0 = _add(b, _mul(b, ow, s), -plo) if border else None

        def step(accs, delta, widx, t, kd):
            accs = list(accs)
            if border:      # lhs index along the last dim inside [0, S)?
                pos = _add(b, pos0, _mul(b, kd, r))
                ok = b.icmp_unsigned("<", _c(pos), U.i64(Sd))
                chunks = [_vload_if(b, xp, _add(b, xpix[0], delta), et, span, chans, ok)]
            else:
                chunks = [_vload(b, xp, _add(b, xpix[p], delta), et, span, chans)
                          for p in range(P)]
            for i in range(I):
                wv = hoisted[t * I + i] if t is not None and hoisted else weight(widx, i)
                for p in range(P):
                    accs[p] = _fma(b, _pick(b, chunks[p], picks[i]), wv, accs[p])
            return accs

        zero = ir.Constant(_vt(et, W), None)
        accs = _accumulate(b, g, split, [zero] * P, step, bounds)
        for p in range(P):
            off = _add(b, _add(b, orow, _mul(b, _add(b, ow, p), g.O)), o0)
            _vstore(b, accs[p], op, off, et, lanes)

    cut = _split_row(b, g, start, stop)
    a, z = cut if cut else (start, stop)
    with _steps(b, a, z, plan.P, "pb") as (loop, rest):
        with loop() as ow:
            pixels(ow, plan.P)
    if plan.P > 1:
        with U.for_between(b, rest, z, "px") as ow:
            pixels(ow, 1)
    if cut:
        with _borders(b, start, a, z, stop) as ow:
            pixels(ow, 1, border=True)


# ------------------------------------------------------------------ pixels form

def _pixel_row(b, g, plan, et, ptrs, xrow, orow, start, stop, bounds):
    """Output pixels [start, stop) of one row, vectors along the pixels; the leading
    tap dims over `bounds` (see _accumulate). With padding along the last dim: the
    vectors covering the left border, the interior's full vectors, then vectors to
    the row's end, those masked (each lane reads only inside lhs)."""
    W, P = plan.W, plan.P
    cut = _split_row(b, g, start, stop)
    a, z = start, stop

    def masked(lo, name):
        n = b.sdiv(b.add(b.sub(stop if name == "rv" else cut[0], lo), U.i64(W - 1)),
                   U.i64(W))
        with U.for_between(b, U.i64(0), n, name) as j:
            ow = b.add(lo, b.mul(j, U.i64(W)))
            _pixel_block(b, g, plan, et, ptrs, xrow, orow, ow, 1,
                         _min(b, U.i64(W), b.sub(stop, ow)), bounds, border=True)
        return n
    if cut:
        nl = masked(start, "lv")
        a = _min(b, b.add(start, b.mul(nl, U.i64(W))), stop)
        z = b.select(b.icmp_signed("<", cut[1], a), a, cut[1])
    with _steps(b, a, z, P * W, "pb") as (loop, rest):
        with loop() as ow:
            _pixel_block(b, g, plan, et, ptrs, xrow, orow, ow, P, None, bounds)
    if P > 1:
        with _steps(b, rest, z, W, "pv") as (loop, rest2):
            with loop() as ow:
                _pixel_block(b, g, plan, et, ptrs, xrow, orow, ow, 1, None, bounds)
    else:
        rest2 = rest
    if cut:
        masked(rest2, "rv")
    else:
        with b.if_then(b.icmp_signed("<", rest2, z)):
            _pixel_block(b, g, plan, et, ptrs, xrow, orow, rest2, 1, b.sub(z, rest2), bounds)


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _pixel_block(b, g, plan, et, ptrs, xrow, orow, ow, P, valid, bounds, border=False):
    """P vectors of W pixels from ow (the first `valid` of one, at a row's end). Every
    tap reads inside lhs along the last dim, or with `border` (one vector) each load
    is masked to the lanes that do (whose lhs index along that dim is in [0, S))."""
    if plan.share and valid is None:
        _shared_block(b, g, plan, et, ptrs, xrow, orow, ow, P, bounds)
        return
    xp, wp, op = ptrs
    W, C, O, I, Og = plan.W, g.C, g.O, g.I, g.Og
    s = g.st[-1]
    span = ((W - 1) * s + 1) * C
    cvalid = None if valid is None else \
        b.mul(b.add(b.mul(b.sub(valid, U.i64(1)), U.i64(s)), U.i64(1)), U.i64(C))
    picks = [None if span == W else [l * s * C + c for l in range(W)] for c in range(C)]
    nw = g.taps * I * O

    def weight(widx, i, o):
        v = U.load(b, wp, _c(_add(b, _mul(b, widx, I * O), i * O + o)), g.dt)
        return _splat(b, v, W)

    hoisted = [weight(widx, i, o) for _, widx, _ in _inner_taps(g, 0)
               for i in range(I) for o in range(O)] if plan.hoist and nw <= 16 else None

    iota = ir.Constant(_vt(U.I64, span), [ir.Constant(U.I64, e) for e in range(span)])
    pos0 = _add(b, _mul(b, ow, s), -g.pad[-1][0]) if border else None

    def step(accs, delta, widx, t, kd):
        accs = list(accs)
        xs = []
        for p in range(P):
            base = _add(b, _add(b, xrow, _mul(b, _add(b, ow, p * W), s * C)), delta)
            if border:      # lhs elements of this row: [0, S C) from the row's start
                rel = _mul(b, _add(b, pos0, _mul(b, kd, g.dil[-1])), C)
                mask = b.icmp_unsigned("<", b.add(iota, _splat(b, _c(rel), span)),
                                       _splat(b, U.i64(g.S[-1] * C), span))
                chunk = _vload_mask(b, xp, base, et, span, mask)
            else:
                chunk = _vload(b, xp, base, et, span, cvalid)
            xs.append([_pick(b, chunk, picks[c]) for c in range(C)])
        for o in range(O):
            gi = o // Og
            for i in range(I):
                wv = hoisted[(t * I + i) * O + o] if t is not None and hoisted else \
                    weight(widx, i, o)
                for p in range(P):
                    accs[p * O + o] = _fma(b, xs[p][gi * I + i], wv, accs[p * O + o])
        return accs

    zero = ir.Constant(_vt(et, W), None)
    accs = _accumulate(b, g, plan.split, [zero] * (P * O), step, bounds)
    for p in range(P):
        v = _interleave(b, accs[p * O:(p + 1) * O], W)
        off = _add(b, orow, _mul(b, _add(b, ow, p * W), O))
        _vstore(b, v, op, off, et, None if valid is None else b.mul(valid, U.i64(O)))


def _shared_block(b, g, plan, et, ptrs, xrow, orow, ow, P, bounds):
    """_pixel_block for one channel at stride 1, full vectors: the last dim's taps
    loop by k0 in [0, W), taps k0 + q W together. Lhs vector m (from ow + k0 r +
    m W) is read once for every (pixel vector p, tap q) with p + q r = m: for a
    63-tap signal 15 loads per 48 FMAs instead of one each (and no load split
    across cache lines twice per FMA)."""
    xp, wp, op = ptrs
    W, O, r, Kd = plan.W, g.O, g.dil[-1], g.K[-1]
    nq = -(-Kd // W)
    few = Kd - W * (nq - 1)          # k0 below this has nq taps, above nq - 1
    zero = ir.Constant(_vt(et, W), None)
    slots = []
    for _ in range(P * O):
        sl = U.alloca_entry(b, _vt(et, W), "acc")
        b.store(zero, sl)
        slots.append(sl)
    with _tap_loops(b, g, g.d - 1, bounds) as (d0, w0, _):
        for lo, hi, nt in ((0, few, nq), (few, min(W, Kd), nq - 1)):
            if lo >= hi or nt == 0:
                continue
            with U.for_range(b, hi - lo, "k0") if lo == 0 else \
                    U.for_between(b, U.i64(lo), U.i64(hi), "k0") as k0:
                accs = [b.load(sl) for sl in slots]
                base = _add(b, _add(b, xrow, ow), _add(b, d0, _mul(b, k0, r)))
                wts = [[_splat(b, U.load(b, wp, _c(_add(b, _mul(b, _add(b, _add(b, w0, k0),
                                                                       W * q), O), o)), g.dt), W)
                        for o in range(O)] for q in range(nt)]
                xs = {}
                for q in range(nt):
                    for p in range(P):
                        m = p + q * r
                        if m not in xs:
                            xs[m] = _vload(b, xp, _add(b, base, W * m), et, W)
                        for o in range(O):
                            accs[p * O + o] = _fma(b, xs[m], wts[q][o], accs[p * O + o])
                for sl, a in zip(slots, accs):
                    b.store(a, sl)
    for p in range(P):
        v = _interleave(b, [b.load(slots[p * O + o]) for o in range(O)], W)
        _vstore(b, v, op, _add(b, orow, _mul(b, _add(b, ow, p * W), O)), et)
