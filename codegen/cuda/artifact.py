"""`jx compile --target cuda`: the entries' kernels in one PTX module (and a cubin
where ptxas is installed) plus `<name>.cuda.json`, the manifest with the CPU
artifact's entry/pytree/shape/dtype/hash data and each entry's launch plan.

    out_dir/<name>.ptx  out_dir/<name>.<arch>.cubin  out_dir/<name>.cuda.json

The build is deterministic: the same graphs, arch and jx version give the same
files (content_hash covers the manifest and the PTX).
"""
from __future__ import annotations

import hashlib
import os

from jx.runtime import manifest as manifest_mod, treespec
from jx.runtime.abi import ABI_VERSION, entry_symbol
from jx.runtime.cuda import SUFFIX, manifest_text
from jx.version import __version__

from jx.codegen.cpu.artifact import _leaves, program_hash

from .kernels import GpuModule
from .plan import ConstTable, plan_program
from .target import DEFAULT_ARCH, TRIPLE, assemble, check_arch, compile_ptx


def build_module(name: str, entries: list, arch: str) -> tuple:
    """(PTX text, manifest dict without file names)."""
    gm = GpuModule(name)
    consts = ConstTable()
    records = []
    for e in entries:
        g = e.program.graph
        records.append({
            "name": e.name, "symbol": entry_symbol(e.name), "arg_names": list(e.arg_names),
            "inputs": _leaves(g.in_avals, e.in_tree, e.arg_names),
            "outputs": _leaves(g.out_avals, e.out_tree),
            "in_tree": treespec.encode(e.in_tree),
            "out_tree": treespec.encode(e.out_tree),
            "plan": plan_program(gm, e.program, consts),
            "code_sha256": program_hash(e.program),
            **({"baked": e.baked} if getattr(e, "baked", None) else {})})
    ptx = compile_ptx(str(gm.module), arch)
    manifest = {"abi_version": ABI_VERSION, "jx_version": __version__, "target": TRIPLE,
                "cpu": arch, "target_kind": "cuda", "consts": consts.manifest(),
                "entries": records}
    return ptx, manifest


def build_artifact(name: str, entries: list, out_dir: str, arch: str | None = None) -> dict:
    arch = check_arch(arch or DEFAULT_ARCH)
    ptx, manifest = build_module(name, entries, arch)
    cubin = assemble(ptx, arch)
    os.makedirs(out_dir, exist_ok=True)
    ptx_name, cubin_name = f"{name}.ptx", f"{name}.{arch}.cubin"
    manifest["ptx"] = ptx_name
    manifest["cubin"] = cubin_name if cubin is not None else None
    manifest["content_hash"] = manifest_mod.content_hash(manifest, ptx)
    with open(os.path.join(out_dir, ptx_name), "w") as f:
        f.write(ptx)
    if cubin is not None:
        with open(os.path.join(out_dir, cubin_name), "wb") as f:
            f.write(cubin)
    path = os.path.join(out_dir, name + SUFFIX)
    text = manifest_text(manifest)
    with open(path, "w") as f:
        f.write(text)
    return {"library": path, "ptx": os.path.join(out_dir, ptx_name),
            "cubin": os.path.join(out_dir, cubin_name) if cubin is not None else None,
            "manifest": manifest, "cache_hit": False,
            "sha256": hashlib.sha256(text.encode()).hexdigest()}
