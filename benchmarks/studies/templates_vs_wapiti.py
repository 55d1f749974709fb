"""CRF++'s chunking template on CoNLL-2000: crfsdca against Wapiti and CRF++ themselves.

Question: With CRF++'s example/chunking/template on CoNLL-2000 (word, POS, chunk columns)
    at the same L2 regularization, do crfsdca, Wapiti's L-BFGS and CRF++ reach the same
    objective and test chunk F1, and how long does each take?
Date: 2026-11-28
Commit: 631d207 (the templates' code of b85f833)
Answer: the same model and test chunk F1 (crfsdca 93.83, Wapiti 93.84, CRF++ 93.83);
    crfsdca's default fit (certified relative gap 2.9e-4) ends 1.3e-4 above Wapiti's
    objective at -e 1e-6 (3256.91 against 3256.50; CRF++ at its own stop: 3260.64), in
    34.5 s (4.9 s of template, 29.6 s of fit) against Wapiti's 968 s (271 iterations) and
    CRF++'s 1737 s (174 iterations), one thread each on a 2-core machine another study
    loaded: 28x and 50x, indicative only. Table: docs/benchmarks.md ("CRF++ and Wapiti"),
    from benchmarks/studies/runs/templates_vs_wapiti.json.
Frozen: kept as it ran, still runnable: `python benchmarks/studies/templates_vs_wapiti.py`.

Wapiti (github Jekub/Wapiti) and CRF++ (taku910/crfpp) are built from their sources
(``--wapiti-src`` / ``--crfpp-src``: a source folder or a git directory, whose HEAD is
unpacked; CRF++'s git tree lacks ``winmain.h``, which its release tarball has: an empty
one is written, as it is only used on Windows). The regularization is CRF++'s ``-c C``
(the chunking example's C = 4): CRF++ minimizes sum NLL + ||w||^2 / (2 C), Wapiti sum NLL
+ rho2 / 2 ||w||^2 (``-1 0 -2 rho2``, rho2 = 1 / C), crfsdca sum NLL + c2 ||w||^2 (c2 = 1
/ (2 C)): the same objective. Each has a weight for every (attribute, label) and (label,
label) pair (crfsdca: ``all_possible_states`` and ``all_possible_transitions``), none at
the sequence's ends, so the three models are the same model; crfsdca reads the template
as Wapiti's (``dialect="wapiti"``: Wapiti's padding names) so that Wapiti's dumped
weights map onto its attributes by name, and crfsdca's objective is evaluated at
Wapiti's weights too.

Stopping: crfsdca's default (a certified relative duality gap of 3e-4); Wapiti's L-BFGS
with ``-e 1e-6 -w 0`` (the objective's relative change over 5 iterations below 1e-6; its
default ``-e 0.02`` stops at 2% and its error window on the training error; both are
recorded); CRF++'s default (a relative change below 1e-4 three times). Threads: one
each (``--threads``). Seconds are the wall time of each trainer's process (Wapiti,
CRF++) or of crfsdca's template expansion and fit (in process), on a machine other jobs
may load: indicative only.

    cd benchmarks/studies && python templates_vs_wapiti.py --json runs/templates_vs_wapiti.json
    cd benchmarks/studies && python templates_vs_wapiti.py --limit 500 --skip-crfpp  # a check
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from io import BytesIO
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import ROOT, machine  # noqa: E402

CHUNKING_TEMPLATE = """\
# Unigram
U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U06:%x[0,0]/%x[1,0]

U10:%x[-2,1]
U11:%x[-1,1]
U12:%x[0,1]
U13:%x[1,1]
U14:%x[2,1]
U15:%x[-2,1]/%x[-1,1]
U16:%x[-1,1]/%x[0,1]
U17:%x[0,1]/%x[1,1]
U18:%x[1,1]/%x[2,1]

U20:%x[-2,1]/%x[-1,1]/%x[0,1]
U21:%x[-1,1]/%x[0,1]/%x[1,1]
U22:%x[0,1]/%x[1,1]/%x[2,1]

# Bigram
B
"""
"""CRF++'s example/chunking/template (checked against the CRF++ source when given)."""

