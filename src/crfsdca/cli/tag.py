"""The ``tag`` command: CRFsuite's ``crfsuite tag`` with a crfsdca model.

Output as CRFsuite's: one label per line and a blank line after each sequence; ``-r`` puts
the reference label first, ``-i`` the marginal of the predicted label after it (``:p``),
``-l`` every label's marginal; ``-p`` prints ``@score`` and ``@probability`` before each
sequence; ``-t`` prints the evaluation report
(:func:`crfsdca.model.evaluation.evaluation_report`), ``-q`` nothing else. The whole input
is read, and checked, before anything is printed.
"""

from __future__ import annotations

import argparse
import math
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="CRFsuite-format data (default '-': standard input)")
    p.add_argument("-m", "--model", required=True, help="model file (crfsdca learn, CRF.fit)")
    p.add_argument("-t", "--test", action="store_true", help="report the performance")
    p.add_argument("-r", "--reference", action="store_true", help="print reference labels")
    p.add_argument("-p", "--probability", action="store_true",
                   help="print the score and probability of each labeling")
    p.add_argument("-i", "--marginal", action="store_true",
                   help="print the marginal of each predicted label")
    p.add_argument("-l", "--marginal-all", action="store_true",
                   help="print the marginals of all labels")
    p.add_argument("-q", "--quiet", action="store_true", help="print no labels")


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
    A, K = len(model.attributes), len(model.labels)
    need_marginals = args.probability or args.marginal or args.marginal_all
    encoded = encode_text_for(model, text)
    if encoded is None:  # the line reader: odd lines, errors to report, no sequence
        inst = parse_lines(text.split("\n"), "<stdin>" if args.file == "-" else args.file)
        if not inst.X:
            return 0
        encoded = encode_for(model, inst)
    seq, names = encoded
    pred = predict(model.layout, model.weights, seq)  # numba's labels, without numba
    seconds = time.perf_counter() - t0
    scores = path_scores(model.layout, model.weights, seq, pred) if args.probability else None
    if not args.quiet:
        lines = []
        for i in range(seq.n_sequences):
            s, e = int(seq.offsets[i]), int(seq.offsets[i + 1])
            unary = None
            if need_marginals:  # numba's kernels (0.8 s of a command's start)
                # loaded when the command runs, not for its --help (numpy, numba, h5py)
                from ..model.oracle import sequence_marginals

                logz, unary, _ = sequence_marginals(model.weights, A, K, seq, i)
                if args.probability:
                    lines.append(f"@score\t{scores[i]:f}\t{logz:f}")
                    lines.append(f"@probability\t{math.exp(scores[i] - logz):f}")
            for t in range(e - s):
                y = int(pred[s + t])
                text = (names[seq.labels[s + t]] + "\t" if args.reference else "") + names[y]
                if args.marginal:
                    text += f":{unary[t, y]:f}"
                if args.marginal_all:
                    text += "".join(f"\t{names[k]}:{unary[t, k]:f}" for k in range(K))
                lines.append(text)
            lines.append("")
        out.write("\n".join(lines) + "\n")
    if args.test:
        out.write(evaluation_report(seq.labels, np.asarray(pred), seq.offsets, names, K))
        out.write(f"Elapsed time: {seconds:f} [sec] "
                  f"({seq.n_sequences / max(seconds, 1e-9):.1f} [instance/sec])\n")
    out.flush()
    return 0


def _attribute_ids(model) -> dict[str, int]:
    return {a: i for i, a in enumerate(model.attributes)}


def encode_for(model, inst):
    """The split of ``inst`` in the model's ids, and the label names (the model's, then
    labels it lacks)."""
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..data.items import Vocabulary, encode

    labels = Vocabulary(model.labels)
    vocab = Vocabulary()
    vocab.ids = _attribute_ids(model)
    seq = encode(inst.X, inst.y, vocab, labels, grow=False, grow_labels=True).seq
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
    return make_sequences(offsets, label_ids, indptr, indices, values), labels.strings()
