"""Symbolic dimensions (issue 22): sizes known by name while tracing, by value when
the compiled code runs.

A spec `jx.f32["B", 784]` names its first dimension B, and every argument naming B
has the same size. A dimension is then an int or a `Dim`: an integer polynomial
over symbols and floor quotients (`B*T`, `2*B - 1`, `B // 2`) in a canonical form,
so equal expressions compare equal and hash alike, and print the same way.

Shape rules ask questions about dimensions (equal? at least 1? divisible by 8?)
and `Constraints` answers them from what the symbols are declared to be
(`jx.dim("B", min=1, max=4096, multiple_of=8)`, or JAX-style `"B >= 1"`); a
question they cannot settle raises InconclusiveDimensionError, which names the
dimension and the constraint that would settle it: never a silent guess. A Dim
refuses int(): code that needs a number gets the error instead of a wrong size.

This module is the algebra alone; specs, shape rules and code generation build on
it (see issue 22's plan in the README).
"""
from __future__ import annotations

import math
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass

from .errors import JxError, user_location


class InconclusiveDimensionError(JxError, TypeError):
    """A question about symbolic dimensions their constraints cannot settle."""


class DimensionSpecError(JxError, ValueError):
    """A dimension expression or constraint that does not parse or cannot hold."""


# ---------------------------------------------------------------- the polynomial
# A monomial is a sorted tuple of (atom, power); an atom is a symbol's name (str)
# or a _FloorDiv. A Dim maps monomials to non-zero integer coefficients; the empty
# monomial () holds the constant.

@dataclass(frozen=True, order=False)
class _FloorDiv:
    num: "Dim"
    den: int

    def __str__(self) -> str:
        inner = str(self.num)
        return f"({inner}) // {self.den}" if len(self.num.terms) > 1 else \
            f"{inner} // {self.den}"


def _atom_key(atom) -> tuple:
    return (0, atom) if isinstance(atom, str) else (1, str(atom))


