"""Numerical routines of jax.numpy built on jx.numpy: counting and histograms,
interp, cov/corrcoef, finite differences (trapezoid,
gradient, unwrap), the nan- reductions that were missing, partition, matvec and
the window functions. The elementwise math (gcd, frexp, sinc, i0, bit counts),
convolution and the polynomials, and the set operations live in the modules star-imported at the
end. Data-dependent sizes take JAX's static arguments (bincount's length=,
histogram's integer bins); without them they need concrete values."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import dtypes
from ..errors import ShapeError
from . import creation as cr
from . import manipulation as mp
from . import reductions as rd
from . import ufuncs as uf
from ._util import as_value, canonical_axis, has_tracer, promote_dtypes, shape_of
from .creation import _wrap_public, asarray


def _static_int(value, what: str) -> int:
    """An int known at trace time, or an error naming the argument."""
    if has_tracer(value):
        raise TypeError(f"{what} must be a static int, but it is traced here; pass a "
                        "Python int (mark it static in jx.jit)")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {value!r}") from None


def _inexact(*args):
    return promote_dtypes(*args, to_float=True)


# ----------------------------------------------------------------- counting


def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
    """Counts (or summed weights) of each non-negative int in the 1-d x; the
    output length is length= (static; values beyond it are dropped) or, on
    concrete x only, max(minlength, x.max() + 1). Negative values count as 0."""
    x = asarray(x)
    if x.dtype == dtypes.bool_:
        x = x.astype(dtypes.int32)
    if not dtypes.is_int(x.dtype):
        raise TypeError(f"bincount: x must have an integer dtype, got {x.dtype} (round it "
                        "and astype(int32) first)")
    if len(shape_of(x)) != 1:
        raise ShapeError(f"bincount: x must be 1-d, got shape {shape_of(x)}")
    minlength = _static_int(minlength, "bincount: minlength")
    if length is None:
        if has_tracer(x):
            raise TypeError("bincount: the output length depends on the values of x, which "
                            "are traced here; pass length= (a static int) as in JAX")
        n = shape_of(x)[0]
        length = max(minlength, int(np.max(np.asarray(x))) + 1 if n else 0, 0)
    else:
        length = _static_int(length, "bincount: length")
    if weights is None:
        w, dt = 1, dtypes.default_int()
    else:
        w = as_value(weights)
        if shape_of(w) != shape_of(x):
            raise ShapeError(f"bincount: weights must have x's shape {shape_of(x)}, got "
                             f"{shape_of(w)}")
        dt = asarray(w).dtype
    return cr.zeros((length,), dt).at[uf.maximum(x, 0)].add(w, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """bins + 1 evenly spaced edges over range (default: a's min and max; an empty
    range widens by 0.5 each side), or the given 1-d edges."""
    if isinstance(bins, str):
        raise NotImplementedError(f"histogram_bin_edges: string bins ({bins!r}) are not "
                                  "supported (as in JAX); pass an int or the edges")
    arr = asarray(a)
    dt = dtypes.inexact(arr.dtype)
    if len(shape_of(bins)) == 1:
        return asarray(bins, dtype=dt)
    n = _static_int(bins, "histogram: bins (a count; or pass the edges as a 1-d array)")
    if n < 1:
        raise ValueError(f"histogram: bins must be at least 1, got {n}")
    if range is None:
        lo, hi = rd.min(arr), rd.max(arr)
    else:
        r = asarray(range if not isinstance(range, (list, tuple)) else
                    mp.stack([asarray(v) for v in range]), dtype=dt)
        if shape_of(r) != (2,):
            raise ValueError(f"histogram: range must be None or a pair (lo, hi), got {range!r}")
        lo, hi = r[0], r[1]
    lo, hi = asarray(lo, dtype=dt), asarray(hi, dtype=dt)
    same = uf.equal(lo, hi)
    lo, hi = uf.where(same, lo - 0.5, lo), uf.where(same, hi + 0.5, hi)
    return cr.linspace(lo, hi, n + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """(counts, edges) of a's values; the last bin includes its right edge and
    values outside the edges are not counted."""
    if weights is None:
        (a,) = _inexact(a)
        weights = cr.ones_like(a)
    else:
        a, weights = _inexact(a, weights)
        if shape_of(a) != shape_of(weights):
            raise ShapeError(f"histogram: weights must have a's shape {shape_of(a)}, got "
                             f"{shape_of(weights)}")
    from ._sets import searchsorted
    edges = histogram_bin_edges(a, bins, range)
    ne = shape_of(edges)[0]
    idx = searchsorted(edges, a, side="right")
    idx = uf.where(uf.equal(a, edges[-1]), ne - 1, idx)
    counts = cr.zeros((ne,), weights.dtype).at[idx].add(weights, mode="drop")[1:]
    if density:
        counts = counts / mp.diff(edges) / rd.sum(counts)
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """The D-dimensional histogram of the (N, D) sample: (counts, [edges per dim])."""
    if weights is None:
        (sample,) = _inexact(sample)
    else:
        sample, weights = _inexact(sample, weights)
        if shape_of(weights) != shape_of(sample)[:1]:
            raise ShapeError(f"histogramdd: weights must have shape {shape_of(sample)[:1]} "
                             f"(one per sample), got {shape_of(weights)}")
    if len(shape_of(sample)) != 2:
        raise ShapeError(f"histogramdd: sample must be (N, D), got shape {shape_of(sample)}")
    n, d = shape_of(sample)
    if range is not None and (len(range) != d or any(
            r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"histogramdd: for sample of shape {(n, d)}, range must be a "
                         f"sequence of {d} pairs or Nones, got {range!r}")
    try:
        per_dim = list(bins)
    except TypeError:
        per_dim = [bins] * d
    else:
        if len(per_dim) != d:
            raise ValueError(f"histogramdd: bins has {len(per_dim)} entries for {d} dims; "
                             "give one per dimension (or one int for all)")
    from ._sets import searchsorted
    edges, flat, sizes = [], 0, []
    for i in builtins.range(d):      # (range is the argument here)
        col = sample[:, i]
        e = histogram_bin_edges(col, per_dim[i], None if range is None else range[i])
        edges.append(e)
        sizes.append(shape_of(e)[0] + 1)
    # bin index per dim (0 and len(e) are the outside bins), flattened row-major
    stride = 1
    for i in reversed(builtins.range(d)):
        col = sample[:, i]
        idx = searchsorted(edges[i], col, side="right")
        idx = uf.clip(uf.where(uf.equal(col, edges[i][-1]), idx - 1, idx), 0, sizes[i] - 1)
        flat = uf.add(flat, idx * stride)
        stride *= sizes[i]
    hist = bincount(flat, weights, length=stride)
    hist = mp.reshape(hist, tuple(sizes))[(slice(1, -1),) * d]
    if density:
        hist = hist.astype(sample.dtype)
        hist = hist / rd.sum(hist)
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = -1
            hist = hist / mp.reshape(mp.diff(e), tuple(shape))
    return hist, edges



def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """(counts, x edges, y edges) of the points (x, y)."""
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb not in (1, 2):
        bins = [asarray(bins), asarray(bins)]
    x, y = promote_dtypes(x, y)
    sample = mp.stack([x, y], axis=1)
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]


def digitize(x, bins, right=False, *, method=None):
    """Index of the bin of each x in the monotonic 1-d bins (increasing or
    decreasing), as NumPy's digitize."""
    from ._sets import searchsorted
    if has_tracer(right):
        raise TypeError("digitize: right must be a static bool")
    x, b = asarray(x), asarray(bins)
    if len(shape_of(b)) != 1:
        raise ShapeError(f"digitize: bins must be 1-d, got shape {shape_of(b)}")
    nb = shape_of(b)[0]
    if nb == 0:
        return cr.zeros(shape_of(x), dtypes.int32)
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    up = searchsorted(b, x, side=side, **kw)
    down = nb - searchsorted(mp.flip(b), x, side=side, **kw)
    # int32 in both modes, as JAX's searchsorted
    return uf.where(uf.greater_equal(b[-1], b[0]), up, down).astype(dtypes.int32)


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at x; left/right: the values
    beyond the ends ('extrapolate' continues the end segments); period: xp is
    periodic."""
    from ._sets import searchsorted
    from .indexing import take
    from .sorting import argsort
    if shape_of(xp) != shape_of(fp) or len(shape_of(xp)) != 1:
        raise ShapeError(f"interp: xp and fp must be 1-d of one length, got shapes "
                         f"{shape_of(xp)} and {shape_of(fp)}")
    x, xp = _inexact(x, xp)
    (fp,) = _inexact(fp)
    ext = {}
    for name, v in (("left", left), ("right", right)):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"interp: the only string value of {name} is 'extrapolate', "
                             f"got {v!r}")
        ext[name] = isinstance(v, str)
    if period is not None:
        if len(shape_of(period)) != 0:
            raise ShapeError(f"interp: period must be a scalar, got shape {shape_of(period)}")
        period = uf.abs(period)
        x, xp = uf.remainder(x, period), uf.remainder(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = mp.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = mp.concatenate([fp[-1:], fp, fp[:1]])
    n = shape_of(xp)[0]
    i = uf.clip(searchsorted(xp, x, side="right"), 1, n - 1)
    x0, x1 = take(xp, i - 1), take(xp, i)
    f0, f1 = take(fp, i - 1), take(fp, i)
    dx = x1 - x0
    # a zero-width segment takes its left value (and keeps gradients finite)
    tiny = np.spacing(dtypes.finfo(dx.dtype).eps)
    flat = uf.less_equal(uf.abs(dx), tiny)
    f = uf.where(flat, f0, f0 + (x - x0) / uf.where(flat, 1, dx) * (f1 - f0))
    if not ext["left"] and period is None:
        f = uf.where(uf.less(x, xp[0]), fp[0] if left is None else left, f)
    if not ext["right"] and period is None:
        f = uf.where(uf.greater(x, xp[-1]), fp[-1] if right is None else right, f)
    return f


# ---------------------------------------------------------------- statistics


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    """The covariance matrix of the variables (rows, or columns if not rowvar),
    with optional integer frequency and real analytic weights."""
    from ._products import dot
    from .manipulation import atleast_2d
    if y is not None:
        m, y = _inexact(m, y)
        if len(shape_of(y)) > 2:
            raise ShapeError(f"cov: y has more than 2 dimensions (shape {shape_of(y)})")
    else:
        (m,) = _inexact(m)
    if len(shape_of(m)) > 2:
        raise ShapeError(f"cov: m has more than 2 dimensions (shape {shape_of(m)})")
    if dtype is not None and not dtypes.is_inexact(np.dtype(dtype)):
        raise ValueError(f"cov: dtype must be a float or complex dtype, got {dtype!r}")
    X = atleast_2d(m)
    if not rowvar and len(shape_of(m)) != 1:
        X = mp.transpose(X)
    if shape_of(X)[0] == 0:
        return cr.zeros((0, 0), dtypes.default_float())
    if y is not None:
        Y = atleast_2d(y)
        if not rowvar and shape_of(Y)[0] != 1:
            Y = mp.transpose(Y)
        X = mp.concatenate([X, Y], axis=0)
    nv, nobs = shape_of(X)
    if nobs == 0:
        return cr.full(() if nv == 1 else (nv, nv), np.nan, X.dtype)
    if ddof is None:
        ddof = 1 if not bias else 0
    w = None
    if fweights is not None:
        fw = asarray(fweights)
        if len(shape_of(fw)) > 1:
            raise ShapeError("cov: fweights must be 1-d")
        if shape_of(fw)[0] != nobs:
            raise ShapeError(f"cov: fweights has {shape_of(fw)[0]} entries for {nobs} "
                             "observations")
        if not dtypes.is_int(fw.dtype):
            raise TypeError(f"cov: fweights must be integers, got {fw.dtype}")
        w = uf.abs(fw)
    if aweights is not None:
        aw = asarray(aweights)
        if len(shape_of(aw)) > 1:
            raise ShapeError("cov: aweights must be 1-d")
        if shape_of(aw)[0] != nobs:
            raise ShapeError(f"cov: aweights has {shape_of(aw)[0]} entries for {nobs} "
                             "observations")
        aweights = uf.abs(aw)
        w = aweights if w is None else w * aweights
    if dtype is not None:
        X = X.astype(dtype)
        w = None if w is None else w.astype(dtype)
    if w is None:
        avg = rd.mean(X, axis=1)
        f = nobs - ddof
    else:
        avg, w_sum = rd.average(X, axis=1, weights=w, returned=True)
        w_sum = w_sum[0]
        if ddof == 0:
            f = w_sum
        elif aweights is None:
            f = w_sum - ddof
        else:
            f = w_sum - ddof * rd.sum(w * aweights) / w_sum
    X = X - avg[:, None]
    XT = mp.transpose(X if w is None else X * w).conj()    # X X^H for complex data
    return mp.squeeze(uf.true_divide(dot(X, XT), f))


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients (cov normalised by the std devs, clipped
    to [-1, 1]; complex ones part by part, as JAX)."""
    if dtype is not None and not dtypes.is_inexact(np.dtype(dtype)):
        raise ValueError(f"corrcoef: dtype must be a float or complex dtype, got {dtype!r}")
    c = cov(x, y, rowvar, dtype=dtype)
    if len(shape_of(c)) == 0:
        return uf.divide(c, c)
    sd = uf.sqrt(c.real.diagonal()).astype(c.dtype)
    c = c / sd[:, None] / sd[None, :]
    if dtypes.is_complex(c.dtype):
        return uf._complex(uf.clip(c.real, -1, 1), uf.clip(c.imag, -1, 1))
    return uf.clip(c, -1, 1)


