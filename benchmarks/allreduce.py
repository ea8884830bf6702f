"""Allreduce bandwidth of jx.pmap's psum: local devices (threads in shared memory)
and MPI ranks, against MPI's own allreduce (mpi4py) in the same run.

    jx bench --suite allreduce                      # local devices
    mpirun -n 2 jx bench --suite allreduce          # + jx over ranks vs mpi4py

For each message size (float32 elements per device) it reports the time of one
allreduce and its bus bandwidth, 2 (n - 1) / n * bytes / time (the nccl-tests
convention: the bytes each device must send and receive in a ring allreduce, so
numbers are comparable across device counts). jx's time is a whole pmap call
(the Python dispatch included); "numpy sum" is one thread summing the device
buffers, the memory-bound floor of a shared-memory reduction.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import jx
from jx import lax


def timed(call, min_time: float, comm=None) -> float:
    """Median seconds per call over 7 batches lasting about min_time in total.
    Under MPI every rank runs the same number of calls (the slowest rank's
    choice), with a barrier before each batch, and the slowest time is reported."""
    call()
    t = time.perf_counter()
    call()
    reps = max(1, int(min_time / 7 / max(time.perf_counter() - t, 1e-7)))
    if comm is not None:
        reps = comm.allreduce(reps, op=_mpi_min())
    samples = []
    for _ in range(7):
        if comm is not None:
            comm.Barrier()
        t = time.perf_counter()
        for _ in range(reps):
            call()
        samples.append((time.perf_counter() - t) / reps)
    best = float(np.median(samples))
    return best if comm is None else comm.allreduce(best, op=_mpi_max())


def _mpi_min():
    from mpi4py import MPI
    return MPI.MIN


def _mpi_max():
    from mpi4py import MPI
    return MPI.MAX


def busbw(nbytes: int, n: int, seconds: float) -> float:
    return 2 * (n - 1) / n * nbytes / seconds / 1e9 if n > 1 else nbytes / seconds / 1e9


def row(name, n, count, seconds):
    nbytes = count * 4
    return f"| {name:<18} | {n:>3} | {count:>10,d} | {seconds * 1e6:>10.1f} | " \
           f"{busbw(nbytes, n, seconds):>8.2f} |"


HEADER = ("| engine             |   n |   elements |   time µs |  bus GB/s |\n"
          "|--------------------|-----|------------|-----------|-----------|")


def local(sizes, device_counts, min_time):
    lines = []
    for n in device_counts:
        os.environ["JX_NUM_CPU_DEVICES"] = str(n)
        step = jx.pmap(lambda x: lax.psum(x, "i"), "i")
        for count in sizes:
            xs = np.random.default_rng(0).normal(size=(n, count)).astype(np.float32)
            got = step(xs)
            np.testing.assert_allclose(got[0], xs.sum(0), rtol=1e-4, atol=1e-4)
            lines.append(row("jx pmap psum", n, count, timed(lambda: step(xs), min_time)))
            lines.append(row("numpy sum", n, count, timed(lambda: xs.sum(0), min_time)))
    return lines


def over_mpi(sizes, min_time, comm):
    from mpi4py import MPI
    os.environ["JX_NUM_CPU_DEVICES"] = "1"
    p = comm.Get_size()
    step = jx.pmap(lambda x: lax.psum(x, "i"), "i")
    lines = []
    for count in sizes:
        x = np.random.default_rng(comm.Get_rank()).normal(size=(1, count)).astype(np.float32)
        out = np.empty(count, np.float32)
        want = np.empty(count, np.float32)
        comm.Allreduce(x[0], want, op=MPI.SUM)
        np.testing.assert_allclose(step(x)[0], want, rtol=1e-4, atol=1e-4)
        t_jx = timed(lambda: step(x), min_time, comm)
        t_mpi = timed(lambda: comm.Allreduce(x[0], out, op=MPI.SUM), min_time, comm)
        lines.append(row("jx pmap psum (MPI)", p, count, t_jx))
        lines.append(row("mpi4py Allreduce", p, count, t_mpi))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e3,1e5,1e6,1e7",
                    help="float32 elements per device, comma-separated")
    ap.add_argument("--devices", default="2,4", help="local device counts to measure")
    ap.add_argument("--min-time", type=float, default=0.3)
    args = ap.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    if jx.process_count() == 1:
        print(HEADER)
        print("\n".join(local(sizes, [int(d) for d in args.devices.split(",")],
                              args.min_time)))
        return
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    lines = over_mpi(sizes, args.min_time, comm)
    if comm.Get_rank() == 0:
        print(HEADER)
        print("\n".join(lines))

