"""Programs -> one LLVM module: a function per kernel and an exported C entry
point per model entry, `int32_t P_<entry>(const void** inputs, void** outputs)`
(P: the artifact's prefix, runtime/abi.py; "jx" for jx.jit's modules).

Buffers: graph inputs are the caller's input pointers, graph outputs the
caller's output pointers (kernels write them directly), intermediates are
malloc'ed at the start of the call and freed at its end. Status 0 is success,
1 means an allocation failed.
"""
from __future__ import annotations

import contextlib
import hashlib

import llvmlite.ir as ir
import numpy as np

from jx.dims import Constraints, Dim, InconclusiveDimensionError, hinting, symbols_of
from jx.dims import scope as dims_scope
from jx.ir import Literal, Var
from jx.passes.fuse_print import kernel_signature

from . import irutil as U
from .fused import (emit_loop, emit_reduce, emit_reduce_combine, emit_reduce_part,
                    reduce_parts)
from . import opaque
from . import compiler, epilogue, mathcalls, routines, split, target, tuning
# (the opaque rule families are imported when a program first needs one: opaque.rule)
from .rowfuse import group_buffers, row_groups, spill_plan

from jx.runtime.abi import (ABI_VERSION, CHECKSUM_SUFFIX, DIMS_LAST_SUFFIX, LEGACY_PREFIX,
                            MANIFEST_SUFFIX, PREFIX_SECTION, RUNTIME_EXPORTS, SHAPES_SUFFIX,
                            SIGNATURE_SUFFIX, STATUS_CANCELLED, STATUS_INVALID_DIMS,
                            STATUS_NULL_POINTER, STATUS_OK, STATUS_OUT_OF_MEMORY, VERSION_SUFFIX,
                            entry_symbol, signature)


class ConstPool:
    """Array literals as private global constants, deduplicated by content. An
    all-zero one is a zeroinitializer: no bytes to print, parse or emit for it (a
    scan's zero carries, 3 MB in the Mandelbrot sample, were printed byte by byte:
    100 ms of IR text before LLVM saw it), and LLVM folds its loads to zeros."""

    def __init__(self, module: ir.Module):
        self.module = module
        self.globals: dict = {}

    def array(self, val: np.ndarray) -> ir.GlobalVariable:
        val = np.ascontiguousarray(val)
        key = (val.dtype.str, val.shape, val.tobytes())
        if key not in self.globals:
            data = val.astype(np.uint8) if val.dtype == np.bool_ else val
            raw = bytearray(data.tobytes()) or bytearray(1)
            typ = ir.ArrayType(U.I8, len(raw))
            g = ir.GlobalVariable(self.module, typ, f"const.{len(self.globals)}")
            g.global_constant = True
            g.linkage = "private"
            g.align = 64
            g.initializer = ir.Constant(typ, None) if raw.count(0) == len(raw) else \
                ir.FormattedConstant(typ, _c_string(raw)) if len(raw) >= 1024 else \
                ir.Constant(typ, raw)
            self.globals[key] = g
        return self.globals[key]


_HEX = np.frombuffer(b"0123456789ABCDEF", np.uint8)


def _c_string(raw: bytes) -> str:
    """raw as an LLVM c"..." string, every byte escaped (\\XX), built by NumPy:
    llvmlite escapes byte by byte in Python (~30 ms a MB)."""
    a = np.frombuffer(raw, np.uint8)
    out = np.empty((a.size, 3), np.uint8)
    out[:, 0] = ord("\\")
    out[:, 1] = _HEX[a >> 4]
    out[:, 2] = _HEX[a & 15]
    return 'c"' + out.tobytes().decode("ascii") + '"'


ALIGN = 64
STACK_WORKSPACE = 64 * 1024     # workspaces up to this size live on the stack


def _extent(kernel):
    """(the shape whose first dim a kernel's threads would split, the elements it
    touches), or None for a kernel that always runs serially."""
    if kernel.kind == "loop":
        return kernel.outputs[0].aval.shape, kernel.outputs[0].aval.size * len(kernel.eqns)
    if kernel.kind == "reduce":
        if kernel.root.prim.name in ("argmax", "argmin") and not kernel.outputs[0].aval.shape:
            return None
        return (kernel.outputs[0].aval.shape or (reduce_parts(kernel),),
                kernel.root.inputs[0].aval.size)
    extent = opaque.parallel_extent(kernel.root.prim.name)
    return None if extent is None else extent(kernel)


def parallel_chunks(kernel) -> int:
    """How many rows of its outer loop a kernel is split over (0: run serially)."""
    extent = _extent(kernel)
    if extent is None:
        return 0
    shape, work = extent
    if not shape or (not U.is_symbolic(shape[0]) and shape[0] < 2):
        return 0
    if U.is_symbolic(shape[0]) or U.is_symbolic(work):
        return shape[0]       # split at run time (_run_parallel), as the sizes are known
    return shape[0] if work >= tuning.value("parallel_min_work") else 0


