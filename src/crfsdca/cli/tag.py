"""The ``tag`` command: CRFsuite's ``crfsuite tag`` with a crfsdca model.

Output as CRFsuite's: one label per line and a blank line after each sequence; ``-r`` puts
the reference label first, ``-i`` the marginal of the predicted label after it (``:p``),
``-l`` every label's marginal; ``-p`` prints ``@score`` and ``@probability`` before each
sequence; ``-t`` prints the evaluation report
(:func:`crfsdca.model.evaluation.evaluation_report`), ``-q`` nothing else. The whole input
is read, and checked, before anything is printed.

crfsdca's options: ``-n K`` prints the K best labelings of each sequence as CRF++'s
``crf_test -n`` does, a block each, headed ``# RANK PROBABILITY``; ``-c SCHEME``,
``--forbid FROM TO`` and ``--force`` decode under constraints
(:mod:`crfsdca.model.constraints`), every number then of the constrained distribution.
Plain tagging runs on numpy alone (:mod:`crfsdca.model.numpy_tagger`); these options load
numba's kernels (:mod:`crfsdca.model.decoding`).
"""

from __future__ import annotations

import argparse
import math
import sys

from .arguments import COUNT


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="CRFsuite-format data (default '-': standard input)")
    p.add_argument("-m", "--model", required=True, help="model file (crfsdca learn, CRF.fit)")
    p.add_argument("-T", "--template", metavar="TEMPLATE", help="read FILE as a column file "
                   "(CRF++'s, CoNLL's: whitespace-separated columns, the label last) with "
                   "the attributes of this CRF++ or Wapiti template (the one of learn -T)")
    p.add_argument("-t", "--test", action="store_true", help="report the performance")
    p.add_argument("-r", "--reference", action="store_true", help="print reference labels")
    p.add_argument("-p", "--probability", action="store_true",
                   help="print the score and probability of each labeling")
    p.add_argument("-i", "--marginal", action="store_true",
                   help="print the marginal of each predicted label")
    p.add_argument("-l", "--marginal-all", action="store_true",
                   help="print the marginals of all labels")
    p.add_argument("-q", "--quiet", action="store_true", help="print no labels")
    p.add_argument("-H", action="help", help="show this help message and exit")
    p.add_argument("-n", "--n-best", type=COUNT, metavar="K",
                   help="print the K best labelings of each sequence, each a block headed "
                        "'# RANK PROBABILITY' (CRF++'s crf_test -n)")
    p.add_argument("-c", "--constraints", metavar="SCHEME",
                   help="decode under the constraints of a labeling scheme read from the "
                        "label names: BIO (IOB2), BIOES or IOB1")
    p.add_argument("--forbid", nargs=2, action="append", metavar=("FROM", "TO"),
                   help="decode with the transition FROM -> TO forbidden (repeatable)")
    p.add_argument("--force", action="store_true",
                   help="force each item's label (its first field), unless it is the "
                        "--free-label mark")
    p.add_argument("--free-label", default="_", metavar="MARK",
                   help="with --force, the label of an item left free (default '_')")


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    import time

    import numpy as np

    from ..data.crfsuite_format import parse_lines, read_text
    from ..model.evaluation import evaluation_report
    from ..model.numpy_tagger import path_scores, predict
    from ..model_file import load_model

    model = load_model(args.model)
    text = read_text(args.file)
    t0 = time.perf_counter()
    out = sys.stdout
    K = len(model.labels)
    need_marginals = args.probability or args.marginal or args.marginal_all
    encoded = None if args.template else encode_text_for(model, text)
    if args.template:
        inst = template_instances(args.template, text, args.file)
        if not inst.X:
            return 0
        encoded = encode_for(model, inst)
    elif encoded is None:  # the line reader: odd lines, errors to report, no sequence
        inst = parse_lines(text.split("\n"), "<stdin>" if args.file == "-" else args.file)
        if not inst.X:
            return 0
        encoded = encode_for(model, inst)
    seq, names = encoded
    decoded = None
    if model.transition_attributes or args.n_best or args.constraints or args.forbid \
            or args.force:  # numba's kernels (numpy's tagger has no transition attributes)
        decoded = _decode(args, model, seq, names)  # checks the options
        pred = decoded.labels
    else:
        pred = predict(model.layout, model.weights, seq)  # numba's labels, without numba
    seconds = time.perf_counter() - t0
    ranks = decoded.ranks if decoded is not None else [pred]
    scores = ([_path_scores(model, seq, y, path_scores) for y in ranks]
              if args.probability else None)
    if not args.quiet:
        lines = []
        for i in range(seq.n_sequences):
            s, e = int(seq.offsets[i]), int(seq.offsets[i + 1])
            unary = None
            if need_marginals:
                logz, unary = _marginals(decoded, model, seq, i)
            blocks = range(decoded.counts[i]) if args.n_best else [None]
            for r in blocks:
                y = ranks[r or 0]
                if r is not None:
                    lines.append(f"# {r} {decoded.probs[i, r]:f}")
                if args.probability:
                    score = scores[r or 0][i]
                    lines.append(f"@score\t{score:f}\t{logz:f}")
                    lines.append(f"@probability\t{math.exp(score - logz):f}")
                _label_lines(lines, args, names, seq, y, s, e, unary, K)
                lines.append("")
        out.write("\n".join(lines) + "\n")
    if args.test:
        out.write(evaluation_report(seq.labels, np.asarray(pred), seq.offsets, names, K))
        out.write(f"Elapsed time: {seconds:f} [sec] "
                  f"({seq.n_sequences / max(seconds, 1e-9):.1f} [instance/sec])\n")
    out.flush()
    return 0


