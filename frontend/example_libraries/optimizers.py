"""jx.example_libraries.optimizers: JAX's example optimizers on jx.

An optimizer is a triple (init_fun, update_fun, get_params):
  init_fun(params) -> opt_state
  update_fun(step, grads, opt_state) -> opt_state
  get_params(opt_state) -> params
params are any pytree of arrays; the `optimizer` decorator lifts a triple that
works on one array to one that works on pytrees. OptimizerState is a pytree, so
states pass through jx.jit, and every update is jx.numpy, so it traces.
"""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import NamedTuple

import numpy as np

from .. import numpy as jnp
from .. import tree

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
# Only the flat per-leaf states are children: the tree definitions are static.
tree.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))


class Optimizer(NamedTuple):
    init_fn: object
    update_fn: object
    params_fn: object


def _flatten_all(states):
    """[(leaves, treedef)] of each state, unzipped."""
    pairs = [tree.flatten(s) for s in states]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def optimizer(opt_maker):
    """Decorator: lifts an optimizer whose init/update/get_params work on single
    arrays to one working on pytrees of arrays (states kept as OptimizerState)."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            leaves, treedef = tree.flatten(x0_tree)
            flat, subtrees = _flatten_all([init(x0) for x0 in leaves])
            return OptimizerState(flat, treedef, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            flat, treedef, subtrees = opt_state
            grads, treedef2 = tree.flatten(grad_tree)
            if treedef2 != treedef:
                raise TypeError("optimizer update function was passed a gradient tree "
                                "that did not match the parameter tree structure with "
                                f"which it was initialized: parameter tree {treedef} and "
                                f"grad tree {treedef2}.")
            states = [tree.unflatten(d, s) for d, s in zip(subtrees, flat)]
            new = [update(i, g, s) for g, s in zip(grads, states)]
            new_flat, subtrees2 = _flatten_all(new)
            for a, b in zip(subtrees, subtrees2):
                if a != b:
                    raise TypeError("optimizer update function produced an output "
                                    "structure that did not match its input structure: "
                                    f"input {a} and output {b}.")
            return OptimizerState(new_flat, treedef, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            flat, treedef, subtrees = opt_state
            params = [get_params(tree.unflatten(d, s)) for d, s in zip(subtrees, flat)]
            return tree.unflatten(treedef, params)

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


# ------------------------------------------------------------------ optimizers

@optimizer
def sgd(step_size):
    """Stochastic gradient descent: x - step_size(i) * g."""
    step_size = make_schedule(step_size)

    def update(i, g, x):
        return x - step_size(i) * g
    return Optimizer(lambda x0: x0, update, lambda x: x)


@optimizer
def momentum(step_size, mass):
    """SGD with momentum: v = mass * v + g; x -= step_size(i) * v."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - step_size(i) * v, v
    return init, update, lambda state: state[0]


