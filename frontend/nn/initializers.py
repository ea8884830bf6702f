"""jx.nn.initializers: weight initializers, as JAX's jax.nn.initializers.

Each builder returns `init(key, shape, dtype=...)`; the draws use jx.random the
way JAX's use jax.random (same calls, same keys), so uniform, normal,
truncated_normal and variance_scaling (glorot/lecun/he) give JAX's numbers.
orthogonal orthonormalises a normal draw by modified Gram-Schmidt (jx has no QR
yet); that is the QR whose R has a positive diagonal, the same Q as JAX's
q * sign(diag(r)) up to rounding.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as jnp
from .. import random


def _dtype(dtype):
    return dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)


def _shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def zeros(key, shape, dtype=None):
    """An array of zeros (key unused)."""
    return jnp.zeros(_shape(shape), _dtype(dtype))


def ones(key, shape, dtype=None):
    """An array of ones (key unused)."""
    return jnp.ones(_shape(shape), _dtype(dtype))


def constant(value, dtype=None):
    """Builds an initializer filling arrays with `value`."""
    def init(key, shape, dtype=dtype):
        return jnp.full(_shape(shape), value, dtype=_dtype(dtype))
    return init


def uniform(scale=1e-2, dtype=None):
    """Builds an initializer drawing uniformly from [0, scale)."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return jnp.multiply(random.uniform(key, _shape(shape), dt), jnp.array(scale, dt))
    return init


def normal(stddev=1e-2, dtype=None):
    """Builds an initializer drawing from N(0, stddev**2)."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return jnp.multiply(random.normal(key, _shape(shape), dt), jnp.array(stddev, dt))
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """Builds an initializer drawing a normal truncated to (lower, upper), then
    scaled by stddev (no variance correction, as JAX)."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        draw = random.truncated_normal(key, lower, upper, _shape(shape), dt)
        return jnp.multiply(draw, jnp.array(stddev, dt))
    return init


def _size(shape, axis) -> int:
    if isinstance(axis, (int, np.integer)):
        return shape[axis]
    return math.prod(shape[i] for i in axis)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """(fan_in, fan_out): the axes outside in/out/batch are the receptive field."""
    if isinstance(in_axis, (int, np.integer)) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"cannot compute the fans of a {len(shape)}-dimensional weight "
                         "with the default in_axis=-2: give a shape of rank >= 2 or "
                         "name in_axis explicitly")
    in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
    receptive = math.prod(shape) / in_size / out_size / _size(shape, batch_axis)
    return in_size * receptive, out_size * receptive


_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=None):
    """Builds an initializer with variance scale / n, n the fan `mode` names."""
    if mode not in _MODES:
        raise ValueError(f"invalid mode for variance scaling initializer: {mode!r}; "
                         f"use one of {_MODES}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError("invalid distribution for variance scaling initializer: "
                         f"{distribution!r}; use one of {_DISTRIBUTIONS}")

    def init(key, shape, dtype=dtype):
        shape, dt = _shape(shape), _dtype(dtype)
        if not dtypes.is_float(dt):
            raise NotImplementedError(f"variance_scaling draws real floats; dtype {dt} "
                                      "(complex or integer) is not supported by jx")
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
             "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = jnp.array(scale / n, dtype=dt)
        if distribution == "truncated_normal":
            # 0.8796... is the std of a unit normal truncated to (-2, 2)
            std = jnp.divide(jnp.sqrt(variance), jnp.array(.87962566103423978, dt))
            return jnp.multiply(random.truncated_normal(key, -2, 2, shape, dt), std)
        if distribution == "normal":
            return jnp.multiply(random.normal(key, shape, dt), jnp.sqrt(variance))
        return jnp.multiply(random.uniform(key, shape, dt, -1),
                            jnp.sqrt(jnp.multiply(3, variance)))
    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis,
                            batch_axis, dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis,
                            batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis,
                            batch_axis, dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def _orthonormal_columns(z):
    """Modified Gram-Schmidt on the columns of z (rows >= columns): Q of the QR
    with R's diagonal positive. A Python loop over the (static) column count."""
    cols = []
    for j in range(z.shape[1]):
        v = z[:, j]
        for q in cols:
            v = jnp.subtract(v, jnp.multiply(jnp.vdot(q, v), q))
        cols.append(jnp.divide(v, jnp.sqrt(jnp.vdot(v, v))))
    return jnp.stack(cols, axis=1)


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Builds an initializer of (scaled) matrices with orthonormal rows or
    columns, whichever are fewer, as JAX's (same normal draw, same Q)."""
    def init(key, shape, dtype=dtype):
        shape, dt = _shape(shape), _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape, got "
                             f"{shape}")
        if any(d == 0 for d in shape):
            return jnp.zeros(shape, dt)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        z = random.normal(key, (max(n_rows, n_cols), min(n_rows, n_cols)), dt)
        q = _orthonormal_columns(z)
        if n_rows < n_cols:
            q = jnp.transpose(q)
        rest = tuple(np.delete(np.array(shape), column_axis))
        q = jnp.moveaxis(jnp.reshape(q, rest + (n_cols,)), -1, column_axis)
        return jnp.multiply(jnp.array(scale, dt), q)
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Builds an initializer of 3-5D convolution kernels zero but at the spatial
    centre, which holds an orthogonal matrix."""
    def init(key, shape, dtype=dtype):
        shape, dt = _shape(shape), _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"delta orthogonal initializer requires a 3D, 4D or 5D "
                             f"shape, got {shape}")
        if shape[-1] < shape[-2]:
            raise ValueError("delta orthogonal needs fan_in <= fan_out (shape[-2] <= "
                             f"shape[-1]), got {shape}")
        mat = orthogonal(scale, column_axis, dt)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, dt).at[centre].set(mat)
    return init


__all__ = ["zeros", "ones", "constant", "uniform", "normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal"]
