"""Drive LLVM: parse, verify, optimise for a target, then JIT or emit an object
(through the object cache, cache.py; later compiles in a worker process,
compile_worker.py, which this module starts and talks to).

The pipeline is O2 with both vectorisers: O3 measured no faster on the benchmark
suite (its kernels are already explicit loops; the GEMM is hand-blocked) and costs
~0.2 s more per cold `jx compile` of the SGD-step sample."""
from __future__ import annotations

import functools
import os
import pickle
import struct
import sys
import threading

from . import cache, target
from .objsyms import global_symbols
from .tuning import llvm_features  # noqa: F401  (tests patch it here)

from jx import timings

# Every use of LLVM for a compile holds this lock: LLVM's global state is not
# safe to share between threads, and a fork must not copy a compile in flight
# (the child would wait forever on locks held by a thread it does not have).
COMPILE_LOCK = threading.RLock()


def _llvmlite_lock():
    """llvmlite's own lock around each of its foreign calls (private; None if it
    is gone), held at fork so that no call is half-way through in the child."""
    ffi = sys.modules.get("llvmlite.binding.ffi")     # (not loaded: nothing to hold)
    return getattr(getattr(ffi, "lib", None), "_lock", None)


def _before_fork() -> None:
    COMPILE_LOCK.acquire()
    inner = _llvmlite_lock()
    if inner is not None:
        inner.__enter__()


def _after_fork() -> None:
    inner = _llvmlite_lock()
    if inner is not None:
        inner.__exit__(None, None, None)
    COMPILE_LOCK.release()


def _after_fork_in_child() -> None:
    _WORKER["proc"] = None        # the parent's worker, talking to the parent
    _after_fork()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork,
                    after_in_child=_after_fork_in_child)


# llvmlite's binding (LLVM itself, ~20 ms to load) is loaded on first use, not with
# this module: jx.jit's code generation reads the object cache through here, and
# its LLVM runs in forked children (compile_fork.py) which load it themselves.
_llvm = target._llvm


def target_machine(cpu: str | None = None, triple: str | None = None,
                   features: str | None = None, reloc: str = "default"):
    """The host machine by default; a named cpu/triple cross-compiles."""
    llvm = _llvm()
    triple = triple or target.host_triple()
    cpu = target.host_cpu() if cpu in (None, "native") else cpu
    if features is None:
        features = llvm_features(cpu)
    tgt = llvm.Target.from_triple(triple)
    return tgt.create_target_machine(cpu=cpu, features=features, opt=3, reloc=reloc,
                                     codemodel="jitdefault" if reloc == "default"
                                     else "default")


MANY_FUNCTIONS = 128


# Text every module of a program with symbolic sizes holds: the symbols' loads
# (irutil.dims_from names them dim.<symbol>)
SYMBOLIC_MARK = '%"dim.'


def optimise(ir_text: str, tm):
    """Parse + verify (a malformed module is a backend bug), then the pipeline."""
    llvm = _llvm()
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    # A program of many kernels (an unrolled network's gradient: 426) gains little
    # from unrolling their short loops, and unrolling was a third of LLVM's time on it
    # (2.0 -> 1.4 s). The count is read from the IR, which keys the object cache.
    # Nor does a program of symbolic sizes (its loops' trip counts known at run time:
    # unrolled, each grows a remainder loop; the SGD step's LLVM time -17%).
    pto.loop_unrolling = ir_text.count("\ndefine ") < MANY_FUNCTIONS and \
        SYMBOLIC_MARK not in ir_text
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)
    for obj in (mpm, pb, pto):          # now, not whenever the GC gets to them
        obj.close()
    return mod


