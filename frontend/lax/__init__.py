"""jx.lax: the primitives as functions, plus structured control flow.

Unlike jx.numpy these do no implicit promotion or broadcasting of arrays
(Python scalars are still accepted and take the other operand's dtype).
"""
from .ops import *  # noqa: F401,F403
from .sorting import sort, sort_key_val  # noqa: F401
from .control_flow import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .collectives import *  # noqa: F401,F403


# jax.lax's public names jx.lax does not have yet (JAX 0.10.2), and the nearest
# jx function where there is one (jx.numpy's promote operands where lax's do not)
_JAX_ONLY = frozenset("""
    after_all dce_sink igamma_grad_a pbroadcast pcast precv psend pshuffle ragged_all_to_all
    ragged_dot_general random_gamma_grad reduce_window_shape_tuple scaled_dot stage
    AccuracyMode ConvDimensionNumbers ConvGeneralDilatedDimensionNumbers DotAlgorithm
    DotAlgorithmPreset DotDimensionNumbers FftType GatherScatterMode PrecisionLike
    RaggedDotDimensionNumbers RandomAlgorithm RoundingMethod Tolerance acos acosh
    approx_max_k approx_min_k asin asinh associative_scan atan atanh bessel_i0e
    bessel_i1e betainc broadcast_like broadcast_shapes broadcast_to_rank cbrt clamp
    clz collapse complex composite conj conv conv_dimension_numbers
    conv_general_dilated conv_general_dilated_local conv_general_dilated_patches
    conv_general_permutations conv_general_shape_tuple conv_shape_tuple conv_transpose
    conv_transpose_shape_tuple conv_with_general_padding cosh create_token
    cumlogsumexp custom_linear_solve custom_root digamma dtype empty erf_inv erfc exp2
    fft full full_like igamma igammac imag index_in_dim index_take integer_pow lgamma
    linalg mulhi nextafter optimization_barrier padtype_to_pads platform_dependent
    polygamma population_count psum_scatter pswapaxes ragged_dot real reciprocal
    reduce reduce_and reduce_or reduce_precision reduce_window reduce_xor
    rng_bit_generator rng_uniform scatter_apply scatter_sub select_n shape_as_value
    sinh slice_in_dim split square stack tile top_k unstack with_sharding_constraint
    zeta
""".split())
_NEAREST = {
    **{n: f"jx.numpy.{m}" for n, m in [("acos", "arccos"), ("acosh", "arccosh"),
                                        ("asin", "arcsin"), ("asinh", "arcsinh"),
                                        ("atan", "arctan"), ("atanh", "arctanh"),
                                        ("cbrt", "cbrt"), ("cosh", "cosh"), ("sinh", "sinh"),
                                        ("exp2", "exp2"), ("nextafter", "nextafter"),
                                        ("square", "square"), ("reciprocal", "reciprocal"),
                                        ("full", "full"), ("full_like", "full_like"),
                                        ("empty", "empty"), ("tile", "tile"), ("stack", "stack"),
                                        ("split", "split"), ("unstack", "unstack"),
                                        ("clamp", "clip (lax.clamp takes min, x, max)")]},
    **{n: f"jx.scipy.special.{m}" for n, m in [("lgamma", "gammaln"), ("digamma", "digamma"),
                                                ("igamma", "gammainc"), ("igammac", "gammaincc"),
                                                ("betainc", "betainc"), ("erf_inv", "erfinv"),
                                                ("erfc", "erfc"), ("polygamma", "polygamma"),
                                                ("zeta", "zeta"), ("bessel_i0e", "i0e"),
                                                ("bessel_i1e", "i1e")]},
    "integer_pow": "x ** n", "top_k": "jx.numpy.argsort and take_along_axis",
    "associative_scan": "jx.lax.scan", "cumlogsumexp": "jx.lax.scan with logaddexp",
    "select_n": "nested jx.lax.select", "reduce": "jx.numpy's reductions",
    "reduce_and": "jx.numpy.all", "reduce_or": "jx.numpy.any",
    "slice_in_dim": "jx.lax.slice", "index_in_dim": "jx.lax.index_take or indexing",
}


def __getattr__(name):
    from ..errors import missing_name
    conv = name.startswith(("conv", "Conv")) or "window" in name
    raise missing_name("jx.lax", name, _JAX_ONLY, _NEAREST, "not implemented yet: convolutions "
                       "and windowed reductions come with their issue" if conv else "")
