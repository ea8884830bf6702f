"""jx.pmap: data parallelism over the CPU's devices, within a process and over MPI.

    step = jx.pmap(update, axis_name="batch")     # f sees one device's shard
    params = step(params, xs)                     # xs: (n_devices, ...) per process

Devices. One process splits the CPU into N *local devices* (N from the
JX_NUM_CPU_DEVICES environment variable, else the core count). Started by
`mpirun -n P` with mpi4py installed, jx spans P processes: `device_count()` is
N x P, each process passes its local shards (leading axis of at most N) and
pmap's named axis has size n_local x P, global device g = rank x n_local + local.

Semantics are JAX's: the reference (eager) semantics of pmap are those of
`jx.vmap(f, axis_name=...)`, which is also what pmap does when it is called
inside a trace (jit, grad, vmap). Called on concrete arrays it compiles the
per-device function once per shapes, then runs every shard on its own thread
through the C runtime (codegen/cpu/cruntime/jx_collectives.c): collectives are
compiled kernels meeting in shared memory (and, across processes, the process
leader calls MPI through the hooks installed from mpi4py); no Python runs
between the start and the end of a step.

The axis environment: while a mapped function is being traced, each named axis
is bound to (size, index value); the collectives in jx.lax read it. The index is
a traced int32 scalar that the collectives take as an operand (see
prims/collectives.py for why).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
from typing import Callable, Sequence

import numpy as np

from . import array as _array
from . import flags, tree
from .array import Array, Device  # noqa: F401  (Device re-exported: jx.Device)
from .core import Tracer, get_aval
from .errors import JxError
from .lax.collectives import axis_bound, axis_frame, lookup_axis  # noqa: F401  (re-exported)
from .staging import stage
from .vmap import mapped_size, vmap

# ---------------------------------------------------------------- axis environment
# (kept in jx.lax.collectives, which reads it; bound here and by jx.vmap)


@contextlib.contextmanager
def bind_axis(axis_name, size: int, index):
    """Bind a named axis of `size` devices while tracing a per-device (SPMD)
    function whose device index is the traced int32 scalar `index`. For entries
    compiled with `jx compile`, whose collectives then run on the devices and
    processes of the C runtime (jx_pmap_run, jx_set_collective_hooks):

        @jx.export(index=jx.i32[()], x=jx.f32[64, 784])
        def step(index, x):
            with jx.bind_axis("batch", 8, index):
                return jx.lax.pmean(grad_of(x), "batch")
    """
    from .ir import ShapedArray
    if not isinstance(index, Tracer) or index.aval.strip_weak() != ShapedArray((), np.int32):
        raise JxError(f"bind_axis({axis_name!r}): index must be a traced int32 scalar (an "
                      f"entry argument declared jx.i32[()]), got {index!r}; use jx.pmap to "
                      "map a function over concrete arrays")
    if int(size) < 1:
        raise JxError(f"bind_axis({axis_name!r}): size must be positive, got {size}")
    with axis_frame(axis_name, size, index):
        yield


# ---------------------------------------------------------------- devices and processes

# What launchers announce (srun through PMI sets PMI_SIZE; SLURM_NTASKS alone is
# also set for plain jobs in an allocation, so it does not count).
_MPI_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE",
                  "MPI_LOCALNRANKS")
_mpi_state: dict = {}


def _launched_size() -> int:
    """The world size a launcher (mpirun, mpiexec, srun) announces, else 1."""
    for var in _MPI_SIZE_VARS:
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v)
    return 1


def mpi_comm():
    """The MPI communicator pmap spans, or None in a single process.

    MPI is used when the process was started by an MPI launcher with more than
    one rank (or JX_MPI=1); JX_MPI=0 turns it off. Importing mpi4py initialises
    MPI, so it is imported only then.
    """
    if "comm" in _mpi_state:
        return _mpi_state["comm"]
    flag = os.environ.get("JX_MPI", "")
    comm = None
    if flag != "0" and (flag == "1" or _launched_size() > 1):
        try:
            from mpi4py import MPI
        except ImportError:
            raise JxError("this process was started by an MPI launcher with "
                          f"{_launched_size()} ranks, but mpi4py is not installed: "
                          "`pip install 'jx[mpi]'` (or set JX_MPI=0 to run each rank "
                          "alone)") from None
        comm = MPI.COMM_WORLD
        if comm.Get_size() == 1 and _launched_size() > 1:
            raise JxError(f"the MPI launcher started {_launched_size()} ranks but mpi4py's "
                          f"MPI ({MPI.get_vendor()[0]}) sees only this one: the launcher "
                          "belongs to another MPI implementation. Use the mpiexec of the "
                          "MPI mpi4py was built with (for `pip install 'jx[mpi]'`: the one "
                          "installed beside python)")
    _mpi_state["comm"] = comm
    return comm


def process_index() -> int:
    comm = mpi_comm()
    return 0 if comm is None else comm.Get_rank()


def process_count() -> int:
    comm = mpi_comm()
    return 1 if comm is None else comm.Get_size()


def local_device_count() -> int:
    """jax_num_cpu_devices (jx.config), else JX_NUM_CPU_DEVICES, else the number of
    cores this process may use."""
    if flags.STATE.num_cpu_devices > 0:
        return flags.STATE.num_cpu_devices
    v = os.environ.get("JX_NUM_CPU_DEVICES")
    if v:
        try:
            n = int(v)
        except ValueError:
            n = 0
        if n < 1:
            raise JxError(f"JX_NUM_CPU_DEVICES={v!r}: give a positive number of devices")
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:           # not Linux
        return max(1, os.cpu_count() or 1)


def _default_device() -> Device:
    """The device a concrete jx.Array reports: this process's first local device
    (without starting MPI just to ask)."""
    comm = _mpi_state.get("comm")
    p = 0 if comm is None else comm.Get_rank()
    return Device(p * local_device_count(), p)


_array.DEFAULT_DEVICE[0] = _default_device


def device_count() -> int:
    return local_device_count() * process_count()


def local_devices() -> list:
    n, p = local_device_count(), process_index()
    return [Device(p * n + i, p) for i in range(n)]


def devices() -> list:
    n = local_device_count()
    return [Device(p * n + i, p) for p in range(process_count()) for i in range(n)]


# ---------------------------------------------------------------- pmap

_names = itertools.count()
_PLAIN = (np.ndarray, Array)     # argument types pmap's fast path keys by shape and dtype


def _in_dims(in_axes, args) -> list:
    """Per-leaf mapped axis (canonical int or None) of the dynamic args."""
    spec = tuple(in_axes) if isinstance(in_axes, list) else in_axes
    if isinstance(spec, tuple) and len(spec) != len(args):
        raise JxError(f"pmap: in_axes has {len(spec)} entries but the function got "
                      f"{len(args)} (non-static) arguments; give one per argument")
    try:
        dims = tree.broadcast_prefix(spec if isinstance(spec, tuple) else (spec,) * len(args),
                                     tuple(args))
    except ValueError as e:
        raise JxError(f"pmap: in_axes {in_axes!r} does not match the arguments ({e})") from None
    out = []
    for x, d in zip(tree.tree_leaves(tuple(args)), dims):
        if d is None:
            out.append(None)
            continue
        if not isinstance(d, int):
            raise JxError(f"pmap: in_axes entries must be int or None, got {d!r}")
        nd = len(_shape(x))
        if not -nd <= d < max(nd, 1) or nd == 0:
            raise JxError(f"pmap: in_axes={d} for an argument of shape {_shape(x)}; a "
                          "mapped argument needs that axis (use None for unmapped ones)")
        out.append(d % nd)
    return out


def pmap(f: Callable, axis_name=None, *, in_axes=0, out_axes=0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices=None,
         backend: str | None = None, axis_size: int | None = None,
         donate_argnums: int | Sequence[int] = (), abstracted_axes=None) -> Callable:
    """Map f over the leading (or `in_axes`) axis of its arguments, one slice per
    device, in parallel; collectives over `axis_name` combine the devices.

    in_axes/out_axes: as jx.vmap (None = the same value on every device; for an
    output, None returns device 0's value, meant for replicated results).
    static_broadcasted_argnums: arguments passed to f as Python values (they key
    the compilation cache). devices: the local devices (or device ids) to run on;
    their number must equal the mapped size. backend: None or "cpu" compiles;
    "reference" evaluates with NumPy as jx.vmap(f, axis_name=...) does. Keyword
    arguments are mapped over their leading axis (in_axes covers the positional
    ones), as in JAX. donate_argnums: accepted, no effect (results are fresh
    buffers). abstracted_axes (CPU, one process): as jx.jit's, for the arguments
    as passed (the mapped axis stays a number): one compilation serves every
    per-device batch size.
    """
    name = axis_name if axis_name is not None else f"_pmap{next(_names)}"
    statics = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    if backend not in (None, "cpu", "reference", "cuda"):
        raise JxError(f"pmap: unknown backend {backend!r}; use None/'cpu' (compiled, one "
                      "thread per device), 'cuda' (one GPU per process, NCCL) or "
                      "'reference' (NumPy, as jx.vmap)")
    from .jit import _index_tuple
    _index_tuple(donate_argnums, "donate_argnums", "pmap")
    cache: dict = {}
    fast: dict = {}            # (shape, dtype) of each NumPy argument -> compiled step
    with_keywords: dict = {}   # number of positional args -> pmap of f taking kwargs last

    @functools.wraps(f)
    def mapped(*args, **kwargs):
        if not kwargs and not statics and in_axes == 0 and abstracted_axes is None:
            try:                              # the fast path: plain arrays
                step = fast.get(tuple([(a.shape, a.dtype) for a in args
                                       if type(a) in _PLAIN]))
            except AttributeError:
                step = None
            if step is not None and len(step.dims) == len(args):
                from jx.codegen.cpu.pmap import run_step
                return run_step(step, args, out_axes)
        if kwargs:                # mapped over axis 0: one more positional argument
            inner = with_keywords.get(len(args))
            if inner is None:
                inner = with_keywords[len(args)] = _keywords_last(
                    f, len(args), name, in_axes, out_axes, statics, devices, backend,
                    axis_size)
            return inner(*args, kwargs)
        from .api import merge_static, split_static
        static, dyn = split_static(args, [s % max(len(args), 1) for s in statics])
        axes = in_axes
        if isinstance(axes, (tuple, list)) and len(axes) == len(args) and static:
            axes = tuple(a for i, a in enumerate(axes) if i not in static)
        dims = _in_dims(axes, dyn)
        leaves = tree.tree_leaves(tuple(dyn))
        sizes = {_shape(x)[d] for x, d in zip(leaves, dims) if d is not None}
        n = mapped_size(sizes, axis_size, "pmap",
                        "the same leading size (one slice per device)")
        if backend == "cuda":
            return _pmap_cuda(f, name, static, args, dyn, dims, n, out_axes, cache)
        n_dev = len(devices) if devices is not None else local_device_count()
        if devices is not None and n != n_dev:
            raise JxError(f"pmap: the mapped axis has size {n} but devices= lists {n_dev} "
                          "devices; give one device per slice")
        if n > n_dev:
            raise JxError(f"pmap: the mapped axis has size {n} but this process has only "
                          f"{n_dev} local devices; map at most {n_dev} slices (reshape the "
                          "batch to (devices, per_device, ...)) or set JX_NUM_CPU_DEVICES")

        def fixed(*d):
            return f(*merge_static(static, d, len(args)))
        fixed.__name__ = getattr(f, "__name__", "mapped")

        traced = any(isinstance(x, Tracer) for x in leaves)
        if traced or backend == "reference" or not _compiled_available():
            if process_count() > 1:
                why = "inside a trace (jit, grad, vmap)" if traced else \
                    "without the compiled runtime"
                raise JxError(f"pmap over {process_count()} MPI processes cannot run {why}: "
                              "call the pmapped function at top level on NumPy arrays "
                              "(put jit/grad inside the mapped function)")
            return vmap(fixed, in_axes=tuple(axes) if isinstance(axes, list) else axes,
                        out_axes=out_axes, axis_name=name)(*dyn)
        from jx.codegen.cpu.pmap import run_step
        spec_dyn = dyn
        if abstracted_axes is not None:        # the named axes symbolic: their specs key
            spec_dyn = _abstracted(f, args, dyn, statics, dims, abstracted_axes)
        key = (flags.STATE.mode, tuple(sorted((i, _hashable(v)) for i, v in static.items())),
               tree.tree_structure(tuple(dyn)),
               tuple((_key_aval(x), d) for x, d in zip(tree.tree_leaves(tuple(spec_dyn)),
                                                       dims)), n)
        step = cache.get(key)
        if step is None:
            step = cache[key] = _compile_cpu(fixed, name, spec_dyn, dims, n)
            if all(type(a) in _PLAIN for a in args) and not static and in_axes == 0:
                fast[tuple((a.shape, a.dtype) for a in args)] = step
        return run_step(step, leaves, out_axes)

    mapped._cache = cache
    from .api import register_caches
    register_caches(mapped, cache, fast, with_keywords)
    return mapped


def _abstracted(f, args, dyn, statics, dims, axes):
    """dyn with the axes abstracted_axes names made symbolic (jit's rules); the
    mapped axis itself must stay a number (it is the devices')."""
    from .jit import _abstract_leaf, _abstract_leaves, named_axes
    specs = _abstract_leaves(f, args, [s % max(len(args), 1) for s in statics], axes)
    leaves, treedef = tree.flatten(tuple(dyn))
    out = []
    for x, spec, d in zip(leaves, specs, dims):
        if d is not None and any(a % max(len(_shape(x)), 1) == d for a in named_axes(spec)):
            raise JxError(f"pmap: abstracted_axes names the mapped axis {d} (one slice per "
                          "device), whose size is the number of devices: name the "
                          "per-device axes only")
        out.append(_abstract_leaf(x, spec))
    return tree.unflatten(treedef, out)


def _key_aval(x):
    """A leaf's abstract value for the cache key (a spec's with its constraints)."""
    from .api import ShapeDtypeStruct
    if isinstance(x, ShapeDtypeStruct):
        return (x.aval, x.constraints)
    return get_aval(x).strip_weak()


def _keywords_last(f, n: int, name, in_axes, out_axes, statics, devices, backend, axis_size):
    """pmap of f for calls with n positional arguments and keyword arguments: the
    keywords come as one dict after the positionals, mapped over axis 0 (JAX's rule
    for keyword arguments), statics and in_axes as the positionals had them."""
    def call(*args):
        return f(*args[:-1], **args[-1])
    call.__name__ = getattr(f, "__name__", "mapped")
    if isinstance(in_axes, (tuple, list)):
        if len(in_axes) != n:
            raise JxError(f"pmap: in_axes has {len(in_axes)} entries but the function got "
                          f"{n} positional arguments; give one per positional argument "
                          "(keyword arguments are mapped over axis 0)")
        axes = tuple(in_axes) + (0,)
    else:
        axes = (in_axes,) * n + (0,)
    return pmap(call, name, in_axes=axes, out_axes=out_axes,
                static_broadcasted_argnums=[s % n for s in statics if -n <= s < n],
                devices=devices, backend=backend, axis_size=axis_size)


def _shape(x) -> tuple:
    """A leaf's shape without touching its data (device arrays included)."""
    return tuple(x.shape) if hasattr(x, "shape") and not isinstance(x, Tracer) \
        else get_aval(x).shape


def _stage_device(fn, axis_name, size: int, in_avals, dims, treedef,
                  constraints=()) -> tuple:
    """(Staged, shard avals): fn traced for one device of the `size` devices of
    `axis_name` (bound to the device index, a traced int32 first input) on its
    shards (in_avals without their mapped dims), through the pipeline, fused.
    constraints: of symbolic sizes in the shards (jx.dims.DimSpec each)."""
    from .api import ShapeDtypeStruct
    shard = [ShapeDtypeStruct(a.shape if d is None else a.shape[:d] + a.shape[d + 1:], a.dtype,
                              tuple(constraints))
             for a, d in zip(in_avals, dims)]
    staged = stage(axis_bound(fn, axis_name, size), (ShapeDtypeStruct((), np.int32),) +
                   tuple(tree.unflatten(treedef, shard)), name="pmap")
    assert not staged.consts
    return staged, shard


def _compile_cpu(fn, axis_name, args, dims, n: int):
    """The per-device program of n local devices (of every process's, under MPI),
    staged here and compiled by the CPU backend."""
    from jx.codegen.cpu.pmap import compile_step

    from .api import leaf_aval
    comm = mpi_comm()
    ranks, rank = (1, 0) if comm is None else (comm.Get_size(), comm.Get_rank())
    from .api import ShapeDtypeStruct
    leaves, treedef = tree.flatten(tuple(args))
    in_avals = [leaf_aval(x) for x in leaves]
    specs = [c for x in leaves if isinstance(x, ShapeDtypeStruct) for c in x.constraints]
    staged, shard = _stage_device(fn, axis_name, n * ranks, in_avals, dims, treedef, specs)
    name = "pmap_" + "".join(c if c.isalnum() else "_" for c in getattr(fn, "__name__", "f"))
    # what the MPI ranks compare before running: a mismatch errors instead of hanging
    sig = (f"{n} local devices, inputs ({', '.join(f'{s.aval}@{d}' for s, d in zip(shard, dims))})"
           f", program {hashlib.sha256(str(staged.graph).encode()).hexdigest()[:12]}")
    return compile_step(staged.program, name, in_avals=in_avals, dims=dims,
                        out_avals=staged.graph.out_avals, out_tree=staged.out_tree, n=n,
                        rank=rank, signature=sig, comm=comm)


def _pmap_cuda(f, name, static, args, dyn, dims, n, out_axes, cache):
    """One GPU per process: each process maps its own slice (leading size 1) and
    the collectives span the processes through NCCL (codegen/cuda/pmap.py)."""
    from .api import merge_static
    if n != 1:
        raise JxError(f"pmap(backend='cuda') maps one slice per process (its GPU), got a "
                      f"mapped axis of size {n}; start one process per GPU (mpiexec -n "
                      f"{n}) and give each its own slice")
    from jx.codegen.cuda.pmap import compile_step, run_step, world_size

    def fixed(*d):
        return f(*merge_static(static, d, len(args)))
    fixed.__name__ = getattr(f, "__name__", "mapped")
    from jx.codegen.cuda.jit import leaf_aval
    leaves, treedef = tree.flatten(tuple(dyn))
    avals = [leaf_aval(x) for x in leaves]
    key = ("cuda", flags.STATE.mode, tuple(sorted((i, _hashable(v)) for i, v in static.items())), treedef,
           tuple((a.strip_weak(), d) for a, d in zip(avals, dims)))
    step = cache.get(key)
    if step is None:
        size = world_size()
        staged, _ = _stage_device(fixed, name, size, avals, dims, treedef)
        step = cache[key] = compile_step(staged.program, staged.out_tree, dims, size)
    return run_step(step, leaves, out_axes)


def _hashable(v):
    try:
        hash(v)
    except TypeError:
        raise JxError(f"pmap: static argument {v!r} must be hashable (it keys the "
                      "compilation cache); pass a tuple instead of a list") from None
    return v


def _compiled_available() -> bool:
    try:
        from jx.codegen.cpu import parallel
    except ImportError:                 # no llvmlite: NumPy reference only
        return False
    return parallel.available()


__all__ = ["pmap", "Device", "devices", "local_devices", "device_count", "local_device_count",
           "process_index", "process_count", "axis_frame", "lookup_axis", "axis_bound",
           "bind_axis"]
