"""The benchmark suite of issue 6: each case is an entry of a model file (samples/ or
models.py) at a given size, benched on every engine by runner.bench_item.

Input scales keep the numbers sane: weights ~ 1/sqrt(fan-in) so activations do
not blow up, and the ODE's coupling matrix small enough that 2000 steps stay
stable (a chaotic system would make the engines-agree check meaningless).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SAMPLES = os.path.join(ROOT, "samples")


@dataclass
class Case:
    name: str
    model: str                 # path of the model file
    entry: str
    shapes: tuple = ()         # --shape style overrides ("x=f32[4096,4096]")
    quick_shapes: tuple | None = None   # smaller sizes for --quick (None: the same)
    size: str = ""
    quick_size: str = ""
    scales: dict = field(default_factory=dict)
    tolerance: tuple | None = None


def _sample(name: str) -> str:
    return os.path.join(SAMPLES, name)


MODELS = os.path.join(HERE, "models.py")

CASES = [
    Case("elementwise chain", _sample("elementwise.py"), "chain",
         ("x=f32[4096,4096]",), ("x=f32[1024,1024]",), "16M f32", "1M f32"),
    Case("sum of squares", _sample("elementwise.py"), "sum_of_squares",
         ("x=f32[8192,8192]",), ("x=f32[2048,2048]",), "64M f32", "4M f32"),
    Case("row softmax", _sample("attention.py"), "softmax",
         ("x=f32[4096,4096]",), ("x=f32[512,512]",), "4096x4096", "512x512"),
    Case("layernorm", _sample("attention.py"), "layernorm",
         ("x=f32[8192,1024]", "gamma=f32[1024]", "beta=f32[1024]"),
         ("x=f32[1024,1024]", "gamma=f32[1024]", "beta=f32[1024]"), "8192x1024", "1024x1024"),
    Case("matmul 1024", MODELS, "matmul", ("a=f32[1024,1024]", "b=f32[1024,1024]"),
         ("a=f32[256,256]", "b=f32[256,256]"), "1024^3 f32", "256^3 f32"),
    Case("matmul 4096", MODELS, "matmul", ("a=f32[4096,4096]", "b=f32[4096,4096]"),
         ("a=f32[512,512]", "b=f32[512,512]"), "4096^3 f32", "512^3 f32"),
    Case("MLP predict", _sample("mlp.py"), "predict", size="784-1024-1024-10, b128",
         scales={"params": 0.03}),
    Case("MLP SGD step", _sample("train.py"), "sgd_step", size="784-1024-1024-10, b128",
         scales={"params": 0.03}),
    Case("per-example grads", _sample("train.py"), "per_example_grads",
         size="vmap(grad) logreg 256x64"),
    Case("attention block", _sample("attention.py"), "attention_block",
         size="8 heads, 512 tok, d=64", scales={"params": 0.044}),
    Case("ODE fori_loop", _sample("ode.py"), "integrate", size="RK4 2000 steps, 64 states",
         scales={"a": 0.1}),
    Case("dispatch", MODELS, "dispatch", size="3 f32"),
]


def select(names: tuple = ()) -> list:
    """Cases whose name contains any of `names` (case-insensitive); all when empty."""
    if not names:
        return list(CASES)
    wanted = [n.lower() for n in names]
    return [c for c in CASES if any(w in c.name.lower() for w in wanted)]


def items(cases: list, quick: bool = False, jax: bool = True) -> list:
    """BenchItems for the cases (models loaded once each, JAX copies too)."""
    from jx.cli import loading

    from . import jaxshim
    from .runner import BenchItem
    modules, jax_modules, out = {}, {}, []
    for c in cases:
        if c.model not in modules:
            modules[c.model] = loading.load_model(c.model)
        entry = loading.select_entries(modules[c.model], (c.entry,))[0]
        shapes = c.quick_shapes if quick and c.quick_shapes is not None else c.shapes
        loading.apply_shapes([entry], shapes)
        item = BenchItem(c.name, entry, scales=c.scales, tolerance=c.tolerance,
                         size=(c.quick_size or c.size) if quick else c.size)
        if jax:
            if c.model not in jax_modules:
                jax_modules[c.model] = jaxshim.jax_entries(c.model)
            fns, note = jax_modules[c.model]
            item.jax_fn, item.jax_note = fns.get(c.entry), note
        out.append(item)
    return out
