"""jx.pmap on the CPU: the per-device program, compiled and run on the local
devices.

jx.pmap stages the per-device program (traced with the axis bound to the device
index, through the pass pipeline, fused) and gives it here; compile_step
compiles it like jx.jit and precomputes each call's pointer tables, and
run_step launches it on one thread per device through the C runtime
(collectives.py), after checking under MPI that every rank runs the same step.
"""
from __future__ import annotations

import ctypes
import hashlib
import os

import numpy as np

from jx import tree
from jx.array import Array
from jx.runtime.entry import _data_ptr as data_ptr

from .collectives import CollectiveError, install_mpi, launch
from .jit import CompiledFunction


def _agree(comm, signature: str) -> None:
    """Every rank must run the same per-device program on the same shapes: compare a
    hash of it first, so a mismatch is an error on every rank, not a hang or garbage."""
    mine = np.frombuffer(hashlib.sha256(signature.encode()).digest()[:8], np.int64).copy()
    every = np.empty(comm.Get_size(), np.int64)
    comm.Allgather(mine, every)
    if (every == every[0]).all():
        return
    texts = comm.allgather(signature)
    lines = "\n".join(f"  rank {r}: {t}" for r, t in enumerate(texts))
    raise CollectiveError("pmap: the MPI ranks disagree on what to run (every process must "
                          "call the pmapped function with the same shapes, dtypes and static "
                          f"arguments, in the same order):\n{lines}")


class Step:
    """One compiled per-device program, with what a call needs precomputed."""

    def __init__(self, compiled, in_avals, dims, out_avals, out_tree, n, rank, signature,
                 comm):
        self.compiled = compiled          # keeps the JIT module (and the entry) alive
        # a per-device program with symbolic sizes: its values ride as the last input
        self.symbolic = bool(compiled.symbols)
        self.entry = compiled.dims_last if self.symbolic else \
            ctypes.cast(compiled.fn, ctypes.c_void_p).value
        self.in_avals, self.dims, self.n = in_avals, dims, n
        self.out_avals = out_avals
        self.out_tree = out_tree
        self.signature = signature
        self.comm = comm                  # the MPI communicator, or None in one process
        self.agreed = False               # ranks compared signatures at least once
        self._tables: list = []
        dev = np.arange(n, dtype=np.uintp)
        self.index = np.arange(rank * n, (rank + 1) * n, dtype=np.int32)
        self._index_ptrs = data_ptr(self.index) + 4 * dev
        if self.symbolic:       # strides and shapes are known per call (run_step)
            return
        self.in_steps = [None if d is None else dev * np.uintp(a.size // max(a.shape[d], 1)
                                                                * a.dtype.itemsize)
                         for a, d in zip(in_avals, dims)]
        self.out_steps = [dev * np.uintp(a.size * a.dtype.itemsize) for a in self.out_avals]
        # pointer tables not in use: a call owns the pair it takes, so calls from
        # several threads never overwrite each other's pointers

    def take_tables(self) -> tuple:
        """(in_table, out_table) for one call; give them back with give_tables."""
        try:
            return self._tables.pop()
        except IndexError:
            in_table = np.empty((self.n, 1 + len(self.in_avals)), np.uintp)
            in_table[:, 0] = self._index_ptrs
            return in_table, np.empty((self.n, max(1, len(self.out_avals))), np.uintp)

    def give_tables(self, tables: tuple) -> None:
        self._tables.append(tables)


def compile_step(program, name: str, *, in_avals, dims, out_avals, out_tree, n: int,
                 rank: int, signature: str, comm=None) -> Step:
    """Compile the fused per-device program (staged by jx.pmap: its first input is
    the device index, then the shards of in_avals along dims) for n local devices
    of process `rank`; `signature` is what the MPI ranks compare before a step."""
    return Step(CompiledFunction(program, name), list(in_avals), list(dims), list(out_avals),
                out_tree, n, rank, signature, comm)