class Dim:
    """An integer polynomial over symbols (immutable, hashable)."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: dict):
        self.terms = {m: c for m, c in terms.items() if c}
        self._hash = hash(frozenset(self.terms.items()))

    @staticmethod
    def symbol(name: str) -> "Dim":
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or ""):
            raise DimensionSpecError(f"{name!r} is not a dimension name: use an identifier "
                                     "such as 'B' or 'seq_len'")
        return Dim({((name, 1),): 1})

    # -- arithmetic (ints and Dims mix freely; results that are constants are ints)
    def __add__(self, other):
        other = _as_dim(other)
        if other is None:
            return NotImplemented
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return _simplest(Dim(terms))

    __radd__ = __add__

    def __neg__(self):
        return _simplest(Dim({m: -c for m, c in self.terms.items()}))

    def __sub__(self, other):
        other = _as_dim(other)
        return NotImplemented if other is None else self + (-other)

    def __rsub__(self, other):
        other = _as_dim(other)
        return NotImplemented if other is None else other + (-self)

    def __mul__(self, other):
        other = _as_dim(other)
        if other is None:
            return NotImplemented
        terms: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = _mono_mul(m1, m2)
                terms[m] = terms.get(m, 0) + c1 * c2
        return _simplest(Dim(terms))

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if isinstance(other, Dim) or not isinstance(other, int) or isinstance(other, bool):
            if isinstance(other, Dim):
                raise InconclusiveDimensionError(
                    f"{self} // {other}: jx divides dimensions by integers only")
            return NotImplemented
        if other <= 0:
            raise DimensionSpecError(f"{self} // {other}: divide a dimension by a "
                                     "positive integer")
        if all(c % other == 0 for c in self.terms.values()):     # exact, term by term
            return _simplest(Dim({m: c // other for m, c in self.terms.items()}))
        return Dim({(((_FloorDiv(self, other)), 1),): 1})

    def __mod__(self, other):
        return self - other * (self // other)

    # -- comparisons: structural equality; order only through Constraints
    def __eq__(self, other):
        other = _as_dim(other)
        return other is not None and self.terms == other.terms

    def __hash__(self):
        return self._hash

    def _refuse(self, what: str):
        raise InconclusiveDimensionError(
            f"the symbolic dimension {self} has no {what} while tracing{where()}: this "
            "step needs a fixed size; give the symbol one, or write it with the "
            "operations that take symbols (README, 'Symbolic dimensions')")

    # Order as any size the symbols may take decides it (the active scope's
    # constraints; each symbol at least 1 by default, as in JAX); where sizes would
    # disagree, InconclusiveDimensionError: never a guess (see scope() for the
    # compiler's performance heuristics, which may guess).
    def __ge__(self, other):
        return active().greater_equal(self, other)

    def __le__(self, other):
        return active().greater_equal(other, self)

    def __gt__(self, other):
        return active().greater_equal(self, other + 1)

    def __lt__(self, other):
        return active().greater_equal(other, self + 1)

    def __bool__(self):
        self._refuse("truth value")

    def __int__(self):
        self._refuse("integer value")

    def __float__(self):
        self._refuse("number value (the size as a value is dimension_size)")

    __index__ = __int__

    # -- values and names
    def symbols(self) -> set:
        out = set()
        for m in self.terms:
            for atom, _ in m:
                out |= {atom} if isinstance(atom, str) else atom.num.symbols()
        return out

    def evaluate(self, values: dict) -> int:
        """The value at `values` ({symbol: int}); a symbol missing is an error."""
        total = 0
        for m, c in self.terms.items():
            term = c
            for atom, p in m:
                if isinstance(atom, str):
                    if atom not in values:
                        raise DimensionSpecError(f"no value for the dimension {atom} "
                                                 f"(in {self})")
                    v = int(values[atom])
                else:
                    v = atom.num.evaluate(values) // atom.den
                term *= v ** p
            total += term
        return total

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m in sorted(self.terms, key=lambda m: (-len(m), [_atom_key(a) for a, _ in m])):
            c = self.terms[m]
            body = "*".join((f"({a})" if not isinstance(a, str) else a) +
                            (f"^{p}" if p > 1 else "") for a, p in m)
            if not body:
                parts.append((c, str(abs(c))))
            elif abs(c) == 1:
                parts.append((c, body))
            else:
                parts.append((c, f"{abs(c)}*{body}"))
        text = ("-" if parts[0][0] < 0 else "") + parts[0][1]
        for c, s in parts[1:]:
            text += f" {'-' if c < 0 else '+'} {s}"
        return text

    __repr__ = __str__


def _mono_mul(m1: tuple, m2: tuple) -> tuple:
    powers: dict = {}
    for atom, p in m1 + m2:
        powers[atom] = powers.get(atom, 0) + p
    return tuple(sorted(powers.items(), key=lambda ap: _atom_key(ap[0])))


def _as_dim(x):
    if isinstance(x, Dim):
        return x
    if isinstance(x, bool):
        return None
    if isinstance(x, int) or (hasattr(x, "__index__") and not isinstance(x, float)):
        try:
            return Dim({(): int(x.__index__())})
        except TypeError:
            return None
    return None


def _simplest(d: Dim):
    """A constant Dim is an int: fixed sizes stay plain ints throughout."""
    if not d.terms:
        return 0
    if set(d.terms) == {()}:
        return d.terms[()]
    return d


def exact_quotient(a, b):
    """a / b when b divides a for every size the symbols may take (ints, or a Dim
    divided by an int or by one of its monomials: 784*B / B = 784), else None."""
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return a // b if b and a % b == 0 else None
    if not isinstance(b, Dim):
        return a // b if b and all(c % b == 0 for c in a.terms.values()) else None
    if len(b.terms) != 1:
        return None
    (mb, cb), = b.terms.items()
    if not isinstance(a, Dim):
        return None
    out = {}
    for m, c in a.terms.items():
        powers = dict(m)
        for atom, p in mb:
            if powers.get(atom, 0) < p:
                return None
            powers[atom] -= p
        if c % cb:
            return None
        key = tuple(sorted(((k, v) for k, v in powers.items() if v),
                           key=lambda ap: _atom_key(ap[0])))
        out[key] = out.get(key, 0) + c // cb
    return _simplest(Dim(out))


def substitute(obj, values: dict):
    """obj (a dim, or tuples and lists of them) with every symbol given its value."""
    if isinstance(obj, Dim):
        return obj.evaluate(values)
    if isinstance(obj, (tuple, list)):
        return type(obj)(substitute(x, values) for x in obj)
    return obj


def solve(pairs) -> dict:
    """{symbol: value} from (dimension, size) pairs: each bare symbol, then each
    expression linear in one symbol not yet known (2*B + 1 of size 9: B = 4);
    DimensionSpecError for sizes that disagree or a symbol left unknown."""
    values: dict = {}
    pairs = [(d, int(n)) for d, n in pairs]
    for _ in range(2):
        for d, n in pairs:
            if not isinstance(d, Dim):
                continue
            unknown = sorted(d.symbols() - set(values))
            if len(unknown) != 1:
                continue
            s = unknown[0]
            linear = _linear_in(d, s)
            if linear is None:
                continue
            c, rest = linear
            k = rest.evaluate(values) if isinstance(rest, Dim) else rest
            if (n - k) % c:
                raise DimensionSpecError(f"no integer {s} makes {d} = {n}")
            values[s] = (n - k) // c
    for d, n in pairs:
        if isinstance(d, Dim):
            missing = d.symbols() - set(values)
            if missing:
                raise DimensionSpecError(f"cannot tell {', '.join(sorted(missing))} from an "
                                         f"argument of size {n} for {d}: give it in a "
                                         "dimension of its own")
            if d.evaluate(values) != n:
                raise DimensionSpecError(f"{d} is {d.evaluate(values)} with "
                                         f"{_show(values)}, but an argument has {n} there")
        elif d != n:
            raise DimensionSpecError(f"an argument has size {n} where {d} is declared")
    return values


def _linear_in(d: Dim, s: str):
    """(c, rest) with d = c*s + rest, c != 0 and rest free of s; None when d is not
    linear in the symbol s."""
    c = d.terms.get(((s, 1),), 0)
    rest = d - Dim.symbol(s) * c
    if c == 0 or (isinstance(rest, Dim) and s in rest.symbols()):
        return None
    return c, rest


def _bare_symbol(d) -> str | None:
    """The name of a dimension that is one symbol alone (B, not 2*B or B + 1)."""
    if isinstance(d, Dim) and len(d.terms) == 1:
        (mono, c), = d.terms.items()
        if c == 1 and len(mono) == 1 and mono[0][1] == 1 and isinstance(mono[0][0], str):
            return mono[0][0]
    return None


def bind(declared, actual, names, constraints: "Constraints | None" = None) -> dict:
    """{symbol: value} for arguments of shapes `actual` given for the declared
    shapes `declared` (names: each argument's name for messages). Sizes that
    disagree name both arguments; a value that breaks a constraint names it."""
    seen: dict = {}                     # bare symbol -> (value, argument, axis)
    for shape, got, name in zip(declared, actual, names):
        if len(shape) != len(got):
            raise DimensionSpecError(f"{name} has shape {tuple(got)}, where "
                                     f"{_shape_text(shape)} is declared")
        for axis, (d, n) in enumerate(zip(shape, got)):
            symbol = _bare_symbol(d)
            if symbol is not None:
                first = seen.setdefault(symbol, (n, name, axis))
                if first[0] != n:
                    raise DimensionSpecError(
                        f"{d} disagrees between arguments: {first[1]} has {first[0]} at "
                        f"axis {first[2]}, {name} has {n} at axis {axis}")
    try:
        values = solve([(d, n) for shape, got in zip(declared, actual)
                        for d, n in zip(shape, got)])
    except DimensionSpecError as e:
        bad = next(((name, shape, got) for shape, got, name in zip(declared, actual, names)
                    if _mismatch(shape, got, {k: v for k, (v, _, _) in seen.items()})), None)
        if bad is None:
            raise
        raise DimensionSpecError(f"{bad[0]} has shape {tuple(bad[2])}, where "
                                 f"{_shape_text(bad[1])} is declared ({e})") from None
    if constraints is not None:
        for sym, v in values.items():
            try:
                constraints.check({sym: v})
            except DimensionSpecError as e:
                where_from = f" (from {seen[sym][1]}, axis {seen[sym][2]})" if sym in seen else ""
                raise DimensionSpecError(f"{e}{where_from}") from None
    return values


def read_plan(shapes, symbols) -> list:
    """Where a loader reads each symbol's value from the arguments: [leaf, axis, c, k]
    for a dimension c*symbol + k of input `leaf` (a bare symbol preferred). A
    symbol that no input dimension gives alone: DimensionSpecError."""
    plan = []
    for s in symbols:
        found = []
        for i, shape in enumerate(shapes):
            for axis, d in enumerate(shape):
                linear = _linear_in(d, s) if isinstance(d, Dim) else None
                if linear is not None and not isinstance(linear[1], Dim):   # c*s + k
                    c, k = linear
                    found.append((_bare_symbol(d) != s, i, axis, c, k))
        if not found:
            raise DimensionSpecError(
                f"the symbol {s} appears in no input dimension of the form c*{s} + k, so its "
                f"value cannot be read off the arguments; give an input a dimension {s}")
        _, i, axis, c, k = min(found)
        plan.append([i, axis, c, k])
    return plan


def _shape_text(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _mismatch(shape, got, values) -> bool:
    try:
        return any((d.evaluate(values) if isinstance(d, Dim) else d) != n
                   for d, n in zip(shape, got))
    except DimensionSpecError:
        return False


def _show(values: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(values.items()))


# ---------------------------------------------------------------- constraints
@dataclass(frozen=True)
class DimSpec:
    """A symbol with its constraints (jx.dim): min and max inclusive, multiple_of."""
    name: str
    min: int = 1
    max: int | None = None
    multiple_of: int = 1

    def __post_init__(self):
        Dim.symbol(self.name)
        if self.min < 0 or (self.max is not None and self.max < self.min) or \
                self.multiple_of < 1:
            raise DimensionSpecError(
                f"jx.dim({self.name!r}, min={self.min}, max={self.max}, "
                f"multiple_of={self.multiple_of}): no size satisfies it (min >= 0, "
                "max >= min, multiple_of >= 1)")


def dim(name: str, min: int = 1, max: int | None = None, multiple_of: int = 1) -> DimSpec:
    """A named dimension with constraints, for specs: jx.f32[jx.dim("B", max=4096), 784]."""
    return DimSpec(name, min, max, multiple_of)


class Constraints:
    """What the symbols of one trace are declared to be; answers shape rules'
    questions, or raises InconclusiveDimensionError saying what would settle them."""

    hinting = False        # see scope(): undecided questions answered at the hints

    def __init__(self, specs=()):
        self.specs: dict = {}
        for s in specs:
            self.add(s)

    def hint(self, name: str) -> int:
        """The size a heuristic assumes for a symbol: 128 (a typical batch) moved
        into its range and onto its multiple."""
        s = self.spec(name)
        k = s.multiple_of
        v = -(-max(s.min, 128 if s.max is None else min(s.max, 128)) // k) * k
        return v if s.max is None or v <= s.max else s.max // k * k

    def hints(self, d) -> dict:
        return {n: self.hint(n) for n in (d.symbols() if isinstance(d, Dim) else ())}

    def with_hints(self) -> "Constraints":
        out = Constraints(self.specs.values())
        out.hinting = True
        return out

    def symbols_key(self) -> tuple:
        """The declared constraints as a hashable value (compile caches)."""
        return tuple(sorted((s.name, s.min, s.max, s.multiple_of)
                            for s in self.specs.values()))

    def add(self, spec) -> None:
        spec = parse_constraint(spec) if isinstance(spec, str) else spec
        old = self.specs.get(spec.name)
        if old is not None:       # the tightest of both
            hi = [v for v in (old.max, spec.max) if v is not None]
            spec = DimSpec(spec.name, max(old.min, spec.min), min(hi) if hi else None,
                           math.lcm(old.multiple_of, spec.multiple_of))
        self.specs[spec.name] = spec

    def spec(self, name: str) -> DimSpec:
        return self.specs.get(name) or DimSpec(name)

    def bounds(self, d) -> tuple:
        """(lowest, highest) the dimension can be, None where unbounded: sound but
        not always tight (interval arithmetic, after factoring out a symbol every
        term shares, so that B*T - 2*B is seen as B*(T - 2))."""
        lo, hi = self._interval(d)
        return (None if lo == -math.inf else int(lo), None if hi == math.inf else int(hi))

    def _interval(self, d) -> tuple:
        if not isinstance(d, Dim):
            return int(d), int(d)
        termwise = (0, 0)
        for m, c in d.terms.items():
            t = (c, c)
            for atom, p in m:
                t = _imul(t, _ipow(self._atom_interval(atom), p))
            termwise = (termwise[0] + t[0], termwise[1] + t[1])
        const = d.terms.get((), 0)
        rest = {m: c for m, c in d.terms.items() if m}
        for name in sorted(d.symbols()):
            if rest and all(any(a == name for a, _ in m) for m in rest):
                q = Dim({_mono_div(m, name): c for m, c in rest.items()})
                f = _iadd(_imul(self._atom_interval(name), self._interval(_simplest(q))),
                          (const, const))
                return max(termwise[0], f[0]), min(termwise[1], f[1])
        return termwise

    def _atom_interval(self, atom) -> tuple:
        if isinstance(atom, str):
            s = self.spec(atom)
            k = s.multiple_of
            return (-(-s.min // k) * k,                   # the allowed values: multiples
                    math.inf if s.max is None else s.max // k * k)
        lo, hi = self._interval(atom.num)
        return (lo // atom.den if lo != -math.inf else -math.inf,
                hi // atom.den if hi != math.inf else math.inf)

    def _decide(self, question: str, answer, settle: str):
        if answer is None:
            raise InconclusiveDimensionError(
                f"cannot tell whether {question}{where()} from the declared constraints "
                f"({self.describe() or 'none'}); {settle}")
        return answer

    def greater_equal(self, a, b, why: str = "") -> bool:
        """a >= b for every size the constraints allow (raises when it depends)."""
        lo, hi = self.bounds(a - b)
        answer = True if lo is not None and lo >= 0 else \
            False if hi is not None and hi < 0 else None
        if answer is None and self.hinting:
            answer = substitute(a - b, self.hints(a - b)) >= 0
        return self._decide(f"{a} >= {b}" + (f" ({why})" if why else ""), answer,
                            "declare a constraint that decides it, e.g. "
                            + _hint(a - b, ">= 0"))

    def equal(self, a, b, why: str = "") -> bool:
        if a == b:
            return True
        lo, hi = self.bounds(a - b)
        answer = False if (lo is not None and lo > 0) or (hi is not None and hi < 0) \
            else None
        if answer is None and self.hinting:
            answer = substitute(a - b, self.hints(a - b)) == 0
        return self._decide(f"{a} == {b}" + (f" ({why})" if why else ""), answer,
                            "give both the same symbol, or fix one size")

    def divisible(self, d, k: int) -> bool:
        """Whether d is a multiple of k for every allowed size (raises when it depends)."""
        if not isinstance(d, Dim):
            return int(d) % k == 0
        ok = all(_term_multiple(m, c, self) % k == 0 for m, c in d.terms.items())
        return self._decide(f"{d} is a multiple of {k}", True if ok else None,
                            f"declare it, e.g. jx.dim('{min(d.symbols())}', "
                            f"multiple_of={k})")

    def check(self, values: dict) -> None:
        """Values that break a constraint: DimensionSpecError naming it."""
        for name, v in values.items():
            s = self.spec(name)
            if v < s.min or (s.max is not None and v > s.max) or v % s.multiple_of:
                raise DimensionSpecError(
                    f"dimension {name} = {v} breaks its constraint {describe_spec(s)}")

    def describe(self) -> str:
        return ", ".join(describe_spec(s) for s in self.specs.values())


_DEFAULT = Constraints()          # every symbol >= 1, nothing else known
_LOCAL = threading.local()         # each thread traces and compiles in its own scopes


def _scopes() -> list:
    stack = getattr(_LOCAL, "scopes", None)
    if stack is None:
        stack = _LOCAL.scopes = [_DEFAULT]
    return stack


def active() -> Constraints:
    """The constraints Dim comparisons consult: the innermost scope's."""
    return _scopes()[-1]


@contextmanager
def scope(constraints: Constraints | None = None, hinting: bool = False):
    """Decide Dim comparisons under `constraints` (a trace: its arguments'
    declared constraints). hinting=True is for the compiler's performance
    heuristics alone (fuse this? split over threads?), whose every answer gives
    correct code: a question the constraints leave open is answered at the hint
    sizes (Constraints.hint) instead of raising. Shape rules never run under it."""
    c = constraints or Constraints()
    stack = _scopes()
    stack.append(c.with_hints() if hinting else c)
    try:
        yield stack[-1]
    finally:
        stack.pop()


def hinted(v) -> int:
    """v at the hint sizes of the active constraints (Constraints.hint), for a
    choice of speed alone (a split, a blocking, a vector width) that is correct
    code at every size; ints pass through."""
    return substitute(v, active().hints(v)) if isinstance(v, Dim) else v


def hinting():
    """scope(hinting=True) under the active constraints: for one heuristic."""
    return scope(active(), hinting=True)


def constraints_of(shapes_and_specs) -> Constraints:
    """The constraints of a set of declared arguments: the specs they carry
    (ShapeDtypeStruct.constraints)."""
    c = Constraints()
    for specs in shapes_and_specs:
        for s in specs:
            c.add(s)
    return c


def symbols_of(shapes) -> tuple:
    """The symbols a list of shapes names, sorted: the order of a compiled
    entry's dims array."""
    return tuple(sorted({n for shape in shapes for d in shape if isinstance(d, Dim)
                         for n in d.symbols()}))


def where() -> str:
    # the user's line: past jx and the libraries jx calls into
    where = user_location(("jx", "contextlib", "functools", "numpy"))
    return f" (at {where})" if where else ""


def _mono_div(m: tuple, name: str) -> tuple:
    """Monomial m over one power of the symbol `name` (which m contains)."""
    return tuple((a, p - 1 if a == name else p) for a, p in m if not (a == name and p == 1))


def _imul(x: tuple, y: tuple) -> tuple:
    """Interval product; 0 times an unbounded end is 0 (the end is never reached)."""
    def mul(a, b):
        return 0 if 0 in (a, b) else a * b
    ends = [mul(a, b) for a in x for b in y]
    return min(ends), max(ends)


def _iadd(x: tuple, y: tuple) -> tuple:
    return x[0] + y[0], x[1] + y[1]


def _ipow(x: tuple, p: int) -> tuple:
    out = (1, 1)
    for _ in range(p):
        out = _imul(out, x)
    return out


def _term_multiple(m: tuple, c: int, cons: Constraints) -> int:
    """A number every value of the term c*m is a multiple of."""
    k = c
    for atom, p in m:
        k *= (cons.spec(atom).multiple_of if isinstance(atom, str) else 1) ** p
    return k


def _hint(d, rel: str) -> str:
    """A constraint that settles `d >= 0` when d is linear in one symbol."""
    names = sorted(d.symbols()) if isinstance(d, Dim) else []
    if len(names) == 1 and set(d.terms) <= {(), ((names[0], 1),)}:
        c, k, n = d.terms[((names[0], 1),)], d.terms.get((), 0), names[0]
        edge = -(k // c) if c > 0 else k // -c + 1      # where the answer flips
        return f"'{n} >= {edge}' or '{n} <= {edge - 1}'"
    return f"a constraint on {', '.join(names)}" if names else f"'{d} {rel}'"


def describe_spec(s: DimSpec) -> str:
    parts = [f"{s.name} >= {s.min}"]
    if s.max is not None:
        parts.append(f"{s.name} <= {s.max}")
    if s.multiple_of > 1:
        parts.append(f"{s.name} % {s.multiple_of} == 0")
    return " and ".join(parts)


# ---------------------------------------------------------------- parsing
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*()^]))")


