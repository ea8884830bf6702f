"""Every registered primitive is tested somewhere: each primitive test module
declares a module-level set COVERED of the primitive names it checks against
NumPy, and the union must hold every name in jx.PRIMITIVES. Computed from the
files on disk, with no list of exceptions: a new primitive fails this test
until a test module covers it."""
from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import jx

TESTS = Path(__file__).resolve().parent
_DEFINES_COVERED = re.compile(r"^COVERED\s*(:[^=]*)?=", re.MULTILINE)


def covering_modules() -> dict:
    """{module name: its COVERED set} for every tests/test_*.py that defines one."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    found = {}
    for path in sorted(TESTS.glob("test_*.py")):
        if path.stem == "test_coverage" or not _DEFINES_COVERED.search(path.read_text()):
            continue
        mod = sys.modules.get(path.stem) or importlib.import_module(path.stem)
        covered = getattr(mod, "COVERED")
        assert isinstance(covered, (set, frozenset)), f"{path.name}: COVERED must be a set"
        found[path.stem] = set(covered)
    return found


def test_every_primitive_is_covered():
    modules = covering_modules()
    assert "test_primitives" in modules
    covered = set().union(*modules.values())
    missing = sorted(set(jx.PRIMITIVES) - covered)
    assert not missing, (f"{len(missing)} primitive(s) in jx.PRIMITIVES are not in any test "
                         f"module's COVERED set: {', '.join(missing)}. Add a table row for "
                         "each (reference vs NumPy, eager and traced) and its name to COVERED.")


def test_covered_names_are_real_primitives():
    """A typo in COVERED would hide a missing test; every name must be registered."""
    for name, covered in covering_modules().items():
        unknown = sorted(covered - set(jx.PRIMITIVES))
        assert not unknown, f"{name}.COVERED names unknown primitives: {', '.join(unknown)}"
