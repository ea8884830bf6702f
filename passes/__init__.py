"""Graph -> Graph passes: transformations (jvp, vjp, vmap), simplification,
fusion. Each pass owns its rule table keyed by primitive name; the modules
below fill the tables for each primitive family."""
from . import jvp, vjp, vmap  # noqa: F401  (core families fill their tables on import)
from . import custom_rules  # noqa: F401
from . import control_rules  # noqa: F401
from . import indexing_rules  # noqa: F401
from . import sort_rules  # noqa: F401
from . import collective_rules  # noqa: F401
