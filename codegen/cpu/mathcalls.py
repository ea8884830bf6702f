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

The routines are part of jx's runtime, not of the program (routines.py): a
program's module only declares them, and each (function, dtype, target) is
compiled once per host, kept with the C runtime's build and shared by every
program, loaded into the process for jx.jit and linked into artifacts. Compiling
sin's four versions into every module that used them was most of a short chain's
compile time (a 200-op chain: 75 of its 90 ms of LLVM).
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from jx.passes.sizes import EXPENSIVE, code_size

from . import irutil as U
from . import mathlib, routines, target

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
    """jx.math.<name>.<dtype> as module calls it, its vector versions named on it
    (a routine: defined in its own module, or inside this one, routines.py)."""
    symbol = f"{PREFIX}{name}.{dtype.name}"
    if symbol in module.globals:
        return module.globals[symbol]
    t = _float(dtype)
    widths = _widths(target.of_module(module), dtype)
    fn = routines.define(module, symbol, ir.FunctionType(t, [t] * arity))
    if fn is not None:                   # its body to emit, vector versions beside it
        fn.attributes.add("noinline")    # else inlined back before the vectoriser runs
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(_emit(b, name, list(fn.args), dtype))
        for lanes in widths:
            routines.declare_beside(
                module, _vector_version(fn.module, symbol, name, t, lanes, arity, dtype))
    variants = []
    for lanes in widths:
        vt, vname = ir.VectorType(t, lanes), f"{symbol}.v{lanes}"
        variants.append((lanes, module.globals.get(vname) or
                         ir.Function(module, ir.FunctionType(vt, [vt] * arity), vname)))
    scalar = module.globals[symbol]
    if routines.external(module):
        # pure functions: calls may be hoisted, merged or dropped, as the inline form's
        for f in [scalar] + [v for _, v in variants]:
            f.attributes.add("nounwind")
            f.attributes.add("readnone")
            set.add(f.attributes, "willreturn")       # (llvmlite's list lacks it)
    _name_variants(scalar, symbol, arity, variants)
    # the vectoriser calls a version only if it is there: nothing else names it
    module.__dict__.setdefault("_jx_keep", []).extend(v for _, v in variants)
    return scalar


def _float(dtype: np.dtype):
    return ir.FloatType() if dtype == np.float32 else ir.DoubleType()


def _widths(cpu: str, dtype: np.dtype) -> list:
    vbytes = target.vector_bytes(cpu)
    return [n for n in _LANES[dtype.itemsize] if n * dtype.itemsize <= max(vbytes, 16)]


def _name_variants(fn, symbol: str, arity: int, variants: list) -> None:
    # "_ZGV_LLVM_N<lanes><v per argument>_<scalar>(<vector>)": LLVM's vector ABI names
    names = ",".join(f"_ZGV_LLVM_N{n}{'v' * arity}_{symbol}({v.name})" for n, v in variants)
    set.add(fn.attributes, f'"vector-function-abi-variant"="{names}"')   # (a string attribute)


def _emit(b, name, args, dtype):
    if len(args) == 1:
        return mathlib.emit_unary(b, name, args[0], dtype)
    return mathlib.emit_binary(b, name, args[0], args[1], dtype)


def _vector_version(module, symbol, name, t, lanes, arity, dtype) -> ir.Function:
    """<lanes x t> symbol.v<lanes>(<lanes x t>...): the scalar body in a loop over the
    lanes, through memory, which LLVM vectorises (and its allocas fold away)."""
    vt = ir.VectorType(t, lanes)
    fn = ir.Function(module, ir.FunctionType(vt, [vt] * arity), f"{symbol}.v{lanes}")
    fn.attributes.add("noinline")
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
    return fn


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
