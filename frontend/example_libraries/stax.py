"""jx.example_libraries.stax: JAX's minimal neural-network layer library on jx.

A layer is a pair (init_fun, apply_fun):
  init_fun(rng, input_shape) -> (output_shape, params)
  apply_fun(params, inputs, **kwargs) -> outputs   (kwargs may carry rng=key)
Combinators (serial, parallel, shape_dependent) build layers from layers.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import lax
from .. import numpy as jnp
from .. import random
from ..nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                  softplus, standardize)
from ..nn.initializers import glorot_normal, normal, ones, zeros

# JAX's aliases, kept for programs that use them
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """A fully connected layer: inputs @ W + b."""
    def init_fun(rng, input_shape):
        output_shape = tuple(input_shape[:-1]) + (out_dim,)
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def _conv_layer(dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init,
                shape_tuple, conv):
    """A convolution-like layer with bias: init from shape_tuple, apply by conv."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    strides = strides or (1,) * len(filter_shape)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        sizes = iter(filter_shape)
        kernel_shape = [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                        else next(sizes) for c in rhs_spec]
        output_shape = shape_tuple(input_shape, kernel_shape, strides, padding,
                                   dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return conv(inputs, W, strides) + b
    return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
    """A convolution layer with bias; dimension_numbers as lax.conv_general_dilated's
    strings, e.g. ("NHWC", "HWIO", "NHWC")."""
    one = (1,) * len(filter_shape)
    return _conv_layer(dimension_numbers, out_chan, filter_shape, strides, padding, W_init,
                       b_init, lax.conv_general_shape_tuple,
                       lambda x, W, s: lax.conv_general_dilated(
                           x, W, s, padding, one, one, dimension_numbers=dimension_numbers))


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
    """A transposed-convolution layer with bias (lax.conv_transpose)."""
    return _conv_layer(dimension_numbers, out_chan, filter_shape, strides, padding, W_init,
                       b_init, lax.conv_transpose_shape_tuple,
                       lambda x, W, s: lax.conv_transpose(
                           x, W, s, padding, dimension_numbers=dimension_numbers))


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))
def _pool_dims(window_shape, strides, spec):
    """Window and strides over every dim: 1 at batch and channel (N, C of spec;
    without a spec, the first and the last)."""
    window_shape = tuple(window_shape)
    strides = tuple(strides) if strides else (1,) * len(window_shape)
    fixed = (0, len(window_shape) + 1) if spec is None else (spec.index("N"), spec.index("C"))
    for i in sorted(fixed):
        window_shape = window_shape[:i] + (1,) + window_shape[i:]
        strides = strides[:i] + (1,) + strides[i:]
    return window_shape, strides, fixed


def _pooling(name, computation, init, average=False):
    def layer(window_shape, strides=None, padding="VALID", spec=None):
        spatial_window = tuple(window_shape)
        spatial_strides = tuple(strides) if strides else (1,) * len(spatial_window)
        dims, steps, fixed = _pool_dims(window_shape, strides, spec)

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, dims, steps, padding)
            return lax.reduce_window_shape_tuple(input_shape, dims, steps, pads), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init, computation, dims, steps, padding)
            if not average:
                return out
            # JAX's AvgPool: divide by the number of taps inside the input (padding
            # does not count), counted by the same window over ones
            spatial = tuple(n for i, n in enumerate(inputs.shape) if i not in fixed)
            counts = lax.reduce_window(jnp.ones(spatial, inputs.dtype), 0.0, lax.add,
                                       spatial_window, spatial_strides, padding)
            for i in sorted(fixed):
                counts = jnp.expand_dims(counts, i)
            return out / counts
        return init_fun, apply_fun
    layer.__name__ = name
    layer.__doc__ = (f"{name}(window_shape, strides=None, padding='VALID', spec=None): "
                     "pooling over the spatial dims (all but N and C of spec; by default "
                     "the first and last dims are batch and channels), as JAX's stax.")
    return layer


MaxPool = _pooling("MaxPool", lax.max, -np.inf)
SumPool = _pooling("SumPool", lax.add, 0.0)
AvgPool = _pooling("AvgPool", lax.add, 0.0, average=True)


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True,
              beta_init=zeros, gamma_init=ones):
    """Standardizes over `axis` (batch statistics), then scales by gamma and
    shifts by beta (params over the remaining axes; () when disabled)."""
    axis = (axis,) if np.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        z = standardize(x, axis, epsilon=epsilon)
        # beta/gamma broadcast back over the normalised axes
        shape = tuple(1 if i in axis else d for i, d in enumerate(jnp.shape(x)))
        if scale:
            z = jnp.reshape(gamma, shape) * z
        if center:
            z = z + jnp.reshape(beta, shape)
        return z
    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A parameterless layer applying fun(inputs, **fun_kwargs)."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _flatten():
    """Flattens all but the leading (batch) dimension."""
    def init_fun(rng, input_shape):
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.reshape(inputs, (inputs.shape[0], -1))
    return init_fun, apply_fun


Flatten = _flatten()
Identity = (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: inputs)


def FanOut(num):
    """Copies the input into a list of num inputs (for parallel)."""
    return (lambda rng, input_shape: ([input_shape] * num, ()),
            lambda params, inputs, **kwargs: [inputs] * num)


FanInSum = (lambda rng, input_shape: (input_shape[0], ()),
            lambda params, inputs, **kwargs: sum(inputs))


def FanInConcat(axis=-1):
    """Concatenates a list of inputs along axis."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(s[ax] for s in input_shape)
        first = tuple(input_shape[0])
        return first[:ax] + (size,) + first[ax + 1:], ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """Dropout, as JAX's stax: in mode 'train' each input is kept with
    probability `rate` (sic: rate is the keep probability) and divided by it;
    any other mode is the identity. apply_fun needs rng=key."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG "
                             "key argument: call apply_fun(params, inputs, rng=key) with "
                             "key from jx.random.PRNGKey, not apply_fun(params, inputs).")
        if mode == "train":
            keep = random.bernoulli(rng, rate, jnp.shape(inputs))
            return jnp.where(keep, inputs / rate, 0)
        return inputs
    return init_fun, apply_fun


# ------------------------------------------------------------------ combinators

def serial(*layers):
    """The layers one after another; the rng (if given) is split among them."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, p = init(layer_rng, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, n) if rng is not None else (None,) * n
        for fun, p, r in zip(apply_funs, params, rngs):
            inputs = fun(p, inputs, rng=r, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """The layers side by side: a sequence of inputs maps to a sequence of
    outputs (usually between FanOut and FanInSum/FanInConcat)."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, n)
        # (output shapes, params), each a tuple with one entry per layer, as JAX's
        return tuple(zip(*[init(r, s) for init, r, s in zip(init_funs, rngs, input_shape)]))

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, n) if rng is not None else (None,) * n
        return [f(p, x, rng=r, **kwargs)
                for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built by make_layer(input_shape) once the input shape is known."""
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun


__all__ = ["Dense", "GeneralConv", "Conv", "GeneralConvTranspose", "Conv1DTranspose",
           "ConvTranspose", "MaxPool", "SumPool", "AvgPool", "BatchNorm", "elementwise",
           "Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu",
           "LeakyRelu", "Selu", "Gelu", "Flatten", "Identity", "FanOut", "FanInSum",
           "FanInConcat", "Dropout", "serial", "parallel", "shape_dependent", "glorot",
           "randn", "logsoftmax"]
