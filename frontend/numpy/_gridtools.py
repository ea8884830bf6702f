"""Index helpers, grids, and array surgery: the tril/triu/diag index sets,
indices/mgrid/ogrid/ix_/r_/c_, ravel/unravel of multi-indices, insert/delete,
select/piecewise/choose, and the function-mapping helpers (vectorize,
apply_along_axis, fromfunction, frompyfunc).

As in JAX, shapes must be static: anything that sizes the result (index counts,
sections, a mask for compress without size=) is read off concrete values, and
asking for it from a traced value is an error naming the argument and the
static alternative (size=, mode='clip', assume_unique_indices=True).

Mapping a function over a batch (JAX's vmap inside vectorize and friends) is
done here without jx.vmap, which sits in a higher layer: a function built from
elementwise primitives alone is called once on the broadcast arrays (what vmap
of it computes); any other function runs once per batch element, as a scan
primitive when traced (one traced body) and as a Python loop on concrete values.
"""
from __future__ import annotations

import math
import operator
import re

import numpy as np

from .. import dtypes, flags, tree
from ..core import Primitive, Tracer, bind, get_aval, trace
from ..errors import ShapeError, TracerConversionError
from ..prims import elementwise as ew
from ..prims import structural as st
from ..prims.control import scan_p
from ._util import as_value, bind1, broadcast_shapes, canonical_axis, convert, dtype_weak, \
    has_tracer, promote_dtypes, shape_of
from .creation import _wrap_public, arange, asarray, full, linspace
from . import manipulation as mp
from . import ufuncs as uf


# ---------------------------------------------------------------- helpers

def _static_int(v, what: str) -> int:
    """v as a Python int, or an error saying it must be static."""
    if isinstance(v, Tracer):
        raise TracerConversionError(f"jx.numpy.{what} must be a static integer (a Python int), "
                                    "not a traced value: the output shape depends on it")
    try:
        return operator.index(v)
    except TypeError:
        if np.ndim(v) == 0 and hasattr(v, "dtype") and np.dtype(v.dtype).kind in "iu":
            return int(v)
        raise TypeError(f"jx.numpy.{what} must be an integer, got {v!r:.60}") from None


def _concrete(x, what: str, instead: str) -> np.ndarray:
    """The NumPy value of a concrete x, or an error naming the static alternative."""
    if has_tracer(x):
        raise TracerConversionError(f"jx.numpy.{what} needs a concrete value here, but it is "
                                    f"traced (under jx.jit or a transformation); {instead}")
    x = as_value(x)
    return np.asarray(x._value if hasattr(x, "_value") else x)


def _strong(x):
    """x without a weak type (JAX's results built through zeros(dtype=...) are strong)."""
    x = as_value(x)
    dt, weak = dtype_weak(x)
    if not weak:
        return x
    return bind1(ew.convert_element_type, x, new_dtype=dt, weak_type=False)


def _array_arg(x, what: str):
    """x as an array (jx or traced). Lists are taken as arrays, as everywhere in
    jx.numpy (JAX refuses them in these functions with a TypeError)."""
    return x if isinstance(x, Tracer) else asarray(x)


def _index_const(values, dt=None):
    """A constant index array (data known now) in the default int dtype."""
    return asarray(np.asarray(values, dtype=np.int64), dt or dtypes.default_int())


# ---------------------------------------------------------------- spaced values

def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** linspace(start, stop): computed in the dtype's inexact type."""
    num = _static_int(num, "logspace num")
    axis = _static_int(axis, "logspace axis")
    if dtype is None:
        dt = dtypes.inexact(dtypes.result_type(dtype_weak(as_value(start)),
                                               dtype_weak(as_value(stop)))[0])
    else:
        dt = dtypes.canonicalize(dtype, "logspace")
    ct = dtypes.inexact(dt)
    lo, hi = convert(as_value(start), ct), convert(as_value(stop), ct)
    lin = linspace(_strong(lo), _strong(hi), num, endpoint=endpoint, axis=axis)
    return convert(_strong(uf.power(base, lin)), dt)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Geometric steps from start to stop (signs kept, as JAX: zero gives NaN)."""
    num = _static_int(num, "geomspace num")
    if dtype is None:
        dt = dtypes.inexact(dtypes.result_type(dtype_weak(as_value(start)),
                                               dtype_weak(as_value(stop)))[0])
    else:
        dt = dtypes.canonicalize(dtype, "geomspace")
    ct = dtypes.inexact(dt)
    lo, hi = _strong(convert(as_value(start), ct)), _strong(convert(as_value(stop), ct))
    sign = uf.sign(lo)
    out = uf.multiply(sign, logspace(uf.log10(uf.divide(lo, sign)),
                                     uf.log10(uf.divide(hi, sign)), num,
                                     endpoint=endpoint, base=10.0, dtype=ct, axis=0))
    ax = canonical_axis(_static_int(axis, "geomspace axis"), len(shape_of(out)))
    if ax:
        out = mp.moveaxis(out, 0, ax)
    return convert(out, dt)


# ---------------------------------------------------------------- index sets

def _check_dims(n, k, m, what):
    n = _static_int(n, f"{what} n")
    k = _static_int(k, f"{what} k")
    m = n if m is None else _static_int(m, f"{what} m")
    if n < 0 or m < 0:
        raise ValueError(f"jx.numpy.{what}: n and m must be non-negative, got n={n}, m={m}")
    return n, k, m


def tril_indices(n, k=0, m=None):
    """(rows, cols) of the lower triangle (col - row <= k) of an n x m array."""
    n, k, m = _check_dims(n, k, m, "tril_indices")
    return tuple(_index_const(i) for i in np.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None):
    """(rows, cols) of the upper triangle (col - row >= k) of an n x m array."""
    n, k, m = _check_dims(n, k, m, "triu_indices")
    return tuple(_index_const(i) for i in np.triu_indices(n, k, m))


def _shape2(arr, what):
    shape = tuple(arr.shape) if hasattr(arr, "shape") else shape_of(as_value(arr))
    if len(shape) != 2:
        raise ValueError(f"jx.numpy.{what}: only 2-d inputs are accepted, got shape {shape}")
    return shape


def tril_indices_from(arr, k=0):
    n, m = _shape2(arr, "tril_indices_from")
    return tril_indices(n, k=k, m=m)


def triu_indices_from(arr, k=0):
    n, m = _shape2(arr, "triu_indices_from")
    return triu_indices(n, k=k, m=m)


def diag_indices(n, ndim=2):
    """ndim copies of arange(n): the indices of the main diagonal."""
    n = _static_int(n, "diag_indices n")
    ndim = _static_int(ndim, "diag_indices ndim")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (arange(n, dtype=dtypes.default_int()),) * ndim


def diag_indices_from(arr):
    shape = shape_of(as_value(arr))
    if len(shape) < 2:
        raise ValueError(f"jx.numpy.diag_indices_from: the input must be at least 2-d, got "
                         f"shape {shape}")
    if len(set(shape)) != 1:
        raise ValueError(f"jx.numpy.diag_indices_from: all dimensions of the input must be of "
                         f"equal length, got shape {shape}")
    return diag_indices(shape[0], len(shape))


def diagflat(v, k=0):
    """The flattened v on diagonal k of a square array."""
    k = _static_int(k, "diagflat k")
    return _strong(mp.diag(mp.ravel(as_value(v)), k))


def indices(dimensions, dtype=None, sparse=False):
    """The grid of indices of an array of shape `dimensions` (stacked on a new
    first axis; with sparse=True one broadcastable array per axis)."""
    dt = dtypes.canonicalize(int if dtype is None else dtype, "indices")
    dims = tuple(_static_int(d, "indices dimensions") for d in dimensions)
    out = []
    for i, d in enumerate(dims):
        shape = (1,) * i + (d,) + (1,) * (len(dims) - i - 1) if sparse else dims
        out.append(bind1(st.iota, dtype=dt, shape=shape, dimension=i))
    if sparse:
        return tuple(out)
    return mp.stack(out, 0) if out else asarray(np.zeros((0,)), dt)


def ix_(*args):
    """Open-mesh index arrays from 1-d sequences: arg i gets shape (1, ..., n_i, ..., 1)."""
    out = []
    for i, a in enumerate(args):
        a = as_value(a)
        s = shape_of(a)
        if len(s) != 1:
            raise ValueError(f"Arguments to jx.numpy.ix_ must be 1-dimensional, got shape {s} "
                             f"for argument {i}")
        if np.dtype(a.dtype) == np.bool_:
            raise NotImplementedError("Boolean arguments to jx.numpy.ix_ are not implemented "
                                      "(as in JAX); pass nonzero(mask)[0] instead")
        shape = [1] * len(args)
        shape[i] = s[0]
        out.append(full(shape, 0, dtypes.canonical(np.intp)) if s[0] == 0
                   else mp.reshape(a, tuple(shape)))
    return tuple(out)


# ---------------------------------------------------------------- index tricks

def _grid_1d(s: slice, what: str):
    """arange(start, stop, step), or linspace for an imaginary step (a count)."""
    for v, name in ((s.start, "start"), (s.stop, "stop"), (s.step, "step")):
        if isinstance(v, Tracer):
            raise TracerConversionError(f"jx.numpy.{what}: the slice {name} must be static "
                                        "(a Python number), not a traced value")
    start, step = s.start or 0, s.step or 1
    if isinstance(step, complex) or np.iscomplexobj(step):
        return linspace(start, s.stop, int(abs(step)))
    return arange(start, s.stop, step)


class _Mgrid:
    """jx.numpy.mgrid[a:b:s, ...]: the dense mesh of the slices' aranges."""
    _sparse = False
    _name = "mgrid"

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, self._name)
        parts = promote_dtypes(*[_grid_1d(k, self._name) for k in key]) if key else []
        grids = mp.meshgrid(*parts, indexing="ij", sparse=self._sparse)
        if self._sparse:
            return grids
        return mp.stack(grids, 0) if grids else arange(0)

    def __repr__(self):
        return f"jx.numpy.{self._name}"


