"""Branch-free exp and log that LLVM vectorizes inside numba loops.

numba calls libm's scalar ``exp``/``log`` (about 4 ns each here) because the
llvmlite wheels ship without SVML. The SDCA line search and the oracle spend
most of their time in these two functions over T*K*K pairwise entries, so the
core uses the fdlibm algorithms below, written without branches so that a loop
over them compiles to AVX2/AVX-512 code. Both are accurate to 1 ulp over their
whole range (checked against numpy in ``tests/model/test_fastmath.py``).

Kernels calling these must use ``error_model="numpy"`` (the package's
:data:`crfsdca.runtime.jit.NJIT` options): numba's default Python error model adds a
zero-division check to every ``/`` that blocks vectorization.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def _as_int64(typingctx, x):
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


@intrinsic
def _as_float64(typingctx, x):
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_P1 = 1.66666666666666019037e-01
_P2 = -2.77777777770155933842e-03
_P3 = 6.61375632143793436117e-05
_P4 = -1.65339022054652515390e-06
_P5 = 4.13813679705723846039e-08
_TINY = 2.2250738585072014e-308  # smallest normal float64
_TWO54 = 18014398509481984.0


@njit(inline="always", error_model="numpy")
def _log_normal(x, kadj):
    """log(x) - kadj log 2 for a normal x > 0 (fdlibm's e_log.c without its branches)."""
    hx = _as_int64(x) + (0x3FF0000000000000 - 0x3FE6A09E667F3BCD)
    k = np.float64((hx >> 52) - 1023) - kadj
    m = _as_float64((hx & 0x000FFFFFFFFFFFFF) + 0x3FE6A09E667F3BCD)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


@njit(inline="always", error_model="numpy")
def flog(x):
    """Natural log of x > 0 (subnormals included); log(0) = -inf, log(inf) = inf."""
    sub = x < _TINY
    out = _log_normal(x * _TWO54 if sub else x, 54.0 if sub else 0.0)
    out = -np.inf if x == 0.0 else out
    return np.inf if x == np.inf else out


@njit(inline="always", error_model="numpy")
def flog_normal(x):
    """log(max(x, smallest normal)) for finite x: flog's value from 2.2e-308 up, and
    log(2.2e-308) = -708.4 below. Fewer operations than :func:`flog` (no rescaling of
    subnormals, no test for 0 and inf), for loops that mask x <= 0 themselves and whose
    terms at x below 2.2e-308 are negligible (the line search's d log q and q log q)."""
    return _log_normal(max(x, _TINY), 0.0)


@njit(inline="always", error_model="numpy")
def fexp(x):
    """exp(x); 0 below -708 (no subnormal results), inf above log(DBL_MAX)."""
    xc = min(max(x, -708.0), 709.782712893384)
    kf = np.floor(xc * _INV_LN2 + 0.5)
    hi = xc - kf * _LN2_HI
    lo = kf * _LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (_P1 + t * (_P2 + t * (_P3 + t * (_P4 + t * _P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    out = y * _as_float64((np.int64(kf) + 1022) << 52) * 2.0
    out = 0.0 if x < -708.0 else out
    out = np.inf if x > 709.782712893384 else out
    return x if x != x else out


@njit(inline="always", error_model="numpy")
def xlogx(x):
    """x log x with the convention 0 log 0 = 0."""
    return 0.0 if x <= 0.0 else x * flog(x)
