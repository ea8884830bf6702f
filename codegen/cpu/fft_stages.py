"""LLVM functions of the CPU FFT: the forward, unscaled complex transform of a
planned length (fft_plan.py), as Stockham passes or Bluestein's convolution.

    fft(xr, xi, yr, yi, wr, wi, tr, ti)   x -> y; w: plan.work scratch entries;
                                          t: the plan's table (fft_tables.py)

The inverse is the same function on swapped real and imaginary parts
(conj(F(conj x)) = swap(F(swap x))), so only the forward one is emitted. The
passes are vectorised along q (the stride), or along t = q + s p in the first
passes whose stride is shorter than a vector (results interleaved back by
shuffles); long transforms run each pass as tasks over the thread pool.
"""
from __future__ import annotations

import contextlib
import math

import llvmlite.ir as ir
import numpy as np

from . import fft_butterfly as B
from . import irutil as U
from .fft_plan import Plan, Stage

# A transform of THREAD_FROM elements or more runs each pass as TASKS tasks over the
# thread pool (serially inside another parallel region: a batch's rows are split).
THREAD_FROM = 1 << 17
TASKS = 16


def _name(dt) -> str:
    return np.dtype(dt).name


def _elem(dt) -> ir.Type:
    return U.storage_type(np.dtype(dt))


def _gep(b, ptr, off, elem):
    return b.gep(ptr, [off if isinstance(off, ir.Value) else U.i64(off)],
                 source_etype=elem, inbounds=True)


def _vload(b, ptr, off, elem, lanes):
    return b.load(_gep(b, ptr, off, elem), typ=ir.VectorType(elem, lanes), align=_size(elem))


def _vstore(b, v, ptr, off, elem):
    b.store(v, _gep(b, ptr, off, elem), align=_size(elem))


def _size(elem) -> int:
    return 4 if elem == U.F32 else 8


def _mul(b, x, k):
    if isinstance(x, int) and isinstance(k, int):
        return x * k
    x, k = _i64(x), _i64(k)
    return b.mul(x, k, flags=["nuw", "nsw"])


def _add(b, *xs):
    acc = _i64(xs[0])
    for x in xs[1:]:
        acc = b.add(acc, _i64(x), flags=["nuw", "nsw"])
    return acc


def _function(module, name, args, ret=U.VOID):
    fn = ir.Function(module, ir.FunctionType(ret, args), name)
    fn.linkage = "internal"
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


# ------------------------------------------------------------------ passes

# A pass is a call of a routine (routines.py) generic in the stage's stride s,
# twiddled group count m and table offset: its body is a function of the radix,
# the dtype, the vector width and its form alone, so a host compiles it once
# whatever lengths its programs transform, and a plan's transform is a short
# function of calls (each plan's own passes were most of an FFT program's LLVM
# time: 940 instructions, 60 ms, for a length-2048 transform). Forms:
#   t<s>        a first pass of stride s < width, s | width (vectors along t = q + s p)
#   q<l>        a twiddled pass (m > 1), vectors of l lanes along q
#   q<l>.last   the last pass (m = 1: no twiddles); q<l>.scaled: its results times
#               the `scale` argument (the inverse's 1/n)
# Arguments: src, dst and table (re, im pointers each), s, m, tw, [p_lo, p_hi) of
# the groups p, [q_lo, q_hi) of the strides q (t<s>: unused), scale.
PASS_ARGS = [U.PTR] * 6 + [U.I64] * 7


def _forms(width: int) -> list:
    lanes = [1 << i for i in range(width.bit_length()) if 1 << i <= width]
    return [f"t{s}" for s in lanes if s < width] + \
        [f"q{n}{form}" for n in lanes for form in ("", ".last", ".scaled")]


def pass_routine(module, dt, width: int, r: int, form: str) -> ir.Function:
    """The routine of a radix-r pass of this form (above), as module calls it."""
    from . import routines
    elem = _elem(dt)
    name = f"jx.fft.pass.{_name(dt)}.v{width}.r{r}.{form}"
    fn = routines.define(module, name, ir.FunctionType(U.VOID, PASS_ARGS + [elem]))
    if fn is not None:
        for a in fn.args[:6]:
            a.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        sr, si, dr, di, tr, ti, s, m, tw, p_lo, p_hi, q_lo, q_hi, scale = fn.args
        if form.startswith("t"):
            _stage_t(b, Stage(r, int(form[1:]), m, tw), (sr, si), (dr, di), (tr, ti), elem,
                     width, (p_lo, p_hi))
        else:
            lanes, _, last = form[1:].partition(".")
            _stage_q(b, Stage(r, s, m, tw), (sr, si), (dr, di), None if last else (tr, ti),
                     elem, int(lanes), (p_lo, p_hi), (q_lo, q_hi),
                     scale if last == "scaled" else 1.0)
        b.ret_void()
    return module.globals[name]


