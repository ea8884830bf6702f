"""Batching rules of the split-layout FFT primitives (jx.prims.fft_split).

They are staged by the complex lowering pass, after every user transformation has
run, so differentiating them is an error; they transform one axis (the last, or
fft_c2c's `axis`) and batch over the others, so batching moves the batch axis to
the front and binds.
"""
from __future__ import annotations

from jx.errors import JxError
from jx.prims import fft_split as fs

from .jvp import jvp_rules
from .vjp import vjp_rules
from .vmap import batch_rules, front_rule as _front_rule


def _derivative(name):
    def rule(*args, **params):
        raise JxError(f"{name} is internal to the complex lowering pass, which runs after "
                      "differentiation; differentiate jx.numpy.fft / jx.lax.fft instead")
    return rule


def _c2c_batch(xs, ds, axis_size, *, inverse, axis=-1):
    # the batch axis goes in front: a counted-from-the-front axis moves by one
    return _front_rule(fs.fft_c2c)(xs, ds, axis_size, inverse=inverse,
                                   axis=axis + 1 if axis >= 0 else axis)


for _prim in (fs.fft_c2c, fs.fft_r2c, fs.fft_c2r, fs.fft_z):
    jvp_rules[_prim.name] = vjp_rules[_prim.name] = _derivative(_prim.name)
batch_rules["fft_c2c"] = _c2c_batch
batch_rules["fft_r2c"] = _front_rule(fs.fft_r2c)
batch_rules["fft_c2r"] = _front_rule(fs.fft_c2r)
batch_rules["fft_z"] = _front_rule(fs.fft_z)
