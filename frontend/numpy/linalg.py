"""Products: dot, matmul, tensordot, einsum, outer, inner, vdot — all dot_general."""
from __future__ import annotations

from ..errors import ShapeError
from ..prims import linalg as la
from ..prims import reductions as rd
from ._util import bind1, broadcast_shapes, broadcast_to, canonical_axis, promote_dtypes, \
    shape_of
from .manipulation import ravel, reshape, transpose


def _dot_general(a, b, contract, batch=((), ())):
    return bind1(la.dot_general, a, b, dimension_numbers=(tuple(map(tuple, contract)),
                                                          tuple(map(tuple, batch))))


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


def inner(a, b):
    a, b = promote_dtypes(a, b)
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        from .ufuncs import multiply
        return multiply(a, b)
    return _dot_general(a, b, ((len(sa) - 1,), (len(sb) - 1,)))


def vdot(a, b):
    return dot(ravel(a), ravel(b))


def einsum(subscripts: str, *operands):
    """Einstein summation by pairwise dot_general, left to right.

    Indices repeated inside one operand (traces/diagonals) are not supported.
    """
    ops = promote_dtypes(*operands)
    subscripts = subscripts.replace(" ", "")
    if "..." in subscripts:
        raise NotImplementedError("jx.numpy.einsum does not support '...' yet; "
                                  "write the batch indices out")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
    else:
        ins = subscripts
        letters = ins.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = ins.split(",")
    if len(terms) != len(ops):
        raise ShapeError(f"einsum: {len(terms)} subscripts for {len(ops)} operands")
    for t, x in zip(terms, ops):
        if len(t) != len(shape_of(x)):
            raise ShapeError(f"einsum: subscript {t!r} does not match operand {shape_of(x)}")
        if len(set(t)) != len(t):
            raise NotImplementedError(f"einsum: repeated index in {t!r} (diagonal) is not "
                                      "supported")
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


def _sum_unused(x, t, others, out):
    """Sum away indices that appear nowhere else and not in the output."""
    elsewhere = set("".join(others)) | set(out)
    gone = [i for i, c in enumerate(t) if c not in elsewhere]
    if not gone:
        return x, t
    x = bind1(rd.reduce_sum, x, axes=tuple(gone))
    return x, "".join(c for c in t if c in elsewhere)




__all__ = [n for n, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__ and n[0] != "_"]
