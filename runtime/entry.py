"""One compiled entry as a Python callable: check arguments, call through ctypes,
return NumPy arrays in the declared result structure.

Everything that depends only on the manifest is computed once, at load time; a
call with well-formed arrays does a type/dtype/shape/layout check and a pointer
read per leaf, one np.empty per result, and one foreign call.
"""
from __future__ import annotations

import ctypes
import sys
import warnings

import numpy as np

from . import abi, interrupts, pool, treespec
from .errors import (ArgumentError, ArtifactMemoryError, DtypeMismatchError,
                     EntryStatusError, ShapeMismatchError, TreeMismatchError)
from .manifest import EntrySpec, LeafSpec

_PTR = ctypes.c_void_p
_PTR_SIZE = ctypes.sizeof(_PTR)
_FN_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, _PTR, _PTR)
_NDARRAY = np.ndarray
_C_CONTIGUOUS_ALIGNED = 0x1 | 0x100   # NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED


def _find_data_offset():
    """Offset of NumPy's PyArrayObject.data field (right after the object header).
    Reading it at id(array) + offset costs ~0.2 us; `array.ctypes.data` costs ~2 us,
    more than the rest of a small call. Found and checked once; None off CPython."""
    if sys.implementation.name != "cpython":
        return None
    probes = [np.empty(n + 1, np.uint8) for n in range(4)]
    for off in range(8, 72, 8):
        if all(_PTR.from_address(id(p) + off).value == p.ctypes.data for p in probes):
            return off
    return None


_DATA_OFFSET = _find_data_offset()
if _DATA_OFFSET is not None:
    def _data_ptr(a, _read=_PTR.from_address, _off=_DATA_OFFSET):
        return _read(id(a) + _off).value
else:  # pragma: no cover - other Python implementations
    def _data_ptr(a):
        return a.ctypes.data


def bind_function(lib, symbol: str):
    """The ctypes function for an entry symbol, with its signature fixed once."""
    return _FN_TYPE((symbol, lib))


