"""A first fit in a fresh process, as a user's script meets it: the interpreter's start,
the import, the tutorial's items of the first 1,000 Dutch training sentences, ``fit`` with
each tool's defaults and ``predict`` on 300 test sentences, against the same process with
sklearn-crfsuite, alternated. crfsdca's kernels come from numba's cache (as the wheel
ships them); a processor that cannot use them compiles them once (about a minute, see
``crfsdca precompile``), which this does not measure.
"""

from __future__ import annotations

import subprocess
import sys

import workload

ROUNDS = 5
SENTENCES = 1000
TEST_SENTENCES = 300
SCRIPT = """
import sys
from {module} import CRF
from crfsdca.data.tutorial import iob_sents, sent2features, sent2labels
train = iob_sents("ned.train", {corpus!r}, limit={sentences})
test = iob_sents("ned.testa", {corpus!r}, limit={test_sentences})
crf = CRF().fit([sent2features(s) for s in train], [sent2labels(s) for s in train])
crf.predict([sent2features(s) for s in test])
"""


def _process(module: str):
    code = SCRIPT.format(module=module, corpus=str(workload.CONLL2002), sentences=SENTENCES,
                         test_sentences=TEST_SENTENCES)
    return lambda: subprocess.run([sys.executable, "-c", code], check=True)


def test_first_fit_in_a_fresh_process(benchmark):
    _process("crfsdca")()  # numba's cache filled, as after the wheel's install
    workload.alternate(benchmark, _process("crfsdca"), _process("sklearn_crfsuite"),
                       "sklearn-crfsuite in a fresh process", ROUNDS)
    benchmark.extra_info.update(sentences=SENTENCES, test_sentences=TEST_SENTENCES,
                                call="CRF() with each tool's defaults")
