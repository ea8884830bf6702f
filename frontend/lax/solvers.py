"""custom_linear_solve and custom_root: solvers differentiated implicitly, as
jax.lax's, never through the solver's own iterations.

x = solve(matvec, b) solves A x = b. Its tangent is A^-1 (db - dA x), computed by
`solve` again; its cotangent runs `transpose_solve` on A's transpose. A root x of
f(x, theta) = 0 moves by dx = -(df/dx)^-1 (df/dtheta dtheta), computed by
`tangent_solve` with the linearised f. Derivatives flow to b and to what matvec
(or f) closes over; the solvers' own closures are constants, as in JAX.

Every user function is traced once at the call (closure-converted: the traced
values it closes over become explicit operands), so the derivative rules, which
run after that trace, call graphs and never a stale closure.

The rules need jvp and vjp of the user's functions, and jx's transformations sit
above jx.lax: the API layer registers them in AUTODIFF (the module jx.transforms,
or anything with its jvp(f, primals, tangents) and vjp(f, *primals)).
"""
from __future__ import annotations

from typing import Callable

from .. import tree
from ..core import trace
from ..errors import JxError
from ..interpret import eval_graph
from ..numpy._util import as_value
from . import ops

# set by the API layer when jx.transforms loads; read by the derivative rules (and
# at a call, to trace transpose_solve and tangent_solve, which need it)
AUTODIFF = None


def _autodiff(what: str):
    if AUTODIFF is None:
        raise JxError(f"jx.lax.{what}: its derivative needs jx's jvp/vjp, which register in "
                      "jx.lax.solvers.AUTODIFF when jx.transforms loads")
    return AUTODIFF


def _avals(leaves) -> list:
    """The leaves' avals, weak types kept (a solver started from 1.0 gives a weak
    solution, as in JAX)."""
    from ..api import leaf_aval
    from ..numpy._util import dtype_weak
    return [leaf_aval(x).update(weak_type=dtype_weak(x)[1]) for x in leaves]


class _Closed:
    """fn traced on flat inputs, returning a flat list: the traced values it closes
    over become explicit `consts`, passed back at each call."""

    def __init__(self, fn: Callable, in_avals, what: str):
        self.graph, consts = trace(lambda *xs: [as_value(v) for v in fn(*xs)], in_avals,
                                   name=what)
        self.consts = tuple(consts)

    def __call__(self, consts, *xs) -> list:
        return eval_graph(self.graph, *consts, *xs)


class _UserMap:
    """A user's function of one pytree (matvec, f) closed over flat leaves: `avals`
    of the argument's leaves, `unflat`, the closed function (`closed`, its consts'
    avals `const_avals`) and `at(consts)`, the pytree function again."""

    def __init__(self, fn: Callable, like, who: str, name: str, like_name: str):
        leaves, self.tree = tree.flatten(like)
        self.leaves = [as_value(v) for v in leaves]
        self.avals = _avals(self.leaves)

        def flat(*x):
            out_leaves, out_tree = tree.flatten(fn(self.unflat(x)))
            if out_tree != self.tree:
                raise JxError(f"jx.lax.{who}: {name} must return a pytree like {like_name} "
                              f"({self.tree}), got {out_tree}")
            return out_leaves
        self.closed = _Closed(flat, self.avals, name)
        self.n_consts = len(self.closed.consts)
        self.const_avals = [v.aval for v in self.closed.graph.inputs[:self.n_consts]]

    def unflat(self, xs):
        return tree.unflatten(self.tree, list(xs))

    def at(self, consts):
        return lambda x: self.unflat(self.closed(consts, *tree.flatten(x)[0]))


def _zeros_like(v):
    from .. import numpy as jnp
    return jnp.zeros_like(v)


class _Solution:
    """A solver's output checked and flattened: solution leaves, then aux leaves."""

    def __init__(self, has_aux: bool, like_tree, what: str, like: str):
        self.has_aux, self.like_tree, self.what, self.like = has_aux, like_tree, what, like
        self.aux_tree = None

    def __call__(self, out) -> list:
        aux = None
        if self.has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise JxError(f"jx.lax.{self.what}: with has_aux=True, solve must return "
                              "(solution, aux)")
            out, aux = out
        x_leaves, x_tree = tree.flatten(out)
        if x_tree != self.like_tree:
            raise JxError(f"jx.lax.{self.what}: solve must return a pytree like {self.like} "
                          f"({self.like_tree}), got {x_tree}")
        aux_leaves, self.aux_tree = tree.flatten(aux)
        return list(x_leaves) + list(aux_leaves)

    def result(self, out, closed: "_Closed", n: int):
        # the solver's own weak types (re-evaluating its graph may drop them)
        from .extras import _reweak
        out = [_reweak(v, a.aval.weak_type) for v, a in zip(out, closed.graph.outputs)]
        x = tree.unflatten(self.like_tree, list(out[:n]))
        return (x, tree.unflatten(self.aux_tree, list(out[n:]))) if self.has_aux else x


def _linear_map(apply: Callable, transpose: Callable):
    """A linear map on flat lists of arrays, whose tangent is itself and whose
    cotangent is transpose(ct): a custom_jvp (forward mode) over a custom_vjp
    (reverse mode), so neither differentiates `apply`'s own operations."""
    from ..custom import custom_jvp, custom_vjp

    @custom_vjp
    def lin(r):
        return apply(list(r))
    lin.defvjp(lambda r: (apply(list(r)), None), lambda _, ct: (tuple(transpose(list(ct))),))

    @custom_jvp
    def mapped(r):
        return apply(list(r))

    @mapped.defjvp
    def _jvp(primals, tangents):
        return apply(list(primals[0])), lin(tuple(tangents[0]))
    return lambda r: mapped(tuple(r))


