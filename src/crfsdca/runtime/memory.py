"""Memory: every large allocation estimated from the data sizes, checked before it is made.

One place for the formulas: the ``train`` and ``optimum`` commands and the featurizer call
:func:`check` before they allocate (a clear error with the estimate and the way out,
instead of a ``MemoryError`` traceback or the kernel's out-of-memory killer while pages
fill), and the workflow asks its jobs' memory (``mem_mb``) from a solver's
:meth:`~crfsdca.solvers.registry.SolverConfig.train_job_bytes`,
:func:`optimum_job_bytes` and :func:`crfsuite_job_bytes`. Each solver's state is declared
with it in :mod:`crfsdca.solvers.registry` (a test holds it to the solver's own
``memory_bytes()``).

What is available is the smallest of the machine's available memory, the cgroup limit
(v1 or v2), the address-space ulimit and SLURM's allocation, less what is in use.
Pure Python (h5py only to read sizes), so the workflow imports it.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
import os
import re
import resource
from dataclasses import dataclass
from pathlib import Path

from ..errors import ResourceError

F64 = 8
MIB = 2**20
BASE_JOB_BYTES = 800 * MIB
"""A job's process besides its data and solver: Python, numpy, numba, scipy."""

WORK_VECTORS = 8
"""Float64 vectors of length d a training job holds besides the solver's state (the
monitor's gradient-free primal, predictions, copies of w)."""

FEATURIZE_BYTES_PER_ENTRY = 160
"""Peak bytes per (token, attribute) entry while featurizing: the Python lists and
vocabulary, then the numpy index arrays (measured 92-133 on the four corpora, 140 on
random text whose every other attribute is new)."""


@dataclass(frozen=True)
class DataSizes:
    """The sizes of a featurized dataset that the memory of a job depends on."""

    n: int  # training sequences
    N: int  # training tokens
    K: int  # labels of the model
    A: int  # attributes
    nnz: int  # training (token, attribute) entries
    test_N: int = 0
    test_nnz: int = 0
    features: int = 0  # weights of the feature set (0: all of them, the paper's model)
    E: int = 0  # transition attributes (W_B's rows, K x K each)

    @property
    def dim(self) -> int:
        return self.A * self.K + 3 * self.K + self.K * self.K + self.E * self.K * self.K

    @property
    def feature_dim(self) -> int:
        """The weights a solver that works on the feature set alone keeps (L-BFGS)."""
        return self.features or self.dim

    @classmethod
    def of_problem(cls, problem) -> DataSizes:
        """Sizes of a :class:`~crfsdca.solvers.base.Problem` (its training subset)."""
        t, test = problem.train, problem.test
        mask = problem.feature_mask
        return cls(t.n_sequences, t.n_tokens, problem.n_labels, problem.n_attributes, t.nnz,
                   test.n_tokens if test is not None else 0, test.nnz if test is not None else 0,
                   0 if mask is None or mask.all() else int(mask.sum()),
                   problem.n_transition_attributes)

    @classmethod
    def of_file(cls, path: str | os.PathLike) -> DataSizes:
        """Sizes of a featurized ``.h5`` file, from its shapes (reads no array)."""
        import h5py  # lazy: the workflow imports this module; only of_file reads HDF5

        with h5py.File(path, "r") as f:
            test = f["test"] if "test" in f else None
            return cls(f["train/offsets"].shape[0] - 1, f["train/labels"].shape[0],
                       int(f.attrs["n_labels"]), int(f.attrs["n_attributes"]),
                       f["train/attr_indices"].shape[0],
                       test["labels"].shape[0] if test is not None else 0,
                       test["attr_indices"].shape[0] if test is not None else 0)


def dataset_bytes(s: DataSizes) -> int:
    """A loaded dataset: the arrays of both splits, the radii and the vocabularies (Python
    strings, about 100 bytes each)."""
    arrays = (8 * (s.n + 1) + 4 * s.N + 8 * (s.N + 1) + 4 * s.nnz + 8 * s.n
              + 4 * s.test_N + 8 * (s.test_N + 1) + 4 * s.test_nnz + 8 * s.test_N)
    return arrays + 100 * (s.A + s.K)


