"""jx's benchmark machinery and suite: a library behind `jx bench` (cli/bench.py),
the one command that runs it.

    jx bench MODEL.py | lib<model>.so | --machine
    jx bench benchmarks/ [--quick] [--only NAME] [--out DIR] [--busy N]   (the suite)
    jx bench --target cuda [--quick]                  (gpu_kernels.py)

Modules:
  machine  – the machine's limits (bandwidth, GEMM peaks, cores), cached per machine
  measure  – timing loops, bytes/flops of fused programs, the engines-agree check
  inputs   – seeded random inputs for an entry's declared specs
  engines  – the timed engines: compiled jx (jit or artifact), eager NumPy, JAX
  jaxshim  – import a model with jx's API names bound to JAX's
  runner   – bench one entry on every engine
  report   – rich table, JSON and markdown output
  suite    – the benchmark cases of issue 6; models.py holds the ones not in samples/
  busy, busy_report – the suite timed again with cores kept busy (--busy N)
  gpu_kernels – the CUDA backend's fused kernels and dispatch against JAX on the GPU

Everything imports relatively, so the package works as `benchmarks` (from the
repository root) and when loaded by `jx bench` from its folder.
"""
