"""jvp, vjp and batching rules of stop_gradient, checkpoint, custom_jvp_call
and custom_vjp_call, registered together since they only make sense together."""
from __future__ import annotations

from jx import tree
from jx.core import bind, get_aval
from jx.errors import JxError
from jx.interpret import eval_graph

from .interpreters import NotDifferentiable
from .jvp import jvp_eval, jvp_rules
from .vjp import backward, forward, vjp_rules
from .vmap import batch_rules, move_to_front, vmap_eval, vmap_graph
from .zeros import zeros_like

# stop_gradient: identity forward, no derivative, batches elementwise
jvp_rules["stop_gradient"] = NotDifferentiable("stop_gradient")
vjp_rules["stop_gradient"] = NotDifferentiable("stop_gradient")
batch_rules["stop_gradient"] = lambda xs, ds, axis_size: (
    bind(_prim("stop_gradient"), xs[0]), [ds[0]])


def _prim(name):
    from jx.core import PRIMITIVES
    return PRIMITIVES[name]


def _split(ins, params, skip_key=None):
    n = params.get("num_consts", 0)
    skip = params.get(skip_key, 0) if skip_key else 0
    return ins[:n], ins[n:n + skip], ins[n + skip:]


# ---- checkpoint: rules see through to the body; the vjp recomputes it
def _checkpoint_jvp(ps, ts, body, num_consts):
    return jvp_eval(body, ps, ts)


def _checkpoint_vjp(cts, ins, outs, body, num_consts):
    env, _ = forward(body, ins)           # recomputed here: that is the point
    return backward(body, env, cts)


def _checkpoint_batch(xs, ds, axis_size, body, num_consts):
    xs = [x if d is None else move_to_front(x, d, axis_size) for x, d in zip(xs, ds)]
    dims = [None if d is None else 0 for d in ds]
    new = vmap_graph(body, dims, axis_size)
    return bind(_prim("checkpoint"), *xs, body=new, num_consts=num_consts), [0] * len(
        new.outputs)


jvp_rules["checkpoint"] = _checkpoint_jvp
vjp_rules["checkpoint"] = _checkpoint_vjp
batch_rules["checkpoint"] = _checkpoint_batch


# ---- custom_jvp_call: `jvp` is the user's rule on flat values
def _custom_jvp_jvp(ps, ts, call, jvp, num_consts):
    args = ps[num_consts:]
    tangents = [zeros_like(a) if t is None else t for a, t in zip(args, ts[num_consts:])]
    return jvp(list(args), tangents)


def _custom_jvp_vjp(cts, ins, outs, call, jvp, num_consts):
    # The custom tangent map is linear in the tangents, so its vjp is its
    # transpose: trace it at these primals and run the vjp pass over it.
    from jx.core import trace
    args = list(ins[num_consts:])
    n_out = len(call.outputs)

    def tangent_map(*ts):
        return jvp(args, list(ts))[1]

    graph, consts = trace(tangent_map, [get_aval(a).strip_weak() for a in args],
                          name=f"{jvp.__name__}_linear")
    zeros = [zeros_like(a) for a in args]
    env, _ = forward(graph, list(consts) + zeros)
    in_cts = backward(graph, env, list(cts)[:n_out])
    return [None] * num_consts + list(in_cts[len(consts):])


class _BatchedJvp:
    """A custom jvp rule applied per example (batch axis 0 where batched)."""

    def __init__(self, jvp, dims, axis_size):
        self.jvp, self.dims, self.axis_size = jvp, tuple(dims), axis_size
        self.__name__ = f"vmap_{jvp.__name__}"

    def __call__(self, primals, tangents):
        # Batched at the graph level (the vmap pass, not the public jx.vmap): trace
        # the rule per example, then walk it on the batched values.
        from jx.api import ShapeDtypeStruct, trace_pytree
        n = self.axis_size
        f = lambda p, t: tuple(map(tuple, self.jvp(list(p), list(t))))  # noqa: E731
        values, dims = list(primals) + list(tangents), list(self.dims) * 2
        per_example = [x if d is None else ShapeDtypeStruct(_drop(get_aval(x).shape, d),
                                                            get_aval(x).dtype)
                       for x, d in zip(values, dims)]
        k = len(primals)
        graph, consts = trace_pytree(f, (per_example[:k], per_example[k:]), name="vmap")
        outs, odims = vmap_eval(graph, list(consts) + values, [None] * len(consts) + dims, n)
        outs = [move_to_front(o, d, n) for o, d in zip(outs, odims)]
        out, t_out = tree.unflatten(graph.out_tree, outs)
        return list(out), list(t_out)


def _drop(shape: tuple, axis: int) -> tuple:
    return shape[:axis] + shape[axis + 1:]


def _custom_jvp_batch(xs, ds, axis_size, call, jvp, num_consts):
    xs = [x if d is None else move_to_front(x, d, axis_size) for x, d in zip(xs, ds)]
    dims = [None if d is None else 0 for d in ds]
    new_call = vmap_graph(call, dims, axis_size)
    outs = bind(_prim("custom_jvp_call"), *xs, call=new_call,
                jvp=_BatchedJvp(jvp, dims[num_consts:], axis_size), num_consts=num_consts)
    return outs, [0] * len(outs)


jvp_rules["custom_jvp_call"] = _custom_jvp_jvp
vjp_rules["custom_jvp_call"] = _custom_jvp_vjp
batch_rules["custom_jvp_call"] = _custom_jvp_batch


# ---- custom_vjp_call
def _custom_vjp_jvp(ps, ts, **params):
    raise JxError("can't apply forward-mode autodiff (jvp, jacfwd, hessian) to a custom_vjp "
                  "function; define a custom_jvp instead, or use jacrev")


def _custom_vjp_vjp(cts, ins, outs, call, fwd, bwd, num_consts, num_fwd_consts):
    _, fconsts, args = _split(ins, dict(num_consts=num_consts, num_fwd_consts=num_fwd_consts),
                              "num_fwd_consts")
    res_all = eval_graph(fwd, *fconsts, *args)
    res = res_all[len(call.outputs):]
    cts = [zeros_like(o) if c is None else c for o, c in zip(outs, cts)]
    in_cts = bwd(res, cts)
    return [None] * (num_consts + num_fwd_consts) + list(in_cts)


def _custom_vjp_batch(xs, ds, axis_size, call, fwd, bwd, num_consts, num_fwd_consts):
    # Batching drops the custom rule (grad of vmap differentiates the primal
    # computation itself); vmap of grad, the common order, keeps it.
    cxs, _, axs = _split(xs, dict(num_consts=num_consts, num_fwd_consts=num_fwd_consts),
                         "num_fwd_consts")
    cds, _, ads = _split(ds, dict(num_consts=num_consts, num_fwd_consts=num_fwd_consts),
                         "num_fwd_consts")
    return vmap_eval(call, list(cxs) + list(axs), list(cds) + list(ads), axis_size)


jvp_rules["custom_vjp_call"] = _custom_vjp_jvp
vjp_rules["custom_vjp_call"] = _custom_vjp_vjp
batch_rules["custom_vjp_call"] = _custom_vjp_batch
