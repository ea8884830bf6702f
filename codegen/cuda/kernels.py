"""GPU kernels for a fused Program, emitted into one NVPTX module.

  loop      a grid-stride loop over the flat output index, VEC consecutive
            elements per thread (adjacent loads merge into vector loads), then
            a scalar tail.
  reduce    one block per output (row) with a warp-shuffle + shared-memory tree
            when the reduced dims are trailing and long; a two-pass grid
            reduction (block partials, then one block) for a long full
            reduction; otherwise one thread per output.
  rows      a row-fused group (softmax, layernorm): one block per row runs
            every member's loop over that row, a barrier between members.
  serial    any other opaque primitive (sort, gather, scatter, control flow,
            ...): the CPU backend's lowering of the kernel, run by one GPU
            thread. Correct, not fast; its status lands in a status word.

Element values come from the CPU backend's FusedEmitter/INDEX_RULES/SCALAR
(target-independent IR), with one addition: a buffer read at the very index
being produced is a load at the flat offset, skipping the index arithmetic.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import llvmlite.ir as ir
import numpy as np

from jx.errors import MissingRuleError
from jx.ir import Literal, ShapedArray

from jx.codegen.cpu import irutil as U
from jx.codegen.cpu.fused import _REDUCE_INIT, FusedEmitter, _arg_reduce, _combine, _merge
from jx.codegen.cpu.module import ModuleBuilder
from jx.codegen.cpu import opaque
from jx.codegen.cpu.rowfuse import group_buffers
from jx.codegen.cpu.scalar import convert

from . import nvvm as N

BLOCK = 256              # threads per block of loop and partial-reduce kernels
VEC = 4                  # consecutive elements per thread per loop iteration
MAX_GRID = 1 << 20       # grid-stride loops cover the rest
TWO_PASS_MIN = 1 << 15   # a full reduction at least this long runs on many blocks
PARTIAL_BLOCKS = 1024
ROW_BLOCK_MIN = 32       # reduced length from which a block per output pays


class Scratch:
    """A workspace buffer that is no graph value (reduction partials, status)."""

    def __init__(self, size: int, dtype):
        self.aval = ShapedArray((size,), np.dtype(dtype))


STATUS_DTYPE = np.int32


@dataclass(eq=False)
class Launch:
    kernel: str
    grid: int
    block: int
    args: list                 # Vars / Scratch, one per kernel parameter
    reads: list = field(default_factory=list)
    writes: list = field(default_factory=list)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _axes(root) -> tuple:
    return tuple(root.params["axes"]) if "axes" in root.params else (root.params["axis"],)


class GpuEmitter(FusedEmitter):
    """FusedEmitter that loads a buffer directly at a registered flat offset when it
    is read at the index being produced and has that index's shape."""

    def __init__(self, b, kernel, buffers, consts):
        super().__init__(b, kernel, buffers, consts)
        self.flat: dict = {}

    def at(self, idx, flat, shape) -> None:
        self.flat[tuple(id(i) for i in idx)] = (flat, tuple(shape), idx)

    def known(self, atom, idx):
        if not isinstance(atom, Literal) and id(atom) in self.buffers:
            key = tuple(id(i) for i in idx)
            hit = self.flat.get(key)
            if hit is not None and hit[1] == tuple(atom.aval.shape):
                mkey = (id(atom), key)
                if mkey not in self.memo:
                    self.memo[mkey] = U.load(self.b, self.buffers[id(atom)], hit[0],
                                             atom.aval.dtype)
                return self.memo[mkey]
        return super().known(atom, idx)


class _Group:
    """A row group's members as one unit (CPU rowfuse semantics)."""

    def __init__(self, members):
        _single_outputs(members)
        self.inputs, self.outputs = group_buffers(members)


def _single_outputs(kernels) -> None:
    """A GPU reduction writes one output per row; merged siblings arrive split
    (passes.siblings.split_siblings) or their other outputs would go unwritten."""
    for k in kernels:
        if k.siblings:
            raise AssertionError(f"{k.name}: a merged reduction reached the CUDA emitter "
                                 "unsplit (split_siblings first)")