# Layout ops that keep row-major order: as a whole kernel they copy nothing.
VIEW_PRIMS = frozenset({"reshape", "squeeze", "expand_dims"})


def view_map(groups: list, fixed: dict) -> dict:
    """{id(out): root Var} for kernels that only reshape one materialised value: the
    output is the input's memory, read in place (attention's head splits were 2 MB
    copies each). Outputs bound to caller buffers stay copies."""
    views: dict = {}
    for _, members in groups:
        k = members[0]
        if len(members) == 1 and k.kind == "loop" and len(k.inputs) == 1 and \
                len(k.outputs) == 1 and id(k.outputs[0]) not in fixed and \
                all(e.prim.name in VIEW_PRIMS for e in k.eqns):
            src = k.inputs[0]
            views[id(k.outputs[0])] = views.get(id(src), src)
    return views


def plan_buffers(program, fixed: dict, views: dict | None = None,
                 groups: list | None = None) -> tuple:
    """Offsets of a program's intermediates in one workspace, reusing the memory of
    dead values. Lifetimes count in steps: a kernel, or a whole row-fused group
    (`groups`, as row_groups gives them), whose members interleave row by row, so
    a later member writes row 0 before an earlier one has read its last row.
    Memory freed by step s is reused only from step s+1 on, so no kernel's outputs
    alias what its step reads. `views` (see view_map) get no memory of their own;
    their roots live as long as they do. Returns ({id(Var): offset}, total)."""
    views = views or {}
    steps = [members for _, members in groups] if groups is not None else \
        [[k] for k in program.kernels]
    last_use: dict = {}
    for s, members in enumerate(steps):
        for kern in members:
            for v in kern.inputs:
                last_use[id(v)] = s
    for a in program.graph.outputs:
        last_use[id(a)] = len(steps)
    for vid, root in views.items():
        if vid in last_use:
            last_use[id(root)] = max(last_use.get(id(root), -1), last_use[vid])
    free: list = []               # (offset, size) blocks available for reuse
    dying: dict = {}              # step index -> blocks released after it runs
    offsets: dict = {}
    total = 0
    for s, members in enumerate(steps):
        for v in (v for kern in members for v in kern.outputs):
            if id(v) in fixed or id(v) in offsets or id(v) in views:
                continue
            size = U.aligned_size(v.aval.size * v.aval.dtype.itemsize, ALIGN)
            fit = min((blk for blk in free if _fits(blk[1], size)), default=None,
                      key=lambda blk: _sort_key(blk[1]))
            if fit is not None:
                free.remove(fit)
                off = fit[0]
                if fit[1] != size:
                    free.append((off + size, fit[1] - size))
            else:
                off, total = total, total + size
            offsets[id(v)] = off
            dying.setdefault(max(last_use.get(id(v), s), s), []).append((off, size))
        free.extend(dying.pop(s, []))
    return offsets, total


def _fits(block, size) -> bool:
    """Whether a free block holds `size` bytes at every value of the symbols."""
    try:
        return block >= size
    except InconclusiveDimensionError:
        return False


def _sort_key(size):
    """Smallest fitting block first (symbolic ones last, by name: a stable order)."""
    return (0, size, "") if not U.is_symbolic(size) else (1, 0, str(size))


class KernelContext:
    """What a kernel lowering sees: the builder and its buffers."""

    outer = None      # (lo, hi) of the first loop when the kernel runs in parallel chunks

    def __init__(self, b: ir.IRBuilder, buffers: dict, consts: ConstPool, module):
        self.b = b
        self.buffers = buffers
        self.consts = consts
        self.module = module
        self._fail = None

    @property
    def fail_block(self):
        """A block returning out-of-memory from the kernel (made on first use)."""
        if self._fail is None:
            self._fail = self.b.function.append_basic_block("fail")
            ir.IRBuilder(self._fail).ret(ir.Constant(U.I32, STATUS_OUT_OF_MEMORY))
        return self._fail

    def ptr(self, atom):
        if isinstance(atom, Literal):
            return self.consts.array(atom.val)
        return self.buffers[id(atom)]


