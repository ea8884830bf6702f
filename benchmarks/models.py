"""Suite entries not in samples/: matrix products and a dispatch-overhead call.

    jx bench benchmarks/models.py
"""
import jx


@jx.export(a=jx.f32[1024, 1024], b=jx.f32[1024, 1024])
def matmul(a, b):
    return a @ b


@jx.export(x=jx.f32[3])
def dispatch(x):
    # Three elements: the time is the cost of a call, not of its arithmetic.
    return x * 2.0 + 1.0
