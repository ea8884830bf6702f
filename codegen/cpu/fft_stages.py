"""LLVM functions of the CPU FFT: one forward, unscaled complex transform of a
planned length (fft_plan.py), its twiddle table's initialiser, and the per-process
cache of that table.

    fft(xr, xi, yr, yi, wr, wi, tr, ti)   x -> y; w: plan.work scratch entries;
                                          t: the plan's table (re run, im run)

The inverse is the same function on swapped real and imaginary parts
(conj(F(conj x)) = swap(F(swap x))), so only the forward one is emitted.

Tables are computed at a kernel's first call, in float64 from exact integer
angles (cis below), rounded once to the transform's dtype, and kept for the life
of the process (as FFTW keeps its plans): a per-module global pointer published
with compare-and-swap, so concurrent first calls agree on one table.
"""
from __future__ import annotations

import contextlib
import math

import llvmlite.ir as ir
import numpy as np

from . import fft_butterfly as B
from . import irutil as U
from .fft_plan import Plan, Stage

_CIS = "jx.fft.cis"
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
    x, k = (v if isinstance(v, ir.Value) else U.i64(v) for v in (x, k))
    return b.mul(x, k, flags=["nuw", "nsw"])


def _add(b, *xs):
    acc = xs[0] if isinstance(xs[0], ir.Value) else U.i64(xs[0])
    for x in xs[1:]:
        acc = b.add(acc, x if isinstance(x, ir.Value) else U.i64(x), flags=["nuw", "nsw"])
    return acc


def _function(module, name, args, ret=U.VOID):
    fn = ir.Function(module, ir.FunctionType(ret, args), name)
    fn.linkage = "internal"
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


# ------------------------------------------------------------------ stages

