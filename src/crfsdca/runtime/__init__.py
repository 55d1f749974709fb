"""How the package runs, whatever it computes: numba's options and kernels' cache
(:mod:`.jit`, :mod:`.kernel_cache`), threads, signals, atomic files
and memory checks. Nothing here imports the rest of the package but its errors."""
