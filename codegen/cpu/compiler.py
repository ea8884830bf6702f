"""Drive LLVM: parse, verify, optimise for a target, then JIT or emit an object.

The pipeline is O2 with both vectorisers: O3 measured no faster on the benchmark
suite (its kernels are already explicit loops; the GEMM is hand-blocked) and costs
~0.2 s more per cold `jx compile` of the SGD-step sample."""
from __future__ import annotations

import functools

import llvmlite.binding as llvm


@functools.lru_cache(maxsize=None)
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def target_machine(cpu: str | None = None, triple: str | None = None,
                   features: str | None = None, reloc: str = "default"):
    """The host machine by default; a named cpu/triple cross-compiles."""
    _init()
    if triple is None:
        triple = llvm.get_process_triple()
    if cpu is None or cpu == "native" or cpu == llvm.get_host_cpu_name():
        cpu = llvm.get_host_cpu_name()
        if features is None:
            features = llvm.get_host_cpu_features().flatten()
    if "avx512f" in (features or "") and "prefer-256-bit" not in features:
        # Intel tunings prefer 256-bit vectors to avoid AVX-512 clock drops on old
        # parts; our loops are compute-dense transcendental chains where 512 wins.
        features += ",-prefer-256-bit"
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features or "", opt=3,
                                        reloc=reloc, codemodel="jitdefault"
                                        if reloc == "default" else "default")


def optimise(ir_text: str, tm):
    """Parse + verify (a malformed module is a backend bug), then the pipeline."""
    _init()
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


class JitModule:
    """Object code loaded in-process; keeps the engine alive for its functions.

    The object comes from the persistent cache when this IR was compiled before
    (by any process), so a warm jx.jit skips LLVM entirely.
    """

    def __init__(self, ir_text: str):
        from .cache import cached_object
        obj, self.cache_hit = cached_object(ir_text, host_cpu(), host_triple(), reloc="default")
        tm = target_machine()          # the engine takes ownership: one per module
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self.engine.finalize_object()

    def address(self, symbol: str) -> int:
        return self.engine.get_function_address(symbol)


def emit_object(ir_text: str, cpu: str | None = None, triple: str | None = None,
                reloc: str = "pic") -> bytes:
    tm = target_machine(cpu, triple, reloc=reloc)
    mod = optimise(ir_text, tm)
    return tm.emit_object(mod)


def required_features(cpu: str) -> list:
    """The instruction-set extensions code built for `cpu` may use, by LLVM name
    (the loader checks them against the running CPU): the host's enabled ones for a
    host build; unknown (empty) for a CPU named with --cpu."""
    from jx.runtime.cpu import X86_FLAGS
    if cpu != host_cpu():
        return []
    feats = llvm.get_host_cpu_features()
    return sorted(f for f in X86_FLAGS if feats.get(f))


def host_cpu() -> str:
    _init()
    return llvm.get_host_cpu_name()


def host_triple() -> str:
    _init()
    return llvm.get_process_triple()
