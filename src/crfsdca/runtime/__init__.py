"""How the package runs, whatever it computes: numba's options and kernels' cache
(:mod:`.jit`, :mod:`.kernel_cache`; the microarchitecture levels shipped for other
processors, :mod:`.cpu_levels` and :mod:`.level_cache`), threads, signals, atomic files
and memory checks. Nothing here imports the rest of the package but its errors."""
