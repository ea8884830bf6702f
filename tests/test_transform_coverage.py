"""Every primitive has a rule (or an explicit marker) in every transformation's
table, and every rule is exercised by some test module's TRANSFORM_CASES or
TRANSFORM_COVERED."""
import importlib
import pathlib

import jx
from jx.passes.jvp import jvp_rules
from jx.passes.vjp import vjp_rules
from jx.passes.vmap import batch_rules

HERE = pathlib.Path(__file__).parent


def _tested() -> set:
    names = set()
    for path in sorted(HERE.glob("test_*.py")):
        text = path.read_text()
        if "TRANSFORM_CASES" not in text and "TRANSFORM_COVERED" not in text:
            continue
        mod = importlib.import_module(path.stem)
        names |= set(getattr(mod, "TRANSFORM_CASES", {}))
        names |= set(getattr(mod, "TRANSFORM_COVERED", set()))
    return names


def test_every_primitive_has_rules_in_every_table():
    for table, name in ((jvp_rules, "jvp"), (vjp_rules, "vjp"), (batch_rules, "vmap")):
        missing = sorted(set(jx.PRIMITIVES) - set(table))
        assert not missing, f"the {name} rule table lacks: {', '.join(missing)}"


def test_every_primitive_has_transform_tests():
    missing = sorted(set(jx.PRIMITIVES) - _tested())
    assert not missing, ("no jvp/vjp/vmap test case for: " + ", ".join(missing) +
                         "; add a row to a TRANSFORM_CASES table")
