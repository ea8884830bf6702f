"""Training with transformations: an SGD step and per-example gradients.

Entries:
  sgd_step(params, x, y) -> (new params, loss): value_and_grad of the MLP loss
      of samples/mlp.py over its parameter pytree, then one SGD update.
  per_example_grads(w, b, x, y) -> gradients of a logistic-regression loss for
      each of the 256 examples separately: vmap(grad(...)).

    jx dump-ir samples/train.py --entry sgd_step
    jx dump-ir samples/train.py --entry per_example_grads --after trace
"""
import jx
import jx.numpy as jnp
from mlp import BATCH, PARAMS, loss

LEARNING_RATE = 0.01


@jx.export(params=PARAMS, x=jx.f32[BATCH, 784], y=jx.i32[BATCH])
def sgd_step(params, x, y):
    value, grads = jx.value_and_grad(loss)(params, x, y)
    new_params = jx.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    return new_params, value


def logistic_loss(w, b, x, y):
    """Binary cross-entropy of one example (x: f32[64], y: f32[] in {0, 1})."""
    z = jnp.dot(x, w) + b
    return jnp.logaddexp(0.0, z) - y * z


@jx.export(w=jx.f32[64], b=jx.f32[()], x=jx.f32[256, 64], y=jx.f32[256])
def per_example_grads(w, b, x, y):
    return jx.vmap(jx.grad(logistic_loss, argnums=(0, 1)), in_axes=(None, None, 0, 0))(w, b, x, y)
