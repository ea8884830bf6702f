"""Collectives of CUDA plans through NCCL (CuPy's binding): one rank per process,
each on its current GPU. With mpi4py initialised and more than one rank, rank 0
creates the NCCL id and broadcasts it over MPI; otherwise the world is this
process alone (world size 1), which is what one GPU allows."""
from __future__ import annotations

import numpy as np

from .errors import ArtifactError

_WORLD = None


def world(cupy):
    """(communicator, rank, size, nccl module), created once per process."""
    global _WORLD
    if _WORLD is None:
        from cupy.cuda import nccl
        rank, size, comm = 0, 1, None
        try:
            from mpi4py import MPI
            if MPI.Is_initialized() and MPI.COMM_WORLD.Get_size() > 1:
                comm = MPI.COMM_WORLD
                rank, size = comm.Get_rank(), comm.Get_size()
        except ImportError:
            pass
        uid = nccl.get_unique_id() if rank == 0 else None
        if comm is not None:
            uid = comm.bcast(uid, root=0)
        _WORLD = (nccl.NcclCommunicator(size, uid, rank), rank, size, nccl)
    return _WORLD


def _dtype(nccl, dt):
    codes = {"float32": nccl.NCCL_FLOAT32, "float64": nccl.NCCL_FLOAT64,
             "float16": nccl.NCCL_FLOAT16, "int32": nccl.NCCL_INT32,
             "int64": nccl.NCCL_INT64, "uint8": nccl.NCCL_UINT8, "int8": nccl.NCCL_INT8,
             "uint32": nccl.NCCL_UINT32, "uint64": nccl.NCCL_UINT64,
             "bool": nccl.NCCL_UINT8}
    if dt.name not in codes:
        raise ArtifactError(f"NCCL collectives do not take {dt.name} values")
    return codes[dt.name]


def run_collective(cupy, step: dict, src: int, dst: int, in_spec, out_spec) -> None:
    """One plan step: src/dst are device pointers of the step's buffers."""
    comm, rank, size, nccl = world(cupy)
    if step["size"] != size:
        raise ArtifactError(
            f"a collective over an axis of size {step['size']} needs {step['size']} NCCL "
            f"ranks (one process per GPU), but this world has {size}: start the program "
            f"with mpiexec -n {step['size']}, one GPU per rank")
    stream = cupy.cuda.get_current_stream().ptr
    shape, dt = in_spec
    count = int(np.prod(shape, dtype=np.int64))
    code = _dtype(nccl, dt)
    prim = step["prim"]
    if prim in ("psum", "pmax", "pmin"):
        op = {"psum": nccl.NCCL_SUM, "pmax": nccl.NCCL_MAX, "pmin": nccl.NCCL_MIN}[prim]
        comm.allReduce(src, dst, count, code, op, stream)
    elif prim == "all_gather":
        comm.allGather(src, dst, count, code, stream)
    elif prim == "ppermute":
        receives = [s for s, d in step["perm"] if d == rank]
        if not receives:        # no device sends here: the result is zeros (as JAX)
            cupy.cuda.runtime.memsetAsync(dst, 0, count * dt.itemsize, stream)
        nccl.groupStart()
        for s, d in step["perm"]:
            if s == rank:
                comm.send(src, count, code, d, stream)
            if d == rank:
                comm.recv(dst, count, code, s, stream)
        nccl.groupEnd()
    elif prim == "all_to_all":
        chunk = count // size
        nbytes = chunk * dt.itemsize
        nccl.groupStart()
        for j in range(size):
            comm.send(src + j * nbytes, chunk, code, j, stream)
            comm.recv(dst + j * nbytes, chunk, code, j, stream)
        nccl.groupEnd()
    else:
        raise ArtifactError(f"unknown collective {prim!r} in a CUDA plan")
