"""Small llvmlite helpers shared by the CPU lowering: types, constants, loops.

Values live in registers in a *compute type* (f16 is computed as f32, bool as
i1) and in memory in a *storage type* (f16 as half, bool as i8).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

import llvmlite.ir as ir
import numpy as np

from jx.dims import Dim, InconclusiveDimensionError
from jx.dtypes import is_half  # noqa: F401  (float16/bfloat16: computed in f32, rounded)

I1, I8, I16, I32, I64 = (ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32),
                        ir.IntType(64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()


def is_bf16(dt) -> bool:
    """bfloat16 (ml_dtypes registers it with NumPy as kind 'V'): stored as its 16
    bits, computed in float32 like float16."""
    return np.dtype(dt).name == "bfloat16"


def storage_type(dt) -> ir.Type:
    dt = np.dtype(dt)
    if dt == np.bool_:
        return I8
    if is_bf16(dt):
        return ir.IntType(16)
    if dt.kind == "f":
        return {2: F16, 4: F32, 8: F64}[dt.itemsize]
    return ir.IntType(dt.itemsize * 8)


def compute_type(dt) -> ir.Type:
    dt = np.dtype(dt)
    if dt == np.bool_:
        return I1
    if is_half(dt):
        return F32
    return storage_type(dt)


def is_float(dt) -> bool:
    return np.dtype(dt).kind == "f" or is_bf16(dt)


def is_signed(dt) -> bool:
    return np.dtype(dt).kind == "i"


def const(dt, value) -> ir.Constant:
    """A constant of dt's compute type, holding value as dt represents it (0.1 as a
    float16 constant is float16's 0.1, though it lives in a float32)."""
    t = compute_type(dt)
    if isinstance(t, ir.IntType):
        if t.width == 1:
            return ir.Constant(t, int(bool(value)))
        return ir.Constant(t, int(np.asarray(value).astype(np.dtype(dt))))
    with np.errstate(over="ignore"):       # out of range: inf, as the dtype holds it
        return ir.Constant(t, float(np.asarray(value).astype(np.dtype(dt))))


def i64(v) -> ir.Value:
    """An i64 constant, or for a symbolic size (jx.dims.Dim) its value in the function
    being emitted (dims_scope)."""
    if isinstance(v, Dim):
        stack = _dim_scopes()
        if not stack:
            raise InconclusiveDimensionError(
                f"cpu backend: the symbolic size {v} reached code emitted outside a "
                "function that receives the dims (an internal error: please report it)")
        return stack[-1].value(v)
    return ir.Constant(I64, int(v))


# ---------------------------------------------------------------- symbolic sizes
class DimValues:
    """The symbolic sizes of one function as i64 values: each symbol loaded once
    from the dims array (`load(name) -> i64`) and each expression computed once,
    all in the function's entry block, so they dominate every use. The body is
    emitted from a second block the entry branches to."""

    def __init__(self, b: ir.IRBuilder, load):
        entry = b.block
        start = b.function.append_basic_block("start")
        self.term = b.branch(start)
        self.pre = ir.IRBuilder(entry)
        b.position_at_end(start)
        self.load = load
        self.memo: dict = {}

    def value(self, d) -> ir.Value:
        if not isinstance(d, Dim):
            return ir.Constant(I64, int(d))
        v = self.memo.get(d)
        if v is None:
            # (re-placed each time: llvmlite keeps a builder's place as an index, which
            # an alloca put first in the entry block would shift)
            self.pre.position_before(self.term)
            v = self.memo[d] = self._poly(d)
        return v

    def _atom(self, atom) -> ir.Value:
        key = ("atom", atom)
        v = self.memo.get(key)
        if v is None:
            self.pre.position_before(self.term)
            if isinstance(atom, str):
                v = self.load(self.pre, atom)
            else:                         # floor(num / den), den > 0, num of any sign
                b, num = self.pre, self.value(atom.num)
                neg = b.icmp_signed("<", num, i64(0))
                adj = b.select(neg, i64(atom.den - 1), i64(0))
                v = b.sdiv(b.sub(num, adj), i64(atom.den))
            self.memo[key] = v
        return v

    def _poly(self, d: Dim) -> ir.Value:
        b = self.pre
        total = None
        for mono, c in sorted(d.terms.items(), key=lambda mc: str(mc[0])):
            term = None
            for atom, p in mono:
                for _ in range(p):
                    a = self._atom(atom)
                    term = a if term is None else b.mul(term, a)
            if term is None:
                term = i64(c)
            elif c != 1:
                term = b.mul(term, i64(c))
            total = term if total is None else b.add(total, term)
        return total


_LOCAL = threading.local()          # each thread emits in its own scopes


