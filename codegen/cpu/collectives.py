"""jx.pmap on the CPU: collective kernels, the launch and the MPI hooks (the
per-device program is compiled and run by pmap.py).

Kernels. psum/pmax/pmin, all_gather, ppermute and all_to_all are opaque kernels
calling the C runtime (cruntime/jx_collectives.c, built into the same library
as the thread pool by parallel.py): `jx_coll_allreduce(in, out, count, dtype,
op)` and friends. The runtime finds the device's team through thread-local
state set by `jx_pmap_run`, which runs the per-device entry on one thread per
device; a kernel returns a nonzero status when its team failed or timed out,
and the message is read back with `jx_coll_last_error`.

Processes. Under MPI the local leader calls hooks (`jx_set_collective_hooks`);
`install_mpi` points them at the MPI library mpi4py uses, through ctypes
function pointers, so the collective itself runs no Python.
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading

import llvmlite.ir as ir
import numpy as np

from jx.errors import JxError, MissingRuleError
from jx.runtime.entry import _data_ptr as data_ptr

from . import irutil as U
from .opaque import opaque_rule

DTYPE_CODES = {np.dtype(t): i for i, t in enumerate(
    ["float32", "float64", "int32", "int64", "uint32", "uint64", "int8", "uint8", "int16",
     "uint16", "bool"])}
OPS = {"psum": 0, "pmax": 1, "pmin": 2}
I32 = U.I32


class CollectiveError(JxError):
    """A collective failed at run time: a timeout, a failed device or process."""


# ---------------------------------------------------------------- kernels

def _extern(ctx, name: str, args: list):
    mod = ctx.module.module
    try:
        return mod.get_global(name)
    except KeyError:
        return ir.Function(mod, ir.FunctionType(I32, args), name)


def _call(ctx, name: str, args: list) -> None:
    """Call a runtime function; a nonzero status leaves the kernel with it."""
    b = ctx.b
    status = b.call(_extern(ctx, name, [a.type for a in args]), args)
    fail = b.function.append_basic_block(f"{name}.fail")
    ok = b.function.append_basic_block(f"{name}.ok")
    b.cbranch(b.icmp_unsigned("!=", status, ir.Constant(I32, 0)), fail, ok)
    with b.goto_block(fail):
        b.ret(status)
    b.position_at_end(ok)


def _size(eqn):
    """The axis size the kernel was compiled for: the runtime checks it."""
    return ir.Constant(I32, eqn.params["size"])


def _nbytes(atom) -> int:
    return atom.aval.size * atom.aval.dtype.itemsize


@opaque_rule("psum", "pmax", "pmin")
def _allreduce(ctx, kernel):
    eqn = kernel.root
    x, (out,) = eqn.inputs[0], eqn.outputs
    code = DTYPE_CODES.get(x.aval.dtype)
    if code is None:
        raise MissingRuleError(f"cpu backend: {eqn.prim.name} of {x.aval.dtype} is not "
                               "supported; convert to float32 first")
    _call(ctx, "jx_coll_allreduce", [ctx.ptr(x), ctx.ptr(out), U.i64(x.aval.size),
                                     ir.Constant(I32, code), ir.Constant(I32, OPS[eqn.prim.name]),
                                     _size(eqn)])


@opaque_rule("all_gather")
def _all_gather(ctx, kernel):
    x, (out,) = kernel.root.inputs[0], kernel.root.outputs
    _call(ctx, "jx_coll_allgather", [ctx.ptr(x), ctx.ptr(out), U.i64(_nbytes(x)),
                                     _size(kernel.root)])


@opaque_rule("all_to_all")
def _all_to_all(ctx, kernel):
    x, (out,) = kernel.root.inputs[0], kernel.root.outputs
    chunk = _nbytes(x) // kernel.root.params["size"]
    _call(ctx, "jx_coll_alltoall", [ctx.ptr(x), ctx.ptr(out), U.i64(chunk), _size(kernel.root)])


@opaque_rule("ppermute")
def _ppermute(ctx, kernel):
    eqn = kernel.root
    x, (out,) = eqn.inputs[0], eqn.outputs
    src = np.full(eqn.params["size"], -1, np.int32)       # src[dst], by global device
    for s, d in eqn.params["perm"]:
        src[d] = s
    _call(ctx, "jx_coll_ppermute", [ctx.ptr(x), ctx.ptr(out), U.i64(_nbytes(x)),
                                    ctx.consts.array(src), _size(eqn)])


@opaque_rule("axis_index")
def _axis_index(ctx, kernel):
    (idx,), (out,) = kernel.root.inputs, kernel.root.outputs
    U.store(ctx.b, U.load(ctx.b, ctx.ptr(idx), U.i64(0), np.int32), ctx.ptr(out), U.i64(0),
            np.int32)


# ---------------------------------------------------------------- the C runtime

@functools.lru_cache(maxsize=None)
def runtime() -> ctypes.CDLL:
    from . import parallel
    path = parallel.jit_library()
    if path is None:
        raise JxError("jx.pmap needs a C compiler to build its runtime (cc, gcc or clang, "
                      "or set CC); without one use pmap(..., backend='reference')")
    lib = ctypes.CDLL(path)
    lib.jx_pmap_run.restype = ctypes.c_int32
    lib.jx_pmap_run.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                                ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32]
    lib.jx_coll_last_error.restype = ctypes.c_char_p
    lib.jx_coll_set_timeout.argtypes = [ctypes.c_double]
    return lib


_RUN_LOCK = threading.Lock()       # one pmap step at a time (hooks and errors are global)


def _renew_run_lock() -> None:
    """A child forked while another thread ran a step would never see it released."""
    global _RUN_LOCK
    _RUN_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_renew_run_lock)


def launch(entry: int, n: int, in_table: np.ndarray, out_table: np.ndarray) -> None:
    """Run the compiled per-device entry on n threads; raise on failure."""
    lib = runtime()
    with _RUN_LOCK:
        status = lib.jx_pmap_run(entry, n, data_ptr(in_table), in_table.shape[1],
                                 data_ptr(out_table), out_table.shape[1])
        if status:
            message = lib.jx_coll_last_error().decode()
            lib.jx_coll_clear_error()
    if status:
        from jx.runtime.abi import STATUS, STATUS_CANCELLED
        if status == STATUS_CANCELLED:
            from jx.runtime.interrupts import interrupted
            raise interrupted("a jx.pmap step")
        if message:
            raise CollectiveError(message)
        name, meaning = STATUS.get(status, ("?", "unknown status"))
        raise CollectiveError(f"a device of the pmap failed with status {status} ({name}: "
                              f"{meaning})")


def set_timeout(seconds: float | None) -> None:
    """Seconds a device waits at a collective before failing (None: the default,
    JX_COLLECTIVE_TIMEOUT or 300)."""
    runtime().jx_coll_set_timeout(-1.0 if seconds is None else float(seconds))


# ---------------------------------------------------------------- MPI

class _MpiApi(ctypes.Structure):
    _fields_ = [("allreduce", ctypes.c_void_p), ("allgather", ctypes.c_void_p),
                ("alltoall", ctypes.c_void_p), ("comm", ctypes.c_ssize_t),
                ("byte_type", ctypes.c_ssize_t),
                ("types", ctypes.c_ssize_t * len(DTYPE_CODES)),
                ("ops", ctypes.c_ssize_t * 3), ("rank", ctypes.c_int32),
                ("size", ctypes.c_int32)]


def _mpi_library(MPI) -> ctypes.CDLL:
    """The MPI shared library mpi4py loaded (found in this process's mappings)."""
    try:
        lib = ctypes.CDLL(None)
        lib.MPI_Allreduce
        return lib
    except (AttributeError, OSError):
        pass
    paths = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if "mpi" in os.path.basename(path) and ".so" in path and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
            lib.MPI_Allreduce
            return lib
        except (AttributeError, OSError):
            continue
    raise JxError(f"could not find the MPI library mpi4py uses ({MPI.Get_library_version()[:60]}"
                  "...) in this process; jx needs its MPI_Allreduce to run pmap over ranks")


_installed: dict = {}


def install_mpi(comm) -> None:
    """Point the runtime's cross-process hooks at MPI on `comm` (once per comm)."""
    if _installed.get("comm") is comm:
        return
    from mpi4py import MPI
    if MPI._sizeof(MPI.Comm) not in (4, 8):
        raise JxError("unsupported MPI handle size; jx's MPI hooks expect int or pointer "
                      "handles")
    lib = _mpi_library(MPI)
    api = _MpiApi()
    for name in ("allreduce", "allgather", "alltoall"):
        fn = getattr(lib, "MPI_" + name.capitalize())
        setattr(api, name, ctypes.cast(fn, ctypes.c_void_p).value)
    api.comm = MPI._handleof(comm)
    api.byte_type = MPI._handleof(MPI.BYTE)
    mpi_types = [MPI.FLOAT, MPI.DOUBLE, MPI.INT32_T, MPI.INT64_T, MPI.UINT32_T,
                 MPI.UINT64_T, MPI.INT8_T, MPI.UINT8_T, MPI.INT16_T, MPI.UINT16_T, MPI.UINT8_T]
    for i, t in enumerate(mpi_types):
        api.types[i] = MPI._handleof(t)
    for i, op in enumerate((MPI.SUM, MPI.MAX, MPI.MIN)):
        api.ops[i] = MPI._handleof(op)
    api.rank, api.size = comm.Get_rank(), comm.Get_size()
    runtime().jx_use_mpi(ctypes.byref(api))
    _installed["comm"] = comm
