"""Load compiled artifacts and call them (NumPy + ctypes only; CuPy for CUDA)."""
