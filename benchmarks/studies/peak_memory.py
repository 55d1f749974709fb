"""Peak memory of a default fit against sklearn-crfsuite's, whole processes.

Question: How much memory does the default ``CRF()`` fit take, as a multiple of
    sklearn-crfsuite's tutorial call, where users train (Dutch and Spanish NER with the
    tutorial's features, CoNLL-2000 chunking) and on the vendored dataset with the largest
    dual state (the POS treebank sample, K = 45, CRFsuite's feature set)?
Date: 2026-12-01
Commit: f8d01b5 (h5py no longer loaded by a fit that writes no file: 10-11 MiB less)
Answer: The default fit (the compact store) from lists: 1.09x sklearn-crfsuite's peak on
    Dutch NER, 1.06x on Spanish NER, 1.18x on CoNLL-2000 and 1.70x on the POS sample
    (K = 45): issue 57's in-memory bounds (1.2x; 2x on the POS sample) met on all four.
    On a generator of the same items, never held whole: 0.68x, 0.63x, 0.84x, 1.56x
    (issue 57 asks 0.5x); on a crfsdca.Corpus made by an earlier process: 0.71x, 0.68x,
    0.75x, 1.50x. The floor under those: a process that imports numba and compiles one
    function of one line (``numba-alone``) peaks at 157 MiB, 0.47x sklearn-crfsuite's
    peak on the POS sample (0.36x / 0.32x / 0.23x on the others), and crfsdca's fit of 50
    sentences from a generator at 200 MiB (Dutch) and 208 MiB (POS; stored in
    runs/peak_memory_floor.json, ``--limit 50``), 0.62x of sklearn-crfsuite's peak on
    the POS sample before any of its data: 0.5x there is below what a numba process
    with crfsdca's kernels takes. The paper's store: 1.33x, 1.38x, 2.28x, 5.46x; a
    float32 store (which takes the paper's) 1.19x, 1.20x, 1.66x, 3.45x. At 800509a
    (before h5py was left out of such a fit): 1.12x, 1.09x, 1.19x, 1.74x from lists;
    0.70x, 0.66x, 0.85x, 1.60x on a generator. Until 2026-12-01 (0151b05's run) the
    measured process also read the raw corpus and kept its sentences (6 MiB on Dutch, 85
    on CoNLL-2000, in sklearn-crfsuite's process as well). Table: docs/benchmarks.md
    ("Bigger than memory"), from runs/peak_memory.json.

Each fit runs in a fresh process, which reports its peak resident memory (``VmHWM`` of
/proc/self/status: ``ru_maxrss``, read until 2026-12-01, keeps the launching process's
peak across ``exec``, here about 100 MiB, below every row of a whole data set). A setup
process builds the items from the raw data and writes them, pair after pair, to a file;
the measured process reads them back one pair at a time, into lists (``X``, ``y``) or
straight into a fit on the generator, so that it holds the items a fit needs and nothing
else (until 2026-12-01 the measured process read the raw corpus itself and kept its
sentences through the fit, 6-85 MiB by data set). The items alone (a process that
reads them into lists and stops) are measured too, so that the fit's own share is the
difference.

crfsdca: ``CRF(c1=0.1, c2=0.1, all_possible_transitions=True)`` (the default
algorithm, SDCA, with its default dual state, the compact store), the same with the
paper's store (``crfsdca-exact``, ``dual_store="exact"``), with
``store_dtype="float32"`` (which takes the exact store), on a generator of the items
(``crfsdca-stream``), and on a ``crfsdca.Corpus`` of them made by an earlier process
(``crfsdca-corpus``: the items never in the measured process, their encoding read from
its file), and a process that imports numba and compiles a function of one line
(``numba-alone``: the floor of any process that runs a numba kernel, without crfsdca
or data); sklearn-crfsuite:
``CRF(algorithm='lbfgs', c1=0.1, c2=0.1, max_iterations=100,
all_possible_transitions=True)``. Memory does not depend on the
machine's load, unlike seconds.

    cd benchmarks/studies && python peak_memory.py --json runs/peak_memory.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PAIRS = """
import sys, json, resource
sys.path.insert(0, {src!r})
name, limit = sys.argv[1], (int(sys.argv[2]) or None)
raw = {raw!r}
if name in ("ner", "esp"):
    from crfsdca.data.tutorial import iob_sents, sent2features, sent2labels
    member = "ned.train" if name == "ner" else "esp.train"
    enc = "utf-8" if name == "ner" else "latin-1"
    sents = iob_sents(member, raw + "/conll2002.zip", limit=limit, encoding=enc)

    def pairs():  # the tutorial's features, a sentence at a time
        for s in sents:
            yield sent2features(s), sent2labels(s)
