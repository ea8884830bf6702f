"""The public transformations: jvp, linearize, vjp, grad, value_and_grad,
jacfwd, jacrev, hessian, vmap.

Each traces the user function to a Graph and runs the matching pass over it
(jx.passes). The passes walk graphs on values, so the same code runs eagerly on
NumPy arrays and, on tracers, stages into an enclosing trace: every
composition (grad of grad, vmap of grad, jit of either) is just nesting.
"""
from __future__ import annotations

import functools
import sys
from typing import Callable, Sequence

import numpy as np

from . import dtypes, tree
from .core import get_aval
from .errors import JxError
from .numpy._util import canonical_value

# JAX's dtype for the (empty) cotangents of integer inputs.
float0 = np.dtype([("float0", np.void, 0)])


def _argnums(argnums) -> tuple:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _canonical(args):
    """NumPy data in the mode's dtypes (float64 is float32 with x64 off), as jit
    and every jx.numpy function take it: a derivative is of the function JAX runs."""
    return tree.tree_map(canonical_value, args)


def _float0_zeros(x):
    return np.zeros(get_aval(x).shape, float0)


class DerivativeTypeError(JxError, TypeError):
    """A value whose dtype the derivative asked for does not take (JAX's TypeError)."""


_HOLOMORPHIC_HINT = ("For holomorphic differentiation, pass holomorphic=True. For "
                     "differentiation of non-holomorphic functions involving complex "
                     "{what}, use jx.{fn} directly.")


def _check_rev_input(name, holomorphic, x, i):
    """grad and jacrev take float or complex inputs; holomorphic=True complex ones."""
    a = get_aval(x)
    if holomorphic and not dtypes.is_complex(a.dtype):
        raise DerivativeTypeError(f"{name} with holomorphic=True requires inputs with complex "
                                  f"dtype, but got {a.dtype.name} (argument {i}).")
    if not dtypes.is_inexact(a.dtype):
        raise DerivativeTypeError(
            f"{name} requires real- or complex-valued inputs (float or complex dtype); "
            f"argument {i} has {a}. Convert it with astype(float32) or exclude it from "
            "argnums.")


