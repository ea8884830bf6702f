"""The per-call path of a jitted function, specialised to one argument signature.

A call of a jitted function with pytrees and Python scalars would otherwise
flatten the arguments, build an abstract value per leaf, hash the lot and only
then reach the compiled code: tens of microseconds for a dozen leaves. After the
first (general) call with a signature, jit asks `make_plan` for a plan: one
straight-line Python function, generated for that signature, that checks the
arguments (structure, leaf types, shapes, dtypes, static values) and, when they
match, fills the pointer table, calls the native entry and builds the result
tree, with no loop, recursion or dictionary lookup on the way. When anything
differs it returns MISS and the call goes the general way (which may retrace).
Python scalars live in ctypes cells owned by the pointer table, so a float
argument costs one store instead of an array conversion.
"""
from __future__ import annotations

import ctypes
import struct

import numpy as np

from . import tree
from jx.runtime.entry import _C_CONTIGUOUS_ALIGNED as _ALIGNED_C, _data_ptr

from .array import Array

MISS = object()
_MAX_LEAVES = 512          # bigger trees gain little and make long generated code
_MAX_LEAF_BYTES = 1 << 16  # see make_plan
_CELL = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double,
         np.dtype(np.int32): ctypes.c_int32, np.dtype(np.int64): ctypes.c_int64,
         np.dtype(np.bool_): ctypes.c_bool}
_INT_RANGE = {np.dtype(np.int32): (-2**31, 2**31 - 1), np.dtype(np.int64): (-2**63, 2**63 - 1)}


class _Unplannable(Exception):
    """A node or leaf the generated code does not handle (the general path does)."""


class _Writer:
    def __init__(self):
        self.lines: list = []
        self.consts: dict = {}
        self.n = 0

    def const(self, value, prefix: str = "K") -> str:
        name = f"{prefix}{len(self.consts)}"
        self.consts[name] = value
        return name

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def emit(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + line)


def _walk_in(w: _Writer, node, src: str, leaves: list, obj) -> None:
    """Code that checks the object `src` has node's structure and binds its leaves
    in flatten order (dict children by sorted key, as tree.flatten gives them).
    obj: the value seen when the plan was made (a dict's insertion order)."""
    if node.kind is None:
        leaves.append(src)
        return
    kind = node.kind
    if kind is type(None):
        w.emit(f"if {src} is not None: return MISS")
        return
    if kind in (tuple, list) or tree._is_namedtuple_type(kind):
        k = kind.__name__ if kind in (tuple, list) else w.const(kind, "T")
        w.emit(f"if type({src}) is not {k} or len({src}) != {len(node.children)}:"
               " return MISS")
        names = [w.fresh("n") for _ in node.children]
        if names:
            w.emit(f"{', '.join(names)}, = {src}")
        for v, child, o in zip(names, node.children, obj):
            _walk_in(w, child, v, leaves, o)
        return
    if kind is dict:
        w.emit(f"if type({src}) is not dict or len({src}) != {len(node.aux)}: return MISS")
        _walk_keys(w, node, src, leaves, obj)
        return
    raise _Unplannable(kind)


def _walk_keys(w: _Writer, node, src: str, leaves: list, obj: dict) -> None:
    """A dict node's children by key (the caller checked the dict's size). A dict
    built the same way as the one seen is unpacked in one step (its keys in the
    same insertion order); any other order is looked up key by key."""
    keys = tuple(node.aux or ())
    names = {k: w.fresh("n") for k in keys}
    order = tuple(obj)
    if keys and set(order) == set(keys):
        w.emit(f"if tuple({src}) == {w.const(order, 'O')}:")
        w.emit(f"{', '.join(names[k] for k in order)}, = {src}.values()", 2)
        w.emit("else:")
        depth = 2
    else:
        depth = 1
    for k in keys:
        v = names[k]
        w.emit(f"{v} = {src}.get({w.const(k)}, MISS)", depth)
        w.emit(f"if {v} is MISS: return MISS", depth)
    for k, child in zip(keys, node.children):
        _walk_in(w, child, names[k], leaves, obj[k])


def _leaf_kind(x, aval) -> str:
    t = type(x)
    if t is Array or t is np.ndarray:
        return "array"
    if t is float or t is int or t is bool:
        if np.dtype(aval.dtype) not in _CELL:
            raise _Unplannable(aval)
        return t.__name__
    raise _Unplannable(t)


def _build_out(w: _Writer, node, names: list) -> str:
    """An expression rebuilding node from the result names (consumed in order)."""
    if node.kind is None:
        return names.pop(0)
    kind = node.kind
    parts = [_build_out(w, c, names) for c in node.children]
    if kind is type(None):
        return "None"
    if kind is tuple:
        return "(" + "".join(p + ", " for p in parts) + ")"
    if kind is list:
        return "[" + ", ".join(parts) + "]"
    if tree._is_namedtuple_type(kind):
        return f"{w.const(kind, 'T')}({', '.join(parts)})"
    if kind is dict:
        return "{" + ", ".join(f"{w.const(k)}: {p}" for k, p in zip(node.aux, parts)) + "}"
    rebuild = w.const(lambda children, node=node: tree.unflatten(
        node, tree.tree_leaves(children)), "U")
    return f"{rebuild}([{', '.join(parts)}])"


