"""Lowering of fused loop and reduce kernels.

A fused value is produced at an index: `FusedEmitter.value(atom, idx)` asks
the producing equation's rule in INDEX_RULES for the element at idx. Layout
primitives only remap the index (broadcast drops or zeroes dims, transpose
permutes, slice scales and offsets, pad and concatenate select), elementwise
primitives apply their scalar rule to their operands at the same index, and
materialised values are loads. Values are memoised per index within a kernel.
"""
from __future__ import annotations


import types

import llvmlite.ir as ir
import numpy as np

from jx import dtypes
from jx.dims import hinted
from jx.ir import Literal, Var
from jx.passes.fuse import EXPENSIVE, code_size

from . import irutil as U
from . import mathcalls, target, tuning
from .scalar import SCALAR, convert

INDEX_RULES: dict = {}


def index_rule(*names):
    def deco(fn):
        for n in names:
            INDEX_RULES[n] = fn
        return fn
    return deco


class FusedEmitter:
    """Emits the values of one kernel's fused equations inside its loop nest.

    An index rule is a generator: it yields the (operand, index) pairs it needs
    and receives their values, then returns its own. value() runs the rules on an
    explicit stack, so a fused expression of any depth (a chain of 10,000
    operations) is emitted without recursion."""

    def __init__(self, b: ir.IRBuilder, kernel, buffers: dict, consts, reuse=None):
        self.b = b
        # only the kernel's inputs are read from memory; its outputs are computed,
        # except values an earlier kernel of its row group left in `reuse` buffers
        self.buffers = {id(v): buffers[id(v)] for v in kernel.inputs}
        self.buffers.update(reuse or {})
        self.consts = consts               # global constants for array literals
        self.producer = {id(v): e for e in kernel.eqns for v in e.outputs}
        self.memo: dict = {}

    def value(self, atom, idx) -> ir.Value:
        v = self.known(atom, idx)
        if v is not None:
            return v
        stack = [self._rule(atom, idx)]
        sent = None
        while True:
            gen, key = stack[-1]
            try:
                atom, idx = gen.send(sent)
            except StopIteration as done:
                stack.pop()
                self.memo[key] = sent = done.value
                if not stack:
                    return sent
                continue
            sent = self.known(atom, idx)
            if sent is None:
                stack.append(self._rule(atom, idx))

    def known(self, atom, idx) -> ir.Value | None:
        """atom's value at idx without running a rule (a literal, a load of a
        materialised value, or one emitted before), or None."""
        if isinstance(atom, Literal):
            if atom.val.ndim == 0:
                return U.const(atom.aval.dtype, atom.val[()])
            ptr = self.consts.array(atom.val)
            return U.load(self.b, ptr, U.linear(self.b, idx, atom.aval.shape), atom.aval.dtype)
        key = (id(atom), tuple(id(i) for i in idx))
        v = self.memo.get(key)
        if v is None and id(atom) in self.buffers:
            v = self.memo[key] = U.load(self.b, self.buffers[id(atom)],
                                        U.linear(self.b, idx, atom.aval.shape), atom.aval.dtype)
        return v

    def _rule(self, atom, idx) -> tuple:
        """(the generator computing atom at idx, its memo key)."""
        eqn = self.producer[id(atom)]
        rule = INDEX_RULES.get(eqn.prim.name)
        if rule is None:
            raise NotImplementedError(f"cpu backend: no fused lowering for '{eqn.prim.name}'")
        gen = rule(self, eqn, list(idx))
        if not isinstance(gen, types.GeneratorType):     # a rule that needs no operand
            gen = _returning(gen)
        return gen, (id(atom), tuple(id(i) for i in idx))


def _returning(value):
    return value
    yield                   # (unreachable: makes this a generator)


# Results a 16-bit float holds exactly when its operands do: no rounding needed.
EXACT_IN_KIND = frozenset({"neg", "abs", "sign", "max", "min", "select", "stop_gradient",
                           "bitcast_convert_type",
                           "floor", "ceil", "round"})


def _elementwise(em: FusedEmitter, eqn, idx):
    args = []
    for a in eqn.inputs:
        args.append((yield a, idx if a.aval.shape else []))
    dt = eqn.inputs[0].aval.dtype if eqn.prim.name != "select" else eqn.inputs[1].aval.dtype
    out_dt = eqn.outputs[0].aval.dtype
    v = SCALAR[eqn.prim.name](em.b, args, dt, out_dt, **eqn.params)
    if eqn.prim.name in EXACT_IN_KIND:
        return v
    return U.round_to(em.b, v, out_dt)      # float16/bfloat16 round after every op


for _name in SCALAR:
    if _name not in ("convert_element_type",):
        INDEX_RULES[_name] = _elementwise


@index_rule("convert_element_type")
def _convert(em, eqn, idx):
    (x,) = eqn.inputs
    return convert(em.b, (yield x, idx), x.aval.dtype, eqn.outputs[0].aval.dtype)


