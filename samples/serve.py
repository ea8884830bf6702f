"""The MLP classifier of mlp.py served at any batch size: one artifact whose
entries take a symbolic batch B (1 to 4096), called with whatever batch arrives:
no recompilation, no padding.

Entries (float32):
  predict(params, x: f32[B,784])          logits f32[B,10]
  classify(params, x: f32[B,784])         the most likely class of each row, i32[B]

    jx compile samples/serve.py -o build      # build/libserve.so, build/serve.h
    jx dump-ir samples/serve.py --entry classify
"""
import jx
import jx.numpy as jnp

import mlp

BATCH = jx.dim("B", max=4096)


@jx.export(params=mlp.PARAMS, x=jx.f32[BATCH, 784])
def predict(params, x):
    return mlp.predict(params, x)


@jx.export(params=mlp.PARAMS, x=jx.f32[BATCH, 784])
def classify(params, x):
    return jnp.argmax(mlp.predict(params, x), axis=-1).astype(jnp.int32)