# ---------------------------------------------------------------- custom_linear_solve

def custom_linear_solve(matvec: Callable, b, solve: Callable, transpose_solve=None,
                        symmetric: bool = False, has_aux: bool = False):
    """x = solve(matvec, b), the solution of matvec(x) = b (b and x pytrees of one
    structure), with implicit derivatives: tangents through solve, cotangents
    through transpose_solve(vecmat, ct) (solve itself when symmetric)."""
    from ..custom import custom_jvp
    um = _UserMap(matvec, b, "custom_linear_solve", "matvec", "b")
    b_leaves, b_tree, avals, nb = um.leaves, um.tree, um.avals, len(um.leaves)
    unflat, mv, nm, m_avals, matvec_at = um.unflat, um.closed, um.n_consts, \
        um.const_avals, um.at
    solution = _Solution(has_aux, b_tree, "custom_linear_solve", "b")
    sv = _Closed(lambda *a: solution(solve(matvec_at(a[:nm]), unflat(a[nm:]))),
                 m_avals + avals, "solve")
    tv = None
    if not symmetric and transpose_solve is not None and AUTODIFF is not None:
        def transposed(*a):     # transpose_solve given vecmat, matvec's transpose
            zero = unflat([_zeros_like(v) for v in a[nm:]])
            _, pullback = AUTODIFF.vjp(matvec_at(a[:nm]), zero)
            out = transpose_solve(lambda y: pullback(y)[0], unflat(a[nm:]))
            return tree.flatten(out)[0]
        tv = _Closed(transposed, m_avals + avals, "transpose_solve")

    def run(mc, sc, bs):
        return sv(sc, *mc, *bs)

    def transpose_run(mc, sc, tc, ct):
        if symmetric:
            return run(mc, sc, ct)[:nb]
        if transpose_solve is None:
            raise JxError("jx.lax.custom_linear_solve: reverse-mode differentiation needs "
                          "transpose_solve (or symmetric=True)")
        if tv is None:
            _autodiff("custom_linear_solve")
        return tv(tc, *mc, *ct)

    @custom_jvp
    def solved(mc, sc, tc, bs):
        return run(mc, sc, bs)

    @solved.defjvp
    def _solved_jvp(primals, tangents):
        mc, sc, tc, bs = (list(p) for p in primals)
        dmc, db = list(tangents[0]), list(tangents[3])
        out = run(mc, sc, bs)
        rhs = db
        if mc:            # what matvec closes over moves A: rhs = db - dA x
            x = unflat(out[:nb])
            _, dax = _autodiff("custom_linear_solve").jvp(
                lambda *c: matvec_at(list(c))(x), tuple(mc), tuple(dmc))
            rhs = [ops.sub(d, a) for d, a in zip(db, tree.flatten(dax)[0])]
        dx = _linear_map(lambda r: run(mc, sc, r)[:nb],
                         lambda ct: transpose_run(mc, sc, tc, ct))(rhs)
        return out, list(dx) + [_zeros_like(v) for v in out[nb:]]

    out = solved(mv.consts, sv.consts, () if tv is None else tv.consts, tuple(b_leaves))
    return solution.result(out, sv, nb)


# ---------------------------------------------------------------- custom_root

def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):
    """solve(f, initial_guess), a root of f (x -> pytree like x), differentiated
    implicitly: the solution's tangent is -tangent_solve(g, df/dtheta dtheta) with
    g the linearisation of f in x at the solution (tangent_solve(g, y) solves
    g(x) = y and must be linear in y)."""
    from ..custom import custom_jvp
    uf = _UserMap(f, initial_guess, "custom_root", "f", "initial_guess")
    g_leaves, g_tree, avals, n = uf.leaves, uf.tree, uf.avals, len(uf.leaves)
    unflat, fv, nf, f_avals, f_at = uf.unflat, uf.closed, uf.n_consts, uf.const_avals, uf.at
    solution = _Solution(has_aux, g_tree, "custom_root", "initial_guess")
    sv = _Closed(lambda *a: solution(solve(f_at(a[:nf]), unflat(a[nf:]))), f_avals + avals,
                 "solve")
    tv = None
    if nf and AUTODIFF is not None:
        def tangent(*a):        # tangent_solve(g, y), g = d f / d x at the solution x
            fc, x, y = a[:nf], unflat(a[nf:nf + n]), unflat(a[nf + n:])

            def g(v):
                return AUTODIFF.jvp(f_at(fc), (x,), (v,))[1]
            return tree.flatten(tangent_solve(g, y))[0]
        tv = _Closed(tangent, f_avals + avals + avals, "tangent_solve")

    @custom_jvp
    def root(fc, sc, tc, guess):
        return sv(sc, *fc, *guess)

    @root.defjvp
    def _root_jvp(primals, tangents):
        fc, sc, tc, guess = (list(p) for p in primals)
        out = sv(sc, *fc, *guess)
        daux = [_zeros_like(v) for v in out[n:]]
        if not fc:        # f closes over nothing traced: the root does not move
            return out, [_zeros_like(v) for v in out[:n]] + daux
        ad = _autodiff("custom_root")
        x = unflat(out[:n])
        _, rhs = ad.jvp(lambda *c: f_at(list(c))(x), tuple(fc), tuple(tangents[0]))
        dx = tv(tc, *fc, *out[:n], *tree.flatten(rhs)[0])
        return out, [ops.neg(v) for v in dx] + daux

    out = root(fv.consts, sv.consts, () if tv is None else tv.consts, tuple(g_leaves))
    return solution.result(out, sv, n)


__all__ = ["custom_linear_solve", "custom_root"]