class JitModule:
    """Object code loaded in-process; keeps the engine alive for its functions.

    The object comes from the persistent cache when this IR was compiled before
    (by any process), so a warm jx.jit skips LLVM entirely; `obj` is an object
    found already (program_cache.py: no IR was built). `routines` ({name: IR
    text or object}, ModuleBuilder.routines) are the shared routines the module
    declares: each is loaded once per process, compiled once per host.
    """

    def __init__(self, ir_text: str | None, cpu: str | None = None,
                 routines: dict | None = None, obj: bytes | None = None):
        with COMPILE_LOCK:
            self._load(ir_text, cpu, routines or {}, obj)

    def _load(self, ir_text: str | None, cpu: str | None, routines: dict,
              obj: bytes | None) -> None:
        cpu = cpu or target.jit_cpu()
        self.cache_hit, self.object_key = obj is not None, None
        if obj is None:
            triple = target.host_triple()
            self.object_key = object_key(ir_text, cpu, triple, "default")
            obj, self.cache_hit = cached_object(ir_text, cpu, triple, reloc="default")
        _runtime_for_mcjit()
        libcalls_for_jit(cpu)
        for name, code in routines.items():
            routine_for_jit(name, code, cpu)
        from . import symbols
        symbols.check(obj, symbols.resolvable_in_process, "a jx.jit module")
        tm = target_machine(cpu)       # the engine takes ownership: one per module
        llvm = _llvm()
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self.engine.finalize_object()

    def address(self, symbol: str) -> int:
        return self.engine.get_function_address(symbol)


@functools.lru_cache(maxsize=None)
def _runtime_for_mcjit() -> None:
    """The parallel runtime in LLVM's own list of libraries, where MCJIT resolves a
    module's symbols (loaded globally by parallel.jit_library as well)."""
    from . import parallel
    path = parallel.jit_library()
    if path is not None:
        _llvm().load_library_permanently(path)


@functools.lru_cache(maxsize=None)
def libcalls_for_jit(cpu: str):
    """Compile libcalls.py for this process once (per target CPU) and make its
    routines visible to every later JIT module (llvm.add_symbol); returns the
    engine, which the cache keeps alive: the code must stay mapped. Kept by name
    like a routine (its IR is a function of the target and jx's sources), so a
    process that finds it builds none."""
    obj = libcalls_object(cpu, "default")
    return _map_symbols(obj, cpu, global_symbols(obj)[0])


def libcalls_object(cpu: str, reloc: str) -> bytes:
    """libcalls.py's object for cpu and reloc, compiled once per host."""
    return routine_object(LIBCALLS, libcalls_code(cpu, reloc), cpu, reloc)


def libcalls_code(cpu: str, reloc: str, triple: str | None = None):
    """libcalls.py as a routine's code (routines.py): the host's object when it has
    one compiled, else the IR to compile."""
    obj = find_routine(LIBCALLS, cpu, reloc, triple)
    if obj is None:
        from . import libcalls
        return libcalls.module_ir()
    return obj


LIBCALLS = "jx.libcalls"


def _map_symbols(obj: bytes, cpu: str, names) -> object:
    """obj loaded into this process, each of `names` it defines made visible to
    every later JIT module; returns the engine, which must stay alive (the code
    stays mapped as long as it does)."""
    llvm = _llvm()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine(cpu))
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    for name in names:
        llvm.add_symbol(name, engine.get_function_address(name))
    return engine


# Routine objects come in the two forms program objects do: "default" for jx.jit
# (the JIT code model: MCJIT may map their sections far apart, beyond the 32-bit
# reach of position-independent code) and "pic" for artifacts' shared objects.
def _routine_key(name: str, cpu: str, triple: str, reloc: str) -> str:
    # the body is a function of the name and the target (routines.py): no IR needed
    return cache.cache_key(f"routine\0{name}\0{reloc}\0{llvm_features(cpu)}", cpu,
                           triple)


def find_routine(name: str, cpu: str, reloc: str,
                 triple: str | None = None) -> bytes | None:
    """Routine `name`'s object for cpu and reloc, if the host has it compiled."""
    return cache.load(_routine_key(name, cpu, triple or target.host_triple(), reloc),
                      cache.RUNTIME_OBJECTS)


def routine_object(name: str, code, cpu: str, reloc: str,
                   triple: str | None = None) -> bytes:
    """The routine's object: `code` itself (an object found when the module was
    built for this reloc) or its IR compiled now and kept, under its name, in the
    runtime folder."""
    if isinstance(code, bytes):
        return code
    triple = triple or target.host_triple()
    data = emit_object(code, cpu, triple, reloc=reloc)
    cache.store(_routine_key(name, cpu, triple, reloc), data, cache.RUNTIME_OBJECTS)
    return data


_ROUTINES_LOADED: dict = {}       # (name, cpu) -> the engine keeping its code mapped


