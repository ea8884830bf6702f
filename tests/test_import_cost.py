"""Import less (issue 27): `import jx` and a program's first elementwise jx.jit load
only what they use. Asserted on the modules loaded (in a fresh process), not on
time: the families below load on first use of their API, and must not come back
into the first call by an eager import."""
from __future__ import annotations

import json
import os
import subprocess
import sys

# loaded by no first elementwise jit: each is a family of the API (or a tool) that
# loads on its first use
LAZY = [
    "jx.nn", "jx.nn.initializers", "jx.random", "jx.random._core", "jx.export", "jx.bake",
    "jx.numpy.linalg", "jx.numpy.fft", "jx.lax.linalg", "jx.scipy",
    # the transformations' rule families (interpreters.RuleTable fills them on first read)
    "jx.passes.jvp", "jx.passes.vjp", "jx.passes.vmap",
    "jx.passes.jvp_rules", "jx.passes.vjp_rules", "jx.passes.vmap_rules",
    "jx.passes.custom_rules", "jx.passes.control_rules", "jx.passes.indexing_rules",
    "jx.passes.sort_rules", "jx.passes.collective_rules", "jx.passes.linalg_rules",
    "jx.passes.conv_rules", "jx.passes.windowed_rules", "jx.passes.fft_rules",
    "jx.passes.fft_lax_rules",
    # code generation of matrix products, convolutions and FFTs (their lowerings import them)
    "jx.codegen.cpu.gemm", "jx.codegen.cpu.fft_plan", "jx.codegen.cpu.fft_stages",
    "jx.codegen.cpu.fft_tables", "jx.codegen.cpu.fft_butterfly",
    "jx.codegen.cpu.gemm_pieces", "jx.codegen.cpu.conv_pieces", "jx.codegen.cpu.conv_direct",
    # other backends and the tools
    "jx.codegen.cuda", "jx.cli", "jx.benchmarks", "jx.fuzz",
    "cupy", "click", "rich", "numpy.fft",
]

FIRST_JIT = """
import json, sys
import numpy as np
import jx, jx.numpy as jnp
f = jx.jit(lambda x: jnp.sin(x) * 2 + 1)
out = f(np.ones(4, np.float32))
assert np.allclose(np.asarray(out), np.sin(1) * 2 + 1)
print(json.dumps(sorted(sys.modules)))
"""


def _modules(code: str, cache_dir) -> set:
    env = {**os.environ, "JX_CACHE_DIR": str(cache_dir)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=env, check=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def _loaded(mods: set, names) -> list:
    return sorted(n for n in names if n in mods or any(m.startswith(n + ".") for m in mods))


def test_import_jx_loads_only_its_version(tmp_path):
    mods = _modules("import sys, json, jx\nprint(json.dumps(sorted(sys.modules)))", tmp_path)
    assert sorted(m for m in mods if m == "jx" or m.startswith("jx.")) == ["jx", "jx.version"]
    assert not _loaded(mods, ["numpy", "llvmlite", "cupy", "click"])


def test_first_elementwise_jit_loads_no_lazy_family(tmp_path):
    # twice: the first call compiles (a cache miss), the second loads the cached object
    for _ in range(2):
        mods = _modules(FIRST_JIT, tmp_path)
        assert "jx.codegen.cpu.jit" in mods           # (it did compile for the CPU)
        assert not _loaded(mods, LAZY), "loaded by a first elementwise jit: " + \
            ", ".join(_loaded(mods, LAZY))


def test_the_lazy_families_load_on_first_use(tmp_path):
    code = """
import json, sys
import numpy as np
import jx, jx.numpy as jnp
x = np.arange(1.0, 5.0, dtype=np.float32)
assert abs(float(jx.grad(lambda v: jnp.sum(jnp.sin(v)))(x)[0]) - np.cos(1.0)) < 1e-6
assert jx.vmap(lambda v: v * 2)(x.reshape(2, 2)).shape == (2, 2)
assert abs(float(jnp.linalg.norm(x)) - np.linalg.norm(x)) < 1e-5
assert np.allclose(np.asarray(jnp.fft.fft(x)), np.fft.fft(x), atol=1e-4)
assert jx.random.PRNGKey(0).shape == (2,) and callable(jx.nn.relu)
assert callable(jx.export) and jx.Entry.__name__ == "Entry" and jx.lax.linalg.qr
from jx.passes.jvp import jvp_rules
from jx.passes.vmap import batch_rules
assert set(jx.PRIMITIVES) <= set(jvp_rules) and "sin" in batch_rules
print(json.dumps(sorted(sys.modules)))
"""
    mods = _modules(code, tmp_path)
    assert {"jx.nn", "jx.random", "jx.export", "jx.numpy.linalg", "jx.numpy.fft",
            "jx.lax.linalg", "jx.passes.jvp_rules", "jx.passes.linalg_rules"} <= mods


def test_dir_lists_the_lazy_names():
    import jx
    import jx.numpy as jnp
    assert {"nn", "random", "export", "Entry", "entries_of"} <= set(dir(jx))
    assert {"linalg", "fft"} <= set(dir(jnp))
    assert "linalg" in dir(jx.lax)
