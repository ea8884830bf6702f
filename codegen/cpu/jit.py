"""In-process compilation for jx.jit: one fused program -> a native function
called through ctypes with arrays of buffer pointers."""
from __future__ import annotations

import ctypes
import math

import numpy as np

from jx.array import Array
from jx.dims import DimensionSpecError, bind, substitute, symbols_of
from jx.dtypes import short_name
from jx.errors import OutOfMemoryError, ShapeError
from jx.ir import subgraphs
from jx import timings
from jx.runtime import pool
from jx.runtime.abi import DIMS_LAST_SUFFIX, LEGACY_PREFIX, entry_symbol
from jx.runtime.abi import STATUS, STATUS_CANCELLED, STATUS_OUT_OF_MEMORY
from jx.runtime.entry import _data_ptr as data_ptr

# (module.py, the code generator, and compiler.py, LLVM, are imported only on a
# program cache miss, or to load with MCJIT where there is no linker: native.py)

_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
# an entry with symbolic sizes takes their values first (module.py)
_DIMS_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                               ctypes.c_void_p)



def safe_symbol(name: str) -> str:
    """name as an LLVM/ELF symbol fragment: ASCII letters, digits and underscores
    (a Python __name__ may hold newlines, quotes or non-ASCII letters)."""
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_"
                   for c in name) or "fn"