def parse(text) -> int | Dim:
    """A dimension from a spec entry: an int, a symbol ('B') or an expression
    ('2*B', 'B*T', 'B - 1', 'B // 2')."""
    if isinstance(text, (int, Dim)) and not isinstance(text, bool):
        return text
    if isinstance(text, DimSpec):
        return Dim.symbol(text.name)
    if not isinstance(text, str):
        raise DimensionSpecError(f"{text!r} is not a dimension: use an int, a name such "
                                 "as 'B', an expression such as '2*B', or jx.dim(...)")
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise DimensionSpecError(f"dimension {text!r}: cannot read it at "
                                     f"{text[pos:]!r} (use names, ints, + - * // ^ ())")
        tokens.append(m.group(1) or m.group(2) or m.group(3))
        pos = m.end()
    out, rest = _sum(tokens, text)
    if rest:
        raise DimensionSpecError(f"dimension {text!r}: unexpected {' '.join(rest)!r}")
    return out


def _sum(toks: list, text: str):
    value, toks = _product(toks, text)
    while toks and toks[0] in "+-":
        op, (rhs, toks) = toks[0], _product(toks[1:], text)
        value = value + rhs if op == "+" else value - rhs
    return value, toks


def _product(toks: list, text: str):
    value, toks = _power(toks, text)
    while toks and toks[0] in ("*", "//"):
        op, (rhs, toks) = toks[0], _power(toks[1:], text)
        if op == "*":
            value = value * rhs
        else:
            if isinstance(rhs, Dim):
                raise DimensionSpecError(f"dimension {text!r}: divide by an integer only")
            value = value // rhs
    return value, toks