@index_rule("real", "imag")
def _part(em, eqn, idx):
    """A component of a complex value. Complex values live only at a graph's
    boundary (passes/decomplex.py), so the operand is a buffer in `float _Complex`
    layout, read as its interleaved components (a stride-2 access the loop
    vectoriser widens), or the `complex` equation that pairs two real values."""
    (z,) = eqn.inputs
    k = 0 if eqn.prim.name == "real" else 1
    made = em.producer.get(id(z))
    if made is not None and made.prim.name == "complex":
        return (yield made.inputs[k], idx)
    if id(z) not in em.buffers:
        raise NotImplementedError(f"cpu backend: {eqn.prim.name} of a fused complex value "
                                  f"({made.prim.name if made else 'a literal'}); complex "
                                  "values reach code generation only as buffers")
    return U.load(em.b, em.buffers[id(z)], complex_offset(em.b, idx, z.aval.shape, k),
                  dtypes.real_dtype(z.aval.dtype))


def complex_offset(b, idx, shape, part: int):
    """The offset, in components, of a complex element's real (0) or imaginary (1) part."""
    return b.add(b.mul(U.linear(b, idx, shape), U.i64(2), flags=["nuw", "nsw"]), U.i64(part),
                 flags=["nuw", "nsw"])


def _store_complex(b, em, root, ptr, idx, shape) -> None:
    """out[idx] = complex(re, im): the two components stored interleaved."""
    if root.prim.name != "complex":
        raise NotImplementedError(f"cpu backend: a complex result of {root.prim.name}; "
                                  "complex results are written only by `complex`")
    part = root.inputs[0].aval.dtype
    for k, a in enumerate(root.inputs):
        U.store(b, em.value(a, idx), ptr, complex_offset(b, idx, shape, k), part)


@index_rule("broadcast_in_dim")
def _broadcast(em, eqn, idx):
    (x,) = eqn.inputs
    out_shape = eqn.params["shape"]
    sub = [U.i64(0) if x.aval.shape[i] == 1 and out_shape[d] != 1 else idx[d]
           for i, d in enumerate(eqn.params["broadcast_dimensions"])]
    return (yield x, sub)


@index_rule("reshape", "squeeze", "expand_dims")
def _reshape(em, eqn, idx):
    (x,) = eqn.inputs
    out_shape = eqn.outputs[0].aval.shape
    nontrivial_in = [n for n in x.aval.shape if n != 1]
    nontrivial_out = [n for n in out_shape if n != 1]
    if nontrivial_in == nontrivial_out:      # only unit dims move: no division needed
        kept = iter([i for i, n in zip(idx, out_shape) if n != 1])
        return (yield x, [U.i64(0) if n == 1 else next(kept) for n in x.aval.shape])
    flat = U.linear(em.b, idx, out_shape)
    if not isinstance(x, Literal) and id(x) in em.buffers:
        return U.load(em.b, em.buffers[id(x)], flat, x.aval.dtype)
    # leading dims both shapes share map index to index; only the rest is regrouped
    # (with a symbolic leading size, flattening it too left every element a
    # division by a run-time stride: merging heads back ran 1.45x slower)
    lead = 0
    for a, c in zip(x.aval.shape, out_shape):
        if a != c:
            break
        lead += 1
    lead = min(lead, len(x.aval.shape) - 1, len(out_shape) - 1)
    if lead:
        rest = U.linear(em.b, idx[lead:], out_shape[lead:])
        return (yield x, list(idx[:lead]) + U.delinear(em.b, rest, x.aval.shape[lead:]))
    return (yield x, U.delinear(em.b, flat, x.aval.shape))


@index_rule("transpose")
def _transpose(em, eqn, idx):
    (x,) = eqn.inputs
    perm = eqn.params["permutation"]
    sub = [None] * len(perm)
    for out_d, in_d in enumerate(perm):
        sub[in_d] = idx[out_d]
    return (yield x, sub)


@index_rule("slice")
def _slice(em, eqn, idx):
    (x,) = eqn.inputs
    b = em.b
    sub = []
    for i, s, k in zip(idx, eqn.params["start_indices"], eqn.params["strides"]):
        j = i if k == 1 else b.mul(i, U.i64(k))
        sub.append(j if s == 0 else b.add(j, U.i64(s)))
    return (yield x, sub)


@index_rule("rev")
def _rev(em, eqn, idx):
    (x,) = eqn.inputs
    dims = eqn.params["dimensions"]
    sub = [em.b.sub(U.i64(x.aval.shape[d] - 1), i) if d in dims else i
           for d, i in enumerate(idx)]
    return (yield x, sub)


def _clamp(b, i, n):
    """i clamped into [0, n-1] (signed i64)."""
    lo = b.select(b.icmp_signed("<", i, U.i64(0)), U.i64(0), i)
    return b.select(b.icmp_signed(">", lo, U.i64(n - 1)), U.i64(n - 1), lo)


