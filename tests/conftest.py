import os

import numpy as np
import pytest

# The suite's code must not depend on one run's timings: the host-measured
# constants (codegen/cpu/tuning.py) keep their defaults; test_tuning.py measures.
os.environ.setdefault("JX_TUNE", "off")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "x64: run with 64-bit mode on (float64 data and references stay float64, "
        "as JAX's own numerical tests enable jax_enable_x64)")


@pytest.fixture(autouse=True)
def _jx_mode(request):
    """Tests marked x64 run in 64-bit mode; the mode is back to the default after
    every test, whatever it did."""
    from jx import flags
    mark = request.node.get_closest_marker("x64")    # x64(False): off, in an x64 module
    if mark is not None:
        on = not mark.args or bool(mark.args[0])
    else:      # a case parametrized by a 64-bit dtype is a 64-bit program (as JAX's tests)
        params = getattr(getattr(request.node, "callspec", None), "params", {})
        on = any(_is_64_bit_dtype(v) for v in params.values())
    with flags.enable_x64(on):
        yield


@pytest.fixture(autouse=True)
def _program_cache_off_when_patching(request):
    """A test that monkeypatches may patch the code generator (a GEMM blocking, a
    target fact), which the program cache's key cannot see: such tests key their
    objects by the IR they generate (JX_PROGRAM_CACHE=0), so they run the code
    their patch produced, not an object found for the unpatched program."""
    with pytest.MonkeyPatch.context() as mp:     # (its own: a test's undo() keeps it)
        if "monkeypatch" in request.fixturenames:
            mp.setenv("JX_PROGRAM_CACHE", "0")
        yield


def _is_64_bit_dtype(v) -> bool:
    if isinstance(v, (tuple, list)):
        return any(_is_64_bit_dtype(u) for u in v)
    if not isinstance(v, (np.dtype, type, str)):
        return False
    try:
        dt = np.dtype(v)
    except Exception:          # any other string (a label)
        return False
    return (dt.kind in "fiu" and dt.itemsize == 8) or dt == np.complex128


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def pytest_sessionfinish(session, exitstatus):
    """Every undefined symbol of every object the suite built (codegen/cpu/symbols.py
    records them) must be one jx provides: its compiler-runtime routines, its
    parallel runtime, the routines it loaded or linked, or the C library. Anything else would be a
    call to address 0."""
    import sys
    symbols = sys.modules.get("jx.codegen.cpu.symbols")
    if symbols is None or not symbols.SEEN:
        return
    from jx.codegen.cpu import libcalls, routines
    from jx.codegen.cpu.artifact import _runtime_symbols
    bad = sorted(n for n in symbols.SEEN if n not in libcalls.names() and
                 n not in _runtime_symbols() and not symbols.in_c_library(n)
                 and n not in routines.BUILT)
    bad = [n for n in bad if not n.startswith("jx_test_")]   # the deliberate one
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if bad:
        if reporter:
            reporter.write_line(f"objects built by the suite need symbols jx does not "
                                f"provide: {', '.join(bad)}", red=True)
        session.exitstatus = 1
    elif reporter:
        seen = sorted(n for n in symbols.SEEN if not n.startswith("jx_test_"))
        reporter.write_line(f"undefined symbols of the suite's objects, all provided: "
                            f"{', '.join(seen)}")
