"""Elementwise loops run tile by tile: a scan whose body only maps elements (a
Mandelbrot escape count, an ODE integrated pointwise, a fixed-point iteration)
runs every step on one tile of the arrays before moving to the next tile.

Run step by step, each step streams the whole carry through memory (a 1000x1000
complex carry: 8 MB read and written per step); tile by tile, the carry of a tile
stays in the core's cache for all the steps. It is the same computation: every
element's sequence of operations is unchanged, only the order in which elements
advance differs, so results are bit-identical.

A scan qualifies when it scans no arrays (a fori_loop, or a scan of consts and
carries only), every const and carry is a scalar or has one common shape S, and
its body holds only elementwise equations over S (and scalars) with scalar
literals: no reductions, no layout changes, no iota, no nested control flow.
The body is then retraced over flat tiles of n elements (`program`).
"""
from __future__ import annotations

import functools

import numpy as np

from jx.core import bind
from jx.ir import Literal, Var, subgraphs
from jx.passes.fuse import fuse
from jx.passes.interpreters import read, transform_graph
from jx.runtime import host

from . import irutil as U
from .scalar import SCALAR

ELEMENTWISE = frozenset(SCALAR) | {"convert_element_type", "select", "stop_gradient"}
MIN_TILES = 4         # fewer tiles than this: the carry is small, stepping already fits


def common_shape(eqn):
    """S when eqn is a scan that qualifies (see the module docstring), else None."""
    p = eqn.params
    if eqn.prim.name != "scan" or len(eqn.inputs) != p["num_consts"] + p["num_carry"] \
            or len(eqn.outputs) != p["num_carry"] or U.is_symbolic(p["length"]):
        return None
    shapes = {a.aval.shape for a in eqn.inputs} - {()}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    if any(U.is_symbolic(d) for d in shape) or not all(_elementwise(e, shape)
                                                     for e in p["body"].eqns):
        return None
    return shape


def _elementwise(eqn, shape) -> bool:
    if any(True for _ in subgraphs(eqn)):
        return False
    if any(a.aval.shape not in ((), shape) for a in (*eqn.inputs, *eqn.outputs)):
        return False
    if any(isinstance(a, Literal) and a.aval.shape for a in eqn.inputs):
        return False
    if eqn.prim.name == "broadcast_in_dim":
        return eqn.inputs[0].aval.shape == ()
    return eqn.prim.name in ELEMENTWISE


def tile_elements(eqn) -> int:
    """Elements per tile: a power of two whose working set (the consts, and the
    carry about three times: its two step buffers and the body's temporaries)
    fits the host's L1 data cache, so a tile's steps run from it. (Measured on
    the Mandelbrot loop, Zen 5: tiles of 512-2048 elements, L1-sized, 21-28 ms;
    4096, a quarter of L2, 31-39 ms; 16384, 38 ms.)"""
    shape = common_shape(eqn)
    per_elem = sum(np.dtype(a.aval.dtype).itemsize * (3 if i >= eqn.params["num_consts"] else 1)
                   for i, a in enumerate(eqn.inputs) if a.aval.shape == shape)
    budget = host.cache_sizes()[2] // 4
    return 1 << max(8, min(16, (budget // max(per_elem, 1)).bit_length() - 1))


def plan(eqn):
    """(S, elements per tile) for a scan worth running tile by tile, else None."""
    shape = common_shape(eqn)
    if shape is None or eqn.params["length"] < 2:
        return None
    n = int(np.prod(shape, dtype=np.int64))
    per_tile = tile_elements(eqn)
    return (shape, per_tile) if n >= MIN_TILES * per_tile else None


@functools.lru_cache(maxsize=64)
def _program(eqn, shape, n: int):
    body = eqn.params["body"]
    flat = (n,)
    in_avals = [a.update(shape=flat) if a.shape == shape else a for a in body.in_avals]

    def walk(*args):
        env = {id(v): x for v, x in zip(body.inputs, args)}
        for e in body.eqns:
            params = e.params
            if e.prim.name == "broadcast_in_dim" and e.outputs[0].aval.shape == shape:
                params = dict(params, shape=flat)
            outs = bind(e.prim, *[read(env, a, args) for a in e.inputs], **params)
            env.update({id(v): o for v, o in zip(e.outputs, outs)})
        return [read(env, a, args) for a in body.outputs]

    return fuse(transform_graph(walk, in_avals, "tile"))


def program(eqn, n: int):
    """The scan body's fused Program over flat tiles of n elements."""
    return _program(eqn, common_shape(eqn), n)


def emit_steps_body(b, program, inputs: list, outputs: list, consts) -> None:
    """One step of a tile: the tile program's kernels as ONE loop over the tile's
    elements (scalar kernels before it), each kernel's value at an element
    handed to the kernels after it in registers: the carry's parts (a complex
    value's real and imaginary parts, a count) are computed together and only
    the step's results are stored. Run kernel by kernel, each read and wrote
    its own arrays (Mandelbrot on Zen 5: 20 -> 16 ms)."""
    from . import mathcalls
    from .fused import FusedEmitter
    g = program.graph
    buffers = {id(v): p for v, p in zip(g.inputs, inputs)}
    outs = {id(a): p for a, p in zip(g.outputs, outputs) if isinstance(a, Var)}
    produced = {id(v) for k in program.kernels for v in k.outputs}
    computed: dict = {}             # memo entries of values computed at the index

    def run(kernels, idx) -> None:
        for k in kernels:
            b.jx_outline = mathcalls.wanted(k, b.module)      # (as emit_loop: scalar._math)
            em = FusedEmitter(b, k, {**buffers, **{id(v): None for v in k.inputs
                                                    if id(v) in produced}}, consts)
            em.memo.update(computed)
            (out,) = k.outputs
            at = idx if out.aval.shape else []
            v = em.value(out, at)
            computed[(id(out), tuple(id(i) for i in at))] = v
            if id(out) in outs:
                U.store(b, v, outs[id(out)], U.linear(b, at, out.aval.shape), out.aval.dtype)

    scalars = [k for k in program.kernels if not k.outputs[0].aval.shape]
    run(scalars, [])
    wide = [k for k in program.kernels if k.outputs[0].aval.shape]
    if wide:
        with U.loop_nest(b, wide[0].outputs[0].aval.shape, "tile.e") as idx:
            run(wide, idx)
    for a, p in zip(g.outputs, outputs):    # outputs that are inputs or literals: copies
        if isinstance(a, Var) and id(a) in produced:
            continue
        src = a
        with U.loop_nest(b, a.aval.shape or (1,), "tile.c") as idx:
            at = idx if a.aval.shape else []
            v = U.const(a.aval.dtype, a.val[()]) if isinstance(src, Literal) and \
                not a.aval.shape else U.load(b, buffers[id(a)] if isinstance(a, Var)
                                             else consts.array(a.val),
                                             U.linear(b, at, a.aval.shape), a.aval.dtype)
            U.store(b, v, p, U.linear(b, at, a.aval.shape), a.aval.dtype)
