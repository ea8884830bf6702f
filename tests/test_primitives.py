"""Every primitive of the elementwise, structural, reduction and linalg families,
one table row each, against an oracle written apart from the reference impl
(Python ints and math, float64 and complex128 NumPy, index loops), on every
dtype kind the primitive accepts (float, int, bool, complex), called eagerly through
bind and traced through make_graph -> verify -> eval_graph. Then the shape
rules: wrong dtypes, shapes, axes, permutations, slices and broadcasts raise
jx.ShapeError naming the primitive and the problem."""
from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import jx
from jx import core
from jx.ir import ShapedArray, aval_of

# float64 data and references, as in JAX's own tests with jax_enable_x64
pytestmark = pytest.mark.x64

F16, F32, F64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
I32, I64, U32, BOOL = np.dtype("int32"), np.dtype("int64"), np.dtype("uint32"), np.dtype(bool)
C64, C128 = np.dtype("complex64"), np.dtype("complex128")
DTYPES = [F16, F32, F64, I32, I64, U32, BOOL, C64, C128]
SHAPES = [(), (7,), (3, 5), (2, 3, 4)]
TOL = {F16: 4e-3, F32: 3e-6, F64: 1e-12, C64: 3e-6, C128: 1e-12}
PARTS = {C64: F32, C128: F64}       # a complex dtype's real and imaginary parts


def kind(dt) -> str:
    dt = np.dtype(dt)
    return "b" if dt == BOOL else ("f" if dt.kind == "f" else "c" if dt.kind == "c" else "i")


# ---------------------------------------------------------------- inputs

def rand(rng, shape, dt, domain="any"):
    """Random values of dtype dt; `domain` keeps them where the op is defined."""
    with np.errstate(all="ignore"):     # huge values become inf in f16: on purpose
        return _rand(rng, shape, np.dtype(dt), domain)


def _rand(rng, shape, dt, domain):
    k = kind(dt)
    if k == "c":
        return _rand_complex(rng, shape, dt, domain)
    if k == "b":
        return rng.random(shape) < 0.5
    if k == "f":
        if domain == "pos":
            x = rng.uniform(0.1, 4.0, shape)
        elif domain == "near1":   # products of many stay in range, even in f16
            x = rng.uniform(0.6, 1.4, shape) * rng.choice([-1.0, 1.0], shape)
        elif domain == "halves":  # exact .5 ties, plus values off the ties
            x = rng.integers(-9, 10, shape) / 2 + rng.choice([0, 0, 0.1, -0.3], shape)
        elif domain == "ties":    # few distinct values: comparisons see equality
            x = rng.integers(-2, 3, shape) / 2
        elif domain == "special":
            x = rng.choice([0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e30], shape)
        elif domain == "convert":  # out of every int range, NaN, inf, and ordinary
            x = rng.choice([0.0, -0.7, 2.5, -3.9, 300.2, -1e12, 1e12, 4e9, np.nan, np.inf,
                            -np.inf, 65000.0, -129.5], shape)
        else:
            x = rng.standard_normal(shape) * 2
        return np.asarray(x, dtype=dt)
    info = np.iinfo(dt)
    bits = dt.itemsize * 8
    lo, hi = (0, 41) if dt.kind == "u" else (-20, 21)
    if domain in ("bits", "convert"):
        return np.asarray(rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True))
    if domain == "small":
        lo, hi = (0, 5) if dt.kind == "u" else (-4, 5)
    elif domain == "exp":
        lo, hi = (0, 6)
    elif domain == "ties":
        lo, hi = (0, 3) if dt.kind == "u" else (-2, 3)
    elif domain == "shift":   # includes amounts outside [0, bits)
        lo, hi = (0 if dt.kind == "u" else -3), bits + 3
    x = np.asarray(rng.integers(lo, hi, shape), dtype=dt)
    if domain == "nonzero":
        x = np.where(x == 0, np.asarray(3, dt), x)
    return np.asarray(x, dtype=dt)


def _rand_complex(rng, shape, dt, domain):
    """Complex values from two draws of the parts' dtype. "near1": modulus near 1
    (long products stay in range); "pos": both parts positive; the integer-valued
    "small" and "nonzero" domains draw small integer parts, a nonzero real part."""
    part = PARTS[dt]
    if domain == "near1":
        z = rng.uniform(0.8, 1.2, shape) * np.exp(1j * rng.uniform(-np.pi, np.pi, shape))
        return np.asarray(z, dt)
    if domain == "small":
        re, im = (rng.integers(-4, 5, shape) for _ in range(2))
    else:
        re, im = (_rand(rng, shape, part, domain) for _ in range(2))
        if domain == "nonzero":
            re = np.where(re == 0, part.type(1.5), re)
    out = np.empty(shape, dt)
    out.real, out.imag = re, im     # (re + 1j * im would lose a -0.0 imaginary part)
    return out


# ---------------------------------------------------------------- oracle helpers

def up(x):
    """float64 for floats, complex128 for complex, int64 for ints: oracles compute
    wide, then cast."""
    k = kind(x.dtype)
    return x.astype(F64) if k == "f" else x.astype(C128) if k == "c" else \
        (x.astype(I64) if k == "i" else x)


def wrap(v: int, dt) -> int:
    """A Python int wrapped to dt's width (two's complement), as hardware does."""
    bits = dt.itemsize * 8
    v &= (1 << bits) - 1
    return v - (1 << bits) if dt.kind == "i" and v >= 1 << (bits - 1) else v


