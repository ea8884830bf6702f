"""Quantile normalisation and rank statistics with sort, argsort and take_along_axis."""
import numpy as np
import jax
import jax.numpy as jnp


@jax.jit
def quantile_normalize(x):
    order = jnp.argsort(x, axis=0)
    ranks = jnp.argsort(order, axis=0)
    reference = jnp.sort(x, axis=0).mean(axis=1)
    return reference[ranks]


@jax.jit
def spearman(a, b):
    ra = jnp.argsort(jnp.argsort(a)).astype(jnp.float32)
    rb = jnp.argsort(jnp.argsort(b)).astype(jnp.float32)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return (ra * rb).sum() / jnp.sqrt((ra ** 2).sum() * (rb ** 2).sum())


def main():
    rng = np.random.default_rng(9)
    x = rng.gamma(2.0, size=(20, 4)) * np.array([1.0, 2.0, 0.5, 3.0])
    qn = quantile_normalize(x)
    top = jnp.take_along_axis(x, jnp.argsort(-x, axis=0)[:3], axis=0)
    return {"qn": qn, "rho": spearman(x[:, 0], x[:, 1]), "top3": top,
            "median": jnp.median(x, axis=0), "p90": jnp.percentile(x[:, 0], 90.0)}


def bench():
    rng = np.random.default_rng(9)
    return quantile_normalize, (rng.gamma(2.0, size=(2048, 8)).astype(np.float32),)