def _dim_scopes() -> list:
    stack = getattr(_LOCAL, "scopes", None)
    if stack is None:
        stack = _LOCAL.scopes = []
    return stack


@contextmanager
def dims_scope(values: DimValues | None):
    """Symbolic sizes given to i64() mean `values` (one function's) until the end."""
    if values is None:
        yield None
        return
    stack = _dim_scopes()
    stack.append(values)
    try:
        yield values
    finally:
        stack.pop()


def dims_from(b: ir.IRBuilder, dims_ptr, symbols: tuple) -> DimValues:
    """DimValues of a function whose `dims_ptr` points at the symbols' i64 values
    (in `symbols` order)."""
    index = {n: i for i, n in enumerate(symbols)}

    def load(pre, name):
        return pre.load(pre.gep(dims_ptr, [i64(index[name])], source_etype=I64, inbounds=True),
                        typ=I64, name=f"dim.{name}")
    values = DimValues(b, load)
    values.ptr = dims_ptr
    return values


def aligned_size(nbytes, align: int):
    """Bytes a buffer of nbytes takes in a workspace of `align`-aligned pieces: a
    multiple of align, a symbolic size too (align * ceil(nbytes / align) as an
    expression), so that every offset, a sum of such sizes, stays aligned."""
    if not isinstance(nbytes, Dim):
        return -(-max(nbytes, 1) // align) * align
    if all(c % align == 0 for c in nbytes.terms.values()):
        return nbytes
    return -(-nbytes // align) * align


def aligned_pointer(b, base, off, align: int):
    """base + off bytes (off a multiple of align: see aligned_size)."""
    return b.gep(base, [i64(off)], source_etype=I8, inbounds=True)


def current_dims_ptr():
    """The dims array pointer of the function being emitted (dims_scope)."""
    return _dim_scopes()[-1].ptr


def is_symbolic(n) -> bool:
    return isinstance(n, Dim)


def load(b: ir.IRBuilder, ptr, offset, dt) -> ir.Value:
    """Load element `offset` of a buffer of dtype dt, in compute type."""
    st = storage_type(dt)
    v = b.load(b.gep(ptr, [offset], source_etype=st, inbounds=True), typ=st)
    return to_compute(b, v, dt)


def store(b: ir.IRBuilder, value, ptr, offset, dt) -> None:
    st = storage_type(dt)
    b.store(to_storage(b, value, dt), b.gep(ptr, [offset], source_etype=st, inbounds=True))


def to_compute(b, v, dt):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
    if dt == np.float16:
        return b.fpext(v, F32)
    if is_bf16(dt):           # the top half of a float32
        return b.bitcast(b.shl(b.zext(v, ir.IntType(32)), ir.Constant(ir.IntType(32), 16)),
                         F32)
    return v


def to_storage(b, v, dt):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return b.zext(v, I8)
    if dt == np.float16:
        return b.fptrunc(v, F16)
    if is_bf16(dt):
        return bf16_bits(b, v)
    return v


def round_to(b: ir.IRBuilder, v, dt) -> ir.Value:
    """Compute-type v rounded to dt's precision, where dt is narrower than its compute
    type (float16, bfloat16: computed in float32, rounded after every operation as
    XLA's CPU backend and NumPy do); v itself otherwise."""
    dt = np.dtype(dt)
    if dt == np.float16:
        return b.fpext(b.fptrunc(v, F16), F32)
    if is_bf16(dt):
        return to_compute(b, bf16_bits(b, v), dt)
    return v


def round_to_odd_f32(b: ir.IRBuilder, x) -> ir.Value:
    """float64 x to float32, rounded to odd: toward zero, with the last bit set when
    inexact. Rounding that again to a format of <= 22 significant bits (float16,
    bfloat16) gives the correctly rounded result of x, in one rounding, with
    native float32 -> half conversions (and vectorisable)."""
    r = b.fptrunc(x, F32)
    back = b.fpext(r, F64)
    fabs = b.module.declare_intrinsic("llvm.fabs", [F64])
    too_far = b.fcmp_ordered(">", b.call(fabs, [back]), b.call(fabs, [x]))
    inexact = b.fcmp_ordered("!=", back, x)
    bits = b.sub(b.bitcast(r, I32), b.zext(too_far, I32))
    return b.bitcast(b.or_(bits, b.zext(inexact, I32)), F32)


def bf16_bits(b: ir.IRBuilder, v) -> ir.Value:
    """The bfloat16 nearest to float32 v (ties to even) as i16 bits; NaN stays a
    quiet NaN."""
    bits = b.bitcast(v, I32)
    odd = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = b.add(bits, b.add(ir.Constant(I32, 0x7FFF), odd))
    quiet = b.or_(bits, ir.Constant(I32, 0x400000))
    bits = b.select(b.fcmp_unordered("uno", v, v), quiet, rounded)
    return b.trunc(b.lshr(bits, ir.Constant(I32, 16)), I16)


def plain(fn) -> None:
    """Leave fn unoptimised (LLVM's optnone; codegen at -O0 too): for functions
    that only call and dispatch (entries, a parallel kernel's function around its
    outlined body, the GEMM's drivers), whose loops, if any, run a few times
    around calls that do the work. Optimising them gained nothing measurable and
    was most of LLVM's time on small programs (a 1024^3 matmul: 31 -> 8 ms)."""
    fn.attributes.add("noinline")          # (optnone requires it)
    fn.attributes.add("optnone")


class Callee:
    """A function pointer `value` as a callee of IRBuilder.call, which takes
    Functions only: called with type `ftype` (an indirect call)."""

    def __init__(self, value, ftype: ir.FunctionType):
        self.value, self.function_type, self.type = value, ftype, value.type

    def get_reference(self) -> str:
        return self.value.get_reference()


def loop_hint(module: ir.Module, interleave: int | None = None, unroll: bool = True):
    """Loop metadata, or None when there is nothing to ask:
    - interleave: that many vector iterations side by side. The vectoriser's cost
      model picks 1 for long transcendental chains (register pressure), which leaves
      the core waiting on one chain's latency; independent chains side by side
      measured 15-20% faster on the elementwise chain sample.
    - unroll=False: no unrolling by LLVM's unroll pass (llvm.loop.unroll.disable),
      for a loop whose body is already a wide block of work: a vectorised
      elementwise body (copies ran no faster, and cost up to 4x its instruction
      selection: 85 ms for a complex-to-real split), a float reduction's block of
      lanes.
    Each call makes a new loop ID (one per loop, as LLVM expects): the numbered
    `jx.loop` node keeps otherwise equal IDs apart."""
    opts = []
    if interleave:
        opts.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"),
                                         ir.Constant(ir.IntType(32), interleave)]))
    if not unroll:
        opts.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")]))
    if not opts:
        return None
    n = module.__dict__.setdefault("_jx_loops", [0])
    n[0] += 1
    tag = module.add_metadata([ir.MetaDataString(module, "jx.loop"),
                               ir.Constant(ir.IntType(32), n[0])])
    loop_id = module.add_metadata([*opts, tag])
    loop_id.operands = (loop_id,) + tuple(loop_id.operands)   # loop IDs name themselves
    return loop_id


