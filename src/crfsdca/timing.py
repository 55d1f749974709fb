"""A cycle counter readable inside numba kernels (``llvm.readcyclecounter``).

numba has no clock in nopython mode; solvers count CPU cycles around their
phases (line search, oracle) and report shares of time, which need no unit.
"""

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _readcyclecounter(typingctx):
    sig = types.int64()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


@njit(inline="always", cache=True)
def cycles():
    """The processor's cycle counter (time stamp counter on x86)."""
    return _readcyclecounter()
