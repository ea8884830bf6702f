"""Thin functions over the primitives, with lax's names and signatures."""
from __future__ import annotations

import enum

import numpy as np

from .. import dtypes
from ..core import Tracer
from ..errors import ShapeError
from ..numpy.creation import _wrap_public
from ..numpy._util import as_value, bind1, broadcast_to, convert, dtype_weak, is_scalar_const, \
    shape_of
from ..prims import bitcast as bc
from ..prims import elementwise as ew
from ..prims import linalg as la
from ..prims import reductions as rd
from ..prims import structural as st


def _scalars_to(args):
    """Python scalars take the dtype and shape of the array operands (lax semantics)."""
    arrays = [as_value(a) for a in args if not is_scalar_const(a)]
    if not arrays:          # scalars alone stay weak (lax.add(1.0, 2.0) is weak, as JAX)
        return list(args)
    ref = arrays[0]
    tracers = [a for a in arrays if isinstance(a, Tracer)]
    out = []
    for a in args:
        if is_scalar_const(a):
            a = broadcast_to(convert(a, ref.dtype), shape_of(ref), tracers)
        out.append(as_value(a))
    return out


def _n(prim):
    def fn(*args):
        return bind1(prim, *_scalars_to(args))
    fn.__name__ = prim.name
    return fn


add, sub, mul, div, rem, pow = (_n(p) for p in (ew.add, ew.sub, ew.mul, ew.div, ew.rem,
                                                 ew.pow_))
def _ordered(prim, name):
    """lax.max/min: complex operands (of one shape and dtype) in lexicographic order,
    as XLA's; the rest through the primitive."""
    def fn(x, y):
        a, b = _scalars_to([x, y])
        (da, _), (db, _) = dtype_weak(a), dtype_weak(b)
        if dtypes.is_complex(da) and da == db and shape_of(a) == shape_of(b):
            from ..numpy import ufuncs
            return getattr(ufuncs, name)(a, b)
        return bind1(prim, a, b)
    fn.__name__ = prim.name
    return fn


max, min = _ordered(ew.max_, "maximum"), _ordered(ew.min_, "minimum")
atan2 = _n(ew.atan2)
neg, abs, sign = _n(ew.neg), _n(ew.abs_), _n(ew.sign)
exp, log, log1p, expm1 = _n(ew.exp), _n(ew.log), _n(ew.log1p), _n(ew.expm1)
sqrt, rsqrt, tanh, logistic = _n(ew.sqrt), _n(ew.rsqrt), _n(ew.tanh), _n(ew.logistic)
sin, cos, tan, erf = _n(ew.sin), _n(ew.cos), _n(ew.tan), _n(ew.erf)
floor, ceil, is_finite = _n(ew.floor), _n(ew.ceil), _n(ew.is_finite)
eq, ne, lt, le, gt, ge = (_n(p) for p in (ew.eq, ew.ne, ew.lt, ew.le, ew.gt, ew.ge))
bitwise_and, bitwise_or, bitwise_xor, bitwise_not = _n(ew.and_), _n(ew.or_), _n(ew.xor), \
    _n(ew.not_)
shift_left = _n(ew.shift_left)
shift_right_logical = _n(ew.shift_right_logical)
shift_right_arithmetic = _n(ew.shift_right_arithmetic)


real, imag = _n(ew.real), _n(ew.imag)


def complex(x, y):
    """x + i*y from float parts of one dtype (float32 -> complex64, float64 ->
    complex128); Python scalars take the other operand's dtype."""
    return bind1(ew.complex_, *_scalars_to([x, y]))


def conj(x):
    """The complex conjugate; a float operand is first made complex, as in JAX."""
    x = as_value(x)
    if dtypes.is_float(dtype_weak(x)[0]):
        x = convert(x, dtypes.complex_dtype(dtype_weak(x)[0]), weak=dtype_weak(x)[1])
    return bind1(ew.conj, x)


def round(x, rounding_method="away_from_zero"):
    methods = {0: "away_from_zero", 1: "to_nearest_even"}
    return bind1(ew.round_, as_value(x), rounding_method=methods.get(rounding_method,
                                                                     rounding_method))