def pymap(fn, out_dt, *xs):
    """fn over Python scalars elementwise; ints are wrapped to out_dt."""
    out_dt = np.dtype(out_dt)
    vals = [fn(*v) for v in zip(*[x.ravel().tolist() for x in xs])]
    if kind(out_dt) == "i":
        vals = [wrap(int(v), out_dt) for v in vals]
    return np.array(vals, dtype=F64 if kind(out_dt) == "f" else out_dt) \
        .astype(out_dt).reshape(xs[0].shape)


def same(fn):
    """Oracle from a float64/int64 NumPy function, cast to the operand dtype."""
    return lambda *xs: np.asarray(fn(*[up(x) for x in xs])).astype(xs[0].dtype)


def to_bool(fn):
    return lambda *xs: np.asarray(fn(*[up(x) for x in xs])).astype(BOOL)


def c_div(a, b):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_rem(a, b):
    return 0 if b == 0 else a - b * c_div(a, b)


def int_pow(a, b):
    if b >= 0:
        return a ** b
    return 1 if a == 1 else ((-1) ** b if a == -1 else 0)


def shift(dt, op):
    bits = dt.itemsize * 8

    def fn(a, b):
        if op == "left":
            return 0 if not 0 <= b < bits else a << b
        if op == "logical":
            return 0 if not 0 <= b < bits else (a & ((1 << bits) - 1)) >> b
        signed = wrap(a, np.dtype(f"i{dt.itemsize}"))   # arithmetic: the bit pattern signed
        return signed >> (b if 0 <= b < bits else bits - 1)
    return fn


def half_away(v):
    if math.isnan(v) or math.isinf(v):
        return v
    d = decimal.Decimal(v).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP)
    return math.copysign(float(d), v)


def convert_one(v, dt):
    """One element converted: float -> int truncates, saturates, NaN -> 0."""
    if dt == BOOL:
        return bool(v != 0)            # NaN != 0
    if kind(dt) == "i":
        if isinstance(v, float):
            if math.isnan(v):
                return 0
            info = np.iinfo(dt)
            return int(max(info.min, min(info.max, math.trunc(v)))) if math.isfinite(v) \
                else (info.max if v > 0 else info.min)
        return wrap(int(v), dt)
    return float(v)


# ---------------------------------------------------------------- the table

@dataclass
class Row:
    name: str
    kinds: str                      # dtype kinds accepted: f(loat), i(nt), b(ool), c(omplex)
    cases: Callable                 # (rng, shape, dtype) -> [(args, params)]
    oracle: Callable                # (args, params) -> expected array, dtype included
    tol: float = 1.0                # times TOL[dtype]
    label: str = ""
    rejects: tuple = ()             # dtypes of an accepted kind the primitive refuses

    @property
    def prim(self):
        return jx.PRIMITIVES[self.name]

    def __repr__(self):
        return self.label or self.name


def ew(name, kinds, oracle, domains=("any",), params=None, tol=1.0, label="", int_oracle=None,
       rejects=()):
    """An elementwise row; `int_oracle` (Python ints) replaces `oracle` for int dtypes."""
    def cases(rng, shape, dt):
        return [([rand(rng, shape, dt, d) for d in domains], dict(params or {}))]

    def run(args, p):
        if int_oracle is not None and kind(args[0].dtype) == "i":
            return pymap(int_oracle, args[0].dtype, *args)
        return oracle(*args)
    return Row(name, kinds, cases, run, tol, label, rejects)


def _logistic(x):
    return 1 / (1 + np.exp(-x))


def _bitwise(int_fn, bool_fn):
    return lambda a, b: same(int_fn)(a, b) if kind(a.dtype) == "i" else bool_fn(a, b)


def _not(x):
    if x.dtype == BOOL:
        return np.logical_not(x)
    return (np.iinfo(x.dtype).max - up(x) if x.dtype.kind == "u" else -up(x) - 1).astype(x.dtype)


def _shift_row(name, op):
    def oracle(a, b):
        return pymap(shift(a.dtype, op), a.dtype, a, b)
    return ew(name, "i", oracle, ("bits", "shift"))


def _select_cases(rng, shape, dt):
    t, f = rand(rng, shape, dt), rand(rng, shape, dt)
    out = [([rand(rng, shape, BOOL), t, f], {})]
    if shape:   # a scalar predicate picks a whole operand
        out.append(([np.asarray(bool(rng.random() < 0.5)), t, f], {}))
    return out


def _select_oracle(args, p):
    pred, t, f = args
    pred = np.broadcast_to(pred, t.shape)
    return np.array([tv if pv else fv for pv, tv, fv in
                     zip(pred.ravel().tolist(), t.ravel().tolist(), f.ravel().tolist())],
                    dtype=t.dtype).reshape(t.shape)


def _convert_cases(rng, shape, dt):
    x = rand(rng, shape, dt, "convert")
    out = [([x], dict(new_dtype=to)) for to in DTYPES]
    out.append(([x], dict(new_dtype=dt, weak_type=True)))
    return out


def _convert_oracle(args, p):
    (x,), to = args, np.dtype(p["new_dtype"])
    if kind(to) == "c":
        return x.astype(to)
    if kind(x.dtype) == "c":     # to a real type: the real part, as XLA (bool: x != 0)
        x = (x != 0) if to == BOOL else x.real
    if kind(to) == "f":   # rounding to the nearest float is NumPy's cast, the definition
        return (x.astype(F64) if x.dtype == BOOL else x).astype(to)
    return pymap(lambda v: convert_one(v, to), to, x)


