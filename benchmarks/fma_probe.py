"""The host's floating-point peak: fused multiply-adds on registers, every core.

A BLAS matrix product is a practical peak only where the BLAS has a kernel for
the CPU: on a core with full-width AVX-512 (Zen 5) OpenBLAS's float32 GEMM runs
at half the rate of jx's own, so rooflines drawn under it read above 100%. The
probe measures the arithmetic units instead: one loop of independent vector
fused multiply-adds (as many accumulators as the register file holds, more than
latency x ports on any x86 core), compiled by jx's CPU backend for this host and
run on every thread at once. Targets without FMA get a multiply and an add per
lane, the two flops an FMA counts for.
"""
from __future__ import annotations

import concurrent.futures as futures
import ctypes
import time

SYMBOL = "jx_fma_probe"


def _ir(lanes: int, accumulators: int, ty: str, fma: bool) -> str:
    """LLVM IR of `void jx_fma_probe(i64 n, ty* out)`: n rounds of one FMA per
    accumulator; the sum is stored so that nothing is dead."""
    vec = f"<{lanes} x {ty}>"

    def splat(v: float) -> str:
        return "<" + ", ".join(f"{ty} {v!r}" for _ in range(lanes)) + ">"

    # acc' = acc * m + c converges to c / (1 - m): bounded, no subnormals
    m, c = splat(0.999969482421875), splat(0.0001220703125)
    lines = [f"declare {vec} @llvm.fma.v{lanes}{'f32' if ty == 'float' else 'f64'}"
             f"({vec}, {vec}, {vec})",
             f"define void @{SYMBOL}(i64 %n, {ty}* %out) {{",
             "entry:", "  br label %loop", "loop:",
             "  %i = phi i64 [0, %entry], [%i1, %loop]"]
    for k in range(accumulators):   # distinct starts: no two chains are the same value
        lines.append(f"  %a{k} = phi {vec} [{splat(1.0 + k / 64)}, %entry], [%b{k}, %loop]")
    for k in range(accumulators):
        if fma:
            lines.append(f"  %b{k} = call {vec} @llvm.fma.v{lanes}"
                         f"{'f32' if ty == 'float' else 'f64'}({vec} %a{k}, {vec} {m}, "
                         f"{vec} {c})")
        else:
            lines.append(f"  %p{k} = fmul {vec} %a{k}, {m}")
            lines.append(f"  %b{k} = fadd {vec} %p{k}, {c}")
    lines += ["  %i1 = add i64 %i, 1", "  %done = icmp uge i64 %i1, %n",
              "  br i1 %done, label %exit, label %loop", "exit:"]
    total = "%b0"
    for k in range(1, accumulators):
        lines.append(f"  %s{k} = fadd {vec} {total}, %b{k}")
        total = f"%s{k}"
    lines += [f"  %first = extractelement {vec} {total}, i32 0",
              f"  store {ty} %first, {ty}* %out", "  ret void", "}"]
    return "\n".join(lines) + "\n"


def compiled(bits: int):
    """(fn(rounds, sink), the sink's ctypes type, flops per round, the module that
    keeps fn alive) for this host's target (or JX_CPU's)."""
    from jx.codegen.cpu import target
    from jx.codegen.cpu.compiler import JitModule

    cpu = target.jit_cpu()
    vbytes = target.vector_bytes(cpu)
    ty, size = ("float", 4) if bits == 32 else ("double", 8)
    lanes = vbytes // size
    accumulators = 24 if vbytes == 64 else 12   # 32 registers with AVX-512, else 16
    module = JitModule(_ir(lanes, accumulators, ty, "fma" in target.features(cpu)), cpu)
    ctype = ctypes.c_float if bits == 32 else ctypes.c_double
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctype))(
        module.address(SYMBOL))
    return fn, ctype, 2 * lanes * accumulators, module


def fma_peak(bits: int, threads: int, seconds: float = 0.05, repeats: int = 5) -> float:
    """GFLOP/s (an FMA is 2 flops) of `threads` threads running the probe at once,
    best of `repeats` runs of about `seconds` each, for float32 (bits 32) or
    float64."""
    fn, ctype, flops_per_round, module = compiled(bits)
    sinks = [ctype() for _ in range(threads)]
    rounds = 1 << 14                    # grow until one call takes `seconds` / 4
    while True:
        t0 = time.perf_counter()
        fn(rounds, sinks[0])
        dt = time.perf_counter() - t0
        if dt >= seconds / 4 or rounds >= 1 << 40:
            break
        rounds *= 4
    rounds = max(1, int(rounds * seconds / max(dt, 1e-9)))
    best = float("inf")
    with futures.ThreadPoolExecutor(threads) as pool:   # ctypes releases the GIL
        for _ in range(repeats + 1):                     # the first warms the cores
            t0 = time.perf_counter()
            list(pool.map(lambda s: fn(rounds, s), sinks))
            best = min(best, time.perf_counter() - t0)
    del module                                           # (fn is not called again)
    return threads * rounds * flops_per_round / best / 1e9
