"""jx.fuzz: a differential fuzzer for jx.

Random programs over jx.numpy, jx.lax, jx.random and the transformations are
generated as Python source (`gen`), run in worker processes on the eager NumPy
reference, the evaluated graph, jx.jit, optionally a compiled artifact and JAX
(`worker`, `engines`), compared with dtype-aware tolerances (`compare`), and
each failure is shrunk to a small program and written out as a pytest file
(`shrink`). `python -m jx.fuzz --seconds 600 [--seed N] [--out DIR] [--jax]
[--artifact]` runs it (see `run`).
"""
from .gen import generate  # noqa: F401
from .run import fuzz  # noqa: F401
