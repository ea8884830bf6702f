"""Random fuzz programs over jx.numpy, jx.lax, jx.random and the transformations.

Each statement is one operation on earlier variables. Its result type comes
from tracing that statement alone with jx (make_graph on shape specs), so the
generator needs no shape rules of its own; a candidate jx rejects is redrawn.
Variables carry an `exact` flag: operations that jump on a rounding
difference (floor, comparisons, argmax, float -> int casts) only take exact
operands, so two correct engines cannot disagree by more than rounding.
"""
from __future__ import annotations

import math
import random

import numpy as np

from .. import dtypes
from .compare import EPS
from .program import (FLOATS, INTS, Block, Input, Program, Stmt, Var, render_block)

_DIMS = [1, 1, 2, 3, 4, 5, 7, 8, 13, 16, 0, 31, 64]
_UNARY = ["sin", "cos", "tan", "tanh", "exp", "expm1", "log", "log1p", "sqrt", "abs",
          "negative", "square", "reciprocal", "arctan", "arcsin", "arccos", "arcsinh",
          "arctanh", "sinh", "cosh", "cbrt", "exp2", "log2", "log10"]
_UNARY_LAX = ["erf", "logistic", "rsqrt"]
_ROUNDING = ["floor", "ceil", "round", "trunc", "rint", "sign"]
_BIN_FLOAT = ["add", "subtract", "multiply", "maximum", "minimum", "true_divide", "power",
              "arctan2", "hypot", "logaddexp", "copysign"]
_BIN_INT = ["add", "subtract", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or",
            "bitwise_xor"]
_BIN_BOOL = ["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
             "maximum", "minimum", "add", "multiply"]
_EXACT_BIN = {"maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and",
              "logical_or", "logical_xor", "copysign"}
_CMP = ["<", "<=", ">", ">=", "==", "!="]
# These see the sign of a zero, which engines may choose differently for
# min(-0, +0) and the like, and arctan2 jumps by 2 pi across the negative
# axis: only program inputs (exact, signs as given) go in.
_ZERO_SIGN = {"arctan2", "copysign"}


class Rejected(Exception):
    """A candidate statement jx cannot trace: the generator draws another."""


def _namespace() -> dict:
    import jx
    import jx.lax as lax
    import jx.numpy as jnp
    return {"jx": jx, "jnp": jnp, "lax": lax, "np": np}


def free_names(stmt: Stmt) -> list:
    names = list(stmt.args)
    for b in stmt.bodies:
        names += [n for n in _free_in_block(b) if n not in names]
    return names


def _free_in_block(b: Block) -> list:
    defined = {v.name for v in b.params}
    free: list = []
    for s in b.stmts:
        free += [n for n in free_names(s) if n not in defined and n not in free]
        defined.add(s.out.name)
    free += [n for n in b.outs if n not in defined and n not in free]
    return free


def infer(stmt: Stmt, table: dict, ns: dict) -> tuple:
    """(shape, dtype) of stmt's result, by tracing it alone with jx."""
    import jx
    params = [table[n] for n in free_names(stmt)]
    src = "\n".join(render_block(Block(params, [stmt], [stmt.out.name]), "_t", ""))
    local = dict(ns)
    try:
        exec(src, local)
        g = jx.make_graph(local["_t"])(*[jx.ShapeDtypeStruct(v.shape, v.dtype) for v in params])
    except Exception as e:     # noqa: BLE001 - any rejection means "draw again"
        raise Rejected(f"{type(e).__name__}: {e}") from None
    atom = g.outputs[0]
    aval = atom.aval if hasattr(atom, "aval") else jx.ir.aval_of(atom.val)
    return tuple(aval.shape), np.dtype(aval.dtype).name


