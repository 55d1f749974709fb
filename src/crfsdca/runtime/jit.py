"""How the package compiles its kernels and allocates their arrays, and two processor
facilities numba does not expose.

- :data:`NJIT` and :data:`NJIT_FAST`: the numba options of every kernel (cached, with the
  kernels the wheel ships, see :mod:`crfsdca.runtime.kernel_cache`;
  nogil, numpy's error model so that divisions vectorize; ``NJIT_FAST`` also lets
  LLVM reorder reductions). One rule keeps runs bitwise reproducible under
  ``NJIT_FAST``: a reassociated sum never shares a loop with a store. LLVM guards a
  vectorized loop that stores with runtime alias checks and falls back to the scalar
  loop when they fail, and the two sum in different orders, so the last bits of a
  result depended on where the arrays happened to lie in memory (which solvers ran
  before in the process, a fresh compile or numba's cache);
- :func:`aligned_zeros` / :func:`aligned_empty`: arrays whose data start on a cache
  line, so that the vector loads of a kernel never straddle two; :func:`stream_empty`:
  one in its own mapping, without transparent huge pages (the marginal store, the
  vectors of Catalyst's outer loop: arrays read front to back);
- :func:`cycles` reads ``llvm.readcyclecounter``: numba has no clock in nopython mode,
  so solvers count cycles around the phases of a step and report shares of time.
- :func:`prefetch_range` issues ``llvm.prefetch`` for every cache line of an array slice:
  SDCA prefetches the sampled sequence's block of the marginal store before running the
  oracle, so that the block arrives from memory while forward-backward computes;
- :func:`lock` / :func:`unlock` hold a spin lock (an int32 entry, acquire and release
  ordering): the threads of a full-batch pass claim its chunks under one
  (``model.passes.claim``).
- :func:`dot`: the inner product of two long vectors without BLAS. OpenBLAS runs a long
  ``ddot`` on all the cores and its threads then spin for a while; when a solver's own
  threads start right after (a monitor's ||w||^2, then a pass on the threads), one of them
  finds its core taken.
"""

import atexit
import contextlib
import errno
import mmap
import os
import sys
import tempfile

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..errors import ResourceError
from . import kernel_cache

NJIT = dict(cache=kernel_cache.install(), nogil=True, error_model="numpy")
"""Options for every numba kernel of the package."""

NJIT_FAST = dict(NJIT, fastmath={"reassoc", "contract", "nsz"})
"""Options for kernels whose reductions may be reordered (vectorized sums)."""


@njit(**NJIT)
def dot(a, b):
    """sum_i a_i b_i on this thread, in a fixed order (eight interleaved partial sums):
    the same bits on every machine and whatever BLAS's thread count."""
    n = len(a)
    s = np.zeros(8)
    m = n - n % 8
    for i in range(0, m, 8):
        for r in range(8):
            s[r] += a[i + r] * b[i + r]
    for i in range(m, n):
        s[0] += a[i] * b[i]
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))


@njit(**NJIT)
def abs_sum(a):
    """sum_i |a_i| (the L1 norm) in :func:`dot`'s fixed order, without numpy's temporary
    of the array's size (7 million weights on CoNLL-2000: 23 ms against 8)."""
    n = len(a)
    s = np.zeros(8)
    m = n - n % 8
    for i in range(0, m, 8):
        for r in range(8):
            s[r] += abs(a[i + r])
    for i in range(m, n):
        s[0] += abs(a[i])
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))


ALIGNMENT = 64
"""Bytes: a cache line, and the widest vector register (AVX-512)."""


def aligned_empty(n: int, dtype=np.float64) -> np.ndarray:
    """An uninitialized 1-d array of ``n`` items whose data start on :data:`ALIGNMENT`."""
    dtype = np.dtype(dtype)
    raw = np.empty(n * dtype.itemsize + ALIGNMENT, dtype=np.uint8)
    offset = -raw.ctypes.data % ALIGNMENT
    return raw[offset:offset + n * dtype.itemsize].view(dtype)


