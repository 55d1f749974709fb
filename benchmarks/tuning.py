"""Tuning c1 and c2 in one call: ``crfsdca.CRFCV`` against sklearn-crfsuite's tutorial
search (issue 47).

sklearn-crfsuite's tutorial tunes its CRF by ``RandomizedSearchCV(CRF(algorithm='lbfgs',
max_iterations=100, all_possible_transitions=True), {'c1': expon(scale=0.5), 'c2':
expon(scale=0.05)}, cv=3, n_iter=50, scoring=f1)``: 150 fits and a refit, scored by the
flat F1 weighted over the labels but 'O'. Against it: ``CRFCV`` over a 7 x 7 grid of
log-spaced c1 x c2 covering where those distributions put 90% of their draws (c1 from
0.026 to 1.5, c2 from 0.0026 to 0.15), the same 3 folds (``KFold(3)``), the same scorer,
``all_possible_transitions=True``, refit on the whole training set. Each search runs in
a process of its own on CoNLL-2002's training set (the tutorial's features,
``crfsdca.data.tutorial``) and its refit is scored on testb. A run reports its wall
seconds and the CPU seconds of its process and of the worker processes it started.

    python benchmarks/tuning.py --quick              # 600 sentences, 3 x 3 grid, 6 draws
    python benchmarks/tuning.py --lang esp ned --jobs 1 -1 --out tuning.json
    python benchmarks/tuning.py --only crfcv --lang esp --jobs 1   # one tool, one cell

crfsdca's kernels are compiled (or loaded from numba's cache) by a small fit before the
clock starts, as a user's second run finds them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONLL2002 = ROOT / "data" / "raw" / "conll2002.zip"
TOOLS = ("sklearn-crfsuite", "crfcv")
GRID = 7
QUICK = {"limit": 600, "test_limit": 300, "n_iter": 6, "grid": 3}


def load(lang: str, limit: int | None, test_limit: int | None):
    """The tutorial's items and labels of CoNLL-2002 ``lang`` (esp, ned): train, testb."""
    from crfsdca.data.tutorial import iob_sents, sent2features, sent2labels

    train = iob_sents(f"{lang}.train", CONLL2002, limit=limit)
    test = iob_sents(f"{lang}.testb", CONLL2002, limit=test_limit)
    return ([sent2features(s) for s in train], [sent2labels(s) for s in train],
            [sent2features(s) for s in test], [sent2labels(s) for s in test])


def tutorial_labels(y) -> list[str]:
    """The tutorial's ``labels``: the CRF's classes (in order of first occurrence) but
    'O'."""
    return [lab for lab in dict.fromkeys(t for s in y for t in s) if lab != "O"]


def grid(size: int) -> tuple[list[float], list[float]]:
    """``size`` log-spaced values of c1 and of c2 over the tutorial's ranges."""
    import numpy as np

    from crfsdca.cv import tutorial_range

    return (np.geomspace(*tutorial_range(0.5), size).tolist(),
            np.geomspace(*tutorial_range(0.05), size).tolist())


