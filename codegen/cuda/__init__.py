"""CUDA backend: fused kernels -> NVPTX LLVM IR -> PTX (-> cubin where ptxas exists),
plus a launch plan (kernels, cuBLAS matmuls, copies) run by jx.runtime.cuda."""
