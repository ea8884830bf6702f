"""jx.scipy: JAX's jax.scipy namespaces (special, stats, linalg, signal), built on jx.numpy
and jx.lax so they trace, differentiate, vmap and compile.

Submodules load on first use (`jx.scipy.special`, `from jx.scipy import stats`),
so importing one does not import the others.
"""
import importlib as _importlib

_SUBMODULES = ("special", "stats", "linalg", "signal")


def __getattr__(name: str):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'jx.scipy' has no attribute {name!r}; its namespaces are "
                         f"{', '.join(_SUBMODULES)}")


def __dir__():
    return sorted(_SUBMODULES)
