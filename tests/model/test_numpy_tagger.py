"""``crfsdca tag``'s numpy path (:mod:`crfsdca.model.numpy_tagger`): the split, the scores and
the Viterbi labels of the numba kernels, ties included, and a command that only tags
does not import numba."""

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.data.sequences import make_sequences
from crfsdca.data.token_csr import token_csr
from crfsdca.model.layout import WeightLayout
from crfsdca.model.numpy_tagger import csr_entries
from crfsdca.model.numpy_tagger import predict as numpy_predict
from crfsdca.model.objective import predict


@st.composite
def files(draw):
    """A model (A attributes, K labels; small integer weights, so that labelings tie,
    or floats) and a file's flat entries: repeated ids, ids the model lacks (-1), zero
    weights, empty items, sequences of one item."""
    A, K = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    lengths = draw(st.lists(st.integers(1, 7), min_size=1, max_size=6))
    n_tokens = sum(lengths)
    counts = draw(st.lists(st.integers(0, 5), min_size=n_tokens, max_size=n_tokens))
    n = sum(counts)
    ids = draw(st.lists(st.integers(-1, A - 1), min_size=n, max_size=n))
    weights = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, -1.0, 0.5, 1e-3]),
                            min_size=n, max_size=n))
    dim = WeightLayout(A, K).dim
    if draw(st.booleans()):
        w = np.array(draw(st.lists(st.integers(-2, 2), min_size=dim, max_size=dim)), float)
    else:
        w = np.random.default_rng(draw(st.integers(0, 2**16))).normal(size=dim)
    return (A, K, w, np.array(lengths), np.array(counts, dtype=np.int64),
            np.array(ids, dtype=np.int64), np.array(weights))


@settings(max_examples=300, deadline=None)
@given(files())
def test_the_numpy_split_and_labels_are_the_kernels(case):
    A, K, w, lengths, counts, ids, weights = case
    ours = csr_entries(counts, ids, weights)
    theirs = token_csr(counts, ids, weights)[:3]
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    seq = make_sequences(offsets, np.zeros(offsets[-1], np.int32), *theirs)
    np.testing.assert_array_equal(numpy_predict(WeightLayout(A, K), w, seq),
                                  predict(w, seq, A, K))


def test_tagging_a_file_does_not_import_numba(tmp_path):
    """The plain command and its evaluation (-t) run in numpy; -i asks for marginals,
    which numba computes, and gives the same labels."""
    from crfsdca import CRF

    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}]]
    y = [["A", "B"], ["B"]]
    model = tmp_path / "m.crfsuite"
    CRF(model_filename=str(model)).fit(X, y)
    data = tmp_path / "d.txt"
    data.write_text("A\tw\\:a\nB\tw\\:b\n\nB\tw\\:b\n")  # names w:a, w:b
    probe = ("import sys; from crfsdca.cli import main; code = main(sys.argv[1:]); "
             "print('numba' in sys.modules, file=sys.stderr); sys.exit(code)")

    def tag(*flags):
        done = subprocess.run([sys.executable, "-c", probe, "tag", "-m", str(model), *flags,
                               str(data)], capture_output=True, text=True, check=True)
        return done.stdout, done.stderr.strip().splitlines()[-1]

    plain, imported = tag()
    assert plain == "A\nB\n\nB\n\n" and imported == "False"
    report, imported = tag("-t", "-q")  # the evaluation too (conlleval's chunks in numpy)
    assert "Item accuracy: 3 / 3" in report and imported == "False"
    marginals, imported = tag("-i")
    assert imported == "True"
    assert [line.split(":")[0] for line in marginals.splitlines()] == plain.splitlines()
