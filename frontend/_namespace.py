"""Every name of package jx, loaded at once: jx's __init__ imports this module (on
the first use of any of them), so that `import jx` itself loads nothing and
`import jx.runtime` stays free of the compiler."""
from . import dtypes, tree  # noqa: F401
from . import prims  # noqa: F401  (declares every primitive)
from . import numpy, lax  # noqa: F401
# jx.nn and jx.random load on first use (jx.__getattr__ imports a submodule when
# asked for it), jx.export and its names too (jx._LAZY_NAMES): a first jx.jit needs none
from .array import Array
from .api import ShapeDtypeStruct, make_graph, _DTypeSpecMaker
from .dims import dim  # noqa: F401  (jx.dim("B", max=4096): a named size with constraints)
from .core import PRIMITIVES, Primitive, Tracer
from .errors import (EmptyReductionError, EscapedTracerError, JxError,  # noqa: F401
                     MaskedArrayError, MissingRuleError, OutOfMemoryError, ShapeError,
                     TracerConversionError, VerifyError)
from .interpret import eval_graph
from .ir import Graph, ShapedArray
from .printer import format_graph
from .tree import register_pytree_node, register_pytree_node_class  # noqa: F401
from .verify import verify
from .transforms import (float0, grad, hessian, jacfwd, jacrev, jvp, linearize,  # noqa: F401
                         value_and_grad, vjp)
jacobian = jacrev          # jax.jacobian is jacrev
from .vmap import vmap  # noqa: F401
from .pmap import (Device, bind_axis, device_count, devices, local_device_count,  # noqa: F401
                   local_devices, pmap, process_count, process_index)
from .jit import jit  # noqa: F401
from . import eager  # noqa: F401  (eager lax loops and conds run compiled)
from . import experimental  # noqa: F401
from .flags import (config, debug_infs, debug_nans, default_matmul_precision,  # noqa: F401
                    disable_jit, enable_x64, log_compiles, numpy_dtype_promotion,
                    numpy_rank_promotion)
from .custom import checkpoint, custom_jvp, custom_vjp, remat, stop_gradient  # noqa: F401

from . import tree_util  # noqa: F401

f16 = _DTypeSpecMaker("float16")
f32 = _DTypeSpecMaker("float32")
f64 = _DTypeSpecMaker("float64")
c64 = _DTypeSpecMaker("complex64")
c128 = _DTypeSpecMaker("complex128")
i8 = _DTypeSpecMaker("int8")
i32 = _DTypeSpecMaker("int32")
i64 = _DTypeSpecMaker("int64")
u8 = _DTypeSpecMaker("uint8")
u32 = _DTypeSpecMaker("uint32")
bool_ = _DTypeSpecMaker("bool")
from .api import block_until_ready, device_get, device_put, eval_shape, make_jaxpr  # noqa: F401,E402
from .jit import clear_caches, default_backend  # noqa: F401,E402
