"""The C ABI of a jx artifact (a shared object), version 1.

Exported symbols:

    int32_t     jx_<entry>(const void** inputs, void** outputs);
    const char* jx_manifest(void);     /* NUL-terminated JSON, see manifest.py */
    uint32_t    jx_abi_version(void);  /* ABI_VERSION */

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

# code -> (C macro name, meaning); cheader.py emits these as #defines.
STATUS = {
    STATUS_OK: ("JX_OK", "success: every output was written"),
    STATUS_OUT_OF_MEMORY: ("JX_ERR_OUT_OF_MEMORY", "scratch memory could not be allocated"),
    STATUS_NULL_POINTER: ("JX_ERR_NULL_POINTER", "a NULL inputs/outputs array or leaf pointer"),
    STATUS_INTERNAL: ("JX_ERR_INTERNAL", "an internal check failed: a jx bug, please report"),
    STATUS_CANCELLED: ("JX_ERR_CANCELLED", "interrupted (SIGINT, or jx_request_cancel) before "
                       "it finished: the outputs are incomplete"),
}

SYMBOL_PREFIX = "jx_"
MANIFEST_SYMBOL = "jx_manifest"
VERSION_SYMBOL = "jx_abi_version"
CHECKSUM_SYMBOL = "jx_manifest_sha256"   # sha256 hex of jx_manifest()'s bytes


def entry_symbol(entry: str) -> str:
    return SYMBOL_PREFIX + entry


# `const char* jx_<entry>_signature(void)`: the leaves the entry's code was built
# for, written by the code generator from the program itself, so the loader can
# check the manifest's shapes against the code rather than trust them.
SIGNATURE_SUFFIX = "_signature"


def signature(inputs, outputs) -> str:
    """'float32[2,3];int32[] -> float32[2]' from (dtype name, shape) pairs."""
    def side(leaves):
        return ";".join(f"{dt}[{','.join(map(str, shape))}]" for dt, shape in leaves)
    return f"{side(inputs)} -> {side(outputs)}"
