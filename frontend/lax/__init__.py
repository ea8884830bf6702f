"""jx.lax: the primitives as functions, plus structured control flow.

Unlike jx.numpy these do no implicit promotion or broadcasting of arrays
(Python scalars are still accepted and take the other operand's dtype).
"""
from .ops import *  # noqa: F401,F403
from .sorting import sort, sort_key_val  # noqa: F401
from .control_flow import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .collectives import *  # noqa: F401,F403
from .extras import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .shapes import *  # noqa: F401,F403
from .scans import *  # noqa: F401,F403
from .solvers import custom_linear_solve, custom_root  # noqa: F401
from .convolution import *  # noqa: F401,F403
from .windowed import *  # noqa: F401,F403
from .fft import *  # noqa: F401,F403
# jx.lax.linalg loads on first use (__getattr__ below)


# jax.lax's public names jx.lax does not have yet (JAX 0.10.2), and the nearest
# jx function where there is one (jx.numpy's promote operands where lax's do not)
_JAX_ONLY = frozenset("""
    after_all dce_sink igamma_grad_a pbroadcast pcast precv psend pshuffle
    ragged_all_to_all ragged_dot_general random_gamma_grad
    scaled_dot stage AccuracyMode
    DotAlgorithm DotAlgorithmPreset
    DotDimensionNumbers GatherScatterMode PrecisionLike
    RaggedDotDimensionNumbers RandomAlgorithm RoundingMethod Tolerance approx_max_k
    approx_min_k broadcast_like composite
    create_token dtype
    platform_dependent psum_scatter pswapaxes ragged_dot
    rng_bit_generator rng_uniform scatter_apply scatter_sub
    with_sharding_constraint
""".split())
_NEAREST = {"approx_max_k": "jx.lax.top_k (exact)",
            "approx_min_k": "jx.lax.top_k of the negated operand (exact)"}


def __getattr__(name):
    if name == "linalg":
        import importlib
        return importlib.import_module(f"{__name__}.linalg")
    from ..errors import missing_name
    conv = name.startswith(("conv", "Conv")) or "window" in name
    raise missing_name("jx.lax", name, _JAX_ONLY, _NEAREST, "not implemented yet: convolutions "
                       "and windowed reductions come with their issue" if conv else "")


def __dir__():
    return sorted(set(globals()) | {"linalg"})