@optimizer
def nesterov(step_size, mass):
    """SGD with Nesterov momentum: the step looks ahead by mass * v."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - step_size(i) * (mass * v + g), v
    return init, update, lambda state: state[0]


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (Duchi et al. 2011) with momentum on the scaled gradient."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        # zero where nothing accumulated yet, rather than 1/0
        inv = jnp.where(g_sq > 0, 1. / jnp.sqrt(g_sq), 0.0)
        m = (1. - momentum) * (g * inv) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return init, update, lambda state: state[0]


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: g scaled by a running root-mean-square of past gradients."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg = state
        avg = avg * gamma + jnp.square(g) * (1. - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg + eps), avg
    return init, update, lambda state: state[0]


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum on the scaled step."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg, mom = state
        avg = avg * gamma + jnp.square(g) * (1. - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg + eps)
        return x - mom, avg, mom
    return init, update, lambda state: state[0]


def _power(b, m, i):
    """b ** (i + 1) in m's dtype (b a Python float would widen nothing, but
    JAX makes it an array of m's dtype first, so the power rounds in that dtype)."""
    return jnp.power(jnp.asarray(b, m.dtype), i + 1)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma & Ba): bias-corrected first and second moment estimates."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        mhat = m / (1 - _power(b1, m, i))
        vhat = v / (1 - _power(b2, m, i))
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v
    return init, update, lambda state: state[0]


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax: Adam with an exponentially weighted infinity norm for the scale."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (step_size(i) / (1 - _power(b1, m, i))) * m / (u + eps)
        return x, m, u
    return init, update, lambda state: state[0]


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al. 2019): one accumulator vector per axis instead of a full
    second-moment array; the state keeps the parameter's original shape."""
    step_size = make_schedule(step_size)

    def along(ndim, v, axis):
        """v (1-D) shaped to broadcast along `axis` of an ndim array."""
        shape = [1] * ndim
        shape[axis] = v.shape[0]
        return jnp.reshape(v, shape)

    def init(x0):
        shape = tuple(np.shape(x0))
        x0 = jnp.atleast_1d(x0)
        vs = [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, jnp.zeros_like(x0), vs, shape

    def update(i, g, state):
        x, m, vs, shape = state
        g = jnp.reshape(g, x.shape)
        accum = functools.reduce(jnp.minimum, [along(g.ndim, v, a) for a, v in enumerate(vs)])
        accum = accum + jnp.square(g)
        inv = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
        m = (1. - momentum) * (g * inv) + momentum * m
        x = x - step_size(i) * m
        vs = [jnp.max(accum, axis=tuple(a for a in range(x.ndim) if a != j))
              for j in range(x.ndim)]
        return x, m, vs, shape

    def get_params(state):
        x, _, _, shape = state
        # Only shape's length is needed (x is atleast_1d of the parameter), so
        # this works under jit too, where the shape's entries are traced leaves.
        return jnp.reshape(x, ()) if len(shape) == 0 else x
    return init, update, get_params


# ------------------------------------------------------------------ schedules

def constant(step_size):
    """The schedule i -> step_size."""
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate):
    """i -> step_size * decay_rate ** (i / decay_steps)."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """i -> step_size / (1 + decay_rate * i / decay_steps), the quotient floored
    when staircase."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From step_size to final_step_size over decay_steps along (1 - t)**power,
    then constant."""
    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        mult = (1 - step_num / decay_steps) ** power
        return mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values):
    """values[k] for i in (boundaries[k-1], boundaries[k]]; len(values) must be
    len(boundaries) + 1."""
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("piecewise_constant: boundaries and values must be sequences "
                         f"(1-D), got ndim {boundaries.ndim} and {values.ndim}")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError("piecewise_constant: boundaries length must be one shorter "
                         f"than values length, got {boundaries.shape[0]} and "
                         f"{values.shape[0]}")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule):
    """A callable is a schedule already; a scalar becomes constant(scalar)."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError("step size must be a scalar or a schedule (a callable of the step "
                    f"number), got {type(scalar_or_schedule).__name__} of shape "
                    f"{jnp.shape(scalar_or_schedule)}")


# ------------------------------------------------------------------ utilities

def l2_norm(tree_):
    """The l2 norm of all leaves of a pytree together (useful for weight decay)."""
    leaves = tree.tree_leaves(tree_)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """Scales a gradient pytree down to l2 norm max_norm when its norm exceeds it."""
    norm = l2_norm(grad_tree)
    return tree.tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)),
                         grad_tree)


class JoinPoint:
    """A leaf of the outer (parameter) tree holding one leaf's state subtree."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """OptimizerState -> the parameter tree with JoinPoint leaves holding each
    leaf's state (a plain structure, e.g. for pickling)."""
    flat, treedef, subtrees = opt_state
    points = [JoinPoint(tree.unflatten(d, s)) for d, s in zip(subtrees, flat)]
    return tree.unflatten(treedef, points)


def pack_optimizer_state(marked_pytree):
    """The inverse of unpack_optimizer_state."""
    points, treedef = tree.flatten(marked_pytree, is_leaf=lambda x: isinstance(x, JoinPoint))
    if not all(isinstance(p, JoinPoint) for p in points):
        raise TypeError("pack_optimizer_state needs a tree whose leaves are all "
                        "JoinPoints, as unpack_optimizer_state returns")
    flat, subtrees = _flatten_all([p.subtree for p in points])
    return OptimizerState(flat, treedef, subtrees)


__all__ = ["OptimizerState", "Optimizer", "optimizer", "sgd", "momentum", "nesterov",
           "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3", "constant",
           "exponential_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_constant", "make_schedule", "l2_norm", "clip_grads", "JoinPoint",
           "unpack_optimizer_state", "pack_optimizer_state"]