class ModuleBuilder:
    def __init__(self, name: str = "jx", parallel: bool = False, cpu: str | None = None,
                 external_routines: bool = True, reloc: str = "default"):
        # llvmlite prints the name unescaped on a comment line: a newline would end it
        self.module = ir.Module("".join(c if c.isascii() and c.isprintable() else "_"
                                        for c in name))
        # the CPU the code is for: target-dependent lowerings read it from the module
        self.module.jx_cpu = cpu
        # routines (routines.py) declared here, compiled once per host; a module that
        # cannot link them (the CUDA backend's) keeps them inside
        self.module._jx_external_routines = external_routines
        if external_routines:           # a routine the host has compiled is not emitted
            # (reloc: the routine objects' form, "default" for jx.jit, "pic" for
            # an artifact's shared object; see compiler.routine_object)
            self.module._jx_routine_lookup = lambda name: compiler.find_routine(
                name, target.of_module(self.module), reloc)
        self.parallel = parallel
        self._parallel_for = ir.Function(
            self.module, ir.FunctionType(U.VOID, [U.PTR, U.PTR, U.I64]), "jx_parallel_for") \
            if parallel else None
        self.consts = ConstPool(self.module)
        self.n_kernels = 0
        self.symbols: tuple = ()         # the symbolic sizes of the entry being built
        self._shared: dict = {}          # kernel signature -> function (shared_function)
        self._calls: dict = {}           # function name -> kernel calls emitted into it
        self._malloc = ir.Function(self.module, ir.FunctionType(U.PTR, [U.I64]), "malloc")
        self._free = ir.Function(self.module, ir.FunctionType(U.VOID, [U.PTR]), "free")

    # -------------------------------------------------------------- kernels
    def kernel_function(self, kernel) -> tuple:
        """An internal function `int32_t k(ptr...)` over the kernel's buffers,
        returning a status (only opaque kernels, e.g. control flow, can fail).
        Big loop, reduce and matmul kernels run their outer loop in parallel chunks."""
        atoms = list(kernel.inputs) + list(kernel.outputs)
        fn = ir.Function(self.module, ir.FunctionType(U.I32, [U.PTR] * (len(atoms) + self._dims)),
                         f"k{self.n_kernels}.{kernel.name}")
        self.n_kernels += 1
        fn.linkage = "internal"
        # Kept apart: LLVM inlines an internal function called once, which put every
        # kernel of a program into its entry function, one body whose optimisation
        # and code generation grow faster than the program (a 300-op gradient:
        # 171 kernels, 8.7 s of LLVM). A call per kernel costs nothing beside a loop.
        fn.attributes.add("noinline")
        n_in = len(kernel.inputs)
        for i, arg in enumerate(fn.args):
            if i >= n_in:
                arg.add_attribute("noalias")      # outputs never overlap anything
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        buffers = {id(a): arg for a, arg in zip(atoms, fn.args)}
        chunks = parallel_chunks(kernel) if self.parallel else 0
        with U.dims_scope(self._dim_values(b, fn)):
            if U.is_symbolic(chunks) or chunks:
                self._emit_parallel(b, kernel, atoms, list(fn.args)[:len(atoms)], chunks)
                U.plain(fn)           # (its loops are in the body)
            elif kernel.kind == "loop":
                emit_loop(b, kernel, buffers, self.consts)
            elif kernel.kind == "reduce":
                emit_reduce(b, kernel, buffers, self.consts)
            else:
                self._opaque_rule(kernel)(KernelContext(b, buffers, self.consts, self), kernel)
        b.ret(ir.Constant(U.I32, STATUS_OK))
        return fn, atoms

    @property
    def _dims(self) -> int:
        """1 when the program has symbolic sizes: functions then take the dims array
        (the symbols' values, in self.symbols order) as their last argument."""
        return 1 if self.symbols else 0

    def _dim_values(self, b, fn, ptr=None):
        """The symbolic sizes inside fn (its last argument, or `ptr`), or None."""
        if not self.symbols:
            return None
        return U.dims_from(b, fn.args[-1] if ptr is None else ptr, self.symbols)

    def group_function(self, members: list, rows: tuple) -> tuple:
        """One function running a row-fused group: for each row, every member's
        loops over that row (rows split over threads when the group is big)."""
        ins, outs = group_buffers(members)
        atoms = ins + outs
        fn = ir.Function(self.module, ir.FunctionType(U.I32, [U.PTR] * (len(atoms) + self._dims)),
                         f"k{self.n_kernels}.rows_" + "_".join(k.root.prim.name for k in members))
        self.n_kernels += 1
        fn.linkage = "internal"
        fn.attributes.add("noinline")                    # (see kernel_function)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        n_rows = 1
        for r in rows:
            n_rows *= r
        work = sum(k.root.inputs[0].aval.size if k.kind == "reduce" else
                   k.outputs[0].aval.size for k in members)
        spills = spill_plan(members)

        def emit_rows(bb, ptrs, lo, hi):
            buffers = {id(a): p for a, p in zip(atoms, ptrs)}
            with U.for_between(bb, lo, hi, "row") as r:
                fixed = U.delinear(bb, r, rows)
                for k in members:
                    if k.kind == "reduce":
                        target = spills.get(id(k))
                        emit_reduce(bb, k, buffers, self.consts, fixed=fixed,
                                    spill=None if target is None else buffers[id(target[1])])
                    else:
                        reuse = {id(v): buffers[id(o)] for key, (v, o) in spills.items()
                                 if o in k.outputs}
                        emit_loop(bb, k, buffers, self.consts, fixed=fixed, reuse=reuse)

        with U.dims_scope(self._dim_values(b, fn)):
            if self.parallel and (U.is_symbolic(n_rows) or
                                  (n_rows > 1 and work >= tuning.value("parallel_min_work"))):
                body, bb, ptrs, lo, hi, dv = self._outline(fn.name, len(atoms), len(ins))
                with U.dims_scope(dv):
                    emit_rows(bb, ptrs, lo, hi)
                bb.ret_void()
                self._run_parallel(b, body, list(fn.args)[:len(atoms)], n_rows, work)
                U.plain(fn)
            else:
                emit_rows(b, list(fn.args), U.i64(0), U.i64(n_rows))
        b.ret(ir.Constant(U.I32, STATUS_OK))
        return fn, atoms

    def shared_function(self, members: list, rows: tuple) -> tuple:
        """(function, its buffers in parameter order) for a kernel or row group: one
        emitted before with the same signature is called again with these buffers.
        An unrolled loop or a deep network repeats its kernels step after step or
        layer after layer; compiling each once keeps LLVM's time proportional to
        the distinct kernels, not to the depth."""
        atoms = sum(group_buffers(members), []) if rows else \
            list(members[0].inputs) + list(members[0].outputs)
        key = kernel_signature(members, atoms, rows)
        if key is not None:     # (a function of a symbolic entry takes the dims too)
            key = (key, self.symbols)
        if key is not None and key in self._shared:
            return self._shared[key], atoms
        fn, atoms = self.group_function(members, rows) if rows else \
            self.kernel_function(members[0])
        if key is not None:
            self._shared[key] = fn
        return fn, atoms

    def _outline(self, name: str, n_ctx: int, n_in: int) -> tuple:
        """A body `void(ptr ctx, i64 lo, i64 hi)` for jx_parallel_for; returns it, a
        builder for its loops, the n_ctx buffer pointers they use (the first n_in
        inputs, then outputs), and lo, hi.

        The loops go in a function of their own, `<name>.rows(ptrs..., lo, hi)`,
        which the body calls with the pointers it loads from ctx: as arguments, the
        outputs can be noalias (they never overlap anything: kernel_function), while
        pointers loaded from memory are facts LLVM cannot know. Without them it
        vectorised each loop twice over, behind run-time overlap checks, with a
        scalar copy of the whole body (its exp, log...) as the fallback: a row
        softmax took 50 ms of LLVM, 29 ms without (Zen 4)."""
        body = ir.Function(self.module, ir.FunctionType(U.VOID, [U.PTR, U.I64, U.I64]),
                           f"{name}.body")
        body.linkage = "internal"
        n_args = n_ctx + self._dims
        rows = ir.Function(self.module,
                           ir.FunctionType(U.VOID, [U.PTR] * n_args + [U.I64, U.I64]),
                           f"{name}.rows")
        rows.linkage = "internal"
        rows.attributes.add("noinline")   # (inlined, the noalias facts would be lost)
        for arg in rows.args[n_in:n_ctx]:
            arg.add_attribute("noalias")
        wb = ir.IRBuilder(body.append_basic_block("entry"))
        ctx, lo, hi = body.args
        wb.call(rows, [wb.load(wb.gep(ctx, [U.i64(i)], source_etype=U.PTR), typ=U.PTR)
                       for i in range(n_args)] + [lo, hi])
        wb.ret_void()
        bb = ir.IRBuilder(rows.append_basic_block("entry"))
        ptrs = list(rows.args[:n_args])
        # the dims array rides last in ctx (_run_parallel); returned: their values here
        dv = self._dim_values(bb, rows, ptrs[-1]) if self.symbols else None
        return body, bb, ptrs[:n_ctx], rows.args[n_args], rows.args[n_args + 1], dv

    def _run_parallel(self, b, body, slots: list, n, work=None) -> None:
        """jx_parallel_for(body, {slots...}, n). A symbolic n is split at run time:
        over the pool when there are 2 rows or more and `work` (elements) is worth
        it, else the body runs the rows itself."""
        if self.symbols:
            slots = slots + [U.current_dims_ptr()]
        arr = b.alloca(U.PTR, U.i64(len(slots)))
        for i, a in enumerate(slots):
            b.store(a, b.gep(arr, [U.i64(i)], source_etype=U.PTR))
        if not U.is_symbolic(n) and not U.is_symbolic(work):
            b.call(self._parallel_for, [body, arr, U.i64(n)])
            return
        rows = U.i64(n)
        worth = b.icmp_signed(">=", rows, U.i64(2))
        if work is not None:
            worth = b.and_(worth, b.icmp_signed(">=", U.i64(work),
                                                U.i64(tuning.value("parallel_min_work"))))
        with b.if_else(worth) as (split, serial):
            with split:
                b.call(self._parallel_for, [body, arr, rows])
            with serial:
                b.call(body, [arr, U.i64(0), rows])

    def _opaque_rule(self, kernel):
        rule = opaque.rule(kernel.root.prim.name)
        if rule is None:
            from jx.errors import MissingRuleError
            raise MissingRuleError(
                f"cpu backend: no lowering for primitive '{kernel.root.prim.name}'"
                + (f" (from {kernel.root.source})" if kernel.root.source else ""))
        return rule

    def _emit_parallel(self, b, kernel, atoms, args, chunks: int) -> None:
        """Outline the kernel's loops into body(ctx, lo, hi) and run it through
        jx_parallel_for; ctx is the array of buffer pointers (plus partials)."""
        parts = reduce_parts(kernel) if kernel.kind == "reduce" else 0
        ct = U.compute_type(kernel.root.inputs[0].aval.dtype) if parts else None
        n_ctx = len(atoms) + (1 if parts else 0)
        body, bb, ptrs, lo, hi, dv = self._outline(b.function.name, n_ctx,
                                                     len(kernel.inputs))
        buffers = {id(a): p for a, p in zip(atoms, ptrs)}
        with U.dims_scope(dv):
            if parts:
                emit_reduce_part(bb, kernel, buffers, self.consts, lo, hi, parts, ptrs[-1])
            elif kernel.kind == "loop":
                emit_loop(bb, kernel, buffers, self.consts, outer=(lo, hi))
            elif kernel.kind == "reduce":
                emit_reduce(bb, kernel, buffers, self.consts, outer=(lo, hi))
            else:
                context = KernelContext(bb, buffers, self.consts, self)
                context.outer = (lo, hi)
                self._opaque_rule(kernel)(context, kernel)
        bb.ret_void()
        slots = list(args)
        partials = None
        if parts:      # one chunk partial per root (merged reductions have several)
            partials = b.alloca(ct, U.i64(parts * len(kernel.roots)))
            slots.append(partials)
        self._run_parallel(b, body, slots, chunks, _extent(kernel)[1])
        if parts:
            buffers = {id(a): p for a, p in zip(atoms, args)}
            emit_reduce_combine(b, kernel, buffers, parts, partials)

    # -------------------------------------------------------------- programs
    def emit_program(self, b: ir.IRBuilder, program, inputs: list, outputs: list,
                     fail_block) -> None:
        """Run a fused program inside the current function: inputs/outputs are
        pointer values for the graph's inputs and outputs."""
        g = program.graph
        buffers = {id(v): p for v, p in zip(g.inputs, inputs)}
        direct = set()
        for a, p in zip(g.outputs, outputs):
            if isinstance(a, Var) and id(a) not in buffers and id(a) not in direct:
                buffers[id(a)] = p
                direct.add(id(a))
        allocated = []
        unwind = {0: fail_block}
        program = epilogue.attach(program)
        with hinting():       # grouping rows is a choice of speed alone
            groups = row_groups(program)
        views = view_map(groups, buffers)
        offsets, total = plan_buffers(program, buffers, views, groups)
        workspace = None
        if not U.is_symbolic(total) and 0 < total <= STACK_WORKSPACE:   # small: on the stack, free to get in a loop body
            with b.goto_block(b.function.entry_basic_block):
                b.position_at_start(b.function.entry_basic_block)
                workspace = b.alloca(ir.ArrayType(U.I8, total))
                workspace.align = ALIGN
        elif U.is_symbolic(total) or total:   # one workspace for every intermediate, dead ones reused
            workspace = self.alloc(b, total, fail_block)
            allocated.append(workspace)
        for vid, off in offsets.items():
            buffers[vid] = U.aligned_pointer(b, workspace, off, ALIGN)
        for rows, members in groups:
            k = members[0]
            out0 = id(k.outputs[0]) if k.outputs else None
            if out0 in views:                       # nothing to run: read in place
                buffers[out0] = buffers[id(views[out0])]
                continue
            fn, atoms = self.shared_function(members, rows)
            self._calls[b.function.name] = self._calls.get(b.function.name, 0) + 1
            status = b.call(fn, [buffers[id(a)] if isinstance(a, Var)
                                 else self.consts.array(a.val) for a in atoms] +
                            ([U.current_dims_ptr()] if self.symbols else []))
            if k.kind == "opaque":
                ok = b.function.append_basic_block("kernel.ok")
                b.cbranch(b.icmp_unsigned("!=", status, ir.Constant(U.I32, STATUS_OK)),
                          self._unwind(b, allocated, unwind), ok)
                b.position_at_end(ok)
        for j, (a, p) in enumerate(zip(g.outputs, outputs)):
            if isinstance(a, Var) and id(a) in direct and buffers[id(a)] is p:
                continue
            src = self.consts.array(a.val) if isinstance(a, Literal) else buffers[id(a)]
            nbytes = a.aval.size * a.aval.dtype.itemsize
            if U.is_symbolic(nbytes) or nbytes:
                self.memcpy(b, p, src, nbytes)
        for mem in allocated:
            self.free(b, mem)

    def _bad_dims(self, b, constraints):
        """i1: whether the symbols' values (the function's dims scope) break their
        constraints (min, max, multiple_of): the code holds only for those sizes."""
        bad = ir.Constant(U.I1, 0)
        cons = constraints or Constraints()
        for name in self.symbols:
            spec = cons.spec(name)
            v = U.i64(Dim.symbol(name))
            bad = b.or_(bad, b.icmp_signed("<", v, U.i64(spec.min)))
            if spec.max is not None:
                bad = b.or_(bad, b.icmp_signed(">", v, U.i64(spec.max)))
            if spec.multiple_of > 1:
                bad = b.or_(bad, b.icmp_signed("!=", b.srem(v, U.i64(spec.multiple_of)),
                                               U.i64(0)))
        return bad

    def _check_dims(self, b, constraints) -> None:
        """Return STATUS_INVALID_DIMS before anything runs when the dims break the
        constraints."""
        ok = b.function.append_basic_block("dims.ok")
        bad = b.function.append_basic_block("dims.bad")
        b.cbranch(self._bad_dims(b, constraints), bad, ok)
        with b.goto_block(bad):
            b.ret(ir.Constant(U.I32, STATUS_INVALID_DIMS))
        b.position_at_end(ok)

    def _dims_last_function(self, entry, n_in: int) -> None:
        """`int32_t <entry>_dims_last(const void** inputs, void** outputs)`, the entry
        with the dims array as one more input pointer (inputs[n_in]): the form the
        pmap runtime calls every device's entry in (jx_pmap_run)."""
        fn = ir.Function(self.module, ir.FunctionType(U.I32, [U.PTR, U.PTR]),
                         entry.name + DIMS_LAST_SUFFIX)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ins, outs = fn.args
        dims = b.load(b.gep(ins, [U.i64(n_in)], source_etype=U.PTR), typ=U.PTR)
        b.ret(b.call(entry, [dims, ins, outs]))

    def _shapes_function(self, symbol: str, program) -> None:
        """`int32_t <symbol>_shapes(const int64_t* dims, int64_t* shapes)`: every input
        leaf's dims then every output leaf's at these symbol values (runtime/abi.py)."""
        fn = ir.Function(self.module, ir.FunctionType(U.I32, [U.PTR, U.PTR]),
                         symbol + SHAPES_SUFFIX)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        dims_arg, shapes = fn.args
        g = program.graph
        with U.dims_scope(U.dims_from(b, dims_arg, self.symbols)):
            self._check_dims(b, program.constraints)
            k = 0
            for v in list(g.inputs) + list(g.outputs):
                for d in v.aval.shape:
                    b.store(U.i64(d), b.gep(shapes, [U.i64(k)], source_etype=U.I64))
                    k += 1
        b.ret(ir.Constant(U.I32, STATUS_OK))

    def _unwind(self, b, allocated: list, blocks: dict):
        """The failure target once `allocated` exist: a chain of blocks, each freeing
        one allocation (the latest first) before going on to fail_block = blocks[0]."""
        n = len(allocated)
        if n not in blocks:
            prev = self._unwind(b, allocated[:-1], blocks)
            blocks[n] = blk = b.function.append_basic_block("unwind")
            with b.goto_block(blk):
                self.free(b, allocated[-1])
                b.branch(prev)
        return blocks[n]

    def alloc(self, b, nbytes, fail_block):
        """Scratch memory (freed with free()), branching to fail_block on NULL. With
        the runtime it comes from jx_scratch_get (cruntime/jx_scratch.c), which keeps
        large blocks between calls: no page faults on a fresh mmap each call."""
        get = self.runtime_function("jx_scratch_get", U.PTR, [U.I64]) if self.parallel \
            else self._malloc
        mem = b.call(get, [U.i64(nbytes if U.is_symbolic(nbytes) else max(nbytes, 1))])
        ok = b.function.append_basic_block("alloc.ok")
        b.cbranch(b.icmp_unsigned("==", mem, ir.Constant(U.PTR, None)), fail_block, ok)
        b.position_at_end(ok)
        return mem

    def free(self, b, mem) -> None:
        put = self.runtime_function("jx_scratch_put", U.VOID, [U.PTR]) if self.parallel \
            else self._free
        b.call(put, [mem])

    def memcpy(self, b, dst, src, nbytes: int) -> None:
        fn = self.module.declare_intrinsic("llvm.memcpy", [U.PTR, U.PTR, U.I64])
        b.call(fn, [dst, src, U.i64(nbytes), ir.Constant(U.I1, 0)])

    def runtime_function(self, name: str, ret, args=()):
        """A function of the C runtime (cruntime/jx_parallel.c), declared once."""
        try:
            return self.module.get_global(name)
        except KeyError:
            return ir.Function(self.module, ir.FunctionType(ret, list(args)), name)

    def cancelled(self, b):
        """i1: whether the running call was asked to stop (false without the runtime)."""
        if not self.parallel:
            return ir.Constant(U.I1, 0)
        flag = b.call(self.runtime_function("jx_cancel_requested", U.I32), [])
        return b.icmp_unsigned("!=", flag, ir.Constant(U.I32, 0))

    def _status_unless_cancelled(self, b, status: int):
        """An entry's status: `status`, or STATUS_CANCELLED when the call was
        cancelled (its cancelled loops and regions left the outputs incomplete)."""
        if not self.parallel:
            return ir.Constant(U.I32, status)
        return b.select(self.cancelled(b), ir.Constant(U.I32, STATUS_CANCELLED),
                        ir.Constant(U.I32, status))

    def entry(self, name: str, program, prefix: str = LEGACY_PREFIX,
              specialized=()) -> str:
        """The exported C function of one entry; returns its symbol. `specialized`:
        [({symbol: size}, program compiled at those sizes)] for an entry with
        symbolic sizes: internal entries it calls when the dims are those sizes."""
        fixed = []
        for k, (values, fixed_program) in enumerate(specialized):
            inner = self.entry(f"{name}__at{k}", fixed_program, prefix)
            for sym in (inner, inner + SIGNATURE_SUFFIX):
                self.module.get_global(sym).linkage = "internal"
            fixed.append((values, self.module.get_global(inner)))
        symbol = entry_symbol(name, prefix)
        g = program.graph
        # symbolic sizes: `int32_t P_<entry>(const int64_t* dims, inputs, outputs)`,
        # dims the symbols' values in sorted order (jx.dims.symbols_of)
        self.symbols = symbols_of([v.aval.shape for v in g.inputs])
        fn = ir.Function(self.module, ir.FunctionType(U.I32, [U.PTR] * (2 + self._dims)),
                         symbol)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        fail = fn.append_basic_block("fail")
        null = fn.append_basic_block("null")
        ins_arg, outs_arg = fn.args[self._dims:]
        null_ptr = ir.Constant(U.PTR, None)

        def checked(p):
            ok = fn.append_basic_block("ptr.ok")
            b.cbranch(b.icmp_unsigned("==", p, null_ptr), null, ok)
            b.position_at_end(ok)
            return p

        if self.symbols:
            checked(fn.args[0])
        if g.inputs:
            checked(ins_arg)
        if g.outputs:
            checked(outs_arg)
        inputs = [checked(b.load(b.gep(ins_arg, [U.i64(i)], source_etype=U.PTR), typ=U.PTR))
                  for i in range(len(g.inputs))]
        outputs = [checked(b.load(b.gep(outs_arg, [U.i64(i)], source_etype=U.PTR), typ=U.PTR))
                   for i in range(len(g.outputs))]
        if self.parallel:                   # the runtime is linked: it can cancel
            b.call(self.runtime_function("jx_cancel_reset", U.VOID), [])
        mathcalls.count_program(self.module, program)
        # sizes are decided under the program's constraints: a question they leave
        # open is an error here, never a guess (code must hold at every size)
        with dims_scope(program.constraints) if self.symbols else contextlib.nullcontext(), \
                U.dims_scope(self._dim_values(b, fn, fn.args[0])):
            if self.symbols:
                self._check_dims(b, program.constraints)
                self._shapes_function(symbol, program)
                self._dims_last_function(fn, len(g.inputs))
                for values, inner in fixed:      # the sizes a fixed version serves
                    at = ir.Constant(U.I1, 1)
                    for n, v in values.items():
                        at = b.and_(at, b.icmp_signed("==", U.i64(Dim.symbol(n)), U.i64(v)))
                    with b.if_then(at, likely=False):
                        b.ret(b.call(inner, [ins_arg, outs_arg]))
            self.emit_program(b, program, inputs, outputs, fail)
        self.symbols = ()
        # An entry is only calls and pointer arithmetic, and optimising it cost more
        # than all its kernels together in a long one (a 100-layer MLP gradient's
        # 426 calls: 0.17 of 0.33 s of LLVM); unoptimised it costs nanoseconds.
        U.plain(fn)
        b.ret(self._status_unless_cancelled(b, STATUS_OK))
        b.position_at_end(fail)
        b.ret(self._status_unless_cancelled(b, STATUS_OUT_OF_MEMORY))
        b.position_at_end(null)
        b.ret(ir.Constant(U.I32, STATUS_NULL_POINTER))
        leaves = lambda vs: [(np.dtype(v.aval.dtype).name, v.aval.shape) for v in vs]  # noqa: E731
        self._string_function(symbol + SIGNATURE_SUFFIX, f"{symbol}.signature",
                              signature(leaves(g.inputs), leaves(g.outputs)))
        return symbol

    def _cstring(self, label: str, text: str) -> ir.GlobalVariable:
        """A private NUL-terminated constant."""
        data = bytearray(text.encode() + b"\0")
        typ = ir.ArrayType(U.I8, len(data))
        g = ir.GlobalVariable(self.module, typ, label)
        g.global_constant = True
        g.linkage = "private"
        g.initializer = ir.Constant(typ, data)
        return g

    def _string_function(self, name: str, label: str, text: str):
        """`const char* name(void)` returning `text`."""
        fn = ir.Function(self.module, ir.FunctionType(U.PTR, []), name)
        U.plain(fn)
        ir.IRBuilder(fn.append_basic_block("entry")).ret(self._cstring(label, text))
        return fn

    def embed_manifest(self, manifest_json: str, head: str,
                       prefix: str = LEGACY_PREFIX) -> str:
        """`const char* P_manifest(void)`, `const char* P_manifest_sha256(void)`,
        `uint32_t P_abi_version(void)`, the prefix in its own section (the loader
        reads it from the file to find these), and, when the C runtime is linked,
        P_<control> for each of its controls (runtime/abi.py); returns the module
        text with them, given `head`, the text before: only the new definitions are
        printed (printing a large module costs tens of ms)."""
        added = []

        def cstring(name: str, text: str):
            added.append(self._cstring(name, text))
            return added[-1]

        # the manifest's own checksum, kept outside it: the loader recomputes it, so
        # a manifest edited or corrupted in the file (shapes the code was not built
        # for) fails to load instead of running the code on wrong buffers
        checksum = hashlib.sha256(manifest_json.encode()).hexdigest()
        for suffix, ret, value in ((MANIFEST_SUFFIX, U.PTR, cstring("jx.manifest", manifest_json)),
                                   (CHECKSUM_SUFFIX, U.PTR, cstring("jx.checksum", checksum)),
                                   (VERSION_SUFFIX, U.I32, ir.Constant(U.I32, ABI_VERSION))):
            fn = ir.Function(self.module, ir.FunctionType(ret, []), prefix + suffix)
            ir.IRBuilder(fn.append_basic_block("entry")).ret(value)
            added.append(fn)
        tag = self._cstring("jx.prefix", prefix)
        tag.section = PREFIX_SECTION
        added.append(tag)
        used = ir.GlobalVariable(self.module, ir.ArrayType(U.PTR, 1), "llvm.used")
        used.linkage = "appending"       # kept although nothing reads it
        used.section = "llvm.metadata"
        used.initializer = ir.Constant(ir.ArrayType(U.PTR, 1), [tag])
        added.append(used)
        if self.parallel:
            for name, sig in RUNTIME_EXPORTS.items():
                added += self._forward(f"{prefix}_{name}", "jx_" + name, *sig)
        return head + "\n" + "\n".join(str(v) for v in added) + "\n"

    def _forward(self, symbol: str, target: str, ret: str, params: list) -> list:
        """An exported `symbol` calling the runtime's hidden `target` (C types named
        as in runtime/abi.py's RUNTIME_EXPORTS); returns the new globals: the
        function, and target's declaration unless the module had it already."""
        c_types = {"void": U.VOID, "int": U.I32, "int32_t": U.I32, "double": U.F64}
        ftype = ir.FunctionType(c_types.get(ret, U.PTR),      # "int n" -> int; pointers
                                [c_types.get(p.rsplit(" ", 1)[0], U.PTR) for p in params])
        known = target in self.module.globals
        callee = self.runtime_function(target, ftype.return_type, ftype.args)
        fn = ir.Function(self.module, ftype, symbol)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        result = b.call(callee, list(fn.args), tail=True)
        if ftype.return_type == U.VOID:
            b.ret_void()
        else:
            b.ret(result)
        return [fn] if known else [callee, fn]

    def routines(self) -> dict:
        """{name: IR text or object} of the routines the module declares (routines.py)."""
        return routines.declared(self.module)

    def text(self) -> str:
        self._keep_alive()
        return str(self.module)

    def texts(self, parts: int) -> list:
        """The module as up to `parts` texts LLVM can compile side by side, each
        defining some of its functions (split.py); one text when splitting would
        not pay."""
        self._keep_alive()
        if parts < 2:
            return [str(self.module)]
        refs = split.references(self.module)
        plan = split.plan(self.module, parts, split.MIN_COST, refs)
        return [str(self.module)] if plan is None else split.texts(self.module, plan, refs)

    def _keep_alive(self) -> None:
        if not self.module.__dict__.get("_jx_kept"):    # once: it adds a global
            mathcalls.keep_alive(self.module)
            self.module._jx_kept = True


def ir_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
