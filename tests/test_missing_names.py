"""Anything JAX has and jx does not: a one-line error naming it (NotInJx, an
AttributeError and a NotImplementedError), never a bare AttributeError."""
import importlib

import pytest

import jx
from jx.errors import NotInJx

MODULES = ["jx", "jx.numpy", "jx.lax", "jx.random", "jx.nn", "jx.scipy.linalg"]


@pytest.mark.parametrize("module", MODULES)
def test_jax_only_names_raise_one_line_errors(module):
    mod = importlib.import_module(module)
    listed = sorted(getattr(mod, "_JAX_ONLY", None) or
                    importlib.import_module("jx.numpy._missing").JAX_ONLY)
    assert listed
    for name in listed:
        assert not hasattr(mod, name), name
        with pytest.raises(NotInJx) as e:
            getattr(mod, name)
        text = str(e.value)
        assert "\n" not in text and f"{module}.{name}" in text
        assert f"jax{module[2:]}.{name}" in text
    with pytest.raises(AttributeError) as e:
        getattr(mod, "no_such_name_anywhere")
    assert not isinstance(e.value, NotInJx)


@pytest.mark.parametrize("module", MODULES)
def test_every_public_jax_name_exists_or_is_named(module):
    """JAX's public names (0.10.2 here): each is in jx, or its error names it."""
    jax_mod = pytest.importorskip("jax" + module[2:])
    mod = importlib.import_module(module)
    bare = []
    for name in dir(jax_mod):
        if name.startswith("_") or name.endswith("_p"):
            continue
        try:
            getattr(mod, name)
        except NotInJx:
            pass
        except AttributeError:
            bare.append(name)
    # submodules JAX exposes as attributes that jx does not mirror (internals)
    internal = {"ad", "api_util", "core", "interpreters", "lib", "tree_util", "version",
                "stages", "typing", "image", "ops", "memory", "monitoring", "extend"}
    assert not [n for n in bare if n not in internal], bare
