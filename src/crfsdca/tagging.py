"""Tagging with a saved model and CRFsuite's evaluation report (``crfsdca tag -t``).

The report has CRFsuite's lines (per label: #match, #model, #ref, precision, recall, F1;
macro averages; item and instance accuracy) and, when the labels are BIO chunk tags, the
chunk precision, recall and F1 of conlleval (:func:`crfsdca.model.evaluation.chunk_f1`).
Gold labels the model does not have count as errors (CRFsuite leaves such sequences out).
"""

from __future__ import annotations

import numpy as np

from .data.crfsuite_format import Instances
from .data.items import Vocabulary, encode
from .model_file import Model


def _attribute_ids(model: Model) -> dict[str, int]:
    return {a: i for i, a in enumerate(model.attributes)}


def encode_for(model: Model, inst: Instances):
    """The split of ``inst`` in the model's ids, and the label names (the model's, then
    labels it lacks)."""
    labels = Vocabulary(model.labels)
    vocab = Vocabulary()
    vocab.ids = _attribute_ids(model)
    seq = encode(inst.X, inst.y, vocab, labels, grow=False, grow_labels=True).seq
    return seq, labels.strings()


def encode_text_for(model: Model, text: str):
    """:func:`encode_for` of a whole data file's text, the same split straight from the
    text (:func:`~crfsdca.data.crfsuite_format.flat_items`), or None where the file needs
    the line reader. numpy alone (:func:`crfsdca.numpy_tagger.csr_entries` makes the
    split's arrays), so that a command that only tags need not import numba."""
    from .data.crfsuite_format import flat_items
    from .data.items import _label_ids
    from .data.sequences import make_sequences
    from .numpy_tagger import csr_entries

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


def path_scores(model: Model, seq, pred: np.ndarray) -> np.ndarray:
    """score(x, y) of the labeling ``pred`` of every sequence (CRFsuite's ``@score``)."""
    from .data.items import split_values

    layout, w = model.layout, model.weights
    E, B, W = layout.emission(w), layout.bias(w), layout.transition(w)
    tok = np.repeat(np.arange(seq.n_tokens), np.diff(seq.attr_indptr))
    unary = np.bincount(tok, weights=E[seq.attr_indices, pred[tok]] * split_values(seq),
                        minlength=seq.n_tokens)
    unary += B[pred, 0]
    first, last = seq.offsets[:-1], seq.offsets[1:] - 1
    unary[first] += B[pred[first], 1]
    unary[last] += B[pred[last], 2]
    inner = np.ones(seq.n_tokens, dtype=bool)
    inner[last] = False
    t = np.flatnonzero(inner)
    trans = np.zeros(seq.n_tokens)
    trans[t] = W[pred[t], pred[t + 1]]
    seq_of = np.repeat(np.arange(seq.n_sequences), np.diff(seq.offsets))
    return np.bincount(seq_of, weights=unary + trans, minlength=seq.n_sequences)


def evaluation_report(gold: np.ndarray, pred: np.ndarray, offsets: np.ndarray,
                      names: list[str], n_model_labels: int) -> str:
    """CRFsuite's performance report, plus conlleval's chunk scores for BIO labels."""
    from .model.evaluation import chunk_f1, chunk_scheme

    K = n_model_labels
    L = len(names)
    match = np.bincount(gold[gold == pred], minlength=L)
    by_model = np.bincount(pred, minlength=L)
    by_ref = np.bincount(gold, minlength=L)
    lines = ["Performance by label (#match, #model, #ref) (precision, recall, F1):"]
    macro = np.zeros(3)
    for k in range(K):
        m, p, r = int(match[k]), int(by_model[k]), int(by_ref[k])
        if r == 0:
            lines.append(f"    {names[k]}: ({m}, {p}, {r}) (******, ******, ******)")
            continue
        prec = m / p if p else 0.0
        rec = m / r
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        macro += (prec, rec, f1)
        lines.append(f"    {names[k]}: ({m}, {p}, {r}) ({prec:1.4f}, {rec:1.4f}, {f1:1.4f})")
    macro /= max(K, 1)
    lines.append(f"Macro-average precision, recall, F1: ({macro[0]:f}, {macro[1]:f}, "
                 f"{macro[2]:f})")
    n_items = len(gold)
    correct = int(np.sum(gold == pred))
    lines.append(f"Item accuracy: {correct} / {n_items} ({correct / max(n_items, 1):1.4f})")
    seq_of = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    wrong = np.bincount(seq_of, weights=(gold != pred), minlength=len(offsets) - 1)
    n_seq = len(offsets) - 1
    ok = int(np.sum(wrong == 0))
    lines.append(f"Instance accuracy: {ok} / {n_seq} ({ok / max(n_seq, 1):1.4f})")
    scheme = chunk_scheme(list(names))
    if scheme is not None:
        p, r, f = chunk_f1(gold.astype(np.int32), pred.astype(np.int32),
                           offsets.astype(np.int64), scheme)
        lines.append(f"Chunk precision, recall, F1 (conlleval): ({p:.2f}, {r:.2f}, {f:.2f})")
    return "\n".join(lines) + "\n"
