"""The NumPy-style methods of jx's array types: operators, indexing, .at, .T and
.sum, .reshape, .astype, ... Each is a jx.numpy function, so promotion and
broadcasting match the functions. jx.core holds the table (ARRAY_METHODS) but
sits below jx.numpy, so this module fills it when jx.numpy is imported."""
from __future__ import annotations

from .. import dtypes

from ..core import install_array_methods
from . import creation as cr
from . import indexing as ix
from . import _products as la
from . import manipulation as mp
from . import reductions as rd
from . import sorting as so
from . import _standard as st
from . import ufuncs as uf


def _binary(fn_name: str):
    """x op o and o op x, both as the jx.numpy function of that name."""
    def op(self, o):
        return getattr(uf, fn_name)(self, o)

    def rop(self, o):
        return getattr(uf, fn_name)(o, self)
    return op, rop


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return mp.reshape(self, shape)


def _astype(self, dtype, copy=False, device=None):
    return cr.asarray(self, dtype=dtypes.canonicalize(dtype, "astype"))


def _clip(self, min=None, max=None, out=None, *, a_min=None, a_max=None):
    _no_out(out, "clip")
    return uf.clip(self, min, max, a_min=a_min, a_max=a_max)


def _axes_arg(axes: tuple):
    """x.transpose(1, 0) and x.transpose((1, 0)) alike, as NumPy; none: reversed."""
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        return axes[0]
    return axes or None


def _matrix_transpose(self):
    nd = len(self.shape)
    if nd < 2:
        raise ValueError(f"x.mT needs an array of rank >= 2, got shape {self.shape}")
    return mp.swapaxes(self, -1, -2)


def _no_out(out, name: str):
    """NumPy's functions (np.sum(x), np.round(x), ...) call the method with out=None;
    jx arrays are immutable, so a real `out` cannot be honoured."""
    if out is not None:
        raise TypeError(f"{name}(out=...) is not supported: jx arrays are immutable; use "
                        "the returned array")


def _sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    _no_out(out, "sum")
    return rd.sum(self, axis, dtype=dtype, keepdims=keepdims, initial=initial)


def _prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    _no_out(out, "prod")
    return rd.prod(self, axis, dtype=dtype, keepdims=keepdims, initial=initial)


def _max(self, axis=None, out=None, keepdims=False, initial=None):
    _no_out(out, "max")
    return rd.max(self, axis, keepdims=keepdims, initial=initial)


def _min(self, axis=None, out=None, keepdims=False, initial=None):
    _no_out(out, "min")
    return rd.min(self, axis, keepdims=keepdims, initial=initial)


def _mean(self, axis=None, dtype=None, out=None, keepdims=False):
    _no_out(out, "mean")
    return rd.mean(self, axis, dtype=dtype, keepdims=keepdims)


def _var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    _no_out(out, "var")
    return rd.var(self, axis, dtype=dtype, ddof=ddof, keepdims=keepdims)


def _std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    _no_out(out, "std")
    return rd.std(self, axis, dtype=dtype, ddof=ddof, keepdims=keepdims)


def _cumsum(self, axis=None, dtype=None, out=None):
    _no_out(out, "cumsum")
    return rd.cumsum(self, axis, dtype=dtype)


def _cumprod(self, axis=None, dtype=None, out=None):
    _no_out(out, "cumprod")
    return rd.cumprod(self, axis, dtype=dtype)


def _array_namespace(self, /, *, api_version=None):
    """The array API's entry point: jx.numpy (versions 2023.12 and 2024.12)."""
    if api_version not in (None, "2023.12", "2024.12"):
        raise ValueError(f"jx.numpy implements the array API 2024.12, not {api_version!r}")
    import importlib
    return importlib.import_module(__package__)


def _to_device(self, device, /, *, stream=None):
    """jx arrays live on the host: moving to it (None, 'cpu', a jx device) is a no-op."""
    from .creation import _check_device
    _check_device(device, "to_device")
    return self


