"""Graph -> Graph passes: transformations (jvp, vjp, vmap), simplification,
fusion. Each pass owns its rule table keyed by primitive name; the modules
below fill the tables for each primitive family.

The families register here, when a table is first read, and never from the
tables' own modules (which would make table and rules import each other): the
tables are interpreters.RuleTable, whose first read (a transformation's first
lookup, or a test listing a table) runs _load_rule_families below. A first jx.jit
that transforms nothing loads none of them. expand_windowed registers into
expand.EXPANSIONS, which the pipeline reads: it is imported with the package."""
from . import expand_windowed  # noqa: F401  (registers into expand.EXPANSIONS)
from .interpreters import RuleTable


def _load_rule_families() -> None:
    from . import jvp, vjp, vmap  # noqa: F401  (the tables)
    from . import jvp_rules, vjp_rules, vmap_rules  # noqa: F401  (the core families)
    from . import custom_rules  # noqa: F401
    from . import control_rules  # noqa: F401
    from . import indexing_rules  # noqa: F401
    from . import sort_rules  # noqa: F401
    from . import collective_rules  # noqa: F401
    from . import linalg_rules  # noqa: F401
    from . import conv_rules  # noqa: F401
    from . import windowed_rules  # noqa: F401
    from . import fft_rules  # noqa: F401
    from . import fft_lax_rules  # noqa: F401


RuleTable.fill = _load_rule_families
