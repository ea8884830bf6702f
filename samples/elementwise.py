"""Memory-bound elementwise work on 16M float32 values (64 MiB per array).

Entries:
  chain(x: f32[4096,4096])           ~12 elementwise ops (tanh, exp, sqrt, ...) in a row;
                                     fused, it reads x once and writes the result once
  sum_of_squares(x: f32[4096,4096])  a square followed by a full reduction to f32[]

    jx dump-ir samples/elementwise.py
"""
import jx
import jx.numpy as jnp

N = 4096          # 4096 * 4096 = 16M elements


@jx.export(x=jx.f32[N, N])
def chain(x):
    y = jnp.tanh(x * 0.5 + 1.0)
    y = jnp.exp(-jnp.abs(y)) * 2.0
    y = jnp.sqrt(y + x * x)
    y = y - 0.25 * x
    return jnp.maximum(y, 0.0)


@jx.export(x=jx.f32[N, N])
def sum_of_squares(x):
    return jnp.sum(x * x)