else:
    import yaml
    from crfsdca.data.featurize import parse_spec, spec_from_config, take_subset
    from crfsdca.data.readers import READERS
    from crfsdca.data.templates import Extractor, parse_templates
    config = yaml.safe_load(open({config!r}).read())
    sp = parse_spec({{"chunk": "conll", "pos": "pos"}}[name],
                    spec_from_config(config, {{"chunk": "conll", "pos": "pos"}}[name]), raw)
    corpus = READERS[sp.reader](sp.source, **sp.options)
    extractor = Extractor(parse_templates(sp.templates))
    sentences = take_subset(corpus.train, sp.subset_train)[:limit]

    def pairs():  # corpus_items's items (CRFsuite's example features), a sentence at a time
        for s in sentences:
            attrs = extractor(s.fields, len(s))
            attrs[0].append("__BOS__")
            attrs[-1].append("__EOS__")
            yield attrs, list(s.labels)
"""

LISTS = """
X, y = [], []
for xseq, yseq in pairs():
    X.append(xseq)
    y.append(yseq)
items = peak_kib()
"""

CALL = "CRF(c1=0.1, c2=0.1, all_possible_transitions=True{extra})"

FITS = {
    "items": LISTS + "fit = None",
    "crfsdca": LISTS + "from crfsdca import CRF\nfit = " + CALL.format(extra="") + ".fit(X, y)",
    "crfsdca-exact": LISTS + "from crfsdca import CRF\nfit = " + CALL.format(
        extra=", dual_store='exact'") + ".fit(X, y)",
    "crfsdca-float32": LISTS + "from crfsdca import CRF\nfit = " + CALL.format(
        extra=", store_dtype='float32'") + ".fit(X, y)",
    "crfsdca-stream": ("items = 0\nfrom crfsdca import CRF\nfit = "
                       + CALL.format(extra="") + ".fit(pairs())"),
    "crfsdca-corpus": ("items = 0\nfrom crfsdca import CRF, Corpus\nfit = "
                       + CALL.format(extra="") + ".fit(Corpus(sys.argv[3]))"),
    "numba-alone": "items = 0\nimport numba\nfit = numba.njit(lambda x: x + 1)(1)\n",
    "sklearn-crfsuite": LISTS + "import sklearn_crfsuite\n"
                        "fit = sklearn_crfsuite.CRF(algorithm='lbfgs', c1=0.1, c2=0.1, "
                        "max_iterations=100, all_possible_transitions=True).fit(X, y)",
}

REPORT = """
peak = peak_kib()
n = tokens = 0
labels = set()
for xseq, yseq in pairs():  # counted after the peak is read
    n, tokens = n + 1, tokens + len(xseq)
    labels.update(yseq)
print(json.dumps({"sequences": n, "tokens": tokens, "labels": len(labels),
                  "items_mib": items / 1024, "peak_mib": peak / 1024}))
"""


SPOOL = """
import pickle
with open(sys.argv[4], "wb") as f:
    for pair in pairs():
        pickle.dump(pair, f, protocol=pickle.HIGHEST_PROTOCOL)
"""
"""Writes the items, pair after pair, to the file argv[4]: run in a process of its own
before the measured one, which reads them back one at a time (``FROM_SPOOL``)."""

FROM_SPOOL = """
import sys, json, pickle
sys.path.insert(0, {src!r})


def peak_kib():  # this process's own peak (ru_maxrss would carry the parent's over exec)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def pairs():  # the items a pair at a time, from the file SPOOL wrote
    with open(sys.argv[4], "rb") as f:
        while True:
            try:
                yield pickle.load(f)
            except EOFError:
                return
"""

CORPUS = "from crfsdca import Corpus\nCorpus.create(sys.argv[3], pairs())\n"
"""Encodes the items into a corpus (``crfsdca.Corpus``) in the folder argv[3]: run in a
process of its own before the measured one, which opens it and fits."""


def prelude() -> str:
    return PAIRS.format(src=str(ROOT / "src"), raw=str(ROOT / "data" / "raw"),
                        config=str(ROOT / "config.yaml"))


def measure(name: str, tool: str, limit: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        given = [name, str(limit), folder, str(Path(folder) / "items.pickle")]
        spooled = FROM_SPOOL.format(src=str(ROOT / "src"))
        subprocess.run([sys.executable, "-c", prelude() + SPOOL, *given], check=True,
                       capture_output=True)
        if tool == "crfsdca-corpus":
            subprocess.run([sys.executable, "-c", spooled + CORPUS, *given], check=True,
                           capture_output=True)
        out = subprocess.run([sys.executable, "-c", spooled + FITS[tool] + REPORT, *given],
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "esp", "chunk", "pos"])
    ap.add_argument("--tools", nargs="+", default=list(FITS), choices=list(FITS))
    ap.add_argument("--limit", type=int, default=0, help="first N training sentences")
    ap.add_argument("--json", type=Path, help="store the rows there")
    ap.add_argument("--add", action="store_true",
                    help="keep the rows of --json for the datasets and tools not run now")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    from common import kept_rows, machine, store_run

    rows = kept_rows(args.json, args.add,
                     lambda r: r["dataset"] in args.datasets and r["tool"] in args.tools)
    run = {"machine": machine(), "limit": args.limit, "call": CALL.format(extra=""),
           "rows": rows}
    for name in args.datasets:
        for tool in args.tools:
            rows.append({"dataset": name, "tool": tool, **measure(name, tool, args.limit)})
            print(json.dumps(rows[-1]), flush=True)
            store_run(args.json, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
