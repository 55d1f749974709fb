"""CRFsuite (python-crfsuite) trained on exactly our objective, for side-by-side benchmarks.

CRFsuite minimizes sum_i NLL_i + c1 ||w||_1 + c2 ||w||^2, so c2 = lambda n / 2 and
c1 = l1 n give n P(w) (with c1 > 0 its L-BFGS is OWL-QN). Every
attribute-label pair and every transition is a feature (``feature.possible_states=1``,
``feature.possible_transitions=1``, ``feature.minfreq=0``). CRFsuite has no
start/end weights: our bias, first and last weights are the state weights of three extra
attributes, on every token, on the first and on the last token. The attributes given to
CRFsuite are read back from our HDF5 file, so both tools see the same problem.

The loss of each iteration (n P(w_k)) comes from ``Trainer.on_iteration`` (needs
``verbose=True``); ``info['time']`` is CPU time, so wall time is taken here, from the end
of CRFsuite's feature generation (``on_prepared``) to each iteration.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import numpy as np

from ..errors import CrfsdcaError
from ..solvers.base import Problem
from ..solvers.monitor import TRACE_COLUMNS

BIAS, FIRST, LAST = "__bias__", "__first__", "__last__"


def _pycrfsuite():
    try:
        import pycrfsuite  # optional dependency: python-crfsuite (bench extra)
    except ImportError:  # pragma: no cover - the bench extra is installed by the Makefile
        raise CrfsdcaError(
            "python-crfsuite is not installed: pip install 'crfsdca[bench]'") from None
    return pycrfsuite


def sequence_items(problem: Problem, i: int) -> tuple[list, list[str]]:
    """CRFsuite's (items, labels) of training sequence i: an item is a list of attribute
    names (binary attributes) or a dict of attribute values."""
    seq = problem.train
    names = problem.label_names or tuple(str(k) for k in range(problem.n_labels))
    start, stop = int(seq.offsets[i]), int(seq.offsets[i + 1])
    xseq = []
    for tok in range(start, stop):
        lo, hi = seq.attr_indptr[tok], seq.attr_indptr[tok + 1]
        attrs = [f"a{a}" for a in seq.attr_indices[lo:hi]]
        attrs.append(BIAS)
        if tok == start:
            attrs.append(FIRST)
        if tok == stop - 1:
            attrs.append(LAST)
        if not seq.binary:
            attrs = dict(zip(attrs, [*seq.attr_values[lo:hi].tolist(), 1.0, 1.0, 1.0],
                             strict=False))
        xseq.append(attrs)
    return xseq, [names[y] for y in seq.labels[start:stop]]


def trainer_params(problem: Problem, max_iterations: int, num_memories: int = 6,
                   epsilon: float = 1e-12, delta: float = 0.0) -> dict:
    """CRFsuite's options for our objective. It stops at ``max_iterations``, at
    ||g|| <= ``epsilon`` max(1, ||w||), or when the objective fell by less than ``delta``
    (relative) over the last ``period`` = 10 iterations (0: never)."""
    return {
        "c1": problem.l1 * problem.n,
        "c2": problem.lam * problem.n / 2.0,
        "feature.possible_states": True,
        "feature.possible_transitions": True,
        "feature.minfreq": 0.0,
        "max_iterations": int(max_iterations),
        "num_memories": int(num_memories),
        "epsilon": float(epsilon),
        "delta": float(delta),
        "period": 10,
    }


def tracing_trainer(rows: list[dict]):
    """A quiet python-crfsuite Trainer that appends one row per L-BFGS iteration to
    ``rows``: wall seconds since the end of feature generation, loss, line-search trials,
    CPU seconds. (Its ``message`` must stay: it feeds the events these handlers receive.)"""
    pycrfsuite = _pycrfsuite()
    clock = {"t0": None}

    class Tracing(pycrfsuite.Trainer):
        """Records iterations; prints nothing (pycrfsuite's handlers print every log line)."""

        def on_start(self, log):
            pass

        def on_featgen_progress(self, log, percent):
            pass

        def on_featgen_end(self, log):
            pass

        def on_prepare_error(self, log):
            raise CrfsdcaError(f"CRFsuite could not prepare the training data: {log}")

        def on_optimization_end(self, log):
            pass

        def on_end(self, log):
            pass

        def on_prepared(self, log):
            clock["t0"] = time.perf_counter()

        def on_iteration(self, log, info):
            rows.append({"seconds": time.perf_counter() - clock["t0"], "loss": info["loss"],
                         "evals": info.get("linesearch_trials", 1),
                         "cpu": info.get("time", math.nan)})

    trainer = Tracing(verbose=True)
    trainer.select("lbfgs", "crf1d")
    return trainer


def train_crfsuite(problem: Problem, model_path: str | Path, max_iterations: int = 1000,
                   num_memories: int = 6, epsilon: float = 1e-12,
                   delta: float = 0.0) -> list[dict]:
    """Train CRFsuite's L-BFGS; returns one row per iteration (loss, wall seconds, evals)."""
    rows: list[dict] = []
    trainer = tracing_trainer(rows)
    for i in range(problem.n):
        trainer.append(*sequence_items(problem, i))
    trainer.set_params(trainer_params(problem, max_iterations, num_memories, epsilon, delta))
    trainer.train(str(model_path))
    return rows


def weights_from_model(model_path: str | Path, problem: Problem) -> np.ndarray:
    """Our weight vector from a CRFsuite model (features it never created stay 0).

    pycrfsuite reads the weights from CRFsuite's text dump, which prints them with six
    decimals: our P at these weights matches CRFsuite's loss / n up to ||grad P|| * 1e-6,
    which is tight near the optimum and looser early in a run.
    """
    pycrfsuite = _pycrfsuite()
    layout = problem.layout
    K = problem.n_labels
    names = problem.label_names or tuple(str(k) for k in range(K))
    label_id = {name: k for k, name in enumerate(names[:K])}
    w = layout.zeros()
    E, B, W = layout.emission(w), layout.bias(w), layout.transition(w)
    tagger = pycrfsuite.Tagger()
    tagger.open(str(model_path))
    try:
        info = tagger.info()
    finally:
        tagger.close()
    column = {BIAS: 0, FIRST: 1, LAST: 2}
    for (attr, label), value in info.state_features.items():
        k = label_id[label]
        if attr in column:
            B[k, column[attr]] = value
        else:
            E[int(attr[1:]), k] = value
    for (a, b), value in info.transitions.items():
        W[label_id[a], label_id[b]] = value
    return w


def trace_rows(iterations: list[dict], n: int) -> list[dict]:
    """CRFsuite's iterations as trace rows with our columns (an epoch is one iteration;
    each line-search trial is one full pass, n forward-backwards)."""
    rows, evals = [], 0
    for k, it in enumerate(iterations, start=1):
        evals += it["evals"]
        row = dict.fromkeys(TRACE_COLUMNS, math.nan)
        row.update(epoch=float(k), oracle_fb=evals * n, oracle_fwd=0,
                   oracle_epochs=float(evals), updates=k, update_epochs=k / n, ls_evals=evals,
                   seconds=it["seconds"], primal=it["loss"] / n, cpu_seconds=it["cpu"])
        rows.append(row)
    return rows


class FinishedRun:
    """A finished CRFsuite run presented through the Solver interface, for ``save_run``."""

    name = "crfsuite"

    def __init__(self, problem: Problem, w: np.ndarray, config: dict):
        self.problem, self._w, self._config = problem, w, config

    def weights(self) -> np.ndarray:
        return self._w

    def config(self) -> dict:
        return self._config

    def memory_bytes(self) -> dict:
        return {}


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def _extract_within(tar: tarfile.TarFile, into: Path) -> None:
    """Every member of ``tar`` into ``into``, none outside it, where this Python lacks
    tarfile's ``data`` filter (3.10 before 3.10.12, 3.11 before 3.11.4): a member with an
    absolute name, a ``..`` in its name, a link whose target leaves ``into`` or a device
    is refused. Each member's place is checked with the links already unpacked resolved,
    and every link once more at the end, so that no two links combine to point out."""
    root = os.path.realpath(into)
    os.makedirs(root, exist_ok=True)
    # checked here: no filter of tarfile's on top (3.12's warn without one)
    checked = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
    for member in tar.getmembers():
        name = member.name
        if os.path.isabs(name) or ".." in Path(name).parts:
            raise CrfsdcaError(f"refuses {name!r}: it would be written outside {into}")
        place = os.path.realpath(os.path.join(root, name))
        if not _inside(place, root):
            raise CrfsdcaError(f"refuses {name!r}: it would be written outside {into}")
        if member.issym() or member.islnk():
            base = os.path.dirname(place) if member.issym() else root
            target = os.path.realpath(os.path.join(base, member.linkname))
            if os.path.isabs(member.linkname) or not _inside(target, root):
                raise CrfsdcaError(f"refuses {name!r}: a link to {member.linkname!r}, "
                                   f"outside {into}")
        elif not (member.isfile() or member.isdir()):
            raise CrfsdcaError(f"refuses {name!r}: neither a file, a folder nor a link")
        member.mode &= 0o755  # no set-user-id, set-group-id, sticky or group/other writes
        tar.extract(member, root, set_attrs=not member.issym(), **checked)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            link = os.path.join(folder, name)
            if os.path.islink(link) and not _inside(os.path.realpath(link), root):
                raise CrfsdcaError(f"refuses {os.path.relpath(link, root)!r}: a link "
                                   f"outside {into}")


def _unpacked_sdist(sdist: Path, into: Path) -> Path | None:
    """The directory of python-crfsuite's sources that holds its bundled ``crfsuite/`` and
    ``liblbfgs/`` (the .tar.gz unpacked into ``into`` first, nothing outside it: tarfile's
    ``data`` filter where this Python has it, :func:`_extract_within` where not)."""
    source = Path(sdist)
    if source.is_file():
        with tarfile.open(source) as tar:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4
                try:
                    tar.extractall(into, filter="data")
                except tarfile.FilterError as e:
                    raise CrfsdcaError(f"{sdist}: refuses to unpack it: {e}") from None
            else:
                try:
                    _extract_within(tar, into)
                except CrfsdcaError as e:
                    raise CrfsdcaError(f"{sdist}: {e}") from None
        source = into
    found = sorted(source.glob("**/crfsuite/frontend/tag.c"))
    return found[0].parents[2] if found else None


def build_program(sdist: str | Path, workdir: str | Path, cc: str | None = None) -> Path:
    """CRFsuite's own ``crfsuite`` program (``learn``, ``tag``, ``dump``), compiled in
    ``workdir`` from the sources python-crfsuite's sdist bundles (``pip download
    --no-binary python-crfsuite --no-deps python-crfsuite==0.9.12``; the .tar.gz or its
    unpacked folder): the reference the tests and benchmarks compare ``crfsdca tag`` and
    model files with. Takes a few seconds with gcc."""
    cc = cc or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise CrfsdcaError("no C compiler (gcc or cc) to build CRFsuite's program")
    work = Path(workdir)
    root = _unpacked_sdist(Path(sdist), work)
    if root is None:
        raise CrfsdcaError(f"{sdist}: no crfsuite/frontend sources in it")
    c, lb = root / "crfsuite", root / "liblbfgs"
    sources = [*(c / "frontend").glob("*.c"), *(c / "lib/crf/src").glob("*.c"),
               c / "lib/cqdb/src/cqdb.c", c / "lib/cqdb/src/lookup3.c", lb / "lib/lbfgs.c"]
    exe = work / "crfsuite"
    cmd = [cc, "-O2", "-std=c99", "-D_POSIX_C_SOURCE=200112L", "-w", f"-I{c / 'include'}",
           f"-I{c / 'lib/cqdb/include'}", f"-I{lb / 'include'}", "-o", str(exe),
           *map(str, sources), "-lm"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise CrfsdcaError(f"building crfsuite failed:\n{done.stderr[-3000:]}")
    return exe
