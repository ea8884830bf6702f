"""Set operations of jax.numpy over jx.numpy: isin, intersect1d, union1d,
setdiff1d, setxor1d. Their results have data-dependent lengths: as in JAX they
take size= (a static length; the result is cut or padded with fill_value) and
work without it on concrete values only. The work is a padded unique (jx's
unique with size=), an all-pairs comparison and a compaction of the selected
entries, so with size= they trace, vmap and compile."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from . import creation as cr
from . import manipulation as mp
from . import reductions as rd
from . import ufuncs as uf
from ._sets import _compact, _unique_parts
from ._util import has_tracer, promote_dtypes, shape_of
from .creation import _wrap_public, asarray

_METHODS = ("auto", "compare_all", "binary_search", "sort")


def _flat_pair(ar1, ar2, promote=True):
    if promote:
        ar1, ar2 = promote_dtypes(ar1, ar2)
    return mp.ravel(asarray(ar1)), mp.ravel(asarray(ar2))


def _in(a, b, invert=False):
    """For each entry of the 1-d a, whether it equals some entry of the 1-d b."""
    if shape_of(a)[0] == 0 or shape_of(b)[0] == 0:
        return cr.full(shape_of(a), bool(invert), dtypes.bool_)
    if invert:
        return rd.all(uf.not_equal(a[:, None], b[None, :]), axis=-1)
    return rd.any(uf.equal(a[:, None], b[None, :]), axis=-1)


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element is in test_elements (not in, with invert=True)."""
    from ._sets import searchsorted
    from .indexing import take
    from .sorting import sort
    if method not in _METHODS:
        raise ValueError(f"isin: method={method!r} is not implemented; use one of "
                         f"{', '.join(_METHODS)}")
    shape = shape_of(element)
    a, b = _flat_pair(element, test_elements)
    if method == "binary_search" and shape_of(a)[0] and shape_of(b)[0]:
        b = sort(b)
        found = uf.equal(a, take(b, searchsorted(b, a), mode="clip"))
        out = uf.logical_not(found) if invert else found
    else:          # 'sort' gives the same answer as the all-pairs comparison
        out = _in(a, b, invert)
    return mp.reshape(out, shape)


def _static_size(name, size, *values):
    if size is None:
        if has_tracer(values):
            raise TypeError(f"jx.numpy.{name}: the output size depends on the values, which "
                            "are traced here; pass size= (a static length) as in JAX")
        return None
    if has_tracer(size):
        raise TypeError(f"jx.numpy.{name}: size must be a static int, not traced")
    return int(size)


def _uniq(x, assume_unique, keep_order=False):
    """(sorted distinct values padded to len(x), their first indices, which are
    real); with assume_unique, x itself (sorted unless keep_order)."""
    from .indexing import take
    from .sorting import argsort
    n = shape_of(x)[0]
    it = dtypes.default_int()
    if assume_unique:
        if keep_order:
            return x, cr.arange(n, dtype=it), cr.ones((n,), dtypes.bool_)
        perm = argsort(x, stable=True).astype(it)
        return take(x, perm), perm, cr.ones((n,), dtypes.bool_)
    vals, idx, _, counts = _unique_parts(x, n, None, True)
    return vals, idx, uf.greater(counts, 0)


def _pick(values, mask, size, fill_value):
    """The entries of values where mask holds, in order, cut or padded to size:
    (result, positions, which slots are real). fill_value None: JAX's padding, the
    smallest real entry (0 if there is none)."""
    from .indexing import take
    if size is None:
        size = int(np.sum(np.asarray(mask)))
    pos, valid = _compact(mask, size)
    if shape_of(values)[0] == 0:
        vals = cr.zeros((size,), values.dtype)
    else:
        vals = take(values, pos)
    if fill_value is not None:
        return uf.where(valid, vals, fill_value).astype(values.dtype), pos, valid
    if size == 0:
        return vals, pos, valid
    vals = uf.where(valid, vals, 0).astype(values.dtype)
    vals = uf.where(valid, vals, rd.max(vals))
    return uf.where(valid, vals, rd.min(vals)), pos, valid


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """The sorted distinct values in both arrays; return_indices: also the index
    of each in ar1 and in ar2 (first occurrences; the lengths as padding)."""
    from .indexing import take
    a1, a2 = _flat_pair(ar1, ar2)
    size = _static_size("intersect1d", size, a1, a2)
    n1, n2 = shape_of(a1)[0], shape_of(a2)[0]
    u1, i1, v1 = _uniq(a1, assume_unique)
    u2, i2, v2 = _uniq(a2, assume_unique)
    if n1 and n2:
        pairs = uf.logical_and(uf.equal(u1[:, None], u2[None, :]),
                               uf.logical_and(v1[:, None], v2[None, :]))
        hit = rd.any(pairs, axis=1)
    else:
        pairs, hit = None, cr.zeros((n1,), dtypes.bool_)
    vals, pos, valid = _pick(u1, hit, size, fill_value)
    if not return_indices:
        return vals
    it = dtypes.default_int()
    if pairs is None:
        k = shape_of(vals)[0]
        return vals, cr.full((k,), n1, it), cr.full((k,), n2, it)
    idx1 = uf.where(valid, take(i1, pos), n1).astype(it)
    j = rd.argmax(take(pairs, pos, axis=0), axis=1)
    idx2 = uf.where(valid, take(i2, j), n2).astype(it)
    return vals, idx1, idx2


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted distinct values of either array."""
    from ._sets import unique
    a1, a2 = _flat_pair(ar1, ar2)
    size = _static_size("union1d", size, a1, a2)
    return unique(mp.concatenate([a1, a2]), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The distinct values of ar1 not in ar2 (sorted, unless assume_unique: then
    in ar1's order); padding: fill_value, default 0."""
    a1, a2 = _flat_pair(ar1, ar2, promote=False)
    size = _static_size("setdiff1d", size, a1)
    fill = 0 if fill_value is None else fill_value
    if shape_of(a1)[0] == 0:
        return cr.full((size or 0,), fill, a1.dtype)
    u1, _, v1 = _uniq(a1, assume_unique, keep_order=True)
    b = a2.astype(dtypes.result_type((a1.dtype, False), (a2.dtype, False))[0])
    keep = uf.logical_and(v1, _in(u1.astype(b.dtype), b, invert=True))
    return _pick(u1, keep, size, fill)[0]


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted values in exactly one of the arrays."""
    from .indexing import take
    from .sorting import lexsort
    a1, a2 = _flat_pair(ar1, ar2)
    size = _static_size("setxor1d", size, a1, a2)
    u1, _, v1 = _uniq(a1, assume_unique)
    u2, _, v2 = _uniq(a2, assume_unique)
    m1 = uf.logical_and(v1, _in(u1, u2, invert=True))
    m2 = uf.logical_and(v2, _in(u2, u1, invert=True))
    cand = mp.concatenate([u1, u2])
    mask = mp.concatenate([m1, m2])
    if shape_of(cand)[0] == 0:
        return _pick(cand, mask, size, fill_value)[0]
    order = lexsort((cand, uf.logical_not(mask)))    # selected first, then by value
    return _pick(take(cand, order), take(mask, order), size, fill_value)[0]


__all__ = ["isin", "intersect1d", "union1d", "setdiff1d", "setxor1d"]
_wrap_public(globals(), __all__)