MIRROR = Path("/work/.mirror")


def unpack(source: Path, dest: Path) -> Path:
    """A source folder as it is, or a git directory's HEAD unpacked into ``dest``."""
    if (source / "HEAD").is_file() and (source / "objects").is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", f"--git-dir={source}", "archive", "HEAD"],
                                 check=True, capture_output=True).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")
        return dest
    return source


def build_wapiti(source: Path, work: Path) -> tuple[Path | None, str]:
    src = unpack(source, work / "wapiti-src")
    r = subprocess.run(["make", "-j2"], cwd=src, capture_output=True, text=True)
    binary = src / "wapiti"
    return (binary, "built") if r.returncode == 0 and binary.exists() else \
        (None, f"make failed: {r.stderr[-300:]}")


def build_crfpp(source: Path, work: Path) -> tuple[Path | None, str]:
    src = unpack(source, work / "crfpp-src")
    note = "built"
    if not (src / "winmain.h").exists():
        (src / "winmain.h").write_text("")  # the git tree lacks it; used on Windows only
        note = "built (an empty winmain.h written: the git tree lacks it)"
    for cmd in (["sh", "./configure"], ["make", "-j2"]):
        r = subprocess.run(cmd, cwd=src, capture_output=True, text=True)
        if r.returncode != 0:
            return None, f"{' '.join(cmd)} failed: {r.stderr[-300:]}"
    return src, note


def write_data(work: Path, limit: int | None) -> tuple[Path, Path]:
    """CoNLL-2000's train.txt and test.txt as column files (they are: word POS chunk)."""
    out = []
    with zipfile.ZipFile(ROOT / "data" / "raw" / "conll2000.zip") as z:
        for name in ("train", "test"):
            text = z.read(f"conll2000/{name}.txt").decode("utf-8")
            blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
            if limit and name == "train":
                blocks = blocks[:limit]
            path = work / f"{name}.data"
            path.write_text("\n\n".join(blocks) + "\n\n")
            out.append(path)
    return out[0], out[1]


def chunk_f1(y_true, y_pred) -> float:
    from crfsdca.metrics import chunk_precision_recall_f1

    return round(chunk_precision_recall_f1(y_true, y_pred)[2], 2)


def predicted(path: Path, n_columns: int) -> list[list[str]]:
    """The last column of a tagger's output (blank lines between sequences)."""
    out, seq = [], []
    for line in path.read_text().split("\n"):
        fields = line.split()
        if not fields:
            if seq:
                out.append(seq)
                seq = []
            continue
        if len(fields) != n_columns:
            raise ValueError(f"{path}: {line!r} has {len(fields)} columns, not {n_columns}")
        seq.append(fields[-1])
    if seq:
        out.append(seq)
    return out


def timed(cmd: list[str], log: Path, timeout: float | None = None) -> tuple[float, str]:
    t0 = time.perf_counter()
    with open(log, "w") as f:
        try:
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=True,
                           timeout=timeout)
            status = "done"
        except subprocess.TimeoutExpired:
            status = f"stopped after {timeout:g} s"
    return time.perf_counter() - t0, status


def run_crfsdca(train: Path, test: Path, c2: float, threads: int) -> tuple[dict, object]:
    from crfsdca import CRF, templates

    t0 = time.perf_counter()
    features = templates.TemplateFeatures(CHUNKING_TEMPLATE, dialect="wapiti")
    tr = templates.read_columns(train)
    X = features.fit_transform(tr.X)
    expand = time.perf_counter() - t0
    crf = CRF(c2=c2, all_possible_states=True, all_possible_transitions=True,
              threads=threads, random_state=0)
    t1 = time.perf_counter()
    crf.fit(X, tr.y)
    fit = time.perf_counter() - t1
    te = templates.read_columns(test)
    y_pred = crf.predict(features.transform(te.X))
    training = crf.model_.training
    row = {"tool": "crfsdca", "algorithm": "sdca (defaults: SDCA-GAP, epsilon 3e-4)",
           "threads": threads, "seconds": round(expand + fit, 2),
           "fit_seconds": round(fit, 2), "template_seconds": round(expand, 2),
           "epochs": round(crf.training_log_.last_iteration["epoch"], 2),
           "status": training["status"],
           "relative_gap": float(f"{crf.training_log_.last_iteration['relative_gap']:.3g}"),
           "test_chunk_f1": chunk_f1(te.y, y_pred),
           "attributes": len(crf.attributes_), "labels": len(crf.classes_)}
    return row, (crf, X, tr.y)