def same_function(fn: ir.Function) -> ir.Function:
    """fn, or a function its module defined before with the same text (fn's name
    aside), fn then dropped: call the result. For functions made per kernel that
    often come out alike, such as two equal layers' epilogues (bias and relu over
    the same width): each copy costs LLVM ~15 ms, however small. Only for a fn
    nothing refers to yet."""
    module = fn.module
    text = str(fn).replace(f'@"{fn.name}"', "@", 1)
    seen = module.__dict__.setdefault("_jx_same", {})
    first = seen.setdefault(text, fn)
    if first is not fn:
        del module.globals[fn.name]
    return first


@contextmanager
def for_range(b: ir.IRBuilder, n: int, name: str = "i", hint=None):
    """for (i = 0; i < n; i++) with a static trip count n > 0; yields i (i64).
    `hint`: loop metadata for the latch (see loop_hint). A symbolic n (it may
    be 0 at run time) gets a guarded loop."""
    if isinstance(n, Dim):
        with for_step(b, 0, n, 1, name, hint) as i:
            yield i
        return
    fn = b.function
    pre = b.block
    body = fn.append_basic_block(f"{name}.body")
    end = fn.append_basic_block(f"{name}.end")
    b.branch(body)
    b.position_at_end(body)
    i = b.phi(I64, name=name)
    i.add_incoming(i64(0), pre)
    yield i
    nxt = b.add(i, i64(1), name=f"{name}.next", flags=["nuw", "nsw"])
    i.add_incoming(nxt, b.block)
    latch = b.cbranch(b.icmp_unsigned("<", nxt, i64(n)), body, end)
    if hint is not None:
        latch.set_metadata("llvm.loop", hint)
    b.position_at_end(end)


def for_between(b: ir.IRBuilder, lo, hi, name: str = "i", hint=None):
    """for (i = lo; i < hi; i++) with run-time bounds (a parallel chunk)."""
    return for_step(b, lo, hi, 1, name, hint)