def make_plan(cf, in_tree, leaves: list, static: dict, static_kw: dict, n_args: int,
              kw_names: tuple, out_tree, mode, objs: tuple):
    """The specialised call for this signature, or None where it does not apply.
    cf: the backend's CompiledFunction (its plan_parts); in_tree/leaves: the
    flattened (dynamic args, dynamic kwargs) and objs those two unflattened;
    static/static_kw: the static values by position and name; kw_names: every
    keyword given."""
    if len(leaves) > _MAX_LEAVES or not hasattr(cf, "plan_parts"):
        return None
    parts = cf.plan_parts()
    # Plans pay off where the Python path is the cost: small arrays. A training step
    # on large ones (MLP SGD, 784-1024-1024-10) measured 10.3 ms through a plan
    # against 7.5 ms the general way; the cause is not found yet, so large calls
    # keep the general path.
    sizes = [a.size * np.dtype(a.dtype).itemsize for a in parts["in_avals"]] + \
        [int(np.prod(s)) * np.dtype(d).itemsize for _, s, d in parts["out_specs"]]
    if max(sizes, default=0) > _MAX_LEAF_BYTES:
        return None
    try:
        return _generate(parts, in_tree, leaves, static, static_kw, n_args, kw_names,
                         out_tree, mode, objs)
    except _Unplannable:
        return None


_SIGNATURES: dict = {}


def signature(shape: tuple, dtype, weak: bool):
    """The token a jx.Array carries (`_sig`, with its data pointer `_ptr`) once a
    plan has checked that its buffer is C-contiguous and aligned with this shape,
    dtype and weak type: later plans check the token by identity instead of
    inspecting the buffer. Arrays are immutable, so the facts stay true."""
    key = (tuple(shape), np.dtype(dtype), bool(weak))
    tok = _SIGNATURES.get(key)
    if tok is None:
        tok = _SIGNATURES.setdefault(key, _Signature(key))
    return tok


class _Signature:
    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __repr__(self) -> str:
        return f"signature{self.key}"


def _checked_ptr(x, sig):
    """The data pointer of an array leaf matching sig, or None (the first use of
    an Array, or a NumPy array: the full check, remembered on the Array)."""
    t = type(x)
    shape, dtype, weak = sig.key
    if t is Array:
        v = x._value
        if x._weak is not weak:
            return None
    elif t is np.ndarray:
        if weak:
            return None
        v = x
    else:
        return None
    if v.shape != shape or v.dtype != dtype or v.flags.num & _ALIGNED_C != _ALIGNED_C:
        return None
    p = _data_ptr(v)
    if t is Array:
        x._sig, x._ptr = sig, p
    return p


def _out_groups(specs) -> list:
    """Outputs by (shape, dtype): each group of two or more is allocated as one
    array and handed out as its rows (one allocation; each row's view is made
    when something first reads it)."""
    groups: dict = {}
    for k, (_, shape, dt) in enumerate(specs):
        groups.setdefault((tuple(shape), np.dtype(dt)), []).append(k)
    return list(groups.items())


