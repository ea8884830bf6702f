"""jvp, vjp and batching rules of the collectives (psum, pmax, pmin, all_gather,
ppermute, all_to_all, axis_index).

Batching. A collective's second operand is its axis index (prims/collectives.py).
It is batched exactly when vmap maps *this collective's* axis (vmap(axis_name=)
binds the index to an iota mapped at 0, and no other vmap ever batches it). Then
the collective is resolved into array ops over the batch axis: psum is a sum over
it, all_gather the batch itself, all_to_all a swap of the batch and chunk axes...
With an unbatched index the collective belongs to another (outer) axis and is
re-bound per batch element, the batch axis placed where its shape rule allows.

Differentiation, as in JAX (shard_map's semantics): psum, pmax, pmin and
all_gather produce a value that is the same on every device, so its cotangent
is one value for the whole axis and is *broadcast* back: the cotangent of psum's
operand is the output cotangent itself, all_gather's is this device's slice of
it, pmax's goes to the device(s) holding the maximum. ppermute and all_to_all
move per-device values: their transposes are the inverse permutation and
all_to_all itself. axis_index has no derivative.
"""
from __future__ import annotations

import numpy as np

import jx.numpy as jnp
from jx.core import bind
from jx.prims import collectives as C
from jx.prims import reductions as rd
from jx.prims import structural as st

from .interpreters import NotDifferentiable
from .jvp import jvp_rules
from .vjp import vjp_rules
from .vmap import batch_rules, move_to_front


def _one(prim, *args, **params):
    return bind(prim, *args, **params)[0]


# ---------------------------------------------------------------- batching

def _rebind_front(prim, out_dim=0):
    """Another axis's collective on a value batched over this vmap: batch axis first."""
    def rebind(x, dx, idx, axis_size, **params):
        return [_one(prim, move_to_front(x, dx, axis_size), idx, **params)], [out_dim]
    return rebind


def _reduce_batch(prim, reduce, unbatched):
    def rule(xs, ds, axis_size, axis_name, size):
        (x, idx), (dx, di) = xs, ds
        if di is None:
            return _rebind_front(prim)(x, dx, idx, axis_size, axis_name=axis_name, size=size)
        if dx is None:                       # the same value on every device
            return [unbatched(x, size)], [None]
        return [_one(reduce, x, axes=(dx,))], [None]
    return rule


batch_rules["psum"] = _reduce_batch(
    C.psum, rd.reduce_sum, lambda x, n: jnp.multiply(x, np.asarray(n, jnp.result_type(x))))
batch_rules["pmax"] = _reduce_batch(C.pmax, rd.reduce_max, lambda x, n: x)
batch_rules["pmin"] = _reduce_batch(C.pmin, rd.reduce_min, lambda x, n: x)


def _all_gather_batch(xs, ds, axis_size, axis_name, size):
    (x, idx), (dx, di) = xs, ds
    if di is None:        # gathered axis first, then this vmap's batch axis
        return _rebind_front(C.all_gather, 1)(x, dx, idx, axis_size, axis_name=axis_name,
                                              size=size)
    return [move_to_front(x, dx, axis_size)], [None]


batch_rules["all_gather"] = _all_gather_batch


def _ppermute_batch(xs, ds, axis_size, axis_name, size, perm):
    (x, idx), (dx, di) = xs, ds
    if di is None:
        return _rebind_front(C.ppermute)(x, dx, idx, axis_size, axis_name=axis_name,
                                         size=size, perm=perm)
    x = move_to_front(x, dx, axis_size)
    src = np.zeros(size, np.int32)
    got = np.zeros(size, bool)
    for s, d in perm:
        src[d], got[d] = s, True
    moved = jnp.take(x, src, axis=0)
    if got.all():
        return [moved], [0]
    mask = got.reshape((size,) + (1,) * (len(moved.shape) - 1))
    return [jnp.where(mask, moved, jnp.zeros_like(moved))], [0]


batch_rules["ppermute"] = _ppermute_batch


def _all_to_all_batch(xs, ds, axis_size, axis_name, size):
    (x, idx), (dx, di) = xs, ds
    if di is None:        # the operand's leading axis must stay first: batch at 1
        x = jnp.moveaxis(move_to_front(x, dx, axis_size), 0, 1)
        return [_one(C.all_to_all, x, idx, axis_name=axis_name, size=size)], [1]
    if dx is None:        # out[b, j] = (chunk b of device j) = x[b]
        shape = (size,) + tuple(x.shape)
        return [_one(st.broadcast_in_dim, x, shape=shape,
                     broadcast_dimensions=(0,) + tuple(range(2, len(shape))))], [0]
    return [jnp.swapaxes(move_to_front(x, dx, axis_size), 0, 1)], [0]


batch_rules["all_to_all"] = _all_to_all_batch
batch_rules["axis_index"] = lambda xs, ds, axis_size, axis_name: ([xs[0]], [ds[0]])


# ---------------------------------------------------------------- jvp

def _linear_jvp(prim):
    def rule(ps, ts, **params):
        (x, idx), (t, _) = ps, ts
        return [_one(prim, x, idx, **params)], [_one(prim, t, idx, **params)]
    return rule


for _p in (C.psum, C.all_gather, C.ppermute, C.all_to_all):
    jvp_rules[_p.name] = _linear_jvp(_p)


def _extremum_share(x, y, idx, params):
    """Where x attains the extremum y, 1 / (number of devices attaining it)."""
    hit = jnp.asarray(jnp.equal(x, y), dtype=jnp.result_type(x))
    return jnp.true_divide(hit, _one(C.psum, hit, idx, **params))


def _extremum_jvp(prim):
    def rule(ps, ts, **params):
        (x, idx), (t, _) = ps, ts
        y = _one(prim, x, idx, **params)
        share = _extremum_share(x, y, idx, params)
        return [y], [_one(C.psum, jnp.multiply(t, share), idx, **params)]
    return rule


jvp_rules["pmax"] = _extremum_jvp(C.pmax)
jvp_rules["pmin"] = _extremum_jvp(C.pmin)
jvp_rules["axis_index"] = NotDifferentiable("the device index is an integer")


# ---------------------------------------------------------------- vjp

vjp_rules["psum"] = lambda cts, ins, outs, **p: [cts[0], None]


def _extremum_vjp(cts, ins, outs, **params):
    (ct,), (x, idx), (y,) = cts, ins, outs
    return [jnp.multiply(ct, _extremum_share(x, y, idx, params)), None]


vjp_rules["pmax"] = _extremum_vjp
vjp_rules["pmin"] = _extremum_vjp


def _all_gather_vjp(cts, ins, outs, axis_name, size):
    from jx.lax import dynamic_index_in_dim
    (ct,), (_, idx) = cts, ins
    return [dynamic_index_in_dim(ct, idx, 0, keepdims=False), None]


vjp_rules["all_gather"] = _all_gather_vjp


def _ppermute_vjp(cts, ins, outs, axis_name, size, perm):
    back = tuple((d, s) for s, d in perm)
    return [_one(C.ppermute, cts[0], ins[1], axis_name=axis_name, size=size, perm=back), None]


vjp_rules["ppermute"] = _ppermute_vjp
vjp_rules["all_to_all"] = lambda cts, ins, outs, **p: [_one(C.all_to_all, cts[0], ins[1], **p),
                                                       None]
vjp_rules["axis_index"] = jvp_rules["axis_index"]