class CompiledEntry:
    """A callable entry of a loaded artifact: entry(*args) -> results.

    Arguments are the entry's positional arguments as pytrees of NumPy arrays
    (or, by keyword, when the manifest records argument names). Results are
    fresh NumPy arrays in the declared structure.
    """

    def __init__(self, spec: EntrySpec, fn, artifact_path: str, owner=None):
        self.spec = spec
        self.name = spec.name
        self.inputs = spec.inputs
        self.outputs = spec.outputs
        self.in_tree = spec.in_tree
        self.out_tree = spec.out_tree
        self._path = artifact_path
        self._owner = owner       # keeps the library (and its code) alive
        self._fn = fn
        self._nargs = len(spec.in_tree.children)
        self._arg_names = spec.arg_names or tuple(f"args[{i}]" for i in range(self._nargs))
        self._call = self._make_call()

    # -- hot path ----------------------------------------------------------------
    def _make_call(self):
        """Build the per-call closure with every constant bound as a local."""
        spec, fn = self.spec, self._fn
        in_checks = tuple((leaf.shape, leaf.dtype) for leaf in spec.inputs)
        out_specs = tuple((pool.allocator(leaf.shape, leaf.dtype), leaf.shape, leaf.dtype)
                          for leaf in spec.outputs)
        n_in = len(spec.inputs)
        table_type = _PTR * max(1, n_in + len(spec.outputs))
        out_offset = n_in * _PTR_SIZE
        flatten = self._make_flatten()
        unflatten = treespec.compile_unflatten(spec.out_tree)
        convert, status_error = self._convert, self._status_error
        tables: list = []         # pointer tables not in use; a call owns the one it pops
        ndarray, data_ptr, addressof = _NDARRAY, _data_ptr, ctypes.addressof
        flags_ok = _C_CONTIGUOUS_ALIGNED

        def call(args):
            leaves = flatten(args)
            table = tables.pop() if tables else table_type()
            keep = None
            i = 0
            for x, (shape, dtype) in zip(leaves, in_checks):
                if (type(x) is not ndarray or x.dtype != dtype or x.shape != shape
                        or x.flags.num & flags_ok != flags_ok):
                    x = convert(i, x)
                    keep = [x] if keep is None else keep + [x]   # alive until the call ends
                table[i] = data_ptr(x)
                i += 1
            outs = [empty(shape, dtype) for empty, shape, dtype in out_specs]
            for x in outs:
                table[i] = data_ptr(x)
                i += 1
            base = addressof(table)
            status = fn(base, base + out_offset)
            tables.append(table)
            if status:
                raise status_error(status)
            return unflatten(outs)

        return call

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = self._bind_keywords(args, kwargs)
        return self._call(args)

    # -- argument structure ---------------------------------------------------------
    def _make_flatten(self):
        nargs = self._nargs
        if all(c.kind == "leaf" for c in self.in_tree.children):
            def flatten(args):   # the arguments are the leaves; _convert vets non-arrays
                if len(args) != nargs:
                    self._arity_error(args)
                return args
            return flatten
        where = self._where()
        parts = tuple(treespec.compile_flatten(child, name, where)
                      for name, child in zip(self._arg_names, self.in_tree.children))

        def flatten_tree(args):
            if len(args) != nargs:
                self._arity_error(args)
            out: list = []
            for f, a in zip(parts, args):
                f(a, out)
            return out
        return flatten_tree

    def _where(self) -> str:
        return f"entry {self.name!r} of {self._path}"

    def _arity_error(self, args):
        raise TreeMismatchError(
            f"{self._where()}: takes {self._nargs} arguments ({', '.join(self._arg_names)}), "
            f"got {len(args)}; pass them positionally in that order")

    def _bind_keywords(self, args: tuple, kwargs: dict) -> tuple:
        names = self.spec.arg_names
        if names is None:
            raise ArgumentError(f"{self._where()}: the manifest records no argument names, so "
                                "arguments must be passed positionally")
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise ArgumentError(f"{self._where()}: unknown argument {k!r} "
                                    f"(arguments: {', '.join(names)})")
            if k in bound:
                raise ArgumentError(f"{self._where()}: argument {k!r} given twice")
            bound[k] = v
        missing = [n for n in names if n not in bound]
        if missing or len(args) > len(names):
            raise ArgumentError(f"{self._where()}: expected arguments ({', '.join(names)}); "
                                f"missing {', '.join(missing) or 'none'}")
        return tuple(bound[n] for n in names)

    # -- slow path: conversions and errors ------------------------------------------
    def _convert(self, i: int, x, check_shape: bool = True) -> np.ndarray:
        """Input leaf i as a C-contiguous aligned array of the declared dtype and
        shape (check_shape=False: any shape; a symbolic entry checks them all
        together), converting only when no value can change; else a clear error."""
        leaf = self.inputs[i]
        what = f"{self._where()}: argument {self._leaf_name(i)}"
        if isinstance(x, np.ma.MaskedArray):
            raise ArgumentError(f"{what} is a NumPy masked array; its mask would be silently "
                                "dropped (jx.jit and JAX refuse them too): pass x.filled(value)"
                                ", or the data and the mask as separate arguments")
        if isinstance(x, _NDARRAY):
            a = x
            if a.dtype != leaf.dtype:
                if a.dtype.newbyteorder("=") != leaf.dtype:   # byte order alone is lossless
                    raise DtypeMismatchError(
                        f"{what} has dtype {a.dtype.name}, expected {leaf}; pass "
                        f"x.astype(np.{leaf.dtype.name}) if that conversion is what you "
                        "want (arrays are never cast implicitly)")
        elif x is None or (isinstance(x, (tuple, list, dict))
                           and not treespec.is_number_list(x)):
            raise TreeMismatchError(f"{what} should be an array ({leaf}), got "
                                    f"{treespec.describe(x)}; pass arguments with the pytree "
                                    "structure the entry was compiled for")
        else:
            a = _python_value(x, leaf, what)
        if check_shape and a.shape != leaf.shape:
            raise ShapeMismatchError(
                f"{what} has shape {list(a.shape)}, expected {leaf}; the artifact was "
                "compiled for fixed shapes: pass that shape or recompile the entry for "
                "the new one (e.g. jx compile --shape)")
        return np.require(a, leaf.dtype, ["C_CONTIGUOUS", "ALIGNED"])

    def _leaf_name(self, i: int) -> str:
        path = self.inputs[i].path
        return path if path else f"inputs[{i}]"

    def _status_error(self, status: int) -> Exception:
        if status == abi.STATUS_CANCELLED:        # SIGINT or jx_request_cancel
            return interrupts.interrupted(self._where())
        name, meaning = abi.STATUS.get(status, (None, None))
        text = (f"{self._where()} returned status {status} ({name}: {meaning})" if name
                else f"{self._where()} returned unknown status {status}; the artifact may "
                     "come from a newer jx: rebuild it with this version")
        cls = ArtifactMemoryError if status == abi.STATUS_OUT_OF_MEMORY else EntryStatusError
        return cls(text, self.name, status)

    # -- description -----------------------------------------------------------------
    @property
    def signature(self) -> str:
        ins = ", ".join(f"{leaf.path or f'inputs[{i}]'}: {leaf}"
                        for i, leaf in enumerate(self.inputs))
        outs = ", ".join(f"{leaf.path or 'result'}: {leaf}" for leaf in self.outputs)
        return f"{self.name}({ins}) -> ({outs})"

    def __repr__(self) -> str:
        return f"<jx compiled entry {self.signature}>"


