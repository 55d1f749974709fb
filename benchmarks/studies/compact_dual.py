"""SDCA with a compact dual store: what a store without per-position pair marginals costs.

Question: SDCA's store holds N K + (N - n) K^2 marginals, of which the per-position pair
    marginals are most (786 MB of CoNLL-2000's 823 in float64, 1.4 GB on the POS sample):
    they are there only so that the line search and the gap can take the entropy of a
    mixture of chains. A store of the unary marginals, each sequence's pair marginals
    summed over its positions (K^2) and a lower bound h_i on its entropy holds everything
    the weights need and certifies a duality gap (P(w) - D_h >= P(w) - D). How many more
    epochs does SDCA take on it to the same certified gap, with the plain chord of the
    entropy (h_i <- (1 - g) h_i + g H(q_i)) and with the chord raised by the
    Jensen-Shannon term of the most different position's unary marginals?
Date: 2026-11-30
Commit: c817978 (a study outside the library: its own SDCA, kernels in this file)
Answer: With the chord raised by one position's Jensen-Shannon term, the same optimum
    and the same rate once converging: to the default relative gap (3e-4) 1.0-1.17x the
    exact store's epochs, to 1e-4 1.0-1.03x; the cost is a longer start (to 1e-2:
    1.4-1.6x). The plain chord takes 1.5-3x. CoNLL-2000 at c2 = 0.01 (no Catalyst) ended
    its 200 epochs at 2.4e-3 (chord+js) against 2.2e-3 (exact). The store is 5.4x (Dutch),
    11x (CoNLL-2000) and 15x (POS) smaller. Table: docs/benchmarks.md ("A compact dual
    store"), from runs/compact_dual.json.

Three SDCA variants share one implementation, one data set, one start (every sequence's
dual at the Dirac of its gold labelling: w = 0, entropies 0) and one stream of uniform
draws; only the store and the line search differ:

- ``exact``: the paper's SDCA: the store keeps unary and per-position pair marginals,
  the line search maximizes the dual with the mixture's exact (chain) entropy, bisection
  on its derivative to 1e-9.
- ``chord``: the store keeps unary marginals, the per-sequence sums of the pair
  marginals and h_i. Mixing a dual point with q_i (the model's chain at the current w)
  is bounded by concavity, H((1 - g) a + g q) >= (1 - g) H(a) + g H(q), so the dual is
  bounded below by replacing each entropy with h_i; the step maximizes that quadratic
  bound (closed form) and h_i takes the chord.
- ``chord+js``: the chord raised by JS_g(a_t, q_t), the Jensen-Shannon term of the
  position t whose stored unary marginals differ most from q_i's: the entropy of a
  mixture exceeds the mixed entropies by the mutual information of the mixing choice and
  the labelling, which is at least that with a single position's label (data
  processing). The step maximizes the raised bound (bisection), and h_i takes it.

Each bound is a true lower bound of the entropy of the dual point (a mixture of chains),
so every gap printed is a certificate: P(w) computed from scratch every epoch (log Z and
the gold score of every sequence) minus the dual's bound. The identity P - D = mean of
the block gaps is checked every epoch (to 1e-9 relative). The full model (A x K unary
weights and K x K transitions, no feature set), c1 = 0, no Catalyst, uniform sampling:
the library's SDCA-GAP with Catalyst is faster on all three; the question here is only
what the store's form costs in epochs.

    cd benchmarks/studies && python compact_dual.py --json runs/compact_dual.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from numba import njit

ROOT = Path(__file__).resolve().parents[2]
METHODS = ("exact", "chord", "chord+js")
NJIT = {"cache": True, "nogil": True}


@njit(**NJIT)
def _scores(W, K, off, ip, ix, i, S):
    s, e = off[i], off[i + 1]
    for t in range(e - s):
        for k in range(K):
            S[t, k] = 0.0
        for j in range(ip[s + t], ip[s + t + 1]):
            a = ix[j]
            for k in range(K):
                S[t, k] += W[a * K + k]


@njit(**NJIT)
def _forward_backward(S, Tr, T, K, la, lb, q, qp):
    """log Z of the chain of unary scores S and transitions Tr; its unary marginals q and
    pair marginals qp (log space: the study's sequences are short)."""
    for k in range(K):
        la[0, k] = S[0, k]
    for t in range(1, T):
        for b in range(K):
            m = -1e300
            for a in range(K):
                m = max(m, la[t - 1, a] + Tr[a, b])
            acc = 0.0
            for a in range(K):
                acc += np.exp(la[t - 1, a] + Tr[a, b] - m)
            la[t, b] = m + np.log(acc) + S[t, b]
    for k in range(K):
        lb[T - 1, k] = 0.0
    for t in range(T - 2, -1, -1):
        for a in range(K):
            m = -1e300
            for b in range(K):
                m = max(m, Tr[a, b] + S[t + 1, b] + lb[t + 1, b])
            acc = 0.0
            for b in range(K):
                acc += np.exp(Tr[a, b] + S[t + 1, b] + lb[t + 1, b] - m)
            lb[t, a] = m + np.log(acc)
    m = -1e300
    for k in range(K):
        m = max(m, la[T - 1, k])
    acc = 0.0
    for k in range(K):
        acc += np.exp(la[T - 1, k] - m)
    logz = m + np.log(acc)
    for t in range(T):
        for k in range(K):
            q[t, k] = np.exp(la[t, k] + lb[t, k] - logz)
    for t in range(T - 1):
        for a in range(K):
            for b in range(K):
                qp[t, a, b] = np.exp(la[t, a] + Tr[a, b] + S[t + 1, b] + lb[t + 1, b] - logz)
    return logz


@njit(inline="always", **NJIT)
def _xlogx(x):
    return x * np.log(x) if x > 1e-300 else 0.0


@njit(**NJIT)
def _chain_entropy(U, u0, P, p0, T, K):
    """The entropy of the chain with unary marginals U[u0:] and pair marginals P[p0:]."""
    h = 0.0
    for t in range(T - 1):
        for ab in range(K * K):
            h -= _xlogx(P[p0 + t * K * K + ab])
    for t in range(1, T - 1):
        for k in range(K):
            h += _xlogx(U[u0 + t * K + k])
    if T == 1:
        for k in range(K):
            h -= _xlogx(U[u0 + k])
    return h


@njit(**NJIT)
def _exact_slope(U, u0, P, p0, q, qp, T, K, g):
    """d/dg of the chain entropy of (1 - g) (U, P) + g (q, qp)."""
    d = 0.0
    for t in range(T - 1):
        for ab in range(K * K):
            old = P[p0 + t * K * K + ab]
            new = qp[t, ab // K, ab % K]
            mu = old + g * (new - old)
            if mu > 1e-300:
                d -= (new - old) * np.log(mu)
    sign = -1.0 if T == 1 else 1.0
    for t in range(0 if T == 1 else 1, max(T - 1, 1)):
        for k in range(K):
            old = U[u0 + t * K + k]
            mu = old + g * (q[t, k] - old)
            if mu > 1e-300:
                d += sign * (q[t, k] - old) * np.log(mu)
    return d


@njit(**NJIT)
def _js(a, b, g, K):
    """H((1 - g) a + g b) - (1 - g) H(a) - g H(b), and its derivative in g."""
    ha = 0.0
    hb = 0.0
    hm = 0.0
    d = 0.0
    for k in range(K):
        ha -= _xlogx(a[k])
        hb -= _xlogx(b[k])
        m = a[k] + g * (b[k] - a[k])
        hm -= _xlogx(m)
        if m > 1e-300:
            d -= (b[k] - a[k]) * np.log(m)
    return max(hm - (1 - g) * ha - g * hb, 0.0), d - (hb - ha)


@njit(**NJIT)
def sdca_epoch(method, W, Tr, K, off, ip, ix, U, P, E, h, lam, draws, D, touched, listed,
               S, la, lb, q, qp, ua, ub):
    """SDCA steps on ``draws``: method 0 exact, 1 chord, 2 chord + JS. The dual at
    sequence i is U (unary marginals, every method), P (per-position pair marginals,
    exact) or E and h (pair sums and entropy bound, the compact store)."""
    n = len(off) - 1
    ln = lam * n
    Dtr = np.zeros((K, K))
    for i in draws:
        s, e = off[i], off[i + 1]
        T = e - s
        u0 = s * K
        p0 = (s - i) * K * K
        _scores(W, K, off, ip, ix, i, S)
        logz = _forward_backward(S, Tr, T, K, la, lb, q, qp)
        wq = 0.0
        for t in range(T):
            for k in range(K):
                wq += S[t, k] * q[t, k]
        for t in range(T - 1):
            for a in range(K):
                for b in range(K):
                    wq += Tr[a, b] * qp[t, a, b]
        hq = logz - wq
        # the change of w per unit step: (stored moments - q's moments) / (lambda n)
        nt = 0
        for t in range(T):
            for j in range(ip[s + t], ip[s + t + 1]):
                a = ix[j]
                if touched[a] == 0:
                    touched[a] = 1
                    listed[nt] = a
                    nt += 1
                for k in range(K):
                    D[a * K + k] += (U[u0 + t * K + k] - q[t, k]) / ln
        for a in range(K):
            for b in range(K):
                acc = 0.0
                for t in range(T - 1):
                    acc += qp[t, a, b]
                old = 0.0
                if method == 0:
                    for t in range(T - 1):
                        old += P[p0 + t * K * K + a * K + b]
                else:
                    old = E[i * K * K + a * K + b]
                Dtr[a, b] = (old - acc) / ln
        wd = 0.0
        dd = 0.0
        for r in range(nt):
            a = listed[r]
            for k in range(K):
                wd += W[a * K + k] * D[a * K + k]
                dd += D[a * K + k] ** 2
        for a in range(K):
            for b in range(K):
                wd += Tr[a, b] * Dtr[a, b]
                dd += Dtr[a, b] ** 2
        bonus = 0.0
        if method == 1:
            g = ((hq - h[i]) / n - lam * wd) / (lam * dd) if dd > 0 else 1.0
            g = min(1.0, max(0.0, g))
        else:
            ts = 0
            if method == 2:  # the position whose marginals differ most
                best = -1.0
                for t in range(T):
                    tv = 0.0
                    for k in range(K):
                        tv += abs(U[u0 + t * K + k] - q[t, k])
                    if tv > best:
                        best = tv
                        ts = t
                for k in range(K):
                    ua[k] = U[u0 + ts * K + k]
                    ub[k] = q[ts, k]
            lo, hi = 0.0, 1.0
            for _ in range(30):
                g = 0.5 * (lo + hi)
                if method == 0:
                    slope = _exact_slope(U, u0, P, p0, q, qp, T, K, g)
                else:
                    slope = hq - h[i] + _js(ua, ub, g, K)[1]
                if -lam * (wd + g * dd) + slope / n > 0:
                    lo = g
                else:
                    hi = g
            g = 0.5 * (lo + hi)
            if method == 2:
                bonus = _js(ua, ub, g, K)[0]
        for r in range(nt):
            a = listed[r]
            for k in range(K):
                W[a * K + k] += g * D[a * K + k]
                D[a * K + k] = 0.0
            touched[a] = 0
        for a in range(K):
            for b in range(K):
                Tr[a, b] += g * Dtr[a, b]
        for t in range(T):
            for k in range(K):
                U[u0 + t * K + k] += g * (q[t, k] - U[u0 + t * K + k])
        if method == 0:
            for t in range(T - 1):
                for ab in range(K * K):
                    P[p0 + t * K * K + ab] += g * (qp[t, ab // K, ab % K] - P[p0 + t * K * K + ab])
        else:
            for a in range(K):
                for b in range(K):
                    acc = 0.0
                    for t in range(T - 1):
                        acc += qp[t, a, b]
                    E[i * K * K + a * K + b] += g * (acc - E[i * K * K + a * K + b])
            h[i] = (1 - g) * h[i] + g * hq + bonus


@njit(**NJIT)
def certify(method, W, Tr, K, off, ip, ix, lab, U, P, E, h, lam, S, la, lb, q, qp):
    """(P(w) from scratch, the dual's bound D, the mean of the block gaps)."""
    n = len(off) - 1
    loss = 0.0
    ent = 0.0
    gaps = 0.0
    for i in range(n):
        s, e = off[i], off[i + 1]
        T = e - s
        _scores(W, K, off, ip, ix, i, S)
        logz = _forward_backward(S, Tr, T, K, la, lb, q, qp)
        gold = 0.0
        wm = 0.0
        for t in range(T):
            gold += S[t, lab[s + t]]
            if t + 1 < T:
                gold += Tr[lab[s + t], lab[s + t + 1]]
            for k in range(K):
                wm += S[t, k] * U[s * K + t * K + k]
        if method == 0:
            p0 = (s - i) * K * K
            for t in range(T - 1):
                for ab in range(K * K):
                    wm += Tr[ab // K, ab % K] * P[p0 + t * K * K + ab]
            hi = _chain_entropy(U, s * K, P, p0, T, K)
        else:
            for ab in range(K * K):
                wm += Tr[ab // K, ab % K] * E[i * K * K + ab]
            hi = h[i]
        loss += logz - gold
        ent += hi
        gaps += logz - wm - hi
    sq = 0.0
    for x in W:
        sq += x * x
    for a in range(K):
        for b in range(K):
            sq += Tr[a, b] ** 2
    return lam / 2 * sq + loss / n, -lam / 2 * sq + ent / n, gaps / n


def load(name: str, nmax: int):
    """(offsets, labels, token attribute CSR, A, K) of the first ``nmax`` training
    sentences: sklearn-crfsuite's tutorial features on CoNLL-2002 Dutch ("ner"),
    CRFsuite's chunking features on CoNLL-2000 ("chunk") or the POS sample ("pos")."""
    sys.path.insert(0, str(ROOT / "src"))
    import crfsdca

    if name == "ner":
        from crfsdca.data.tutorial import iob_sents, sent2features, sent2labels
        sents = iob_sents("ned.train", str(ROOT / "data" / "raw" / "conll2002.zip"),
                          limit=nmax or None, encoding="utf-8")
        X, y = [sent2features(s) for s in sents], [sent2labels(s) for s in sents]
    else:
        import yaml

        from crfsdca.data.corpus_items import corpus_items
        config = yaml.safe_load((ROOT / "config.yaml").read_text())
        X, y, _, _ = corpus_items(config, {"chunk": "conll", "pos": "pos"}[name],
                                  ROOT / "data" / "raw")
        X, y = X[:nmax or None], y[:nmax or None]
    with tempfile.TemporaryDirectory() as d:
        seq = crfsdca.Corpus.create(d, X, y).sequences
        labels = len(crfsdca.Corpus(d).labels)
        out = (np.asarray(seq.offsets, np.int64), np.asarray(seq.labels, np.int64),
               np.asarray(seq.attr_indptr, np.int64), np.asarray(seq.attr_indices, np.int64))
        attrs = int(out[3].max()) + 1
    return (*out, attrs, labels)


def store_floats(method: str, n: int, N: int, K: int) -> int:
    return N * K + ((N - n) * K * K if method == "exact" else n * K * K + n)


def run(method: str, data, c2: float, epochs: int, tol: float, seed: int) -> dict:
    off, lab, ip, ix, A, K = data
    n, N = len(off) - 1, int(off[-1])
    lam = 2 * c2 / n  # CRFsuite's c2 of the sum = lambda n / 2 of the mean
    code = METHODS.index(method)
    W, Tr = np.zeros(A * K), np.zeros((K, K))
    U = np.zeros(N * K)
    U[np.arange(N) * K + lab] = 1.0
    P = np.zeros((N - n) * K * K if code == 0 else 1)
    E = np.zeros(n * K * K if code else 1)
    for i in range(n):  # the Dirac at the gold labelling
        for t in range(off[i], off[i + 1] - 1):
            if code == 0:
                P[(t - i) * K * K + lab[t] * K + lab[t + 1]] = 1.0
            else:
                E[i * K * K + lab[t] * K + lab[t + 1]] += 1.0
    h = np.zeros(n)
    T = int(np.diff(off).max())
    S, la, lb, q = (np.zeros((T, K)) for _ in range(4))
    qp = np.zeros((T, K, K))
    D, touched, listed = np.zeros(A * K), np.zeros(A, np.int64), np.zeros(A, np.int64)
    ua, ub = np.zeros(K), np.zeros(K)
    rng = np.random.default_rng(seed)
    trace = []
    for epoch in range(epochs + 1):
        primal, dual, gaps = certify(code, W, Tr, K, off, ip, ix, lab, U, P, E, h, lam, S,
                                     la, lb, q, qp)
        if abs(primal - dual - gaps) > 1e-9 * abs(primal):
            raise AssertionError(f"{method}: P - D = {primal - dual} but the block gaps "
                                 f"average {gaps}")
        trace.append({"epoch": epoch, "primal": primal, "gap": gaps,
                      "relative_gap": gaps / primal})
        print(f"  {method:8s} epoch {epoch:3d}  P {primal:.8f}  relative gap "
              f"{gaps / primal:.2e}", flush=True)
        if gaps / primal <= tol:
            break
        sdca_epoch(code, W, Tr, K, off, ip, ix, U, P, E, h, lam,
                   rng.integers(0, n, n), D, touched, listed, S, la, lb, q, qp, ua, ub)
    return {"method": method, "store_floats": store_floats(method, n, N, K),
            "trace": trace}


def first_epoch(trace: list[dict], tol: float) -> int | None:
    return next((r["epoch"] for r in trace if r["relative_gap"] <= tol), None)


CELLS = (("ner", 4000, 0.1), ("ner", 4000, 0.01), ("chunk", 2000, 0.1),
         ("chunk", 2000, 0.01))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    from common import machine, store_run

    rows = []
    loaded = {}
    for name, nmax, c2 in CELLS:
        if (name, nmax) not in loaded:
            loaded[name, nmax] = load(name, nmax)
        data = loaded[name, nmax]
        off, _, _, _, A, K = data
        print(f"{name}: n={len(off) - 1} N={off[-1]} A={A} K={K}, c2={c2}", flush=True)
        for method in METHODS:
            r = run(method, data, c2, args.epochs, args.tol, args.seed)
            rows.append({"dataset": name, "sequences": len(off) - 1, "labels": K, "c2": c2,
                         **r, "epochs_to": {f"{t:g}": first_epoch(r["trace"], t)
                                            for t in (1e-2, 1e-3, 3e-4, 1e-4)}})
            store_run(args.json, {"machine": machine(), "tol": args.tol,
                                  "max_epochs": args.epochs, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