def commit() -> dict:
    """The commit measured, and whether the tree had changes beside it."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()

    return {"commit": git("rev-parse", "--short", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def cpu_seconds() -> float:
    """CPU seconds of this process and of its live children (joblib's workers)."""
    import psutil

    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def run_one(tool: str, lang: str, jobs: int, quick: bool, path_epsilon: float | None,
            seed: int, refine: int | None = None) -> dict:
    """One search, in this process: its seconds, choice, scores."""
    import numpy as np
    from sklearn.metrics import make_scorer

    limits = (QUICK["limit"], QUICK["test_limit"]) if quick else (None, None)
    X, y, X_test, y_test = load(lang, *limits)
    labels = tutorial_labels(y)
    out = {"tool": tool, "lang": lang, "jobs": jobs, "quick": quick,
           "n_train": len(X), "n_test": len(X_test), "load_before": os.getloadavg()}
    if tool == "sklearn-crfsuite":
        import scipy.stats
        import sklearn_crfsuite
        from sklearn.model_selection import RandomizedSearchCV
        from sklearn_crfsuite import metrics

        f1 = make_scorer(metrics.flat_f1_score, average="weighted", labels=labels)
        search = RandomizedSearchCV(
            sklearn_crfsuite.CRF(algorithm="lbfgs", max_iterations=100,
                                 all_possible_transitions=True),
            {"c1": scipy.stats.expon(scale=0.5), "c2": scipy.stats.expon(scale=0.05)},
            cv=3, n_iter=QUICK["n_iter"] if quick else 50, scoring=f1, n_jobs=jobs,
            random_state=seed)
    else:
        from crfsdca import CRF, CRFCV, metrics

        CRF(c2=1.0, max_iterations=2).fit(X[:20], y[:20])  # the kernels, before the clock
        CRF(c1=0.1, c2=1.0, max_iterations=2).fit(X[:20], y[:20])
        f1 = make_scorer(metrics.flat_f1_score, average="weighted", labels=labels)
        c1s, c2s = grid(QUICK["grid"] if quick else GRID)
        search = CRFCV(c1s=c1s, c2s=c2s, cv=3, scoring=f1, n_jobs=jobs,
                       path_epsilon=path_epsilon, refine=refine,
                       all_possible_transitions=True)
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    search.fit(X, y)
    out["seconds"] = time.perf_counter() - t0
    out["cpu_seconds"] = cpu_seconds() - cpu0
    out["load_after"] = os.getloadavg()
    out["best_params"] = {k: float(v) for k, v in search.best_params_.items()}
    out["best_cv_f1"] = float(search.best_score_)
    out["test_f1"] = float(f1(search.best_estimator_, X_test, y_test))
    if tool == "crfcv":
        r = search.cv_results_
        epochs = np.array([r[f"split{k}_epochs"] for k in range(3)])
        gaps = np.array([r[f"split{k}_relative_gap"] for k in range(3)])
        out["path"] = {"path_epsilon": search.path_epsilon, "refine": search.refine,
                       "refined": [r["params"][i] for i in np.flatnonzero(r["refined"])],
                       "points": int(epochs.size),
                       "epochs": float(epochs.sum()),
                       "epochs_per_point": float(epochs.mean()),
                       "max_relative_gap": float(gaps.max()),
                       "fit_seconds": float((r["mean_fit_time"] * 3).sum()),
                       "score_seconds": float((r["mean_score_time"] * 3).sum()),
                       "refit_seconds": float(search.refit_time_),
                       "statuses": sorted(set(np.concatenate(
                           [r[f"split{k}_status"] for k in range(3)]).tolist()))}
        out["cv_results"] = {k: np.asarray(v).tolist() for k, v in r.items()
                             if k != "params"}
    else:
        out["cv_results"] = {
            "param_c1": [float(v) for v in search.cv_results_["param_c1"]],
            "param_c2": [float(v) for v in search.cv_results_["param_c2"]],
            "mean_test_score": search.cv_results_["mean_test_score"].tolist(),
            "mean_fit_time": search.cv_results_["mean_fit_time"].tolist()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK['limit']} training and {QUICK['test_limit']} test "
                         f"sentences, a {QUICK['grid']} x {QUICK['grid']} grid, "
                         f"{QUICK['n_iter']} random draws")
    ap.add_argument("--lang", nargs="+", default=["esp"], choices=["esp", "ned"])
    ap.add_argument("--jobs", nargs="+", type=int, default=[1])
    ap.add_argument("--only", choices=TOOLS, help="one tool (default: both, "
                    "sklearn-crfsuite's first)")
    ap.add_argument("--path-epsilon", type=float, default=None,
                    help="CRFCV's path_epsilon (default: its own)")
    ap.add_argument("--refine", type=int, default=None,
                    help="CRFCV's refine (default: its own)")
    ap.add_argument("--seed", type=int, default=0, help="RandomizedSearchCV's random_state")
    ap.add_argument("--out", type=Path, help="append each run as a JSON line here")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--run", default=None, help=argparse.SUPPRESS)  # the invocation's id
    args = ap.parse_args(argv)
    if args.one:  # a child: one search, its JSON on stdout
        row = run_one(args.only, args.lang[0], args.jobs[0], args.quick, args.path_epsilon,
                      args.seed, args.refine)
        print(json.dumps({**row, "run": args.run, **commit()}))
        return 0
    run = time.strftime("%Y-%m-%dT%H:%M:%S")
    rows = []
    for lang in args.lang:
        for jobs in args.jobs:
            for tool in ([args.only] if args.only else TOOLS):
                cmd = [sys.executable, __file__, "--one", "--only", tool, "--lang", lang,
                       "--jobs", str(jobs), "--seed", str(args.seed), "--run", run]
                cmd += ["--quick"] if args.quick else []
                if args.path_epsilon is not None:
                    cmd += ["--path-epsilon", str(args.path_epsilon)]
                if args.refine is not None:
                    cmd += ["--refine", str(args.refine)]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if done.returncode:
                    sys.stderr.write(done.stderr)
                    return done.returncode
                row = json.loads(done.stdout.splitlines()[-1])
                rows.append(row)
                if args.out is not None:
                    with args.out.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                print(f"{lang} jobs={jobs} {tool:17s} {row['seconds']:8.1f} s wall "
                      f"{row['cpu_seconds']:8.1f} s CPU  best {row['best_params']} "
                      f"cv F1 {row['best_cv_f1']:.4f} test F1 {row['test_f1']:.4f}",
                      flush=True)
    for lang in args.lang:
        for jobs in args.jobs:
            cell = {r["tool"]: r for r in rows if r["lang"] == lang and r["jobs"] == jobs}
            if len(cell) == 2:
                a, b = cell["sklearn-crfsuite"], cell["crfcv"]
                print(f"{lang} jobs={jobs}: CRFCV {a['seconds'] / b['seconds']:.1f}x sooner "
                      f"(CPU {a['cpu_seconds'] / b['cpu_seconds']:.1f}x); cv F1 "
                      f"{b['best_cv_f1'] - a['best_cv_f1']:+.4f}, test F1 "
                      f"{b['test_f1'] - a['test_f1']:+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
