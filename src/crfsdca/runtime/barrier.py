"""A barrier for threads that run numba kernels without the GIL.

The mini-batch SDCA (:mod:`crfsdca.solvers.minibatch`) meets twice per batch of a few
steps, tens of microseconds apart, and once per step of its apply, a few microseconds
apart: a Python-level barrier (a lock and a condition) costs more than the steps. Here
the threads meet on int32 counters with atomic operations (sequentially consistent, so
that every write before the barrier is seen after it). A thread spins a little (the
usual wait is a few microseconds; waking a sleeper on a VM takes tens, so the spin
outlasts a batch's usual end-of-compute wait), then sleeps on a futex (Linux) until the
last thread arrives, so that a machine with more threads than cores (a parallel search,
another program) loses no time slices to spinning; elsewhere it yields the core
(``sched_yield``) instead of sleeping.
"""

from __future__ import annotations

import platform
import sys

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import NJIT

ARRIVED, GENERATION, SLEEPERS = 0, 1, 2
SPINS = 200_000  # atomic loads before sleeping: about 40-100 microseconds (measured:
# 1M loads of an idle line take 0.18 ms here); a batch's threads wait that long at its
# end, and a futex wake-up on a VM costs more than the spin
PIPE_SPINS = 200_000  # a pipeline's wait (wait_at_least): loads before it sleeps. 2_000
# (d7a310f) made the default fit on two free cores 1.45x slower (Dutch solver 4.8-6.0 s
# against 3.2 s): numba's cache had kept the callers' old code when it was measured
# the futex system call's number where it is known (Linux), else -1
FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine(), -1) \
    if sys.platform.startswith("linux") else -1
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129


def _pointer(context, builder, array_type, array, index):
    return cgutils.get_item_pointer(context, builder, array_type,
                                    context.make_array(array_type)(context, builder, array),
                                    [index])


@intrinsic
def atomic_add(typingctx, array, index, value):
    """array[index] += value atomically; returns the value before."""
    sig = array.dtype(array, index, value)

    def codegen(context, builder, signature, args):
        ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
        value = context.cast(builder, args[2], signature.args[2], signature.return_type)
        return builder.atomic_rmw("add", ptr, value, "seq_cst")

    return sig, codegen


@intrinsic
def atomic_load(typingctx, array, index):
    """array[index], read atomically (never kept in a register by the compiler)."""
    sig = array.dtype(array, index)

    def codegen(context, builder, signature, args):
        ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
        return builder.load_atomic(ptr, "seq_cst", signature.return_type.bitwidth // 8)

    return sig, codegen


@intrinsic
def atomic_store(typingctx, array, index, value):
    """array[index] = value atomically."""
    sig = types.void(array, index, value)

    def codegen(context, builder, signature, args):
        ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
        dtype = signature.args[0].dtype
        value = context.cast(builder, args[2], signature.args[2], dtype)
        builder.store_atomic(value, ptr, "seq_cst", dtype.bitwidth // 8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _futex(typingctx, array, index, operation, value):
    """syscall(FUTEX, &array[index], operation, value, NULL): sleep while array[index]
    is ``value`` (FUTEX_WAIT), or wake up to ``value`` sleepers (FUTEX_WAKE)."""
    sig = types.int64(array, index, operation, value)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i64, [i64], var_arg=True), "syscall")
        ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
        op = context.cast(builder, args[2], signature.args[2], types.int32)
        value = context.cast(builder, args[3], signature.args[3], types.int32)
        return builder.call(fn, [ir.Constant(i64, FUTEX), ptr, op, value,
                                 ir.Constant(ir.IntType(8).as_pointer(), None)])

    return sig, codegen


@intrinsic
def _yield_core(typingctx):
    """sched_yield(2)."""
    sig = types.void()

    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module,
                                            ir.FunctionType(ir.IntType(32), []), "sched_yield")
        builder.call(fn, [])
        return context.get_dummy_value()

    return sig, codegen


def make_barrier() -> np.ndarray:
    """The counters of a barrier: arrivals, generation, sleeping threads."""
    return np.zeros(3, dtype=np.int32)


@njit(**NJIT)
def wait(barrier, n_threads):
    """Return when all ``n_threads`` threads have called wait on ``barrier`` (reusable)."""
    if n_threads == 1:
        return
    generation = atomic_load(barrier, GENERATION)
    if atomic_add(barrier, ARRIVED, 1) == n_threads - 1:
        atomic_store(barrier, ARRIVED, 0)
        atomic_add(barrier, GENERATION, 1)
        if FUTEX >= 0 and atomic_load(barrier, SLEEPERS) > 0:
            _futex(barrier, GENERATION, FUTEX_WAKE_PRIVATE, n_threads)
        return
    spins = 0
    while atomic_load(barrier, GENERATION) == generation:
        spins += 1
        if spins < SPINS:
            continue
        if FUTEX >= 0:  # sleeps unless the generation has moved on meanwhile
            atomic_add(barrier, SLEEPERS, 1)
            _futex(barrier, GENERATION, FUTEX_WAIT_PRIVATE, generation)
            atomic_add(barrier, SLEEPERS, -1)
        else:
            _yield_core()


@njit(**NJIT)
def publish(counters, index, value):
    """counters[index] = value (a step of a pipeline done), waking the threads that sleep
    on it (:func:`wait_at_least`); ``counters[SLEEPERS]`` counts them."""
    atomic_store(counters, index, value)
    if FUTEX >= 0 and atomic_load(counters, SLEEPERS) > 0:
        _futex(counters, index, FUTEX_WAKE_PRIVATE, 1 << 30)


@njit(**NJIT)
def wait_at_least(counters, index, value):
    """Return when counters[index] >= value (set by another thread's :func:`publish`):
    spin :data:`PIPE_SPINS` loads, then sleep on a futex (elsewhere: yield the core). A
    pipeline's waits are short, a few microseconds, when its threads have cores of their
    own; a longer one means the thread waited for has no core (more threads than
    cores), and this one had better give up its own."""
    spins = 0
    while True:
        seen = atomic_load(counters, index)
        if seen >= value:
            return
        spins += 1
        if spins < PIPE_SPINS:
            continue
        if FUTEX < 0:
            _yield_core()
            continue
        atomic_add(counters, SLEEPERS, 1)
        _futex(counters, index, FUTEX_WAIT_PRIVATE, seen)
        atomic_add(counters, SLEEPERS, -1)

__all__ = ["atomic_add", "atomic_load", "atomic_store", "make_barrier", "publish", "wait",
           "wait_at_least"]
