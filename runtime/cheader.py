"""The C header of an artifact, generated from its manifest.

header_text(manifest, "libmlp.so") gives mlp.h: the status codes, one commented
prototype per entry (leaf paths, shapes, dtypes, byte sizes), per-entry macros
for generic callers, and the prototypes of the manifest functions and runtime
controls. Every name carries the artifact's prefix (manifest "prefix", e.g.
`mlp`; "jx" for artifacts built before prefixes), so several headers can be
included in one file. For an entry `predict` of prefix `mlp` the macros are

    MLP_PREDICT_NUM_INPUTS, MLP_PREDICT_NUM_OUTPUTS        leaf counts
    MLP_PREDICT_INPUT_BYTES,  MLP_PREDICT_OUTPUT_BYTES     { bytes per leaf, ... }
    MLP_PREDICT_INPUT_DTYPES, MLP_PREDICT_OUTPUT_DTYPES    { "float32", ... }
    MLP_PREDICT_INPUT_PATHS,  MLP_PREDICT_OUTPUT_PATHS     { "params['w1']", ... }

(array initialisers; `{ 0 }` / `{ "" }` when an entry has no leaves on that side).
"""
from __future__ import annotations

import os
import re

from . import abi
from .manifest import prefix_of, validate

_PREAMBLE = """\
 * Each entry is called as
 *     int32_t status = {prefix}_<entry>(inputs, outputs);
 * inputs[i] points to the i-th input leaf and outputs[j] to a buffer the caller
 * allocates for the j-th output leaf: C-contiguous (row-major), exactly the listed
 * shape and dtype, aligned to the element size. Output buffers must not overlap
 * each other or any input (an entry may write an output before it has read all its
 * inputs). bool is one byte holding 0 or 1;
 * float16 and bfloat16 are raw 16-bit patterns; complex64 and complex128 are C99's
 * float _Complex and double _Complex (each element its real part, then its
 * imaginary part: NumPy's layout). An entry reads only its inputs,
 * writes every output in full, keeps no pointer after returning, and returns one
 * of the status codes below."""


def _c_escape(text: str) -> str:
    """Text for a C string literal: ASCII, with quotes, backslashes and '?' escaped."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\?':          # '?' avoids trigraphs such as ??/
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


def _comment(text: str) -> str:
    """Text for a /* comment */: escaped like a literal, and unable to end it early."""
    return _c_escape(text).replace("*/", "* /").replace("/*", "/ *")


def _stem(lib_name: str) -> str:
    base = os.path.basename(lib_name)
    for ext in (".so", ".dylib", ".dll"):
        if ext in base:
            base = base[:base.index(ext)]
    return base[3:] if base.startswith("lib") and len(base) > 3 else base


def _macro(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", text).upper()


def macro_prefix(prefix: str, entry: str) -> str:
    """The start of an entry's macros: MLP_PREDICT_ for prefix mlp, entry predict."""
    return f"{_macro(prefix)}_{_macro(entry)}_"


def _bytes(leaf) -> str:
    if leaf.symbolic:
        return f"{leaf.dtype.itemsize} x the elements' count"
    return f"{leaf.nbytes} byte{'s' if leaf.nbytes != 1 else ''}"


def _leaf_table(title: str, leaves: tuple, default: str) -> list:
    rows = [(f"[{i}]", leaf.path or default, str(leaf), _bytes(leaf))
            for i, leaf in enumerate(leaves)]
    widths = [max((len(_comment(r[k])) for r in rows), default=0) for k in range(4)]
    lines = [f" *   {title} ({len(leaves)}):" if leaves else f" *   {title}: none"]
    for r in rows:
        cells = [_comment(c).ljust(w) for c, w in zip(r, widths)]
        lines.append(" *     " + "  ".join(cells).rstrip())
    return lines


def _init(values: list, empty: str) -> str:
    return "{ " + (", ".join(values) if values else empty) + " }"


