"""Complex values as pairs of real arrays: the stage before expand.

Every complex value inside a graph becomes a Pair (re, im) of arrays of its
component dtype (float32 for complex64), so the passes and backends after this
one see real arithmetic only: fusion, vectorisation, reductions, the GEMM,
indexing and control flow work unchanged, and a complex kernel is the real
kernel run on the split layout (each part a contiguous array, whole vectors of
real parts and of imaginary parts: no shuffles in the loops). Only a graph's
boundary stays complex: a complex input is read through `real`/`imag` (the loop
that first reads it loads the interleaved components, `float _Complex` layout)
and a complex output is written by a `complex` equation.

Rules are keyed by primitive in RULES; each takes the equation and its operands
(Pairs for complex ones) and returns its results (Pairs for complex ones).
Elementwise arithmetic comes from passes/complex_math.py's formulas. Control
flow carries each complex value as two adjacent real values, its bodies split
the same way. A complex primitive without a rule is a NotImplementedError
naming it.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jx import dtypes
from jx.core import attributed, bind
from jx.ir import Graph, Literal, map_subgraphs, subgraphs
from jx.prims import elementwise as ew

from .interpreters import transform_graph
from .zeros import stage_like


class Pair(NamedTuple):
    re: object
    im: object


def _is_complex(atom) -> bool:
    return dtypes.is_complex(atom.aval.dtype)


def has_complex(graph: Graph) -> bool:
    """Whether any value of the graph, its bodies included, is complex."""
    if any(_is_complex(v) for v in graph.inputs) or any(_is_complex(a) for a in graph.outputs):
        return True
    return any(_is_complex(a) for e in graph.eqns for a in (*e.inputs, *e.outputs)) or \
        any(has_complex(g) for e in graph.eqns for g in subgraphs(e))


def decomplex(graph: Graph) -> Graph:
    """The graph with complex values split into pairs (its boundary kept complex)."""
    if not has_complex(graph):
        return graph

    def walk(*args):
        env = {id(v): (Pair(bind(ew.real, x)[0], bind(ew.imag, x)[0]) if _is_complex(v) else x)
               for v, x in zip(graph.inputs, args)}
        whole = {id(v): x for v, x in zip(graph.inputs, args) if _is_complex(v)}
        joined: dict = {}
        outs = _run(graph, env, args, whole, joined)
        return [_join(o, joined) if isinstance(o, Pair) else o for o in outs]

    out = transform_graph(walk, graph.in_avals, "decomplex")
    return Graph(out.inputs, out.eqns, out.outputs, graph.in_tree, graph.out_tree)


def _join(z: Pair, joined: dict):
    """The interleaved value of a pair: the one it was read from, or built."""
    whole = joined.get((id(z.re), id(z.im)))
    return whole if whole is not None else bind(ew.complex_, z.re, z.im)[0]


def split_body(graph: Graph) -> Graph:
    """A body graph with each complex input and output as two adjacent real ones
    (the form control flow carries them in)."""
    flat_in = [a for v in graph.inputs for a in _parts_aval(v.aval)]

    def walk(*flat):
        env, i = {}, 0
        for v in graph.inputs:
            if _is_complex(v):
                env[id(v)], i = Pair(flat[i], flat[i + 1]), i + 2
            else:
                env[id(v)], i = flat[i], i + 1
        return flatten(_run(graph, env, flat))

    return transform_graph(walk, flat_in, "decomplex")


def _parts_aval(aval) -> list:
    if not dtypes.is_complex(aval.dtype):
        return [aval]
    part = aval.update(dtype=dtypes.real_dtype(aval.dtype))
    return [part, part]


def flatten(values) -> list:
    return [p for v in values for p in (v if isinstance(v, Pair) else (v,))]


def unflatten(flat, like) -> list:
    """Values for the atoms `like` from a flat list holding two per complex one."""
    out, i = [], 0
    for a in like:
        if _is_complex(a):
            out.append(Pair(flat[i], flat[i + 1]))
            i += 2
        else:
            out.append(flat[i])
            i += 1
    return out


def _read(env, atom, like):
    """An atom's value; literals staged in the trace of `like` (the walk's inputs),
    so that rules applied to them do not run eagerly into big literal arrays."""
    if isinstance(atom, Literal):
        v = np.asarray(atom.val)
        if dtypes.is_complex(v.dtype):
            return Pair(stage_like(np.array(v.real), like), stage_like(np.array(v.imag), like))
        return stage_like(atom.val, like)
    return env[id(atom)]


class _Walk(NamedTuple):
    """What rules that look past their operands (the FFT's) see of the graph being
    split: producers, values, the graph's complex inputs as they are (interleaved;
    a body's: none) and `joined`, where a rule leaves (re, im) pairs read from one
    interleaved value, so a result that is that value is not built again."""
    producers: dict
    env: dict
    whole: dict
    joined: dict


_WALKS: list = []         # innermost last


def _run(graph: Graph, env: dict, like, whole=None, joined=None) -> list:
    _WALKS.append(_Walk({id(v): e for e in graph.eqns for v in e.outputs}, env,
                        whole or {}, {} if joined is None else joined))
    try:
        return _run_eqns(graph, env, like)
    finally:
        _WALKS.pop()


def _run_eqns(graph: Graph, env: dict, like) -> list:
    for eqn in graph.eqns:
        ins = [_read(env, a, like) for a in eqn.inputs]
        with attributed(eqn.source):
            if any(isinstance(x, Pair) for x in ins) or any(_is_complex(o) for o in eqn.outputs):
                rule = RULES.get(eqn.prim.name)
                if rule is None:
                    raise NotImplementedError(
                        f"{eqn.prim.name} of complex values is not supported by jx's compiled "
                        "code yet; compute it on real and imaginary parts "
                        "(jnp.real, jnp.imag) and combine them with lax.complex")
                outs = rule(eqn, ins)
            else:
                outs = bind(eqn.prim, *ins, **map_subgraphs(eqn.params, decomplex))
        env.update({id(v): o for v, o in zip(eqn.outputs, outs)})
    return [_read(env, a, like) for a in graph.outputs]


# ------------------------------------------------------------------ rules

RULES: dict = {}


def rule(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


def _const_like(x, value):
    """value broadcast like the real traced array x (a scalar literal, staged)."""
    from jx import lax
    return lax.full_like(x, value)


@rule("real")
def _real(eqn, ins):
    return [ins[0].re]


@rule("imag")
def _imag(eqn, ins):
    return [ins[0].im]


@rule("complex")
def _complex(eqn, ins):
    return [Pair(*ins)]


@rule("conj")
def _conj(eqn, ins):
    (z,) = ins
    return [Pair(z.re, bind(ew.neg, z.im)[0])]


@rule("convert_element_type")
def _convert(eqn, ins):
    (x,), out = ins, eqn.outputs[0].aval.dtype
    if isinstance(x, Pair):
        if dtypes.is_complex(out):
            part = dtypes.real_dtype(out)
            return [Pair(*(bind(ew.convert_element_type, p, new_dtype=part)[0] for p in x))]
        if out == dtypes.bool_:
            nz = [bind(ew.ne, p, _const_like(p, 0))[0] for p in x]
            return [bind(ew.or_, *nz)[0]]
        return [bind(ew.convert_element_type, x.re, new_dtype=out)[0]]
    part = dtypes.real_dtype(out)
    re = bind(ew.convert_element_type, x, new_dtype=part)[0]
    return [Pair(re, _const_like(re, 0))]


@rule("select")
def _select(eqn, ins):
    pred, a, b = ins
    return [Pair(*(bind(ew.select, pred, x, y)[0] for x, y in zip(a, b)))]


# Layout, indexing and additive primitives act on each part alone: the same
# primitive on the real parts, then on the imaginary parts (integer operands, such
# as indices, shared).
COMPONENTWISE = ("broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims",
                 "slice", "rev", "pad", "concatenate", "dynamic_slice",
                 "dynamic_update_slice", "gather", "scatter", "scatter_add", "reduce_sum",
                 "cumsum", "reduce_window_sum", "stop_gradient", "psum", "all_gather",
                 "ppermute", "all_to_all")


@rule(*COMPONENTWISE)
def _componentwise(eqn, ins):
    parts = [bind(eqn.prim, *[x[k] if isinstance(x, Pair) else x for x in ins], **eqn.params)
             for k in (0, 1)]
    return [Pair(r, i) if _is_complex(o) else r
            for o, r, i in zip(eqn.outputs, parts[0], parts[1])]


def _bilinear(eqn, ins):
    """A product bilinear in its operands (dot_general, a convolution): four real
    products, (ar br - ai bi) + i (ar bi + ai br)."""
    a, b = ins

    params = dict(eqn.params)
    if params.get("preferred_element_type") is not None:       # the parts accumulate
        params["preferred_element_type"] = dtypes.real_dtype(params["preferred_element_type"])

    def prod(x, y):
        return bind(eqn.prim, x, y, **params)[0]
    if not isinstance(a, Pair):
        return [Pair(prod(a, b.re), prod(a, b.im))]
    if not isinstance(b, Pair):
        return [Pair(prod(a.re, b), prod(a.im, b))]
    re = bind(ew.sub, prod(a.re, b.re), prod(a.im, b.im))[0]
    im = bind(ew.add, prod(a.re, b.im), prod(a.im, b.re))[0]
    return [Pair(re, im)]


RULES["dot_general"] = RULES["conv_general_dilated"] = _bilinear


@rule("reduce_prod")
def _reduce_prod(eqn, ins):
    """A complex product over axes: the axes moved last and flattened, then halved
    log2(n) times by complex multiplication of the two halves (padded with ones)."""
    from jx import lax
    (z,), axes = ins, tuple(eqn.params["axes"])
    x = z.re
    keep = [d for d in range(x.ndim) if d not in axes]
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    shape = [x.shape[d] for d in keep]
    parts = [lax.reshape(lax.transpose(p, keep + list(axes)), shape + [n]) for p in z]
    if n == 0:
        return [Pair(_const_like(parts[0][..., :0].sum(-1), 1),
                     _const_like(parts[0][..., :0].sum(-1), 0))]
    mul = COMPLEX_MATH()["mul"]
    while parts[0].shape[-1] > 1:
        m = parts[0].shape[-1]
        if m % 2:
            pad = [(0, 0, 0)] * (len(shape)) + [(0, 1, 0)]
            parts = [lax.pad(parts[0], np.asarray(1, x.dtype), pad),
                     lax.pad(parts[1], np.asarray(0, x.dtype), pad)]
            m += 1
        h = m // 2
        lo = tuple(lax.slice_in_dim(p, 0, h, axis=-1) for p in parts)
        hi = tuple(lax.slice_in_dim(p, h, m, axis=-1) for p in parts)
        parts = list(mul(lo, hi))
    return [Pair(*(lax.reshape(p, shape) for p in parts))]


@rule("iota")
def _iota(eqn, ins):
    """A complex iota (jnp.arange(n, dtype=complex64)): real counts, zero imaginary."""
    from jx import lax
    p = eqn.params
    re = bind(eqn.prim, dtype=dtypes.real_dtype(p["dtype"]), shape=p["shape"],
              dimension=p["dimension"])[0]
    return [Pair(re, lax.full_like(re, 0))]


@rule("cumprod")
def _cumprod(eqn, ins):
    """A running complex product: an associative scan of complex multiplication
    over (re, im) pairs, log2(n) steps."""
    from jx import lax
    (z,), p = ins, eqn.params
    mul = COMPLEX_MATH()["mul"]
    re, im = lax.associative_scan(lambda a, b: mul(a, b), (z.re, z.im),
                                  reverse=p.get("reverse", False), axis=p["axis"])
    return [Pair(re, im)]


@rule("cummax", "cummin")
def _cumextremum(eqn, ins):
    """A running lexicographic max/min of complex values (real part, then
    imaginary, as XLA and NumPy order them): an associative scan of a pairwise
    pick."""
    from jx import lax
    (z,), p = ins, eqn.params
    first = lax.gt if eqn.prim.name == "cummax" else lax.lt

    def pick(a, b):
        take_b = first(b[0], a[0]) | ((b[0] == a[0]) & first(b[1], a[1]))
        return tuple(lax.select(take_b, y, x) for x, y in zip(a, b))
    re, im = lax.associative_scan(pick, (z.re, z.im), reverse=p.get("reverse", False),
                                  axis=p["axis"])
    return [Pair(re, im)]


@rule("sort")
def _sort(eqn, ins):
    """Complex keys sort lexicographically (real part, then imaginary), as XLA:
    each complex operand becomes two real ones, a complex key two keys."""
    num_keys = eqn.params["num_keys"]
    keys = sum(2 if isinstance(x, Pair) else 1 for x in ins[:num_keys])
    outs = bind(eqn.prim, *flatten(ins), dimension=eqn.params["dimension"],
                is_stable=eqn.params["is_stable"], num_keys=keys)
    return unflatten(outs, eqn.outputs)


def _split_counts(ins, groups) -> list:
    """Each group's operand count after complex operands become two."""
    out, i = [], 0
    for n in groups:
        out.append(sum(2 if isinstance(x, Pair) else 1 for x in ins[i:i + n]))
        i += n
    return out


@rule("cond")
def _cond(eqn, ins):
    index, *ops = ins
    branches = tuple(split_body(g) for g in eqn.params["branches"])
    outs = bind(eqn.prim, index, *flatten(ops), branches=branches)
    return unflatten(outs, eqn.outputs)


@rule("while")
def _while(eqn, ins):
    p = eqn.params
    cn, bn = _split_counts(ins, [p["cond_nconsts"], p["body_nconsts"]])
    outs = bind(eqn.prim, *flatten(ins), cond_graph=split_body(p["cond_graph"]),
                body_graph=split_body(p["body_graph"]), cond_nconsts=cn, body_nconsts=bn)
    return unflatten(outs, eqn.outputs)


@rule("scan")
def _scan(eqn, ins):
    p = eqn.params
    nc, ncarry = _split_counts(ins, [p["num_consts"], p["num_carry"]])
    outs = bind(eqn.prim, *flatten(ins), body=split_body(p["body"]), num_consts=nc,
                num_carry=ncarry, length=p["length"], reverse=p["reverse"])
    return unflatten(outs, eqn.outputs)


def COMPLEX_MATH() -> dict:
    from .complex_math import COMPLEX_MATH as table
    return table


def _math_rule(eqn, ins):
    out = COMPLEX_MATH()[eqn.prim.name](*ins, **eqn.params)
    return [Pair(*out) if isinstance(out, tuple) else out]


def _register_math() -> None:
    for name in COMPLEX_MATH():
        RULES.setdefault(name, _math_rule)


_register_math()


@rule("fft")
def _fft(eqn, ins):
    """lax.fft on the split layout: one fft_c2c per transformed axis (in place
    along it, any stride), real transforms' last axis through fft_r2c/fft_c2r."""
    from jx.prims import fft_split as fs
    from jx.prims.fft import FftType
    (x,), kind = ins, eqn.params["fft_type"]
    lengths = tuple(eqn.params["fft_lengths"])
    out = eqn.outputs[0].aval
    if 0 in out.shape or 0 in eqn.inputs[0].aval.shape:      # nothing to transform
        part = dtypes.real_dtype(out.dtype)
        zeros = _const_like_shape(x.re if isinstance(x, Pair) else x, out.shape, part)
        return [Pair(zeros, zeros) if dtypes.is_complex(out.dtype) else zeros]
    ndim = len(out.shape)
    axes = list(range(ndim - len(lengths), ndim))

    def c2c(z, inverse, along):
        for a in along:
            z = Pair(*bind(fs.fft_c2c, z.re, z.im, inverse=inverse, axis=a))
        return z

    if kind == FftType.RFFT:
        z = Pair(*bind(fs.fft_r2c, x))
        return [c2c(z, False, axes[:-1])]
    if kind == FftType.IRFFT:
        z = c2c(x, True, axes[:-1])
        return bind(fs.fft_c2r, z.re, z.im, n=lengths[-1])
    moved = _transposed(eqn.inputs[0])
    if moved is None and len(axes) == 1:
        return [_along_last(eqn.inputs[0], x, kind == FftType.IFFT)]
    if moved is not None:
        # jnp.fft moves the axes it transforms last (transposes around lax.fft); the
        # kernel transforms any axis in place, so transform x where it is and move
        # the result instead: simplify cancels that against the move back
        source, perm = moved
        z = c2c(source, kind == FftType.IFFT, [perm[a] for a in axes[::-1]])
        return [Pair(*(lax_transpose(p, perm) for p in z))]
    return [c2c(x, kind == FftType.IFFT, axes[::-1])]


@rule("fft_z")
def _fft_z(eqn, ins):
    return [_along_last(eqn.inputs[0], ins[0], eqn.params["inverse"])]


def _along_last(atom, z: Pair, inverse: bool) -> Pair:
    """The transform along the last axis: of a program's complex input as it is
    (fft_z reads it interleaved, no split pass before), else of the parts."""
    from jx.prims import fft_split as fs
    walk = _WALKS[-1]
    whole = walk.whole.get(id(atom))
    if whole is None:
        return Pair(*bind(fs.fft_c2c, z.re, z.im, inverse=inverse))
    y = bind(fs.fft_z, whole, inverse=inverse)[0]
    out = Pair(bind(ew.real, y)[0], bind(ew.imag, y)[0])
    walk.joined[(id(out.re), id(out.im))] = y
    return out


def _transposed(atom):
    """(the split value a transpose read, its permutation) when atom is a complex
    transpose's result, else None."""
    producers, env = _WALKS[-1].producers, _WALKS[-1].env
    made = producers.get(id(atom))
    if made is None or made.prim.name != "transpose" or isinstance(made.inputs[0], Literal):
        return None
    source = env.get(id(made.inputs[0]))
    return (source, made.params["permutation"]) if isinstance(source, Pair) else None


def lax_transpose(x, perm):
    from jx import lax
    return lax.transpose(x, perm)


def _const_like_shape(x, shape, dtype):
    """Zeros of a shape and dtype, staged in x's trace."""
    from jx import lax
    return lax.broadcast_in_dim(lax.full_like(x, 0, dtype=dtype, shape=()), shape, ())
