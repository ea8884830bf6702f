"""jx.example_libraries: JAX's example optimizers and stax neural-network
layers, written on jx (jx.example_libraries.optimizers, .stax)."""
from . import optimizers, stax  # noqa: F401