def _check_rev_output(name, holomorphic, a):
    """grad and jacrev need real outputs, or complex ones with holomorphic=True."""
    if holomorphic:
        if not dtypes.is_complex(a.dtype):
            raise DerivativeTypeError(f"{name} with holomorphic=True requires outputs with "
                                      f"complex dtype, but got {a.dtype.name}.")
    elif dtypes.is_complex(a.dtype):
        raise DerivativeTypeError(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {a.dtype.name}. "
            + _HOLOMORPHIC_HINT.format(what="outputs", fn="vjp"))
    elif not dtypes.is_float(a.dtype):
        raise DerivativeTypeError(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {a.dtype.name}; convert the output with astype(float32)")


# ------------------------------------------------------------------ forward mode

def jvp(f: Callable, primals: Sequence, tangents: Sequence) -> tuple:
    """(f(*primals), the directional derivative of f at primals along tangents)."""
    from jx.passes.jvp import jvp_function
    primals, tangents = _canonical(tuple(primals)), _canonical(tuple(tangents))
    p_leaves, p_tree = tree.flatten(primals)
    try:
        t_leaves = tree.flatten_up_to(p_tree, tangents)
    except ValueError as e:
        raise JxError(f"jvp: tangents must have the structure of primals ({e})") from None
    for p, t in zip(p_leaves, t_leaves):
        pa, ta = get_aval(p), get_aval(t)
        if dtypes.is_inexact(pa.dtype) and (pa.shape != ta.shape or pa.dtype != ta.dtype):
            raise DerivativeTypeError(f"jvp: tangent {ta} does not match its primal {pa}; "
                                      "tangents need the primal's shape and dtype")
    outs, touts, out_tree = jvp_function(f, primals, t_leaves, known=True)
    return tree.unflatten(out_tree, outs), tree.unflatten(out_tree, touts)


def linearize(f: Callable, *primals) -> tuple:
    """(f(*primals), f_jvp) where f_jvp(*tangents) is the linear map at primals."""
    out, _ = jvp(f, primals, tuple(_zeros_tree(p) for p in primals))

    def f_jvp(*tangents):
        return jvp(f, primals, tangents)[1]
    return out, f_jvp


def _zeros_tree(t):
    from jx.passes.zeros import zeros_like
    return tree.tree_map(zeros_like, t)


# ------------------------------------------------------------------ reverse mode

def vjp(f: Callable, *primals, has_aux: bool = False) -> tuple:
    """(f(*primals), vjp_fn[, aux]); vjp_fn(cotangent) returns one cotangent per primal."""
    from jx.passes.vjp import vjp_function
    from jx.passes.zeros import zeros_like
    fun, primals = f, _canonical(primals)
    if has_aux:
        def fun(*a):
            out, aux = f(*a)
            return out, aux
    outs, out_tree, leaves, pullback = vjp_function(fun, primals, known=True)
    aux = None
    if has_aux:
        main_tree, aux_tree = out_tree.children
        n_main = main_tree.num_leaves
        aux = tree.unflatten(aux_tree, outs[n_main:])
        outs, out_tree = outs[:n_main], main_tree
    in_tree = tree.tree_structure(tuple(primals))
    primal_leaves = tree.tree_leaves(tuple(primals))

    def vjp_fn(ct):
        try:
            ct_leaves = [canonical_value(c) for c in tree.flatten_up_to(out_tree, ct)]
        except ValueError as e:
            raise JxError(f"vjp_fn: cotangent must have the structure of the output ({e})") \
                from None
        for o, c in zip(outs, ct_leaves):
            oa, ca = get_aval(o), get_aval(c)
            # a real cotangent of a complex output (or back) would drop a component
            if oa.shape != ca.shape or dtypes.is_complex(oa.dtype) != dtypes.is_complex(ca.dtype):
                raise DerivativeTypeError(f"vjp_fn: cotangent {ca} does not match output {oa}; "
                                          "give it the output's shape and dtype")
        cts = pullback(ct_leaves)       # the aux outputs get no cotangent
        res = [(_float0_zeros(x) if not dtypes.is_inexact(get_aval(x).dtype)
                else _weak_like(p, zeros_like(x) if c is None else c))
               for x, p, c in zip(leaves, primal_leaves, cts)]
        return tuple(tree.unflatten(in_tree, res))

    out = tree.unflatten(out_tree, outs)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _weak_like(primal, ct):
    """The cotangent has its primal's type, weakness included (JAX: grad at a
    Python float is a weak float32)."""
    from jx.passes.interpreters import as_weak
    from .numpy._util import dtype_weak
    return as_weak(ct) if dtype_weak(primal)[1] else ct


def value_and_grad(f: Callable, argnums=0, has_aux: bool = False,
                   holomorphic: bool = False) -> Callable:
    """Function returning (f(*args), gradient of f with respect to args[argnums]).
    A real f of complex inputs gets JAX's gradient, the conjugate of df/dz* times 2
    (grad of |z|**2 is 2 * conj(z)); holomorphic=True: f'(z) of a complex f."""
    nums = _argnums(argnums)

    @functools.wraps(f)
    def vg(*args, **kwargs):
        for i in nums:
            if i >= len(args):
                raise JxError(f"grad: argnums={argnums} but the function got {len(args)} "
                              "positional arguments")
            for leaf in tree.tree_leaves(args[i]):
                _check_rev_input("grad", holomorphic, leaf, i)
        diff = tuple(args[i] for i in nums)

        def g(*d):
            full = list(args)
            for i, v in zip(nums, d):
                full[i] = v
            return f(*full, **kwargs)
        res = vjp(g, *diff, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        oa = get_aval(out) if not isinstance(out, (tuple, list, dict)) else None
        if oa is None or oa.shape != ():
            raise DerivativeTypeError(
                f"grad requires a scalar output, got "
                f"{oa if oa is not None else type(out).__name__}; use jx.vjp or "
                "jx.jacrev for non-scalar outputs (or sum the output)")
        _check_rev_output("grad", holomorphic, oa)
        grads = vjp_fn(np.ones((), oa.dtype))       # complex 1 when holomorphic
        grads = grads[0] if isinstance(argnums, int) else grads
        return ((out, res[2]), grads) if has_aux else (out, grads)
    return vg


def grad(f: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """Gradient of a scalar function with respect to args[argnums] (pytrees allowed)."""
    vg = value_and_grad(f, argnums, has_aux, holomorphic)

    @functools.wraps(f)
    def g(*args, **kwargs):
        (val, g_) = vg(*args, **kwargs)
        return (g_, val[1]) if has_aux else g_
    return g


# ------------------------------------------------------------------ jacobians

def _std_basis(x):
    """Identity rows shaped (n, *x.shape) for a float leaf x."""
    a = get_aval(x)
    n = a.size
    return np.eye(n, dtype=a.dtype).reshape((n,) + a.shape)


def jacfwd(f: Callable, argnums=0, holomorphic: bool = False) -> Callable:
    """Jacobian by forward mode: vmap of jvp over the input basis. Real inputs, or
    complex ones with holomorphic=True (then f'(z), and complex outputs)."""
    nums = _argnums(argnums)

    def jac(*args):
        from .vmap import vmap
        args = _canonical(args)
        results = []
        for i in nums:
            x_leaves, x_tree = tree.flatten(args[i])

            def g(xi, i=i, x_tree=x_tree):
                full = list(args)
                full[i] = tree.unflatten(x_tree, [xi])    # the argument's own structure
                return f(*full)
            if len(x_leaves) != 1:
                raise JxError("jacfwd: differentiate with respect to one array per argnum")
            x = x_leaves[0]
            _check_jacfwd_input(holomorphic, x, i)
            basis = _std_basis(x)
            out = vmap(lambda t: jvp(g, (x,), (t,))[1], out_axes=-1)(basis)
            if holomorphic:     # a tangent has its output's dtype
                for o in tree.tree_leaves(out):
                    if not dtypes.is_complex(get_aval(o).dtype):
                        raise DerivativeTypeError(
                            "jacfwd with holomorphic=True requires outputs with complex "
                            f"dtype, but got {get_aval(o).dtype.name}.")
            results.append(tree.tree_map(
                lambda o: o.reshape(get_aval(o).shape[:-1] + get_aval(x).shape), out))
        return results[0] if isinstance(argnums, int) else tuple(results)
    return jac


def _check_jacfwd_input(holomorphic, x, i):
    a = get_aval(x)
    if holomorphic:
        if not dtypes.is_complex(a.dtype):
            raise DerivativeTypeError("jacfwd with holomorphic=True requires inputs with "
                                      f"complex dtype, but got {a.dtype.name} (argument {i}).")
    elif not dtypes.is_float(a.dtype):
        raise DerivativeTypeError(
            "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
            f"np.floating), but got {a.dtype.name} (argument {i}). "
            + _HOLOMORPHIC_HINT.format(what="inputs or integer inputs", fn="jvp"))


def jacrev(f: Callable, argnums=0, holomorphic: bool = False) -> Callable:
    """Jacobian by reverse mode: vmap of vjp over the output basis. Real outputs, or
    complex ones with holomorphic=True (then complex inputs)."""
    nums = _argnums(argnums)

    def jac(*args):
        from .vmap import vmap
        args = _canonical(args)
        for i in nums:
            for leaf in tree.tree_leaves(args[i]):
                _check_rev_input("jacrev", holomorphic, leaf, i)
        diff = tuple(args[i] for i in nums)

        def g(*d):
            full = list(args)
            for i, v in zip(nums, d):
                full[i] = v
            return f(*full)
        out, vjp_fn = vjp(g, *diff)
        out_leaves, out_tree = tree.flatten(out)
        per_leaf = []              # for each output leaf: d leaf / d (each argnum's pytree)
        for o in out_leaves:
            _check_rev_output("jacrev", holomorphic, get_aval(o))
        for j, o in enumerate(out_leaves):
            oa = get_aval(o)

            def pull(t, j=j):      # the cotangent basis vector t on leaf j, zeros elsewhere
                cts = [t if k == j else np.zeros(get_aval(x).shape, get_aval(x).dtype)
                       for k, x in enumerate(out_leaves)]
                return vjp_fn(tree.unflatten(out_tree, cts))
            cts = vmap(pull)(_std_basis(o))
            shaped = tree.tree_map(
                lambda c, oa=oa: c.reshape(oa.shape + tuple(get_aval(c).shape[1:])), cts)
            per_leaf.append(shaped[0] if isinstance(argnums, int) else shaped)
        return tree.unflatten(out_tree, per_leaf)
    return jac


def hessian(f: Callable, argnums=0, holomorphic: bool = False) -> Callable:
    return jacfwd(jacrev(f, argnums, holomorphic), argnums, holomorphic)


# lax's implicit-differentiation solvers (a lower layer) differentiate through these
from .lax import solvers as _solvers  # noqa: E402
_solvers.AUTODIFF = sys.modules[__name__]
