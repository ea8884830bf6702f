"""jx.random: JAX's counter-based PRNG on the threefry2x32 primitive.

A key is a uint32[2] array (JAX's raw keys): PRNGKey(0) is [0, 0]. The stream
machinery and the base draws (bits, uniform, normal, randint, permutations) are
in _core; the samplers built on them follow JAX's algorithms and key splits so
they give JAX's bits: _continuous (transforms of uniform/normal/gamma draws),
_gamma (Marsaglia-Tsang), _discrete (poisson, binomial, ...), _multivariate,
and _keys (key utilities).
"""
from __future__ import annotations

from ..numpy.creation import _wrap_public
from ._continuous import (ball, beta, cauchy, chisquare, double_sided_maxwell, f,
                          generalized_normal, laplace, logistic, lognormal, maxwell, pareto,
                          rayleigh, t, triangular, wald, weibull_min)
from ._core import PUBLIC as _CORE
# private names other modules use: scipy.special's erfinv tables, the tests' _take1d
from ._core import (_ERFINV32_W_GE_5, _ERFINV32_W_LT_5, _ERFINV64_W_GE_16,  # noqa: F401
                    _ERFINV64_W_LT_6_25, _ERFINV64_W_LT_16, _take1d)
from ._core import (PRNGKey, bernoulli, bits, categorical, choice, erfinv, exponential,
                    fold_in, gumbel, key, normal, permutation, randint, random_bits, split,
                    threefry_2x32, truncated_normal, uniform)
from ._discrete import binomial, geometric, multinomial, poisson, rademacher
from ._gamma import gamma, loggamma
from ._keys import clone, key_data, key_dtype, key_impl, wrap_key_data
from ._multivariate import dirichlet, multivariate_normal, orthogonal

__all__ = ["PRNGKey", "key", "key_data", "split", "fold_in", "threefry_2x32", "bits",
           "random_bits", "uniform", "normal", "truncated_normal", "erfinv", "bernoulli",
           "gumbel", "exponential", "categorical", "randint", "permutation", "choice",
           "ball", "beta", "binomial", "cauchy", "chisquare", "clone", "dirichlet",
           "double_sided_maxwell", "f", "gamma", "generalized_normal", "geometric",
           "key_dtype", "key_impl", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
           "multinomial", "multivariate_normal", "orthogonal", "pareto", "poisson",
           "rademacher", "rayleigh", "t", "triangular", "wald", "weibull_min",
           "wrap_key_data"]
# the base draws are wrapped in _core; key_impl and key_dtype return no arrays
_wrap_public(globals(), [n for n in __all__ if n not in _CORE and n not in
                         ("key_impl", "key_dtype")])


# jax.random's names jx.random does not have (JAX 0.10.2)
_JAX_ONLY = frozenset({"random_gamma_p"})
_NEAREST = {"random_gamma_p": "jx.random.gamma (jx draws gamma with jx.numpy and a "
                              "while_loop, not a primitive of its own)"}


def __getattr__(name):
    from ..errors import missing_name
    raise missing_name("jx.random", name, _JAX_ONLY, _NEAREST)