class _Ogrid(_Mgrid):
    """jx.numpy.ogrid[a:b:s, ...]: the open (broadcastable) mesh of the slices."""
    _sparse = True
    _name = "ogrid"


mgrid, ogrid = _Mgrid(), _Ogrid()


class _AxisConcat:
    """r_ and c_: concatenate slices (as aranges), scalars and arrays along an axis;
    a leading string directive 'axis,ndmin,trans1d' (or 'r' / 'c') sets the layout."""

    def __init__(self, name, axis, ndmin, trans1d):
        self._name, self._defaults = name, (axis, ndmin, trans1d)

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self._defaults
        matrix = -1
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                matrix = 0 if directive == "r" else 1
            else:
                vec = directive.split(",")[:3]
                try:
                    vals = [int(v) for v in vec]
                except ValueError:
                    raise ValueError(f"could not understand directive {directive!r}: "
                                     "use 'axis', 'axis,ndmin' or 'axis,ndmin,trans1d' "
                                     "(integers), or 'r' / 'c'") from None
                axis, ndmin, trans1d = vals + [ndmin, trans1d][len(vals) - 1:]
        out = []
        for item in items:
            if isinstance(item, slice):
                obj, item_nd = _grid_1d(item, self._name), 0
            elif isinstance(item, str):
                raise ValueError(f"jx.numpy.{self._name}: a string directive must be placed "
                                 "at the beginning")
            else:
                obj = as_value(item)
                item_nd = len(shape_of(obj))
            nd = len(shape_of(obj))
            if nd < ndmin:
                obj = mp.reshape(obj, (1,) * (ndmin - nd) + shape_of(obj))
            if trans1d != -1 and ndmin - item_nd > 0:
                order = tuple(range(ndmin))
                shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
                obj = mp.transpose(obj, order[shift:] + order[:shift])
            out.append(obj)
        if not out:
            raise ValueError(f"jx.numpy.{self._name}[...] needs at least one item")
        res = mp.concatenate(out, axis=axis)
        if matrix != -1 and len(shape_of(res)) == 1:
            res = mp.expand_dims(res, matrix)
        return res

    def __len__(self):
        return 0

    def __repr__(self):
        return f"jx.numpy.{self._name}"


r_ = _AxisConcat("r_", 0, 1, -1)
c_ = _AxisConcat("c_", -1, 2, 0)
s_ = np.s_
index_exp = np.index_exp


# ---------------------------------------------------------------- multi-indices