def optimum_bytes(maxcor: int, s: DataSizes) -> int:
    """The package's L-BFGS (2 m d floats of history), or scipy's L-BFGS-B (``--method
    scipy``: (2 m + 5) d floats of workspace) and then ours as its polish, never at once;
    plus about ten d-vectors (iterates, gradients, the best points)."""
    return F64 * s.dim * (2 * int(maxcor) + 12)


def optimum_job_bytes(maxcor: int, s: DataSizes) -> int:
    return BASE_JOB_BYTES + dataset_bytes(s) + optimum_bytes(maxcor, s)


def crfsuite_job_bytes(num_memories: int, s: DataSizes) -> int:
    """A CRFsuite job: its L-BFGS (2 m + 8 vectors of d), its feature table (32 bytes a
    feature), its copy of the data (16 bytes an entry, 3 bias entries a token)."""
    entries = s.nnz + 3 * s.N + s.test_nnz + 3 * s.test_N
    return (BASE_JOB_BYTES + dataset_bytes(s) + F64 * s.dim * (2 * int(num_memories) + 8)
            + 32 * s.dim + 16 * entries)


def featurize_bytes(entries: int) -> int:
    """The featurizer's peak for ``entries`` (token, attribute) pairs (an upper bound: the
    tokens times the templates)."""
    return FEATURIZE_BYTES_PER_ENTRY * int(entries)


# ----------------------------------------------------------------------------- available

def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _status_bytes(field: str) -> int | None:
    """VmSize, VmRSS... of this process (bytes), from /proc/self/status."""
    text = _read(Path("/proc/self/status")) or ""
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return None


def limit_address_space(extra: int) -> None:
    """Let this process allocate at most ``extra`` bytes more than it holds now (the
    address-space limit, ``ulimit -v``): past it, an allocation fails with MemoryError
    instead of filling the machine. A child that reads an untrusted file sets it."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    soft = (_status_bytes("VmSize") or 0) + extra
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _meminfo_available() -> int | None:
    text = _read(Path("/proc/meminfo")) or ""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _cgroup_room() -> int | None:
    """Limit minus usage of this process's memory cgroup and its ancestors (v2 or v1)."""
    text = _read(Path("/proc/self/cgroup"))
    if text is None:
        return None
    rooms = []
    for line in text.splitlines():
        _, controllers, rel = line.split(":", 2)
        if controllers == "":  # v2
            root, limit_name, usage_name = Path("/sys/fs/cgroup"), "memory.max", \
                "memory.current"
        elif "memory" in controllers.split(","):  # v1
            root, limit_name, usage_name = Path("/sys/fs/cgroup/memory"), \
                "memory.limit_in_bytes", "memory.usage_in_bytes"
        else:
            continue
        here = root / rel.lstrip("/")
        if not here.is_dir():  # a container sees its own cgroup as the root
            here = root
        while True:
            limit, usage = _read(here / limit_name), _read(here / usage_name)
            if limit and limit.isdigit() and int(limit) < 2**60 and usage and usage.isdigit():
                rooms.append(int(limit) - int(usage) + _inactive_file(here))
            if here == root:
                break
            here = here.parent
    return min(rooms) if rooms else None


def _inactive_file(cgroup: Path) -> int:
    """The cgroup's inactive file cache (``memory.stat``): counted in its usage, but the
    first memory the kernel takes back under its limit (pages of files read once, the
    written pages of a store in a file), as the working set of docker and Kubernetes
    leaves it out."""
    stat = _read(cgroup / "memory.stat") or ""
    fields = dict(line.split()[:2] for line in stat.splitlines() if len(line.split()) >= 2)
    value = fields.get("total_inactive_file", fields.get("inactive_file", "0"))
    return int(value) if value.isdigit() else 0