def _real_result(fn):
    """Oracle of a complex -> real function (abs, real, imag): the parts' dtype."""
    return lambda x: np.asarray(fn(up(x))).astype(PARTS.get(x.dtype, x.dtype))


def _complex_sign(x):
    """x / |x|, 0 at 0, for complex x (np.sign's complex meaning changed in NumPy 2)."""
    if kind(x.dtype) != "c":
        return same(np.sign)(x)
    z = up(x)
    m = np.abs(z)
    return np.where(m == 0, 0, z / np.where(m == 0, 1, m)).astype(x.dtype)


def _complex_oracle(re, im):
    out = np.empty(re.shape, np.result_type(re.dtype, np.complex64))
    out.real, out.imag = re, im
    return out


ELEMENTWISE = [
    ew("neg", "fic", same(np.negative)),
    ew("abs", "fic", _real_result(np.abs)),
    ew("sign", "fic", _complex_sign),
    ew("add", "fic", same(np.add), ("any", "any")),
    ew("sub", "fic", same(np.subtract), ("any", "any")),
    ew("mul", "fic", same(np.multiply), ("any", "any")),
    ew("div", "fic", same(np.divide), ("any", "nonzero"), int_oracle=c_div),
    ew("rem", "fi", same(np.vectorize(math.fmod)), ("any", "nonzero"), int_oracle=c_rem),
    ew("pow", "fic", same(np.power), ("pos", "any"), int_oracle=int_pow, tol=3,
       label="pow"),
    ew("pow", "i", None, ("small", "small"), int_oracle=int_pow, label="pow-negexp"),
    ew("max", "fib", same(np.maximum), ("ties", "ties")),
    ew("min", "fib", same(np.minimum), ("ties", "ties")),
    ew("atan2", "f", same(np.arctan2), ("any", "any")),
    ew("exp", "fc", same(np.exp)),
    ew("log", "fc", same(np.log), ("pos",)),
    ew("log1p", "fc", same(np.log1p), ("pos",)),
    ew("expm1", "fc", same(np.expm1)),
    ew("sqrt", "fc", same(np.sqrt), ("pos",)),
    ew("rsqrt", "fc", same(lambda x: 1 / np.sqrt(x)), ("pos",)),
    ew("tanh", "fc", same(np.tanh)),
    ew("logistic", "fc", same(_logistic)),
    ew("sin", "fc", same(np.sin)),
    ew("cos", "fc", same(np.cos)),
    ew("tan", "fc", same(np.tan), tol=3),
    ew("erf", "f", same(np.vectorize(math.erf))),
    ew("floor", "f", same(np.vectorize(math.floor, otypes=[F64])), ("halves",)),
    ew("ceil", "f", same(np.vectorize(math.ceil, otypes=[F64])), ("halves",)),
    ew("round", "f", same(np.vectorize(round, otypes=[F64])), ("halves",),
       dict(rounding_method="to_nearest_even"), label="round-even"),
    ew("round", "f", same(np.vectorize(half_away, otypes=[F64])), ("halves",),
       dict(rounding_method="away_from_zero"), label="round-away"),
    ew("is_finite", "f", to_bool(np.vectorize(math.isfinite)), ("special",)),
    ew("eq", "fibc", to_bool(np.equal), ("ties", "ties")),
    ew("ne", "fibc", to_bool(np.not_equal), ("ties", "ties")),
    ew("lt", "fib", to_bool(np.less), ("ties", "ties")),
    ew("le", "fib", to_bool(np.less_equal), ("ties", "ties")),
    ew("gt", "fib", to_bool(np.greater), ("ties", "ties")),
    ew("ge", "fib", to_bool(np.greater_equal), ("ties", "ties")),
    ew("and", "ib", _bitwise(np.bitwise_and, np.logical_and), ("bits", "bits")),
    ew("or", "ib", _bitwise(np.bitwise_or, np.logical_or), ("bits", "bits")),
    ew("xor", "ib", _bitwise(np.bitwise_xor, np.logical_xor), ("bits", "bits")),
    ew("not", "ib", _not, ("bits",)),
    _shift_row("shift_left", "left"),
    _shift_row("shift_right_logical", "logical"),
    _shift_row("shift_right_arithmetic", "arithmetic"),
    Row("select", "fibc", _select_cases, _select_oracle),
    Row("convert_element_type", "fibc", _convert_cases, _convert_oracle),
    ew("real", "c", _real_result(np.real)),
    ew("imag", "c", _real_result(np.imag)),
    ew("conj", "c", same(np.conj)),
    ew("complex", "f", _complex_oracle, ("any", "any"), rejects=(F16,)),
]


# ---------------------------------------------------------------- structural rows

def _bcast_cases(rng, shape, dt):
    n = len(shape)
    x = rand(rng, shape, dt)
    out = [([x], dict(shape=(2,) + shape, broadcast_dimensions=tuple(range(1, n + 1))))]
    if n:   # a size-1 operand dim stretches; a new dim in the middle
        ones = rand(rng, (1,) + shape[1:], dt)
        out.append(([ones], dict(shape=shape, broadcast_dimensions=tuple(range(n)))))
        tgt = shape[:1] + (3,) + shape[1:]
        out.append(([x], dict(shape=tgt, broadcast_dimensions=(0,) + tuple(range(2, n + 1)))))
    return out


def _bcast_oracle(args, p):
    (x,), shape, dims = args, p["shape"], p["broadcast_dimensions"]
    grid = np.indices(shape, dtype=np.int64)
    idx = tuple(grid[d] if x.shape[i] != 1 else np.zeros(shape, np.int64)
                for i, d in enumerate(dims))
    return x[idx] if dims else np.full(shape, x[()], dtype=x.dtype)