def _path_scores(model, seq, y, numpy_scores):
    """score(x_i, y_i) of every sequence (``numpy_scores``: numpy's, for a model without
    transition attributes)."""
    if not model.transition_attributes:
        return numpy_scores(model.layout, model.weights, seq, y)
    from ..model.decoding import labeling_scores  # numba's, as _decode's

    return labeling_scores(model.weights, len(model.attributes), len(model.labels), seq, y)


def template_instances(template_path: str, text: str, path: str):
    """The instances of a column file's ``text`` with the attributes of a template file."""
    # loaded when the command runs, not for its --help
    from ..data.column_templates import column_items, parse_columns, read_template
    from ..data.crfsuite_format import Instances

    name = "<stdin>" if path == "-" else path
    columns = parse_columns(text, name)
    X = column_items(read_template(template_path), columns, name)
    return Instances(X, columns.y, [0] * len(X), [1.0] * len(X))


def _label_lines(lines: list[str], args, names, seq, y, s: int, e: int, unary, K: int) -> None:
    """The lines of one labeling ``y[s:e]`` of a sequence, with what -r, -i, -l add."""
    for t in range(e - s):
        k = int(y[s + t])
        text = (names[seq.labels[s + t]] + "\t" if args.reference else "") + names[k]
        if args.marginal:
            text += f":{unary[t, k]:f}"
        if args.marginal_all:
            text += "".join(f"\t{names[j]}:{unary[t, j]:f}" for j in range(K))
        lines.append(text)


def _marginals(decoded, model, seq, i: int):
    """(log Z, unary marginals (T, K)) of sequence i, under the constraints if any."""
    # numba's kernels (0.8 s of a command's start), loaded only for -i, -l, -p
    from ..model.oracle import sequence_marginals

    if decoded is not None:
        return decoded.marginals(i)[:2]
    logz, unary, _ = sequence_marginals(model.weights, len(model.attributes),
                                        len(model.labels), seq, i)
    return logz, unary


class _Decoded:
    """What the numba path decoded: the labels (the best labeling), the ranks' labelings
    (``ranks[r]``, a label per token), their counts and probabilities per sequence, and
    the marginals of the (constrained) chain."""

    def __init__(self, labels, ranks, counts, probs, marginals):
        self.labels, self.ranks, self.counts, self.probs = labels, ranks, counts, probs
        self.marginals = marginals


def _decode(args, model, seq, names) -> _Decoded:
    """The labelings of the options -n, -c, --forbid and --force, every option checked
    (ConfigError) before anything is decoded."""
    # numba's kernels, loaded only for these options (plain tagging is numpy's)
    import numpy as np

    from ..model.constraints import constraint_masks
    from ..model.decoding import (
        MarginalPass,
        constrained_labels,
        make_chain,
        n_best_labels,
    )

    w, A, K = model.weights, len(model.attributes), len(model.labels)
    given = ([args.constraints] if args.constraints else []) + [tuple(p) for p in
                                                                 args.forbid or []]
    chain = make_chain(w, A, K, constraint_masks(given or None, list(model.labels)))
    forced = _forced_column(args, seq, names, K)
    marginals = MarginalPass(w, A, K, seq, chain, forced)
    if args.n_best:
        best = n_best_labels(w, A, K, seq, args.n_best, chain, forced)
        return _Decoded(best.paths[0], best.paths, best.counts, best.probs, marginals)
    labels = constrained_labels(w, A, K, seq, chain, forced)
    return _Decoded(labels, [labels], np.ones(seq.n_sequences, dtype=np.int64), None,
                    marginals)