def _generate(parts, in_tree, leaves, static, static_kw, n_args, kw_names, out_tree, mode,
              objs):
    w = _Writer()
    avals = parts["in_avals"]
    w.emit(f"if state.special or state.mode != MODE or len(args) != {n_args} or "
           f"len(kwargs) != {len(kw_names)}: return MISS")
    for i, v in static.items():                 # static values: equal, as the cache keys them
        c = w.const(v, "S")
        w.emit(f"a = args[{i}]")
        w.emit(f"if a is not {c} and (type(a) is not type({c}) or (a == {c}) is not True):"
               " return MISS")
    for k, v in static_kw.items():
        c, kc = w.const(v, "S"), w.const(k)
        w.emit(f"a = kwargs.get({kc}, MISS)")
        w.emit(f"if a is not {c} and (type(a) is not type({c}) or (a == {c}) is not True):"
               " return MISS")
    dyn_tree, kw_tree = in_tree.children
    dyn_objs, kw_objs = objs
    names: list = []
    dyn_pos = [i for i in range(n_args) if i not in static]
    for pos, child, o in zip(dyn_pos, dyn_tree.children, dyn_objs):
        v = w.fresh("n")
        w.emit(f"{v} = args[{pos}]")
        _walk_in(w, child, v, names, o)
    _walk_keys(w, kw_tree, "kwargs", names, kw_objs)   # (the keyword count was checked)
    if len(names) != len(leaves) or len(leaves) != len(avals):
        raise _Unplannable("leaf count")
    # array leaves: the signature token and pointer an Array carries, checked by
    # identity; on the first use of an Array (or a NumPy leaf) the full check
    ptr, arrays, cells = {}, [], []
    for j, (name, x, aval) in enumerate(zip(names, leaves, avals)):
        kind = _leaf_kind(x, aval)
        if kind == "array":
            # (the weak type the cache keyed on: the leaf's own, not the graph input's)
            sig = signature(aval.shape, aval.dtype, type(x) is Array and x._weak)
            arrays.append((j, name, w.const(sig, "G")))
            ptr[j] = f"p{j}"
        else:
            dt = np.dtype(aval.dtype)
            w.emit(f"if type({name}) is not {kind}: return MISS")
            if kind == "int":
                lo, hi = _INT_RANGE.get(dt, (None, None))
                if lo is None:
                    raise _Unplannable(dt)
                w.emit(f"if not {lo} <= {name} <= {hi}: return MISS")
            cells.append((j, name, _CELL[dt]))
    if arrays:
        w.emit("try:")
        cond = " or ".join(f"{n}._sig is not {g}" for _, n, g in arrays)
        w.emit(f"if {cond}: raise AttributeError", 2)
        for j, n, _ in arrays:
            w.emit(f"p{j} = {n}._ptr", 2)
        w.emit("except AttributeError:")
        for j, n, g in arrays:
            w.emit(f"p{j} = checked({n}, {g})", 2)
            w.emit(f"if p{j} is None: return MISS", 2)
    n_in, specs = len(avals), parts["out_specs"]
    # the call: a pointer table (with its scalar cells) owned by this call
    w.emit("tb = tables.pop() if tables else new_table()")
    w.emit(f"table, base, {''.join(f'c{c}, ' for c in range(len(cells)))}"
           f"{''.join(f'ca{c}, ' for c in range(len(cells)))}= tb")
    for c, (j, name, _) in enumerate(cells):
        w.emit(f"c{c}.value = {name}")
        ptr[j] = f"ca{c}"
    w.emit("try:")
    out_ptr, results, block = {}, {}, {}
    for (shape, dt), ks in _out_groups(specs):
        sh, d = w.const((len(ks),) + shape if len(ks) > 1 else shape, "SH"), w.const(dt, "DT")
        if len(ks) == 1:
            w.emit(f"o{ks[0]} = empty({sh}, {d})", 2)
            w.emit(f"q{ks[0]} = dp(o{ks[0]})", 2)
        else:       # the rows' views are made when first used (Array.__getattr__)
            g = w.fresh("g")
            w.emit(f"{g} = empty({sh}, {d})", 2)
            for k in ks:
                block[k] = g
            nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            w.emit(f"q{ks[0]} = dp({g})", 2)
            for i, k in enumerate(ks[1:], 1):
                w.emit(f"q{k} = q{ks[0]} + {i * nbytes}", 2)
        for k in ks:
            out_ptr[k] = f"q{k}"
            results[k] = w.const(signature(shape, dt, parts["out_weak"][k]), "G")
    w.emit("except MemoryError:")
    w.emit("tables.append(tb)", 2)
    w.emit("raise out_memory_error() from None", 2)
    slots = [ptr[j] for j in range(n_in)] + [out_ptr[k] for k in range(len(specs))]
    if slots:
        w.emit(f"pack(table, 0, {', '.join(slots)})")
    w.emit(f"status = fn(base, base + {n_in * ctypes.sizeof(ctypes.c_void_p)})")
    w.emit("tables.append(tb)")
    w.emit("if status: raise status_error(status)")
    outs = []
    for k, weak in enumerate(parts["out_weak"]):
        r = f"r{k}"
        outs.append(r)
        held = f"_base = {block[k]}" if k in block else f"_value = o{k}"
        w.emit(f"{r} = new(Array); {r}.{held}; {r}._weak = {bool(weak)}; "
               f"{r}._sig = {results[k]}; {r}._ptr = q{k}")
    w.emit(f"return {_build_out(w, out_tree, outs)}")

    table_type = ctypes.c_void_p * max(1, n_in + len(specs))
    cell_types = [c for _, _, c in cells]

    def new_table():
        table = table_type()
        cs = [c() for c in cell_types]
        return (table, ctypes.addressof(table), *cs, *map(ctypes.addressof, cs))

    from . import flags
    env = dict(w.consts, MISS=MISS, MODE=mode, state=flags.STATE, Array=Array,
               tables=[], new_table=new_table, dp=parts["data_ptr"], checked=_checked_ptr,
               empty=np.empty, fn=parts["fn"], pack=struct.Struct(f"{len(slots)}Q").pack_into,
               status_error=parts["status_error"], new=Array.__new__,
               out_memory_error=parts["out_memory_error"])
    source = "def plan(args, kwargs):\n" + "\n".join(w.lines) + "\n"
    exec(compile(source, "<jx.jit call plan>", "exec"), env)
    plan = env["plan"]
    plan.source = source
    return plan
