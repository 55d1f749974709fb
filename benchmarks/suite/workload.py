"""What the suite measures on: sklearn-crfsuite's tutorial items, and the calls it times.

The data are the tutorial's: CoNLL-2002 Dutch (``ned.train``, ``ned.testb``) with its
``word2features`` (``crfsdca.data.tutorial``), read from the vendored corpus. The calls
are declared once here and named in each benchmark's ``extra_info``, so that a stored
result says what ran.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONLL2002 = ROOT / "data" / "raw" / "conll2002.zip"
CRFSUITE_SDIST = Path(os.environ.get(
    "CRFSUITE_SDIST", ROOT / ".venv" / "sdist" / "python_crfsuite-0.9.12.tar.gz"))
"""python-crfsuite's sdist, whose sources build CRFsuite's ``crfsuite`` program
(``make test`` downloads it; the tag benchmark is skipped without it)."""

TUTORIAL_CALL = {"algorithm": "lbfgs", "c1": 0.1, "c2": 0.1, "max_iterations": 100,
                 "all_possible_transitions": True}
"""sklearn-crfsuite's tutorial call: the reference of the fit."""
DEFAULT_FIT = {k: v for k, v in TUTORIAL_CALL.items() if k != "algorithm"}
"""crfsdca's fit with the tutorial's arguments and its own algorithm (SDCA-GAP, stopping
at its default certified relative gap)."""


def sentences(member: str, limit: int | None = None):
    from crfsdca.data.tutorial import iob_sents

    return iob_sents(member, CONLL2002, limit=limit)


def items(member: str, limit: int | None = None):
    """(X, y) of the tutorial's features on ``member`` of CoNLL-2002."""
    from crfsdca.data.tutorial import sent2features, sent2labels

    sents = sentences(member, limit)
    return [sent2features(s) for s in sents], [sent2labels(s) for s in sents]


def tutorial_f1(crf, X, y) -> float:
    """The tutorial's score: weighted F1 over the labels other than ``O``."""
    from crfsdca import metrics

    labels = [label for label in crf.classes_ if label != "O"]
    return float(metrics.flat_f1_score(y, crf.predict(X), average="weighted",
                                       labels=labels))


def problem_of(X, y, c2: float):
    """The training problem ``crfsdca.CRF(c2=c2, all_possible_transitions=True)`` solves
    on (X, y), built by the estimator's own steps (encode, CRFsuite's feature set)."""
    from crfsdca.data.items import Vocabulary, encode
    from crfsdca.training.feature_set import crfsuite_feature_mask
    from crfsdca.training.learn import make_problem

    attributes, labels = Vocabulary(()), Vocabulary(())
    train, _, zero_entries = encode(X, y, attributes, labels, grow=True)
    A, K = len(attributes), len(labels)
    mask = crfsuite_feature_mask(train, A, K, False, True, 0.0, False, zero_entries)
    return make_problem(train, A, K, labels.strings(), c2, mask)


def seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def alternate(benchmark, ours, reference, name: str, rounds: int):
    """Time ``ours`` with ``benchmark`` (pytest-benchmark's statistics) and ``reference``
    right before it in every round, so that both meet the same state of the machine.
    The reference's seconds and the ratio of the medians go to ``extra_info``; returns
    (ours' last result, the reference's last result)."""
    ref_seconds: list[float] = []
    last = {}

    def setup():
        t0 = time.perf_counter()
        last["reference"] = reference()
        ref_seconds.append(time.perf_counter() - t0)

    result = benchmark.pedantic(ours, setup=setup, rounds=rounds)
    ref_median = statistics.median(ref_seconds)
    benchmark.extra_info["reference"] = name
    benchmark.extra_info["reference_seconds"] = [round(s, 6) for s in ref_seconds]
    benchmark.extra_info["reference_median"] = round(ref_median, 6)
    if benchmark.stats is not None:  # None under --benchmark-disable
        ours_median = benchmark.stats.stats.median
        benchmark.extra_info["speedup"] = round(ref_median / ours_median, 3)
    return result, last["reference"]


def crfsuite_program(workdir: Path) -> Path | None:
    """CRFsuite's ``crfsuite`` program built from python-crfsuite's sdist in ``workdir``,
    or None where the sdist or a C compiler is missing."""
    from crfsdca.errors import CrfsdcaError
    from crfsdca.reproduction.crfsuite_baseline import build_program

    if not CRFSUITE_SDIST.exists() or not (shutil.which("gcc") or shutil.which("cc")):
        return None
    try:
        return build_program(CRFSUITE_SDIST, workdir)
    except CrfsdcaError:
        return None


def write_crfsuite_data(path: Path, X, y) -> None:
    """X (lists of flat dicts) and y in CRFsuite's data format, each entry as both tools
    read it (``key:value`` of weight 1 for a str value, else ``key`` of that weight)."""
    from crfsdca.data.crfsuite_format import write_sequences
    from crfsdca.data.items import pair_names, pair_weights

    def flat(item) -> list:
        keys, values = list(item), list(item.values())
        return list(zip(pair_names(keys, values), pair_weights(values), strict=True))

    with open(path, "w", encoding="utf-8") as f:
        write_sequences(f, [[flat(item) for item in xseq] for xseq in X], y)
