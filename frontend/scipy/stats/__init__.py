"""jx.scipy.stats: JAX's jax.scipy.stats, probability distributions written on
jx.numpy / jx.lax (and jx.scipy.special), so they trace, jit, grad and vmap.

One module per distribution family, as in JAX: `stats.norm.logpdf(x, loc, scale)`."""
from . import (bernoulli, beta, binom, cauchy, chi2, dirichlet, expon, gamma, geom, laplace,
               logistic, multivariate_normal, nbinom, norm, poisson, t, uniform)
from .kde import gaussian_kde

__all__ = ["bernoulli", "beta", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma",
           "gaussian_kde", "geom", "laplace", "logistic", "multivariate_normal", "nbinom",
           "norm", "poisson", "t", "uniform"]