class GpuModule:
    """Kernels of one or more Programs in one NVPTX module. The CPU ModuleBuilder
    (serial, no thread pool) shares the module for the serial fallbacks."""

    def __init__(self, name: str = "jx"):
        self.mb = ModuleBuilder(name, parallel=False, external_routines=False)
        self.module = self.mb.module
        self.consts = self.mb.consts
        self.count = 0
        self.status = Scratch(1, STATUS_DTYPE)   # failure word of the serial kernels

    # ------------------------------------------------------------------ helpers
    def _begin(self, tag: str, nparams: int, max_threads: int):
        name = f"k{self.count}_{tag}"
        self.count += 1
        fn = N.declare_kernel(self.module, name, nparams, max_threads)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        return name, fn, b

    def _emitter(self, b, kernel, buffers):
        return GpuEmitter(b, kernel, buffers, self.consts)

    # ------------------------------------------------------------------ loop kernels
    def loop(self, kernel) -> list:
        (out,) = kernel.outputs
        shape = out.aval.shape
        n = out.aval.size
        if n == 0:
            return []
        atoms = list(kernel.inputs) + [out]
        name, fn, b = self._begin(f"loop_{kernel.root.prim.name}", len(atoms), BLOCK)
        buffers = {id(a): p for a, p in zip(atoms, fn.args)}
        gid, gsz = N.global_id(b), N.global_size(b)
        nvec = n // VEC if n >= VEC * BLOCK else 0

        def element(em, flat):
            idx = U.delinear(b, flat, shape)
            em.at(idx, flat, shape)
            U.store(b, em.value(out, idx), buffers[id(out)], flat, out.aval.dtype)

        if nvec:
            with N.stride_loop(b, gid, gsz, U.i64(nvec), "v") as v:
                em = self._emitter(b, kernel, buffers)
                base = b.mul(v, U.i64(VEC), flags=["nuw", "nsw"])
                for j in range(VEC):
                    element(em, b.add(base, U.i64(j), flags=["nuw", "nsw"]) if j else base)
        start = nvec * VEC
        if start < n:
            with N.stride_loop(b, b.add(gid, U.i64(start)), gsz, U.i64(n), "t") as i:
                element(self._emitter(b, kernel, buffers), i)
        b.ret_void()
        work = max(nvec, n - start)
        return [Launch(name, min(_cdiv(work, BLOCK), MAX_GRID), BLOCK, atoms,
                       list(kernel.inputs), [out])]

    # ------------------------------------------------------------------ reductions
    def reduce(self, kernel) -> list:
        _single_outputs([kernel])
        root = kernel.root
        (x,) = root.inputs
        (out,) = root.outputs
        if out.aval.size == 0:
            return []
        axes = _axes(root)
        length = _size([x.aval.shape[d] for d in axes])
        trailing = axes == tuple(range(x.aval.ndim - len(axes), x.aval.ndim))
        if root.prim.name in ("argmax", "argmin"):
            return self._reduce_serial(kernel)
        if out.aval.size == 1 and length >= TWO_PASS_MIN:
            return self._reduce_two_pass(kernel)
        if trailing and length >= ROW_BLOCK_MIN:
            return self.rows([kernel], tuple(out.aval.shape))
        return self._reduce_serial(kernel)

    def _reduce_serial(self, kernel) -> list:
        """One thread per output element, a serial loop over the reduced dims."""
        root = kernel.root
        (x,) = root.inputs
        (out,) = root.outputs
        atoms = list(kernel.inputs) + [out]
        name, fn, b = self._begin(f"reduce_{root.prim.name}", len(atoms), BLOCK)
        buffers = {id(a): p for a, p in zip(atoms, fn.args)}
        n_out = out.aval.size
        with N.stride_loop(b, N.global_id(b), N.global_size(b), U.i64(n_out), "o") as o:
            oidx = U.delinear(b, o, out.aval.shape)
            res = self._reduce_at(b, kernel, buffers, oidx)
            U.store(b, res, buffers[id(out)], o, out.aval.dtype)
        b.ret_void()
        return [Launch(name, min(_cdiv(n_out, BLOCK), MAX_GRID), BLOCK, atoms,
                       list(kernel.inputs), [out])]

    def _reduce_at(self, b, kernel, buffers, kept_idx):
        """The reduction for one output index, serially (result in the output's type)."""
        root = kernel.root
        (x,) = root.inputs
        (out,) = root.outputs
        name = root.prim.name
        axes = _axes(root)
        kept = [d for d in range(x.aval.ndim) if d not in axes]
        red_shape = [x.aval.shape[d] for d in axes]
        dt = x.aval.dtype
        em = self._emitter(b, kernel, buffers)
        if name in ("argmax", "argmin"):
            return convert(b, _arg_reduce(b, em, x, kept, axes, red_shape, kept_idx, name),
                           np.int64, out.aval.dtype)
        acc = U.alloca_entry(b, U.compute_type(dt), "acc")
        b.store(U.const(dt, _REDUCE_INIT[name](dt)), acc)
        if 0 not in red_shape:
            with U.loop_nest(b, red_shape, "r") as ridx:
                v = em.value(x, _merge(kept, kept_idx, axes, ridx, x.aval.ndim))
                b.store(_combine(b, name, b.load(acc), v, dt), acc)
                em.memo.clear()
        return b.load(acc)

    def _reduce_two_pass(self, kernel) -> list:
        """Scalar result of a long reduction: PARTIAL_BLOCKS block partials, then one block."""
        root = kernel.root
        (x,) = root.inputs
        (out,) = root.outputs
        name = root.prim.name
        dt = x.aval.dtype
        pdt = np.dtype(np.float32) if dt == np.float16 else dt
        n = x.aval.size
        shape = x.aval.shape
        grid = min(PARTIAL_BLOCKS, _cdiv(n, BLOCK * VEC * 4))
        partials = Scratch(grid, pdt)
        init = U.const(dt, _REDUCE_INIT[name](dt))

        def comb(b):
            return lambda a, c: _combine(b, name, a, c, dt)

        atoms = list(kernel.inputs) + [partials]
        kname, fn, b = self._begin(f"reduce_{name}_part", len(atoms), BLOCK)
        buffers = {id(a): p for a, p in zip(atoms, fn.args)}
        acc = U.alloca_entry(b, U.compute_type(dt), "acc")
        b.store(init, acc)
        gid, gsz = N.global_id(b), N.global_size(b)

        def element(em, flat):
            idx = U.delinear(b, flat, shape)
            em.at(idx, flat, shape)
            b.store(comb(b)(b.load(acc), em.value(x, idx)), acc)

        nvec = n // VEC
        with N.stride_loop(b, gid, gsz, U.i64(nvec), "v") as v:
            em = self._emitter(b, kernel, buffers)
            base = b.mul(v, U.i64(VEC), flags=["nuw", "nsw"])
            for j in range(VEC):
                element(em, b.add(base, U.i64(j), flags=["nuw", "nsw"]) if j else base)
        if nvec * VEC < n:
            with N.stride_loop(b, b.add(gid, U.i64(nvec * VEC)), gsz, U.i64(n), "t") as i:
                element(self._emitter(b, kernel, buffers), i)
        total = N.block_reduce(b, b.load(acc), comb(b), init)
        with b.if_then(b.icmp_unsigned("==", N.tid(b), U.i64(0))):
            U.store(b, total, fn.args[-1], N.ctaid(b), pdt)
        b.ret_void()
        first = Launch(kname, grid, BLOCK, atoms, list(kernel.inputs), [partials])

        kname, fn, b = self._begin(f"reduce_{name}_final", 2, BLOCK)
        src, dst = fn.args
        acc = U.alloca_entry(b, U.compute_type(dt), "acc")
        b.store(init, acc)
        with N.stride_loop(b, N.tid(b), N.ntid(b), U.i64(grid), "p") as i:
            v = convert(b, U.load(b, src, i, pdt), pdt, dt) if pdt != dt else U.load(b, src, i, dt)
            b.store(comb(b)(b.load(acc), v), acc)
        total = N.block_reduce(b, b.load(acc), comb(b), init)
        with b.if_then(b.icmp_unsigned("==", N.tid(b), U.i64(0))):
            U.store(b, total, dst, U.i64(0), out.aval.dtype)
        b.ret_void()
        return [first, Launch(kname, 1, BLOCK, [partials, out], [partials], [out])]

    # ------------------------------------------------------------------ row groups
    def rows(self, members: list, rows: tuple) -> list:
        """One block per row: each member's elements (or reduction) over the row."""
        group = _Group(members)
        atoms = group.inputs + group.outputs
        n_rows = _size(rows)
        inner = 1
        for k in members:
            src = k.root.inputs[0] if k.kind == "reduce" else k.outputs[0]
            inner = max(inner, _size(src.aval.shape[len(rows):]))
        threads = 32
        while threads < 256 and threads * 4 < inner:
            threads *= 2
        self._threads = threads
        tag = "rows_" + "_".join(k.root.prim.name for k in members)
        name, fn, b = self._begin(tag[:60], len(atoms), threads)
        buffers = {id(a): p for a, p in zip(atoms, fn.args)}
        if n_rows:
            with N.stride_loop(b, N.ctaid(b), N.nctaid(b), U.i64(n_rows), "row") as r:
                fixed = U.delinear(b, r, rows)
                for i, k in enumerate(members):
                    if i:
                        N.barrier(b)        # members read earlier members' row values
                    if k.kind == "reduce":
                        self._row_reduce(b, k, buffers, fixed, r, len(rows))
                    else:
                        self._row_loop(b, k, buffers, fixed, r, len(rows))
                N.barrier(b)
        b.ret_void()
        return [Launch(name, min(n_rows, MAX_GRID) or 1, threads, atoms, group.inputs,
                       group.outputs)] if n_rows else []

    def _row_elements(self, b, length: int, body) -> None:
        """body(e) for the row's elements e in [0, length): VEC consecutive ones per
        thread and iteration when they divide the row (adjacent loads merge into
        vector loads), else one. When the block's threads divide the row evenly the
        iterations are unrolled, so a thread's loads are all in flight at once."""
        vec = VEC if length % VEC == 0 and length >= VEC * 32 else 1
        chunks, threads = length // vec, self._threads
        if chunks % threads == 0 and chunks // threads <= 8:
            t_id = N.tid(b)
            for i in range(chunks // threads):
                q = b.add(t_id, U.i64(i * threads), flags=["nuw", "nsw"]) if i else t_id
                base = b.mul(q, U.i64(vec), flags=["nuw", "nsw"]) if vec > 1 else q
                body([b.add(base, U.i64(j), flags=["nuw", "nsw"]) if j else base
                      for j in range(vec)])
            return
        with N.stride_loop(b, N.tid(b), N.ntid(b), U.i64(chunks), "e") as q:
            base = b.mul(q, U.i64(vec), flags=["nuw", "nsw"]) if vec > 1 else q
            body([b.add(base, U.i64(j), flags=["nuw", "nsw"]) if j else base
                  for j in range(vec)])

    def _row_loop(self, b, kernel, buffers, fixed, r, nrow):
        (out,) = kernel.outputs
        shape = out.aval.shape
        inner = shape[nrow:]
        length = _size(inner)
        if length == 0:
            return
        row0 = b.mul(r, U.i64(length))

        def body(es):
            em = self._emitter(b, kernel, buffers)
            for e in es:
                idx = list(fixed) + U.delinear(b, e, inner)
                flat = b.add(row0, e)
                em.at(idx, flat, shape)
                U.store(b, em.value(out, idx), buffers[id(out)], flat, out.aval.dtype)

        self._row_elements(b, length, body)

    def _row_reduce(self, b, kernel, buffers, fixed, r, nrow):
        root = kernel.root
        (x,) = root.inputs
        (out,) = root.outputs
        name = root.prim.name
        axes = _axes(root)
        kept = [d for d in range(x.aval.ndim) if d not in axes]
        n_in = _size(out.aval.shape[nrow:])       # outputs per row beyond the row dims
        red_shape = [x.aval.shape[d] for d in axes]
        length = _size(red_shape)
        if n_in != 1 or name in ("argmax", "argmin") or length == 0:
            # several outputs per row (or an arg-reduction): a thread per output
            with N.stride_loop(b, N.tid(b), N.ntid(b), U.i64(n_in), "ro") as o:
                rest = U.delinear(b, o, out.aval.shape[nrow:])
                oidx = list(fixed) + rest
                res = self._reduce_at(b, kernel, buffers, oidx)
                flat = b.add(b.mul(r, U.i64(n_in)), o)
                U.store(b, res, buffers[id(out)], flat, out.aval.dtype)
            return
        dt = x.aval.dtype
        init = U.const(dt, _REDUCE_INIT[name](dt))
        acc = U.alloca_entry(b, U.compute_type(dt), "acc")
        b.store(init, acc)
        contiguous = kept == list(range(nrow))
        row0 = b.mul(r, U.i64(length))

        def body(es):
            em = self._emitter(b, kernel, buffers)
            for e in es:
                full = _merge(kept, fixed, axes, U.delinear(b, e, red_shape), x.aval.ndim)
                if contiguous:
                    em.at(full, b.add(row0, e), x.aval.shape)
                b.store(_combine(b, name, b.load(acc), em.value(x, full), dt), acc)

        self._row_elements(b, length, body)
        total = N.block_reduce(b, b.load(acc), lambda a, c: _combine(b, name, a, c, dt), init)
        with b.if_then(b.icmp_unsigned("==", N.tid(b), U.i64(0))):
            U.store(b, total, buffers[id(out)], r, out.aval.dtype)

    # ------------------------------------------------------------------ serial fallback
    def serial(self, kernel) -> list:
        """The CPU lowering of an opaque kernel, run by a single GPU thread."""
        prim = kernel.root.prim.name
        if opaque.rule(prim) is None:
            raise MissingRuleError(
                f"cuda backend: no lowering for primitive '{prim}'"
                + (f" (from {kernel.root.source})" if kernel.root.source else "")
                + "; compute it outside the compiled function or use backend='cpu'")
        cpu_fn, atoms = self.mb.kernel_function(kernel)
        params = list(atoms) + [self.status]
        name, fn, b = self._begin(f"serial_{prim}", len(params), 1)
        with b.if_then(b.icmp_unsigned("==", N.global_id(b), U.i64(0))):
            args = [b.addrspacecast(p, U.PTR) for p in fn.args[:-1]]
            st = b.call(cpu_fn, args)
            with b.if_then(b.icmp_unsigned("!=", st, ir.Constant(U.I32, 0))):
                b.store(st, fn.args[-1])
        b.ret_void()
        return [Launch(name, 1, 1, params, list(kernel.inputs), list(kernel.outputs))]
