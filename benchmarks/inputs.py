"""Seeded random inputs for an entry's declared specs (the same for every engine)."""
from __future__ import annotations

import numpy as np

import jx
from jx import tree

SEED = 0


def random_leaf(rng: np.random.Generator, shape: tuple, dtype, scale: float = 1.0):
    """Floats ~ N(0, scale^2); signed ints in [0, 10) (safe as labels and indices);
    unsigned ints are random bits (PRNG keys); bools are fair coins."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return (scale * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(0, 10, size=shape, dtype=dtype)
    if dtype.kind == "u":
        return rng.integers(0, np.iinfo(dtype).max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    raise ValueError(f"no random inputs for dtype {dtype}")


def entry_inputs(entry, seed: int = SEED, scales: dict | None = None) -> list:
    """Positional arguments for entry.fn: random arrays for traced arguments (pytrees
    of specs), the static values in place. scales maps an argument name to the
    standard deviation of its floats (default 1)."""
    rng = np.random.default_rng(seed)
    scales = scales or {}
    values, static_nums = entry.call_args()
    traced = [n for n in entry.arg_names if n not in entry.static]
    out, it = [], iter(traced)
    for i, v in enumerate(values):
        if i in static_nums:
            out.append(v)
            continue
        s = scales.get(next(it), 1.0)
        out.append(tree.tree_map(lambda spec, s=s: random_leaf(rng, spec.shape, spec.dtype, s),
                                 v))
    return out


def static_argnums(entry) -> tuple:
    return entry.call_args()[1]


def manifest_inputs(entry_spec, seed: int = SEED) -> tuple:
    """Positional arguments for an artifact entry built from its manifest alone."""
    from jx.runtime import treespec
    rng = np.random.default_rng(seed)
    leaves = [random_leaf(rng, leaf.shape, leaf.dtype) for leaf in entry_spec.inputs]
    return tuple(treespec.compile_unflatten(entry_spec.in_tree)(leaves))


def spec_text(entry) -> str:
    """'x: f32[4096,4096]' style summary of the traced arguments (leaves only)."""
    parts = []
    traced = [n for n in entry.arg_names if n not in entry.static]
    for name, arg in zip(traced, entry.args):
        leaves = tree.tree_leaves(arg)
        if len(leaves) == 1 and isinstance(arg, jx.ShapeDtypeStruct):
            parts.append(f"{name}: {arg}")
        else:
            parts.append(f"{name}: {len(leaves)} arrays")
    return ", ".join(parts)