@contextmanager
def loop_nest(b: ir.IRBuilder, shape, name: str = "i", outer=None, fixed=(), hint=None):
    """Row-major loops over `shape` (all dims > 0); yields the index list. With
    outer=(lo, hi) the first dim runs over [lo, hi) only (one parallel chunk);
    `fixed` gives the values of the leading dims, which then get no loop (one row
    of a row-fused group). `hint`: metadata for the innermost loop."""
    idx: list = list(fixed)
    stack = []
    try:
        for d, n in enumerate(shape):
            if d < len(fixed):
                continue
            h = hint if d == len(shape) - 1 else None
            cm = for_between(b, outer[0], outer[1], f"{name}{d}", h) \
                if d == 0 and outer is not None else for_range(b, n, f"{name}{d}", h)
            idx.append(cm.__enter__())
            stack.append(cm)
        yield idx
    finally:
        for cm in reversed(stack):
            cm.__exit__(None, None, None)


def linear(b: ir.IRBuilder, idx, shape) -> ir.Value:
    """Row-major flat offset of idx in shape."""
    off = i64(0)
    stride = 1
    for i, n in reversed(list(zip(idx, shape))):
        if n != 1:
            term = i if stride == 1 else b.mul(i, i64(stride), flags=["nuw", "nsw"])
            off = term if (isinstance(off, ir.Constant) and off.constant == 0) else \
                b.add(off, term, flags=["nuw", "nsw"])
        stride *= n
    return off


def delinear(b: ir.IRBuilder, flat, shape) -> list:
    """Inverse of `linear` (divisions by the static strides)."""
    idx = []
    strides, stride = [], 1
    for n in reversed(shape):
        strides.append(stride)
        stride = stride * n
    for n, stride in zip(shape, reversed(strides)):
        if n == 1:
            idx.append(i64(0))
            continue
        q = flat if stride == 1 else b.udiv(flat, i64(stride))
        idx.append(b.urem(q, i64(n)) if idx else q)
    return idx


def alloca_entry(b: ir.IRBuilder, typ: ir.Type, name: str = "") -> ir.Value:
    """An alloca in the entry block (so mem2reg turns it into registers)."""
    entry = b.function.entry_basic_block
    with b.goto_block(entry):
        if entry.instructions:
            b.position_before(entry.instructions[0])
        return b.alloca(typ, name=name)


def call_intrinsic(b: ir.IRBuilder, base: str, args: list, ret: ir.Type | None = None):
    """Call an LLVM intrinsic overloaded on its first argument's type (e.g.
    llvm.maximum.f32). llvmlite's declare_intrinsic knows only a few signatures."""
    t = args[0].type
    name = f"{base}.{t.intrinsic_name}" if not isinstance(t, ir.VectorType) else \
        f"{base}.v{t.count}{t.element.intrinsic_name}"
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(ret or t, [a.type for a in args]), name)
    return b.call(fn, args)


@contextmanager
def for_step(b: ir.IRBuilder, lo, hi, step, name: str = "s", hint=None):
    """for (i = lo; i < hi; i += step); each bound an int or an i64 value. The one
    run-time-bounded loop every lowering uses (CPU, GEMM, NVPTX)."""
    lo, hi, step = (i64(v) if isinstance(v, (int, Dim)) else v for v in (lo, hi, step))
    fn = b.function
    pre = b.block
    body = fn.append_basic_block(f"{name}.body")
    end = fn.append_basic_block(f"{name}.end")
    b.cbranch(b.icmp_signed("<", lo, hi), body, end)
    b.position_at_end(body)
    i = b.phi(I64, name=name)
    i.add_incoming(lo, pre)
    yield i
    nxt = b.add(i, step, name=f"{name}.next", flags=["nsw"])
    i.add_incoming(nxt, b.block)
    latch = b.cbranch(b.icmp_signed("<", nxt, hi), body, end)
    if hint is not None:
        latch.set_metadata("llvm.loop", hint)
    b.position_at_end(end)

def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


@contextmanager
def tiled_loop_nest(b: ir.IRBuilder, shape, tile: int, outer=None, fixed=()):
    """loop_nest with the last two dims walked in tile x tile blocks: a transposing
    copy then reads and writes whole cache lines instead of one element per line.
    outer=(lo, hi) restricts the first dim, whichever loop it is."""
    lead = list(shape[:-2])
    n0, n1 = shape[-2], shape[-1]
    lead_outer = outer if lead else None
    rows = outer if (outer is not None and not lead) else (i64(0), i64(n0))
    with loop_nest(b, lead, "t", lead_outer, fixed) as lix:
        with for_step(b, rows[0], rows[1], tile, "ti0") as i0:
            with for_step(b, i64(0), i64(n1), tile, "tj0") as j0:
                hi0 = _min(b, b.add(i0, i64(tile)), rows[1])
                hi1 = _min(b, b.add(j0, i64(tile)), i64(n1))
                with for_between(b, i0, hi0, "ti") as i:
                    with for_between(b, j0, hi1, "tj") as j:
                        yield list(lix) + [i, j]
