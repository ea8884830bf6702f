"""The C ABI of a jx artifact (a shared object or static library), version 1.

Every exported symbol starts with the artifact's prefix P (a C identifier, by
default the model's name; `jx compile --prefix`), so several artifacts, even
two builds of one model, link into one program:

    int32_t     P_<entry>(const void** inputs, void** outputs);
    /* an entry with symbolic dimensions (B, T, ...) takes their values first, in the
       order the manifest's "dims" lists them, and says what shapes they give: */
    int32_t     P_<entry>(const int64_t* dims, const void** inputs, void** outputs);
    int32_t     P_<entry>_shapes(const int64_t* dims, int64_t* shapes);
    const char* P_manifest(void);     /* NUL-terminated JSON, see manifest.py */
    const char* P_manifest_sha256(void);
    uint32_t    P_abi_version(void);  /* ABI_VERSION */
    ...         P_set_num_threads(...) etc.: RUNTIME_EXPORTS below

The prefix is also stored in the shared object's PREFIX_SECTION, so a loader
finds the manifest without knowing it; an artifact without that section was
built before prefixes and uses LEGACY_PREFIX.

inputs[i] points to the i-th flattened input leaf, outputs[j] to a caller-allocated
buffer for the j-th flattened output leaf; every buffer is C-contiguous with the
declared shape and dtype, aligned at least to its element size. An entry reads
only its inputs, writes only its outputs (in full), keeps no pointer after it
returns, and returns one of the status codes below. The code generator, the C
header generator and the loader all take these constants from here.
"""
from __future__ import annotations

ABI_VERSION = 1

STATUS_OK = 0
STATUS_OUT_OF_MEMORY = 1
STATUS_NULL_POINTER = 2
STATUS_INTERNAL = 3
STATUS_CANCELLED = 4
STATUS_INVALID_DIMS = 5

# code -> (C macro name, meaning); cheader.py emits these as #defines.
STATUS = {
    STATUS_OK: ("JX_OK", "success: every output was written"),
    STATUS_OUT_OF_MEMORY: ("JX_ERR_OUT_OF_MEMORY", "scratch memory could not be allocated"),
    STATUS_NULL_POINTER: ("JX_ERR_NULL_POINTER", "a NULL inputs/outputs array or leaf pointer"),
    STATUS_INTERNAL: ("JX_ERR_INTERNAL", "an internal check failed: a jx bug, please report"),
    STATUS_CANCELLED: ("JX_ERR_CANCELLED", "interrupted (SIGINT, or <prefix>_request_cancel) "
                       "before it finished: the outputs are incomplete"),
    STATUS_INVALID_DIMS: ("JX_ERR_INVALID_DIMS", "a symbolic dimension's value breaks its "
                          "declared constraints (min, max, multiple_of); nothing was written"),
}

LEGACY_PREFIX = "jx"            # artifacts built before prefixes; jx.jit's code
PREFIX_SECTION = ".jx_prefix"   # ELF section holding the prefix's bytes
MANIFEST_SUFFIX = "_manifest"
VERSION_SUFFIX = "_abi_version"
CHECKSUM_SUFFIX = "_manifest_sha256"   # sha256 hex of P_manifest()'s bytes
MANIFEST_SYMBOL = LEGACY_PREFIX + MANIFEST_SUFFIX      # the names without a prefix
VERSION_SYMBOL = LEGACY_PREFIX + VERSION_SUFFIX
CHECKSUM_SYMBOL = LEGACY_PREFIX + CHECKSUM_SUFFIX

# The C runtime's controls each artifact exports as P_<name>, forwarding to its own
# hidden copy of the runtime: name -> (C return type, [C parameter declarations]).
RUNTIME_EXPORTS = {
    "set_num_threads": ("void", ["int n"]),
    "get_num_threads": ("int", []),
    "request_cancel": ("void", []),
    "install_interrupt_handler": ("int32_t", []),
    "release_scratch": ("void", []),      # large scratch blocks kept between calls
    "pmap_run": ("int32_t", ["jx_entry_fn entry", "int32_t n", "const void** inputs",
                             "int32_t n_in", "void** outputs", "int32_t n_out"]),
    "coll_last_error": ("const char*", []),
    "coll_clear_error": ("void", []),
    "coll_set_timeout": ("void", ["double seconds"]),
    "set_collective_hooks": ("void", ["const jx_collective_hooks* hooks"]),
    "use_mpi": ("void", ["const void* api"]),
}


def entry_symbol(entry: str, prefix: str = LEGACY_PREFIX) -> str:
    return f"{prefix}_{entry}"


def artifact_symbols(prefix: str) -> dict:
    """{role: symbol} of the functions every artifact with this prefix exports
    besides its entries."""
    names = {"manifest": prefix + MANIFEST_SUFFIX, "manifest_sha256": prefix + CHECKSUM_SUFFIX,
             "abi_version": prefix + VERSION_SUFFIX}
    names.update((n, f"{prefix}_{n}") for n in RUNTIME_EXPORTS)
    return names


# `const char* P_<entry>_signature(void)`: the leaves the entry's code was built
# for, written by the code generator from the program itself, so the loader can
# check the manifest's shapes against the code rather than trust them.
SIGNATURE_SUFFIX = "_signature"

# `int32_t P_<entry>_shapes(const int64_t* dims, int64_t* shapes)` of an entry with
# symbolic dimensions: every input leaf's dims, then every output leaf's, at these
# values of the symbols (the caller's buffers must have them); STATUS_INVALID_DIMS
# for values that break the constraints.
SHAPES_SUFFIX = "_shapes"
DIMS_LAST_SUFFIX = "_dims_last"   # a symbolic entry taking its dims as the last input


def signature(inputs, outputs) -> str:
    """'float32[2,3];int32[] -> float32[2]' from (dtype name, shape) pairs."""
    def side(leaves):
        return ";".join(f"{dt}[{','.join(map(str, shape))}]" for dt, shape in leaves)
    return f"{side(inputs)} -> {side(outputs)}"
