"""Transcendentals of large fused bodies as calls to jx's math routines.

mathlib emits a function inline where it is used, so a kernel applying `sin` 50
times hands LLVM 50 range reductions and polynomials, each vectorised, each
copied again for the scalar remainder: nearly all of a long chain's compile time
(a 1000-op chain of sin/tanh/mul/add compiled in 7.7 s, the same chain of mul
and add alone in 0.5 s). Kernels whose body passes OUTLINE_FROM code-size units
call instead `jx.math.<fn>.<dtype>`, a scalar function whose
"vector-function-abi-variant" attribute names vector versions for every width
the target has (`jx.math.<fn>.<dtype>.v16`, ...): LLVM's loop vectoriser then
calls the vector version from the vectorised loop. Each vector version is the
scalar body in a loop over its lanes, which the same vectoriser turns into
straight vector code, so the arithmetic is mathlib's, bit for bit. Small bodies
keep the inline form: a call clobbers every vector register, which a short
chain would pay for at run time.

The routines are part of jx's runtime, not of the program: a program's module
only declares them, and each (function, dtype, target) is compiled once per host
(library_ir), kept with the C runtime's build and shared by every program,
loaded into the process for jx.jit and linked into artifacts. Compiling sin's
four versions into every module that used them was most of a short chain's
compile time (a 200-op chain: 75 of its 90 ms of LLVM).
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from jx.passes.sizes import EXPENSIVE, code_size

from . import irutil as U
from . import mathlib, target

OUTLINE_FROM = 64           # code-size units (passes.fuse.code_size) of a kernel body
MODULE_FROM = 16            # transcendentals in a program: every kernel calls them
_LANES = {4: (4, 8, 16), 8: (2, 4, 8)}        # vector widths by element size, up to 512 bit


def count_program(module: ir.Module, program) -> None:
    """Note how many transcendentals a program (an entry, loop bodies included)
    applies: past MODULE_FROM its kernels call them, however small each kernel is
    (a gradient's 171 small kernels each inlined a sin or cos). The choice holds for
    the rest of the module: its entries share the copies."""
    n, stack = 0, [program]
    while stack:
        p = stack.pop()
        for k in p.kernels:
            n += sum(e.prim.name in EXPENSIVE for e in k.eqns)
            for sub in k.subprograms.values():
                stack.extend(sub if isinstance(sub, tuple) else (sub,))
    if n >= MODULE_FROM:
        module._jx_outline_all = True


def wanted(kernel, module: ir.Module) -> bool:
    """Should this kernel's transcendentals be calls?"""
    if module.__dict__.get("_jx_outline_all"):
        return True
    eqns = kernel.eqns
    return sum(e.prim.name in EXPENSIVE for e in eqns) >= 4 and \
        sum(code_size(e) for e in eqns) > OUTLINE_FROM


def emit(b: ir.IRBuilder, name: str, args: list, dtype) -> ir.Value:
    """name(*args) (mathlib's unary or binary function): inline, or where the kernel
    being emitted wants calls (the emitter sets b.jx_outline from wanted()) a call of
    the module's one copy, made on first use."""
    if not getattr(b, "jx_outline", False):
        return _emit(b, name, list(args), dtype)
    return b.call(_function(b.module, name, np.dtype(dtype), len(args)), list(args))


PREFIX = "jx.math."


def _function(module: ir.Module, name: str, dtype: np.dtype, arity: int) -> ir.Function:
    """The declaration of jx.math.<name>.<dtype> and of its vector versions."""
    symbol = f"{PREFIX}{name}.{dtype.name}"
    try:
        return module.get_global(symbol)
    except KeyError:
        pass
    t = _float(dtype)
    fn = ir.Function(module, ir.FunctionType(t, [t] * arity), symbol)
    variants = [(lanes, ir.Function(module, ir.FunctionType(ir.VectorType(t, lanes),
                                                             [ir.VectorType(t, lanes)] * arity),
                                    f"{symbol}.v{lanes}"))
                for lanes in _widths(target.of_module(module), dtype)]
    # pure functions: calls may be hoisted, merged or dropped as the inline form's
    for f in [fn] + [v for _, v in variants]:
        f.attributes.add("nounwind")
        f.attributes.add("readnone")
        set.add(f.attributes, "willreturn")       # (llvmlite's list lacks it)
    _name_variants(fn, symbol, arity, variants)
    # the vectoriser calls a version only if it is declared: nothing else names it
    module.__dict__.setdefault("_jx_keep", []).extend(v for _, v in variants)
    return fn


def _float(dtype: np.dtype):
    return ir.FloatType() if dtype == np.float32 else ir.DoubleType()


def _widths(cpu: str, dtype: np.dtype) -> list:
    vbytes = target.vector_bytes(cpu)
    return [n for n in _LANES[dtype.itemsize] if n * dtype.itemsize <= max(vbytes, 16)]


def _name_variants(fn, symbol: str, arity: int, variants: list) -> None:
    # "_ZGV_LLVM_N<lanes><v per argument>_<scalar>(<vector>)": LLVM's vector ABI names
    names = ",".join(f"_ZGV_LLVM_N{n}{'v' * arity}_{symbol}({v.name})" for n, v in variants)
    set.add(fn.attributes, f'"vector-function-abi-variant"="{names}"')   # (a string attribute)


def routines(undefined) -> list:
    """The math routines (scalar symbols) an object's undefined symbols call."""
    out = set()
    for name in undefined:
        if name.startswith(PREFIX):
            base, _, last = name.rpartition(".")
            out.add(base if last[:1] == "v" and last[1:].isdigit() else name)
    return sorted(out)


def provides(name: str) -> bool:
    """Is `name` a routine library_ir defines (for some target)?"""
    routine = (routines([name]) or [""])[0]
    name_dt = routine[len(PREFIX):].rpartition(".")
    if not routine.startswith(PREFIX) or name_dt[0] not in mathlib.UNARY | mathlib.BINARY \
            or name_dt[2] not in ("float32", "float64"):
        return False
    lanes = name[len(routine) + 2:]
    return name == routine or (lanes.isdigit() and
                               int(lanes) in _LANES[np.dtype(name_dt[2]).itemsize])


def library_ir(symbol: str, cpu: str) -> str:
    """The module defining one routine (jx.math.<fn>.<dtype>) and its vector versions
    for `cpu`: hidden symbols, linked beside a program's object, never exported."""
    if not provides(symbol) or routines([symbol]) != [symbol]:
        raise ValueError(f"{symbol!r} names no jx math routine")
    name, _, dt = symbol[len(PREFIX):].rpartition(".")
    dtype, arity = np.dtype(dt), 1 if name in mathlib.UNARY else 2
    module = ir.Module(name=symbol)
    module.jx_cpu = cpu
    t = _float(dtype)
    fn = ir.Function(module, ir.FunctionType(t, [t] * arity), symbol)
    fn.attributes.add("noinline")        # else inlined into its vector versions first
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(_emit(b, name, list(fn.args), dtype))
    for lanes in _widths(cpu, dtype):
        _vector_version(module, symbol, name, t, lanes, arity, dtype)
    # (llvmlite prints no visibility on functions)
    return str(module).replace("\ndefine ", "\ndefine hidden ")


def _emit(b, name, args, dtype):
    if len(args) == 1:
        return mathlib.emit_unary(b, name, args[0], dtype)
    return mathlib.emit_binary(b, name, args[0], args[1], dtype)


def _vector_version(module, symbol, name, t, lanes, arity, dtype) -> tuple:
    """<lanes x t> symbol.v<lanes>(<lanes x t>...): the scalar body in a loop over the
    lanes, through memory, which LLVM vectorises (and its allocas fold away)."""
    vt = ir.VectorType(t, lanes)
    fn = ir.Function(module, ir.FunctionType(vt, [vt] * arity), f"{symbol}.v{lanes}")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    arr = ir.ArrayType(t, lanes)
    ins = []

    def slot():             # aligned as the vector: its loads and stores assume it
        p = b.alloca(arr)
        p.align = lanes * dtype.itemsize
        return p

    for a in fn.args:
        ins.append(slot())
        b.store(a, b.bitcast(ins[-1], vt.as_pointer()))
    out = slot()
    with U.for_range(b, lanes, "lane") as i:
        xs = [b.load(b.gep(p, [U.i64(0), i])) for p in ins]
        b.store(_emit(b, name, xs, dtype), b.gep(out, [U.i64(0), i]))
    b.ret(b.load(b.bitcast(out, vt.as_pointer())))
    return lanes, fn


def keep_alive(module: ir.Module):
    """The vector versions' declarations, listed in llvm.compiler.used: nothing calls
    them until the vectoriser does, and an unused declaration is dropped before that.
    Returns the global (None when the module has none)."""
    keep = module.__dict__.get("_jx_keep")
    if not keep:
        return None
    arr = ir.ArrayType(U.PTR, len(keep))
    used = ir.GlobalVariable(module, arr, "llvm.compiler.used")
    used.linkage = "appending"
    used.section = "llvm.metadata"
    used.initializer = ir.Constant(arr, keep)
    return used