class CompiledFunction:
    """Calls the entry on flat arrays (NumPy or jx.Array); outputs are freshly
    allocated NumPy arrays, or jx.Arrays over them with arrays=True (jx.jit)."""

    def __init__(self, program, name: str = "fn", arrays: bool = False, out_weak=None,
                 traced=None):
        """program: the fused program; or, with `traced` = (the traced graph it comes
        from, its constraints), a function building it: the code is then looked
        for under the graph's key first (program_cache.graph_key), and the
        program is built only on a miss, or when asked for (ir_text, errors)."""
        from . import parallel
        from .target import jit_cpu
        cpu = jit_cpu()
        self.name = name
        self._gkey = None                # the traced graph's key, to record on a miss
        if traced is None:
            self._program, self._build, self._traced = program, None, False
            graph, self._constraints = program.graph, getattr(program, "constraints", None)
        else:
            self._program, self._build, self._traced = None, program, True
            graph, self._constraints = traced
        self.symbol = name = safe_symbol(str(name))
        self.symbols = symbols_of([v.aval.shape for v in graph.inputs])
        self._cpu, self._ir_text = cpu, None
        threads = parallel.available()
        symbol = entry_symbol(name, LEGACY_PREFIX)
        exports = [symbol] + ([symbol + DIMS_LAST_SUFFIX] if self.symbols else [])
        self.jit = None
        if jit_reloc() == "pic":
            try:
                self.jit = self._load_native(graph, cpu, exports)
            except (OSError, _native().LinkError) as err:
                # a cache folder mounted noexec, a linker that fails: MCJIT loads
                # code from memory, for the rest of the process
                _native().disable(err)
        if self.jit is None:
            self.jit = self._load_mcjit(graph, cpu, threads)
        parallel.watch_interrupts()
        self.fn = (_DIMS_ENTRY if self.symbols else _ENTRY)(self.jit.address(symbol))
        # (pmap's form of a symbolic entry: the dims array as one more input)
        self.dims_last = self.jit.address(symbol + DIMS_LAST_SUFFIX) if self.symbols else None
        # (the traced graph's signature is the program's: the passes keep it)
        self.in_avals = [v.aval for v in graph.inputs]
        self.out_specs = [(a.aval.shape, a.aval.dtype) for a in graph.outputs]
        # (allocate, shape, dtype) per output, the allocator chosen once by size
        self.out_allocs = () if self.symbols else \
            tuple((pool.allocator(s, d), s, d) for s, d in self.out_specs)
        # the traced outputs' weak types (simplification may forward a strong input)
        self.out_weak = tuple(out_weak) if out_weak is not None else \
            tuple(a.aval.weak_type for a in graph.outputs)

        self.leaf_names = None       # the arguments' paths, for errors (jx.jit sets them)
        self._call = self._make_symbolic_call(arrays) if self.symbols else \
            self._make_call(arrays)

    @property
    def program(self):
        """The fused program (built now if the code was found by its traced graph)."""
        if self._program is None:
            self._program = self._build()
            self._build = None
        return self._program

    def _key(self, graph, cpu: str, threads: bool, reloc: str, find, on_miss=None) -> tuple:
        """(the program's key, what `find` found under it or None): looked up by the
        traced graph's key first, which spares the passes and fusion; on a miss
        (on_miss() is called then) the program is built and keyed, and the graph's
        key is then recorded."""
        from . import program_cache
        if self._traced:
            with timings.stage("key"):
                gkey = program_cache.graph_key(graph, self._constraints, self.symbol, cpu,
                                               threads, reloc)
                key = program_cache.program_of_graph(gkey) if gkey else None
                found = find(key) if key else None
            if found is not None:
                return key, found
            self._gkey = gkey
            if on_miss is not None:
                on_miss()
        program = self.program
        if self._traced and _signature(program.graph) != _signature(graph):
            raise AssertionError(f"jx.jit function {self.name!r}: the pass pipeline changed "
                                 "its signature; a jx bug, please report it")
        with timings.stage("key"):
            key = program_cache.jit_key(program, self.symbol, cpu, threads, reloc)
            return key, (find(key) if key else None)

    def _remember_graph(self, key: str | None) -> None:
        """The traced graph's key leads to `key`, the program's, from now on."""
        if key and self._gkey:
            from . import program_cache
            program_cache.remember_graph(self._gkey, key)
            self._gkey = None

    def _load_native(self, graph, cpu: str, exports: list):
        """The entry's code as a shared object (native.py): found by the traced
        graph's or the program's key, or generated, compiled (by forked children,
        started before the IR is emitted: compile_fork.py) and linked."""
        native = _native()
        # one child forked as soon as the traced graph's key misses, to load LLVM
        # while the passes, fusion and emission run here (compile_fork is not
        # imported on a hit)
        forked: list = []
        try:
            key, found = self._key(graph, cpu, True, "pic", native.find,
                                   lambda: forked.append(_fork().early(1)))
        except BaseException:
            _end(forked, kill=True)
            raise
        if found is not None:           # compiled before: no IR built
            _end(forked, kill=True)
            self._remember_graph(key)
            with timings.stage("load"):
                return native.Library(found, cache_hit=True)
        compile_fork = _fork()
        children = forked[0] if forked else compile_fork.early(1)
        try:
            # a module splits along its kernels (split.py): a child per kernel at most
            children = compile_fork.more(children, len(self.program.kernels))
            texts, routines = self._emit(self.program, cpu, True, "pic",
                                         parts=len(children) if children else
                                         compile_fork.wanted() or 1)
            children = compile_fork.late(children, len(texts))
            with timings.stage("load"):     # (LLVM's stages, on a miss, inside)
                lib = native.build(key, texts, cpu, routines, exports, children)
        finally:
            if children is not None:
                children.close()
        self._remember_graph(key)
        return lib

    def _load_mcjit(self, graph, cpu: str, threads: bool):
        """The entry's code as an object loaded by LLVM's MCJIT: found through the
        program cache's record (by the traced graph's or the program's key), or
        generated and compiled."""
        from . import program_cache
        key, found = self._key(graph, cpu, threads, "default",
                               lambda k: program_cache.lookup(k, cpu))
        with timings.stage("import"):
            from .compiler import JitModule
        if found is not None:
            self._remember_graph(key)
            with timings.stage("load"):
                return JitModule(None, cpu, found[1], obj=found[0])
        ir_text, routines = self._emit(self.program, cpu, threads, "default")
        with timings.stage("load"):
            jit = JitModule(ir_text, cpu, routines)
        if key:
            program_cache.remember(key, jit.object_key, routines)
            self._remember_graph(key)
        return jit

    def _emit(self, program, cpu: str, threads: bool, reloc: str, parts: int = 0) -> tuple:
        """(LLVM IR, {routine: IR or object}) of the module holding the entry; with
        `parts`, the IR as a list of at most that many texts (ModuleBuilder.texts)."""
        with timings.stage("import"):
            from .module import ModuleBuilder
        with timings.stage("emit"):
            mb = ModuleBuilder(self.symbol, parallel=threads, cpu=cpu, reloc=reloc)
            mb.entry(self.symbol, program)
            if parts:
                texts = mb.texts(parts)
                self._ir_text = texts[0] if len(texts) == 1 else None
                return texts, mb.routines()
            self._ir_text = mb.text()
            return self._ir_text, mb.routines()

    @property
    def ir_text(self) -> str:
        """The module's LLVM IR (built now if the object came from the program
        cache, which needs none)."""
        if self._ir_text is None:
            from . import parallel
            self._emit(self.program, self._cpu, parallel.available(), jit_reloc())
        return self._ir_text

    def _make_symbolic_call(self, arrays: bool):
        """The call of an entry with symbolic sizes: their values read off the
        arguments' shapes (checked against each other and the constraints), the
        outputs allocated at the shapes they give. Solved once per set of shapes."""
        in_avals, specs, weak = self.in_avals, self.out_specs, self.out_weak
        n_in, n_out = len(in_avals), len(specs)
        solved: dict = {}
        fn = self.fn

        def plan(shapes):
            values = self.symbol_values(shapes)
            dims = (ctypes.c_int64 * max(1, len(self.symbols)))(
                *[values[n] for n in self.symbols])
            shapes_out = [tuple(substitute(s, values)) for s, _ in specs]
            return dims, [(pool.allocator(s, d), s, d) for s, (_, d) in zip(shapes_out, specs)]

        table_type = ctypes.c_void_p * max(1, n_in + n_out)
        out_offset = n_in * ctypes.sizeof(ctypes.c_void_p)
        dtypes_in = [a.dtype for a in in_avals]
        ndarray, addressof = np.ndarray, ctypes.addressof

        def call(*args):
            xs = []
            for x, dt in zip(args, dtypes_in):
                if type(x) is Array:
                    x = x._value
                if type(x) is not ndarray or x.dtype != dt or not x.flags.c_contiguous:
                    x = np.asarray(x, dtype=dt, order="C")       # (0-d stays 0-d)
                xs.append(x)
            shapes = tuple([x.shape for x in xs])
            got = solved.get(shapes)
            if got is None:
                got = solved[shapes] = plan(shapes)
            dims, outs_spec = got
            outs = [alloc(s, d) for alloc, s, d in outs_spec]
            table = table_type(*[data_ptr(x) for x in xs], *[data_ptr(o) for o in outs])
            base = addressof(table)
            status = fn(addressof(dims), base, base + out_offset)
            if status:
                raise self._status_error(status)
            return _arrays(outs, weak) if arrays else outs

        return call

    def symbol_values(self, shapes, what: str | None = None) -> dict:
        """{symbol: value} for inputs of these shapes: ShapeError naming the
        arguments (leaf_names) that disagree, or the constraint broken."""
        what = what or f"jx.jit function {self.name!r}"
        names = self.leaf_names or [f"argument {i}" for i in range(len(self.in_avals))]
        for i, (a, s) in enumerate(zip(self.in_avals, shapes)):
            if len(s) != len(a.shape):
                raise ShapeError(f"{what}: {names[i]} has shape {tuple(s)}, expected {a}")
        try:
            return bind([a.shape for a in self.in_avals], shapes, names,
                        self._constraints)
        except DimensionSpecError as e:
            raise ShapeError(f"{what}: the arguments do not fit its symbolic dimensions: "
                             f"{e}") from None

    def _make_call(self, arrays: bool):
        """The per-call closure, constants bound as locals (see runtime/entry.py)."""
        in_checks = tuple((a.shape, a.dtype) for a in self.in_avals)
        out_specs = self.out_allocs
        n_in = len(in_checks)
        table_type = ctypes.c_void_p * max(1, n_in + len(out_specs))
        out_offset = n_in * ctypes.sizeof(ctypes.c_void_p)
        fn, ndarray, addressof = self.fn, np.ndarray, ctypes.addressof
        weak = self.out_weak
        single, weak0 = len(weak) == 1, weak[0] if weak else False
        new = Array.__new__
        # pointer tables not in use: a call owns the one it pops (the foreign call
        # releases the GIL, so calls from several threads overlap)
        tables: list = []

        def call(*args):
            table = tables.pop() if tables else table_type()
            keep = []
            for i, (x, (shape, dtype)) in enumerate(zip(args, in_checks)):
                if type(x) is Array:
                    x = x._value
                if type(x) is not ndarray or x.dtype != dtype or not x.flags.c_contiguous:
                    x = np.ascontiguousarray(np.asarray(x, dtype=dtype)).reshape(shape)
                    keep.append(x)                    # alive until the call returns
                elif x.shape != shape:
                    raise ValueError(f"input {i} has shape {x.shape}, expected {shape}")
                table[i] = data_ptr(x)
            try:
                outs = [empty(shape, dtype) for empty, shape, dtype in out_specs]
            except MemoryError:
                raise self._output_memory_error() from None
            for j, o in enumerate(outs):
                table[n_in + j] = data_ptr(o)
            base = addressof(table)
            status = fn(base, base + out_offset)
            tables.append(table)
            if status:
                raise self._status_error(status)
            if not arrays:
                return outs
            # Array(o, w) without __init__'s checks: o is fresh, and the Array
            # makes it read-only when it first hands it out (__array__, ...)
            if single:
                a = new(Array)
                a._value = outs[0]
                a._weak = weak0
                return [a]
            return _arrays(outs, weak)

        return call

    def plan_parts(self) -> dict:
        """What a call plan specialised to one signature needs (jx.dispatch)."""
        return {"in_avals": self.in_avals, "fn": self.fn, "data_ptr": data_ptr,
                "out_specs": self.out_allocs,
                "out_weak": self.out_weak, "status_error": self._status_error,
                "out_memory_error": self._output_memory_error}

    def __call__(self, *args) -> list:
        return self._call(*args)

    def _output_memory_error(self) -> Exception:
        total = sum(_nbytes(s, d) for s, d in self.out_specs)
        outs = ", ".join(f"{short_name(d)}[{','.join(map(str, s))}]" for s, d in self.out_specs)
        return OutOfMemoryError(
            f"jx.jit function {self.name!r}: its results ({outs}) need {_gib(total)}, which "
            "could not be allocated; compute smaller results (e.g. reduce inside the "
            "function, or split the work into chunks)")

    def _status_error(self, status: int) -> Exception:
        if status == STATUS_CANCELLED:
            from jx.runtime.interrupts import interrupted
            return interrupted(f"jx.jit function {self.name!r}")
        name, meaning = STATUS.get(status, ("?", "unknown status"))
        text = f"jx.jit function {self.name!r} failed with status {status} ({name}: {meaning})"
        if status != STATUS_OUT_OF_MEMORY:
            return RuntimeError(text)
        big = max((v.aval for e in _all_eqns(self.program.graph) for v in e.outputs),
                  key=lambda a: _nbytes(a.shape, a.dtype), default=None)
        if big is not None:
            text += f"; its largest intermediate is {big} ({_gib(_nbytes(big.shape, big.dtype))})"
        return OutOfMemoryError(text + ": use smaller arrays or split the work into chunks "
                                "(e.g. with jx.lax.scan or a Python loop over slices)")


