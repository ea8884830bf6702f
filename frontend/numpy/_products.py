"""Products: dot, matmul, tensordot, einsum, outer, inner, vdot — all dot_general.

(The implementation behind jx.numpy's products and jx.numpy.linalg's; internal.)
precision= is accepted and ignored (every backend computes at the dtype's own
precision); preferred_element_type= sets the result dtype as JAX's does."""
from __future__ import annotations

from .. import dtypes
from ..errors import ShapeError
from ..prims import elementwise as ew
from ..prims import linalg as la
from ..prims import reductions as rd
from .creation import _wrap_public, asarray
from ._util import bind1, broadcast_shapes, broadcast_to, canonical_axis, convert, \
    promote_dtypes, shape_of
from .manipulation import ravel, reshape, transpose


def _dot_general(a, b, contract, batch=((), ())):
    dn = (tuple(map(tuple, contract)), tuple(map(tuple, batch)))
    if a.dtype == dtypes.bool_:     # as JAX: a bool product is the "or" of the "and"s
        from .ufuncs import not_equal
        a, b = (convert(v, dtypes.default_int(), [a, b]) for v in (a, b))
        return not_equal(bind1(la.dot_general, a, b, dimension_numbers=dn), 0)
    return bind1(la.dot_general, a, b, dimension_numbers=dn)


