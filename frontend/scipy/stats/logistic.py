"""jx.scipy.stats.logistic: the logistic distribution, as jax.scipy.stats.logistic."""
from __future__ import annotations

from ... import numpy as jnp
from ._util import promote_inexact, special


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    half = (x - loc) / scale / 2
    # log(e^{z/2} + e^{-z/2}) is symmetric and stable for either sign of z
    return -2 * jnp.logaddexp(half, -half) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return special().expit((x - loc) / scale)


def sf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return special().expit(-(x - loc) / scale)


def ppf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return special().logit(x) * scale + loc


def isf(x, loc=0, scale=1):
    x, loc, scale = promote_inexact(x, loc, scale)
    return -special().logit(x) * scale + loc