def _slurm_room() -> int | None:
    """SLURM's allocation (--mem or --mem-per-cpu, in MB) less this process's RSS."""
    per_node = os.environ.get("SLURM_MEM_PER_NODE")
    per_cpu = os.environ.get("SLURM_MEM_PER_CPU")
    cpus = os.environ.get("SLURM_CPUS_ON_NODE", "1")
    try:
        if per_node:
            limit = int(per_node) * MIB
        elif per_cpu:
            limit = int(per_cpu) * int(cpus) * MIB
        else:
            return None
    except ValueError:
        return None
    return limit - (_status_bytes("VmRSS") or 0)


def _ulimit_room() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    return soft - (_status_bytes("VmSize") or 0)


def _data_room() -> int | None:
    """What ``ulimit -d`` (RLIMIT_DATA: private writable mappings, since Linux 4.7) leaves;
    a file mapped shared (the store in ``store_dir``) is not counted there."""
    soft, _ = resource.getrlimit(resource.RLIMIT_DATA)
    if soft == resource.RLIM_INFINITY:
        return None
    return soft - (_status_bytes("VmData") or 0)


_BUDGET: contextvars.ContextVar[int | None] = contextvars.ContextVar("max_memory",
                                                                     default=None)
"""The ``max_memory`` of the fit running in this context (bytes of the whole process)."""

_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kmgt]?)(i?b?)\s*",
                   re.IGNORECASE)


def parse_size(value, name: str) -> int | None:
    """``value`` as bytes: None, a positive number of bytes, or a string such as ``"4G"``,
    ``"512MiB"``, ``"1.5 GB"`` (K, M, G, T are powers of 1024); ValueError otherwise."""
    if value is None:
        return None
    number, unit = value, ""
    if isinstance(value, str):
        match = _SIZE.fullmatch(value)
        if match is None:
            raise ValueError(f"{name} must be a number of bytes or a size such as '4G' or "
                             f"'512MiB', got {value!r}")
        number, unit = float(match.group(1)), match.group(2).lower()
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number of bytes or a size such as '4G', got "
                         f"{value!r}")
    size = float(number) * 1024 ** " kmgt".index(unit or " ")
    if not (math.isfinite(size) and size >= 1):
        raise ValueError(f"{name} must be at least one byte, got {value!r}")
    return int(size)


@contextlib.contextmanager
def budget(max_bytes: int | None):
    """Within the block, this context's process may hold at most ``max_bytes`` (None: no
    bound of its own): ``available`` counts it among the limits, less what the process
    holds (its resident memory)."""
    token = _BUDGET.set(max_bytes)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _budget_room() -> int | None:
    cap = _BUDGET.get()
    return None if cap is None else cap - (_status_bytes("VmRSS") or 0)


def available() -> tuple[int | None, str]:
    """(bytes this process may still allocate, where the bound comes from); (None, "")
    when nothing is known (not Linux)."""
    rooms = {"available memory": _meminfo_available(), "cgroup limit": _cgroup_room(),
             "SLURM allocation": _slurm_room(), "ulimit -v": _ulimit_room(),
             "ulimit -d": _data_room(), "max_memory": _budget_room()}
    known = {k: v for k, v in rooms.items() if v is not None}
    if not known:
        return None, ""
    where = min(known, key=known.get)
    return max(known[where], 0), where


def gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / MIB:.0f} MiB"


def fits(needed: int) -> bool:
    """Whether ``needed`` bytes fit in what this process may still allocate (True where
    nothing is known)."""
    room, _ = available()
    return room is None or needed <= room


def largest(parts: dict[str, int], count: int) -> list[tuple[str, int]]:
    """The ``count`` largest of a state's ``parts`` (name -> bytes), largest first."""
    return sorted(parts.items(), key=lambda kv: -kv[1])[:count]


def check(needed: int, what: str, way_out: str, parts: dict[str, int] | None = None) -> None:
    """Raise ResourceError if ``needed`` bytes exceed what is available, naming ``what``
    needs it, its largest ``parts``, the limit and ``way_out``."""
    room, where = available()
    if room is None or needed <= room:
        return
    detail = ""
    if parts:
        detail = " (" + ", ".join(f"{k} {gib(v)}" for k, v in largest(parts, 2)) + ")"
    raise ResourceError(f"{what} needs about {gib(needed)}{detail}, more than the "
                        f"{gib(room)} left ({where}); {way_out}")
