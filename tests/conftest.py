import os

import numpy as np
import pytest

# The suite's code must not depend on one run's timings: the host-measured
# constants (codegen/cpu/tuning.py) keep their defaults; test_tuning.py measures.
os.environ.setdefault("JX_TUNE", "off")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def pytest_sessionfinish(session, exitstatus):
    """Every undefined symbol of every object the suite built (codegen/cpu/symbols.py
    records them) must be one jx provides: its compiler-runtime routines, its
    parallel runtime, or the C library. Anything else would be a call to address 0."""
    import sys
    symbols = sys.modules.get("jx.codegen.cpu.symbols")
    if symbols is None or not symbols.SEEN:
        return
    from jx.codegen.cpu import libcalls
    from jx.codegen.cpu.artifact import _runtime_symbols
    bad = sorted(n for n in symbols.SEEN if n not in libcalls.names() and
                 n not in _runtime_symbols() and not symbols.in_c_library(n))
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