@index_rule("pad")
def _pad(em, eqn, idx):
    x, pv = eqn.inputs
    b = em.b
    padval = yield pv, []
    if 0 in x.aval.shape:
        return padval
    inside = ir.Constant(U.I1, 1)
    sub = []
    for i, n, (lo, _, interior) in zip(idx, x.aval.shape, eqn.params["padding_config"]):
        j = b.sub(i, U.i64(lo))
        step = interior + 1
        q = j if step == 1 else b.sdiv(j, U.i64(step))
        ok = b.and_(b.icmp_signed(">=", j, U.i64(0)), b.icmp_signed("<", q, U.i64(n)))
        if step != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(j, U.i64(step)), U.i64(0)))
        inside = b.and_(inside, ok)
        sub.append(_clamp(b, q, n))        # always a valid address, selected away if padding
    return b.select(inside, (yield x, sub), padval)


def update_window(eqn) -> list:
    """The [lo, lo + n) window per dim that a dynamic_update_slice at constant
    starts writes (starts clamped so the update fits, as XLA does)."""
    x, u, *starts = eqn.inputs
    return [(min(max(int(s.val), 0), n - w), w)
            for s, n, w in zip(starts, x.aval.shape, u.aval.shape)]


@index_rule("dynamic_update_slice")
def _dynamic_update_slice(em, eqn, idx):
    """Constant starts only (fusion keeps the others opaque): u inside the window,
    x elsewhere. A kernel rooted here writes rows instead (emit_loop)."""
    x, u = eqn.inputs[:2]
    b = em.b
    if 0 in u.aval.shape:
        return (yield x, idx)
    inside = ir.Constant(U.I1, 1)
    sub = []
    for i, (lo, n) in zip(idx, update_window(eqn)):
        j = b.sub(i, U.i64(lo)) if lo else i
        inside = b.and_(inside, b.and_(b.icmp_signed(">=", j, U.i64(0)),
                                       b.icmp_signed("<", j, U.i64(n))))
        sub.append(_clamp(b, j, n))
    inner = yield u, sub
    return b.select(inside, inner, (yield x, idx))


@index_rule("concatenate")
def _concatenate(em, eqn, idx):
    b = em.b
    d = eqn.params["dimension"]
    out = None
    start = 0
    for x in eqn.inputs:
        n = x.aval.shape[d]
        if n == 0:
            continue
        sub = list(idx)
        sub[d] = _clamp(b, b.sub(idx[d], U.i64(start)), n)
        v = yield x, sub
        out = v if out is None else b.select(b.icmp_signed(">=", idx[d], U.i64(start)), v, out)
        start += n
    return out


@index_rule("iota")
def _iota(em, eqn, idx):
    dt = eqn.params["dtype"]
    return convert(em.b, idx[eqn.params["dimension"]], np.int64, dt)


@index_rule("dimension_size")
def _dimension_size(em, eqn, idx):
    """A symbolic size as a value: the function's value of it (irutil.dims_scope)."""
    return convert(em.b, U.i64(eqn.params["dim"]), np.int64, eqn.params["dtype"])


@index_rule("dynamic_slice")
def _dynamic_slice(em, eqn, idx):
    x, *starts = eqn.inputs
    b = em.b
    sub = []
    for i, s, n, size in zip(idx, starts, x.aval.shape, eqn.params["slice_sizes"]):
        st = convert(b, (yield s, []), s.aval.dtype, np.int64)
        st = _clamp(b, st, n - size + 1)       # XLA: the window stays in bounds
        sub.append(b.add(st, i))
    return (yield x, sub)


# ---------------------------------------------------------------- kernels

def emit_loop(b: ir.IRBuilder, kernel, buffers, consts, outer=None, fixed=(),
              reuse=None) -> None:
    """out[idx] = root(idx) for every idx of the root's output shape (the first dim
    restricted to outer=(lo, hi) when the kernel runs in parallel chunks)."""
    (out,) = kernel.outputs
    shape = out.aval.shape
    if 0 in shape:
        return
    b.jx_outline = mathcalls.wanted(kernel, b.module)      # read by the scalar rules (scalar._math)
    em = FusedEmitter(b, kernel, buffers, consts, reuse)
    transposing = _transposes_last_dim(kernel) and len(shape) - len(fixed) >= 2 and \
        hinted(shape[-1]) >= TILE and hinted(shape[-2]) >= TILE      # (a choice of speed)
    if not transposing and not fixed and _window_root(kernel.root):
        _emit_window_root(b, em, kernel, buffers[id(out)], outer, _interleave(b, kernel))
        return
    if not transposing and not fixed and _concat_root(kernel.root, outer):
        _emit_concat_root(b, em, kernel, buffers[id(out)], outer, _interleave(b, kernel))
        return
    nest = U.tiled_loop_nest(b, shape, TILE, outer, fixed) if transposing else \
        U.loop_nest(b, shape, outer=outer, fixed=fixed, hint=_interleave(b, kernel))
    with nest as idx:
        if dtypes.is_complex(out.aval.dtype):
            _store_complex(b, em, kernel.root, buffers[id(out)], idx, shape)
            return
        v = em.value(out, idx)
        U.store(b, v, buffers[id(out)], U.linear(b, idx, shape), out.aval.dtype)


