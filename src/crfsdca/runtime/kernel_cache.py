"""Where numba keeps the package's compiled kernels, and the kernels the wheel ships.

numba's cache looks in ``$NUMBA_CACHE_DIR``, else in the package's ``__pycache__``
folders when they can be written, else in the user's cache folder. A wheel built by
``setup.py`` carries kernels compiled when it was built (``crfsdca precompile`` in the
package's ``__pycache__`` folders, and :data:`MARKER` beside them): numba loads them
where the package is installed in a writable place and the processor is the build
machine's (numba keys each kernel by processor name and features, numba version and a
hash of its source), and compiles the others on their first call as always.

:class:`ShippedKernels` keeps that true wherever numba's cache goes elsewhere: it copies
the shipped kernels into that folder first (``NUMBA_CACHE_DIR``; the user's cache folder
when the package is read-only; a temporary folder of the process when nothing else can be
written, with one warning that names ``NUMBA_CACHE_DIR``).
"""

from __future__ import annotations

import atexit
import glob
import os
import pickle
import shutil
import tempfile
import warnings

from numba.core import caching

from .. import __version__

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The package's folder (this module is in its runtime/ folder)."""
MARKER = os.path.join(PACKAGE, "kernels-shipped.txt")
"""Written by the wheel build beside the kernels it compiled: what they were built for."""

_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # numba < 0.62
_LocatorBase = caching._CacheLocator


def _index_stamp(path: str):
    """(numba version, source stamp) of a cache index, None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            version = pickle.load(f)
            stamp, _ = pickle.loads(f.read())
        return version, stamp
    except Exception:  # missing, truncated, another numba's format
        return None


def _copy(src: str, dst: str) -> None:
    """``src`` to ``dst`` atomically (concurrent processes may seed one folder)."""
    tmp = f"{dst}.{os.getpid()}.tmp"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


_seeded: set[tuple[str, str]] = set()


def seed(shipped: str, target: str) -> None:
    """Copy the kernels of ``shipped`` into ``target`` where ``target`` has none of the
    same source and numba version (once per pair of folders in a process)."""
    if (shipped, target) in _seeded:
        return
    _seeded.add((shipped, target))
    for index in glob.glob(os.path.join(glob.escape(shipped), "*.nbi")):
        name = os.path.basename(index)
        here = os.path.join(target, name)
        stamp = _index_stamp(index)
        if stamp is None or _index_stamp(here) == stamp:
            continue
        try:
            base = glob.escape(index[:-len(".nbi")])
            for data in glob.glob(base + ".*.nbc"):
                _copy(data, os.path.join(target, os.path.basename(data)))
            _copy(index, here)  # last: the index names the data files
        except OSError:
            return


class TemporaryFolder(caching._SourceFileBackedLocatorMixin, _LocatorBase):
    """A folder of this process, removed at its exit: where nothing else can be written,
    the shipped kernels are loaded from it and the others compiled into it."""

    _root: str | None = None

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(self.root(), self.get_suitable_cache_subpath(py_file))

    @classmethod
    def root(cls) -> str:
        if cls._root is None:
            cls._root = tempfile.mkdtemp(prefix="crfsdca-numba-")
            atexit.register(shutil.rmtree, cls._root, True)
        return cls._root

    def get_cache_path(self):
        return self._cache_path


class ShippedKernels(_LocatorBase):
    """numba's own choice of cache folder for a kernel of this package (or a
    :class:`TemporaryFolder`), seeded with the kernels the wheel ships."""

    def __init__(self, inner):
        self._inner = inner

    def ensure_cache_path(self):
        self._inner.ensure_cache_path()

    def get_cache_path(self):
        return self._inner.get_cache_path()

    def get_source_stamp(self):
        return self._inner.get_source_stamp()

    def get_disambiguator(self):
        return self._inner.get_disambiguator()

    @classmethod
    def from_function(cls, py_func, py_file):
        if not os.path.abspath(py_file).startswith(PACKAGE + os.sep):
            return None
        inner = _numba_locator(py_func, py_file)
        if inner is None:
            try:
                inner = TemporaryFolder.from_function(py_func, py_file)
            except OSError:  # no temporary folder either
                inner = None
            if inner is None:
                return None
        shipped = os.path.join(os.path.dirname(os.path.abspath(py_file)), "__pycache__")
        target = os.path.abspath(inner.get_cache_path())
        if target != shipped and os.path.exists(MARKER):
            seed(shipped, target)
        return cls(inner)


def _numba_locator(py_func, py_file):
    """The locator numba itself would choose, None where none can write."""
    for locator_class in _IMPL._locator_classes:
        if locator_class is not ShippedKernels:
            locator = locator_class.from_function(py_func, py_file)
            if locator is not None:
                return locator
    return None


def persistent() -> bool:
    """Whether numba has a writable folder of its own, kept between processes."""
    return _numba_locator(persistent, __file__) is not None


def install() -> bool:
    """Put :class:`ShippedKernels` first among numba's locators; returns whether kernels
    can be cached at all (``cache=`` of every kernel), warning once when numba has no
    writable folder of its own."""
    if ShippedKernels not in _IMPL._locator_classes:
        _IMPL._locator_classes.insert(0, ShippedKernels)
    if persistent():
        return True
    temporary = ShippedKernels.from_function(install, __file__) is not None
    where = ("are kept in a temporary folder for this process only" if temporary
             else "compile in every process")
    warnings.warn_explicit(  # one line: no source line to show under it
        "no writable place for numba's cache (the package folder, NUMBA_CACHE_DIR="
        f"{os.environ.get('NUMBA_CACHE_DIR', '(unset)')}, the user's cache folder): kernels "
        f"{where}; set NUMBA_CACHE_DIR to a writable folder to keep them",
        RuntimeWarning, "crfsdca", 0)
    return temporary


def write_marker() -> None:
    """:data:`MARKER`, written by the wheel build once the kernels are compiled: what
    they are for (a kernel loads only where all of it matches)."""
    import platform
    import sys

    import llvmlite.binding as ll
    import numba

    features = ll.get_host_cpu_features().flatten()
    with open(MARKER, "w") as f:
        f.write(f"crfsdca {__version__}\nnumba {numba.__version__}\n"
                f"python {platform.python_version()} ({sys.implementation.cache_tag})\n"
                f"machine {platform.machine()}\ncpu {ll.get_host_cpu_name()}\n"
                f"features {features}\n")