def unravel_index(indices, shape):
    """The multi-index of each flat index into shape (out-of-range indices clamp,
    as in JAX: JAX raises no error here)."""
    idx = as_value(indices)
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if any(np.ndim(s) != 0 for s in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    if not dtypes.is_int(np.dtype(get_aval(idx).dtype)):
        raise TypeError(f"jx.numpy.unravel_index: indices must be integers, got "
                        f"{np.dtype(get_aval(idx).dtype)}")
    out = [0] * len(shape)
    rest = idx
    for i in reversed(range(len(shape))):
        rest, out[i] = uf.divmod(rest, shape[i])
    above = uf.greater(rest, 0)
    if np.dtype(get_aval(idx).dtype).kind == "u":
        return tuple(uf.where(above, s - 1, o) for s, o in zip(shape, out))
    below = uf.less(rest, -1)
    return tuple(uf.where(above, s - 1, uf.where(below, 0, o)) for s, o in zip(shape, out))


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
    """The flat index of each multi-index into dims. mode='raise' checks the
    bounds, so it needs concrete indices (use 'clip' or 'wrap' under jit)."""
    if len(multi_index) != len(dims):
        raise ValueError(f"jx.numpy.ravel_multi_index: {len(multi_index)} index arrays for "
                         f"{len(dims)} dims; give one per dimension")
    dims = tuple(_static_int(d, "ravel_multi_index dims") for d in dims)
    idx = [as_value(i) for i in multi_index]
    if dtype is None:
        dt = dtypes.result_type((dtypes.default_int(), True), *[dtype_weak(i) for i in idx])[0]
    else:
        dt = dtypes.canonicalize(dtype, "ravel_multi_index")
    if not dtypes.is_int(dt) or dt == np.bool_:
        raise ValueError(f"jx.numpy.ravel_multi_index: dtype={dt} is not an integer type")
    if math.prod(dims) - 1 > np.iinfo(dt).max:
        raise ValueError(f"jx.numpy.ravel_multi_index: dtype={dt} is not large enough to hold "
                         f"the flattened index for dims={dims}; pass a wider dtype=")
    for i in idx:
        if mode == "raise" and isinstance(i, Tracer):
            raise TracerConversionError(
                "jx.numpy.ravel_multi_index with mode='raise' needs concrete indices to check "
                "their bounds, but they are traced (jx.jit); use mode='wrap' or mode='clip'")
        if not dtypes.is_int(np.dtype(get_aval(i).dtype)) or \
                np.dtype(get_aval(i).dtype) == np.bool_:
            raise TypeError(f"jx.numpy.ravel_multi_index: only integer indices are permitted, "
                            f"got {np.dtype(get_aval(i).dtype)}")
    if mode == "raise":
        for i, d in zip(idx, dims):
            v = _concrete(i, "ravel_multi_index", "use mode='wrap' or 'clip'")
            if v.size and ((v < 0).any() or (v >= d).any()):
                raise ValueError("invalid entry in coordinates array (an index is out of "
                                 "bounds for its dimension; use mode='wrap' or 'clip')")
    elif mode == "clip":
        idx = [uf.clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    elif mode == "wrap":
        idx = [uf.remainder(i, d) for i, d in zip(idx, dims)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or "
                         "'ignore'.")
    if order == "C":
        strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
    elif order == "F":
        strides = np.cumprod((1,) + dims[:-1])
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    out = asarray(0, dt)
    for i, s in zip(idx, strides):
        out = uf.add(out, uf.multiply(convert(i, dt), int(s)))
    return out


# ---------------------------------------------------------------- shapes and joins

def vander(x, N=None, increasing=False):
    """Columns of powers of the 1-d x (decreasing unless increasing=True)."""
    x = as_value(x)
    if len(shape_of(x)) != 1:
        raise ValueError(f"jx.numpy.vander: x must be a one-dimensional array, got shape "
                         f"{shape_of(x)}")
    n = shape_of(x)[0] if N is None else _static_int(N, "vander N")
    if n < 0:
        raise ValueError(f"jx.numpy.vander: N must be nonnegative, got {n}")
    powers = bind1(st.iota, dtype=np.dtype(x.dtype), shape=(n,), dimension=0)
    if not increasing:
        powers = uf.subtract(asarray(n - 1, x.dtype), powers)
    return uf.power(mp.expand_dims(x, 1), mp.expand_dims(powers, 0))


def rot90(m, k=1, axes=(0, 1)):
    """m rotated by 90 degrees k times, in the plane of axes (from the first
    towards the second)."""
    x = as_value(m)
    nd = len(shape_of(x))
    if nd < 2:
        raise ValueError(f"rot90 requires its first argument to have ndim at least two, but "
                         f"got first argument of shape {shape_of(x)}, which has ndim {nd}")
    k = _static_int(k, "rot90 k")
    a1, a2 = (canonical_axis(a, nd) for a in axes)
    if a1 == a2:
        raise ValueError(f"rot90: axes must be different, got {tuple(axes)}")
    k %= 4
    if k == 0:
        return x
    if k == 2:
        return mp.flip(mp.flip(x, a1), a2)
    perm = list(range(nd))
    perm[a1], perm[a2] = perm[a2], perm[a1]
    return mp.transpose(mp.flip(x, a2), perm) if k == 1 else \
        mp.flip(mp.transpose(x, perm), a2)


def rollaxis(a, axis, start=0):
    """Axis `axis` moved to position `start` (NumPy's older moveaxis)."""
    x = as_value(a)
    nd = len(shape_of(x))
    ax = canonical_axis(_static_int(axis, "rollaxis axis"), nd)
    start = _static_int(start, "rollaxis start")
    if not -nd <= start <= nd:
        raise ValueError(f"rollaxis: start={start} must satisfy {-nd} <= start <= {nd}")
    start = start + nd if start < 0 else start
    if start > ax:
        start -= 1
    return mp.moveaxis(x, ax, start)


def _split(what, ary, sections, axis):
    """split with JAX's checks: equal sections, or non-decreasing indices within the
    axis (NumPy would return empty pieces; JAX refuses negative piece sizes)."""
    x = as_value(ary)
    if has_tracer(sections):
        raise TracerConversionError(f"jx.numpy.{what}: the sections or split indices must be "
                                    "static (Python ints), not traced values")
    n = shape_of(x)[canonical_axis(axis, len(shape_of(x)))]
    if isinstance(sections, (tuple, list)) or np.ndim(sections) > 0:
        sections = [int(i) for i in np.asarray(sections).reshape(-1)]
        sizes = np.diff([0] + sections + [n])
        if (sizes < 0).any():
            raise ValueError(f"jx.numpy.{what}: split indices {sections} must be non-decreasing "
                             f"and at most the axis length {n} (pieces of sizes "
                             f"{sizes.tolist()})")
        return mp.split(x, sections, axis)
    k = _static_int(sections, f"{what} indices_or_sections")
    if k <= 0 or n % k:
        raise ValueError(f"jx.numpy.{what}: array split does not result in an equal division: "
                         f"an axis of length {n} into {k} sections; use array_split or "
                         "explicit indices")
    return mp.split(x, k, axis)


def vsplit(ary, indices_or_sections):
    return _split("vsplit", ary, indices_or_sections, 0)


def hsplit(ary, indices_or_sections):
    x = as_value(ary)
    return _split("hsplit", x, indices_or_sections, 0 if len(shape_of(x)) == 1 else 1)


def dsplit(ary, indices_or_sections):
    return _split("dsplit", ary, indices_or_sections, 2)


def block(arrays):
    """An array assembled from nested lists of blocks (the innermost lists join
    along the last axis)."""
    def build(xs):
        if isinstance(xs, tuple):
            raise ValueError(f"jx.numpy.block does not allow tuples, got {xs!r:.60}; use lists")
        if not isinstance(xs, list):
            return as_value(xs), 1
        if not xs:
            raise ValueError("jx.numpy.block does not allow empty list arguments")
        parts = [build(x) for x in xs]
        depth = parts[0][1]
        if any(d != depth for _, d in parts):
            raise ValueError("Mismatched list depths in jx.numpy.block: every list at one level "
                             "must nest equally deep")
        rank = max(depth, max(len(shape_of(p)) for p, _ in parts))
        vals = [mp.reshape(p, (1,) * (rank - len(shape_of(p))) + shape_of(p)) for p, _ in parts]
        return mp.concatenate(vals, axis=-depth), depth + 1
    return build(arrays)[0]


def resize(a, new_shape):
    """a's flattened values repeated (cyclically) to fill new_shape."""
    x = mp.ravel(as_value(a))
    shape = (new_shape,) if np.ndim(new_shape) == 0 else tuple(new_shape)
    shape = tuple(_static_int(d, "resize new_shape") for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"all elements of `new_shape` must be non-negative, got {shape}")
    n, size = shape_of(x)[0], math.prod(shape)
    if n == 0 or size == 0:
        return full(shape, 0, x.dtype)
    x = mp.tile(x, -(-size // n))
    return mp.reshape(mp.slice_axis(x, 0, 0, size), shape)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """a with its main diagonal set to val (cycled), returned as a new array:
    jx arrays are immutable, so inplace=False is required, as in JAX."""
    if inplace:
        raise NotImplementedError("jx arrays are immutable: fill_diagonal must use "
                                  "inplace=False and use the returned array")
    if wrap:
        raise NotImplementedError("fill_diagonal: wrap=True is not implemented (as in JAX); "
                                  "use wrap=False")
    x, v = asarray(a), as_value(val)
    s = shape_of(x)
    if len(s) < 2:
        raise ValueError(f"fill_diagonal: the array must be at least 2-d, got shape {s}")
    if len(s) > 2 and len(set(s)) != 1:
        raise ValueError(f"fill_diagonal: all dimensions of the input must be of equal length, "
                         f"got shape {s}")
    n = min(s)
    idx = diag_indices(n, len(s))
    if shape_of(v):
        flat = mp.ravel(v)
        m = shape_of(flat)[0]
        if m < n:
            flat = mp.tile(flat, -(-n // m))
        v = mp.slice_axis(flat, 0, 0, n) if shape_of(flat)[0] > n else flat
    return x.at[idx].set(v)


# ---------------------------------------------------------------- choosing

def select(condlist, choicelist, default=0):
    """choicelist[i] where condlist[i] is the first true condition, else default."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    conds = [uf.not_equal(as_value(c), False) if np.dtype(get_aval(as_value(c)).dtype)
             != np.bool_ else as_value(c) for c in condlist]
    out, *choices = promote_dtypes(default, *choicelist)
    for c, v in reversed(list(zip(conds, choices))):
        out = uf.where(c, v, out)
    shape = broadcast_shapes(*[shape_of(v) for v in (*conds, *choices, out)])
    return mp.broadcast_to(out, shape)


def piecewise(x, condlist, funclist, *args, **kw):
    """funclist[i](x) where condlist[i] holds (the last such i winning), else the
    extra last function (or 0); constants in funclist stand for themselves. Each
    function sees one element at a time, as under JAX's vmap of a switch (an
    elementwise function runs once on the whole x)."""
    x = x if isinstance(x, Tracer) else asarray(x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funclist = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funclist = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    conds = asarray(condlist, dtypes.bool_)
    dt = np.dtype(x.dtype)

    def value(f):
        if callable(f):
            each = vectorize(lambda v: convert(_strong(as_value(f(v, *args, **kw))), dt))
            return mp.broadcast_to(each(x), shape_of(x))
        return mp.broadcast_to(asarray(f, dt), shape_of(x))
    out = value(funclist[0])
    for i, f in enumerate(funclist[1:]):
        out = uf.where(conds[i], value(f), out)
    return out


def choose(a, choices, out=None, mode="raise"):
    """choices[a[i]][i] for every position (all broadcast together)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jx.numpy.choose is not supported: "
                                  "use the returned array")
    idx = as_value(a)
    choices = [as_value(c) for c in choices]
    n = len(choices)
    if not dtypes.is_int(np.dtype(get_aval(idx).dtype)) or \
            np.dtype(get_aval(idx).dtype) == np.bool_:
        raise ValueError("`a` array must be integer typed")
    if mode == "raise":
        v = _concrete(idx, "choose", "mode='raise' checks the indices; use mode='wrap' or "
                                     "mode='clip' instead")
        if v.size and ((v < 0).any() or (v >= n).any()):
            raise ValueError(f"invalid entry in choice array: indices must be in [0, {n}) "
                             "(or use mode='wrap' or 'clip')")
    elif mode == "wrap":
        idx = uf.remainder(idx, n)
    elif mode == "clip":
        idx = uf.clip(idx, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    vals = promote_dtypes(*choices)
    shape = broadcast_shapes(shape_of(idx), *[shape_of(v) for v in vals])
    res = mp.broadcast_to(vals[0], shape)
    for i, v in enumerate(vals[1:], 1):
        res = uf.where(uf.equal(idx, i), v, res)
    return _strong(res)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of a along axis where condition holds. Without size= the
    count is read off a concrete condition; with size= (static) the result is
    the first `size` of them, padded with fill_value."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jx.numpy.compress is not supported: "
                                  "use the returned array")
    cond = as_value(condition)
    if len(shape_of(cond)) != 1:
        raise ValueError(f"jx.numpy.compress: condition must be a 1-d array, got shape "
                         f"{shape_of(cond)}")
    cond = convert(cond, dtypes.bool_) if np.dtype(get_aval(cond).dtype) != np.bool_ else cond
    x = as_value(a)
    if axis is None:
        x, axis = mp.ravel(x), 0
    else:
        axis = canonical_axis(axis, len(shape_of(x)))
        x = mp.moveaxis(x, axis, 0)
    n = shape_of(x)[0]
    m = shape_of(cond)[0]
    extra = mp.slice_axis(cond, 0, min(m, n), m)
    cond = mp.slice_axis(cond, 0, 0, min(m, n))
    x = mp.slice_axis(x, 0, 0, min(m, n))
    if size is None:
        c = _concrete(cond, "compress", "pass size= (a static length) as in JAX")
        if _concrete(extra, "compress", "pass size=").any():
            raise ValueError("jx.numpy.compress: condition contains entries that are out of "
                             f"bounds (True beyond the axis length {n})")
        from .indexing import take
        res = take(x, _index_const(np.nonzero(c)[0]), axis=0)
    else:
        size = _static_int(size, "compress size")
        if not 0 <= size <= shape_of(x)[0]:
            raise ValueError("size must be positive and not greater than the size of the array "
                             f"axis; got size={size} for a.shape[axis]={shape_of(x)[0]}")
        from .indexing import take
        from .sorting import argsort
        mask = mp.reshape(cond, shape_of(cond) + (1,) * (len(shape_of(x)) - 1))
        x = uf.where(mask, x, asarray(fill_value, x.dtype))
        order = argsort(uf.logical_not(cond), stable=True)
        res = take(x, mp.slice_axis(order, 0, 0, size), axis=0)
    return mp.moveaxis(res, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of arr where condition holds (both flattened)."""
    return compress(mp.ravel(as_value(condition)), mp.ravel(as_value(arr)), size=size,
                    fill_value=fill_value)


# ---------------------------------------------------------------- insert / delete

def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """arr without the entries obj along axis (flattened when axis is None).
    obj must be static (an int, a slice, or a concrete array), unless it holds
    unique integers and assume_unique_indices=True, which traces."""
    x = as_value(arr)
    if axis is None:
        x, axis = mp.ravel(x), 0
    axis = canonical_axis(axis, len(shape_of(x)))
    n = shape_of(x)[axis]
    if not isinstance(obj, (Tracer, bool)) and (isinstance(obj, (int, np.integer)) or (
            hasattr(obj, "dtype") and np.ndim(obj) == 0 and np.dtype(obj.dtype).kind in "iu"
            and not has_tracer(obj))):
        i = int(np.asarray(obj._value if hasattr(obj, "_value") else obj))
        if not -n <= i < n:
            raise ValueError(f"jx.numpy.delete: index {i} is out of bounds for axis {axis} "
                             f"with size {n}")
        i %= n
        return mp.concatenate([mp.slice_axis(x, axis, 0, i), mp.slice_axis(x, axis, i + 1, n)],
                              axis=axis)
    if isinstance(obj, slice):
        obj, assume_unique_indices = np.arange(n)[obj], True
    from .indexing import take
    if assume_unique_indices and dtypes.is_int(np.dtype(get_aval(as_value(obj)).dtype)) \
            and np.dtype(get_aval(as_value(obj)).dtype) != np.bool_:
        from .sorting import sort
        from .reductions import sum as _sum
        o = mp.ravel(as_value(obj))
        o = uf.clip(uf.where(uf.less(o, 0), uf.add(o, n), o), 0, n)
        o = sort(o)
        k = shape_of(o)[0]
        o = uf.subtract(o, arange(k, dtype=o.dtype))
        keep = arange(n - k, dtype=o.dtype)
        shift = _sum(uf.greater_equal(mp.expand_dims(keep, 0), mp.expand_dims(o, 1)), axis=0,
                     dtype=o.dtype)
        return take(x, uf.add(keep, shift), axis=axis)
    o = _concrete(obj, "delete", "pass an int, a slice or a concrete array, or unique integer "
                                 "indices with assume_unique_indices=True")
    if o.dtype.kind in "iu":
        mask = np.ones(n, bool)
        try:
            mask[o] = False
        except IndexError:
            raise IndexError(f"jx.numpy.delete: an index in {o.tolist()!r:.60} is out of "
                             f"bounds for axis {axis} with size {n}") from None
    elif o.dtype == np.bool_:
        if o.shape != (n,):
            raise ValueError("np.delete(arr, obj): for boolean indices, obj must be "
                             "one-dimensional with length matching specified axis.")
        mask = ~o
    elif o.size == 0:
        mask = np.ones(n, bool)
    else:
        raise ValueError(f"np.delete(arr, obj): got obj.dtype={o.dtype}; must be integer or "
                         "bool.")
    return take(x, _index_const(np.nonzero(mask)[0]), axis=axis)


def insert(arr, obj, values, axis=None):
    """arr with values inserted before the indices obj along axis (flattened
    when axis is None); traced indices work: the output length is static."""
    from .sorting import argsort
    from ._sets import nonzero
    x = as_value(arr)
    if axis is None:
        x, axis = mp.ravel(x), 0
    axis = canonical_axis(_static_int(axis, "insert axis"), len(shape_of(x)))
    n = shape_of(x)[axis]
    if isinstance(obj, slice):
        idx = arange(*obj.indices(n))
    else:
        idx = as_value(obj)
        if not isinstance(idx, Tracer):
            idx = asarray(idx)
    if len(shape_of(idx)) > 1:
        raise ValueError("jx.numpy.insert(): obj must be a slice, a one-dimensional array, or "
                         f"a scalar; got shape {shape_of(idx)}")
    idt = np.dtype(get_aval(idx).dtype)
    if not dtypes.is_int(idt) or idt == np.bool_:
        if math.prod(shape_of(idx)) == 0 and not isinstance(obj, Tracer):
            idx = convert(idx, dtypes.default_int())
        else:
            raise ValueError(f"jx.numpy.insert(): index array must be integer typed; got "
                             f"{idt}")
    v = convert(as_value(values), x.dtype)
    nd = len(shape_of(x))
    if len(shape_of(v)) < nd:
        v = mp.reshape(v, (1,) * (nd - len(shape_of(v))) + shape_of(v))
    if math.prod(shape_of(idx)) == 1:
        first = mp.ravel(idx)[0]
        if not shape_of(idx):
            v = mp.moveaxis(v, 0, axis)
        idx = mp.broadcast_to(first, (shape_of(v)[axis],))
    k = broadcast_shapes(shape_of(idx), (shape_of(v)[axis],))[0]
    if k == 0:
        return x
    out_shape = list(shape_of(x))
    out_shape[axis] += k
    idx = uf.clip(uf.where(uf.less(idx, 0), uf.add(idx, n), idx), 0, n)
    idx = mp.broadcast_to(idx, (k,))
    # where each value lands: its index plus the number of values placed before it
    at_values = idx.at[argsort(idx, stable=True)].add(arange(k, dtype=idx.dtype))
    keep = full((n + k,), True).at[at_values].set(False)
    at_arr = nonzero(keep, size=n)[0]
    lead = (slice(None),) * axis
    vs = list(shape_of(v))
    vs[axis] = k
    res = full(tuple(out_shape), 0, x.dtype).at[lead + (at_values,)].set(
        mp.broadcast_to(v, broadcast_shapes(shape_of(v), tuple(out_shape[:axis]) + (k,)
                                            + tuple(out_shape[axis + 1:]))))
    return res.at[lead + (at_arr,)].set(x)


def trim_zeros(filt, trim="fb", axis=None):
    """filt without its leading ('f') and/or trailing ('b') zeros (along each of
    the axes; all when axis is None). The length depends on the values, so filt
    must be concrete."""
    x = as_value(filt)
    v = _concrete(x, "trim_zeros", "the result's length depends on the values; slice with "
                                   "static bounds instead")
    nd = v.ndim
    axes = set(range(nd)) if axis is None else {canonical_axis(a, nd) for a in (
        axis if isinstance(axis, (tuple, list)) else (axis,))}
    t = trim.lower()
    if not axes or ("f" not in t and "b" not in t):
        return x
    out = x
    for ax in sorted(axes):
        mask = v.any(axis=tuple(i for i in range(nd) if i != ax)) if nd > 1 else v != 0
        if not mask.any():
            out = mp.slice_axis(out, ax, 0, 0)
            continue
        lo = int(mask.argmax()) if "f" in t else 0
        hi = v.shape[ax] - int(mask[::-1].argmax()) if "b" in t else v.shape[ax]
        out = mp.slice_axis(out, ax, lo, hi)
    return out


# ---------------------------------------------------------------- predicates

def array_equiv(a1, a2):
    """Whether a1 and a2 broadcast together and are equal everywhere."""
    from .reductions import all as _all
    x, y = as_value(a1), as_value(a2)
    try:
        broadcast_shapes(shape_of(x), shape_of(y))
    except ShapeError:
        return asarray(False)
    return _strong(_all(uf.equal(x, y)))


def iterable(y) -> bool:
    """Whether y can be iterated (NumPy's test: iter(y) works)."""
    return np.iterable(y)


def _bool_like(x, value: bool):
    """value in x's shape, weak when x is (as JAX's comparison of a weak value)."""
    x = as_value(x)
    out = full(shape_of(x), value, dtypes.bool_)
    if dtype_weak(x)[1]:
        out = bind1(ew.convert_element_type, out, new_dtype=dtypes.bool_, weak_type=True)
    return out


def isreal(x):
    """Whether each element's imaginary part is 0 (True everywhere for a real dtype)."""
    if dtypes.is_complex(dtype_weak(x)[0]):
        from ._standard import imag
        return uf.equal(imag(x), 0)
    return _bool_like(x, True)


def iscomplex(x):
    """Whether each element's imaginary part is nonzero (False for a real dtype)."""
    if dtypes.is_complex(dtype_weak(x)[0]):
        from ._standard import imag
        return uf.not_equal(imag(x), 0)
    return _bool_like(x, False)


def iscomplexobj(x) -> bool:
    """Whether x has a complex dtype (whatever its values), or is a Python complex."""
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return False
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = np.asarray(x).dtype
    return np.issubdtype(np.dtype(dt), np.complexfloating)


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


# ---------------------------------------------------------------- differences

def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened ary, with optional
    values before and after (cast to ary's dtype)."""
    x = mp.ravel(as_value(ary))
    n = shape_of(x)[0]
    if np.dtype(x.dtype) == np.bool_:
        raise TypeError("jx.numpy.ediff1d: boolean subtract is not supported (as in JAX); "
                        "use not_equal on slices or cast to int first")
    res = uf.subtract(mp.slice_axis(x, 0, min(1, n), n), mp.slice_axis(x, 0, 0, max(n - 1, 0)))
    parts = [res]
    # the extra values are cast as astype does (wrapping: -1 becomes 255 in uint8)
    if to_begin is not None:
        parts.insert(0, mp.ravel(convert(_array_arg(to_begin, "ediff1d to_begin"), x.dtype)))
    if to_end is not None:
        parts.append(mp.ravel(convert(_array_arg(to_end, "ediff1d to_end"), x.dtype)))
    return mp.concatenate(parts) if len(parts) > 1 else res


# ---------------------------------------------------------------- mapping functions

_ELEMENTWISE = frozenset(v for v in vars(ew).values() if isinstance(v, Primitive))


def _is_elementwise(graph, consts) -> bool:
    """Whether a graph traced on scalars is scalar elementwise primitives all through
    (then applying it to arrays computes it for every element)."""
    if any(shape_of(c) != () for c in consts):
        return False
    for e in graph.eqns:
        if e.prim not in _ELEMENTWISE:
            return False
        if any(a.aval.shape != () for a in (*e.inputs, *e.outputs)):
            return False
    return all(a.aval.shape == () for a in graph.outputs)


def _map_rows(f, xs, length):
    """[f(*[x[i] for x in xs]) for i in range(length)], stacked: leaves of f's pytree
    result get a leading axis of length `length`. Traced: one scan primitive;
    concrete: a Python loop (each call runs eagerly)."""
    if not any(isinstance(x, Tracer) for x in xs) and length:
        from .indexing import getitem
        rows = [f(*[getitem(x, i) for x in xs]) for i in range(length)]
        leaves = [tree.flatten(r)[0] for r in rows]
        td = tree.flatten(rows[0])[1]
        cols = [mp.stack([as_value(v) for v in col]) for col in zip(*leaves)]
        return tree.unflatten(td, cols)
    avals = [get_aval(x).update(shape=get_aval(x).shape[1:]) for x in xs]
    box = []

    def flat(*args):
        out = f(*args)
        leaves, td = tree.flatten(out)
        box.append(td)
        return [as_value(v) for v in leaves]
    graph, consts = trace(flat, avals, name=getattr(f, "__name__", "vectorized function"))
    outs = bind(scan_p, *consts, *xs, body=graph, num_consts=len(consts), num_carry=0,
                length=length, reverse=False)
    return tree.unflatten(box[0], list(outs))


def _fold(step, init, xs, length, what):
    """carry = init; for i in range(length): carry = step(carry, *[x[i] for x in xs]);
    returns (final carry, every carry stacked). One scan primitive (JAX's fori_loop
    and scan in its ufunc methods), traced or not; the carry keeps init's type
    (step's result is cast to it)."""
    init = _strong(init)
    a0 = get_aval(init)

    def body(c, *row):
        new = as_value(step(c, *row))
        new = mp.broadcast_to(_strong(convert(new, a0.dtype)), a0.shape)
        return [new, new]
    avals = [a0] + [get_aval(x).update(shape=get_aval(x).shape[1:]) for x in xs]
    graph, consts = trace(body, avals, name=what)
    final, ys = bind(scan_p, *consts, init, *xs, body=graph, num_consts=len(consts),
                     num_carry=1, length=length, reverse=False)
    return final, ys


def _apply_batched(f, args, core_ndims, batch_shape):
    """f mapped over batch_shape (the broadcast leading dims of args; each arg keeps
    its last core_ndims[i] dims per call). Outputs: batch_shape + f's output shape."""
    if not batch_shape:
        return f(*args)
    # elementwise functions of scalars: one call on the broadcast arrays
    if all(c == 0 for c in core_ndims):
        avals = [get_aval(a).update(shape=()) for a in args]
        try:
            graph, consts = trace(lambda *t: [as_value(v) for v in tree.flatten(f(*t))[0]],
                                  avals, name="vectorize probe")
        except Exception:
            graph = None
        if graph is not None and _is_elementwise(graph, consts):
            out = f(*[mp.broadcast_to(a, batch_shape) for a in args])
            return tree.map(lambda v: mp.broadcast_to(as_value(v), batch_shape), out)
    size = math.prod(batch_shape)
    flat = []
    for a, c in zip(args, core_ndims):
        s = shape_of(a)
        core = s[len(s) - c:] if c else ()
        a = mp.broadcast_to(a, batch_shape + core)
        flat.append(mp.reshape(a, (size,) + core))
    out = _map_rows(f, flat, size)
    return tree.map(lambda v: mp.reshape(v, batch_shape + shape_of(v)[1:]), out)


_DIM = r"\w+"
_CORE = r"\((?:{0}(?:,{0})*)?\)".format(_DIM)
_ARGS = r"{0}(?:,{0})*".format(_CORE)
_SIGNATURE = r"^{0}->{0}$".format(_ARGS)


def _parse_signature(signature):
    sig = signature.replace(" ", "")
    if not re.match(_SIGNATURE, sig):
        raise ValueError(f"not a valid gufunc signature: {signature!r} (expected e.g. "
                         "'(n),(n)->()')")
    ins, outs = ([tuple(re.findall(_DIM, c)) for c in re.findall(_CORE, side)]
                 for side in sig.split("->"))
    return ins, outs


def _bind_dims(sizes, shape, dims, context, is_input):
    if len(shape) < len(dims):
        what = "input" if is_input else "output"
        raise ValueError(f"{what} with shape {shape} does not have enough dimensions for its "
                         f"core dimensions {dims} {context}")
    for name, size in zip(dims, shape[len(shape) - len(dims):]):
        if sizes.setdefault(name, size) != size:
            raise ValueError(f"inconsistent size for core dimension {name!r}: {size} vs "
                             f"{sizes[name]} {context}")


def _check_ranks(args, in_dims, signature):
    """jax_numpy_rank_promotion for vectorize: arguments whose loop ranks differ."""
    if flags.STATE.rank_promotion == "allow":
        return
    ranks = {len(shape_of(a)) - len(d) for a, d in zip(args, in_dims) if shape_of(a)}
    if len(ranks) < 2:
        return
    msg = (f"operands with shapes {[shape_of(a) for a in args]} require rank promotion for "
           f"jx.numpy.vectorize function with signature {signature}. Set the "
           "jax_numpy_rank_promotion config option to 'allow' to disable this message")
    if flags.STATE.rank_promotion == "raise":
        raise ValueError(msg + ", or add the missing axes explicitly")
    import warnings
    warnings.warn(msg, stacklevel=3)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """pyfunc mapped over the broadcast leading dimensions of its arguments, as
    JAX's vectorize: `excluded` names positions/keywords passed through unmapped,
    `signature` ('(n),(n)->()') gives the core dimensions each call sees."""
    import functools
    if any(not isinstance(e, (str, int)) for e in excluded):
        raise TypeError("jx.numpy.vectorize can only exclude integer or string arguments, "
                        f"but excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")
    parsed = None if signature is None else _parse_signature(signature)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        context = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
        fixed = {i: args[i] for i in excluded if isinstance(i, int) and i < len(args)}
        fixed_kw = {k: v for k, v in kwargs.items() if k in excluded}
        dyn_kw = {k: v for k, v in kwargs.items() if k not in excluded}
        dyn = [a for i, a in enumerate(args) if i not in fixed]
        if dyn_kw:
            raise NotImplementedError(f"jx.numpy.vectorize: keyword arguments {sorted(dyn_kw)} "
                                      "are not mapped; pass them positionally or name them "
                                      "in excluded=")
        in_dims = parsed[0] if parsed else [()] * len(dyn)
        nones = [i for i, a in enumerate(dyn) if a is None]
        if nones and any(in_dims[i] for i in nones if i < len(in_dims)):
            raise ValueError(f"Cannot pass None at locations {set(nones)} with "
                             f"signature={signature!r}")
        pos = [i for i in range(len(args)) if i not in fixed]
        for i in nones:
            fixed[pos[i]] = None
        keep = [i for i in range(len(dyn)) if i not in nones]
        dyn = [as_value(asarray(dyn[i]) if not isinstance(dyn[i], Tracer) else dyn[i])
               for i in keep]
        if len(in_dims) != len(keep) and not nones:
            raise TypeError(f"wrong number of positional arguments: expected {len(in_dims)}, "
                            f"got {len(dyn)} {context}")
        in_dims = [in_dims[i] for i in keep] if nones else in_dims
        sizes = {}
        for a, dims in zip(dyn, in_dims):
            _bind_dims(sizes, shape_of(a), dims, context, True)
        batch = broadcast_shapes(*[shape_of(a)[:len(shape_of(a)) - len(d)]
                                   for a, d in zip(dyn, in_dims)])
        _check_ranks(dyn, in_dims, signature)

        def call(*vals):
            it = iter(vals)
            full_args = [fixed[i] if i in fixed else next(it)
                         for i in range(len(args))]
            out = pyfunc(*full_args, **fixed_kw)
            if parsed is not None:
                outs = out if isinstance(out, tuple) else (out,)
                if len(parsed[1]) > 1 and not isinstance(out, tuple):
                    raise TypeError("output must be a tuple when multiple outputs are "
                                    f"expected, got: {out!r:.60} {context}")
                if len(outs) != len(parsed[1]):
                    raise TypeError(f"wrong number of output arguments: expected "
                                    f"{len(parsed[1])}, got {len(outs)} {context}")
                local = dict(sizes)
                for o, dims in zip(outs, parsed[1]):
                    _bind_dims(local, shape_of(as_value(o)), dims, context, False)
            return out
        return _apply_batched(call, dyn, [len(d) for d in in_dims], batch)
    return wrapped


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """function called on each index tuple of shape (the indices as dtype),
    vectorized as JAX's vmap does: each call sees scalars."""
    shape = tuple(_static_int(s, "fromfunction shape") for s in (
        (shape,) if np.ndim(shape) == 0 else shape))
    dt = dtypes.canonicalize(dtype, "fromfunction")
    grids = indices(shape, dt, sparse=True)
    return vectorize(lambda *i: function(*i, **kwargs))(*grids)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d applied to every 1-d slice of arr along axis; its output's dims
    take the place of that axis."""
    x = as_value(arr)
    nd = len(shape_of(x))
    ax = canonical_axis(_static_int(axis, "apply_along_axis axis"), nd)
    x = mp.moveaxis(x, ax, -1)
    s = shape_of(x)
    out = _apply_batched(lambda row: as_value(func1d(row, *args, **kwargs)), [x], [1], s[:-1])
    out_nd = len(shape_of(out)) - (nd - 1)
    # batch dims (before, after) then the output's dims -> before, output, after
    perm = list(range(ax)) + list(range(nd - 1, nd - 1 + out_nd)) + list(range(ax, nd - 1))
    return mp.transpose(out, perm)


def apply_over_axes(func, a, axes):
    """func(a, axis) for each axis in turn, keeping the rank (a dropped axis is
    put back with size 1)."""
    x = as_value(a)
    for axis in axes:
        b = as_value(func(x, axis))
        if len(shape_of(b)) == len(shape_of(x)):
            x = b
        elif len(shape_of(b)) == len(shape_of(x)) - 1:
            x = mp.expand_dims(b, axis)
        else:
            raise ValueError(f"apply_over_axes: the function is not returning an array of the "
                             f"correct shape (rank {len(shape_of(x))} or "
                             f"{len(shape_of(x)) - 1}), got shape {shape_of(b)}")
    return x


class _PyUfunc:
    """What jx.numpy.frompyfunc returns: a ufunc-like object around a Python
    function of scalars (JAX's jnp.ufunc): calls are vectorized, and binary
    single-output functions have reduce, accumulate, reduceat, outer and at,
    each a scan over the axis (JAX's fori_loop / scan)."""

    def __init__(self, func, nin, nout, identity=None):
        self._func = func
        self.__name__ = getattr(func, "__name__", "pyfunc")
        self.__doc__ = func.__doc__
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs, self.identity = self.nin, identity

    def __repr__(self):
        return f"<jx.numpy.ufunc '{self.__name__}'>"

    def __hash__(self):
        return hash((self._func, self.__name__, self.identity, self.nin, self.nout))

    def __eq__(self, other):
        return isinstance(other, _PyUfunc) and (
            (self._func, self.__name__, self.identity, self.nin, self.nout) ==
            (other._func, other.__name__, other.identity, other.nin, other.nout))

    def __call__(self, *args, out=None, where=None):
        if out is not None or where is not None:
            raise NotImplementedError(f"the out and where arguments of {self!r} are not "
                                      "supported: use the returned array (and jnp.where)")
        if len(args) != self.nin:
            raise TypeError(f"{self!r} takes {self.nin} arguments, got {len(args)}")
        return vectorize(self._func)(*args)

    def _binary(self, what):
        if self.nin != 2:
            raise ValueError(f"{what} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{what} only supported for functions returning a single value")

    def _dtype(self, x, dtype):
        if dtype is not None:
            return dtypes.canonicalize(dtype, f"{self.__name__} dtype")
        one = asarray(1, np.dtype(get_aval(x).dtype))
        return np.dtype(get_aval(as_value(self._func(one, one))).dtype)

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        self._binary("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        x = _array_arg(a, f"{self.__name__}.reduce a")
        if where is not None:
            where = _array_arg(where, f"{self.__name__}.reduce where")
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify "
                                 "'initial'.")
            if np.dtype(get_aval(where).dtype) != np.bool_:
                raise ValueError(f"where argument must have dtype=bool; got dtype="
                                 f"{np.dtype(get_aval(where).dtype)}")
            where = mp.broadcast_to(where, shape_of(x))
        if isinstance(axis, tuple):
            raise NotImplementedError(f"{self.__name__}.reduce: a tuple of axes is not "
                                      "supported (as in JAX); reduce one axis at a time")
        dt = self._dtype(x, dtype)
        initial = self.identity if initial is None else initial
        nd = len(shape_of(x))
        if axis is None:
            final = (1,) * nd if keepdims else ()
            x, axis = mp.ravel(x), 0
            where = None if where is None else mp.ravel(where)
        else:
            axis = canonical_axis(axis, nd)
            s = shape_of(x)
            final = s[:axis] + (1,) * bool(keepdims) + s[axis + 1:]
            x = mp.moveaxis(x, axis, 0)
            where = None if where is None else mp.moveaxis(where, axis, 0)
        n = shape_of(x)[0]
        if n == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            return full(final, initial, dt)
        start = 1 if initial is None else 0
        val = mp.broadcast_to(convert(as_value(x[0] if initial is None else initial), dt),
                              shape_of(x)[1:])
        rest = [mp.slice_axis(x, 0, start, n)]
        if where is not None:
            rest.append(mp.slice_axis(where, 0, start, n))

        def step(c, row, *keep):
            new = self(c, convert(row, dt))
            return uf.where(keep[0], new, c) if keep else new
        if n > start:
            val = _fold(step, val, rest, n - start, f"{self.__name__}.reduce")[0]
        return mp.reshape(val, final)

    def accumulate(self, a, axis=0, dtype=None, out=None):
        self._binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        x = _array_arg(a, f"{self.__name__}.accumulate a")
        dt = self._dtype(x, dtype)
        axis = canonical_axis(axis, len(shape_of(x)))
        if math.prod(shape_of(x)) == 0:
            return full(shape_of(x), 0, dt)
        x = mp.moveaxis(x, axis, 0)
        n = shape_of(x)[0]
        first = _strong(convert(x[0], dt))
        if n > 1:
            _, rest = _fold(lambda c, row: self(c, convert(row, dt)), first,
                            [mp.slice_axis(x, 0, 1, n)], n - 1, f"{self.__name__}.accumulate")
            out = mp.concatenate([mp.expand_dims(first, 0), rest])
        else:
            out = mp.expand_dims(first, 0)
        return mp.moveaxis(out, 0, axis)

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """For each j, reduce a[indices[j]:indices[j + 1]] (a[indices[j]] alone where
        the next index is not larger), as NumPy's and JAX's reduceat."""
        from .indexing import take
        self._binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        x = _array_arg(a, f"{self.__name__}.reduceat a")
        idx = _array_arg(indices, f"{self.__name__}.reduceat indices")
        if not shape_of(x):
            raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape="
                             f"{shape_of(x)}")
        if len(shape_of(idx)) != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got indices.shape="
                             f"{shape_of(idx)}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        dt = np.dtype(get_aval(x).dtype) if dtype is None else \
            dtypes.canonicalize(dtype, "reduceat dtype")
        axis = canonical_axis(axis, len(shape_of(x)))
        res = take(x, idx, axis=axis)
        n = shape_of(x)[axis]
        ends = mp.concatenate([idx, asarray([n], np.dtype(get_aval(idx).dtype))])
        shape = [1] * len(shape_of(res))
        shape[axis] = shape_of(idx)[0]
        lo = mp.reshape(mp.slice_axis(ends, 0, 0, shape[axis]), tuple(shape))
        hi = mp.reshape(mp.slice_axis(ends, 0, 1, shape[axis] + 1), tuple(shape))
        def step(r, row, i):
            inside = uf.logical_and(uf.less(lo, i), uf.greater(hi, i))
            return uf.where(inside, self(r, mp.expand_dims(row, axis)), r)
        if n:
            res = _fold(step, convert(res, dt), [mp.moveaxis(x, axis, 0),
                                                 arange(n, dtype=dtypes.default_int())],
                        n, f"{self.__name__}.reduceat")[0]
        return convert(res, dt)

    def outer(self, A, B, /):
        """func(a, b) for every pair of elements: shape A.shape + B.shape."""
        self._binary("outer")
        x = _array_arg(A, f"{self.__name__}.outer A")
        y = _array_arg(B, f"{self.__name__}.outer B")
        sx, sy = shape_of(x), shape_of(y)
        res = self(mp.reshape(x, (-1, 1)), mp.reshape(y, (1, -1)))
        return mp.reshape(res, sx + sy)

    def at(self, a, indices, b=None, /, *, inplace=True):
        """a with func applied at indices (repeated indices apply repeatedly),
        returned as a new array: inplace=False is required, as in JAX."""
        if inplace:
            raise NotImplementedError("jx arrays are immutable: ufunc.at must use "
                                      "inplace=False and use the returned array")
        x = _array_arg(a, f"{self.__name__}.at a")
        extra = () if b is None else (_array_arg(b, f"{self.__name__}.at b"),)
        one = asarray(1, np.dtype(get_aval(x).dtype))
        dt = np.dtype(get_aval(as_value(self._func(
            one, *[asarray(1, np.dtype(get_aval(e).dtype)) for e in extra]))).dtype)
        x = convert(x, dt)
        extra = tuple(convert(e, dt) for e in extra)
        idx = indices if isinstance(indices, tuple) else (indices,)
        idx = tuple(i if isinstance(i, slice) or i is None or i is Ellipsis else as_value(i)
                    for i in idx)
        arrays = [shape_of(i) for i in idx if not (isinstance(i, slice) or i is None
                                                   or i is Ellipsis)]
        shape = broadcast_shapes(*arrays) if arrays else ()
        if not shape:
            return x.at[idx].set(self(x.at[idx].get(), *extra))
        count = math.prod(shape)
        flat = [i if isinstance(i, slice) or i is None or i is Ellipsis
                else mp.ravel(mp.broadcast_to(i, shape)) for i in idx]
        if extra:
            e = extra[0]
            tail = shape_of(e)[len(shape):]
            extra = (mp.reshape(mp.broadcast_to(e, shape + tail), (count,) + tail),)
        arrays = [i for i in flat if not (isinstance(i, slice) or i is None or i is Ellipsis)]

        def step(c, *row):
            it = iter(row[:len(arrays)])
            at = tuple(i if isinstance(i, slice) or i is None or i is Ellipsis else next(it)
                       for i in flat)
            return c.at[at].set(self(c.at[at].get(), *row[len(arrays):]))
        return _fold(step, x, arrays + list(extra), count, f"{self.__name__}.at")[0]


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A ufunc-like object calling func (a Python function of scalars) on every
    element, as JAX's frompyfunc (see _PyUfunc)."""
    return _PyUfunc(func, nin, nout, identity=identity)


__all__ = ["logspace", "geomspace", "tril_indices", "triu_indices", "tril_indices_from",
           "triu_indices_from", "diag_indices", "diag_indices_from", "diagflat", "indices",
           "mgrid", "ogrid", "ix_", "r_", "c_", "s_", "index_exp", "unravel_index",
           "ravel_multi_index", "vander", "rot90", "rollaxis", "hsplit", "vsplit", "dsplit",
           "block", "resize", "fill_diagonal", "select", "piecewise", "choose", "compress",
           "extract", "insert", "delete", "trim_zeros", "array_equiv", "iterable", "isreal",
           "iscomplex", "isrealobj", "iscomplexobj", "fromfunction", "ediff1d",
           "apply_along_axis", "apply_over_axes", "vectorize", "frompyfunc"]
_wrap_public(globals(), [n for n in __all__ if n not in (
    "iterable", "isrealobj", "iscomplexobj", "vectorize", "mgrid", "ogrid", "r_", "c_", "s_",
    "index_exp", "frompyfunc")])