def _signature(graph) -> tuple:
    return (tuple((v.aval.shape, v.aval.dtype) for v in graph.inputs),
            tuple((a.aval.shape, a.aval.dtype) for a in graph.outputs))


def _end(forked: list, kill: bool) -> None:
    for children in forked:
        if children is not None:
            children.close(kill=kill)


def _fork():
    from . import compile_fork
    return compile_fork


def _native():
    from . import native
    return native


def jit_reloc() -> str:
    """The form of jx.jit's objects and routines here: "pic" for the shared
    objects native.py links, "default" for MCJIT's (no linker, JX_JIT_LOADER=mcjit)."""
    from . import parallel
    return "pic" if parallel.available() and _native().enabled() else "default"


def _arrays(outs, weak) -> list:
    """jx.Arrays over fresh output buffers, made without __init__'s checks: each
    Array makes its buffer read-only when it first hands it out (__array__, ...)."""
    results = []
    for o, w in zip(outs, weak):
        a = Array.__new__(Array)
        a._value = o
        a._weak = w
        results.append(a)
    return results


def _all_eqns(graph):
    """The graph's equations and those of the graphs its control flow carries (a
    loop body's allocation fails inside the loop)."""
    for e in graph.eqns:
        yield e
        for sub in subgraphs(e):
            yield from _all_eqns(sub)


def _nbytes(shape, dtype) -> int:
    return math.prod(shape) * np.dtype(dtype).itemsize


def _gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB"