def _window_root(eqn) -> bool:
    """A root _emit_window_root writes as rows: a pad with edges only (no interior
    padding, no cropping), or a non-empty update at constant starts (fusion keeps
    the others opaque)."""
    if eqn.prim.name == "dynamic_update_slice":
        return 0 not in eqn.inputs[1].aval.shape
    if eqn.prim.name != "pad" or 0 in eqn.inputs[0].aval.shape:
        return False
    return all(lo >= 0 and hi >= 0 and interior == 0
               for lo, hi, interior in eqn.params["padding_config"])


def _concat_root(eqn, outer) -> bool:
    """A concatenate root _emit_concat_root writes operand by operand: fixed sizes
    along its dim, and not chunked along that dim (a parallel chunk of dim 0)."""
    if eqn.prim.name != "concatenate" or len(eqn.inputs) < 2:
        return False
    d = eqn.params["dimension"]
    return not any(U.is_symbolic(x.aval.shape[d]) for x in eqn.inputs)


def _emit_concat_root(b, em, kernel, ptr, outer, hint) -> None:
    """out = concatenate(xs, d) as one loop nest per operand over its own block of
    out: each element reads its one operand (the index rule selects among all of
    them, reading every operand: an im2col of 25 windows read 25x the bytes)."""
    root = kernel.root
    (out,) = kernel.outputs
    shape, dt = out.aval.shape, out.aval.dtype
    d = root.params["dimension"]
    chunked = d == 0 and outer is not None
    with U.loop_nest(b, shape[:d], "c", outer=None if chunked else outer) as head:
        start = 0
        for x in root.inputs:
            n = x.aval.shape[d]
            if n == 0:
                continue
            outside = dict(em.memo)        # values of one operand's loops stay in them
            if chunked:                    # this chunk's part of the operand's rows
                lo = U.i64(start)
                lo = b.select(b.icmp_signed(">", outer[0], lo), outer[0], lo)
                hi = U.i64(start + n)
                hi = b.select(b.icmp_signed("<", outer[1], hi), outer[1], hi)
                rows = (b.sub(lo, U.i64(start)), b.sub(hi, U.i64(start)))
            else:
                rows = None
            with U.loop_nest(b, (n,) + tuple(shape[d + 1:]), "k", outer=rows,
                             hint=hint) as tail:
                v = em.value(x, list(head) + list(tail))
                at = list(head) + [b.add(tail[0], U.i64(start))] + list(tail[1:])
                U.store(b, v, ptr, U.linear(b, at, shape), dt)
            em.memo = outside
            start += n


def _emit_window_root(b, em, kernel, ptr, outer, hint) -> None:
    """out = pad(x), or out = dynamic_update_slice(x, u) at constant starts, as rows:
    a row through the window (pad: x's interior; update: u) is [edge | window |
    edge], each part its own loop, so the window loop reads its operand (stencils:
    shifted slices) at affine addresses and vectorises; the per-element select and
    clamped address of the index rules are gone. Rows outside the window are edge:
    pad's value, or the updated array x read at the same index."""
    root = kernel.root
    (out,) = kernel.outputs
    shape, dt = out.aval.shape, out.aval.dtype
    if root.prim.name == "pad":
        inner_x, pv = root.inputs
        lows = [lo for lo, _, _ in root.params["padding_config"]]
        inner = inner_x.aval.shape
        padval = em.value(pv, [])      # a scalar, before the loops: it dominates them

        def edge(idx):
            return padval
    else:
        x, inner_x = root.inputs[:2]
        lows, inner = zip(*update_window(root))

        def edge(idx):
            return em.value(x, idx)
    last = len(shape) - 1

    def fill(idx_outer, lo, hi):
        if lo < hi:
            with U.for_between(b, lo, hi, "edge") as k:
                U.store(b, edge(idx_outer + [k]), ptr, U.linear(b, idx_outer + [k], shape), dt)

    def row(idx_outer):
        lo, n = lows[last], inner[last]
        fill(idx_outer, 0, lo)
        src = [b.sub(i, U.i64(l)) if l else i for i, l in zip(idx_outer, lows)]
        with U.for_between(b, lo, lo + n, "interior", hint) as k:
            v = em.value(inner_x, src + [b.sub(k, U.i64(lo)) if lo else k])
            U.store(b, v, ptr, U.linear(b, idx_outer + [k], shape), dt)
        fill(idx_outer, lo + n, shape[last])

    with U.loop_nest(b, shape[:-1], "p", outer=outer) as idx:
        inside = None
        for i, lo, n in zip(idx, lows, inner):
            ok = b.and_(b.icmp_signed(">=", i, U.i64(lo)), b.icmp_signed("<", i, U.i64(lo + n)))
            inside = ok if inside is None else b.and_(inside, ok)
        if inside is None:
            row(list(idx))
        else:
            with b.if_else(inside) as (then, otherwise):
                with then:
                    row(list(idx))
                with otherwise:
                    fill(list(idx), 0, shape[last])


