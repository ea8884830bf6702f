"""User-defined derivatives and gradient control: custom_jvp, custom_vjp,
stop_gradient, checkpoint."""
from __future__ import annotations

import functools
from typing import Callable

from . import tree
from .api import leaf_aval
from .core import bind, trace
from .errors import JxError
from .lax.ops import stop_gradient  # noqa: F401  (jx.stop_gradient is jax.lax's)
from .numpy._util import canonical_value, dtype_weak
from .prims import autodiff as ad
from .prims import elementwise as ew


def _aval(x):
    """The argument's aval for tracing the user's function, weak type kept: the
    function sees a Python scalar as JAX shows it (relu(2.0) is weak float32)."""
    aval = leaf_aval(x)
    return aval.update(weak_type=True) if dtype_weak(x)[1] else aval


def _reweak(outs, graph):
    """The call primitive's results carry no weak type: give back the traced
    function's (a no-op convert that only marks the value weak)."""
    return [bind(ew.convert_element_type, v, new_dtype=a.dtype, weak_type=True)[0]
            if a.weak_type else v for v, a in zip(outs, graph.out_avals)]




def _trace_flat(fun: Callable, in_tree, in_avals, name: str):
    """Trace fun(*unflattened) -> (graph, consts, out_tree)."""
    box = []

    def flat(*leaves):
        out = fun(*tree.unflatten(in_tree, leaves))
        out_leaves, out_tree = tree.flatten(out)
        box.append(out_tree)
        return out_leaves

    graph, consts = trace(flat, in_avals, name=name)
    return graph, list(consts), box[0]


def _nondiff_split(args, nondiff_argnums):
    static = {i: args[i] for i in nondiff_argnums}
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    return static, dyn


def _with_static(fun, static, n):
    def call(*dyn):
        it = iter(dyn)
        return fun(*[static[i] if i in static else next(it) for i in range(n)])
    return call


class _CustomCall:
    """What custom_jvp and custom_vjp share at call time: the static/traced split of
    the arguments and the traced primal function."""

    def __init__(self, custom, args):
        static, dyn = _nondiff_split(args, custom.nondiff_argnums)
        self.static, self.n_args = static, len(args)
        self.n_static = tuple(static[i] for i in sorted(static))
        leaves, self.in_tree = tree.flatten(dyn)
        # NumPy leaves in the mode's dtypes, as their avals say (float64 -> float32)
        self.leaves = [canonical_value(x) for x in leaves]
        self.avals = [_aval(x) for x in self.leaves]
        self.call, self.call_consts, self.out_tree = _trace_flat(
            self.with_static(custom.fun), self.in_tree, self.avals, custom.__name__)

    def with_static(self, fn):
        return _with_static(fn, self.static, self.n_args)