def _symbolic_layout(step: Step, leaves) -> tuple:
    """(leaves as contiguous arrays, the dims array, per-device input offsets, output
    shapes and per-device offsets) of a call of a symbolic per-device program."""
    from jx.dims import substitute
    xs = []
    for x, d, aval in zip(leaves, step.dims, step.in_avals):
        x = x._value if type(x) is Array else x
        x = np.asarray(x, dtype=aval.dtype)
        xs.append(np.ascontiguousarray(x if d in (None, 0) else np.moveaxis(x, d, 0)))
    shards = [x.shape if d is None else x.shape[1:] for x, d in zip(xs, step.dims)]
    values = step.compiled.symbol_values([()] + shards, "jx.pmap")
    dims = np.array([values[k] for k in step.compiled.symbols], np.int64)
    dev = np.arange(step.n, dtype=np.uintp)
    in_offs = [None if d is None else dev * np.uintp(int(np.prod(s)) * x.dtype.itemsize)
               for x, s, d in zip(xs, shards, step.dims)]
    out_shapes = [tuple(substitute(a.shape, values)) for a in step.out_avals]
    out_offs = [dev * np.uintp(int(np.prod(s)) * np.dtype(a.dtype).itemsize)
                for s, a in zip(out_shapes, step.out_avals)]
    return xs, dims, in_offs, out_shapes, out_offs


def run_step(step: Step, leaves, out_axes):
    """Run one pmap step on the flat argument leaves (concrete arrays)."""
    if step.symbolic:
        return _run_symbolic(step, leaves, out_axes)
    comm = step.comm
    if comm is not None:
        install_mpi(comm)
        if not step.agreed or os.environ.get("JX_MPI_CHECK", "1") != "0":
            _agree(comm, step.signature)
            step.agreed = True
    n = step.n
    tables = in_table, out_table = step.take_tables()
    keep = []
    for k, (x, d, aval, offs) in enumerate(zip(leaves, step.dims, step.in_avals,
                                               step.in_steps), start=1):
        if type(x) is Array:
            x = x._value
        if type(x) is not np.ndarray or x.dtype != aval.dtype or not x.flags.c_contiguous \
                or (d is not None and d != 0):
            x = np.asarray(x, dtype=aval.dtype)
            x = np.ascontiguousarray(x if d in (None, 0) else np.moveaxis(x, d, 0))
            keep.append(x)
        in_table[:, k] = data_ptr(x) if offs is None else data_ptr(x) + offs
    outs = [np.empty((n,) + a.shape, a.dtype) for a in step.out_avals]
    for k, (o, offs) in enumerate(zip(outs, step.out_steps)):
        out_table[:, k] = data_ptr(o) + offs
    try:
        launch(step.entry, n, in_table, out_table)
    finally:
        step.give_tables(tables)
    del keep
    return _results(step, outs, out_axes)


def _run_symbolic(step: Step, leaves, out_axes):
    """run_step for a per-device program with symbolic sizes (one process)."""
    if step.comm is not None:
        raise CollectiveError("pmap with abstracted_axes runs in one process: under MPI "
                              "give every rank the same fixed shapes")
    xs, dims, in_offs, out_shapes, out_offs = _symbolic_layout(step, leaves)
    n = step.n
    in_table = np.empty((n, 2 + len(xs)), np.uintp)
    in_table[:, 0] = step._index_ptrs
    for k, (x, offs) in enumerate(zip(xs, in_offs), start=1):
        in_table[:, k] = data_ptr(x) if offs is None else data_ptr(x) + offs
    in_table[:, -1] = data_ptr(dims)
    outs = [np.empty((n,) + s, a.dtype) for s, a in zip(out_shapes, step.out_avals)]
    out_table = np.empty((n, max(1, len(outs))), np.uintp)
    for k, (o, offs) in enumerate(zip(outs, out_offs)):
        out_table[:, k] = data_ptr(o) + offs
    launch(step.entry, n, in_table, out_table)
    return _results(step, outs, out_axes)


def _results(step: Step, outs, out_axes):
    if out_axes != 0:
        spec = tree.broadcast_prefix(out_axes, tree.unflatten(step.out_tree, outs))
        outs = [o[0] if a is None else np.moveaxis(o, 0, a % o.ndim) if a else o
                for o, a in zip(outs, spec)]
    # results are jx.Arrays (stacked over devices: strongly typed, as JAX)
    return tree.unflatten(step.out_tree, [Array(o) for o in outs])