def _reshape_cases(rng, shape, dt):
    x = rand(rng, shape, dt)
    size = int(np.prod(shape))
    return [([x], dict(new_sizes=s)) for s in
            {shape[::-1], (size,), (1,) + shape, ()} if int(np.prod(s)) == size]


def _reshape_oracle(args, p):
    flat = args[0].ravel().tolist()    # row-major order, element by element
    return np.array(flat, dtype=args[0].dtype).reshape(p["new_sizes"])


def _transpose_cases(rng, shape, dt):
    n = len(shape)
    x = rand(rng, shape, dt)
    perms = {tuple(range(n))[::-1], tuple(range(1, n)) + (0,) if n else ()}
    return [([x], dict(permutation=p)) for p in perms]


def _transpose_oracle(args, p):
    x, perm = args[0], p["permutation"]
    out_shape = tuple(x.shape[q] for q in perm)
    out = np.empty(out_shape, x.dtype)
    for idx in np.ndindex(*out_shape):
        src = [0] * x.ndim
        for o, q in enumerate(perm):
            src[q] = idx[o]
        out[idx] = x[tuple(src)]
    return out


def _squeeze_cases(rng, shape, dt):
    x = rand(rng, (1,) + shape + (1,), dt)
    return [([x], dict(dimensions=(0, len(shape) + 1))), ([x], dict(dimensions=(0,)))]


def _squeeze_oracle(args, p):
    x = args[0]
    keep = [s for i, s in enumerate(x.shape) if i not in p["dimensions"]]
    return x.reshape(keep)


def _expand_cases(rng, shape, dt):
    x = rand(rng, shape, dt)
    n = len(shape)
    return [([x], dict(dimensions=d)) for d in ((0,), (n,), (0, n + 1))]


def _expand_oracle(args, p):
    shape = list(args[0].shape)
    for d in sorted(p["dimensions"]):
        shape.insert(d, 1)
    return args[0].reshape(shape)


def _slice_cases(rng, shape, dt):
    x = rand(rng, shape, dt)
    starts = tuple(min(1, s) for s in shape)
    out = [([x], dict(start_indices=starts, limit_indices=shape, strides=(2,) * len(shape))),
           ([x], dict(start_indices=(0,) * len(shape), limit_indices=shape,
                      strides=(1,) * len(shape)))]
    if shape:
        lim = tuple(s - 1 for s in shape)
        out.append(([x], dict(start_indices=starts, limit_indices=lim,
                              strides=(1,) * len(shape))))
    return out


def _slice_oracle(args, p):
    x = args[0]
    ranges = [list(range(s, l, st)) for s, l, st in
              zip(p["start_indices"], p["limit_indices"], p["strides"])]
    out = np.empty([len(r) for r in ranges], x.dtype)
    for idx in np.ndindex(*out.shape):
        out[idx] = x[tuple(r[i] for r, i in zip(ranges, idx))]
    return out


def _pad_cases(rng, shape, dt):
    x = rand(rng, shape, dt)
    v = rand(rng, (), dt)
    out = [([x, v], dict(padding_config=tuple((1, 2, 1) for _ in shape))),
           ([x, v], dict(padding_config=tuple((0, 1, 0) for _ in shape)))]
    if shape and min(shape) >= 2:   # negative edges crop
        out.append(([x, v], dict(padding_config=tuple((-1, 1, 2) for _ in shape))))
    return out


def _pad_oracle(args, p):
    x, v = args
    cfg = p["padding_config"]
    shape = [lo + hi + n + max(0, n - 1) * i for n, (lo, hi, i) in zip(x.shape, cfg)]
    out = np.full(shape, v[()], dtype=x.dtype)
    for idx in np.ndindex(*x.shape):
        pos = tuple(lo + j * (i + 1) for j, (lo, _, i) in zip(idx, cfg))
        if all(0 <= q < s for q, s in zip(pos, shape)):
            out[pos] = x[idx]
    return out


def _concat_cases(rng, shape, dt):
    out = []
    for d in range(len(shape)):
        parts = [rand(rng, shape[:d] + (k,) + shape[d + 1:], dt) for k in (1, shape[d], 2)]
        out.append((parts, dict(dimension=d)))
    return out


def _concat_oracle(args, p):
    d = p["dimension"]
    shape = list(args[0].shape)
    shape[d] = sum(a.shape[d] for a in args)
    out, offset = np.empty(shape, args[0].dtype), 0
    for a in args:
        for idx in np.ndindex(*a.shape):
            pos = list(idx)
            pos[d] += offset
            out[tuple(pos)] = a[idx]
        offset += a.shape[d]
    return out


def _rev_cases(rng, shape, dt):
    x = rand(rng, shape, dt)
    dims = {tuple(range(len(shape))), (0,) if shape else (), (len(shape) - 1,) if shape else ()}
    return [([x], dict(dimensions=d)) for d in dims]


def _rev_oracle(args, p):
    x = args[0]
    return x[tuple(slice(None, None, -1) if d in p["dimensions"] else slice(None)
                   for d in range(x.ndim))]


def _iota_cases(rng, shape, dt):
    return [([], dict(dtype=dt, shape=shape, dimension=d)) for d in range(len(shape))]


def _iota_oracle(args, p):
    shape, d = p["shape"], p["dimension"]
    out = np.empty(shape, p["dtype"])
    for idx in np.ndindex(*shape):
        out[idx] = idx[d]
    return out


