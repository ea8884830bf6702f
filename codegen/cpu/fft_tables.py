"""The twiddle tables of the CPU FFT (fft_stages.py's transforms, the real
transforms' post-pass): computed at a kernel's first call, in float64 from exact
integer angles (cis below), rounded once to the transform's dtype, and kept for
the life of the process (as FFTW keeps its plans) behind a per-module global
pointer published with compare-and-swap, so concurrent first calls agree on one
table. Nothing multi-megabyte is embedded in the object.
"""
from __future__ import annotations

import math

import llvmlite.ir as ir

from . import irutil as U
from .fft_plan import Plan
from .fft_stages import _add, _elem, _function, _gep, _mul, _name, _size, fft_function

_CIS = "jx.fft.cis"


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


def _run_once(fn: ir.Function) -> None:
    """Code a process runs once (a table's fill): not inlined into the kernels nor
    unrolled or vectorised, which cost more compile time than the fill takes."""
    fn.attributes.add("noinline")
    fn.attributes.add("optsize")
    fn.attributes.add("cold")


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


def libc_free(module):
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
    _run_once(fn)
    tr, ti = fn.args
    if plan.blue is None:
        fill = fill_routine(module, dt)
        for st in plan.stages:
            if st.m > 1:
                b.call(fill, [_gep(b, tr, st.tw, elem), _gep(b, ti, st.tw, elem),
                              U.i64(st.r - 1), U.i64(st.m), U.i64(st.r * st.m)])
    else:
        _init_bluestein(b, module, plan, dt, width, tr, ti)
    b.ret_void()
    return fn


def fill_routine(module, dt) -> ir.Function:
    """fill(tr, ti, rows, count, n): exp(-2 pi i p j / n) at (j - 1) count + p for
    1 <= j <= rows, p < count: a stage's twiddles (rows r - 1, count m, n r m), or
    a row of them (rows 1). A routine (routines.py): compiled once per host and
    dtype, not per plan (each plan's own loops were a third of a transform's LLVM
    time)."""
    from . import routines
    name = f"jx.fft.fill.{_name(dt)}"
    fn = routines.define(module, name, ir.FunctionType(U.VOID, [U.PTR, U.PTR] + [U.I64] * 3))
    if fn is not None:
        elem = _elem(dt)
        tr, ti, rows, count, n = fn.args
        for a in (tr, ti):
            a.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        with U.for_between(b, U.i64(0), rows, "tw.j") as j0:
            j = b.add(j0, U.i64(1))
            base = b.mul(j0, count)
            with U.for_between(b, U.i64(0), count, "tw.p") as p:
                c, s = _twiddle(b, fn.module, b.mul(p, j), n, elem)
                off = b.add(base, p)
                b.store(c, _gep(b, tr, off, elem))
                b.store(s, _gep(b, ti, off, elem))
        b.ret_void()
    return module.globals[name]


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
    b.call(libc_free(module), [mem])


def cached_table(b, module, name: str, entries: int, elem, fill):
    """(tr, ti): a table of `entries` complex values for this process, made at the
    first call by fill(builder, tr, ti)."""
    gname, make_name = f"jx.fft.table.{name}", f"jx.fft.make.{name}"
    if gname not in module.globals:
        g = ir.GlobalVariable(module, U.PTR, gname)
        g.linkage = "internal"
        g.initializer = ir.Constant(U.PTR, None)
        fn, mb = _function(module, make_name, [], U.PTR)
        _run_once(fn)
        mem = checked_malloc(mb, module, 2 * entries * _size(elem))
        fill(mb, mem, _gep(mb, mem, entries, elem))
        res = mb.cmpxchg(g, ir.Constant(U.PTR, None), mem, "acq_rel", "acquire")
        with mb.if_then(mb.not_(mb.extract_value(res, 1)), likely=False):
            mb.call(libc_free(module), [mem])                 # another call made it first
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
        mb.call(fill_routine(module, dt), [tr, ti, U.i64(1), U.i64(count), U.i64(n)])
    return cached_table(b, module, f"{_name(dt)}.r{n}", count, elem, fill)
