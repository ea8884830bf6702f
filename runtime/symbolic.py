"""An entry with symbolic dimensions (manifest "dims"): one compiled function for
every value of its symbols. A call reads each symbol's value off an argument's
shape (where the manifest's "read" says), checks it against the declared
constraints, asks the entry's `_shapes` function for every leaf's shape at those
values (the expressions stay in the compiled code: the loader evaluates none),
checks the arguments against them, allocates the outputs and calls the entry
with the values. The work per new set of shapes is done once and cached.
"""
from __future__ import annotations

import ctypes

from . import pool
from .entry import _C_CONTIGUOUS_ALIGNED, _NDARRAY, _PTR, _PTR_SIZE, CompiledEntry, _data_ptr
from .errors import ShapeMismatchError

_FN_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, _PTR, _PTR, _PTR)
_SHAPES_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, _PTR, _PTR)


class DimensionError(ShapeMismatchError):
    """Arguments whose shapes give a symbolic dimension two values, or a value its
    constraints refuse."""


def bind_symbolic(lib, symbol: str, shapes_symbol: str) -> tuple:
    """(entry, shapes query) ctypes functions of a symbolic entry."""
    return _FN_TYPE((symbol, lib)), _SHAPES_TYPE((shapes_symbol, lib))


class SymbolicEntry(CompiledEntry):
    """A CompiledEntry whose shapes are known by name (see the module doc)."""

    def __init__(self, spec, fns: tuple, artifact_path: str, owner=None):
        self._shapes_fn = fns[1]
        super().__init__(spec, fns[0], artifact_path, owner)

    def _make_call(self):
        spec, fn = self.spec, self._fn
        n_in, n_out = len(spec.inputs), len(spec.outputs)
        table_type = _PTR * max(1, n_in + n_out)
        out_offset = n_in * _PTR_SIZE
        dtypes = tuple(leaf.dtype for leaf in spec.inputs)
        flatten = self._make_flatten()
        from . import treespec
        unflatten = treespec.compile_unflatten(spec.out_tree)
        convert, status_error, plan = self._convert, self._status_error, self._plan
        solved: dict = {}
        ndarray, data_ptr, addressof, flags_ok = _NDARRAY, _data_ptr, ctypes.addressof, \
            _C_CONTIGUOUS_ALIGNED

        def call(args):
            leaves = flatten(args)
            xs = []
            for i, (x, dt) in enumerate(zip(leaves, dtypes)):
                if type(x) is not ndarray or x.dtype != dt or x.flags.num & flags_ok != flags_ok:
                    x = convert(i, x, check_shape=False)
                xs.append(x)
            shapes = tuple([x.shape for x in xs])
            got = solved.get(shapes)
            if got is None:
                got = solved[shapes] = plan(shapes)
            dims, out_specs = got
            outs = [alloc(s, dt) for alloc, s, dt in out_specs]
            table = table_type(*[data_ptr(x) for x in xs], *[data_ptr(o) for o in outs])
            base = addressof(table)
            status = fn(addressof(dims), base, base + out_offset)
            if status:
                raise status_error(status)
            return unflatten(outs)

        return call

    def _plan(self, shapes) -> tuple:
        """(the dims array, (allocator, shape, dtype) per output) for arguments of
        these shapes, or the error naming the argument, axis and constraint that do
        not fit. Large outputs come from the pool (pool.py), as fixed entries'."""
        spec, d = self.spec, self.spec.dims
        for i, (leaf, shape) in enumerate(zip(spec.inputs, shapes)):
            if len(shape) != len(leaf.shape):
                raise ShapeMismatchError(f"{self._where()}: argument {self._leaf_name(i)} has "
                                         f"shape {list(shape)}, expected {leaf}")
        values, origin = [], {}
        for name, (i, axis, c, k) in zip(d.symbols, d.read):
            n = shapes[i][axis]
            where = f"{self._leaf_name(i)}, axis {axis}"
            if (n - k) % c:
                raise DimensionError(f"{self._where()}: argument {self._leaf_name(i)} has "
                                     f"{n} at axis {axis}, where {spec.inputs[i].shape[axis]} "
                                     f"is declared: no integer {name} gives it")
            values.append((n - k) // c)
            origin[name] = (values[-1], where)
        for name, lo, hi, mult in d.constraints:
            v, where = origin[name]
            if v < lo or (hi is not None and v > hi) or v % mult:
                rule = f"{name} >= {lo}" + (f" and {name} <= {hi}" if hi is not None else "") \
                    + (f" and {name} % {mult} == 0" if mult > 1 else "")
                raise DimensionError(f"{self._where()}: {name} = {v} (from {where}) breaks its "
                                     f"constraint {rule}")
        dims = (ctypes.c_int64 * len(values))(*values)
        ranks = [len(leaf.shape) for leaf in spec.inputs + spec.outputs]
        buf = (ctypes.c_int64 * max(1, sum(ranks)))()
        status = self._shapes_fn(ctypes.addressof(dims), ctypes.addressof(buf))
        if status:
            raise self._status_error(status)
        flat, at = list(buf), 0
        expected = []
        for r in ranks:
            expected.append(tuple(flat[at:at + r]))
            at += r
        given = ", ".join(f"{n} = {v} (from {w})" for n, (v, w) in origin.items())
        for i, (leaf, shape) in enumerate(zip(spec.inputs, shapes)):
            fixed = [a for a, (n, d) in enumerate(zip(shape, leaf.shape))
                     if not isinstance(d, str) and n != d]
            if fixed:
                a = fixed[0]
                raise ShapeMismatchError(
                    f"{self._where()}: argument {self._leaf_name(i)} has shape {list(shape)}, "
                    f"expected {leaf} (axis {a} is {leaf.shape[a]}, not a symbol)")
            if tuple(shape) != expected[i]:
                raise DimensionError(
                    f"{self._where()}: argument {self._leaf_name(i)} has shape {list(shape)}, "
                    f"but its declared {leaf} is {list(expected[i])} with {given}: arguments "
                    "that share a dimension must agree on its size")
        return dims, [(pool.allocator(s, leaf.dtype), s, leaf.dtype)
                      for s, leaf in zip(expected[len(spec.inputs):], spec.outputs)]
