"""The CPU backend: fused programs -> LLVM IR (llvmlite) -> native code."""