def _stage(b, st: Stage, src, dst, tw, elem, width: int, scale: float = 1.0, task=None):
    """One Stockham pass src -> dst (each an (re, im) pointer pair), its results
    times `scale` (the inverse's 1/n, in the last pass: no pass of its own); with
    task = (t, tasks) (i64 t) only task t's share of it."""
    s, m = st.s, st.m
    if s < width and width % s == 0 and s * m >= width:
        per = width // s                   # twiddle groups p in one vector
        units = m // per
        lo, hi = _share(b, units, task)
        _stage_t(b, st, src, dst, tw, elem, width, (_mul(b, lo, per), _mul(b, hi, per)), scale)
        if units * per < m:                # the groups past whole vectors: the last task's
            with _last_task(b, task):
                _stage_q(b, st, src, dst, tw, elem, 1, (units * per, m), (0, s), scale)
        return
    lanes = width if s >= width else math.gcd(s, width)
    if task is None or m >= task[1]:
        _stage_q(b, st, src, dst, tw, elem, lanes, _share(b, m, task), (0, s), scale)
    else:                                  # few groups of long strides: the tasks split q
        lo, hi = _share(b, s // lanes, task)
        last = b.icmp_unsigned("==", task[0], U.i64(task[1] - 1))
        q_hi = b.select(last, U.i64(s), _mul(b, hi, lanes))
        _stage_q(b, st, src, dst, tw, elem, lanes, (0, m), (_mul(b, lo, lanes), q_hi), scale)


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
    r, s, m = st.r, st.s, st.m
    x = [(_vload(b, src[0], _add(b, in_base, s * k * m), elem, lanes),
          _vload(b, src[1], _add(b, in_base, s * k * m), elem, lanes)) for k in range(r)]
    y = B.dft(b, x, elem, lanes)
    if twiddles is not None:
        y = [y[0]] + [B.mul(b, y[j], twiddles[j - 1]) for j in range(1, r)]
    if scale != 1.0:
        k = B.vconst(elem, scale, lanes)
        y = [B.scale(b, v, k) for v in y]
    return y


def _stage_q(b, st, src, dst, tw, elem, lanes, prange, qrange, scale):
    """Loops p over prange, then q over qrange (lanes-aligned but for its end at s) in
    vectors of `lanes`, what they leave of s one lane at a time; one twiddle per p,
    broadcast."""
    r, s, m = st.r, st.s, st.m
    main = s - s % lanes
    q_lo, q_hi = qrange
    static = isinstance(q_hi, int)
    parts = ((q_lo, min(q_hi, main) if static else _min(b, q_hi, main), lanes),
             (main, q_hi, 1))
    with U.for_step(b, prange[0], prange[1], 1, "fft.p") as p:
        tws = None
        if m > 1:
            offs = [_add(b, st.tw + (j - 1) * m, p) for j in range(1, r)]
            tws = [tuple(b.load(_gep(b, part, off, elem), typ=elem) for part in tw)
                   for off in offs]
        pin, pout = _mul(b, p, s), _mul(b, p, s * r)
        for k, (lo, hi, v) in enumerate(parts):
            if (isinstance(hi, int) and isinstance(lo, int) and lo >= hi) or \
                    (k == 1 and main == s):
                continue
            splat = None if tws is None else \
                [(B.splat(b, c, v), B.splat(b, d, v)) for c, d in tws]
            with U.for_step(b, lo, hi, v, "fft.q") as q:
                y = _butterfly(b, st, src, splat, elem, v, _add(b, q, pin), scale)
                base = _add(b, q, pout)
                for j in range(r):
                    _vstore(b, y[j][0], dst[0], _add(b, base, s * j), elem)
                    _vstore(b, y[j][1], dst[1], _add(b, base, s * j), elem)


def _min(b, x, y: int):
    return b.select(b.icmp_signed("<", x, U.i64(y)), x, U.i64(y))


def _stage_t(b, st, src, dst, tw, elem, width, prange, scale):
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
        tws = None
        if m > 1:
            tws = []
            for j in range(1, r):
                off = _add(b, st.tw + (j - 1) * m, p0)
                pair = []
                for part in tw:
                    v = _vload(b, part, off, elem, per)
                    pair.append(b.shuffle_vector(v, v, repeat))
                tws.append(tuple(pair))
        y = _butterfly(b, st, src, tws, elem, width, _mul(b, p0, s), scale)
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
                body = _stage_function(module, f"{name}.pass{i}", st, elem, width, k)
                b.call(pool, [body, ctx, U.i64(TASKS)])
            else:
                _stage(b, st, src, dst, (tr, ti), elem, width, k)
            src = dst
    b.ret_void()
    return fn


def _stage_function(module, name, st, elem, width, scale) -> ir.Function:
    """body(ctx, lo, hi) for jx_parallel_for: tasks [lo, hi) of TASKS of a pass; ctx
    holds src, dst and table pointers. The pass itself is a noalias function (LLVM
    inlines it) so its loads and stores may be reordered."""
    inner, ib = _function(module, f"{name}.run", [U.PTR] * 6 + [U.I64, U.I64])
    for a in inner.args[:6]:
        a.add_attribute("noalias")
    *ptrs, lo, hi = inner.args
    with U.for_step(ib, lo, hi, 1, "fft.task") as t:
        _stage(ib, st, tuple(ptrs[0:2]), tuple(ptrs[2:4]), tuple(ptrs[4:6]), elem, width,
               scale, (t, TASKS))
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


# ------------------------------------------------------------------ twiddle tables

def _cis(module) -> ir.Function:
    """{cos, sin}(2 pi k / N) in float64 for integers 0 <= k, 0 < N: the quadrant and
    octant come from integer arithmetic, so the one rounded angle is at most pi/4
    and its Taylor series (to x^17) is exact to float64 rounding."""
    if _CIS in module.globals:
        return module.globals[_CIS]
    pair = ir.LiteralStructType([U.F64, U.F64])
    fn, b = _function(module, _CIS, [U.I64, U.I64], pair)
    k, n = fn.args
    k = b.urem(k, n)
    k4 = b.mul(k, U.i64(4))
    quad = b.udiv(k4, n)                                   # 0..3
    rem = b.sub(k4, b.mul(quad, n))                        # angle = pi/2 (quad + rem / N)
    upper = b.icmp_unsigned(">", b.mul(rem, U.i64(2)), n)
    red = b.select(upper, b.sub(n, rem), rem)              # <= N / 2: at most pi / 4
    x = b.fmul(ir.Constant(U.F64, math.pi / 2), b.fdiv(b.uitofp(red, U.F64),
                                                       b.uitofp(n, U.F64)))
    x2 = b.fmul(x, x)

    def series(first, coefs):
        acc = ir.Constant(U.F64, coefs[-1])
        for c in reversed(coefs[:-1]):
            acc = b.fadd(ir.Constant(U.F64, c), b.fmul(x2, acc))
        return b.fmul(first, acc) if first is not None else acc

    sin_c = [(-1) ** i / math.factorial(2 * i + 1) for i in range(9)]
    cos_c = [(-1) ** i / math.factorial(2 * i) for i in range(10)]
    s, c = series(x, sin_c), series(None, cos_c)
    c0, s0 = b.select(upper, s, c), b.select(upper, c, s)  # cos/sin of pi/2 rem / N
    # rotate by quad quarter turns: (c, s) -> (-s, c) -> (-c, -s) -> (s, -c)
    ns0, nc0 = b.fneg(s0), b.fneg(c0)
    q1, q2 = b.icmp_unsigned("==", quad, U.i64(1)), b.icmp_unsigned("==", quad, U.i64(2))
    q3 = b.icmp_unsigned("==", quad, U.i64(3))
    cos = b.select(q1, ns0, b.select(q2, nc0, b.select(q3, s0, c0)))
    sin = b.select(q1, c0, b.select(q2, ns0, b.select(q3, nc0, s0)))
    out = b.insert_value(ir.Constant(pair, ir.Undefined), cos, 0)
    b.ret(b.insert_value(out, sin, 1))
    return fn


def _twiddle(b, module, k, n, elem):
    """exp(-2 pi i k / n) rounded to elem: (re, im)."""
    got = b.call(_cis(module), [k, n if isinstance(n, ir.Value) else U.i64(n)])
    c, s = b.extract_value(got, 0), b.extract_value(got, 1)
    if elem != U.F64:
        c, s = b.fptrunc(c, elem), b.fptrunc(s, elem)
    return c, b.fneg(s)


def _malloc(module):
    try:
        return module.get_global("malloc")
    except KeyError:
        return ir.Function(module, ir.FunctionType(U.PTR, [U.I64]), "malloc")


def _free(module):
    try:
        return module.get_global("free")
    except KeyError:
        return ir.Function(module, ir.FunctionType(U.VOID, [U.PTR]), "free")


def checked_malloc(b, module, nbytes):
    """malloc that traps when out of memory (a parallel chunk cannot report it)."""
    mem = b.call(_malloc(module), [nbytes if isinstance(nbytes, ir.Value) else
                                   U.i64(max(int(nbytes), 1))])
    with b.if_then(b.icmp_unsigned("==", mem, ir.Constant(U.PTR, None)), likely=False):
        trap = module.globals.get("llvm.trap") or \
            ir.Function(module, ir.FunctionType(U.VOID, []), "llvm.trap")
        b.call(trap, [])
    return mem


def _init_function(module, plan: Plan, dt, width: int) -> ir.Function:
    """init(tr, ti): fills plan's table."""
    name = f"jx.fft.init.{_name(dt)}.v{width}.{plan.key}"
    if name in module.globals:
        return module.globals[name]
    elem = _elem(dt)
    fn, b = _function(module, name, [U.PTR, U.PTR])
    tr, ti = fn.args
    if plan.blue is None:
        for st in plan.stages:
            if st.m == 1:
                continue
            for j in range(1, st.r):
                with U.for_range(b, st.m, "tw.p") as p:
                    c, s = _twiddle(b, module, _mul(b, p, j), st.r * st.m, elem)
                    off = _add(b, st.tw + (j - 1) * st.m, p)
                    b.store(c, _gep(b, tr, off, elem))
                    b.store(s, _gep(b, ti, off, elem))
    else:
        _init_bluestein(b, module, plan, dt, width, tr, ti)
    b.ret_void()
    return fn


def _init_bluestein(b, module, plan, dt, width, tr, ti):
    """chirp c_j (n), then F(conj c wrapped around M) / M, then the sub-plan's table."""
    elem = _elem(dt)
    n, sub = plan.n, plan.blue
    big = sub.n
    str_, sti = _gep(b, tr, n + big, elem), _gep(b, ti, n + big, elem)
    b.call(_init_function(module, sub, dt, width), [str_, sti])
    kslot = U.alloca_entry(b, U.I64, "chirp.k")
    b.store(U.i64(0), kslot)
    with U.for_range(b, n, "chirp") as j:
        k = b.load(kslot, typ=U.I64)                                  # j^2 mod 2n
        c, s = _twiddle(b, module, k, 2 * n, elem)
        b.store(c, _gep(b, tr, j, elem))
        b.store(s, _gep(b, ti, j, elem))
        nxt = b.add(k, b.add(b.mul(j, U.i64(2)), U.i64(1)))
        b.store(b.select(b.icmp_unsigned(">=", nxt, U.i64(2 * n)),
                         b.sub(nxt, U.i64(2 * n)), nxt), kslot)
    # scratch: conj(c) wrapped (2 M), then the sub-plan's work (2 sub.work)
    size = _size(elem)
    mem = checked_malloc(b, module, (2 * big + 2 * sub.work) * size)
    ar, ai = _gep(b, mem, 0, elem), _gep(b, mem, big, elem)
    wr, wi = _gep(b, mem, 2 * big, elem), _gep(b, mem, 2 * big + sub.work, elem)
    zero = ir.Constant(elem, 0.0)
    with U.for_range(b, big, "chirp.zero") as j:
        b.store(zero, _gep(b, ar, j, elem))
        b.store(zero, _gep(b, ai, j, elem))
    with U.for_range(b, n, "chirp.wrap") as j:
        c = b.load(_gep(b, tr, j, elem), typ=elem)
        s = b.fneg(b.load(_gep(b, ti, j, elem), typ=elem))
        b.store(c, _gep(b, ar, j, elem))
        b.store(s, _gep(b, ai, j, elem))
        back = b.urem(b.sub(U.i64(big), j), U.i64(big))     # M - j (j = 0 stays)
        b.store(c, _gep(b, ar, back, elem))
        b.store(s, _gep(b, ai, back, elem))
    bhr, bhi = _gep(b, tr, n, elem), _gep(b, ti, n, elem)
    b.call(fft_function(module, sub, dt, width), [ar, ai, bhr, bhi, wr, wi, str_, sti])
    inv = ir.Constant(elem, 1.0 / big)
    with U.for_range(b, big, "chirp.scale") as k:
        for part in (bhr, bhi):
            ptr = _gep(b, part, k, elem)
            b.store(b.fmul(b.load(ptr, typ=elem), inv), ptr)
    b.call(_free(module), [mem])


def cached_table(b, module, name: str, entries: int, elem, fill):
    """(tr, ti): a table of `entries` complex values for this process, made at the
    first call by fill(builder, tr, ti)."""
    gname, make_name = f"jx.fft.table.{name}", f"jx.fft.make.{name}"
    if gname not in module.globals:
        g = ir.GlobalVariable(module, U.PTR, gname)
        g.linkage = "internal"
        g.initializer = ir.Constant(U.PTR, None)
        fn, mb = _function(module, make_name, [], U.PTR)
        mem = checked_malloc(mb, module, 2 * entries * _size(elem))
        fill(mb, mem, _gep(mb, mem, entries, elem))
        res = mb.cmpxchg(g, ir.Constant(U.PTR, None), mem, "acq_rel", "acquire")
        with mb.if_then(mb.not_(mb.extract_value(res, 1)), likely=False):
            mb.call(_free(module), [mem])                 # another call made it first
            mb.ret(mb.extract_value(res, 0))
        mb.ret(mem)
    g, make = module.globals[gname], module.globals[make_name]
    cur = b.load_atomic(g, "acquire", 8, typ=U.PTR)
    pre = b.block
    with b.if_then(b.icmp_unsigned("==", cur, ir.Constant(U.PTR, None)), likely=False):
        made = b.call(make, [])
        made_block = b.block
    ptr = b.phi(U.PTR)
    ptr.add_incoming(cur, pre)
    ptr.add_incoming(made, made_block)
    return ptr, _gep(b, ptr, entries, elem)


def table(b, module, plan: Plan, dt, width: int):
    """(tr, ti) of plan's twiddle table (null pointers when it has none)."""
    if plan.table == 0:
        null = ir.Constant(U.PTR, None)
        return null, null
    init = _init_function(module, plan, dt, width)
    return cached_table(b, module, f"{_name(dt)}.v{width}.{plan.key}", plan.table, _elem(dt),
                        lambda mb, tr, ti: mb.call(init, [tr, ti]))


def twiddles(b, module, count: int, n: int, dt):
    """(tr, ti) of exp(-2 pi i k / n), k < count (the real transforms' pass)."""
    elem = _elem(dt)

    def fill(mb, tr, ti):
        with U.for_range(mb, count, "tw.k") as k:
            c, s = _twiddle(mb, module, k, n, elem)
            mb.store(c, _gep(mb, tr, k, elem))
            mb.store(s, _gep(mb, ti, k, elem))
    return cached_table(b, module, f"{_name(dt)}.r{n}", count, elem, fill)