def select(pred, on_true, on_false):
    return bind1(ew.select, as_value(pred), *_scalars_to([on_true, on_false]))


def convert_element_type(x, new_dtype):
    return convert(as_value(x), dtypes.canonicalize(new_dtype, "convert_element_type"))


def bitcast_convert_type(x, new_dtype):
    """The bits of x reinterpreted as new_dtype (one width: float32 <-> int32, ...)."""
    return bind1(bc.bitcast_convert_type, as_value(x),
                 new_dtype=dtypes.canonicalize(new_dtype, "bitcast_convert_type"))


def broadcast_in_dim(x, shape, broadcast_dimensions):
    return bind1(st.broadcast_in_dim, as_value(x), shape=tuple(shape),
                 broadcast_dimensions=tuple(broadcast_dimensions))


def broadcast(x, sizes):
    x = as_value(x)
    nd = len(shape_of(x))
    return broadcast_in_dim(x, tuple(sizes) + shape_of(x),
                            tuple(range(len(sizes), len(sizes) + nd)))


def reshape(x, new_sizes, dimensions=None):
    x = as_value(x)
    if dimensions is not None:
        x = transpose(x, dimensions)
    return bind1(st.reshape, x, new_sizes=tuple(new_sizes))


def transpose(x, permutation):
    return bind1(st.transpose, as_value(x), permutation=tuple(permutation))


def squeeze(x, dimensions):
    return bind1(st.squeeze, as_value(x), dimensions=tuple(dimensions))


def expand_dims(x, dimensions):
    return bind1(st.expand_dims, as_value(x), dimensions=tuple(dimensions))


def slice(x, start_indices, limit_indices, strides=None):
    strides = (1,) * len(start_indices) if strides is None else tuple(strides)
    return bind1(st.slice_, as_value(x), start_indices=tuple(start_indices),
                 limit_indices=tuple(limit_indices), strides=strides)


def pad(x, padding_value, padding_config):
    x = as_value(x)
    pv = convert(padding_value, x.dtype) if is_scalar_const(padding_value) else padding_value
    return bind1(st.pad, x, pv, padding_config=tuple(tuple(c) for c in padding_config))


def concatenate(operands, dimension):
    return bind1(st.concatenate, *[as_value(o) for o in operands], dimension=dimension)


def rev(x, dimensions):
    return bind1(st.rev, as_value(x), dimensions=tuple(dimensions))


def iota(dtype, size):
    return bind1(st.iota, dtype=np.dtype(dtype), shape=(size,), dimension=0)


def broadcasted_iota(dtype, shape, dimension):
    return bind1(st.iota, dtype=np.dtype(dtype), shape=tuple(shape), dimension=dimension)


def reduce_sum(x, axes):
    return bind1(rd.reduce_sum, as_value(x), axes=tuple(axes))


def reduce_max(x, axes):
    return bind1(rd.reduce_max, as_value(x), axes=tuple(axes))


def reduce_min(x, axes):
    return bind1(rd.reduce_min, as_value(x), axes=tuple(axes))


def reduce_prod(x, axes):
    return bind1(rd.reduce_prod, as_value(x), axes=tuple(axes))


def argmax(x, axis, index_dtype=np.int32):
    return bind1(rd.argmax, as_value(x), axis=axis, index_dtype=np.dtype(index_dtype))


def argmin(x, axis, index_dtype=np.int32):
    return bind1(rd.argmin, as_value(x), axis=axis, index_dtype=np.dtype(index_dtype))


def cumsum(x, axis=0, reverse=False):
    return bind1(rd.cumsum, as_value(x), axis=axis, reverse=reverse)


def cumprod(x, axis=0, reverse=False):
    return bind1(rd.cumprod, as_value(x), axis=axis, reverse=reverse)


def cummax(x, axis=0, reverse=False):
    return bind1(rd.cummax, as_value(x), axis=axis, reverse=reverse)


def cummin(x, axis=0, reverse=False):
    return bind1(rd.cummin, as_value(x), axis=axis, reverse=reverse)