def _python_value(x, leaf: LeafSpec, what: str) -> np.ndarray:
    """Python scalars, NumPy scalars and lists of numbers, converted only when
    every value survives the trip to the declared dtype exactly."""
    target = leaf.dtype
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"{what}: {type(x).__name__} is not array data ({e})") from None
    if isinstance(x, (list, tuple)) and a.dtype.kind == "f" and not _list_exact(x, a):
        # NumPy rounded on the way in: [0.5, 2**53 + 1] became float64 [0.5, 2**53]
        raise DtypeMismatchError(
            f"{what} is a list whose numbers {a.dtype.name} cannot all hold exactly "
            f"(expected {leaf}); pass an array of dtype {target.name}")
    if a.dtype == target:
        return a
    # int -> float can be exact; float -> int and anything -> bool not. Bools stay bools:
    # jx.jit takes a bool list as a bool array (a mask, where an int array would index)
    allowed = {"b": "b", "i": "iufc", "u": "iufc", "f": "fc", "c": "c"}.get(a.dtype.kind, "")
    kind = "f" if target.name == "bfloat16" else target.kind
    if a.dtype.kind == "b" and kind != "b":
        raise DtypeMismatchError(
            f"{what} is {_brief(x, a)}, expected {leaf}; bools are not converted to numbers "
            "(jx.jit would see a bool array: a mask where numbers would index or count): "
            f"pass numbers, or an array of dtype {target.name}")
    if kind not in allowed:
        raise DtypeMismatchError(f"{what} is {_brief(x, a)}, expected {leaf}; pass an array "
                                 f"of dtype {target.name}")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        b = a.astype(target)
        if a.dtype.kind in "fc":  # float -> float: exact iff it round-trips (NaN included)
            exact = np.array_equal(b.astype(a.dtype), a, equal_nan=True)
        else:                     # ints compare exactly as Python objects (no wrap-around)
            exact = np.array_equal(b.astype(object), a.astype(object))
    if not exact:
        raise DtypeMismatchError(
            f"{what} is {_brief(x, a)}, which {target.name} cannot represent exactly "
            f"(expected {leaf}); pass np.{target.name} values or an array of that dtype "
            "if rounding is intended")
    return b


def _list_exact(x, a: np.ndarray) -> bool:
    """Does the float array `a` hold every number of the nested list x exactly?
    (Python compares ints with floats exactly; NaN counts as equal to NaN.)"""
    want = np.array(x, dtype=object).ravel()
    got = a.astype(object).ravel()
    return all(g == w or (g != g and w != w) for g, w in zip(got, want))


def _brief(x, a: np.ndarray) -> str:
    if a.ndim == 0:
        return f"{type(x).__name__} {x!r}"
    return f"{type(x).__name__} data of dtype {a.dtype.name}"
