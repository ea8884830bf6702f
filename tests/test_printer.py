"""Golden IR text: the printer's output for small functions, compared verbatim.

After an intended change to the printer or to how jx.numpy lowers, regenerate with

    JX_UPDATE_GOLDEN=1 pytest tests/test_printer.py

and review the diff of tests/golden/ before committing it.
"""
import os
import re
from pathlib import Path

import numpy as np
import pytest

import jx
import jx.numpy as jnp

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("JX_UPDATE_GOLDEN") == "1"


def scalars(x):
    """Weak Python scalars adopt the array's dtype: f32 literals, no f64 anywhere."""
    return jnp.sin(x) * 2.0 + 1


def mlp_layer(params, x):
    """A dict pytree input (sorted keys), matmul, bias broadcast, relu and a reduction."""
    h = jnp.maximum(x @ params["w"] + params["b"], 0.0)
    return h, jnp.sum(h, axis=0)


def mixed_dtypes(i, x, mask, w):
    """int32 -> float32 promotion, comparisons, select, float64 kept: the float64
    spec of w declares a 64-bit program."""
    y = jnp.where(mask, i + x, -x)
    return y, (y > 0.5).astype(jnp.int32), x.astype(jnp.float64) * 3.0 + w


def normalise(x):
    """keepdims reductions, transpose and reshape."""
    centred = x - jnp.mean(x, axis=1, keepdims=True)
    return jnp.reshape(centred.T, (-1,)) / jnp.max(jnp.abs(centred))


def long_chain(x):
    """More than 26 variables: names go a..z, then aa, ab, ..."""
    for k in range(15):
        x = jnp.tanh(x) + float(k)
    return x


def control_flow(x, n):
    """Sub-graphs: a fori_loop body closing over x, then a two-branch cond."""
    y = jx.lax.fori_loop(0, 3, lambda i, c: c * x + 1.0, x)
    return jx.lax.cond(n > 0, lambda v: v * 2.0, lambda v: -v, y)


CASES = {
    "scalars": (scalars, (jx.f32[3],)),
    "mlp_layer": (mlp_layer, ({"w": jx.f32[4, 8], "b": jx.f32[8]}, jx.f32[2, 4])),
    "mixed_dtypes": (mixed_dtypes, (jx.i32[5], jx.f32[5], jx.bool_[5], jx.f64[5])),
    "normalise": (normalise, (jx.f64[3, 4],)),
    "long_chain": (long_chain, (jx.f32[2],)),
    "control_flow": (control_flow, (jx.f32[2], jx.i32[()])),
}


def golden_text(name: str) -> str:
    fn, args = CASES[name]
    return str(jx.verify(jx.make_graph(fn)(*args))) + "\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    path = GOLDEN / f"{name}.txt"
    text = golden_text(name)
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    if not path.exists():
        pytest.fail(f"no golden file {path}; create it with "
                    "JX_UPDATE_GOLDEN=1 pytest tests/test_printer.py")
    assert text == path.read_text(), (
        f"IR text of {name!r} differs from {path}; if the change is intended, regenerate "
        "with JX_UPDATE_GOLDEN=1 pytest tests/test_printer.py and review the diff")


def test_golden_files_have_cases():
    """A stale golden file (its case renamed or removed) is an error, not silent litter."""
    stale = {p.stem for p in GOLDEN.glob("*.txt")} - set(CASES)
    assert not stale, f"golden files without a case: {sorted(stale)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_is_stable_across_traces(name):
    """A fresh trace of a fresh copy of the function prints the same text: no ids."""
    fn, args = CASES[name]
    clone = type(fn)(fn.__code__, fn.__globals__, fn.__name__)   # misses the trace cache
    text = str(jx.make_graph(clone)(*args))
    assert text == golden_text(name).rstrip("\n")
    assert not re.search(r"0x[0-9a-f]{6,}|object at", text)


def test_names_in_order_of_first_appearance():
    text = golden_text("long_chain")
    defined = re.findall(r"^\s*([a-z]+):", text, flags=re.M)      # each line's first binder
    inputs = re.findall(r"([a-z]+):\w+\[", text.splitlines()[0])
    order = inputs + defined
    expected = [chr(ord("a") + i) for i in range(26)] + ["aa", "ab", "ac"]
    assert order[:len(expected)] == expected


def test_literal_and_param_formatting():
    g = jx.make_graph(lambda x: x * 0.1 + np.float32(1e-7))(jx.f32[2])
    text = str(g)
    assert "0.1:f32" in text and "1e-07:f32" in text
    assert "broadcast_dimensions=() shape=(2,)" in text        # params sorted by name