def _with_preferred(fn):
    """Accept JAX's precision= and preferred_element_type= keywords. A preferred
    type at least as wide as the operands' is the accumulation type (the
    operands are widened first, so int8 products sum in int32 as in JAX);
    a narrower one rounds the result."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, precision=None, preferred_element_type=None, **kwargs):
        if preferred_element_type is None:
            return fn(*args, **kwargs)
        want = dtypes.canonicalize(preferred_element_type, fn.__name__)
        # the operands: einsum's follow its subscripts, the others' are the first two
        first, last = (1, len(args)) if fn.__name__ == "einsum" else (0, 2)
        ops = promote_dtypes(*args[first:last])
        if dtypes.result_type((ops[0].dtype, False), (want, False))[0] == want:
            ops = [convert(v, want) for v in ops]
        return convert(fn(*args[:first], *ops, *args[last:], **kwargs), want)
    return wrapper


@_with_preferred
def matmul(a, b):
    a, b = promote_dtypes(a, b)
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise ShapeError("matmul: operands must be at least 1-d (use multiply for scalars)")
    a1, b1 = len(sa) == 1, len(sb) == 1
    if a1:
        a, sa = reshape(a, (1,) + sa), (1,) + sa
    if b1:
        b, sb = reshape(b, sb + (1,)), sb + (1,)
    if sa[-1] != sb[-2]:
        raise ShapeError(f"matmul: contraction dims differ: {sa} @ {sb}")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    a = broadcast_to(a, batch + sa[-2:], [b])
    b = broadcast_to(b, batch + sb[-2:], [a])
    nb = len(batch)
    out = _dot_general(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    shape = batch + (() if a1 else (sa[-2],)) + (() if b1 else (sb[-1],))
    return reshape(out, shape)


@_with_preferred
def tensordot(a, b, axes=2):
    a, b = promote_dtypes(a, b)
    na, nb = len(shape_of(a)), len(shape_of(b))
    if isinstance(axes, int):
        ca, cb = tuple(range(na - axes, na)), tuple(range(axes))
    else:
        ca, cb = axes
        ca = (ca,) if isinstance(ca, int) else tuple(ca)
        cb = (cb,) if isinstance(cb, int) else tuple(cb)
    ca = tuple(canonical_axis(i, na) for i in ca)
    cb = tuple(canonical_axis(i, nb) for i in cb)
    return _dot_general(a, b, (ca, cb))


@_with_preferred
def dot(a, b):
    a, b = promote_dtypes(a, b)
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        from .ufuncs import multiply
        return multiply(a, b)
    if len(sb) == 1:
        return _dot_general(a, b, ((len(sa) - 1,), (0,)))
    return _dot_general(a, b, ((len(sa) - 1,), (len(sb) - 2,)))


def outer(a, b):
    from .ufuncs import multiply
    a, b = ravel(a), ravel(b)
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


@_with_preferred
def inner(a, b):
    a, b = promote_dtypes(a, b)
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        from .ufuncs import multiply
        return multiply(a, b)
    return _dot_general(a, b, ((len(sa) - 1,), (len(sb) - 1,)))


def _conjugate(x):
    """x conjugated; a real array as it is (jnp.conjugate, without importing
    _standard, which imports this module)."""
    v = asarray(x)
    return bind1(ew.conj, v) if dtypes.is_complex(v.dtype) else v


@_with_preferred
def vdot(a, b):
    """The dot product of the flattened arrays, a conjugated first (as NumPy)."""
    return dot(ravel(_conjugate(a)), ravel(b))


@_with_preferred
def einsum(subscripts: str, *operands):
    """Einstein summation by pairwise dot_general, left to right.

    Indices repeated inside one operand (traces/diagonals) are not supported.
    """
    ops = promote_dtypes(*operands)
    subscripts = subscripts.replace(" ", "")
    ins, out = subscripts.split("->") if "->" in subscripts else (subscripts, None)
    terms = ins.split(",")
    if len(terms) != len(ops):
        raise ShapeError(f"einsum: {len(terms)} subscripts for {len(ops)} operands")
    ops, terms, ell = _expand_ellipsis(ops, terms, subscripts)
    if out is None:   # implicit output: broadcast dims, then indices seen once, sorted
        letters = "".join(terms)
        out = ell + "".join(sorted(c for c in set(letters)
                                   if letters.count(c) == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
        missing = set(out) - set("".join(terms))
        if missing:
            raise ShapeError(f"einsum: output indices {sorted(missing)} appear in no input")
    for i, (t, x) in enumerate(zip(terms, ops)):
        if len(t) != len(shape_of(x)):
            raise ShapeError(f"einsum: subscript {t!r} does not match operand {shape_of(x)}")
        ops[i], terms[i] = _take_diagonals(x, t)
    cur, cur_t = _sum_unused(ops[0], terms[0], terms[1:], out)
    for i in range(1, len(ops)):
        x, t = _sum_unused(ops[i], terms[i], [cur_t] + terms[i + 1:], out)
        keep = set(out) | set("".join(terms[i + 1:]))
        batch = [c for c in cur_t if c in t and c in keep]
        contract = [c for c in cur_t if c in t and c not in keep]
        cur = _dot_general(cur, x, ([cur_t.index(c) for c in contract],
                                    [t.index(c) for c in contract]),
                           ([cur_t.index(c) for c in batch], [t.index(c) for c in batch]))
        cur_t = "".join(batch + [c for c in cur_t if c not in t] +
                        [c for c in t if c not in cur_t])
    cur, cur_t = _sum_unused(cur, cur_t, [], out)
    return transpose(cur, [cur_t.index(c) for c in out]) if cur_t != out else cur


def _expand_ellipsis(ops, terms, subscripts):
    """'...' becomes fresh letters; those dims broadcast across the operands first."""
    if "..." not in subscripts:
        return ops, terms, ""
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
            if c not in subscripts]
    ranks = [len(shape_of(x)) - (len(t) - 3) for x, t in zip(ops, terms) if "..." in t]
    if min(ranks) < 0:
        raise ShapeError(f"einsum: {subscripts!r} names more dims than an operand has")
    ell = "".join(free[:max(ranks)])
    eshapes = [shape_of(x)[t.index("..."):t.index("...") + len(shape_of(x)) - len(t) + 3]
               for x, t in zip(ops, terms) if "..." in t]
    bshape = broadcast_shapes(*eshapes)
    new_ops, new_terms = [], []
    for x, t in zip(ops, terms):
        if "..." in t:
            i, k = t.index("..."), len(shape_of(x)) - len(t) + 3
            sx = shape_of(x)
            x = broadcast_to(x, sx[:i] + bshape[len(bshape) - k:] + sx[i + k:])
            t = t.replace("...", ell[len(ell) - k:])
        new_ops.append(x)
        new_terms.append(t)
    return new_ops, new_terms, ell


def _take_diagonals(x, t):
    """An index repeated inside one operand ('ii') reads its diagonal."""
    from .manipulation import diagonal
    for c in t:
        while t.count(c) > 1:
            p = t.index(c)
            q = t.index(c, p + 1)
            x = diagonal(x, 0, p, q)   # the diagonal becomes the last axis
            t = "".join(ch for i, ch in enumerate(t) if i not in (p, q)) + c
    return x, t


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    from .manipulation import diagonal
    from .reductions import sum
    return sum(diagonal(a, offset, axis1, axis2), -1, dtype)


def cross(a, b, axis=-1):
    """Cross product of 3-vectors (or 2-vectors, giving the z component) along axis."""
    from .manipulation import moveaxis, slice_axis, stack
    from .ufuncs import multiply, subtract
    x, y = promote_dtypes(a, b)
    x, y = moveaxis(x, axis, -1), moveaxis(y, axis, -1)
    n, m = shape_of(x)[-1], shape_of(y)[-1]
    if n not in (2, 3) or m not in (2, 3):
        raise ShapeError(f"cross: vectors must have 2 or 3 components, got {n} and {m}")
    xs = [slice_axis(x, len(shape_of(x)) - 1, i, i + 1) for i in range(n)]
    ys = [slice_axis(y, len(shape_of(y)) - 1, i, i + 1) for i in range(m)]
    x0, x1, y0, y1 = xs[0], xs[1], ys[0], ys[1]
    z = subtract(multiply(x0, y1), multiply(x1, y0))
    if n == m == 2:
        return reshape(z, shape_of(z)[:-1])
    x2 = xs[2] if n == 3 else 0
    y2 = ys[2] if m == 3 else 0
    comps = [subtract(multiply(x1, y2), multiply(x2, y1)),
             subtract(multiply(x2, y0), multiply(x0, y2)), z]
    out = stack([reshape(c, shape_of(c)[:-1]) for c in
                 [broadcast_to(c, shape_of(z), [x, y]) for c in comps]], axis=-1)
    return moveaxis(out, -1, axis)


def kron(a, b):
    """Interleave the dims of a and b (each factor gets a size-1 partner), multiply."""
    from .ufuncs import multiply
    x, y = promote_dtypes(a, b)
    sa, sb = shape_of(x), shape_of(y)
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + tuple(sa), (1,) * (nd - len(sb)) + tuple(sb)
    xa = reshape(x, sum(((d, 1) for d in sa), ()))
    yb = reshape(y, sum(((1, d) for d in sb), ()))
    return reshape(multiply(xa, yb), tuple(p * q for p, q in zip(sa, sb)))


@_with_preferred
def vecdot(x1, x2, /, *, axis=-1):
    """Dot products along axis of the broadcast operands, x1 conjugated."""
    from .manipulation import moveaxis
    a, b = promote_dtypes(x1, x2)
    a = _conjugate(a)
    shape = broadcast_shapes(shape_of(a), shape_of(b))
    if not shape:
        raise ShapeError("vecdot: operands must be at least 1-d")
    ax = canonical_axis(axis, len(shape))
    a, b = broadcast_to(a, shape, [b]), broadcast_to(b, shape, [a])
    a, b = moveaxis(a, ax, -1), moveaxis(b, ax, -1)
    nb = len(shape) - 1
    return _dot_general(a, b, ((nb,), (nb,)), (tuple(range(nb)), tuple(range(nb))))


def _sum_unused(x, t, others, out):
    """Sum away indices that appear nowhere else and not in the output."""
    elsewhere = set("".join(others)) | set(out)
    gone = [i for i, c in enumerate(t) if c not in elsewhere]
    if not gone:
        return x, t
    # a sum of bools is their "or" (JAX's einsum on bools), the max
    x = bind1(rd.reduce_max if x.dtype == dtypes.bool_ else rd.reduce_sum, x, axes=tuple(gone))
    return x, "".join(c for c in t if c in elsewhere)




__all__ = [n for n, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__ and n[0] != "_"]
_wrap_public(globals(), __all__)