TILE = 16
# Loops whose expression chains INTERLEAVE_FROM or more transcendentals one after
# another run several vector iterations side by side (U.loop_hint says why);
# how many is measured per host (tuning "interleave": tanh(exp(sqrt)) in a row ran
# 25% faster with 4 on the first hosts measured). tanh(x) * exp(x), whose two
# chains already overlap, and single transcendentals gained nothing.
INTERLEAVE_FROM = 2
INTERLEAVE_BUDGET = 512   # code-size units (passes.fuse.code_size) of a body x its copies


def _serial_depth(kernel) -> int:
    """The most EXPENSIVE equations on one path through the kernel's expression."""
    depth: dict = {}
    for e in kernel.eqns:
        d = max((depth.get(id(a), 0) for a in e.inputs if isinstance(a, Var)), default=0)
        d += e.prim.name in EXPENSIVE
        for o in e.outputs:
            depth[id(o)] = d
    return max(depth.values(), default=0)


def _interleave(b, kernel):
    """The innermost loop's metadata: not unrolled (U.loop_hint), and for a chain of
    transcendentals `interleave` vector iterations side by side (latency hiding),
    fewer where the body is large: each copy is the whole body again for LLVM to
    compile (a 100-operation chain compiled 3x faster at 1 than at 4), and a large
    body overlaps its iterations anyway."""
    count = tuning.value("interleave")
    if not count or _serial_depth(kernel) < INTERLEAVE_FROM:
        return U.loop_hint(b.module, unroll=False)
    size = sum(code_size(e) for e in kernel.eqns)
    while count > 1 and count * size > INTERLEAVE_BUDGET:
        count //= 2                       # (powers of two: 7 copies ran slower than 8)
    return U.loop_hint(b.module, count, unroll=False)


def _transposes_last_dim(kernel) -> bool:
    """Does the kernel read some input with its last output index on another dim?"""
    return any(e.prim.name == "transpose" and e.params["permutation"][-1] !=
               len(e.params["permutation"]) - 1 for e in kernel.eqns)


_REDUCE_INIT = {
    "reduce_sum": lambda dt: 0,
    "reduce_prod": lambda dt: 1,
    "reduce_max": lambda dt: -np.inf if U.is_float(dt) else (
        False if np.dtype(dt) == np.bool_ else np.iinfo(dt).min),
    "reduce_min": lambda dt: np.inf if U.is_float(dt) else (
        True if np.dtype(dt) == np.bool_ else np.iinfo(dt).max),
}


def _combine(b, name, acc, x, dt):
    """One step of the reduction, on scalars or vectors. Float steps carry no
    fast-math flags: with `reassoc nsz` LLVM turned sum(a * s) into s * sum(a) (0
    from infinite terms) and dropped zero signs. The kernels reorder float sums
    themselves, explicitly (_float_reduction)."""
    if name == "reduce_sum":
        return b.fadd(acc, x) if U.is_float(dt) else b.add(acc, x)
    if name == "reduce_prod":
        return b.fmul(acc, x) if U.is_float(dt) else b.mul(acc, x)
    if U.is_float(dt):
        # llvm.maximum/minimum propagate NaN and order -0 < +0, as XLA's max/min
        op = "llvm.maximum" if name == "reduce_max" else "llvm.minimum"
        return U.call_intrinsic(b, op, [acc, x])
    return SCALAR["max" if name == "reduce_max" else "min"](b, [acc, x], dt, dt)