def _entry_block(spec, prefix: str) -> list:
    name = spec.name
    if spec.arg_names is not None:
        args = ", ".join(spec.arg_names)
    else:
        args = f"{len(spec.in_tree.children)} arguments"
    lines = [f"/* {name}({args}) -> {_comment(str(spec.out_tree))}"]
    lines += _leaf_table("inputs", spec.inputs, "")
    lines += _leaf_table("outputs", spec.outputs, "(result)")
    lines.append(" */")
    up = macro_prefix(prefix, name)
    for side, leaves in (("INPUT", spec.inputs), ("OUTPUT", spec.outputs)):
        lines.append(f"#define {up}NUM_{side}S {len(leaves)}")
    for side, leaves in (("INPUT", spec.inputs), ("OUTPUT", spec.outputs)):
        lines += _leaf_macros(f"{up}{side}", leaves, spec.dims is not None)
    if spec.dims is None:
        lines.append(f"int32_t {spec.symbol}(const void** inputs, void** outputs);")
        return lines
    d = spec.dims
    cons = "; ".join(_constraint_text(c) for c in d.constraints)
    ndims = sum(len(leaf.shape) for leaf in spec.inputs + spec.outputs)
    lines += [
        f"/* Symbolic dimensions: dims[] = {{ {', '.join(d.symbols)} }} ({_comment(cons)}).",
        f" * {spec.symbol}_shapes(dims, shapes) writes the {ndims} dims of every input leaf,",
        " * then of every output leaf, at those values (allocate the outputs so), or",
        " * returns JX_ERR_INVALID_DIMS for values the constraints refuse; a leaf's",
        " * bytes are its ITEMSIZE times the product of its RANK dims there. */",
        f"#define {up}NUM_DIMS {len(d.symbols)}",
        f"#define {up}DIM_NAMES {_init([_quoted(n) for n in d.symbols], _quoted(''))}",
        f"#define {up}NUM_SHAPE_DIMS {ndims}",
        f"#define {up}INPUT_RANKS {_init([str(len(leaf.shape)) for leaf in spec.inputs], '0')}",
        f"#define {up}OUTPUT_RANKS {_init([str(len(leaf.shape)) for leaf in spec.outputs], '0')}",
        f"int32_t {spec.symbol}(const int64_t* dims, const void** inputs, void** outputs);",
        f"int32_t {spec.symbol}{abi.SHAPES_SUFFIX}(const int64_t* dims, int64_t* shapes);"]
    return lines


def _constraint_text(c) -> str:
    name, lo, hi, k = c
    text = f"{name} >= {lo}" + (f", {name} <= {hi}" if hi is not None else "")
    return text + (f", {name} % {k} == 0" if k > 1 else "")


def _quoted(text: str) -> str:
    return '"' + _c_escape(text) + '"'


def _leaf_macros(prefix: str, leaves: tuple, symbolic: bool = False) -> list:
    """BYTES (for fixed shapes; symbolic ones: ITEMSIZES, the bytes per element),
    DTYPES and PATHS of one side's leaves."""
    if symbolic:
        sizes, what = [str(leaf.dtype.itemsize) for leaf in leaves], "ITEMSIZES"
    else:
        sizes, what = [str(leaf.nbytes) for leaf in leaves], "BYTES"
    dtypes = [_quoted(leaf.dtype.name) for leaf in leaves]
    paths = [_quoted(leaf.path) for leaf in leaves]
    return [f"#define {prefix}_{what} {_init(sizes, '0')}",
            f"#define {prefix}_DTYPES {_init(dtypes, _quoted(''))}",
            f"#define {prefix}_PATHS {_init(paths, _quoted(''))}"]


