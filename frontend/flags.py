"""jx.config: JAX's configuration flags, under JAX's names.

Programs written for JAX set flags before anything else
(`jax.config.update("jax_enable_x64", True)`, `with jax.disable_jit():`); with
`import jx` in place of `import jax` those lines must keep working. Each flag is
declared once below (name, default, accepted values, environment variable, and
what it means in jx). Flags with a meaning change behaviour; the others JAX has
that programs commonly set are accepted and recorded, so a program's set-up line
runs; a name JAX does not have is an error naming it.

Values live in STATE, read on hot paths as plain attributes (`STATE.x64`). The
context managers (`jx.enable_x64()`, `jx.disable_jit()`, ...) set a value and
restore it on exit; unlike JAX's they are process-wide, not per thread.
"""
from __future__ import annotations

import contextlib
import difflib
import os
from dataclasses import dataclass
from typing import Any, Callable

from .errors import JxError


class UnknownFlagError(JxError, AttributeError):
    """A configuration name that neither JAX nor jx has."""


class FlagValueError(JxError, ValueError):
    """A value a flag does not accept."""


class _State:
    """Current values, by short attribute name (what hot paths read)."""
    x64 = False
    disable_jit = False
    debug_nans = False
    debug_infs = False
    rank_promotion = "allow"
    dtype_promotion = "standard"
    log_compiles = False
    platforms = ""
    num_cpu_devices = -1
    cache_dir = None
    mode = (False, "allow", "standard")  # what traces depend on: caches key on it
    special = False      # any of disable_jit, debug_nans/infs, log_compiles: jit's slow path


STATE = _State()


def _bool(name: str, v) -> bool:
    if isinstance(v, str):          # environment variables, as JAX parses them
        low = v.strip().lower()
        if low in ("1", "true", "t", "yes", "y", "on"):
            return True
        if low in ("0", "false", "f", "no", "n", "off", ""):
            return False
    elif isinstance(v, (bool, int)) and v in (0, 1):
        return bool(v)
    raise FlagValueError(f"{name} takes True or False, got {v!r}")


def _enum(*choices) -> Callable:
    def check(name: str, v):
        if v not in choices:
            raise FlagValueError(f"{name} takes one of {list(choices)}, got {v!r}")
        return v
    return check


def _string(name: str, v):
    if v is not None and not isinstance(v, str):
        raise FlagValueError(f"{name} takes a string, got {v!r}")
    return v


def _int(name: str, v) -> int:
    try:
        if isinstance(v, bool):
            raise ValueError
        return int(v)
    except (TypeError, ValueError):
        raise FlagValueError(f"{name} takes an integer, got {v!r}") from None


_PLATFORMS = ("cpu", "cuda", "gpu")


def _platforms(name: str, v):
    v = _string(name, v)
    for p in (v or "").split(","):
        if p.strip() and p.strip().lower() not in _PLATFORMS:
            raise FlagValueError(
                f"{name}={v!r}: jx has no {p.strip()!r} backend; its platforms are 'cpu' "
                "and 'cuda' (or 'gpu'), comma-separated in order of preference")
    return v


def _only(supported, why: str) -> Callable:
    """A flag jx implements for one value only (the one JAX defaults to)."""
    def check(name: str, v):
        if v != supported:
            raise FlagValueError(f"{name}={v!r} is not available in jx: {why}")
        return v
    return check


_PRECISIONS = (None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
               "bfloat16_3x", "tensorfloat32_3x", "fastest", "DEFAULT", "HIGH", "HIGHEST")


@dataclass(frozen=True)
class Flag:
    name: str
    default: Any
    check: Callable            # (name, value) -> the value to store, or raises
    state: str | None = None   # the STATE attribute it sets (None: recorded only)
    env: str | None = None     # environment variable read at import
    meaning: str = "accepted; no effect in jx"


