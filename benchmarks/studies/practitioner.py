"""Where users train: sklearn-crfsuite's tutorial call against crfsdca.CRF, cell by cell.

Question: Where users train: how does `crfsdca.CRF` with the tutorial's arguments
    compare with sklearn-crfsuite's tutorial call, cell by cell over c1 x c2?
Date: 2026-11-27
Commit: 2cf1248
Answer: At least 3x faster in 8 of 18 cells (every c2 = 1 cell, 3.7-5.5x), 1.8-2.4x at
    c2 = 0.1 otherwise, 0.8-1.8x at c2 = 0.01, with a lower objective everywhere; the
    tutorial's cell 15.7 s against 37.7 s (2.4x), F1 0.7603 against 0.7580. Against
    sklearn-crfsuite's uncapped default (af3ee44) the default fit ends below its
    objective 21-40x sooner in four cells. The suite's `test_default_fit` measures the
    tutorial's cell now.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/practitioner.py`.

Data: CoNLL-2002 Dutch NER with the tutorial's ``word2features`` (``tutorial.py``), and
CoNLL-2000 chunking with the features of CRFsuite's ``example/chunking.py``
(``crfsdca.data.corpus_items``). Grid: c1 in {0, 0.1, 0.5} x c2 in {0.01, 0.1, 1}. In each
cell, one process, one thread, alternated:

- ``sk-100``: sklearn-crfsuite as its tutorial calls it (``algorithm='lbfgs'``,
  ``max_iterations=100``, ``all_possible_transitions=True``);
- ``ours``: ``crfsdca.CRF`` with the same arguments but the algorithm (its default);
- ``sk``: sklearn-crfsuite with its defaults (no iteration cap);
- ``ours-lbfgs``: ``crfsdca.CRF`` with the tutorial's arguments, ``algorithm='lbfgs'``;
- ``ours-tight``: ``ours`` run on to a certified relative gap of 1e-7 (``TIGHT_EPSILON``):
  the uncapped run ends nearer the optimum than ``ours``'s default stop, and this fit's
  trace gives the seconds to its objective.

Each fit: whole ``fit`` seconds (wall), the final objective in CRFsuite's scale (sum NLL +
c1 ||w||_1 + c2 ||w||^2, computed by :func:`objective` for every model alike), test F1
(the tutorial's weighted F1 without ``O``, and conlleval's chunk F1), ``predict`` seconds;
for ``ours``, the seconds until it passed each sklearn-crfsuite run's final objective
(its set-up before the solver plus the solver seconds of the first epoch below it; for
the uncapped run, ``ours-tight``'s where it ran).
``--memory`` instead runs each tool's fit of one cell in a fresh process and reports its
peak RSS.

    python benchmarks/studies/practitioner.py --datasets ner chunk            # the 18 cells
    python benchmarks/studies/practitioner.py --datasets ner --c1 0.1 --c2 0.1 --limit 2000
    python benchmarks/studies/practitioner.py --tools sk-100 ours  # the tutorial call, ours
    python benchmarks/studies/practitioner.py --tools sk ours-tight   # and the uncapped comparison
    python benchmarks/studies/practitioner.py --memory --datasets ner
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from common import ROOT, machine, markdown_table  # noqa: E402
from tutorial import iob_sents, sent2features, sent2labels  # noqa: E402

GRID_C1 = (0.0, 0.1, 0.5)
GRID_C2 = (0.01, 0.1, 1.0)
TOOLS = ("sk-100", "ours", "sk", "ours-tight", "ours-lbfgs")
TIGHT_EPSILON = 1e-7


def load(name: str, limit: int | None = None):
    """(X_train, y_train, X_test, y_test) of a benchmark dataset."""
    if name in ("ner", "esp"):  # the tutorial's Dutch, or its Spanish (latin-1)
        lang, encoding = ("ned", "utf-8") if name == "ner" else ("esp", "latin-1")
        train = iob_sents(f"{lang}.train", limit=limit, encoding=encoding)
        test = iob_sents(f"{lang}.testb", limit=None if limit is None else max(limit // 3, 1),
                         encoding=encoding)
        return ([sent2features(s) for s in train], [sent2labels(s) for s in train],
                [sent2features(s) for s in test], [sent2labels(s) for s in test])
    if name == "chunk":
        import yaml

        from crfsdca.data.corpus_items import corpus_items

        config = yaml.safe_load((ROOT / "config.yaml").read_text())
        X, y, Xt, yt = corpus_items(config, "conll", ROOT / "data" / "raw")
        if limit is not None:
            X, y, Xt, yt = X[:limit], y[:limit], Xt[:max(limit // 3, 1)], yt[:max(limit // 3, 1)]
        return X, y, Xt, yt
    raise SystemExit(f"unknown dataset {name!r}: ner or chunk")


def objective(model, X, y, c1: float, c2: float) -> float:
    """CRFsuite's objective of ``model`` (a crfsdca Model, read from either format) on
    the training data: sum_i NLL_i + c1 ||w||_1 + c2 ||w||^2."""
    from crfsdca.data.items import Vocabulary, encode
    from crfsdca.model.objective import primal

    seq = encode(X, y, Vocabulary(model.attributes), Vocabulary(model.labels), grow=False).seq
    n = seq.n_sequences
    return n * primal(model.weights, seq, len(model.attributes), len(model.labels),
                      2 * c2 / n, c1 / n)


def scores(y_true, y_pred, labels) -> tuple[float, float]:
    """(weighted F1 without O, as the tutorial computes it; conlleval chunk F1 in %)."""
    from crfsdca import metrics

    tags = [lab for lab in labels if lab != "O"]
    weighted = metrics.flat_f1_score(y_true, y_pred, average="weighted", labels=tags)
    return weighted, metrics.chunk_precision_recall_f1(y_true, y_pred)[2]


def fit_one(tool: str, c1: float, c2: float, data, workdir: Path) -> dict:
    """Fit ``tool`` on ``data`` and measure it (module docstring)."""
    X, y, Xt, yt = data
    path = workdir / f"{tool}.model"
    if tool.startswith("sk"):
        import sklearn_crfsuite

        from crfsdca.formats.crfsuite_model import read_crfsuite_model

        cap = {"max_iterations": 100} if tool == "sk-100" else {}
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2,
                                   all_possible_transitions=True, model_filename=str(path),
                                   **cap)
        t0 = time.perf_counter()
        crf.fit(X, y)
        fit = time.perf_counter() - t0
        model = read_crfsuite_model(path)
        extra = {"iterations": len(crf.training_log_.iterations)}
    else:
        from crfsdca import CRF

        given = {"ours-lbfgs": {"algorithm": "lbfgs", "max_iterations": 100},
                 "ours-tight": {"epsilon": TIGHT_EPSILON, "max_iterations": 1000},
                 }.get(tool, {"max_iterations": 100})
        crf = CRF(c1=c1, c2=c2, all_possible_transitions=True, **given)
        t0 = time.perf_counter()
        crf.fit(X, y)
        fit = time.perf_counter() - t0
        model = crf.model_
        log = crf.training_log_
        extra = {"iterations": log[-1]["epoch"], "relative_gap": log[-1]["relative_gap"],
                 "solver_seconds": model.training["seconds"], "status":
                 model.training["status"],
                 "log": [(r["seconds"], r["loss"]) for r in log]}
    t0 = time.perf_counter()
    y_pred = crf.predict(Xt)
    predict = time.perf_counter() - t0
    weighted, chunk = scores(yt, y_pred, model.labels)
    return {"tool": tool, "fit": fit, "predict": predict, "objective":
            objective(model, X, y, c1, c2), "f1": weighted, "chunk_f1": chunk, **extra}


def time_to(ours: dict, target: float) -> float:
    """Seconds of our fit until its objective was at most ``target``: the set-up around the
    solver plus the solver seconds of the first row at or below it (NaN: never)."""
    setup = ours["fit"] - ours["solver_seconds"]
    for seconds, loss in ours["log"]:
        if loss <= target * (1 + 1e-12):
            return setup + seconds
    return math.nan


def cell(name: str, c1: float, c2: float, data, workdir: Path,
         tools: tuple[str, ...] = TOOLS) -> dict:
    """One cell: ``tools`` (``sk-100`` and ``ours`` always among them) fitted in turn."""
    runs = {tool: fit_one(tool, c1, c2, data, workdir) for tool in TOOLS if tool in tools}
    ours = runs["ours"]
    row = {"dataset": name, "c1": c1, "c2": c2}
    for tool in TOOLS:
        r = runs.get(tool, {})
        row[f"{tool} s"] = r.get("fit")
        row[f"{tool} obj"] = r.get("objective")
        row[f"{tool} F1"] = r.get("f1")
        row[f"{tool} chunk"] = r.get("chunk_f1")
        row[f"{tool} predict"] = r.get("predict")
        row[f"{tool} it"] = r.get("iterations")
    for sk, trace in (("sk-100", ours), ("sk", runs.get("ours-tight", ours))):
        row[f"ours to {sk}"] = time_to(trace, runs[sk]["objective"]) if sk in runs else None
        row[f"speed-up to {sk} obj"] = (runs[sk]["fit"] / row[f"ours to {sk}"]
                                        if sk in runs else None)
    row["speed-up fit"] = runs["sk-100"]["fit"] / ours["fit"]
    row["ours gap"] = ours["relative_gap"]
    row["ours status"] = ours["status"]
    return row


def memory(name: str, limit: int | None, c1: float, c2: float) -> None:
    """Peak RSS of each tool's fit (and predict) in a fresh process."""
    for tool in TOOLS:
        code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r});"
                "import practitioner as p, resource, tempfile, pathlib;"
                f"d = p.load({name!r}, {limit!r});"
                f"p.fit_one({tool!r}, {c1!r}, {c2!r}, d, pathlib.Path(tempfile.mkdtemp()));"
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        base = subprocess.run([sys.executable, "-c", code.replace("p.fit_one", "(lambda *a: 0)")],
                              capture_output=True, text=True, check=True)
        peak = int(out.stdout.split()[-1]) / 1024
        data = int(base.stdout.split()[-1]) / 1024
        print(f"{name} c1={c1} c2={c2} {tool}: peak RSS {peak:.0f} MiB "
              f"(the data alone {data:.0f} MiB)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["ner", "chunk"])
    ap.add_argument("--c1", type=float, nargs="+", default=list(GRID_C1))
    ap.add_argument("--c2", type=float, nargs="+", default=list(GRID_C2))
    ap.add_argument("--limit", type=int, help="first N training sentences (N/3 test)")
    ap.add_argument("--json", type=Path, help="write every row here")
    ap.add_argument("--memory", action="store_true", help="peak RSS per tool instead")
    ap.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS),
                    help="the fits of each cell (sk-100 and ours always)")
    args = ap.parse_args()
    print(f"# {machine()}; one thread; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    if args.memory:
        for name in args.datasets:
            memory(name, args.limit, args.c1[0], args.c2[0])
        return
    rows = []
    for name in args.datasets:
        data = load(name, args.limit)
        print(f"# {name}: {len(data[0])} training, {len(data[2])} test sequences", flush=True)
        for c1 in args.c1:
            for c2 in args.c2:
                with tempfile.TemporaryDirectory() as tmp:
                    row = cell(name, c1, c2, data, Path(tmp),
                               tuple(set(args.tools) | {"sk-100", "ours"}))
                rows.append(row)
                print(json.dumps({k: (round(v, 6) if isinstance(v, float) else v)
                                  for k, v in row.items()}), flush=True)
                if args.json:
                    args.json.write_text(json.dumps(rows, indent=1))
    print(table(rows))


def table(rows: list[dict]) -> str:
    def f(x, fmt):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)

    out = [{"dataset, c1, c2": f"{r['dataset']}, {r['c1']:g}, {r['c2']:g}",
            "sk-100: s, F1": f"{f(r['sk-100 s'], '.1f')}, {f(r['sk-100 F1'], '.4f')}",
            "ours: s, F1, epochs": f"{f(r['ours s'], '.1f')}, {f(r['ours F1'], '.4f')}, "
                                   f"{f(r['ours it'], '.0f')}",
            "fit speed-up": f(r["speed-up fit"], ".1f") + "x",
            "obj ours / sk-100 - 1": f(r["ours obj"] / r["sk-100 obj"] - 1, ".1e"),
            "to sk-100's obj": f(r["speed-up to sk-100 obj"], ".1f") + "x",
            "sk (uncapped): s": f(r["sk s"], ".1f"),
            "to sk's obj": f(r["speed-up to sk obj"], ".1f") + "x",
            "ours-lbfgs: s, F1": f"{f(r['ours-lbfgs s'], '.1f')}, "
                                f"{f(r['ours-lbfgs F1'], '.4f')}",
            "predict s (sk-100 / ours)": f"{f(r['sk-100 predict'], '.2f')} / "
                                         f"{f(r['ours predict'], '.2f')}"}
           for r in rows]
    optional = {"sk": ("sk (uncapped): s", "to sk's obj"), "ours-lbfgs": ("ours-lbfgs: s, F1",)}
    absent = {column for tool, columns in optional.items()
              if all(r[f"{tool} s"] is None for r in rows) for column in columns}
    return markdown_table(out, [c for c in out[0] if c not in absent])


if __name__ == "__main__":
    main()