def _power(toks: list, text: str):
    value, toks = _unary(toks, text)
    if toks and toks[0] == "^":
        if len(toks) < 2 or not toks[1].isdigit():
            raise DimensionSpecError(f"dimension {text!r}: a power is a whole number (B^2)")
        out = 1
        for _ in range(int(toks[1])):
            out = out * value
        return out, toks[2:]
    return value, toks


def _unary(toks: list, text: str):
    if not toks:
        raise DimensionSpecError(f"dimension {text!r} ends too early")
    t = toks[0]
    if t == "-":
        value, rest = _unary(toks[1:], text)
        return -value, rest
    if t == "(":
        value, rest = _sum(toks[1:], text)
        if not rest or rest[0] != ")":
            raise DimensionSpecError(f"dimension {text!r}: a '(' is not closed")
        return value, rest[1:]
    if t.isdigit():
        return int(t), toks[1:]
    if t[0].isalpha() or t[0] == "_":
        return Dim.symbol(t), toks[1:]
    raise DimensionSpecError(f"dimension {text!r}: unexpected {t!r}")


def parse_constraint(text: str) -> DimSpec:
    """JAX-style 'B >= 1', 'B <= 4096', 'B % 8 == 0' (one symbol each)."""
    m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|%)\s*(\d+)\s*(?:==\s*0\s*)?",
                     text or "")
    if not m or (m.group(2) == "%" and "==" not in text):
        raise DimensionSpecError(
            f"constraint {text!r}: write 'B >= 1', 'B <= 4096' or 'B % 8 == 0'")
    name, op, k = m.group(1), m.group(2), int(m.group(3))
    if op == ">=":
        return DimSpec(name, min=k)
    if op == "<=":
        return DimSpec(name, max=k)
    return DimSpec(name, multiple_of=k)