_FLAGS = [
    Flag("jax_enable_x64", False, _bool, "x64", "JAX_ENABLE_X64",
         "64-bit mode: float64/int64 data and defaults (off: canonicalised to 32 bits)"),
    Flag("jax_disable_jit", False, _bool, "disable_jit", "JAX_DISABLE_JIT",
         "jit calls the Python function; lax loops and conds run as Python"),
    Flag("jax_debug_nans", False, _bool, "debug_nans", "JAX_DEBUG_NANS",
         "FloatingPointError at the first NaN a call produces, naming the primitive"),
    Flag("jax_debug_infs", False, _bool, "debug_infs", "JAX_DEBUG_INFS",
         "FloatingPointError at the first inf a call produces, naming the primitive"),
    Flag("jax_numpy_rank_promotion", "allow", _enum("allow", "warn", "raise"),
         "rank_promotion", "JAX_NUMPY_RANK_PROMOTION",
         "what jx.numpy does when operands of different ranks broadcast"),
    Flag("jax_numpy_dtype_promotion", "standard", _enum("standard", "strict"),
         "dtype_promotion", "JAX_NUMPY_DTYPE_PROMOTION",
         "strict: no implicit promotion between different array dtypes"),
    Flag("jax_log_compiles", False, _bool, "log_compiles", "JAX_LOG_COMPILES",
         "log each jit compilation (logger 'jx', level WARNING)"),
    Flag("jax_platforms", None, _platforms, "platforms", "JAX_PLATFORMS",
         "the default backend of jx.jit: the first of 'cpu', 'cuda'/'gpu' listed"),
    Flag("jax_platform_name", None, _platforms, "platforms", "JAX_PLATFORM_NAME",
         "the default backend of jx.jit (older name of jax_platforms)"),
    Flag("jax_num_cpu_devices", -1, _int, "num_cpu_devices", None,
         "the number of CPU devices pmap maps over (-1: JX_NUM_CPU_DEVICES, else cores)"),
    Flag("jax_compilation_cache_dir", None, _string, "cache_dir", None,
         "the folder of jx's compilation cache (else JX_CACHE_DIR, else ~/.cache/jx)"),
    Flag("jax_default_matmul_precision", None, _enum(*_PRECISIONS), None,
         "JAX_DEFAULT_MATMUL_PRECISION",
         "accepted; jx computes float32 products in float32 on the CPU at every setting"),
    Flag("jax_default_prng_impl", "threefry2x32",
         _only("threefry2x32", "jx's PRNG is threefry2x32, JAX's default"), None,
         "JAX_DEFAULT_PRNG_IMPL"),
    Flag("jax_threefry_partitionable", True,
         _only(True, "jx draws random bits the partitionable way, JAX's default"), None,
         "JAX_THREEFRY_PARTITIONABLE"),
]
for _name, _default in [
        ("jax_traceback_filtering", "auto"), ("jax_check_tracer_leaks", False),
        ("jax_enable_checks", False), ("jax_explain_cache_misses", False),
        ("jax_persistent_cache_min_compile_time_secs", 1.0),
        ("jax_persistent_cache_min_entry_size_bytes", 0),
        ("jax_enable_compilation_cache", True), ("jax_default_device", None),
        ("jax_transfer_guard", None), ("jax_softmax_custom_jvp", False),
        ("jax_legacy_prng_key", "allow"), ("jax_debug_key_reuse", False),
        ("jax_enable_custom_prng", False), ("jax_allow_f16_reductions", False),
        ("jax_traceback_in_locations_limit", 10), ("jax_logging_level", None),
        ("jax_cpu_enable_async_dispatch", True), ("jax_dynamic_shapes", False),
        ("jax_array", True), ("jax_jit_pjit_api_merge", True), ("jax_use_shardy_partitioner",
                                                                True)]:
    _FLAGS.append(Flag(_name, _default, lambda name, v: v))

FLAGS = {f.name: f for f in _FLAGS}
_values: dict = {}


def _set(flag: Flag, value) -> None:
    value = flag.check(flag.name, value)
    _values[flag.name] = value
    if flag.state == "platforms":
        value = (value or "").lower()
    if flag.state is not None:
        setattr(STATE, flag.state, value)
    if flag.state == "cache_dir":
        _point_cache(value)
    STATE.mode = (STATE.x64, STATE.rank_promotion, STATE.dtype_promotion)
    STATE.special = STATE.disable_jit or STATE.debug_nans or STATE.debug_infs or \
        STATE.log_compiles

_ENV_CACHE = os.environ.get("JX_CACHE_DIR")


def _point_cache(folder) -> None:
    """The runtime (which imports nothing of jx's) finds its cache through
    JX_CACHE_DIR: the flag sets that variable, None restores the original."""
    if folder:
        os.environ["JX_CACHE_DIR"] = os.path.expanduser(folder)
    elif _ENV_CACHE is None:
        os.environ.pop("JX_CACHE_DIR", None)
    else:
        os.environ["JX_CACHE_DIR"] = _ENV_CACHE


def _flag(name: str) -> Flag:
    try:
        return FLAGS[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), FLAGS, n=1)
        raise UnknownFlagError(
            f"Unrecognized config option: {name!r}"
            + (f" (did you mean {close[0]!r}?)" if close else "")
            + "; jx.config.values lists the options jx knows") from None


class Config:
    """jx.config: `update(name, value)`, `read(name)`, `config.<name>`, `values`."""

    def update(self, name: str, value) -> None:
        _set(_flag(name), value)

    def read(self, name: str):
        return _values[_flag(name).name]

    @property
    def values(self) -> dict:
        return dict(_values)

    @property
    def x64_enabled(self) -> bool:
        return STATE.x64

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self.read(name)

    def parse_flags_with_absl(self) -> None:
        """absl flags are not used by jx; kept so programs calling it run."""

    config_with_absl = parse_flags_with_absl

    def __repr__(self) -> str:
        return "jx.config(" + ", ".join(f"{k}={v!r}" for k, v in _values.items()
                                       if FLAGS[k].state) + ")"


config = Config()


@contextlib.contextmanager
def _scoped(name: str, value):
    old = config.read(name)
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, old)


def enable_x64(new_val: bool = True):
    """`with jx.enable_x64():` 64-bit mode inside the block (jax.enable_x64)."""
    return _scoped("jax_enable_x64", new_val)


def disable_x64():
    return _scoped("jax_enable_x64", False)


def disable_jit(disable: bool = True):
    return _scoped("jax_disable_jit", disable)


def debug_nans(new_val: bool = True):
    return _scoped("jax_debug_nans", new_val)


def debug_infs(new_val: bool = True):
    return _scoped("jax_debug_infs", new_val)


def numpy_rank_promotion(new_val: str):
    return _scoped("jax_numpy_rank_promotion", new_val)


def numpy_dtype_promotion(new_val: str):
    return _scoped("jax_numpy_dtype_promotion", new_val)


def default_matmul_precision(new_val):
    return _scoped("jax_default_matmul_precision", new_val)


def log_compiles(new_val: bool = True):
    return _scoped("jax_log_compiles", new_val)


def _init() -> None:
    for flag in _FLAGS:
        _set(flag, flag.default)
    for flag in _FLAGS:
        if flag.env and flag.env in os.environ:
            try:
                _set(flag, os.environ[flag.env])
            except FlagValueError as e:     # a bad variable must not stop `import jx`
                import warnings
                warnings.warn(f"environment variable {flag.env} ignored: {e}", stacklevel=2)


_init()