class Precision(enum.Enum):
    """lax's matmul precision: DEFAULT, HIGH, HIGHEST, or the strings JAX takes
    (Precision("highest"), "float32", "tensorfloat32", ...). jx accepts it and
    computes every product in its operands' type (or preferred_element_type) on
    the CPU, whatever the setting."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        name = _PRECISION_NAMES.get(value) if isinstance(value, str) else None
        return None if name is None else cls[name]

    def __repr__(self) -> str:
        return f"Precision.{self.name}"

    def __str__(self) -> str:
        return self.name


_PRECISION_NAMES = {"default": "DEFAULT", "fastest": "DEFAULT", "bfloat16": "DEFAULT",
                    "high": "HIGH", "tensorfloat32": "HIGH", "bfloat16_3x": "HIGH",
                    "highest": "HIGHEST", "float32": "HIGHEST"}


def _precision(precision, who: str):
    """precision checked as JAX does (None, a Precision or its string, or a pair of
    either kind for the two operands); it has no effect on jx's CPU products."""
    def one(p):
        if isinstance(p, Precision):
            return p
        if isinstance(p, str) and p in _PRECISION_NAMES:
            return Precision(p)
        return None
    if precision is None:
        return None
    if isinstance(precision, (tuple, list)) and len(precision) == 2:
        pair = tuple(one(p) for p in precision)
        same_kind = isinstance(precision[0], str) == isinstance(precision[1], str)
        if None not in pair and same_kind:
            return pair
    elif one(precision) is not None:
        return one(precision)
    raise ValueError(f"jx.lax.{who}: precision must be None, a jx.lax.Precision, one of "
                     f"the strings {sorted(_PRECISION_NAMES)} or a pair of Precisions (or "
                     f"of strings) for the two operands; got {precision!r}")


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                *, out_sharding=None):
    """Contract dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch,
    rhs_batch)). preferred_element_type: the result's dtype, the products
    accumulated in it (int8 x int8 -> int32, float16 -> float32), as in JAX."""
    _precision(precision, "dot_general")
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    pet = None if preferred_element_type is None else \
        dtypes.canonicalize(preferred_element_type, "dot_general")
    return bind1(la.dot_general, as_value(lhs), as_value(rhs), dimension_numbers=dn,
                 preferred_element_type=pet)


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, dimension_numbers=None,
        out_sharding=None):
    """lhs's last axis contracted with rhs's first (vector . vector, matrix .
    vector, matrix . matrix); with dimension_numbers, dot_general."""
    _precision(precision, "dot")
    lhs, rhs = as_value(lhs), as_value(rhs)
    if dimension_numbers is None:
        dimension_numbers = (((len(shape_of(lhs)) - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers,
                       preferred_element_type=preferred_element_type)


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over the leading (batch) axes: (..., m, k) x (..., k, n) ->
    (..., m, n), both operands of one rank (at least 2) and batch shape."""
    _precision(precision, "batch_matmul")
    lhs, rhs = as_value(lhs), as_value(rhs)
    sl, sr = shape_of(lhs), shape_of(rhs)
    if len(sl) < 2 or len(sl) != len(sr) or sl[:-2] != sr[:-2]:
        raise ShapeError(f"jx.lax.batch_matmul: operands must have one rank of at least 2 "
                         f"and the same batch shape, got {sl} and {sr}")
    nb = tuple(range(len(sl) - 2))
    return dot_general(lhs, rhs, (((len(sl) - 1,), (len(sl) - 2,)), (nb, nb)))


def stop_gradient(x):
    """Identity whose derivative is zero (pytrees allowed), as jax.lax.stop_gradient."""
    from .. import tree
    from ..prims import autodiff as ad
    return tree.tree_map(lambda v: bind1(ad.stop_gradient, as_value(v)), x)


__all__ = [n for n, v in list(globals().items())
           if callable(v) and getattr(v, "__module__", None) == __name__ and n[0] != "_"]
_wrap_public(globals(), __all__)      # (functions only: Precision stays the class)