def build_routines(module, dt) -> None:
    """Declare every pass routine a plan for dt can call (routines.py), so that a
    host can have them compiled before its first FFT."""
    from . import target
    from .fft_plan import MAX_RADIX
    width = max(1, target.vector_bytes(target.of_module(module)) // np.dtype(dt).itemsize)
    odd = [p for p in range(3, MAX_RADIX + 1, 2) if all(p % q for q in range(3, p, 2))]
    for r in [2, 4, 8] + odd:
        for form in _forms(width):
            pass_routine(module, dt, width, r, form)


def _stage(b, module, st: Stage, src, dst, tw, dt, width: int, scale: float = 1.0,
           task=None):
    """One Stockham pass src -> dst (each an (re, im) pointer pair) as calls of its
    routines, its results times `scale` (the inverse's 1/n, in the last pass: no
    pass of its own); with task = (t, tasks) (i64 t) only task t's share of it."""
    s, m = st.s, st.m
    elem = _elem(dt)
    assert m == 1 or scale == 1.0, "only the last pass (m = 1) is scaled"

    def call(form, prange, qrange, k=1.0):
        args = [_i64(v) for v in (s, m, st.tw, *prange, *qrange)]
        b.call(pass_routine(module, dt, width, st.r, form),
               [*src, *dst, *tw, *args, ir.Constant(elem, k)])

    if s < width and width % s == 0 and s * m >= width:
        per = width // s                   # twiddle groups p in one vector
        units = m // per
        lo, hi = _share(b, units, task)
        call(f"t{s}", (_mul(b, lo, per), _mul(b, hi, per)), (0, s))
        if units * per < m:                # the groups past whole vectors: the last task's
            with _last_task(b, task):
                call("q1", (units * per, m), (0, s))
        return
    lanes = width if s >= width else math.gcd(s, width)
    form = f"q{lanes}" + ("" if m > 1 else ".last" if scale == 1.0 else ".scaled")
    if task is None or m >= task[1]:
        call(form, _share(b, m, task), (0, s), scale)
    else:                                  # few groups of long strides: the tasks split q
        lo, hi = _share(b, s // lanes, task)
        last = b.icmp_unsigned("==", task[0], U.i64(task[1] - 1))
        q_hi = b.select(last, U.i64(s), _mul(b, hi, lanes))
        call(form, (0, m), (_mul(b, lo, lanes), q_hi), scale)


def _i64(v):
    return v if isinstance(v, ir.Value) else U.i64(v)


def _share(b, count: int, task):
    """[lo, hi) of count units for task (t, tasks); all of them without a task."""
    if task is None:
        return 0, count
    t, tasks = task
    lo = b.udiv(b.mul(t, U.i64(count)), U.i64(tasks))
    return lo, b.udiv(b.mul(b.add(t, U.i64(1)), U.i64(count)), U.i64(tasks))


@contextlib.contextmanager
def _last_task(b, task):
    if task is None:
        yield
        return
    with b.if_then(b.icmp_unsigned("==", task[0], U.i64(task[1] - 1))):
        yield


def _butterfly(b, st, src, twiddles, elem, lanes, in_base, scale):
    """The r outputs of the butterflies at in_base (s, m: ints or i64 values;
    scale: a float, or an elem value applied whatever it is)."""
    r, sm = st.r, _mul(b, st.s, st.m)
    x = [(_vload(b, src[0], _add(b, in_base, _mul(b, sm, k)), elem, lanes),
          _vload(b, src[1], _add(b, in_base, _mul(b, sm, k)), elem, lanes)) for k in range(r)]
    y = B.dft(b, x, elem, lanes)
    if twiddles is not None:
        y = [y[0]] + [B.mul(b, y[j], twiddles[j - 1]) for j in range(1, r)]
    if isinstance(scale, ir.Value) or scale != 1.0:
        k = B.splat(b, scale, lanes) if isinstance(scale, ir.Value) else \
            B.vconst(elem, scale, lanes)
        y = [B.scale(b, v, k) for v in y]
    return y


def _stage_q(b, st, src, dst, tw, elem, lanes, prange, qrange, scale):
    """Loops p over prange, then q over qrange (lanes-aligned but for its end at s) in
    vectors of `lanes`, what they leave of s one lane at a time; one twiddle per p
    from table tw, broadcast (tw None: a pass without twiddles, m = 1)."""
    r, s, m = st.r, st.s, st.m
    main = s - s % lanes if isinstance(s, int) else b.and_(s, U.i64(-lanes))
    q_lo, q_hi = qrange
    parts = ((q_lo, _min(b, q_hi, main), lanes), (main, q_hi, 1))
    with U.for_step(b, prange[0], prange[1], 1, "fft.p") as p:
        tws = None
        if tw is not None:
            offs = [_add(b, st.tw, _mul(b, j - 1, m), p) for j in range(1, r)]
            tws = [tuple(b.load(_gep(b, part, off, elem), typ=elem) for part in tw)
                   for off in offs]
        pin, pout = _mul(b, p, s), _mul(b, p, _mul(b, s, r))
        for k, (lo, hi, v) in enumerate(parts):
            if (isinstance(hi, int) and isinstance(lo, int) and lo >= hi) or \
                    (k == 1 and (lanes == 1 or (isinstance(s, int) and main == s))):
                continue
            splat = None if tws is None else \
                [(B.splat(b, c, v), B.splat(b, d, v)) for c, d in tws]
            with U.for_step(b, lo, hi, v, "fft.q") as q:
                y = _butterfly(b, st, src, splat, elem, v, _add(b, q, pin), scale)
                base = _add(b, q, pout)
                for j in range(r):
                    _vstore(b, y[j][0], dst[0], _add(b, base, _mul(b, s, j)), elem)
                    _vstore(b, y[j][1], dst[1], _add(b, base, _mul(b, s, j)), elem)


def _min(b, x, y):
    if isinstance(x, int) and isinstance(y, int):
        return min(x, y)
    x, y = _i64(x), _i64(y)
    return b.select(b.icmp_signed("<", x, y), x, y)


def _stage_t(b, st, src, dst, tw, elem, width, prange):
    """The first stages (s < width, s | width): one vector runs along t = q + s p over
    width / s groups p; its r results are interleaved back in blocks of s."""
    r, s, m = st.r, st.s, st.m
    per = width // s
    repeat = ir.Constant(ir.VectorType(U.I32, width), [ln // s for ln in range(width)])
    # output lane o of the r * width run starting at s r p0 comes from result j, lane l
    picks = []
    for o in range(r * width):
        pp, rem = divmod(o, s * r)
        j, q = divmod(rem, s)
        picks.append((j, pp * s + q))
    with U.for_step(b, prange[0], prange[1], per, "fft.t") as p0:
        tws = []
        for j in range(1, r):
            off = _add(b, st.tw, _mul(b, j - 1, m), p0)
            pair = []
            for part in tw:
                v = _vload(b, part, off, elem, per)
                pair.append(b.shuffle_vector(v, v, repeat))
            tws.append(tuple(pair))
        y = _butterfly(b, st, src, tws, elem, width, _mul(b, p0, s), 1.0)
        base = _mul(b, p0, s * r)
        for part in (0, 1):
            vecs = [y[j][part] for j in range(r)]
            if r & (r - 1) == 0:
                outs = B.interleave(b, vecs, s, width)
            else:
                outs = [B.pick(b, vecs, picks[c * width:(c + 1) * width]) for c in range(r)]
            for c, out in enumerate(outs):
                _vstore(b, out, dst[part], _add(b, base, c * width), elem)


# ------------------------------------------------------------------ transforms

def fft_function(module, plan: Plan, dt, width: int, scale: float = 1.0) -> ir.Function:
    """The forward transform of plan (see the module doc) times `scale`, emitted
    once a module."""
    name = f"jx.fft.{_name(dt)}.v{width}.{plan.key}" + ("" if scale == 1.0 else f".s{scale!r}")
    if name in module.globals:
        return module.globals[name]
    elem = _elem(dt)
    fn, b = _function(module, name, [U.PTR] * 8)
    # called once per row, by the forward and inverse kernels alike: LLVM optimises
    # one copy (inlined into each caller, its 1000 instructions were optimised twice)
    fn.attributes.add("noinline")
    for a in fn.args:
        a.add_attribute("noalias")
    xr, xi, yr, yi, wr, wi, tr, ti = fn.args
    if plan.blue is not None:
        _bluestein(b, module, plan, dt, width, fn.args, scale)
    elif not plan.stages:                      # n = 1
        with U.for_range(b, plan.cols, "fft.one") as c:
            for src, dst in ((xr, yr), (xi, yi)):
                v = b.load(_gep(b, src, c, elem), typ=elem)
                b.store(b.fmul(v, ir.Constant(elem, scale)), _gep(b, dst, c, elem))
    else:
        count = len(plan.stages)
        pool = module.globals.get("jx_parallel_for")
        threaded = pool is not None and plan.n * plan.cols >= THREAD_FROM
        src = (xr, xi)
        for i, st in enumerate(plan.stages):
            dst = (yr, yi) if (count - 1 - i) % 2 == 0 else (wr, wi)
            k = scale if i == count - 1 else 1.0
            if threaded:
                ptrs = [*src, *dst, tr, ti]
                ctx = b.alloca(U.PTR, U.i64(len(ptrs)))
                for slot, ptr in enumerate(ptrs):
                    b.store(ptr, b.gep(ctx, [U.i64(slot)], source_etype=U.PTR))
                body = _stage_function(module, f"{name}.pass{i}", st, dt, width, k)
                b.call(pool, [body, ctx, U.i64(TASKS)])
            else:
                _stage(b, module, st, src, dst, (tr, ti), dt, width, k)
            src = dst
    b.ret_void()
    return fn


def _stage_function(module, name, st, dt, width, scale) -> ir.Function:
    """body(ctx, lo, hi) for jx_parallel_for: tasks [lo, hi) of TASKS of a pass; ctx
    holds src, dst and table pointers."""
    inner, ib = _function(module, f"{name}.run", [U.PTR] * 6 + [U.I64, U.I64])
    for a in inner.args[:6]:
        a.add_attribute("noalias")
    *ptrs, lo, hi = inner.args
    with U.for_step(ib, lo, hi, 1, "fft.task") as t:
        _stage(ib, module, st, tuple(ptrs[0:2]), tuple(ptrs[2:4]), tuple(ptrs[4:6]), dt,
               width, scale, (t, TASKS))
    ib.ret_void()
    body, bb = _function(module, name, [U.PTR, U.I64, U.I64])
    ctx, lo, hi = body.args
    loaded = [bb.load(bb.gep(ctx, [U.i64(i)], source_etype=U.PTR), typ=U.PTR) for i in range(6)]
    bb.call(inner, loaded + [lo, hi])
    bb.ret_void()
    return body


def _bluestein(b, module, plan, dt, width, args, scale):
    """X_k = c_k sum_j (x_j c_j) conj(c_{k-j}), c_j = exp(-pi i j^2 / n): a cyclic
    convolution of length M by two length-M transforms and the table's scaled
    transform of conj(c)."""
    xr, xi, yr, yi, wr, wi, tr, ti = args
    elem = _elem(dt)
    n, sub = plan.n, plan.blue
    big = sub.n
    sub_fn = fft_function(module, sub, dt, width)
    pr, pi_, qr, qi = _gep(b, wr, 0, elem), _gep(b, wi, 0, elem), \
        _gep(b, wr, big, elem), _gep(b, wi, big, elem)
    swr, swi = _gep(b, wr, 2 * big, elem), _gep(b, wi, 2 * big, elem)
    bhr, bhi = _gep(b, tr, n, elem), _gep(b, ti, n, elem)
    str_, sti = _gep(b, tr, n + big, elem), _gep(b, ti, n + big, elem)

    def ld(ptr, i):
        return b.load(_gep(b, ptr, i, elem), typ=elem)

    def st_(v, ptr, i):
        b.store(v, _gep(b, ptr, i, elem))

    with U.for_range(b, n, "blue.in") as j:
        re, im = B.mul(b, (ld(xr, j), ld(xi, j)), (ld(tr, j), ld(ti, j)))
        st_(re, pr, j)
        st_(im, pi_, j)
    zero = ir.Constant(elem, 0.0)
    with U.for_step(b, n, big, 1, "blue.pad") as j:
        st_(zero, pr, j)
        st_(zero, pi_, j)
    b.call(sub_fn, [pr, pi_, qr, qi, swr, swi, str_, sti])
    with U.for_range(b, big, "blue.conv") as k:
        re, im = B.mul(b, (ld(qr, k), ld(qi, k)), (ld(bhr, k), ld(bhi, k)))
        st_(re, qr, k)
        st_(im, qi, k)
    b.call(sub_fn, [qi, qr, pi_, pr, swr, swi, str_, sti])       # the inverse: swapped
    k_out = ir.Constant(elem, scale)
    with U.for_range(b, n, "blue.out") as k:
        re, im = B.scale(b, B.mul(b, (ld(pr, k), ld(pi_, k)), (ld(tr, k), ld(ti, k))), k_out)
        st_(re, yr, k)
        st_(im, yi, k)