class custom_jvp:
    """f = custom_jvp(fun); @f.defjvp def f_jvp(primals, tangents): return out, t_out."""

    def __init__(self, fun: Callable, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.jvp = None
        self.nondiff_argnums = tuple(nondiff_argnums)

    def defjvp(self, jvp: Callable) -> Callable:
        self.jvp = jvp
        return jvp

    def __call__(self, *args):
        if self.jvp is None:
            raise JxError(f"custom_jvp function {self.__name__!r} has no jvp rule; "
                          "define one with @f.defjvp")
        c = _CustomCall(self, args)
        leaves, in_tree, out_tree, call, call_consts = \
            c.leaves, c.in_tree, c.out_tree, c.call, c.call_consts
        jvp = _FlatJvp(self.jvp, c.n_static, in_tree, out_tree)
        outs = bind(ad.custom_jvp_call, *call_consts, *leaves, call=call, jvp=jvp,
                    num_consts=len(call_consts))
        return tree.unflatten(out_tree, _reweak(outs, call))


class custom_vjp:
    """f = custom_vjp(fun); f.defvjp(fwd, bwd) with fwd(*args) -> (out, residuals)
    and bwd(residuals, cotangent) -> a tuple with one cotangent per argument."""

    def __init__(self, fun: Callable, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = self.bwd = None
        self.nondiff_argnums = tuple(nondiff_argnums)

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        if self.fwd is None:
            raise JxError(f"custom_vjp function {self.__name__!r} has no rule; define "
                          "one with f.defvjp(fwd, bwd)")
        c = _CustomCall(self, args)
        leaves, in_tree, out_tree, call, call_consts = \
            c.leaves, c.in_tree, c.out_tree, c.call, c.call_consts
        fwd, fwd_consts, fwd_tree = _trace_flat(c.with_static(self.fwd), in_tree, c.avals,
                                                f"{self.__name__}_fwd")
        if fwd_tree.kind is not tuple or len(fwd_tree.children) != 2:
            raise JxError(f"custom_vjp fwd of {self.__name__!r} must return (output, "
                          "residuals)")
        bwd = _FlatBwd(self.bwd, c.n_static, fwd_tree.children[1], out_tree, in_tree)
        outs = bind(ad.custom_vjp_call, *call_consts, *fwd_consts, *leaves, call=call, fwd=fwd,
                    bwd=bwd, num_consts=len(call_consts), num_fwd_consts=len(fwd_consts))
        return tree.unflatten(out_tree, _reweak(outs, call))


class _FlatJvp:
    """The user's jvp on flat lists, called lazily by the jvp rule (tracing it
    eagerly would recurse when the rule calls the function itself)."""

    def __init__(self, jvp, static, in_tree, out_tree):
        self.jvp, self.static = jvp, static
        self.in_tree, self.out_tree = in_tree, out_tree
        self.__name__ = getattr(jvp, "__name__", "jvp")

    def __call__(self, primals, tangents):
        ps = tree.unflatten(self.in_tree, primals)
        ts = tree.unflatten(self.in_tree, tangents)
        out, t_out = self.jvp(*self.static, tuple(ps), tuple(ts))   # JAX's convention
        try:
            return tree.flatten_up_to(self.out_tree, out), tree.flatten_up_to(self.out_tree,
                                                                               t_out)
        except ValueError as e:
            raise JxError(f"custom_jvp rule {self.__name__!r} must return (output, "
                          f"tangent) shaped like the function's output ({e})") from None


class _FlatBwd:
    """The user's bwd on flat lists: (residual leaves, output cts) -> input cts."""

    def __init__(self, bwd, static, res_tree, out_tree, in_tree):
        self.bwd, self.static = bwd, static
        self.res_tree, self.out_tree, self.in_tree = res_tree, out_tree, in_tree
        self.__name__ = getattr(bwd, "__name__", "bwd")

    def __call__(self, res_leaves, cts):
        res = tree.unflatten(self.res_tree, res_leaves)
        ct = tree.unflatten(self.out_tree, cts)
        out = self.bwd(*self.static, res, ct)
        if not isinstance(out, tuple):
            raise JxError(f"custom_vjp bwd {self.__name__!r} must return a tuple with one "
                          f"cotangent per argument, got {type(out).__name__}")
        try:
            return tree.flatten_up_to(self.in_tree, out)
        except ValueError as e:
            raise JxError(f"custom_vjp bwd {self.__name__!r} returned cotangents that do "
                          f"not match the arguments ({e})") from None


def checkpoint(fun: Callable) -> Callable:
    """Rematerialisation: under reverse mode, fun's forward values are recomputed
    in the backward pass instead of being kept alive."""

    @functools.wraps(fun)
    def wrapped(*args):
        leaves, in_tree = tree.flatten(args)
        leaves = [canonical_value(x) for x in leaves]
        avals = [leaf_aval(x) for x in leaves]
        body, consts, out_tree = _trace_flat(fun, in_tree, avals, "checkpoint")
        outs = bind(ad.checkpoint, *consts, *leaves, body=body, num_consts=len(consts))
        return tree.unflatten(out_tree, outs)
    return wrapped


remat = checkpoint
