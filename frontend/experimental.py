"""jx.experimental: the names JAX programs import from jax.experimental.

`enable_x64` / `disable_x64` are context managers switching 64-bit mode for a block
(see jx.flags); JAX now also has them as `jax.enable_x64`, which jx has too.
"""
from .flags import disable_x64, enable_x64  # noqa: F401
