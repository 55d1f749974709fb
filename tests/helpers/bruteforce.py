"""Reference computations by enumerating all K^T labelings of tiny sequences."""

from __future__ import annotations

import itertools

import numpy as np

from crfsdca.data.sequences import Sequences, make_sequences


def random_split(rng, n, max_len, K, A, max_attrs=3, min_len=1, real=False) -> Sequences:
    """A tiny random split (lengths in [min_len, max_len], up to max_attrs per token);
    with ``real``, attribute values drawn from N(0, 1) instead of binary."""
    lengths = rng.integers(min_len, max_len + 1, size=n)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    N = int(offsets[-1])
    labels = rng.integers(0, K, size=N)
    indptr = [0]
    indices = []
    for _ in range(N):
        attrs = np.unique(rng.integers(0, A, size=rng.integers(0, max_attrs + 1)))
        indices.extend(attrs.tolist())
        indptr.append(len(indices))
    values = rng.normal(size=len(indices)) if real else None
    return make_sequences(offsets, labels, indptr, np.array(indices, dtype=np.int64), values)


def _attributes(seq: Sequences, tok: int):
    """(attribute, value) pairs of a token (its sparse entries, then its row of the dense
    block, column d being attribute ``seq.dense_attr[d]``)."""
    lo, hi = seq.attr_indptr[tok], seq.attr_indptr[tok + 1]
    values = np.ones(hi - lo) if seq.binary else seq.attr_values[lo:hi]
    pairs = list(zip(seq.attr_indices[lo:hi], values, strict=True))
    if seq.n_dense:
        pairs += list(zip(seq.dense_attr, seq.dense[tok], strict=True))
    return pairs


def n_edge_attributes(seq: Sequences) -> int:
    """E, the transition attributes a split's ids reach (0 without any)."""
    return int(seq.edge_indices.max(initial=-1)) + 1 if seq.has_edges else 0


def features(seq: Sequences, i: int, y, A: int, K: int, E: int | None = None) -> np.ndarray:
    """Dense F(x_i, y) of length d = A K + 3 K + K K (+ E K K with transition attributes:
    those of token t count on the pair (y[t-1], y[t]))."""
    E = n_edge_attributes(seq) if E is None else E
    f = np.zeros(A * K + 3 * K + K * K + E * K * K)
    start = seq.offsets[i]
    T = len(y)
    for t in range(T):
        tok = start + t
        for a, v in _attributes(seq, tok):
            f[a * K + y[t]] += v
        f[A * K + 3 * y[t]] += 1
    f[A * K + 3 * y[0] + 1] += 1
    f[A * K + 3 * y[T - 1] + 2] += 1
    for t in range(T - 1):
        f[A * K + 3 * K + y[t] * K + y[t + 1]] += 1
    oe = A * K + 3 * K + K * K
    for t in range(1, T):
        tok = start + t
        lo, hi = (seq.edge_indptr[tok], seq.edge_indptr[tok + 1]) if E else (0, 0)
        for p in range(lo, hi):
            v = seq.edge_values[p] if len(seq.edge_values) else 1.0
            f[oe + seq.edge_indices[p] * K * K + y[t - 1] * K + y[t]] += v
    return f


def edge_split(rng, n, max_len, K, A, E, max_attrs=3, min_len=1, real=False) -> Sequences:
    """:func:`random_split` plus up to ``max_attrs`` transition attributes (of E) on every
    token but the first of a sequence."""
    seq = random_split(rng, n, max_len, K, A, max_attrs, min_len, real)
    first = set(seq.offsets[:-1].tolist())
    indptr, indices = [0], []
    for tok in range(seq.n_tokens):
        if tok not in first:
            indices.extend(np.unique(rng.integers(0, E, size=rng.integers(0, max_attrs + 1))))
        indptr.append(len(indices))
    values = rng.normal(size=len(indices)) if real else None
    return seq._replace(edge_indptr=np.array(indptr, dtype=np.int64),
                        edge_indices=np.array(indices, dtype=np.int32),
                        edge_values=np.zeros(0) if values is None else values)


def expected_features(seq: Sequences, i: int, unary, pair_sum, A: int, K: int) -> np.ndarray:
    """Dense E_mu[F(x_i, .)] from the unary marginals (T x K) and the pairwise marginals
    summed over the edges (K*K), the form in which the solvers store them."""
    f = np.zeros(A * K + 3 * K + K * K)
    start = seq.offsets[i]
    T = len(unary)
    for t in range(T):
        tok = start + t
        for a, v in _attributes(seq, tok):
            f[a * K:(a + 1) * K] += v * unary[t]
    bias = f[A * K:A * K + 3 * K].reshape(K, 3)
    bias[:, 0] += unary.sum(axis=0)
    bias[:, 1] += unary[0]
    bias[:, 2] += unary[T - 1]
    f[A * K + 3 * K:] += pair_sum
    return f


def labelings(T: int, K: int):
    return [np.array(y) for y in itertools.product(range(K), repeat=T)]


def joint(w, seq, i, A, K):
    """All labelings, their feature vectors and probabilities, and log Z."""
    T = int(seq.offsets[i + 1] - seq.offsets[i])
    ys = labelings(T, K)
    E = (len(w) - A * K - 3 * K - K * K) // (K * K)
    F = np.array([features(seq, i, y, A, K, E) for y in ys])
    s = F @ w
    logz = np.logaddexp.reduce(s)
    return ys, F, np.exp(s - logz), logz


def marginals_of(ys, p, T, K):
    """Unary (T, K) and pairwise (T-1, K, K) marginals of a distribution over labelings."""
    un = np.zeros((T, K))
    pa = np.zeros((max(T - 1, 0), K, K))
    for y, pr in zip(ys, p, strict=True):
        un[np.arange(T), y] += pr
        for t in range(T - 1):
            pa[t, y[t], y[t + 1]] += pr
    return un, pa


def entropy(p):
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def kl(p, q):
    m = p > 0
    return float((p[m] * (np.log(p[m]) - np.log(q[m]))).sum())
