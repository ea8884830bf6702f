"""jvp, vjp and batching rules of sort and threefry2x32.

A sort permutes: tangents ride along as extra non-key operands (so they are
permuted exactly like their primals), and cotangents go back through the
inverse permutation, which is itself a sort (of the permutation, carrying the
cotangent). Random bits carry no derivative and batch elementwise.
"""
from __future__ import annotations

import numpy as np

from jx.core import bind, get_aval
from jx.prims import random_bits as rb
from jx.prims import sorting as so
from jx.prims import structural as st

from .interpreters import NotDifferentiable
from .jvp import jvp_rules
from .vjp import vjp_rules
from .vmap import batch_rules, move_to_front


def _sort_jvp(ps, ts, dimension, is_stable, num_keys):
    carried = [i for i, t in enumerate(ts) if t is not None]
    outs = bind(so.sort, *ps, *[ts[i] for i in carried], dimension=dimension,
                is_stable=is_stable, num_keys=num_keys)
    touts = [None] * len(ps)
    for j, i in enumerate(carried):
        touts[i] = outs[len(ps) + j]
    return outs[:len(ps)], touts


def _sort_vjp(cts, ins, outs, dimension, is_stable, num_keys):
    shape = get_aval(ins[0]).shape
    iota = bind(st.iota, dtype=np.dtype(np.int32), shape=tuple(shape), dimension=dimension)[0]
    perm = bind(so.sort, *ins[:num_keys], iota, dimension=dimension, is_stable=True,
                num_keys=num_keys)[-1]           # perm[i] = where output i came from
    return [None if ct is None else
            bind(so.sort, perm, ct, dimension=dimension, is_stable=True, num_keys=1)[1]
            for ct in cts]


def _sort_batch(xs, ds, axis_size, dimension, **params):
    xs = [move_to_front(x, d, axis_size) for x, d in zip(xs, ds)]
    return bind(so.sort, *xs, dimension=dimension + 1, **params), [0] * len(xs)


def _threefry_batch(xs, ds, axis_size):
    xs = [move_to_front(x, d, axis_size) for x, d in zip(xs, ds)]
    return bind(rb.threefry2x32, *xs), [0, 0]


jvp_rules["sort"] = _sort_jvp
vjp_rules["sort"] = _sort_vjp
batch_rules["sort"] = _sort_batch
jvp_rules["threefry2x32"] = NotDifferentiable("random bits are integers")
vjp_rules["threefry2x32"] = NotDifferentiable("random bits are integers")
batch_rules["threefry2x32"] = _threefry_batch
