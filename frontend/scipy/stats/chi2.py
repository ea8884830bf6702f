"""jx.scipy.stats.chi2: the chi-squared distribution, as jax.scipy.stats.chi2."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import promote_inexact, special

_LOG2 = float(np.log(2.0))


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote_inexact(x, df, loc, scale)
    y = (x - loc) / scale
    half = df / 2
    log_norm = -(special().gammaln(half) + half * _LOG2) - jnp.log(scale)
    return jnp.where(x < loc, -np.inf, log_norm + (half - 1) * jnp.log(y) - y / 2)


def pdf(x, df, loc=0, scale=1):
    return jnp.exp(logpdf(x, df, loc, scale))


def _half_y(x, df, loc, scale):
    return df / 2, jnp.clip((x - loc) / (2 * scale), 0, np.inf)


def cdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote_inexact(x, df, loc, scale)
    return special().gammainc(*_half_y(x, df, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    return jnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote_inexact(x, df, loc, scale)
    return special().gammaincc(*_half_y(x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    return jnp.log(sf(x, df, loc, scale))
