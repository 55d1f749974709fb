"""Peak memory of a default fit against sklearn-crfsuite's, whole processes.

Question: How much memory does the default ``CRF()`` fit take, as a multiple of
    sklearn-crfsuite's tutorial call, where users train (Dutch and Spanish NER with the
    tutorial's features, CoNLL-2000 chunking) and on the vendored dataset with the largest
    dual state (the POS treebank sample, K = 45, CRFsuite's feature set)?
Date: 2026-11-27
Commit: 7b58180
Answer: 1.58-1.66x on Dutch and Spanish NER, 2.36x on CoNLL-2000, 5.86x on the POS
    sample (K = 45): SDCA's dual marginals and its dense-layout weight vectors; a float32
    store takes 0.06-0.67 GB off (docs/history.md, "Peak memory of the default fit").

Each fit runs in a fresh process (the items built there, then the fit), and the peak
resident memory of that process (``ru_maxrss``) is read by the parent; the items alone
(a process that builds them and stops) are measured too, so that the fit's own share is
the difference. crfsdca: ``CRF(c1=0.1, c2=0.1, all_possible_transitions=True)`` (the
default algorithm, SDCA, with its dual state), and the same with
``store_dtype="float32"``; sklearn-crfsuite: ``CRF(algorithm='lbfgs', c1=0.1, c2=0.1,
max_iterations=100, all_possible_transitions=True)``. Memory does not depend on the
machine's load, unlike seconds.

    python benchmarks/studies/peak_memory.py [--datasets ner esp chunk pos] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ITEMS = """
import sys, json, resource
sys.path.insert(0, {src!r})
name, limit = sys.argv[1], (int(sys.argv[2]) or None)
from crfsdca.data.tutorial import iob_sents, sent2features, sent2labels
raw = {raw!r}
if name in ("ner", "esp"):
    member = "ned.train" if name == "ner" else "esp.train"
    enc = "utf-8" if name == "ner" else "latin-1"
    sents = iob_sents(member, raw + "/conll2002.zip", limit=limit, encoding=enc)
    X = [sent2features(s) for s in sents]
    y = [sent2labels(s) for s in sents]
else:
    import yaml
    from crfsdca.data.corpus_items import corpus_items
    config = yaml.safe_load(open({config!r}).read())
    X, y, _, _ = corpus_items(config, {{"chunk": "conll", "pos": "pos"}}[name], raw)
    if limit:
        X, y = X[:limit], y[:limit]
items = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""

FITS = {
    "items": "fit = None",
    "crfsdca": ("from crfsdca import CRF\n"
                "fit = CRF(c1=0.1, c2=0.1, all_possible_transitions=True).fit(X, y)"),
    "crfsdca-float32": ("from crfsdca import CRF\n"
                        "fit = CRF(c1=0.1, c2=0.1, all_possible_transitions=True, "
                        "store_dtype='float32').fit(X, y)"),
    "sklearn-crfsuite": ("import sklearn_crfsuite\n"
                         "fit = sklearn_crfsuite.CRF(algorithm='lbfgs', c1=0.1, c2=0.1, "
                         "max_iterations=100, all_possible_transitions=True).fit(X, y)"),
}

REPORT = """
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tokens = sum(map(len, X))
print(json.dumps({"sequences": len(X), "tokens": tokens, "labels": len({l for s in y for l in s}),
                  "items_mib": items / 1024, "peak_mib": peak / 1024}))
"""


def measure(name: str, tool: str, limit: int) -> dict:
    code = ITEMS.format(src=str(ROOT / "src"), raw=str(ROOT / "data" / "raw"),
                        config=str(ROOT / "config.yaml")) + FITS[tool] + REPORT
    out = subprocess.run([sys.executable, "-c", code, name, str(limit)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "esp", "chunk", "pos"])
    ap.add_argument("--tools", nargs="+", default=list(FITS), choices=list(FITS))
    ap.add_argument("--limit", type=int, default=0, help="first N training sentences")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    from common import machine

    print(f"# {machine()}; peak resident memory (MiB) of a process that builds the items "
          "and fits")
    print("| dataset | n | K | items only | " + " | ".join(
        t for t in args.tools if t != "items") + " | crfsdca / sklearn-crfsuite (fit's share) |")
    print("|---" * (len(args.tools) + 3) + "|")
    for name in args.datasets:
        got = {t: measure(name, t, args.limit) for t in args.tools}
        base = got.get("items", {}).get("peak_mib", 0.0)
        cells = [f"{got[t]['peak_mib']:.0f}" for t in args.tools if t != "items"]
        ratio = ""
        if "crfsdca" in got and "sklearn-crfsuite" in got:
            ours, theirs = got["crfsdca"]["peak_mib"], got["sklearn-crfsuite"]["peak_mib"]
            ratio = (f"{ours / theirs:.2f}x ({(ours - base) / max(theirs - base, 1):.2f}x)"
                     if base else f"{ours / theirs:.2f}x")
        first = next(iter(got.values()))
        print(f"| {name} | {first['sequences']} | {first['labels']} | {base:.0f} | "
              + " | ".join(cells) + f" | {ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