def objective(crf, X, y, c2: float, weights=None) -> float:
    """crfsdca's objective, sum NLL + c2 ||w||^2, at ``weights`` (default: its own)."""
    from crfsdca.data.items import Vocabulary, encode
    from crfsdca.model.objective import primal

    model = crf.model_
    vocab = Vocabulary()
    vocab.ids = {a: i for i, a in enumerate(model.attributes)}
    seq = encode(X, y, vocab, Vocabulary(model.labels), grow=False).seq
    n = len(X)
    w = model.weights if weights is None else weights
    return n * primal(w, seq, len(model.attributes), len(model.labels), 2.0 * c2 / n)


def wapiti_weights(dump: Path, crf):
    """Wapiti's dumped weights (``obs # label w`` and ``b prev label w`` lines) in
    crfsdca's layout; the count of observations crfsdca lacks (none expected)."""
    import numpy as np

    model = crf.model_
    w = np.zeros_like(model.weights)
    E, W = model.layout.emission(w), model.layout.transition(w)
    attr = {a: i for i, a in enumerate(model.attributes)}
    label = {k: i for i, k in enumerate(model.labels)}
    missing = set()
    for line in dump.read_text().split("\n"):
        if not line:
            continue
        obs, prev, lab, value = line.split("\t")
        if prev == "#":
            if obs in attr:
                E[attr[obs], label[lab]] = float(value)
            else:
                missing.add(obs)
        else:
            W[label[prev], label[lab]] += float(value)
    return w, len(missing)


def last_objective(log: Path, pattern: str) -> float | None:
    found = re.findall(pattern, log.read_text())
    return float(found[-1]) if found else None