def _runtime_block(prefix: str) -> list:
    """Prototypes of the runtime controls the artifact exports (abi.RUNTIME_EXPORTS)."""
    p = prefix
    lines = [
        "/* The runtime linked into this library (its own copy: each artifact in a",
        f" * program has its own thread pool). Threads its entries use (1 = serial;",
        " * default JX_NUM_THREADS, else the CPUs this process may use). A long call",
        f" * stops early and returns JX_ERR_CANCELLED after {p}_request_cancel() (from",
        " * another thread or a signal handler), or after SIGINT once",
        f" * {p}_install_interrupt_handler() chained a handler in front of the current",
        " * one (it returns 1 when installed, 0 where SIGINT is ignored or left default).",
        f" * {p}_pmap_run(entry, n, inputs, n_in, outputs, n_out) runs an entry with",
        " * collectives on n device threads (tables of n rows of leaf pointers); across",
        f" * processes install hooks first ({p}_set_collective_hooks, or {p}_use_mpi with",
        " * the jx_mpi_api of codegen/cpu/cruntime/jx_collectives.c). */",
        "#ifndef JX_COLLECTIVE_HOOKS_DEFINED  /* shared by every jx header */",
        "#define JX_COLLECTIVE_HOOKS_DEFINED",
        "typedef int32_t (*jx_entry_fn)(const void** inputs, void** outputs);",
        "typedef struct jx_collective_hooks {",
        "    void* user;",
        "    int32_t rank, nranks;",
        "    int32_t (*allreduce)(void* user, const void* send, void* recv, int64_t count,",
        "                         int32_t dtype, int32_t op);",
        "    int32_t (*allgather)(void* user, const void* send, void* recv, int64_t bytes);",
        "    int32_t (*alltoall)(void* user, const void* send, void* recv, int64_t bytes);",
        "} jx_collective_hooks;",
        "#endif",
    ]
    for name, (ret, params) in abi.RUNTIME_EXPORTS.items():
        lines.append(f"{ret} {p}_{name}({', '.join(params) or 'void'});")
    return lines


def header_text(manifest: dict, lib_name: str) -> str:
    """The C header for the artifact whose manifest is given; lib_name is its
    library's file name (e.g. "libmlp.so"), named in the first comment."""
    specs = validate(manifest, lib_name)
    prefix = prefix_of(manifest)
    macros = {}
    for spec in specs:
        other = macros.setdefault(_macro(spec.name), spec.name)
        if other != spec.name:
            raise ValueError(f"entries {other!r} and {spec.name!r} would share the C macro "
                             f"prefix {macro_prefix(prefix, spec.name)}; rename one of them")
    # the prefix is unique in a program (its symbols are), so the guard is too
    stem = prefix if "prefix" in manifest else (_stem(lib_name) or "ARTIFACT")
    guard = f"JX_{_macro(stem)}_H_"
    lines = [
        f"/* C interface of {_comment(os.path.basename(lib_name))}, generated by jx "
        f"{_comment(manifest['jx_version'])}. Do not edit.",
        f" * target {_comment(manifest['target'])}, cpu {_comment(manifest['cpu'])}, "
        f"ABI version {manifest['abi_version']}, symbol prefix {prefix}",
        f" * content hash {manifest['content_hash']}",
        " *",
        _PREAMBLE.format(prefix=prefix),
        " */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stdint.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        "#ifndef JX_ABI_VERSION  /* shared by every jx header */",
        f"#define JX_ABI_VERSION {abi.ABI_VERSION}",
        "/* Status codes returned by entries. */",
    ]
    width = max(len(n) for n, _ in abi.STATUS.values())
    for code, (macro, meaning) in sorted(abi.STATUS.items()):
        lines.append(f"#define {macro.ljust(width)} {code}  /* {meaning} */")
    lines += ["#endif", ""]
    for spec in specs:
        lines += _entry_block(spec, prefix) + [""]
    names = abi.artifact_symbols(prefix)
    lines += [
        "/* The manifest (NUL-terminated JSON: entries, trees, shapes, dtypes, hash), the",
        " * SHA-256 (hex) of its bytes, and the ABI version of this library; check",
        f" * {names['abi_version']}() == JX_ABI_VERSION. */",
        f"const char* {names['manifest']}(void);",
        f"const char* {names['manifest_sha256']}(void);",
        f"uint32_t {names['abi_version']}(void);",
        "",
    ]
    lines += _runtime_block(prefix) + [""]
    lines += [
        "#ifdef __cplusplus",
        "}  /* extern \"C\" */",
        "#endif",
        "",
        f"#endif  /* {guard} */",
        "",
    ]
    return "\n".join(lines)