METHODS: dict = {
    "__array_namespace__": _array_namespace,
    "to_device": _to_device,
    "__neg__": lambda self: uf.negative(self),
    "__abs__": lambda self: uf.abs(self),
    "__invert__": lambda self: uf.invert(self),
    "__matmul__": lambda self, o: la.matmul(self, o),
    "__rmatmul__": lambda self, o: la.matmul(o, self),
    "__lshift__": lambda self, o: uf.left_shift(self, o),
    "__rshift__": lambda self, o: uf.right_shift(self, o),
    "__lt__": lambda self, o: uf.less(self, o),
    "__le__": lambda self, o: uf.less_equal(self, o),
    "__gt__": lambda self, o: uf.greater(self, o),
    "__ge__": lambda self, o: uf.greater_equal(self, o),
    "__eq__": lambda self, o: uf.equal(self, o),
    "__ne__": lambda self, o: uf.not_equal(self, o),
    "__getitem__": lambda self, idx: ix.getitem(self, idx),
    "at": property(lambda self: ix.IndexUpdateHelper(self)),
    "T": property(lambda self: mp.transpose(self)),
    "reshape": _reshape,
    "astype": _astype,
    "mT": property(_matrix_transpose),
    "__round__": lambda self, ndigits=None: uf.round(self, ndigits or 0),
    "__divmod__": lambda self, o: uf.divmod(self, o),
    "__rdivmod__": lambda self, o: uf.divmod(o, self),
    "__rlshift__": lambda self, o: uf.left_shift(o, self),
    "__rrshift__": lambda self, o: uf.right_shift(o, self),
    "repeat": lambda self, repeats, axis=None: mp.repeat(self, repeats, axis),
    "diagonal": lambda self, offset=0, axis1=0, axis2=1: mp.diagonal(self, offset, axis1,
                                                                   axis2),
    "trace": lambda self, offset=0, axis1=0, axis2=1, dtype=None: la.trace(
        self, offset, axis1, axis2, dtype),
    "take": lambda self, indices, axis=None, mode=None, fill_value=None: ix.take(
        self, indices, axis, mode=mode, fill_value=fill_value),
    "sort": lambda self, axis=-1, *, stable=True, descending=False: so.sort(
        self, axis, stable=stable, descending=descending),
    "argsort": lambda self, axis=-1, *, stable=True, descending=False: so.argsort(
        self, axis, stable=stable, descending=descending),
    "ptp": lambda self, axis=None, keepdims=False: rd.ptp(self, axis, keepdims),
    "transpose": lambda self, *axes: mp.transpose(self, _axes_arg(axes)),
    "sum": _sum,
    "prod": _prod,
    "max": _max,
    "min": _min,
    "mean": _mean,
    "var": _var,
    "std": _std,
    "any": lambda self, axis=None, out=None, keepdims=False: (
        _no_out(out, "any"), rd.any(self, axis, keepdims=keepdims))[1],
    "all": lambda self, axis=None, out=None, keepdims=False: (
        _no_out(out, "all"), rd.all(self, axis, keepdims=keepdims))[1],
    "cumprod": _cumprod,
    "round": lambda self, decimals=0, out=None: (_no_out(out, "round"),
                                                 uf.round(self, decimals))[1],
    "argmax": lambda self, axis=None, out=None, keepdims=None: (
        _no_out(out, "argmax"), rd.argmax(self, axis))[1],
    "argmin": lambda self, axis=None, out=None, keepdims=None: (
        _no_out(out, "argmin"), rd.argmin(self, axis))[1],
    "cumsum": _cumsum,
    "dot": lambda self, o: la.dot(self, o),
    "squeeze": lambda self, axis=None: mp.squeeze(self, axis),
    "ravel": lambda self: mp.ravel(self),
    "flatten": lambda self: mp.ravel(self),
    "clip": _clip,
    "swapaxes": lambda self, a, b: mp.swapaxes(self, a, b),
    "real": property(lambda self: st.real(self)),
    "imag": property(lambda self: st.imag(self)),
    "conj": lambda self: st.conjugate(self),
    "conjugate": lambda self: st.conjugate(self),
}
for _dunder, _fn in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                     ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                     ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
                     ("or", "bitwise_or"), ("xor", "bitwise_xor")]:
    METHODS[f"__{_dunder}__"], METHODS[f"__r{_dunder}__"] = _binary(_fn)

install_array_methods(METHODS)
