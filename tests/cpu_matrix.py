"""The CPUs the backend's code is generated for in the test suite's CPU matrix.

Each is an LLVM CPU name: the generic x86-64 levels and the microarchitectures
users run on. A test parametrized over them compiles for that CPU and runs the
code here, or skips with the reason when this host lacks an extension it uses.
"""
from __future__ import annotations

import pytest

MATRIX = ("native", "x86-64", "x86-64-v3", "haswell", "skylake-avx512", "znver4",
          "icelake-server", "sapphirerapids")


def runnable(cpu: str) -> str:
    """The LLVM name of `cpu`, or pytest.skip when this host cannot run its code."""
    from jx.codegen.cpu import target
    name = target.check_cpu(cpu)
    why = target.runnable_here(name)
    if why:
        pytest.skip(f"code for {cpu} cannot run here: {why}")
    return name


def params():
    return pytest.mark.parametrize("cpu", MATRIX)
