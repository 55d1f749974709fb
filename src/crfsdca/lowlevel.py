"""Two processor facilities numba does not expose: the cycle counter and prefetching.

- :func:`cycles` reads ``llvm.readcyclecounter``: numba has no clock in nopython mode,
  so solvers count cycles around the phases of a step and report shares of time.
- :func:`prefetch_range` issues ``llvm.prefetch`` for every cache line of an array slice:
  SDCA prefetches the sampled sequence's block of the marginal store before running the
  oracle, so that the block arrives from memory while forward-backward computes.
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


@intrinsic
def _prefetch(typingctx, arr, index):
    if not isinstance(arr, types.Array) or not isinstance(index, types.Integer):
        return None
    sig = types.void(arr, index)

    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                       wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(inline="always", cache=True)
def prefetch_range(arr, start, stop):
    """Ask the processor to load ``arr[start:stop]`` into cache (a hint, no effect on values)."""
    step = max(64 // arr.itemsize, 1)
    for j in range(start, stop, step):
        _prefetch(arr, j)