def routine_for_jit(name: str, code, cpu: str) -> None:
    """Load routine `name` (routines.py: its object, or IR compiled now, once per
    host) into this process, its symbols visible to every later JIT module. (The
    last target loaded under a name wins: a process runs code for targets its host
    supports, and each version computes the same values.)"""
    if (name, cpu) in _ROUTINES_LOADED:
        return
    obj = routine_object(name, code, cpu, "default")
    defined = global_symbols(obj)[0]
    _ROUTINES_LOADED[(name, cpu)] = _map_symbols(obj, cpu, defined)
    from . import routines
    routines.BUILT.update(defined)


def build_routines(cpu: str, reloc: str = "default") -> int:
    """Compile every routine (routines.py) a program for cpu may call, the math
    routines, the GEMM's and the FFT's, into the cache, as a host that compiled
    programs of every kind has them (the compile benchmark starts from that state); returns
    how many were compiled now. reloc: jx.jit's form, or "pic" for artifacts'."""
    import llvmlite.ir as ir
    import numpy as np

    from . import fft_stages, fft_tables, gemm, mathcalls, mathlib, opaque_fft, routines
    module = ir.Module("jx.routines")
    module.jx_cpu, module._jx_external_routines = cpu, True
    module._jx_routine_lookup = lambda name: find_routine(name, cpu, reloc)
    for name in sorted(mathlib.UNARY | mathlib.BINARY):
        for dt in ("float32", "float64"):
            mathcalls._function(module, name, np.dtype(dt), 1 if name in mathlib.UNARY else 2)
    for dt in ("float32", "float64"):
        gemm.build_routines(module, dt)
        fft_tables.fill_routine(module, dt)
        fft_stages.build_routines(module, dt)
        opaque_fft.build_routines(module, dt)
    todo = {n: c for n, c in routines.declared(module).items() if not isinstance(c, bytes)}
    for name, code in todo.items():
        routine_object(name, code, cpu, reloc)
    return len(todo)


def object_key(ir_text: str, cpu: str, triple: str, reloc: str) -> str:
    """The object cache's key of a module's code: its IR, the relocation model and
    the exact LLVM feature string (for a host build, the host's set, which a VM can
    cut below its CPU name's)."""
    return cache.cache_key(ir_text + "\0" + reloc + "\0" + llvm_features(cpu), cpu, triple)


def cached_object(ir_text: str, cpu: str, triple: str, reloc: str = "pic",
                  runtime: bool = False) -> tuple:
    """(object code, cache hit?) for the module, compiling with LLVM on a miss. The
    key has the LLVM feature string the object is built with: for a host build
    it is the host's exact set, which a VM can cut below its CPU name's. runtime:
    a program-independent object (libcalls), kept with the C runtime's build
    rather than among the evictable program objects."""
    key = object_key(ir_text, cpu, triple, reloc)
    folder = cache.RUNTIME_OBJECTS if runtime else "objects"
    data = cache.load(key, folder)
    if data is not None:
        return data, True
    data = emit_object(ir_text, cpu, triple, reloc=reloc)
    cache.store(key, data, folder)
    return data, False


def cached_objects(texts: list, cpu: str, triple: str, reloc: str, children=None,
                   routines: dict | None = None, keep_parts: bool = True) -> tuple:
    """(objects of a module's parts (split.py), {name: object} of `routines`
    ({name: IR text or object}, routines.py), whether every part was a cache hit):
    each found in the cache or compiled, the misses side by side by `children`
    (compile_fork.Children, which the caller ends) or, without them, here in turn.
    keep_parts=False: the parts' objects compiled now are not stored (what is
    built from them is kept under a key of its own: native.build)."""
    names = sorted(routines or {})
    jobs = [(object_key(t, cpu, triple, reloc), "objects", t) for t in texts]
    jobs += [(_routine_key(name, cpu, triple, reloc), cache.RUNTIME_OBJECTS, routines[name])
             for name in names]
    objs = [code if isinstance(code, bytes) else cache.load(key, folder)
            for key, folder, code in jobs]
    todo = [i for i, o in enumerate(objs) if o is None]
    if children is not None and todo:
        features = llvm_features(cpu)
        made = children.compile([(jobs[i][2], cpu, triple, features, reloc) for i in todo])
        EMITTED[0] += len(made)
    else:
        made = [emit_object(jobs[i][2], cpu, triple, reloc) for i in todo]
    n = len(texts)
    for i, data in zip(todo, made):
        objs[i] = data
        if keep_parts or i >= n:
            cache.store(jobs[i][0], data, jobs[i][1])
    return objs[:n], dict(zip(names, objs[n:])), all(i >= n for i in todo)


