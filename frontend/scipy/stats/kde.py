"""jx.scipy.stats.gaussian_kde: a Gaussian kernel density estimate, as JAX's.

The kernel covariance is factored once (Cholesky of ._linalg); evaluation whitens the
data and the points with it, so no inverse is ever formed for the densities."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ...numpy import _util
from ...tree import register_pytree_node_class
from . import _linalg
from ._util import special

_LOG_2PI = float(np.log(2 * np.pi))


def _weighted_cov(data, weights):
    """np.cov(data, rowvar=True, bias=False, aweights=weights) for weights summing to 1."""
    mean = jnp.sum(data * weights, axis=1, keepdims=True)
    dev = data - mean
    return (dev * weights) @ dev.T / (1 - jnp.sum(weights * weights))


def _logsumexp(a, axis):
    top = jnp.max(a, axis=axis, keepdims=True)
    top = jnp.where(jnp.isfinite(top), top, 0.0)         # all -inf stays -inf, not nan
    return jnp.log(jnp.sum(jnp.exp(a - top), axis=axis)) + jnp.squeeze(top, axis=axis)


@register_pytree_node_class
class gaussian_kde:
    """gaussian_kde(dataset, bw_method=None, weights=None): dataset has shape (d, n)
    (a 1-D dataset is n points in one dimension); bw_method is 'scott' (default),
    'silverman', a scalar factor or a callable of the kde giving one."""

    def __init__(self, dataset, bw_method=None, weights=None):
        dataset = jnp.atleast_2d(jnp.asarray(dataset))
        if jnp.issubdtype(dataset.dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("gaussian_kde: `dataset` input should have multiple elements")
        d, n = dataset.shape
        if weights is not None:
            dataset, weights = (jnp.asarray(a) for a in
                                _util.promote_dtypes(dataset, weights, to_float=True))
            weights = jnp.atleast_1d(weights)
            if weights.ndim != 1:
                raise ValueError("gaussian_kde: `weights` input should be one-dimensional")
            if weights.shape[0] != n:
                raise ValueError(f"gaussian_kde: `weights` input should be of length n={n}; "
                                 f"got {weights.shape[0]}")
            weights = weights / jnp.sum(weights)
        else:
            dataset = jnp.asarray(_util.promote_dtypes(dataset, to_float=True)[0])
            weights = jnp.full((n,), 1.0 / n, dtype=dataset.dtype)
        self.dataset, self.weights = dataset, weights
        self.neff = 1 / jnp.sum(weights * weights)
        bw = "scott" if bw_method is None else bw_method
        if isinstance(bw, str) and bw == "scott":
            factor = jnp.power(self.neff, -1.0 / (d + 4))
        elif isinstance(bw, str) and bw == "silverman":
            factor = jnp.power(self.neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif not isinstance(bw, str) and np.ndim(bw) == 0 and not callable(bw):
            factor = bw
        elif callable(bw):
            factor = bw(self)
        else:
            raise ValueError("gaussian_kde: `bw_method` should be 'scott', 'silverman', a "
                             f"scalar, or a callable; got {bw_method!r}")
        data_cov = jnp.atleast_2d(_weighted_cov(dataset, weights))
        self.covariance = data_cov * factor ** 2
        low = _linalg.cholesky(self.covariance)
        # rows of m are the columns of low^-1, so inv(cov) = m @ m.T
        m = _linalg.solve_lower(low, jnp.eye(d, dtype=low.dtype))
        self.inv_cov = m @ m.T

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        kde = cls.__new__(cls)
        kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov = children
        return kde

    @property
    def d(self):
        return self.dataset.shape[0]

    @property
    def n(self):
        return self.dataset.shape[1]

    def _points(self, points):
        points = jnp.atleast_2d(jnp.asarray(points))
        if jnp.issubdtype(points.dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:         # a single d-dimensional point given flat
                return jnp.reshape(points, (self.d, 1))
            raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points

    def _log_kernels(self, points):
        """(m, n): log of weight_j * N(point_i; data_j, covariance)."""
        data, weights, points, cov = (jnp.asarray(a) for a in _util.promote_dtypes(
            self.dataset, self.weights, points, self.covariance, to_float=True))
        low = _linalg.cholesky(cov)
        wd = _linalg.solve_lower(low, data.T)                 # (n, d)
        wp = _linalg.solve_lower(low, points.T)               # (m, d)
        sq = jnp.sum(jnp.square(wp[:, None, :] - wd[None, :, :]), axis=-1)
        log_norm = -jnp.sum(jnp.log(jnp.diagonal(low))) - 0.5 * self.d * _LOG_2PI
        return jnp.log(weights) + log_norm - 0.5 * sq

    def evaluate(self, points):
        return jnp.sum(jnp.exp(self._log_kernels(self._points(points))), axis=1)

    def __call__(self, points):
        return self.evaluate(points)

    def pdf(self, x):
        return self.evaluate(x)

    def logpdf(self, x):
        return _logsumexp(self._log_kernels(self._points(x)), axis=1)

    def integrate_box_1d(self, low, high):
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = jnp.squeeze(jnp.sqrt(self.covariance))
        ndtr = special().ndtr
        lo = jnp.squeeze((low - self.dataset) / sigma)
        hi = jnp.squeeze((high - self.dataset) / sigma)
        return jnp.sum(self.weights * (ndtr(hi) - ndtr(lo)))

    def _convolve(self, cov, centers, weights, means):
        """sum_j w_j N(mean; center_j, cov) for centers (d, n), for each mean of (..., d)."""
        low = _linalg.cholesky(cov)
        z = _linalg.solve_lower(low, centers.T - means[..., None, :])     # (..., n, d)
        log_norm = -jnp.sum(jnp.log(jnp.diagonal(low))) - 0.5 * self.d * _LOG_2PI
        return jnp.sum(weights * jnp.exp(log_norm - 0.5 * jnp.sum(z * z, axis=-1)), axis=-1)

    def integrate_gaussian(self, mean, cov):
        mean = jnp.atleast_1d(jnp.squeeze(jnp.asarray(mean)))
        cov = jnp.atleast_2d(jnp.asarray(cov))
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        return self._convolve(self.covariance + cov, self.dataset, self.weights, mean)

    def integrate_kde(self, other):
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        small, large = (self, other) if self.n < other.n else (other, self)
        cov = self.covariance + other.covariance
        per_point = self._convolve(cov, large.dataset, large.weights, small.dataset.T)
        return jnp.sum(per_point * small.weights)

    def resample(self, key, shape=()):
        """Draws of shape (d, *shape): a data point picked by weight plus a kernel draw
        (the same two draws, from the same split of key, as JAX's)."""
        from ... import random
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        low = _linalg.cholesky(self.covariance)
        z = random.normal(eps_key, shape + (self.d,), dtype=self.dataset.dtype)
        eps = jnp.moveaxis(jnp.einsum("ij,...j->...i", low, z), -1, 0)
        return jnp.take(self.dataset, ind, axis=1) + eps

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        raise NotImplementedError("only 1D box integrations are supported; use "
                                  "`integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        raise NotImplementedError("dynamically changing the bandwidth method is not "
                                  "supported; build a new gaussian_kde")
