"""Write a dataset as CRFsuite-format files, as CRFsuite's example/chunking.py does.

    python benchmarks/crfsuite_files.py conll --out data/crfsuite
    # -> data/crfsuite/conll.train.txt, data/crfsuite/conll.test.txt

Attributes are those of config.yaml's templates (CONLL: the 19 of chunking.py) plus
__BOS__ / __EOS__ on the first / last token; names are escaped (\\: and \\\\).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from crfsdca.data.corpus_items import corpus_items
from crfsdca.data.crfsuite_format import write_sequences
from crfsdca.runtime.io import atomic_write

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", help="a dataset of config.yaml (conll, ner, pos)")
    ap.add_argument("--config", type=Path, default=ROOT / "config.yaml")
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "crfsuite")
    args = ap.parse_args(argv)
    config = yaml.safe_load(args.config.read_text())
    X, y, Xt, yt = corpus_items(config, args.dataset, ROOT / config.get("raw_dir", "data/raw"))
    for part, (xs, ys) in {"train": (X, y), "test": (Xt, yt)}.items():
        path = args.out / f"{args.dataset}.{part}.txt"
        with atomic_write(path) as f:
            write_sequences(f, xs, ys)
        print(f"{path}: {len(xs)} sequences, {sum(map(len, xs))} items", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
