"""The n best labelings and constrained decoding against plain Viterbi (issue 48).

Question: What do the n best (k = 5) and decoding under BIO constraints cost next to
    ``predict``? (The issue's bounds: the n best at most 3x, constrained at most 1.2x.)
Date: 2026-11-27
Commit: 8046d61
Answer: Within both, on a 2-core AMD EPYC at load average 9-11 (medians of 9 rounds'
    ratios; of the best times): ``predict_n_best(X, 5)`` 1.49x ``predict`` (1.43), under
    BIO 1.99x (1.77); ``tag(x, n_best=5)`` 2.21x ``tag(x)`` (2.53); the kernel, list
    Viterbi and forward pass, 6.1x Viterbi's (7.2) but a small part of ``predict``.
    Under BIO: ``predict`` 1.02x (1.02), ``predict_marginals`` 1.02x (0.97), ``tag``
    0.98x (0.96), the Viterbi kernel 1.00x (1.21; alone, 41 calls: 1.06x, best times
    15.5 and 15.6 ms).

sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch (``tutorial.py``): ``CRF()``
(crfsdca's default) is fitted on ``ned.train``, then, over the ``ned.testb`` sentences,
alternated in one process, ``--repeat`` rounds:

- the estimator: ``predict(X)``, ``predict(X, constraints="BIO")``,
  ``predict_n_best(X, 5)`` and ``predict_n_best(X, 5, constraints="BIO")``,
  ``predict_marginals(X)`` and ``predict_marginals(X, constraints="BIO")``: the whole
  call, the items' encoding included, as a user meets it;
- the kernels alone, on the split encoded once: ``objective.predict`` (what ``predict``
  runs), ``decoding.constrained_labels`` under BIO, ``decoding.n_best_labels`` with
  k = 5 (the labelings and their probabilities: list Viterbi and a forward pass);
- the tagger, one sentence at a time: ``tag(x)``, ``tag(x, constraints="BIO")``,
  ``tag(x, n_best=5)``.

Each round's ratios to the plain path of its group, then their medians (and the range),
so that a load on the machine in one round weighs on both sides of its ratios; and the
ratio of the best times of the two paths (the least disturbed round of each).

    cd benchmarks/studies && python decoding.py [--repeat 7] [--train-limit N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from common import head_commit, machine  # noqa: E402
from tutorial import iob_sents, sent2features, sent2labels  # noqa: E402

from crfsdca import CRF  # noqa: E402
from crfsdca.data.items import Vocabulary, encode  # noqa: E402
from crfsdca.model.constraints import Forced, constraint_masks  # noqa: E402
from crfsdca.model.decoding import constrained_labels, make_chain, n_best_labels  # noqa: E402
from crfsdca.model.objective import predict  # noqa: E402


def seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def groups(crf, X):
    """{group: {path: call}}, the first path of each group the plain one."""
    model = crf.model_
    w, A, K = model.weights, len(model.attributes), len(model.labels)
    vocab = Vocabulary()
    vocab.ids = {a: i for i, a in enumerate(model.attributes)}
    seq = encode(X, None, vocab, Vocabulary(model.labels), grow=False).seq
    n = seq.n_sequences
    none = Forced(np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64),
                  np.zeros(0, dtype=np.int32))
    plain = make_chain(w, A, K, None)
    bio = make_chain(w, A, K, constraint_masks("BIO", model.labels))
    tagger = crf.tagger_
    return {
        "estimator": {
            "predict": lambda: crf.predict(X),
            "predict, BIO": lambda: crf.predict(X, constraints="BIO"),
            "predict_n_best k=5": lambda: crf.predict_n_best(X, 5),
            "predict_n_best k=5, BIO": lambda: crf.predict_n_best(X, 5, constraints="BIO"),
        },
        "marginals": {
            "predict_marginals": lambda: crf.predict_marginals(X),
            "predict_marginals, BIO": lambda: crf.predict_marginals(X, constraints="BIO"),
        },
        "kernels": {
            "viterbi (objective.predict)": lambda: predict(w, seq, A, K),
            "viterbi, BIO": lambda: constrained_labels(w, A, K, seq, bio, none),
            "n best k=5": lambda: n_best_labels(w, A, K, seq, 5, plain, none),
            "n best k=5, BIO": lambda: n_best_labels(w, A, K, seq, 5, bio, none),
        },
        "tagger": {
            "tag": lambda: [tagger.tag(x) for x in X],
            "tag, BIO": lambda: [tagger.tag(x, constraints="BIO") for x in X],
            "tag n_best=5": lambda: [tagger.tag(x, n_best=5) for x in X],
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--train-limit", type=int, default=None,
                    help="train on the first N sentences (default: all of ned.train)")
    args = ap.parse_args()
    commit = head_commit()
    print(f"# {machine()}; one thread; commit {commit} (and the working tree); "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    print(f"# load average at the start: {os.getloadavg()}", flush=True)
    train = iob_sents("ned.train", limit=args.train_limit)
    X_test = [sent2features(s) for s in iob_sents("ned.testb")]
    t0 = time.perf_counter()
    crf = CRF().fit([sent2features(s) for s in train], [sent2labels(s) for s in train])
    print(f"# CRF() fitted on {len(train)} sentences in {time.perf_counter() - t0:.1f} s; "
          f"{len(X_test)} test sentences, {sum(map(len, X_test))} tokens; "
          f"{len(crf.classes_)} labels", flush=True)
    calls = groups(crf, X_test)
    for group in calls.values():  # the kernels loaded, as a served model has them
        for call in group.values():
            call()
    times = {g: {p: [] for p in group} for g, group in calls.items()}
    for _ in range(args.repeat):
        for g, group in calls.items():
            for p, call in group.items():
                times[g][p].append(seconds(call))
    print(f"# load average at the end: {os.getloadavg()}")
    print(f"\n{'path':<36} {'median s':>9} {'ratio (median)':>15} {'range':>12} "
          f"{'of bests':>9}")
    for g, group in times.items():
        base = group[next(iter(group))]
        for p, ts in group.items():
            ratios = [t / b for t, b in zip(ts, base, strict=True)]
            print(f"{g + ': ' + p:<36} {statistics.median(ts):9.4f} "
                  f"{statistics.median(ratios):15.2f} "
                  f"{min(ratios):6.2f}-{max(ratios):.2f} {min(ts) / min(base):9.2f}")


if __name__ == "__main__":
    main()