STRUCTURAL = [
    Row("broadcast_in_dim", "fibc", _bcast_cases, _bcast_oracle),
    Row("reshape", "fibc", _reshape_cases, _reshape_oracle),
    Row("transpose", "fibc", _transpose_cases, _transpose_oracle),
    Row("squeeze", "fibc", _squeeze_cases, _squeeze_oracle),
    Row("expand_dims", "fibc", _expand_cases, _expand_oracle),
    Row("slice", "fibc", _slice_cases, _slice_oracle),
    Row("pad", "fibc", _pad_cases, _pad_oracle),
    Row("concatenate", "fibc", _concat_cases, _concat_oracle),
    Row("rev", "fibc", _rev_cases, _rev_oracle),
    Row("iota", "fic", _iota_cases, _iota_oracle),
]


# ---------------------------------------------------------------- reductions

def _axes_sets(n):
    return {tuple(range(n)), (0,) if n else (), (n - 1,) if n else (),
            (0, n - 1) if n >= 2 else ()}


def _reduce_row(name, kinds, fn, domain="any", tol=1.0):
    def cases(rng, shape, dt):
        x = rand(rng, shape, dt, domain)
        return [([x], dict(axes=a)) for a in _axes_sets(len(shape))]

    def oracle(args, p):
        x = args[0]
        wide = up(x) if x.dtype != BOOL else x.astype(I64)
        return np.asarray(fn(wide, axis=p["axes"])).astype(x.dtype)
    return Row(name, kinds, cases, oracle, tol)


def _moved(x, axis):
    """Slices along axis, as a Python list of arrays (for loop oracles)."""
    return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


def _arg_row(name, better):
    def cases(rng, shape, dt):
        x = rand(rng, shape, dt, "ties")
        return [([x], dict(axis=a, index_dtype=it)) for a in range(len(shape))
                for it in (I32, I64)]

    def oracle(args, p):
        x, axis = up(args[0]), p["axis"]
        best = np.zeros(x.shape[:axis] + x.shape[axis + 1:], np.int64)
        cur = _moved(x, axis)
        for i in range(1, len(cur)):    # strictly better: the first index wins ties
            take = better(cur[i], np.take_along_axis(
                x, np.expand_dims(best, axis), axis).squeeze(axis))
            best = np.where(take, i, best)
        return best.astype(p["index_dtype"])
    return Row(name, "fib", cases, oracle)


def _cum_row(name, combine, domain="any", tol=1.0, kinds="fic"):
    def cases(rng, shape, dt):
        x = rand(rng, shape, dt, domain)
        return [([x], dict(axis=a, reverse=r)) for a in range(len(shape)) for r in (False, True)]

    def oracle(args, p):
        x, axis = up(args[0]), p["axis"]
        parts = _moved(x, axis)
        if p["reverse"]:
            parts = parts[::-1]
        acc = [parts[0]]
        for part in parts[1:]:
            acc.append(combine(acc[-1], part))
        if p["reverse"]:
            acc = acc[::-1]
        return np.stack(acc, axis=axis).astype(args[0].dtype)
    return Row(name, kinds, cases, oracle, tol)


REDUCTIONS = [
    _reduce_row("reduce_sum", "fic", np.sum, tol=10),
    _reduce_row("reduce_prod", "fic", np.prod, "near1", tol=10),
    _reduce_row("reduce_max", "fib", np.max),
    _reduce_row("reduce_min", "fib", np.min),
    _arg_row("argmax", np.greater),
    _arg_row("argmin", np.less),
    _cum_row("cumsum", np.add, tol=10),
    _cum_row("cumprod", np.multiply, "near1", tol=10),
    _cum_row("cummax", np.maximum),
    _cum_row("cummin", np.minimum),
]


# ---------------------------------------------------------------- dot_general

def _dot_cases(rng, shape, dt):
    n = len(shape)
    x = rand(rng, shape, dt, "small")
    none = ((), ())
    if n == 0:
        return [([x, rand(rng, (), dt, "small")], dict(dimension_numbers=(none, none)))]
    out = [([x, rand(rng, (shape[-1], 3), dt, "small")],
            dict(dimension_numbers=(((n - 1,), (0,)), none)))]
    if n == 1:   # no contraction at all: an outer product
        out.append(([x, rand(rng, (4,), dt, "small")], dict(dimension_numbers=(none, none))))
    if n >= 2:
        y = rand(rng, (shape[0], 2, shape[-1]), dt, "small")    # batch dim 0
        out.append(([x, y], dict(dimension_numbers=(((n - 1,), (2,)), ((0,), (0,))))))
        y = rand(rng, shape[-2:] + (3,), dt, "small")           # two contracting dims
        out.append(([x, y], dict(dimension_numbers=(((n - 2, n - 1), (0, 1)), none))))
    wide = {"f": F32 if dt != F64 else F64, "c": C128}.get(kind(dt), I64)
    args, p = out[0]
    out.append((args, dict(p, preferred_element_type=wide)))
    return out


def _dot_oracle(args, p):
    x, y = args
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    letters = iter("abcdefghijklmnop")
    xs = [next(letters) for _ in range(x.ndim)]
    ys = [next(letters) for _ in range(y.ndim)]
    for a, b in zip(lc + lb, rc + rb):
        ys[b] = xs[a]
    out = ([xs[d] for d in lb] + [c for i, c in enumerate(xs) if i not in lc + lb]
           + [c for i, c in enumerate(ys) if i not in rc + rb])
    spec = f"{''.join(xs)},{''.join(ys)}->{''.join(out)}"
    dt = p.get("preferred_element_type")
    dt = x.dtype if dt is None else dt
    return np.einsum(spec, up(x), up(y)).astype(dt)