def _reduce_over(b, em, xs, names, at, red_shape, outer=None, spill=None) -> list:
    """Each xs[r] reduced by names[r] over red_shape (one list per merged kernel's
    roots, operands of one shape and dtype: their shared values are computed once
    per element); at(ridx) is the operands' full index for reduced index ridx.
    outer=(lo, hi) restricts the first reduced dim (a parallel part)."""
    dt = xs[0].aval.dtype
    if 0 in red_shape:
        return [U.const(dt, _REDUCE_INIT[n](dt)) for n in names]
    if not red_shape:                       # over no dims: the element itself
        return _elements(b, em, xs, at([]), spill)
    n = red_shape[-1]
    span = n if len(red_shape) > 1 or outer is None else -(-n // reduce_parts_of(n))
    span = hinted(span)           # (both paths hold at every size: a choice of speed)
    if U.is_float(dt) and span >= _vector_lanes(b, dt):
        return _float_reduction(b, em, xs, names, at, red_shape, outer, spill, span)
    # In order: integers are associative (LLVM vectorises this loop itself), and a
    # short float row unrolls into straight code, vectorised across the kept dims.
    accs = []
    for name in names:
        accs.append(U.alloca_entry(b, U.compute_type(dt), "acc"))
        b.store(_start(name, dt), accs[-1])
    with U.loop_nest(b, red_shape, "r", outer=outer) as ridx:
        for acc, name, v in zip(accs, names, _elements(b, em, xs, at(ridx), spill)):
            b.store(_combine(b, name, b.load(acc), v, dt), acc)
    return [_finish(b, name, b.load(acc), dt) for acc, name in zip(accs, names)]


def _start(name, dt):
    """The accumulator's first value. Float sums start at -0.0: x + -0.0 is x for
    every x, so LLVM may drop that add; _finish adds the +0.0 NumPy starts with."""
    return U.const(dt, -0.0) if name == "reduce_sum" and U.is_float(dt) else \
        U.const(dt, _REDUCE_INIT[name](dt))


def _finish(b, name, acc, dt):
    """A zero sum is +0.0 as in NumPy and XLA (their sums start at +0.0); a sum of
    -0.0 only is -0.0 until here."""
    if name == "reduce_sum" and U.is_float(dt):
        return b.fadd(acc, U.const(dt, 0.0))
    return acc


def _elements(b, em, xs, full, spill) -> list:
    """The operands' elements at one index (spill stores the first's)."""
    vs = [em.value(x, full) for x in xs]
    if spill is not None:
        U.store(b, vs[0], spill, U.linear(b, full, xs[0].aval.shape), xs[0].aval.dtype)
    em.memo.clear()           # values at inner indices do not outlive them
    return vs


# Float reductions keep ACCUMULATORS vectors of partial results, so that several
# vector adds are in flight at once (an add's latency is several cycles).
ACCUMULATORS = 4


def _vector_lanes(b, dt) -> int:
    """Elements of dt's compute type in one vector register of the target."""
    size = 4 if U.is_half(dt) else np.dtype(dt).itemsize
    return target.vector_bytes(target.of_module(b.module)) // size


def _lane_count(b, dt, span: int, roots: int = 1) -> int:
    """Partial results of a float reduction whose innermost loop runs about `span`
    times: ACCUMULATORS vectors of the target's width, fewer (a power of two, at
    most span) for short rows, whose lanes would mostly stay empty. Merged roots
    share the ACCUMULATORS (at least a vector each): their adds are independent
    of each other, and fewer lane vectors stay in registers across the loop."""
    full = _vector_lanes(b, dt) * max(1, ACCUMULATORS // roots)
    k = 1
    while k * 2 <= min(full, max(span, 1)):
        k *= 2
    return k


SHORT_ROW_BLOCKS = 8


def _float_reduction(b, em, xs, names, at, red_shape, outer, spill, span) -> list:
    """Element i of the innermost reduced dim goes to partial result i mod K (K lanes
    in an array the loop vectoriser turns into K/W vector registers: its inner loop
    over the lanes is elementwise, so needs no permission to reorder); the lanes
    combine pairwise at the end. This fixed order is the only reassociation.
    Merged roots keep one lane array each."""
    dt = xs[0].aval.dtype
    ct = U.compute_type(dt)
    *lead, n = red_shape
    inner = outer if not lead and outer is not None else None
    k = _lane_count(b, dt, span, len(xs))
    vec = ir.VectorType(ct, k)
    accs, lanes = [], []
    for name in names:
        accs.append(U.alloca_entry(b, vec, "acc"))
        b.store(ir.Constant(vec, [_start(name, dt)] * k), accs[-1])
        lanes.append(b.bitcast(accs[-1], ct.as_pointer()))

    def block(lead_idx, base, count):
        with U.for_between(b, U.i64(0), count, "lane") as j:
            vs = _elements(b, em, xs, at(lead_idx + [b.add(base, j)]), spill)
            for arr, name, v in zip(lanes, names, vs):
                lane = b.gep(arr, [j], source_etype=ct)
                b.store(_combine(b, name, b.load(lane, typ=ct), v, dt), lane)

    with U.loop_nest(b, lead, "r", outer=outer if lead else None) as lead_idx:
        lo, hi = inner if inner is not None else (U.i64(0), U.i64(n))
        stop = b.add(lo, b.and_(b.sub(hi, lo), U.i64(-k)))     # k is a power of two
        # Not unrolled where that only cost LLVM time (run times level: layernorm
        # 512 and 1024 wide, softmax): a short row (at most SHORT_ROW_BLOCKS blocks)
        # became straight code of n scalar steps for the SLP vectoriser to rebuild
        # (attention's layernorm rows: 43 -> 27 ms of LLVM), and a block storing its
        # elements (spill), vectorised with a run-time overlap check and a scalar
        # copy, came out 8 times over (its softmax rows: LLVM time halved). A long
        # one keeps LLVM's partial unrolling (a 2048 x 2048 sum: 4% faster).
        short = inner is None and not U.is_symbolic(n) and n // k <= SHORT_ROW_BLOCKS
        hint = U.loop_hint(b.module, unroll=False) if spill is not None or short else None
        with U.for_step(b, lo, stop, k, "blk", hint) as base:
            block(lead_idx, base, U.i64(k))
        block(lead_idx, stop, b.sub(hi, stop))                 # the last n mod k
    return [_finish(b, name, _combine_lanes(b, name, b.load(acc, typ=vec), k, dt), dt)
            for acc, name in zip(accs, names)]


def _combine_lanes(b, name, v, k, dt):
    """Pairwise: the upper half of the lanes onto the lower half, until one is left."""
    while k > 1:
        k //= 2
        low = b.shuffle_vector(v, v, _lane_range(0, k))
        high = b.shuffle_vector(v, v, _lane_range(k, k))
        v = _combine(b, name, low, high, dt)
    return b.extract_element(v, U.i64(0))


def _lane_range(first: int, count: int) -> ir.Constant:
    return ir.Constant(ir.VectorType(U.I32, count), list(range(first, first + count)))


def _axes(root) -> tuple:
    return root.params["axes"] if "axes" in root.params else (root.params["axis"],)


def _roots(kernel) -> tuple:
    """(operands, primitive names, outputs) of a reduce kernel's roots."""
    roots = getattr(kernel, "roots", [kernel.root])
    return ([r.inputs[0] for r in roots], [r.prim.name for r in roots],
            [r.outputs[0] for r in roots])


def emit_reduce(b: ir.IRBuilder, kernel, buffers, consts, outer=None, fixed=(),
                spill=None) -> None:
    """Loops over the kept dims, accumulating over the reduced ones (each root of a
    merged kernel into its own output). spill=(ptr) also stores each reduced
    element there (for a later kernel of the row group; single roots only)."""
    root = kernel.root
    b.jx_outline = mathcalls.wanted(kernel, b.module)
    xs, names, outs = _roots(kernel)
    x, out, name = xs[0], outs[0], names[0]
    axes = _axes(root)
    kept = [d for d in range(x.aval.ndim) if d not in axes]
    red_shape = [x.aval.shape[d] for d in axes]
    out_shape = out.aval.shape
    if 0 in out_shape:
        return
    em = FusedEmitter(b, kernel, buffers, consts)
    if all(_by_rows(b, x, o, n, axes, fixed, spill) for o, n in zip(outs, names)):
        return _emit_by_rows(b, em, xs, names, [buffers[id(o)] for o in outs], kept, axes,
                             out_shape, outer)
    with U.loop_nest(b, out_shape, "o", outer=outer, fixed=fixed) as oidx:
        if name in ("argmax", "argmin"):
            res = [convert(b, _arg_reduce(b, em, x, kept, axes, red_shape, oidx, name),
                           np.int64, out.aval.dtype)]
        else:
            res = _reduce_over(b, em, xs, names,
                               lambda ridx: _merge(kept, oidx, axes, ridx, x.aval.ndim),
                               red_shape, spill=spill)
        off = U.linear(b, oidx, out_shape)
        for v, o in zip(res, outs):
            U.store(b, v, buffers[id(o)], off, o.aval.dtype)


def _by_rows(b, x, out, name, axes, fixed, spill) -> bool:
    """Should a reduction that keeps x's last dim (column sums) accumulate row after
    row into its output? Reading each column at a stride ran ~30x slower. Only
    where the output holds the compute type (no float16 rounding in between)."""
    dt = x.aval.dtype
    return (name in _REDUCE_INIT and x.aval.ndim > 0 and axes
            and x.aval.ndim - 1 not in axes and not fixed
            and spill is None and out.aval.dtype == dt
            and U.compute_type(dt) == U.storage_type(dt)
            and hinted(x.aval.shape[-1]) >= _vector_lanes(b, dt))    # (a choice of speed)


def _emit_by_rows(b, em, xs, names, ptrs, kept, axes, out_shape, outer) -> None:
    """out[..., j] = init, then out[..., j] = combine(out[..., j], x[..., r, ..., j])
    for each reduced index r in order: every step a contiguous, vectorisable row
    update, and each column reduced in NumPy's order (each root into its output)."""
    x = xs[0]
    dt = x.aval.dtype
    *lead, m = out_shape
    red_shape = [x.aval.shape[d] for d in axes]
    cols = outer if outer is not None and not lead else (U.i64(0), U.i64(m))

    def columns(body):
        with U.for_between(b, cols[0], cols[1], "col") as j:
            oidx = lidx + [j]
            body(oidx, U.linear(b, oidx, out_shape))

    def init(oidx, off):
        for ptr, name in zip(ptrs, names):
            U.store(b, U.const(dt, _REDUCE_INIT[name](dt)), ptr, off, dt)

    with U.loop_nest(b, lead, "o", outer=outer if lead else None) as lidx:
        columns(init)
        if 0 not in red_shape:
            with U.loop_nest(b, red_shape, "r") as ridx:
                def step(oidx, off):
                    vs = _elements(b, em, xs, _merge(kept, oidx, axes, ridx, x.aval.ndim),
                                   None)
                    for ptr, name, v in zip(ptrs, names, vs):
                        U.store(b, _combine(b, name, U.load(b, ptr, off, dt), v, dt),
                                ptr, off, dt)
                columns(step)


def _merge(kept, oidx, axes, ridx, ndim):
    full = [None] * ndim
    for d, i in zip(kept, oidx):
        full[d] = i
    for d, i in zip(axes, ridx):
        full[d] = i
    return full


def _arg_reduce(b, em, x, kept, axes, red_shape, oidx, name):
    """First index of the max (min); a NaN wins at its first occurrence, as NumPy."""
    dt = x.aval.dtype
    (n,) = red_shape
    best = U.alloca_entry(b, U.compute_type(dt), "best")
    best_i = U.alloca_entry(b, U.I64, "best_i")
    first = em.value(x, _merge(kept, oidx, axes, [U.i64(0)], x.aval.ndim))
    b.store(first, best)
    b.store(U.i64(0), best_i)
    em.memo.clear()
    if U.is_symbolic(n) or n > 1:
        with U.for_range(b, n - 1, "r") as r:
            i = b.add(r, U.i64(1))
            v = em.value(x, _merge(kept, oidx, axes, [i], x.aval.ndim))
            cur = b.load(best)
            if U.is_float(dt):
                better = b.fcmp_ordered(">" if name == "argmax" else "<", v, cur)
                cur_nan = b.fcmp_unordered("uno", cur, cur)
                v_nan = b.fcmp_unordered("uno", v, v)
                take = b.and_(b.not_(cur_nan), b.or_(better, v_nan))
            else:
                cmp = b.icmp_signed if U.is_signed(dt) else b.icmp_unsigned
                take = cmp(">" if name == "argmax" else "<", v, cur)
            b.store(b.select(take, v, cur), best)
            b.store(b.select(take, i, b.load(best_i)), best_i)
            em.memo.clear()
    return b.load(best_i)


def reduce_parts(kernel) -> int:
    """Chunks a full reduction (scalar result) is split into for parallel partials;
    0 when the kernel is not such a reduction."""
    root = kernel.root
    if root.prim.name not in _REDUCE_INIT or root.outputs[0].aval.shape != ():
        return 0
    (x,) = root.inputs
    return reduce_parts_of(x.aval.shape[root.params["axes"][0]] if x.aval.shape else 0)


def reduce_parts_of(first) -> int:
    """reduce_parts for a reduction whose first reduced dim has `first` elements
    (symbolic: 64, some of them empty at small sizes)."""
    return 64 if U.is_symbolic(first) else min(64, first)


def emit_reduce_part(b: ir.IRBuilder, kernel, buffers, consts, lo, hi, parts: int,
                     partials) -> None:
    """partials[r * parts + c] = root r's reduction over chunk c of the first reduced
    axis, c in [lo, hi)."""
    root = kernel.root
    b.jx_outline = mathcalls.wanted(kernel, b.module)
    xs, names, _ = _roots(kernel)
    x = xs[0]
    axes = root.params["axes"]
    red_shape = [x.aval.shape[d] for d in axes]
    n0 = red_shape[0]
    em = FusedEmitter(b, kernel, buffers, consts)
    ct = U.compute_type(x.aval.dtype)
    with U.for_between(b, lo, hi, "c") as c:
        start = b.udiv(b.mul(c, U.i64(n0)), U.i64(parts))
        stop = b.udiv(b.mul(b.add(c, U.i64(1)), U.i64(n0)), U.i64(parts))
        res = _reduce_over(b, em, xs, names,
                           lambda ridx: _merge([], [], axes, ridx, x.aval.ndim),
                           red_shape, outer=(start, stop))
        for r, v in enumerate(res):
            slot = b.add(c, U.i64(r * parts)) if r else c
            b.store(v, b.gep(partials, [slot], source_etype=ct))


def emit_reduce_combine(b: ir.IRBuilder, kernel, buffers, parts: int, partials) -> None:
    xs, names, outs = _roots(kernel)
    dt = xs[0].aval.dtype
    ct = U.compute_type(dt)
    for r, (name, out) in enumerate(zip(names, outs)):
        acc = b.load(b.gep(partials, [U.i64(r * parts)], source_etype=ct))
        for c in range(1, parts):
            acc = _combine(b, name, acc, b.load(b.gep(partials, [U.i64(r * parts + c)],
                                                       source_etype=ct)), dt)
        U.store(b, acc, buffers[id(out)], U.i64(0), out.aval.dtype)