def _forced_column(args, seq, names: list[str], K: int):
    """The forced labels of ``--force``: every item's label (ids below K: the model's),
    but those labeled ``--free-label``; none without --force."""
    # loaded with numba's kernels, for --force and the options beside it
    import numpy as np

    from ..errors import ConfigError
    from ..model.constraints import Forced

    n = seq.n_sequences
    if not args.force:
        return Forced(np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64),
                      np.zeros(0, dtype=np.int32))
    free = args.free_label
    if free in names[:K]:
        raise ConfigError(f"--force: the free mark {free!r} is one of the model's labels; "
                          "choose another with --free-label")
    labels = np.asarray(seq.labels)
    tokens = np.arange(len(labels))
    seq_of = np.repeat(np.arange(n), np.diff(seq.offsets))
    unknown = np.flatnonzero((labels >= K) & (labels != (names.index(free) if free in names
                                                          else -1)))
    if len(unknown):
        j = int(unknown[0])
        i = int(seq_of[j])
        raise ConfigError(f"--force: item {j - int(seq.offsets[i])} of sequence {i} has the "
                          f"label {names[labels[j]]!r}, which the model lacks (label an "
                          f"item {free!r} to leave it free)")
    fixed = labels < K
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(seq_of[fixed], minlength=n), out=indptr[1:])
    return Forced(indptr, (tokens - seq.offsets[seq_of])[fixed].astype(np.int64),
                  labels[fixed].astype(np.int32))


def _attribute_ids(model) -> dict[str, int]:
    """The model's attributes, then its transition attributes, by name."""
    return {a: i for i, a in enumerate(model.attributes + model.transition_attributes)}


def encode_for(model, inst):
    """The split of ``inst`` in the model's ids, and the label names (the model's, then
    labels it lacks)."""
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..data.items import Vocabulary, encode

    labels = Vocabulary(model.labels)
    vocab = Vocabulary()
    vocab.ids = _attribute_ids(model)
    seq = encode(inst.X, inst.y, vocab, labels, grow=False, grow_labels=True).seq
    if model.transition_attributes:
        from ..data.transitions import known_split  # numpy alone, for such a model only

        seq = known_split(seq, len(model.attributes), len(model.transition_attributes))
    return seq, labels.strings()


def encode_text_for(model, text: str):
    """:func:`encode_for` of a whole data file's text, the same split straight from the
    text (:func:`~crfsdca.data.crfsuite_format.flat_items`), or None where the file needs
    the line reader. numpy alone (:func:`crfsdca.model.numpy_tagger.csr_entries` makes the
    split's arrays), so that a command that only tags need not import numba."""
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    import numpy as np

    from ..data.crfsuite_format import flat_items
    from ..data.items import Vocabulary, _label_ids
    from ..data.sequences import make_sequences
    from ..model.numpy_tagger import csr_entries

    flat = flat_items(text, _attribute_ids(model))
    if flat is None or not len(flat.lengths):
        return None
    labels = Vocabulary(model.labels)
    offsets = np.zeros(len(flat.lengths) + 1, dtype=np.int64)
    np.cumsum(flat.lengths, out=offsets[1:])
    label_ids = np.empty(offsets[-1], dtype=np.int32)
    for i, (a, b) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist(),
                                           strict=True)):
        label_ids[a:b] = _label_ids(flat.labels[a:b], labels, True, i)  # errors name i
    indptr, indices, values = csr_entries(flat.counts, flat.attr_ids, flat.weights)
    seq = make_sequences(offsets, label_ids, indptr, indices, values)
    if model.transition_attributes:
        from ..data.transitions import known_split  # numpy alone, for such a model only

        seq = known_split(seq, len(model.attributes), len(model.transition_attributes))
    return seq, labels.strings()