LINALG = [Row("dot_general", "fic", _dot_cases, _dot_oracle)]

ROWS = ELEMENTWISE + STRUCTURAL + REDUCTIONS + LINALG
COVERED = {r.name for r in ROWS}


# ---------------------------------------------------------------- running a row

def run_eager(prim, args, params):
    return core.bind(prim, *args, **params)


def run_traced(prim, args, params):
    """make_graph -> verify -> eval_graph; the graph holds exactly this primitive."""
    if args:
        specs = [jx.ShapeDtypeStruct(np.shape(a), a.dtype) for a in args]
        graph = jx.make_graph(lambda *xs: core.bind(prim, *xs, **params))(*specs)
        inputs = list(args)
    else:   # operand-free (iota): staged into the trace of a dummy input
        graph = jx.make_graph(lambda d: core.bind_like([d], prim, **params))(jx.f32[()])
        inputs = [np.zeros((), F32)]
    jx.verify(graph)
    assert [e.prim.name for e in graph.eqns] == [prim.name]
    outs = jx.eval_graph(graph, *inputs)
    for o, aval in zip(outs, graph.out_avals):
        assert o.shape == aval.shape and o.dtype == aval.dtype, (o.shape, o.dtype, aval)
    return outs


def check_close(got, want, tol=1.0):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if kind(want.dtype) in "fc":
        r = TOL[want.dtype] * tol
        np.testing.assert_allclose(got.astype(F64), want.astype(F64), rtol=r, atol=r,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


ACCEPTS = {}     # a primitive's dtype kinds: the union over its rows
for _r in ROWS:
    ACCEPTS[_r.name] = ACCEPTS.get(_r.name, "") + _r.kinds
VALID = [(r, d) for r in ROWS for d in DTYPES if kind(d) in r.kinds and d not in r.rejects]
INVALID = [(r, d) for r in ROWS for d in DTYPES
           if kind(d) not in ACCEPTS[r.name] or d in r.rejects]


def _id(pair):
    return f"{pair[0]!r}-{pair[1]}"


@pytest.mark.parametrize("mode", ["eager", "traced"])
@pytest.mark.parametrize("row,dt", VALID, ids=[_id(p) for p in VALID])
def test_primitive_matches_oracle(row, dt, mode, rng):
    run = run_eager if mode == "eager" else run_traced
    checked = 0
    for shape in SHAPES:
        for args, params in row.cases(rng, shape, dt):
            with np.errstate(all="ignore"):
                want = np.asarray(row.oracle(args, params))
            (rule,) = row.prim.abstract_eval(*[aval_of(a) for a in args], **params)
            (got,) = run(row.prim, args, params)
            assert (got.shape, got.dtype) == (rule.shape, rule.dtype), (shape, params, rule)
            try:
                check_close(got, want, row.tol)
            except AssertionError as e:
                raise AssertionError(f"{row!r} {mode} shape={shape} params={params}: {e}")
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("row,dt", INVALID, ids=[_id(p) for p in INVALID])
def test_shape_rule_rejects_dtype(row, dt, rng):
    args, params = row.cases(rng, (3, 5), dt)[0]
    with pytest.raises(jx.ShapeError, match=row.name):
        run_eager(row.prim, args, params)
    with pytest.raises(jx.ShapeError, match=row.name):
        run_traced(row.prim, args, params)


def test_table_covers_the_four_families():
    from jx.prims import elementwise, linalg, reductions, structural
    declared = {v.name for m in (elementwise, linalg, reductions, structural)
                for v in vars(m).values() if isinstance(v, core.Primitive)}
    assert len(declared) > 50 and declared <= COVERED, sorted(declared - COVERED)


# ---------------------------------------------------------------- shape-rule errors

def S(dt, *shape):
    return ShapedArray(shape, dt)


ERRORS = [
    ("add", [S(F32, 3), S(F32, 4)], {}, "equal shapes"),
    ("add", [S(F32, 3), S(I32, 3)], {}, "one dtype"),
    ("exp", [S(I32, 3)], {}, "float"),
    ("and", [S(F32, 3), S(F32, 3)], {}, "int/bool"),
    ("select", [S(I32, 3), S(F32, 3), S(F32, 3)], {}, "predicate must be bool"),
    ("select", [S(BOOL, 2), S(F32, 3), S(F32, 3)], {}, "predicate shape"),
    ("select", [S(BOOL, 3), S(F32, 3), S(F64, 3)], {}, "one type"),
    ("round", [S(F32, 3)], dict(rounding_method="up"), "rounding_method"),
    ("convert_element_type", [S(F32, 3)], dict(new_dtype=np.dtype("U3")),
     "not supported"),
    ("broadcast_in_dim", [S(F32, 3)], dict(shape=(4,), broadcast_dimensions=(0,)),
     "cannot broadcast"),
    ("broadcast_in_dim", [S(F32, 3)], dict(shape=(2, 3), broadcast_dimensions=()),
     "one output dim per operand dim"),
    ("broadcast_in_dim", [S(F32, 3, 3)], dict(shape=(3, 3), broadcast_dimensions=(1, 0)),
     "increasing"),
    ("broadcast_in_dim", [S(F32, 3)], dict(shape=(3, -1), broadcast_dimensions=(0,)),
     "negative"),
    ("reshape", [S(F32, 2, 3)], dict(new_sizes=(4,)), "cannot reshape"),
    ("reshape", [S(F32, 2, 3)], dict(new_sizes=(-2, -3)), "negative"),
    ("transpose", [S(F32, 2, 3)], dict(permutation=(0, 0)), "not a permutation"),
    ("transpose", [S(F32, 2, 3)], dict(permutation=(0,)), "not a permutation"),
    ("squeeze", [S(F32, 2, 1)], dict(dimensions=(0,)), "size 1"),
    ("squeeze", [S(F32, 2, 1)], dict(dimensions=(2,)), "size 1"),
    ("squeeze", [S(F32, 1, 2)], dict(dimensions=(0, 0)), "repeat"),
    ("expand_dims", [S(F32, 2)], dict(dimensions=(3,)), "invalid"),
    ("expand_dims", [S(F32, 2)], dict(dimensions=(0, 0)), "invalid"),
    ("slice", [S(F32, 5)], dict(start_indices=(0,), limit_indices=(6,), strides=(1,)),
     "out of range"),
    ("slice", [S(F32, 5)], dict(start_indices=(3,), limit_indices=(2,), strides=(1,)),
     "out of range"),
    ("slice", [S(F32, 5)], dict(start_indices=(0,), limit_indices=(5,), strides=(0,)),
     "out of range"),
    ("slice", [S(F32, 5, 2)], dict(start_indices=(0,), limit_indices=(5,), strides=(1,)),
     "each of the 2 dims"),
    ("pad", [S(F32, 3), S(F64)], dict(padding_config=((1, 1, 0),)), "padding value"),
    ("pad", [S(F32, 3), S(F32, 1)], dict(padding_config=((1, 1, 0),)), "padding value"),
    ("pad", [S(F32, 3), S(F32)], dict(padding_config=((1, 1, -1),)), "interior"),
    ("pad", [S(F32, 3), S(F32)], dict(padding_config=((-3, -1, 0),)), "negative size"),
    ("pad", [S(F32, 3), S(F32)], dict(padding_config=()), "for each dim"),
    ("concatenate", [S(F32, 2, 3), S(F32, 3, 3)], dict(dimension=1), "cannot concatenate"),
    ("concatenate", [S(F32, 2, 3), S(I32, 2, 3)], dict(dimension=0), "cannot concatenate"),
    ("concatenate", [S(F32, 2, 3), S(F32, 2, 3)], dict(dimension=2), "out of range"),
    ("rev", [S(F32, 2, 3)], dict(dimensions=(2,)), "distinct dims"),
    ("rev", [S(F32, 2, 3)], dict(dimensions=(1, 1)), "distinct dims"),
    ("iota", [], dict(dtype=I32, shape=(3,), dimension=1), "out of range"),
    ("iota", [], dict(dtype=BOOL, shape=(3,), dimension=0), "numeric"),
    ("reduce_sum", [S(F32, 2, 3)], dict(axes=(2,)), "invalid"),
    ("reduce_max", [S(F32, 2, 3)], dict(axes=(0, 0)), "invalid"),
    ("reduce_sum", [S(BOOL, 2, 3)], dict(axes=(0,)), "bool"),
    ("argmax", [S(F32, 2, 0)], dict(axis=1, index_dtype=I32), "empty"),
    ("argmin", [S(F32, 2, 3)], dict(axis=0, index_dtype=F32), "index_dtype"),
    ("argmin", [S(F32, 2, 3)], dict(axis=-1, index_dtype=I32), "invalid"),
    ("cumsum", [S(F32, 2, 3)], dict(axis=2, reverse=False), "invalid"),
    ("dot_general", [S(F32, 2, 3), S(F32, 4, 5)],
     dict(dimension_numbers=(((1,), (0,)), ((), ()))), "does not match"),
    ("dot_general", [S(F32, 2, 3), S(F64, 3, 5)],
     dict(dimension_numbers=(((1,), (0,)), ((), ()))), "one dtype"),
    ("dot_general", [S(F32, 2, 3), S(F32, 3, 5)],
     dict(dimension_numbers=(((2,), (0,)), ((), ()))), "invalid"),
    ("dot_general", [S(F32, 2, 3), S(F32, 3, 5)],
     dict(dimension_numbers=(((1,), (0, 1)), ((), ()))), "pair up"),
    ("dot_general", [S(F32, 2, 3), S(F32, 2, 3)],
     dict(dimension_numbers=(((0,), (0,)), ((0,), (0,)))), "both batch and contracting"),
    ("dot_general", [S(F32, 2, 3), S(F32, 3, 5)],
     dict(dimension_numbers=(((1,), (0,)), ((), ())), preferred_element_type=F16),
     "preferred_element_type"),
    ("dot_general", [S(F32, 2, 3), S(F32, 3, 5)],
     dict(dimension_numbers=(((1,), (0,)), ((), ())), preferred_element_type=I32),
     "preferred_element_type"),
    ("dot_general", [S(C64, 2, 3), S(C64, 3, 5)],
     dict(dimension_numbers=(((1,), (0,)), ((), ())), preferred_element_type=F64),
     "preferred_element_type"),
    ("complex", [S(F32, 3), S(F64, 3)], {}, "one dtype"),
    ("reduce_max", [S(C64, 2, 3)], dict(axes=(0,)), "complex"),
    ("argmax", [S(C64, 2, 3)], dict(axis=0, index_dtype=I32), "complex"),
]


@pytest.mark.parametrize("name,avals,params,msg", ERRORS,
                         ids=[f"{e[0]}-{e[3]}" for e in ERRORS])
def test_shape_rule_errors(name, avals, params, msg):
    prim = jx.PRIMITIVES[name]
    zeros = [np.zeros(a.shape, a.dtype) for a in avals]
    with pytest.raises(jx.ShapeError, match=name) as info:
        run_eager(prim, zeros, params)
    assert msg in str(info.value)
    with pytest.raises(jx.ShapeError) as info:
        run_traced(prim, zeros, params)
    assert msg in str(info.value) and name in str(info.value)


def test_traced_error_names_the_user_line():
    def f(x, y):
        return [core.bind(jx.PRIMITIVES["add"], x, y)]
    with pytest.raises(jx.ShapeError, match=r"test_primitives\.py:\d+"):
        jx.make_graph(f)(jx.f32[3], jx.f32[4])


# ---------------------------------------------------------------- edge semantics

def bind1(name, *args, **params):
    return core.bind(jx.PRIMITIVES[name], *args, **params)[0]


@pytest.mark.parametrize("dt", [I32, I64])
def test_int_division_edges(dt):
    info = np.iinfo(dt)
    a = np.array([7, -7, 7, -7, 5, info.min, info.min], dt)
    b = np.array([2, 2, -2, -2, 0, -1, 1], dt)
    # XLA's integer division: x / 0 is -1 and x % 0 is x; MIN / -1 wraps to MIN
    np.testing.assert_array_equal(bind1("div", a, b), [3, -3, -3, 3, -1, info.min, info.min])
    np.testing.assert_array_equal(bind1("rem", a, b), [1, -1, 1, -1, 5, 0, 0])


def test_float_division_edges():
    a = np.array([1.0, -1.0, 0.0, 5.5], F32)
    b = np.array([0.0, 0.0, 0.0, -2.0], F32)
    q = bind1("div", a, b)
    assert q[0] == np.inf and q[1] == -np.inf and np.isnan(q[2]) and q[3] == -2.75
    r = bind1("rem", a, b)
    assert np.isnan(r[:3]).all() and r[3] == 1.5     # fmod: the dividend's sign


def test_float_nan_propagation():
    nan = np.array([np.nan, 1.0, np.nan], F32)
    one = np.array([1.0, np.nan, 2.0], F32)
    assert np.isnan(bind1("max", nan, one)).all() and np.isnan(bind1("min", nan, one)).all()
    x = np.array([[1.0, np.nan, 3.0, np.nan]], F32)
    for name in ("argmax", "argmin"):     # the first NaN wins, as in NumPy
        assert bind1(name, x, axis=1, index_dtype=I32)[0] == 1


def test_pow_int_negative_exponents():
    a = np.array([2, 1, -1, -1, 0, 3], I32)
    b = np.array([-1, -5, -3, -2, 2, 0], I32)
    np.testing.assert_array_equal(bind1("pow", a, b), [0, 1, -1, 1, 0, 1])


def test_convert_saturates_and_zeroes_nan():
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, -1.9, 1.9], F32)
    np.testing.assert_array_equal(bind1("convert_element_type", x, new_dtype=I32),
                                  [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, -1, 1])
    np.testing.assert_array_equal(bind1("convert_element_type", x, new_dtype=U32),
                                  [0, 2**32 - 1, 0, 3_000_000_000, 0, 0, 1])