class Gen:
    def __init__(self, seed: int, max_stmts: int = 8, large: bool = True,
                 f64: bool = True, features: set | None = None):
        self.seed, self.rng = seed, random.Random(seed)
        self.max_stmts, self.large, self.f64 = max_stmts, large, f64
        self.features = features
        self.inputs: list = []
        self.table: dict = {}
        self.count = 0
        self.ns = _namespace()
        self.depth = 0
        self.rejected = 0
        self.big_left = 1 if (large and self.rng.random() < 0.05) else 0

    # ------------------------------------------------------------ helpers
    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def shape(self, rank: int | None = None) -> tuple:
        r = self.rng
        if rank is None:
            rank = r.choices([0, 1, 2, 3, 4], [2, 4, 4, 2, 0.5])[0]
        if self.big_left and rank >= 1 and r.random() < 0.5:
            self.big_left -= 1
            total = r.choice([100003, 131072, 262147, 1000003])
            if rank == 1:
                return (total,)
            first = r.choice([3, 64, 317, 1000])
            return (first, total // first) + (1,) * (rank - 2)
        return tuple(r.choice(_DIMS) for _ in range(rank))

    def fresh(self, shape: tuple, dtype: str, kind: str | None = None, bound: int = 0) -> Var:
        r = self.rng
        if kind is None:
            kind = "normal"
            if dtype in FLOATS:
                kind = r.choices(["normal", "special", "positive", "unit"], [5, 2, 2, 1])[0]
            elif dtype in INTS:
                kind = r.choice(["normal", "small", "small"])
        v = Var(self.name("x"), tuple(shape), dtype)
        self.inputs.append(Input(v, kind, bound))
        self.table[v.name] = v
        return v

    def is_input(self, v: Var) -> bool:
        return any(i.var is v for i in self.inputs)

    def pick(self, pool: list, pred=lambda v: True) -> Var | None:
        cands = [v for v in pool if pred(v)]
        if not cands:
            return None
        recent = cands[-4:]
        return self.rng.choice(recent if self.rng.random() < 0.6 else cands)

    def need(self, pool: list, shape: tuple, dtype: str, exact: bool = False) -> Var:
        v = self.pick(pool, lambda v: v.shape == tuple(shape) and v.dtype == dtype
                      and (v.exact or not exact))
        if v is None or self.rng.random() < 0.3:
            v = self.fresh(shape, dtype)
        return v

    def float_dtype(self) -> str:
        # bfloat16 exists only where ml_dtypes is installed (it is optional)
        ws = [6, 2, 2 if dtypes.bfloat16 is not None else 0, 1.5 if self.f64 else 0]
        return self.rng.choices(["float32", "float16", "bfloat16", "float64"], ws)[0]

    def any_dtype(self) -> str:
        r = self.rng
        if r.random() < 0.6:
            return self.float_dtype()
        return r.choice(["int8", "int32", "int32", "uint8", "uint32", "bool"])

    def bcast_partner(self, pool: list, a: Var, dtype: str) -> Var:
        """An operand that broadcasts against a: same shape, a suffix, a scalar."""
        def ok(v):
            try:
                np.broadcast_shapes(v.shape, a.shape)
                return v.dtype == dtype and v is not a or self.rng.random() < 0.1
            except ValueError:
                return False
        v = self.pick(pool, ok)
        if v is None or self.rng.random() < 0.25:
            k = self.rng.randint(0, len(a.shape))
            shape = tuple(a.shape[k:])
            if shape and self.rng.random() < 0.3:
                shape = (1,) + shape[1:]
            v = self.fresh(shape, dtype)
        return v

    # ------------------------------------------------------------ programs
    def program(self) -> Program:
        r = self.rng
        main = self.any_dtype() if r.random() < 0.3 else self.float_dtype()
        params = [self.fresh(self.shape(), main)]
        for _ in range(r.randint(0, 2)):
            params.append(self.fresh(self.shape(), self.any_dtype()))
        pool = list(params)
        stmts = self.statements(pool, r.randint(1, self.max_stmts))
        from .program import used_names
        used = set()
        for st in stmts:
            used |= used_names(Block([], [st], []))
        sinks = [s.out.name for s in stmts if s.out.name not in used]
        outs = sinks[-4:] if sinks else [params[0].name]
        block = Block([i.var for i in self.inputs], stmts, outs)
        prog = Program(self.seed, list(self.inputs), block)
        prog.x64 = prog.uses_f64()
        return prog

    def statements(self, pool: list, n: int) -> list:
        out = []
        for _ in range(n):
            s = self.statement(pool)
            if s is not None:
                out.append(s)
                pool.append(s.out)
        return out

    def statement(self, pool: list) -> Stmt | None:
        gens = [(self.g_unary, 8), (self.g_binary, 10), (self.g_scalar, 4), (self.g_idiv, 2),
                (self.g_shift, 1), (self.g_compare, 3), (self.g_where, 3), (self.g_select, 1),
                (self.g_cast, 3), (self.g_reduce, 6), (self.g_argred, 2), (self.g_cum, 1.5),
                (self.g_sort, 1), (self.g_reshape, 2), (self.g_transpose, 2), (self.g_bcast, 2),
                (self.g_concat, 2), (self.g_slice, 3), (self.g_squeeze, 1.5), (self.g_flip, 1),
                (self.g_pad, 1.5), (self.g_gather, 3), (self.g_scatter, 3), (self.g_dslice, 1.5),
                (self.g_dot, 3), (self.g_const, 1), (self.g_random, 1.5), (self.g_clip, 1)]
        if self.depth < 2:
            gens += [(self.g_cond, 1.5), (self.g_loop, 2), (self.g_scan, 1.5),
                     (self.g_grad, 2.5), (self.g_vmap, 2), (self.g_jvp, 1.5),
                     (self.g_gradvmap, 1)]
        if self.features is not None:
            gens = [(g, w) for g, w in gens if g.__name__[2:] in self.features]
        fns, ws = zip(*gens)
        for _ in range(12):
            g = self.rng.choices(fns, ws)[0]
            n_inputs = len(self.inputs)
            try:
                made = g(pool)
                if made is None:
                    continue
                stmt, kind = made
                stmt.out.shape, stmt.out.dtype = infer(stmt, self.table, self.ns)
                if np.prod(stmt.out.shape, dtype=np.float64) > 4e6:
                    raise Rejected("result too large")    # e.g. vmap of a closure
            except Rejected:
                self.rejected += 1
                self._forget_inputs(n_inputs)
                continue
            self.finish(stmt, kind)
            return stmt
        return None

    def _forget_inputs(self, n: int) -> None:
        for inp in self.inputs[n:]:
            self.table.pop(inp.var.name, None)
        del self.inputs[n:]

    def finish(self, stmt: Stmt, kind: str) -> None:
        args = [self.table[n] for n in stmt.args]
        bouts = [self.table[b.outs[0]] for b in stmt.bodies if b.outs]
        src = args + bouts
        trips = max(1, int(stmt.params.get("n", 1)))
        err = max([v.err for v in args] + [0.0]) + max([v.err for v in bouts] + [0.0]) * trips
        out = stmt.out
        if out.dtype not in FLOATS:
            out.exact = True
        elif kind == "disc":
            out.exact = True
        elif kind == "exact":
            out.exact = all(v.exact for v in src)
        else:
            out.exact = False
        # Each rounding adds a couple of the result dtype's epsilons; a sum over n
        # terms about log2(n) of them (pairwise or blocked orders differ that much).
        roundings = 0 if kind in ("exact", "disc") else 1
        if stmt.op in ("red", "cum", "dot") and stmt.args and roundings:
            n = max(1, int(np.prod(self.table[stmt.args[0]].shape, dtype=np.int64)))
            roundings += int(math.log2(n)) + 1
        own = EPS.get(out.dtype, 0.0) * 2 * roundings
        out.err = 0.0 if out.exact else err + own
        self.table[out.name] = out

    def stmt(self, op: str, args: list, **params) -> Stmt:
        return Stmt(Var(self.name("v"), (), "float32"), op, [a.name for a in args], params)

    # ------------------------------------------------------------ elementwise
    def g_unary(self, pool):
        r = self.rng
        a = self.pick(pool)
        if a is None:
            return None
        if a.dtype in FLOATS or r.random() < 0.15:
            if a.exact and r.random() < 0.25:
                return self.stmt("un", [a], f=r.choice(_ROUNDING)), "disc"
            if r.random() < 0.15:
                return self.stmt("un", [a], f=r.choice(_UNARY_LAX), mod="lax"), "inexact"
            f = r.choice(_UNARY)
            if f == "tan" and not a.exact:     # near its poles a rounding is any value
                f = "tanh"
            return self.stmt("un", [a], f=f), ("exact" if f in ("abs", "negative") else "inexact")
        if a.dtype == "bool":
            return self.stmt("un", [a], f=r.choice(["logical_not", "invert"])), "exact"
        return self.stmt("un", [a], f=r.choice(["negative", "abs", "invert", "sign",
                                                "square"])), "exact"

    def g_binary(self, pool):
        r = self.rng
        a = self.pick(pool)
        if a is None:
            return None
        dt = a.dtype if r.random() < 0.8 else self.any_dtype()
        b = self.bcast_partner(pool, a, dt)
        if r.random() < 0.5:
            a, b = b, a
        fl = a.dtype in FLOATS or b.dtype in FLOATS
        if fl:
            f = r.choice(_BIN_FLOAT)
            if f in _ZERO_SIGN and not (self.is_input(a) and self.is_input(b)):
                f = "add"
        elif a.dtype == "bool" and b.dtype == "bool":
            f = r.choice(_BIN_BOOL)
        else:
            f = r.choice(_BIN_INT)
        if not fl and f in ("add", "subtract", "multiply") and r.random() < 0.5:
            sym = {"add": "+", "subtract": "-", "multiply": "*"}[f]
            return self.stmt("binop", [a, b], sym=sym), "exact"
        kind = "exact" if (f in _EXACT_BIN or not fl) else "inexact"
        return self.stmt("bin", [a, b], f=f), kind

    def g_scalar(self, pool):
        r = self.rng
        a = self.pick(pool, lambda v: v.dtype != "bool")
        if a is None:
            return None
        if a.dtype in FLOATS or r.random() < 0.1:
            c = r.choice([0.5, 2.0, -1.5, 3.0, 1e-3, 10.0])
            sym = r.choice(["+", "-", "*", "/", "**"])
            if sym == "**":
                c = r.choice([2, 3, 0.5, -1, 2.0])
        else:
            c = r.choice([1, 2, 3, 7, 0])
            sym = r.choice(["+", "-", "*"])
        return self.stmt("scalar", [a], sym=sym, c=c, left=r.random() < 0.3), "inexact"

    def g_idiv(self, pool):
        r = self.rng
        a = self.pick(pool, lambda v: v.dtype in INTS or (v.dtype in FLOATS and v.exact))
        if a is None:
            return None
        if a.dtype in INTS:
            b = self.bcast_partner(pool, a, a.dtype)
            f = r.choice(["floor_divide", "remainder", "fmod"])
            return self.stmt("idiv", [a, b], f=f), "exact"
        b = self.bcast_partner(pool, a, a.dtype)
        if not b.exact:
            return None
        return self.stmt("bin", [a, b], f=r.choice(["remainder", "floor_divide", "fmod"])), "disc"

    def g_shift(self, pool):
        a = self.pick(pool, lambda v: v.dtype in INTS)
        if a is None:
            return None
        b = self.bcast_partner(pool, a, a.dtype)
        bits = np.dtype(a.dtype).itemsize * 8
        f = self.rng.choice(["left_shift", "right_shift"])
        return self.stmt("shift", [a, b], f=f, mask=bits - 1), "exact"

    def g_compare(self, pool):
        r = self.rng
        a = self.pick(pool, lambda v: v.exact)
        if a is None:
            return None
        if r.random() < 0.2 and a.dtype in FLOATS:
            fs = ["isnan", "isinf", "isfinite"] + (["signbit"] if self.is_input(a) else [])
            return self.stmt("un", [a], f=r.choice(fs)), "disc"
        b = self.bcast_partner(pool, a, a.dtype)
        if not b.exact:
            return None
        return self.stmt("binop", [a, b], sym=r.choice(_CMP)), "disc"

    def bool_for(self, pool, shape) -> Var:
        def ok(v):
            try:
                return v.dtype == "bool" and np.broadcast_shapes(v.shape, shape) == shape
            except ValueError:
                return False
        c = self.pick(pool, ok)
        return c if c is not None else self.fresh(shape, "bool")

    def g_where(self, pool):
        a = self.pick(pool)
        if a is None:
            return None
        b = self.bcast_partner(pool, a, a.dtype if self.rng.random() < 0.8 else self.any_dtype())
        shape = np.broadcast_shapes(a.shape, b.shape)
        c = self.bool_for(pool, shape)
        return self.stmt("where", [c, a, b]), "exact"

    def g_select(self, pool):
        a = self.pick(pool)
        if a is None:
            return None
        b = self.need(pool, a.shape, a.dtype)
        c = self.need(pool, a.shape, "bool")
        return self.stmt("select", [c, a, b]), "exact"

    def g_cast(self, pool):
        r = self.rng
        a = self.pick(pool)
        if a is None:
            return None
        t = self.any_dtype()
        if a.dtype in FLOATS and t not in FLOATS:
            if not a.exact:
                t = self.float_dtype()
            elif t != "bool":
                lo, hi = (-100, 100) if t.startswith("int") else (0, 200)
                return self.stmt("castclip", [a], dtype=t, lo=lo, hi=hi), "disc"
        if t == "float64" and not self.f64:
            t = "float32"
        return self.stmt("cast", [a], dtype=t), ("disc" if t == "bool" else "exact")

    def g_clip(self, pool):
        a = self.pick(pool, lambda v: v.dtype != "bool")
        if a is None:
            return None
        lo = self.rng.choice([-1, 0, -2])
        return self.stmt("clip", [a], lo=lo, hi=lo + self.rng.choice([1, 2, 5])), "exact"

    # ------------------------------------------------------------ reductions
    def axis_arg(self, rank: int, allow_tuple: bool = True):
        r = self.rng
        if rank == 0 or r.random() < 0.25:
            return None
        if allow_tuple and rank >= 2 and r.random() < 0.3:
            k = r.randint(1, rank)
            return tuple(sorted(r.sample(range(rank), k)))
        ax = r.randrange(rank)
        return ax - rank if r.random() < 0.2 else ax

    def g_reduce(self, pool):
        r = self.rng
        a = self.pick(pool)
        if a is None:
            return None
        fs = ["sum", "prod", "max", "min", "mean"]
        if a.dtype == "bool":
            fs += ["any", "all"]
        if a.dtype in FLOATS:
            fs += ["var", "std"]
        f = r.choice(fs)
        kind = "exact" if f in ("max", "min", "any", "all") else "inexact"
        return self.stmt("red", [a], f=f, axis=self.axis_arg(len(a.shape)),
                         keepdims=r.random() < 0.3), kind

    def g_argred(self, pool):
        a = self.pick(pool, lambda v: v.exact and v.dtype != "bool" or v.dtype in INTS)
        if a is None:
            return None
        f = self.rng.choice(["argmax", "argmin"])
        return self.stmt("argred", [a], f=f, axis=self.axis_arg(len(a.shape), False)), "disc"

    def g_cum(self, pool):
        a = self.pick(pool, lambda v: v.shape != ())
        if a is None:
            return None
        ax = self.rng.randrange(len(a.shape))
        f = self.rng.choice(["cumsum", "cumprod"])
        return self.stmt("cum", [a], f=f, axis=ax), ("exact" if a.dtype not in FLOATS
                                                    else "inexact")

    def g_sort(self, pool):
        a = self.pick(pool, lambda v: v.shape != ())
        if a is None:
            return None
        return self.stmt("sort", [a], axis=self.rng.randrange(len(a.shape))), "exact"

    # ------------------------------------------------------------ layout
    def g_reshape(self, pool):
        r = self.rng
        a = self.pick(pool)
        if a is None:
            return None
        n = int(np.prod(a.shape, dtype=np.int64))
        dims = []
        rest = n
        for _ in range(r.randint(0, 3)):
            divs = [d for d in (1, 2, 3, 4, 5, 7, 8, 13, 16) if rest and rest % d == 0]
            if not divs:
                break
            d = r.choice(divs)
            dims.append(d)
            rest //= d
        dims.append(rest)
        r.shuffle(dims)
        if n and r.random() < 0.3:
            dims[r.randrange(len(dims))] = -1
        return self.stmt("reshape", [a], shape=dims), "exact"

    def g_transpose(self, pool):
        a = self.pick(pool, lambda v: len(v.shape) >= 2)
        if a is None:
            return None
        perm = list(range(len(a.shape)))
        self.rng.shuffle(perm)
        return self.stmt("transpose", [a], perm=perm), "exact"

    def g_bcast(self, pool):
        r = self.rng
        a = self.pick(pool)
        if a is None:
            return None
        shape = [d if d != 1 or r.random() < 0.5 else r.choice([2, 3, 5]) for d in a.shape]
        lead = [r.choice([1, 2, 3, 4]) for _ in range(r.randint(0, 2))]
        return self.stmt("bcast", [a], shape=lead + shape), "exact"

    def g_concat(self, pool):
        r = self.rng
        a = self.pick(pool, lambda v: v.shape != ())
        if a is None:
            return None
        ax = r.randrange(len(a.shape))
        others = []
        for _ in range(r.choice([1, 1, 2])):
            shape = list(a.shape)
            shape[ax] = r.choice([0, 1, 2, 3, a.shape[ax]])
            others.append(self.need(pool, tuple(shape), a.dtype if r.random() < 0.85
                                    else self.any_dtype()))
        return self.stmt("concat", [a] + others, axis=ax), "exact"

    def _slice_part(self, d: int) -> str:
        r = self.rng
        c = r.random()
        if c < 0.25:
            return ":"
        if c < 0.35 and d > 0:
            return str(r.randrange(-d, d))
        lo = r.choice(["", str(r.randint(-d - 2, d + 2))])
        hi = r.choice(["", str(r.randint(-d - 2, d + 2))])
        step = r.choice(["", "", "2", "-1", "3", "-2"])
        return f"{lo}:{hi}" + (f":{step}" if step else "")

    def g_slice(self, pool):
        r = self.rng
        a = self.pick(pool, lambda v: v.shape != ())
        if a is None:
            return None
        parts = [self._slice_part(d) for d in a.shape[:r.randint(1, len(a.shape))]]
        if r.random() < 0.15:
            parts.insert(r.randint(0, len(parts)), "None")
        if r.random() < 0.1:
            parts = ["..."] + parts[1:]
        return self.stmt("slice", [a], idx=", ".join(parts)), "exact"

    def g_squeeze(self, pool):
        r = self.rng
        a = self.pick(pool)
        if a is None:
            return None
        ones = [k for k, d in enumerate(a.shape) if d == 1]
        if ones and r.random() < 0.6:
            return self.stmt("squeeze", [a], axis=r.choice(ones)), "exact"
        ax = r.randint(-len(a.shape) - 1, len(a.shape))
        return self.stmt("expand", [a], axis=ax), "exact"

    def g_flip(self, pool):
        a = self.pick(pool, lambda v: v.shape != ())
        if a is None:
            return None
        return self.stmt("flip", [a], axis=self.axis_arg(len(a.shape))), "exact"

    def g_pad(self, pool):
        r = self.rng
        a = self.pick(pool, lambda v: v.shape != ())
        if a is None:
            return None
        if r.random() < 0.5:
            widths = tuple((r.randint(0, 2), r.randint(0, 2)) for _ in a.shape)
            return self.stmt("pad", [a], widths=widths), "exact"
        cfg = []
        for d in a.shape:
            interior = r.choice([0, 0, 1, 2]) if d > 0 else 0
            full = d + max(d - 1, 0) * interior
            lo = r.randint(-min(full, 2), 2)
            hi = r.randint(-min(full + lo, 2) if full + lo > 0 else 0, 2)
            cfg.append((lo, hi, interior))
        return self.stmt("lpad", [a], config=tuple(cfg)), "exact"

    # ------------------------------------------------------------ indexing
    def index_operand(self, pool, extent: int, shape=None):
        """An index array: an input drawn in and out of range, or a constant list."""
        r = self.rng
        if r.random() < 0.35:
            n = r.randint(0, 5)
            const = [r.randint(-extent - 3, extent + 3) for _ in range(n)]
            return None, const
        shape = shape if shape is not None else self.shape(r.choice([0, 1, 1, 2]))
        dt = r.choice(["int32", "int32", "int8", "uint8", "uint32"])
        return self.fresh(shape, dt, "index", extent), None

    def g_gather(self, pool):
        a = self.pick(pool, lambda v: v.shape != ())
        if a is None:
            return None
        ax = 1 if len(a.shape) >= 2 and self.rng.random() < 0.3 else 0
        ix, const = self.index_operand(pool, a.shape[ax])
        args = [a] + ([ix] if ix is not None else [])
        return self.stmt("gather", args, axis=ax, const=const), "exact"

    def g_scatter(self, pool):
        r = self.rng
        a = self.pick(pool, lambda v: v.shape != ())
        if a is None:
            return None
        ax = 1 if len(a.shape) >= 2 and r.random() < 0.3 else 0
        n = a.shape[ax]
        mode = r.choice(["set", "add", "add", "mul", "min", "max"])
        if a.dtype == "bool":                  # JAX has no arithmetic scatters on bool
            mode = "set"
        if mode == "set" or r.random() < 0.3:     # set: unique targets (duplicates unordered)
            picks = r.sample(range(n), r.randint(0, min(n, 4))) if n else []
            const = [p - n if r.random() < 0.3 else p for p in picks]
            const += [r.choice([n, n + 2, -n - 1, -n - 5]) for _ in range(r.randint(0, 2))]
            r.shuffle(const)
            ix, ishape = None, (len(const),)
        else:
            ix, _ = self.index_operand(pool, n, self.shape(r.choice([0, 1, 1, 2])))
            if ix is None:
                return None
            const, ishape = None, ix.shape
        ushape = a.shape[:ax] + tuple(ishape) + a.shape[ax + 1:]
        upd = (self.need(pool, (), a.dtype) if r.random() < 0.3
               else self.need(pool, ushape, a.dtype))
        args = [a] + ([ix] if ix is not None else []) + [upd]
        kind = "exact" if mode in ("set", "min", "max") or a.dtype not in FLOATS else "inexact"
        return self.stmt("scatter", args, axis=ax, mode=mode, const=const), kind

    def g_dslice(self, pool):
        r = self.rng
        a = self.pick(pool, lambda v: v.shape != ())
        if a is None:
            return None
        starts = [self.fresh((), "int32", "index", d) for d in a.shape]
        if r.random() < 0.5:
            sizes = [r.randint(0, d) for d in a.shape]
            return self.stmt("dslice", [a] + starts, sizes=sizes), "exact"
        upd = self.need(pool, tuple(r.randint(0, d) for d in a.shape), a.dtype)
        return self.stmt("dus", [a, upd] + starts), "exact"

    def g_dot(self, pool):
        r = self.rng
        a = self.pick(pool, lambda v: v.shape != () and v.dtype != "bool" and len(v.shape) <= 3)
        if a is None:
            return None
        k = a.shape[-1]
        n = r.choice([1, 2, 3, 5, 8, 17])
        if len(a.shape) == 1:
            bshape = r.choice([(k,), (k, n)])
        else:
            bshape = r.choice([(k,), (k, n), a.shape[:-2] + (k, n)])
        work = int(np.prod(a.shape, dtype=np.int64)) * int(np.prod(bshape, dtype=np.int64))
        if work > 5e7:
            return None
        b = self.need(pool, bshape, a.dtype)
        f = "dot" if len(a.shape) <= 2 and len(b.shape) <= 2 and r.random() < 0.3 else "matmul"
        return self.stmt("dot", [a, b], f=f), ("exact" if a.dtype in INTS else "inexact")

    def g_const(self, pool):
        r = self.rng
        dt = self.any_dtype()
        n = r.choice([0, 1, 3, 5, 8])
        arange_dt = dt if dt != "bool" else "int32"      # JAX has no boolean iota
        shape = self.shape()
        expr = r.choice([f"jnp.arange({n}, dtype={arange_dt!r})", f"jnp.ones({shape!r}, {dt!r})",
                         f"jnp.zeros({shape!r}, {dt!r})",
                         f"jnp.full({shape!r}, {r.choice([1, 2, 0])}, {dt!r})",
                         f"jnp.eye({n}, dtype={dt!r})"])
        return self.stmt("const", [], expr=expr), "exact"

    def g_random(self, pool):
        r = self.rng
        f = r.choice(["uniform", "normal"])
        dt = self.float_dtype()
        p = dict(f=f, seed=r.randrange(2**31), shape=self.shape(), dtype=dt)
        args = []
        if r.random() < 0.3:
            p["fold"] = True
            args = [self.need(pool, (), "int32")]
        if r.random() < 0.3:
            p["split"] = r.choice([1, 2])
        return self.stmt("random", args, **p), ("exact" if f == "uniform" else "inexact")

    # ------------------------------------------------------------ bodies
    def body(self, pool: list, params: list, out: tuple) -> Block:
        """A nested block over params (closing over pool) ending in `out`:
        ("type", shape, dtype), ("scalar",) a float scalar, ("any",)."""
        for v in params:
            self.table[v.name] = v
        self.depth += 1
        outer = self.rng.sample(pool, min(len(pool), 2))   # mostly build on the params
        inner = outer + list(params)
        stmts = self.statements(inner, self.rng.randint(1, max(1, self.max_stmts // 2)))
        self.depth -= 1
        local = params + [s.out for s in stmts]
        if out[0] == "type":
            res = self.coerce(inner, local, out[1], out[2])
            if res is not None:
                stmts.append(res)
                return Block(params, stmts, [res.out.name])
            raise Rejected("no value to return")
        if out[0] == "scalar":
            t = self.latest(local, lambda v: v.dtype in FLOATS)
            if t is None:
                raise Rejected("no float value")
            s = self.stmt("red", [t], f="sum", axis=None)
            s.out.shape, s.out.dtype = infer(s, self.table, self.ns)
            self.finish(s, "inexact")
            return Block(params, stmts + [s], [s.out.name])
        t = self.latest(local, lambda v: True)
        return Block(params, stmts, [t.name])

    def coerce(self, pool, local, shape, dtype) -> Stmt | None:
        def ok(v):
            if v.dtype in FLOATS and dtype not in FLOATS:
                return False
            try:
                return np.broadcast_shapes(v.shape, shape) == tuple(shape)
            except ValueError:
                return False
        t = self.latest(local, ok)
        if t is None:
            return None
        if t.shape == tuple(shape) and t.dtype == dtype:
            s = self.stmt("coerce", [t], shape=shape, dtype=dtype)
            s.op = "cast"
            s.params = {"dtype": dtype}
        else:
            s = self.stmt("coerce", [t], shape=shape, dtype=dtype)
        s.out.shape, s.out.dtype = infer(s, self.table, self.ns)
        self.finish(s, "exact")
        return s

    def latest(self, cands, pred):
        """Mostly the last value that fits, so a body's statements feed its result."""
        fit = [v for v in cands if pred(v)]
        if not fit:
            return None
        return fit[-1] if self.rng.random() < 0.75 else self.rng.choice(fit)

    def param(self, shape, dtype, like: Var | None = None) -> Var:
        """A body parameter; it is as exact as the value bound to it (`like`),
        a loop carry (like None) never: it holds the body's earlier results."""
        v = Var(self.name("p"), tuple(shape), dtype, exact=like is not None and like.exact,
                err=like.err if like is not None else 0.0)
        self.table[v.name] = v
        return v

    def g_cond(self, pool):
        p = self.pick(pool, lambda v: v.exact)
        a = self.pick(pool)
        if p is None or a is None:
            return None
        bodies = [self.body(pool, [self.param(a.shape, a.dtype, a)], ("type", a.shape, a.dtype))
                  for _ in range(2)]
        s = self.stmt("cond", [p, a])
        s.bodies = bodies
        return s, "exact"

    def g_loop(self, pool):
        a = self.pick(pool)
        if a is None:
            return None
        n = self.rng.choice([0, 1, 2, 3, 5])
        i, c = self.param((), "int32", Var("i", (), "int32")), self.param(a.shape, a.dtype)
        b = self.body(pool, [i, c], ("type", a.shape, a.dtype))
        s = self.stmt(self.rng.choice(["fori", "while"]), [a], n=n)
        s.bodies = [b]
        return s, "exact"

    def g_scan(self, pool):
        a = self.pick(pool)
        xs = self.pick(pool, lambda v: v.shape != () and v.shape[0] <= 64)
        if a is None or xs is None:
            return None
        c, x = self.param(a.shape, a.dtype), self.param(xs.shape[1:], xs.dtype, xs)
        b = self.body(pool, [c, x], ("type", a.shape, a.dtype))
        y = self.pick([c, x] + [s.out for s in b.stmts])
        b.outs = b.outs + [y.name]
        s = self.stmt("scan", [a, xs], which=self.rng.choice([0, 1]), n=xs.shape[0])
        s.bodies = [b]
        return s, "exact"

    def _float_var(self, pool, rank1=False):
        return self.pick(pool, lambda v: v.dtype in FLOATS and (v.shape != () or not rank1))

    def g_grad(self, pool):
        a = self._float_var(pool)
        if a is None:
            return None
        b = self.body(pool, [self.param(a.shape, a.dtype, a)], ("scalar",))
        s = self.stmt("grad", [a])
        s.bodies = [b]
        return s, "inexact"

    def check_batched(self, body: Block, batch: int) -> None:
        """A vmapped body's values exist once per example: bound their total."""
        from .program import all_vars
        biggest = max(float(np.prod(v.shape, dtype=np.float64)) for v in all_vars(body))
        if biggest * batch > 4e6:
            raise Rejected("vmapped body too large")

    def g_vmap(self, pool):
        a = self.pick(pool, lambda v: v.shape != ())
        if a is None:
            return None
        ax = self.rng.randrange(len(a.shape))
        pshape = a.shape[:ax] + a.shape[ax + 1:]
        b = self.body(pool, [self.param(pshape, a.dtype, a)], ("any",))
        self.check_batched(b, a.shape[ax])
        s = self.stmt("vmap", [a], axis=ax)
        s.bodies = [b]
        return s, "exact"

    def g_jvp(self, pool):
        a = self._float_var(pool)
        if a is None:
            return None
        t = self.need(pool, a.shape, a.dtype)
        b = self.body(pool, [self.param(a.shape, a.dtype, a)], ("any",))
        if self.table[b.outs[0]].dtype not in FLOATS:
            return None
        s = self.stmt("jvp", [a, t], which=self.rng.choice([0, 1, 1]))
        s.bodies = [b]
        return s, "inexact"

    def g_gradvmap(self, pool):
        a = self._float_var(pool, rank1=True)
        if a is None:
            return None
        b = self.body(pool, [self.param(a.shape[1:], a.dtype, a)], ("scalar",))
        self.check_batched(b, a.shape[0])
        s = self.stmt(self.rng.choice(["gradvmap", "vmapgrad"]), [a])
        s.bodies = [b]
        return s, "inexact"


def generate(seed: int, **kw) -> Program:
    return Gen(seed, **kw).program()
