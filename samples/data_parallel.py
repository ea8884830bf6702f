"""Data-parallel SGD: the MLP of samples/mlp.py trained with jx.pmap, each device
computing the gradient of its slice of the batch and `pmean` averaging them.

    python samples/data_parallel.py                  # the local devices (one per core)
    JX_NUM_CPU_DEVICES=4 python samples/data_parallel.py --steps 20
    mpirun -n 2 python samples/data_parallel.py      # 2 processes x their local devices

Every process builds the same synthetic data set and takes its own part of each
global batch; parameters are replicated, so after each step every device holds
the same parameters. --check compares the final parameters with plain SGD on the
whole batch on one device (jx.jit), which data parallelism must reproduce.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jx  # noqa: E402
from jx import lax  # noqa: E402
from mlp import PARAMS, loss  # noqa: E402

LEARNING_RATE = 0.1


def init_params(rng, sizes):
    params = {}
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"w{i + 1}"] = (rng.normal(size=(n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        params[f"b{i + 1}"] = np.zeros(n_out, np.float32)
    return params


def synthetic_data(rng, n, n_in, n_classes=10):
    """Inputs and the labels a random linear teacher gives them (learnable)."""
    x = rng.normal(size=(n, n_in)).astype(np.float32)
    teacher = rng.normal(size=(n_in, n_classes))
    return x, np.argmax(x @ teacher, axis=1).astype(np.int32)


def sgd_step(params, x, y, lr=LEARNING_RATE):
    """One device's step on its shard of the batch (inside a "batch" axis)."""
    value, grads = jx.value_and_grad(loss)(params, x, y)
    grads = lax.pmean(grads, "batch")         # the all-reduce of data parallelism
    new = jx.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return new, lax.pmean(value, "batch")


def make_step(lr):
    # params replicated (in_axes None, out_axes None); x and y split over devices
    return jx.pmap(lambda p, x, y: sgd_step(p, x, y, lr), axis_name="batch",
                   in_axes=(None, 0, 0), out_axes=None)


@jx.export(index=jx.i32[()], params=PARAMS, x=jx.f32[16, 784], y=jx.i32[16])
def device_step(index, params, x, y):
    """The per-device step for `jx compile` (8 devices x 16 examples): a C program
    runs it on its devices with jx_pmap_run, across processes through its MPI
    hooks (README, "Data parallelism")."""
    with jx.bind_axis("batch", 8, index):
        return sgd_step(params, x, y)


def reference_sgd(params, batches, lr):
    update = jx.jit(lambda p, x, y: jx.tree_util.tree_map(
        lambda a, g: a - lr * g, p, jx.grad(loss)(p, x, y)))
    for x, y in batches:
        params = update(params, x, y)
    return params


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128, help="global batch size")
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=LEARNING_RATE)
    ap.add_argument("--check", action="store_true",
                    help="compare with one-device SGD on the whole batch")
    args = ap.parse_args(argv)

    rank, n_proc = jx.process_index(), jx.process_count()
    n_local = jx.local_device_count()
    n_dev = n_local * n_proc
    while args.batch % n_dev:          # use fewer local devices if the batch does not split
        n_local -= 1
        n_dev = n_local * n_proc
    per_device = args.batch // n_dev
    rng = np.random.default_rng(0)     # the same data and initial parameters everywhere
    params = init_params(rng, (784, args.hidden, args.hidden, 10))
    x_all, y_all = synthetic_data(rng, args.batch * args.steps, 784)
    batches = [(x_all[i * args.batch:(i + 1) * args.batch],
                y_all[i * args.batch:(i + 1) * args.batch]) for i in range(args.steps)]
    if rank == 0:
        print(f"{n_proc} process(es) x {n_local} device(s), global batch {args.batch} "
              f"({per_device} per device), hidden {args.hidden}")

    step = make_step(args.lr)
    p, start = params, None
    for i, (x, y) in enumerate(batches):
        mine = slice(rank * n_local * per_device, (rank + 1) * n_local * per_device)
        xs = x[mine].reshape(n_local, per_device, 784)       # this process's devices
        ys = y[mine].reshape(n_local, per_device)
        p, value = step(p, xs, ys)
        if i == 0:
            start = time.perf_counter()                     # after compiling
        if rank == 0:
            print(f"step {i:3d}  loss {float(value):.4f}")
    if rank == 0 and args.steps > 1:
        per_step = (time.perf_counter() - start) / (args.steps - 1)
        print(f"{per_step * 1e3:.2f} ms/step, {args.batch / per_step:.0f} examples/s")
    if args.check:
        ref = reference_sgd(params, batches, args.lr)
        err = max(float(np.max(np.abs(p[k] - ref[k]))) for k in ref)
        if rank == 0:
            print(f"max |data-parallel - one device| = {err:.2e}")
        if err > 1e-4:
            raise SystemExit(f"data-parallel parameters differ from one-device SGD by {err}")
    return p


if __name__ == "__main__":
    main()