def stream_empty(n: int, dtype=np.float64, directory: str | None = None) -> np.ndarray:
    """An uninitialized 1-d array of ``n`` items in its own anonymous mapping (page-aligned),
    for a large array read block after block (the marginal store). Not numpy's allocator:
    numpy advises transparent huge pages on large arrays, and where the kernel's THP defrag
    setting is ``madvise`` (Debian's and Ubuntu's default) each first write to such an
    array may compact memory: 3.5 s to fill CoNLL-2000's 785 MB store on our test machine,
    against 0.35 s in 4 KiB pages. A block-by-block read gains nothing from huge pages,
    unlike the random rows of the weights (``benchmarks.md``, issue 28).

    With ``directory``, the mapping is of a file there, made for it and removed at once
    (the mapping keeps it until the array goes: nothing is left behind, even by a killed
    process): the operating system keeps the pages it can in memory and writes the others
    to the file, so the array may be larger than memory. Its blocks are reserved on the
    disk first, so that a full disk is an error here rather than a crash at a write."""
    dtype = np.dtype(dtype)
    size = max(n * dtype.itemsize, 1)
    if directory is not None:
        return np.frombuffer(_file_mapping(directory, size), dtype=dtype, count=n)
    try:  # private (a forked process copies on write), and told: no huge pages
        buffer = (mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE) if hasattr(mmap, "MAP_PRIVATE")
                  else mmap.mmap(-1, size))
    except OSError as e:
        if e.errno == errno.ENOMEM:
            raise MemoryError(f"cannot allocate {size:,} bytes") from e
        raise
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        buffer.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buffer, dtype=dtype, count=n)


def _file_mapping(directory: str, size: int) -> mmap.mmap:
    """A shared mapping of ``size`` bytes of a new file in ``directory``, the file removed
    (on a system that cannot remove an open file, at the process's exit)."""
    try:
        fd, path = tempfile.mkstemp(prefix="crfsdca-store-", suffix=".bin", dir=directory)
    except OSError as e:
        raise ResourceError(f"store_dir {directory}: cannot make a file there "
                            f"({e.strerror})") from None
    try:
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, size)
            else:
                os.ftruncate(fd, size)
        except OSError as e:
            raise ResourceError(f"store_dir {directory}: cannot reserve {size / 2**30:.2f} "
                                f"GiB there ({e.strerror})") from None
        try:
            buffer = mmap.mmap(fd, size)
        except OSError as e:  # ulimit -v counts a mapped file
            if e.errno == errno.ENOMEM:
                raise MemoryError(f"cannot map {size:,} bytes") from e
            raise
    finally:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:  # Windows: an open file stays until the end
            atexit.register(_remove, path)
    return buffer


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def stream_copy(a: np.ndarray, dtype=None, directory: str | None = None) -> np.ndarray:
    """``a`` (1-d) copied into a :func:`stream_empty` array (of ``dtype``, default a's; in
    a file of ``directory`` if given)."""
    out = stream_empty(len(a), a.dtype if dtype is None else dtype, directory)
    out[:] = a
    return out


def aligned_zeros(n: int, dtype=np.float64) -> np.ndarray:
    """A zero-filled 1-d array of ``n`` items whose data start on :data:`ALIGNMENT`."""
    out = aligned_empty(n, dtype)
    out[:] = 0
    return out


