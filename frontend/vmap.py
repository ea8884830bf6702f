"""jx.vmap: vectorise a function over a batch axis of its arguments."""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from . import tree
from .api import trace_pytree
from .core import get_aval
from .errors import JxError
from .lax.collectives import axis_bound
from .numpy._util import canonical_axis, canonical_value


def _strip_axis(x, axis):
    a = get_aval(x)
    if axis is None:
        return x
    from .api import ShapeDtypeStruct
    shape = a.shape[:axis] + a.shape[axis + 1:]
    return ShapeDtypeStruct(shape, a.dtype)


def mapped_size(sizes: set, axis_size, what: str, same: str) -> int:
    """The one size of the mapped axes (and axis_size), or a clear error."""
    sizes = set(sizes) | ({axis_size} if axis_size is not None else set())
    if not sizes:
        raise JxError(f"{what}: no argument is mapped (all in_axes are None); pass "
                      "axis_size or map at least one argument")
    if len(sizes) > 1:
        raise JxError(f"{what}: mapped axes have different sizes {sorted(sizes)}; every "
                      f"mapped argument needs {same}")
    return sizes.pop()


def named_axis(f: Callable, axis_name, axis_size: int, leaves: Sequence) -> tuple:
    """What vmap traces for `axis_name`: (function, extra leading abstract args,
    their values, their batch dims); nothing extra when axis_name is None."""
    if axis_name is None:
        return f, (), [], []
    from .api import ShapeDtypeStruct
    from jx.passes.zeros import stage_like
    index = stage_like(np.arange(axis_size, dtype=np.int32), list(leaves))
    return axis_bound(f, axis_name, axis_size), (ShapeDtypeStruct((), np.int32),), [index], [0]


def vmap(f: Callable, in_axes=0, out_axes=0, axis_size: int | None = None,
         axis_name=None) -> Callable:
    """Map f over axis `in_axes` of its arguments (a pytree prefix of the args;
    None for arguments shared by the whole batch) and stack at `out_axes`.
    With `axis_name`, collectives (jx.lax.psum, ...) in f run over the batch."""

    @functools.wraps(f)
    def batched(*args):
        from jx.passes.vmap import move_to_front, vmap_eval
        if isinstance(in_axes, list):
            axes_spec = tuple(in_axes)
        else:
            axes_spec = in_axes
        if isinstance(axes_spec, tuple) and len(axes_spec) != len(args):
            raise JxError(f"vmap: in_axes has {len(axes_spec)} entries but the function got "
                          f"{len(args)} arguments; give one entry per positional argument")
        try:
            dims = tree.broadcast_prefix(axes_spec if isinstance(axes_spec, tuple)
                                         else (axes_spec,) * len(args), tuple(args))
        except ValueError as e:
            raise JxError(f"vmap: in_axes {in_axes!r} does not match the arguments ({e})") \
                from None
        # NumPy data in the mode's dtypes first: the trace sees it so (float32 for
        # float64 data with x64 off), and the evaluation must get what it traced
        args = tree.tree_map(canonical_value, tuple(args))
        leaves = tree.tree_leaves(args)
        canon, sizes = [], set()
        for x, d in zip(leaves, dims):
            if d is None:
                canon.append(None)
                continue
            if not isinstance(d, int):
                raise JxError(f"vmap: in_axes entries must be int or None, got {d!r}")
            a = get_aval(x)
            c = canonical_axis(d, a.ndim)
            canon.append(c)
            sizes.add(a.shape[c])
        n = mapped_size(sizes, axis_size, "vmap", "the same batch size")
        abstract = tree.unflatten(tree.tree_structure(tuple(args)),
                                  [_strip_axis(x, d) for x, d in zip(leaves, canon)])
        # f, or f with the axis index as a first input
        fun, pre, pre_vals, pre_dims = named_axis(f, axis_name, n, leaves)
        graph, consts = trace_pytree(fun, pre + abstract, name="vmap")
        outs, odims = vmap_eval(graph, list(consts) + pre_vals + leaves,
                                [None] * len(consts) + pre_dims + canon, n)
        out_axes_flat = tree.broadcast_prefix(out_axes, tree.unflatten(graph.out_tree, outs))
        final = []
        for o, d, oa in zip(outs, odims, out_axes_flat):
            if oa is None:
                if d is not None:
                    raise JxError("vmap: out_axes=None for an output that varies over the "
                                  "batch; give it an axis")
                final.append(o)
                continue
            o = move_to_front(o, d, n)
            import jx.numpy as jnp
            final.append(jnp.moveaxis(o, 0, canonical_axis(oa, get_aval(o).ndim)))
        return tree.unflatten(graph.out_tree, final)
    return batched