# ------------------------------------------------------ finite differences


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of y along axis by the trapezoidal rule (sample points x, or
    the spacing dx)."""
    if x is None:
        (y,) = _inexact(y)
        d = asarray(dx)
        if len(shape_of(d)) > 0:
            d = mp.reshape(d, (1,) * (len(shape_of(y)) - len(shape_of(d))) + shape_of(d))
            d = mp.moveaxis(d, axis, -1)
    else:
        y, x = _inexact(y, x)
        d = mp.diff(x) if len(shape_of(x)) == 1 else mp.moveaxis(mp.diff(x, axis=axis), axis, -1)
    y = mp.moveaxis(y, axis, -1)
    if len(shape_of(d)) == 0 or shape_of(d)[-1] == 1:
        d0 = d if len(shape_of(d)) == 0 else d[..., 0]
        return d0 * (rd.sum(y, -1) - 0.5 * (y[..., 0] + y[..., -1]))
    return 0.5 * rd.sum(d * (y[..., 1:] + y[..., :-1]), -1)


def gradient(f, *varargs, axis=None, edge_order=None):
    """Central differences inside, one-sided at the edges (edge_order 1, the only
    one JAX has), along each axis; spacing: scalars or 1-d coordinates."""
    if edge_order not in (None, 1):
        raise NotImplementedError(f"gradient: edge_order={edge_order!r} is not supported "
                                  "(JAX computes first-order edges only); leave it out")
    a, *spacing = _inexact(f, *varargs)
    nd = len(shape_of(a))
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(canonical_axis(i, nd) for i in (axis if isinstance(axis, (tuple, list))
                                                     else (axis,)))
    if not axes:
        return []
    if min(shape_of(a)[i] for i in axes) < 2:
        raise ValueError(f"gradient: the array of shape {shape_of(a)} is too small: each "
                         "differentiated axis needs at least 2 elements")
    if not spacing:
        hs = [1.0] * len(axes)
    elif len(spacing) == 1:
        hs = spacing * len(axes)
    elif len(spacing) == len(axes):
        hs = spacing
    else:
        raise TypeError(f"gradient: {len(spacing)} spacing arguments for {len(axes)} axes; "
                        "give one for all or one per axis")

    def along(ax, h):
        def sl(v, lo, hi):
            return mp.slice_axis(v, ax, lo, hi)
        n = shape_of(a)[ax]
        first = sl(a, 1, 2) - sl(a, 0, 1)
        last = sl(a, n - 1, n) - sl(a, n - 2, n - 1)
        if len(shape_of(h)) == 0:
            inner = (sl(a, 2, n) - sl(a, 0, n - 2)) * 0.5 / h
            first, last = first / h, last / h
        elif len(shape_of(h)) == 1:
            if shape_of(h)[0] != n:
                raise ShapeError(f"gradient: a spacing array has length {shape_of(h)[0]}, "
                                 f"but axis {ax} has {n} elements")
            shape = [1] * nd
            shape[ax] = n
            h = mp.reshape(h, tuple(shape))
            first = first / (sl(h, 1, 2) - sl(h, 0, 1))
            last = last / (sl(h, n - 1, n) - sl(h, n - 2, n - 1))
            d1 = sl(h, 1, n - 1) - sl(h, 0, n - 2)
            d2 = sl(h, 2, n) - sl(h, 1, n - 1)
            inner = (-d2 / (d1 * (d1 + d2)) * sl(a, 0, n - 2)
                     + (d2 - d1) / (d1 * d2) * sl(a, 1, n - 1)
                     + d1 / (d2 * (d1 + d2)) * sl(a, 2, n))
        else:
            raise ShapeError(f"gradient: spacings must be scalars or 1-d, got shape "
                             f"{shape_of(h)}")
        return mp.concatenate([first, inner, last], axis=ax)

    out = [along(ax, h) for ax, h in zip(axes, hs)]
    return out[0] if len(axes) == 1 else out


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """p with jumps larger than discont (default period / 2) replaced by their
    period complement, accumulated along axis."""
    p, period = promote_dtypes(p, period)
    ax = canonical_axis(axis, len(shape_of(p)))
    if shape_of(p)[ax] == 0:
        return p
    if discont is None:
        discont = period / 2
    half = period // 2 if dtypes.is_int(p.dtype) else period / 2
    dd = mp.diff(p, axis=ax)
    ddmod = uf.remainder(dd + half, period) - half
    ddmod = uf.where(uf.logical_and(uf.equal(ddmod, -half), uf.greater(dd, 0)), half, ddmod)
    fix = uf.where(uf.less(uf.abs(dd), discont), 0, ddmod - dd)
    n = shape_of(p)[ax]
    rest = mp.slice_axis(p, ax, 1, n) + rd.cumsum(fix, axis=ax)
    return mp.concatenate([mp.slice_axis(p, ax, 0, 1), rest], axis=ax)


# ------------------------------------------------------------ nan- functions


def _no_out(out, name):
    if out is not None:
        raise NotImplementedError(f"jx.numpy.{name}: out= is not supported (jx arrays are "
                                  "immutable); use the returned array")


def _nanarg(a, axis, keepdims, out, name):
    _no_out(out, name)
    a = asarray(a)
    axis = None if axis is None else operator.index(axis)
    keepdims = bool(keepdims)
    big = name == "nanargmin"
    pick = rd.argmin if big else rd.argmax
    if not dtypes.is_float(a.dtype):
        return pick(a, axis=axis, keepdims=keepdims)
    nan = uf.isnan(a)
    res = pick(uf.where(nan, np.inf if big else -np.inf, a), axis=axis, keepdims=keepdims)
    return uf.where(rd.all(nan, axis=axis, keepdims=keepdims), -1, res)


def nanargmax(a, axis=None, out=None, keepdims=None):
    """argmax ignoring NaNs (-1 where a slice is all NaN)."""
    return _nanarg(a, axis, keepdims, out, "nanargmax")


def nanargmin(a, axis=None, out=None, keepdims=None):
    """argmin ignoring NaNs (-1 where a slice is all NaN)."""
    return _nanarg(a, axis, keepdims, out, "nanargmin")


def _nancumulative(a, axis, dtype, out, name, fill, fn):
    _no_out(out, name)
    a = asarray(a)
    if dtypes.is_inexact(a.dtype):
        a = uf.where(uf.isnan(a), fill, a)
    return fn(a, axis=axis, dtype=dtype)


def nancumsum(a, axis=None, dtype=None, out=None):
    """cumsum with NaNs counted as 0."""
    return _nancumulative(a, axis, dtype, out, "nancumsum", 0, rd.cumsum)


def nancumprod(a, axis=None, dtype=None, out=None):
    """cumprod with NaNs counted as 1."""
    return _nancumulative(a, axis, dtype, out, "nancumprod", 1, rd.cumprod)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
           mean=None):
    """var over the non-NaN entries (NaN where no more than ddof remain)."""
    _no_out(out, "nanvar")
    (x,) = _inexact(a)
    result = dtypes.canonicalize(dtype, "nanvar") if dtype is not None else x.dtype
    comp = dtypes.float32 if dtypes.is_half(result) else result
    x = x.astype(comp)
    nan = uf.isnan(x)
    keep = uf.logical_not(nan)
    if where is not None:
        keep = uf.logical_and(keep, where)
    count = rd.sum(keep, axis=axis, keepdims=True)
    if mean is None:
        mu = rd.sum(uf.where(keep, x, 0), axis=axis, keepdims=True) / count.astype(comp)
    else:
        mu = asarray(mean).astype(comp)
    centered = uf.where(keep, x - mu, 0)       # where before squaring: finite gradients
    n = rd.sum(keep, axis=axis, keepdims=keepdims) - ddof
    if dtypes.is_complex(comp):     # |x - mean|^2: real, as var
        centered = uf.add(uf.square(centered.real), uf.square(centered.imag))
        comp, result = dtypes.real_dtype(comp), dtypes.real_dtype(result)
    else:
        centered = uf.square(centered)
    total = rd.sum(centered, axis=axis, keepdims=keepdims)
    bad = uf.less_equal(n, 0)
    out = uf.where(bad, np.nan, total / uf.where(bad, 1, n).astype(comp))
    return out.astype(result)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
           mean=None):
    """std over the non-NaN entries."""
    return uf.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where, mean))


# ------------------------------------------------------------ partitioning


def _prep_partition(a, kth, axis, name):
    a = asarray(a)
    nd = len(shape_of(a))
    if nd == 0:
        raise ShapeError(f"{name}: a must be at least 1-d")
    ax = canonical_axis(axis, nd)
    n = shape_of(a)[ax]
    k = _static_int(kth, f"{name}: kth")
    if not -n <= k < n:
        raise ValueError(f"{name}: kth={kth} is out of bounds for an axis of length {n}")
    return mp.moveaxis(a, ax, -1), ax, k % n, n


def partition(a, kth, axis=-1):
    """a with the kth smallest value at kth along axis, the smaller ones sorted
    before it and the larger ones after it (in descending order, as JAX's)."""
    from .sorting import sort
    x, ax, k, n = _prep_partition(a, kth, axis, "partition")
    s = sort(x, axis=-1)
    out = mp.concatenate([s[..., :k + 1], mp.flip(s[..., k + 1:], -1)], axis=-1)
    return mp.moveaxis(out, -1, ax)


def argpartition(a, kth, axis=-1):
    """Indices that partition a: those of the kth + 1 smallest values (in value
    order), then the rest in index order, as JAX's."""
    from .sorting import argsort
    x, ax, k, n = _prep_partition(a, kth, axis, "argpartition")
    order = argsort(x, axis=-1, stable=True)
    rank = argsort(order, axis=-1, stable=True)
    rest = argsort(uf.less_equal(rank, k), axis=-1, stable=True)    # unpicked, in order
    out = mp.concatenate([order[..., :k + 1], rest[..., :n - k - 1]], axis=-1)
    return mp.moveaxis(out, -1, ax).astype(dtypes.int32)     # top_k's int32, as JAX


# -------------------------------------------------------------- products


def matvec(x1, x2, /):
    """Matrix-vector products over the broadcast leading dims: (..., n, m) and
    (..., m) give (..., n)."""
    from ._products import matmul
    s1, s2 = shape_of(x1), shape_of(x2)
    if len(s1) < 2 or len(s2) < 1:
        raise ShapeError(f"matvec: needs a matrix (..., n, m) and a vector (..., m), got "
                         f"shapes {s1} and {s2}")
    return matmul(x1, mp.expand_dims(asarray(x2), -1))[..., 0]


def vecmat(x1, x2, /):
    """Vector-matrix products over the broadcast leading dims: (..., n) and
    (..., n, m) give (..., m); the vector is conjugated (as JAX)."""
    from ._products import matmul
    x1 = asarray(x1).conj()
    s1, s2 = shape_of(x1), shape_of(x2)
    if len(s1) < 1 or len(s2) < 2:
        raise ShapeError(f"vecmat: needs a vector (..., n) and a matrix (..., n, m), got "
                         f"shapes {s1} and {s2}")
    return matmul(mp.expand_dims(asarray(x1), -2), x2)[..., 0, :]


# ------------------------------------------------------------------ windows


def _window(M, name):
    if has_tracer(M):
        raise TypeError(f"{name}: M must be a static int (the window length), not traced")
    M = int(M)
    dt = dtypes.default_float()
    return M, dt, cr.arange(M, dtype=dt)


def bartlett(M):
    """The triangular window of M points."""
    M, dt, n = _window(M, "bartlett")
    if M <= 1:
        return cr.ones((max(M, 0),), dt)
    return 1 - uf.abs(2 * n + 1 - M) / (M - 1)


def blackman(M):
    """The Blackman window of M points."""
    M, dt, n = _window(M, "blackman")
    if M <= 1:
        return cr.ones((max(M, 0),), dt)
    t = 2 * np.pi * n / (M - 1)
    return 0.42 - 0.5 * uf.cos(t) + 0.08 * uf.cos(2 * t)


def hamming(M):
    """The Hamming window of M points."""
    M, dt, n = _window(M, "hamming")
    if M <= 1:
        return cr.ones((max(M, 0),), dt)
    return 0.54 - 0.46 * uf.cos(2 * np.pi * n / (M - 1))


def hanning(M):
    """The Hann window of M points."""
    M, dt, n = _window(M, "hanning")
    if M <= 1:
        return cr.ones((max(M, 0),), dt)
    return 0.5 - 0.5 * uf.cos(2 * np.pi * n / (M - 1))


def kaiser(M, beta):
    """The Kaiser window of M points with shape parameter beta."""
    from ._mathfuncs import i0
    M, dt, n = _window(M, "kaiser")
    if M <= 1:
        return cr.ones((max(M, 0),), dt)
    alpha = 0.5 * (M - 1)
    return i0(beta * uf.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)


__all__ = ["bincount", "histogram_bin_edges", "histogram", "histogramdd", "histogram2d",
           "digitize", "interp", "cov", "corrcoef", "trapezoid",
           "gradient", "unwrap", "nanargmax", "nanargmin", "nancumsum", "nancumprod", "nanvar",
           "nanstd", "partition", "argpartition", "matvec", "vecmat", "bartlett", "blackman",
           "hamming", "hanning", "kaiser"]
_wrap_public(globals(), __all__)

from ._mathfuncs import *  # noqa: E402,F401,F403  (gcd, frexp, sinc, i0, bit counts, ...)
from ._mathfuncs import __all__ as _math_all  # noqa: E402
from ._polynomials import *  # noqa: E402,F401,F403  (convolve, correlate, polyval, ...)
from ._polynomials import __all__ as _poly_all  # noqa: E402
from ._setops import *  # noqa: E402,F401,F403  (isin, intersect1d, ...)
from ._setops import __all__ as _set_all  # noqa: E402

__all__ = __all__ + _math_all + _poly_all + _set_all
