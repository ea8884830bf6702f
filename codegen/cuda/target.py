"""Drive LLVM's NVPTX backend: optimise a module for an SM architecture, emit PTX,
and assemble it to a cubin with `ptxas` when the CUDA toolkit is installed."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile

import llvmlite.binding as llvm

from jx.errors import JxError

TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_ARCH = "sm_80"


class PtxError(JxError):
    """PTX generation or assembly failed (a backend bug or an unsupported --arch)."""


@functools.lru_cache(maxsize=None)
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def check_arch(arch: str) -> str:
    if not (arch.startswith("sm_") and arch[3:].rstrip("a").isdigit() and int(
            arch[3:].rstrip("a")) >= 70):
        raise PtxError(f"unsupported CUDA architecture {arch!r}; pass --arch sm_80 (Ampere), "
                       "sm_90 (Hopper) or another sm_NN with NN >= 70")
    return arch


@functools.lru_cache(maxsize=None)
def target_machine(arch: str):
    _init()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=check_arch(arch), features="", opt=3)


def compile_ptx(ir_text: str, arch: str = DEFAULT_ARCH) -> str:
    """LLVM IR text -> PTX text (verify, O3, NVPTX codegen)."""
    from jx.codegen.cpu.compiler import optimise
    tm = target_machine(arch)
    try:
        mod = optimise(ir_text, tm)
    except RuntimeError as e:   # a malformed module is a backend bug
        raise PtxError(f"cuda backend produced invalid LLVM IR: {e}") from None
    return tm.emit_assembly(mod)


def find_ptxas() -> str | None:
    path = os.environ.get("JX_PTXAS") or shutil.which("ptxas")
    if path is None and os.path.isfile("/usr/local/cuda/bin/ptxas"):
        path = "/usr/local/cuda/bin/ptxas"
    return path


def assemble(ptx: str, arch: str, ptxas: str | None = None) -> bytes | None:
    """PTX -> cubin for arch, or None when ptxas is not installed."""
    ptxas = ptxas or find_ptxas()
    if ptxas is None:
        return None
    with tempfile.TemporaryDirectory(prefix="jx-ptxas-") as tmp:
        src, dst = os.path.join(tmp, "m.ptx"), os.path.join(tmp, "m.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        proc = subprocess.run([ptxas, f"-arch={arch}", "-O3", src, "-o", dst],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise PtxError(f"ptxas rejected the generated PTX for {arch}:\n"
                           f"{proc.stderr.strip()[:2000]}")
        with open(dst, "rb") as f:
            return f.read()