# llvmlite 0.50 keeps ~120-130 KB for good on every optimisation run (its pass
# builder's instrumentation callbacks are never freed), whatever jx closes. A
# process's first IN_PROCESS compiles run here, so a typical program pays no
# start-up cost; later ones run in a worker process (compile_worker.py), replaced
# after WORKER_COMPILES, so a process that keeps compiling new shapes (a server,
# a test suite) stays bounded. The worker also keeps an LLVM crash out of the caller.
# (jx.jit's compiles run in forked children instead where they can: compile_fork.py.)
IN_PROCESS = 24
WORKER_COMPILES = 400
_WORKER: dict = {"proc": None, "served": 0, "compiles": 0}


class CompileWorkerError(RuntimeError):
    """The compile worker failed: LLVM rejected the IR or the process died."""


# How many objects LLVM emitted for this process (here, in the worker or in
# forked children): tests assert that a cache hit adds none.
EMITTED = [0]


def emit_object(ir_text: str, cpu: str | None = None, triple: str | None = None,
                reloc: str = "pic") -> bytes:
    EMITTED[0] += 1
    cpu = target.host_cpu() if cpu in (None, "native") else cpu
    triple = triple or target.host_triple()
    features = llvm_features(cpu)      # here: it may depend on tuning.using
    with COMPILE_LOCK:
        _WORKER["compiles"] += 1
        if _WORKER["compiles"] <= IN_PROCESS:
            return emit_here(ir_text, cpu, triple, features, reloc)
        return _in_worker(ir_text, cpu, triple, features, reloc)


def emit_here(ir_text: str, cpu: str, triple: str, features: str, reloc: str) -> bytes:
    """Optimise and emit in this process."""
    with COMPILE_LOCK:
        tm = target_machine(cpu, triple, features=features, reloc=reloc)
        with timings.stage("optimise"):
            mod = optimise(ir_text, tm)
        try:
            with timings.stage("codegen"):
                return tm.emit_object(mod)
        finally:
            mod.close()
            tm.close()


# The worker's pipe protocol: pickled tuples, each after its length (8 bytes,
# little-endian). Both ends are this process's pipes to its own child.
def read_message(f):
    """The next message, or None at end of input."""
    head = f.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    body = f.read(n)
    if len(body) < n:
        return None
    return pickle.loads(body)


def write_message(f, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _in_worker(*request) -> bytes:
    proc = _WORKER["proc"]
    if proc is None or proc.poll() is not None or _WORKER["served"] >= WORKER_COMPILES:
        _stop_worker()
        # the parent's module path, so the worker imports this same jx
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in [*sys.path, os.environ.get("PYTHONPATH", "")] if p))
        import subprocess
        try:
            proc = _WORKER["proc"] = subprocess.Popen(
                [sys.executable, "-m", "jx.codegen.cpu.compile_worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        except OSError:         # no interpreter to start (embedded Python): compile here
            return emit_here(*request)
        _WORKER["served"] = 0
    try:
        with timings.stage("llvm"):
            write_message(proc.stdin, request)
            reply = read_message(proc.stdout)
    except BrokenPipeError:         # it died before reading all of the request
        reply = None
    except BaseException:           # Ctrl-C mid-message: the pipe's state is unknown
        _stop_worker(kill=True)
        raise
    _WORKER["served"] += 1
    if reply is None:
        code = proc.wait()
        _WORKER["proc"] = None
        raise CompileWorkerError(
            f"jx's LLVM compile worker died (exit status {code}) compiling a module for "
            f"{request[1]}: an LLVM crash, or the process was killed. Its messages, if "
            "any, are above; please report it with the model")
    status, payload = reply
    if status != "ok":
        raise CompileWorkerError(f"LLVM could not compile a module jx generated ({payload}): "
                                 "a jx backend bug; please report it with the model")
    return payload


def _stop_worker(kill: bool = False) -> None:
    proc, _WORKER["proc"] = _WORKER["proc"], None
    if proc is None:
        return
    if kill:
        proc.kill()
    else:
        proc.stdin.close()              # end of input: it exits
    import subprocess
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stdout.close()
