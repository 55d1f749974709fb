"""numba's cache for the package's kernels, which also loads a kernel compiled for a
standard microarchitecture level (:mod:`crfsdca.runtime.cpu_levels`) when the host's own
processor has none.

numba keys each cached kernel by (signature, (target triple, processor name, feature
string), hashes of its code) and loads only the host's key. :class:`LevelCache` tries
that key first, exactly as numba does; on a miss it tries the keys of the levels the
host's feature string runs, best first, and numba compiles (and caches for the host) only
when none is there. The wheel build compiles the levels (``crfsdca precompile --level``).

This rests on numba's cache internals (``Cache._load_overload``, ``_index_key``,
``IndexDataCacheFile._load_index``): where they are not as expected, the class loads the
host's key only and the kernels compile as numba always did. ``make test-oldest`` and the
suite test it on the oldest and the newest numba the package allows.
"""

from __future__ import annotations

import collections
import inspect
import os
from collections.abc import Callable

from numba.core import caching, dispatcher

from . import cpu_levels

loads: collections.Counter[str] = collections.Counter()
"""Package kernels this process loaded from numba's cache, by the processor name of the
key they were found under (the host's own name, or a level's)."""


class LevelCache(caching.FunctionCache):
    """numba's cache of one of the package's kernels, falling back to the levels."""

    on_compile: Callable[[tuple], None] = staticmethod(lambda magic: None)
    """Called before a kernel of the package compiles (found under no key), with numba's
    (triple, processor name, features) of this process."""

    def _load_overload(self, sig, target_context):
        data = super()._load_overload(sig, target_context)
        if not self._enabled:
            return data
        codegen = target_context.codegen()
        magic = codegen.magic_tuple()
        if data is not None:
            loads[magic[1]] += 1
            return data
        data, name = self._load_level(sig, codegen, magic)
        if data is None:
            LevelCache.on_compile(magic)
            return None
        loads[name] += 1
        return self._impl.rebuild(target_context, data)

    def _load_level(self, sig, codegen, magic):
        """(the cached data, its level) of the best level the host runs; (None, None)."""
        key = self._index_key(sig, codegen)
        if not (isinstance(key, tuple) and len(key) == 3 and key[1] == magic):
            return None, None  # not numba's key as this module knows it: compile
        runs = cpu_levels.runnable(magic[0], magic[2])
        if not runs:
            return None, None
        overloads = self._cache_file._load_index()
        for name in runs:
            data_name = overloads.get((key[0], (magic[0], name, ""), key[2]))
            if data_name is not None:
                try:
                    return self._cache_file._load_data(data_name), name
                except OSError:  # removed since the index was read
                    continue
        return None, None


def _supported() -> bool:
    """Whether numba's cache has what :class:`LevelCache` overrides and calls."""
    return (dispatcher.FunctionCache is caching.FunctionCache
            and all(hasattr(caching.Cache, name) for name in ("_load_overload", "_index_key"))
            and all(hasattr(caching.IndexDataCacheFile, name)
                    for name in ("_load_index", "_load_data")))


def install(package: str, on_compile: Callable[[tuple], None]) -> bool:
    """Make numba's dispatchers cache the functions of files under ``package`` in a
    :class:`LevelCache` (every other function keeps numba's own cache); ``on_compile``
    is called before one of them compiles. Returns whether levels are loaded."""
    if getattr(dispatcher.FunctionCache, "package", None) == package:
        return True
    if not _supported():
        return False
    numba_cache = caching.FunctionCache
    prefix = os.path.abspath(package) + os.sep
    LevelCache.on_compile = staticmethod(on_compile)

    def function_cache(py_func):
        """numba's cache of ``py_func`` (the name numba's dispatcher calls)."""
        try:
            ours = os.path.abspath(inspect.getfile(py_func)).startswith(prefix)
        except TypeError:  # a function without a file
            ours = False
        return (LevelCache if ours else numba_cache)(py_func)

    function_cache.package = package
    dispatcher.FunctionCache = function_cache
    return True
