"""Does this CPU have the instruction-set extensions an artifact was built with?
(The loader's ISA check.) The facts live in host.py; this module keeps the names
the loader calls. `missing` reads `host_flags` through this module, so a test can
replace it here to play a CPU without some extension.
"""
from __future__ import annotations

from .host import X86_FLAGS, host_flags, model_name
from . import host

__all__ = ["X86_FLAGS", "host_flags", "model_name", "missing"]


def missing(features) -> list:
    """The listed LLVM feature names this CPU lacks (empty when unknown)."""
    return host.missing(features, host_flags())
