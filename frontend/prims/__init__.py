"""Every primitive, declared once per family module. Importing this package
registers them all in core.PRIMITIVES (one explicit list, not scattered imports)."""
from . import elementwise, structural, reductions, linalg  # noqa: F401
