"""Backends: fused kernels -> LLVM IR (CPU) or NVPTX (CUDA). Loads llvmlite lazily."""
