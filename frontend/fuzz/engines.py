"""The engines a fuzz program runs on. Each takes the program's source and its
inputs and returns a flat list of NumPy arrays (or raises).

ref       the traced graph as it is, evaluated by eval_graph: every primitive's
          NumPy reference (the oracle)
graph     the traced graph after the pass pipeline, evaluated by eval_graph
jit       jx.jit: fused, compiled to native code
artifact  jx compile's machinery: build_artifact, then jx.runtime.load
jax       the same source with jnp/lax/jx bound to JAX's (when installed)
"""
from __future__ import annotations

import os
import tempfile
import types

import numpy as np


def _compile(source: str, ns: dict):
    local = dict(ns)
    exec(compile(source, "<fuzz program>", "exec"), local)
    return local["f"]


def jx_namespace() -> dict:
    import jx
    import jx.lax as lax
    import jx.numpy as jnp
    return {"jx": jx, "jnp": jnp, "lax": lax, "np": np}


def _flat(outs) -> list:
    return [np.asarray(o) for o in outs]


def run_ref(source: str, inputs: list) -> list:
    import jx
    fn = _compile(source, jx_namespace())
    return _flat(jx.eval_graph(jx.make_graph(fn)(*inputs), *inputs))


def run_graph(source: str, inputs: list) -> list:
    import jx
    from jx.passes import pipeline
    fn = _compile(source, jx_namespace())
    graph = pipeline.run(jx.make_graph(fn)(*inputs), check=True)
    return _flat(jx.eval_graph(graph, *inputs))


def run_jit(source: str, inputs: list) -> list:
    import jx
    return _flat(jx.jit(_compile(source, jx_namespace()))(*inputs))


def run_artifact(source: str, inputs: list) -> list:
    import jx
    import jx.runtime
    from jx.codegen.cpu.artifact import EntryProgram, build_artifact
    from jx.passes import pipeline
    from jx.passes.fuse import fuse
    fn = _compile(source, jx_namespace())
    graph = jx.make_graph(fn)(*inputs)
    names = [f"a{k}" for k in range(len(inputs))]
    entry = EntryProgram("f", fuse(pipeline.run(graph, check=False)), graph.in_tree.children[0],
                         graph.out_tree, names)
    with tempfile.TemporaryDirectory(prefix="jx-fuzz-") as out:
        res = build_artifact("fuzzcase", [entry], out)
        art = jx.runtime.load(res["library"])
        outs = art.f(*inputs)
        return [np.array(o) for o in (outs if isinstance(outs, (tuple, list)) else [outs])]


_JAX = None


def jax_namespace() -> dict:
    global _JAX
    if _JAX is None:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jjnp
        rnd = types.SimpleNamespace(PRNGKey=jax.random.PRNGKey, key=jax.random.PRNGKey,
                                    uniform=jax.random.uniform, normal=jax.random.normal,
                                    split=jax.random.split, fold_in=jax.random.fold_in)
        shim = types.SimpleNamespace(grad=jax.grad, vmap=jax.vmap, jvp=jax.jvp, jit=jax.jit,
                                     value_and_grad=jax.value_and_grad, random=rnd)
        _JAX = {"jx": shim, "jnp": jjnp, "lax": jax.lax, "np": np}
    return _JAX


def jax_available() -> bool:
    try:
        import jax  # noqa: F401
        return True
    except ImportError:
        return False


def run_jax(source: str, inputs: list, x64: bool = False) -> list:
    import jax
    with jax.enable_x64(x64):
        fn = jax.jit(_compile(source, jax_namespace()))
        return [np.asarray(o) for o in jax.device_get(fn(*inputs))]


ENGINES = {"ref": run_ref, "graph": run_graph, "jit": run_jit, "artifact": run_artifact,
           "jax": run_jax}
