"""Every primitive, declared once per family module. Importing this package
registers them all in core.PRIMITIVES (one explicit list, not scattered imports)."""
from . import elementwise, structural, reductions, linalg, control  # noqa: F401
from . import sorting, random_bits  # noqa: F401
from . import indexing  # noqa: F401
from . import autodiff  # noqa: F401
from . import collectives  # noqa: F401
from . import bitcast  # noqa: F401
from . import symbolic  # noqa: F401
from . import decompositions  # noqa: F401
from . import convolution  # noqa: F401
from . import windowed  # noqa: F401
from . import fft_split  # noqa: F401
from . import fft  # noqa: F401
