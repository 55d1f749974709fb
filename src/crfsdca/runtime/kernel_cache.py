"""Where numba keeps the package's compiled kernels, and the kernels the wheel ships.

numba's cache looks in ``$NUMBA_CACHE_DIR``, else in the package's ``__pycache__``
folders when they can be written, else in the user's cache folder. A wheel built by
``setup.py`` carries kernels compiled when it was built (``crfsdca precompile`` in the
package's ``__pycache__`` folders, and :data:`MARKER` beside them): numba loads them
where the package is installed in a writable place and the processor is the build
machine's (numba keys each kernel by processor name and features, numba version and a
hash of its source). The wheel also ships each kernel compiled for the standard
microarchitecture levels of its architecture (:mod:`.cpu_levels`), which
:mod:`.level_cache` loads on other processors; what none of them covers compiles on its
first call as always, after one line that says so (:func:`compile_notice`).

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
import platform
import shutil
import sys
import tempfile
import types
import warnings

import llvmlite.binding as ll
import numba
from numba.core import caching, codegen, config

from .. import __version__
from . import cpu_levels, level_cache

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The package's folder (this module is in its runtime/ folder)."""
MARKER = os.path.join(PACKAGE, "kernels-shipped.txt")
"""Written by the wheel build beside the kernels it compiled: what they were built for."""

_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # numba < 0.62
_LocatorBase = caching._CacheLocator


class _Opaque:
    """Whatever object an index's keys hold (numba types), read without importing it."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass


class _StampReader(pickle.Unpickler):
    """Unpickles an index's (stamp, overloads) with every class or function the keys
    name as :class:`_Opaque`: the signatures name the package's own types, whose modules
    may be half-imported when the index is read (it is read as they import)."""

    def find_class(self, module, name):
        return _Opaque


def _index_stamp(path: str):
    """(numba version, source stamp) of a cache index, None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            version = pickle.load(f)
            stamp, _ = _StampReader(f).load()
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
    same source and numba version (once per pair of folders in a process). Kernels of
    another numba than this process's are never copied: numba would not load them, and
    they would replace what it compiled here."""
    if (shipped, target) in _seeded:
        return
    _seeded.add((shipped, target))
    for index in glob.glob(os.path.join(glob.escape(shipped), "*.nbi")):
        name = os.path.basename(index)
        here = os.path.join(target, name)
        stamp = _index_stamp(index)
        if stamp is None or stamp[0] != numba.__version__ or _index_stamp(here) == stamp:
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
    """Put :class:`ShippedKernels` first among numba's locators and the package's kernels
    in a :class:`~.level_cache.LevelCache`; returns whether kernels can be cached at all
    (``cache=`` of every kernel), warning once when numba has no writable folder of its
    own."""
    if ShippedKernels not in _IMPL._locator_classes:
        _IMPL._locator_classes.insert(0, ShippedKernels)
    level_cache.install(PACKAGE, compile_notice)
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


def read_marker() -> dict[str, str] | None:
    """:data:`MARKER`'s fields (``numba``, ``python``, ``cpu``, ``levels``...), None
    where the package ships no kernels."""
    try:
        with open(MARKER) as f:
            return dict(line.rstrip("\n").partition(" ")[::2] for line in f if line.strip())
    except OSError:
        return None


_noticed = False


def compile_notice(magic: tuple) -> None:
    """Before one of the package's kernels compiles in a package that ships kernels: one
    line, once per process, saying why none of the shipped ones served (``magic``: numba's
    (triple, processor name, features) of this process)."""
    global _noticed
    if _noticed:
        return
    _noticed = True
    shipped = read_marker()
    if shipped is None:
        return
    levels = shipped.get("levels", "").split()
    if shipped.get("numba") != numba.__version__:
        why = f"the wheel's are numba {shipped.get('numba')}'s, this is numba {numba.__version__}"
    elif shipped.get("python") != sys.implementation.cache_tag:
        why = f"the wheel's are {shipped.get('python')}'s, this is {sys.implementation.cache_tag}"
    elif (magic[1], magic[2]) != (shipped.get("cpu"), shipped.get("features")) and not \
            set(levels) & set(cpu_levels.runnable(magic[0], magic[2])):
        why = (f"the wheel's are for {', '.join([shipped.get('cpu', '?'), *levels])}; this "
               f"processor ({magic[1]}) runs none of those")
    else:
        why = "a kernel the wheel does not ship"
    warnings.warn_explicit(  # one line: no source line to show under it
        f"crfsdca: numba compiles kernels on first use here, once (up to a minute; later "
        f"processes load them from its cache): {why}", RuntimeWarning, "crfsdca", 0)


def _indexes(folder: str) -> list[str]:
    return sorted(glob.glob(os.path.join(glob.escape(folder), "**", "*.nbi"),
                            recursive=True))


def missing_levels(levels: list[str], folder: str | None = None) -> list[str]:
    """Kernels in the cache folders under ``folder`` (the package's) compiled for a
    processor but not for each of ``levels``: "index file: signature lacks level"."""
    folder = folder or PACKAGE
    missing = []
    for index in _indexes(folder):
        with open(index, "rb") as f:
            pickle.load(f)  # numba's version
            _, overloads = pickle.loads(f.read())
        host, compiled = set(), set()  # a level is compiled without a feature string
        for sig, (_, cpu, features), hashes in overloads:
            (host if features else compiled).add((sig, hashes, "" if features else cpu))
        for sig, hashes, _ in sorted(host, key=str):
            for level in levels:
                if (sig, hashes, level) not in compiled:
                    missing.append(f"{os.path.relpath(index, folder)}: {sig} lacks {level}")
    return missing


def stamps_follow_content() -> bool:
    """Whether numba's cache stamps a kernel's source by its content. Older numba (0.59)
    stamps it by the file's time, which an install sets anew: kernels shipped in a wheel
    would never load there."""
    stamp = caching._SourceFileBackedLocatorMixin.get_source_stamp
    with tempfile.TemporaryDirectory(prefix="crfsdca-stamp-") as folder:
        source = types.SimpleNamespace(_py_file=os.path.join(folder, "k.py"))
        with open(source._py_file, "w") as f:
            f.write("x = 1\n")
        os.utime(source._py_file, (1e9, 1e9))
        before = stamp(source)
        os.utime(source._py_file, (2e9, 2e9))
        return stamp(source) == before


def write_marker(levels: list[str]) -> None:
    """:data:`MARKER`, written by the wheel build once the kernels are compiled: what
    they are for (a kernel loads only where all of it matches). Raises where a kernel
    compiled for this processor lacks one of ``levels`` (names, or ``all``), and where
    numba stamps sources by their file times (:func:`stamps_follow_content`)."""
    if not stamps_follow_content():
        raise RuntimeError(f"numba {numba.__version__} stamps its cache by the sources' file "
                           f"times, which an install sets anew: the wheel's kernels would "
                           f"never load; build with a newer numba (isolation installs the "
                           f"newest) or set CRFSDCA_PRECOMPILE=0")
    levels = cpu_levels.named(levels, ll.get_process_triple())
    missing = missing_levels(levels)
    if missing:
        raise RuntimeError(f"{len(missing)} kernels lack a level, first: {missing[0]}")
    with open(MARKER, "w") as f:
        f.write(f"crfsdca {__version__}\nnumba {numba.__version__}\n"
                f"python {sys.implementation.cache_tag}\nversion {platform.python_version()}\n"
                f"machine {platform.machine()}\ncpu {config.CPU_NAME or ll.get_host_cpu_name()}"
                f"\nfeatures {codegen.get_host_cpu_features()}\nlevels {' '.join(levels)}\n")