def line_zeros(n: int, dtype=np.float64) -> np.ndarray:
    """A zero-filled 1-d array of ``n`` items alone on its cache lines: a thread's
    counters, written on every step, would otherwise share a line with another
    thread's (false sharing: the line moves between the cores on every write)."""
    dtype = np.dtype(dtype)
    per_line = max(ALIGNMENT // dtype.itemsize, 1)
    return aligned_zeros(-(-max(n, 1) // per_line) * per_line, dtype)[:n]


def aligned_copy(a: np.ndarray) -> np.ndarray:
    """``a`` (1-d) copied into an aligned array of the same dtype."""
    out = aligned_empty(len(a), a.dtype)
    out[:] = a
    return out


@intrinsic
def _readcyclecounter(typingctx):
    sig = types.int64()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


@njit(inline="always", cache=NJIT["cache"])
def cycles():
    """The processor's cycle counter (time stamp counter on x86)."""
    return _readcyclecounter()


def _item_pointer(context, builder, signature, args):
    """In an intrinsic's code generation: the address of ``args[0][args[1]]``."""
    aryty = signature.args[0]
    ary = context.make_array(aryty)(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                    wraparound=False)


@intrinsic
def _prefetch(typingctx, arr, index):
    if not isinstance(arr, types.Array) or not isinstance(index, types.Integer):
        return None
    sig = types.void(arr, index)

    def codegen(context, builder, signature, args):
        ptr = _item_pointer(context, builder, signature, args)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(inline="always", cache=NJIT["cache"])
def prefetch_range(arr, start, stop):
    """Ask the processor to load ``arr[start:stop]`` into cache (a hint, no effect on
    values): an entry every cache line's width, and the last, whose line the stride
    passes over where the slice starts past its line's start (a row of 22 float64, 176
    bytes, covers four lines in five of eight positions)."""
    step = max(64 // arr.itemsize, 1)
    for j in range(start, stop, step):
        _prefetch(arr, j)
    if stop > start:
        _prefetch(arr, stop - 1)


def _is_lock_array(arr, index):
    return (isinstance(arr, types.Array) and arr.dtype == types.int32
            and isinstance(index, types.Integer))


@intrinsic
def _try_lock(typingctx, locks, index):
    if not _is_lock_array(locks, index):
        return None
    sig = types.boolean(locks, index)

    def codegen(context, builder, signature, args):
        ptr = _item_pointer(context, builder, signature, args)
        i32 = ir.IntType(32)
        res = builder.cmpxchg(ptr, i32(0), i32(1), "acquire", "monotonic")
        return builder.extract_value(res, 1)

    return sig, codegen


@intrinsic
def _release(typingctx, locks, index):
    if not _is_lock_array(locks, index):
        return None
    sig = types.void(locks, index)

    def codegen(context, builder, signature, args):
        ptr = _item_pointer(context, builder, signature, args)
        builder.store_atomic(ir.IntType(32)(0), ptr, "release", 4)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _is_held(typingctx, locks, index):
    if not _is_lock_array(locks, index):
        return None
    sig = types.boolean(locks, index)

    def codegen(context, builder, signature, args):
        ptr = _item_pointer(context, builder, signature, args)
        value = builder.load_atomic(ptr, "monotonic", 4)
        return builder.icmp_unsigned("!=", value, ir.IntType(32)(0))

    return sig, codegen


_YIELD = "SwitchToThread" if sys.platform == "win32" else "sched_yield"


@intrinsic
def _yield_core(typingctx):
    """Give this thread's core to another runnable thread (the OS's sched_yield)."""
    sig = types.void()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(32), [])
        builder.call(cgutils.get_or_insert_function(builder.module, fnty, _YIELD), [])
        return context.get_dummy_value()

    return sig, codegen


_SPINS_BEFORE_YIELD = 256


@njit(inline="always", cache=NJIT["cache"])
def lock(locks, index):
    """Spin until this thread holds lock ``locks[index]`` (int32, 0 = free).

    Waits by reading (the cache line stays shared, not bounced by a locked instruction
    per try), and yields its core after a while: on a machine with as many busy threads
    as cores, a holder taken off its core would otherwise be waited for a whole time
    slice by a thread that keeps that core."""
    spins = 0
    while not _try_lock(locks, index):
        while _is_held(locks, index):
            spins += 1
            if spins >= _SPINS_BEFORE_YIELD:
                _yield_core()
                spins = 0


@njit(inline="always", cache=NJIT["cache"])
def unlock(locks, index):
    """Release lock ``locks[index]``: this thread's writes before it are visible to the
    next holder."""
    _release(locks, index)