def peer_arguments(ap: argparse.ArgumentParser, work: str) -> None:
    """The arguments of the studies that build Wapiti and train it beside crfsdca
    (``templates_speed.py``, ``transitions_vs_wapiti.py``): the work folder (``work`` in
    the temporary one by default), Wapiti's sources or binary, CRF++'s cost, a limit on
    the training sentences and the stored run's file."""
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / work)
    ap.add_argument("--wapiti-src", type=Path, default=MIRROR / "Jekub+Wapiti" / "repo")
    ap.add_argument("--wapiti", type=Path, help="a Wapiti binary already built")
    ap.add_argument("--cost", type=float, default=4.0, help="CRF++'s -c (the example's 4)")
    ap.add_argument("--limit", type=int, help="the first LIMIT training sentences")
    ap.add_argument("--json", type=Path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir())
                    / "crfsdca-templates-vs-wapiti")
    ap.add_argument("--wapiti-src", type=Path, default=MIRROR / "Jekub+Wapiti" / "repo")
    ap.add_argument("--crfpp-src", type=Path, default=MIRROR / "taku910+crfpp" / "repo")
    ap.add_argument("--cost", type=float, default=4.0, help="CRF++'s -c (the example's 4)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit", type=int, help="the first LIMIT training sentences")
    ap.add_argument("--skip-crfpp", action="store_true")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per peer's training")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    C = args.cost
    c2, rho2 = 1.0 / (2.0 * C), 1.0 / C
    print(f"# {machine()}; C = {C:g}: c2 = {c2:g}, rho2 = {rho2:g}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    template = work / "template"
    template.write_text(CHUNKING_TEMPLATE)
    train, test = write_data(work, args.limit)
    result = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M"),
              "data": "CoNLL-2000 (data/raw/conll2000.zip): train.txt"
                      + (f" (first {args.limit} sentences)" if args.limit else "")
                      + ", test.txt; columns word, POS, chunk",
              "template": "CRF++'s example/chunking/template (19 U lines, a bare B)",
              "regularization": {"crfpp_C": C, "crfsdca_c2": c2, "wapiti_rho1": 0.0,
                                 "wapiti_rho2": rho2,
                                 "objective": "sum_i NLL_i + c2 ||w||^2 = sum NLL + ||w||^2 "
                                              "/ (2 C) (CRF++) = sum NLL + rho2/2 ||w||^2 "
                                              "(Wapiti)"},
              "note": "seconds: wall time of one run each on a machine other jobs may load "
                      "(indicative only); objective: crfsdca's, evaluated on the training "
                      "set; each tool's own objective as it printed it",
              "rows": []}

    def store():
        print(json.dumps(result["rows"][-1]), flush=True)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=1) + "\n")

    crfpp_tree = args.crfpp_src
    if (crfpp_tree / "HEAD").is_file():
        theirs = subprocess.run(["git", f"--git-dir={crfpp_tree}", "show",
                                 "HEAD:example/chunking/template"], capture_output=True,
                                text=True).stdout
        result["template_checked"] = theirs == CHUNKING_TEMPLATE

    row, (crf, X, y) = run_crfsdca(train, test, c2, args.threads)
    row["objective"] = round(objective(crf, X, y, c2), 4)
    result["rows"].append(row)
    store()

    wapiti, note = build_wapiti(args.wapiti_src, work)
    result["wapiti_build"] = note
    if wapiti is not None:
        model, log = work / "wapiti.model", work / "wapiti.log"
        model.unlink(missing_ok=True)
        seconds, status = timed([str(wapiti), "train", "-p", str(template), "-a", "l-bfgs",
                                 "-1", "0", "-2", f"{rho2!r}", "-e", "1e-6", "-w", "0",
                                 "-t", str(args.threads), str(train), str(model)], log,
                                args.timeout)
        iterations = re.findall(r"\[\s*(\d+)\] obj=", log.read_text())
        row = {"tool": "wapiti", "algorithm": "l-bfgs (-e 1e-6 -w 0)",
               "threads": args.threads, "seconds": round(seconds, 2), "status": status,
               "iterations": int(iterations[-1]) if iterations else None,
               "own_objective": last_objective(log, r"obj=([0-9.]+)")}
        if model.exists():  # written at the end of the training only
            out = work / "wapiti.out"
            subprocess.run([str(wapiti), "label", "-m", str(model), str(test), str(out)],
                           check=True, capture_output=True)
            from crfsdca import templates

            gold = templates.read_columns(test).y
            dump = work / "wapiti.dump"
            subprocess.run([str(wapiti), "dump", "-p", "17", str(model), str(dump)],
                           check=True, capture_output=True)
            w, missing = wapiti_weights(dump, crf)
            row.update({"objective": round(objective(crf, X, y, c2, w), 4),
                        "observations_crfsdca_lacks": missing,
                        "test_chunk_f1": chunk_f1(gold, predicted(out, 4))})
        result["rows"].append(row)
        store()

    if not args.skip_crfpp:
        src, note = build_crfpp(args.crfpp_src, work)
        result["crfpp_build"] = note
        if src is not None:
            model, log = work / "crfpp.model", work / "crfpp.log"
            model.unlink(missing_ok=True)
            seconds, status = timed([str(src / "crf_learn"), "-c", f"{C!r}", "-p",
                                     str(args.threads), str(template), str(train),
                                     str(model)], log, args.timeout)
            iterations = re.findall(r"iter=(\d+)", log.read_text())
            row = {"tool": "crf++", "algorithm": "CRF-L2 (L-BFGS, default stop)",
                   "threads": args.threads, "seconds": round(seconds, 2), "status": status,
                   "iterations": int(iterations[-1]) + 1 if iterations else None,
                   "own_objective": last_objective(log, r"obj=([0-9.]+)")}
            if model.exists():  # written at the end of the training only
                out = work / "crfpp.out"
                with open(out, "w") as f:
                    subprocess.run([str(src / "crf_test"), "-m", str(model), str(test)],
                                   stdout=f, check=True)
                from crfsdca import templates

                row["test_chunk_f1"] = chunk_f1(templates.read_columns(test).y,
                                                predicted(out, 4))
            result["rows"].append(row)
            store()


if __name__ == "__main__":
    sys.exit(main())