@pytest.mark.parametrize("dt", [F32, I32, BOOL])
def test_empty_reductions_give_identities(dt):
    x = np.zeros((0, 3), dt)
    lo = -np.inf if dt == F32 else (False if dt == BOOL else np.iinfo(dt).min)
    hi = np.inf if dt == F32 else (True if dt == BOOL else np.iinfo(dt).max)
    np.testing.assert_array_equal(bind1("reduce_max", x, axes=(0,)), [lo] * 3)
    np.testing.assert_array_equal(bind1("reduce_min", x, axes=(0,)), [hi] * 3)
    if dt != BOOL:
        np.testing.assert_array_equal(bind1("reduce_sum", x, axes=(0,)), [0] * 3)
        np.testing.assert_array_equal(bind1("reduce_prod", x, axes=(0,)), [1] * 3)


def test_weak_type_follows_the_operands():
    weak, strong = ShapedArray((3,), F32, True), ShapedArray((3,), F32)
    add, lt = jx.PRIMITIVES["add"], jx.PRIMITIVES["lt"]
    assert add.abstract_eval(weak, weak)[0].weak_type
    assert not add.abstract_eval(weak, strong)[0].weak_type
    assert lt.abstract_eval(weak, weak)[0].weak_type     # as JAX: all-weak comparisons are weak
    conv = jx.PRIMITIVES["convert_element_type"]
    assert conv.abstract_eval(strong, new_dtype=F16, weak_type=True)[0].weak_type
    red = jx.PRIMITIVES["reduce_sum"]
    assert red.abstract_eval(weak, axes=(0,))[0].weak_type


def test_dot_general_preferred_type_accumulates_wide():
    # 2048 * 2049 is not representable in f16; accumulating in f32 keeps it exact
    x = np.full((1, 4), 32.0, F16)
    y = np.full((4, 1), 16.0, F16) + np.array([[0], [0], [0], [0.5]], F16)
    dn = (((1,), (0,)), ((), ()))
    out = bind1("dot_general", x, y, dimension_numbers=dn, preferred_element_type=F32)
    assert out.dtype == F32 and out[0, 0] == 32 * (16 * 4 + 0.5)
    ints = bind1("dot_general", np.ones((2, 3), I32), np.ones((3, 2), I32),
                 dimension_numbers=dn, preferred_element_type=F32)
    assert ints.dtype == F32 and (ints == 3).all()
