"""Full-batch passes give the same bits on any number of threads (issue 55, item 1):
P, its gradient, the block gaps and the predictions at 1, 2, 3 and 5 threads, against
each other bit for bit and against the serial formula written out in numpy; an L-BFGS
fit on one and on two threads."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.bruteforce import random_split
from helpers.corpora import small_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca import CRF
from crfsdca.data.sequences import make_sequences
from crfsdca.model import passes
from crfsdca.model.objective import (
    SlotBuffers,
    block_gaps,
    predict,
    primal,
    primal_and_gradient,
)
from crfsdca.model.oracle import sequence_marginals

THREADS = (1, 2, 3, 5)

problems = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "n": st.integers(1, 40),
    "max_len": st.integers(1, 8),
    "K": st.integers(1, 5),
    "A": st.integers(1, 12),
    "real": st.booleans(),
    "weights": st.sampled_from(["none", "positive", "zeros"]),
    "dense": st.integers(0, 5),
    "mask": st.booleans(),
    "chunk_tokens": st.sampled_from([1, 3, 16, 512]),
    "buckets_per_thread": st.integers(1, 4),
})


def make_problem(p):
    """(seq, w, mask, A): the attributes 0..A-1 sparse, then a dense block's."""
    rng = np.random.default_rng(p["seed"])
    A, K = p["A"], p["K"]
    seq = random_split(rng, p["n"], p["max_len"], K, A, real=p["real"])
    weights = None
    if p["weights"] != "none":
        weights = rng.uniform(0.1, 3.0, size=seq.n_sequences)
        if p["weights"] == "zeros":
            weights[rng.random(seq.n_sequences) < 0.4] = 0.0
    D = p["dense"]
    dense = cols = None
    if D:
        dense = rng.normal(size=(seq.n_tokens, D))
        cols = A + rng.permutation(D)
    seq = make_sequences(*seq[:5], weights, dense, cols)
    A += D
    w = rng.normal(size=A * K + 3 * K + K * K)
    mask = (rng.random(len(w)) < 0.7).astype(np.uint8) if p["mask"] else None
    return seq, w, mask, A


def serial_formula(w, seq, A, K, lam, mask):
    """P(w) and grad P(w), summed in numpy from each sequence's marginals."""
    d = A * K
    grad = np.zeros_like(w)
    E = grad[:d].reshape(A, K)
    B = grad[d:d + 3 * K].reshape(K, 3)
    W = grad[d + 3 * K:].reshape(K, K)
    loss = 0.0
    for i in range(seq.n_sequences):
        c = seq.sequence_weights()[i]
        if c == 0:
            continue
        logz, un, pa = sequence_marginals(w, A, K, seq, i)
        lo, hi = seq.offsets[i], seq.offsets[i + 1]
        y = seq.labels[lo:hi]
        q = un.copy()
        q[np.arange(hi - lo), y] -= 1.0  # E[F] - F(y) by token
        score = 0.0
        for t, tok in enumerate(range(lo, hi)):
            a0, a1 = seq.attr_indptr[tok], seq.attr_indptr[tok + 1]
            ids = seq.attr_indices[a0:a1]
            vals = np.ones(a1 - a0) if seq.binary else seq.attr_values[a0:a1]
            if seq.n_dense:
                ids = np.concatenate([ids, seq.dense_attr])
                vals = np.concatenate([vals, seq.dense[tok]])
            np.add.at(E, ids, c * vals[:, None] * q[t])
            score += vals @ w[:d].reshape(A, K)[ids, y[t]]
        B[:, 0] += c * q.sum(axis=0)
        B[:, 1] += c * q[0]
        B[:, 2] += c * q[-1]
        W += c * pa.sum(axis=0)
        Wt = w[d + 3 * K:].reshape(K, K)
        for t in range(len(y) - 1):
            W[y[t], y[t + 1]] -= c
            score += Wt[y[t], y[t + 1]]
        bias = w[d:d + 3 * K].reshape(K, 3)
        score += bias[y, 0].sum() + bias[y[0], 1] + bias[y[-1], 2]
        loss += c * (logz - score)
    n = seq.n_sequences
    grad = grad / n + lam * w
    if mask is not None:
        grad *= mask
    return 0.5 * lam * w @ w + loss / n, grad


@settings(max_examples=60, deadline=None)
@given(problems)
def test_passes_are_the_same_bits_on_any_number_of_threads(p):
    seq, w, mask, A = make_problem(p)
    K = p["K"]
    lam = 0.3 / seq.n_sequences
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(passes, "CHUNK_TOKENS", p["chunk_tokens"])
        mp.setattr(passes, "BUCKETS_PER_THREAD", p["buckets_per_thread"])
        runs = [primal_and_gradient(w, seq, A, K, lam, mask, threads=k) for k in THREADS]
        values = [primal(w, seq, A, K, lam, threads=k) for k in THREADS]
        mu_u = np.full(seq.n_tokens * K, 1.0 / K)
        mu_p = np.full((seq.n_tokens - seq.n_sequences) * K * K, 1.0 / K**2)
        gaps = [block_gaps(w, mu_u, mu_p, seq, A, K, threads=k) for k in THREADS]
        paths = [predict(w, seq, A, K, threads=k) for k in THREADS]
    f1, g1 = runs[0]
    for f, g in runs[1:]:
        assert f == f1 and np.array_equal(g, g1)
    assert all(v == f1 for v in values)  # P alone: the same sum
    assert all(np.array_equal(x, gaps[0]) for x in gaps[1:])
    assert all(np.array_equal(x, paths[0]) for x in paths[1:])
    f_ref, g_ref = serial_formula(w, seq, A, K, lam, mask)
    assert f1 == pytest.approx(f_ref, rel=1e-12, abs=1e-300)
    scale = 1.0 + np.max(np.abs(w)) * lam
    np.testing.assert_allclose(g1, g_ref, rtol=1e-12, atol=1e-12 * scale)


def test_gradient_agrees_with_finite_differences_on_every_kind_of_entry():
    """Real values, weights with zeros, a dense block and a mask together, on 3 threads
    over chunks of 4 tokens: central differences along random directions."""
    p = {"seed": 5, "n": 30, "max_len": 6, "K": 3, "A": 8, "real": True, "weights": "zeros",
         "dense": 3, "mask": True}
    seq, w, mask, A = make_problem(p)
    lam, K = 0.1, 3
    rng = np.random.default_rng(0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(passes, "CHUNK_TOKENS", 4)
        _, g = primal_and_gradient(w, seq, A, K, lam, mask, threads=3)
        h = 1e-5
        for _ in range(4):
            v = rng.normal(size=w.size) * mask
            fd = (primal(w + h * v, seq, A, K, lam, threads=3)
                  - primal(w - h * v, seq, A, K, lam, threads=3)) / (2 * h)
            assert fd == pytest.approx(g @ v, rel=1e-6, abs=1e-8)


def test_kept_buffers_serve_every_thread_count_with_the_same_bits():
    rng = np.random.default_rng(2)
    seq = random_split(rng, 300, 9, 4, 25, real=True)
    w = rng.normal(size=25 * 4 + 3 * 4 + 16)
    buffers = SlotBuffers()
    fresh = primal_and_gradient(w, seq, 25, 4, 0.1)
    for k in (2, 1, 3, 2):
        f, g = primal_and_gradient(w, seq, 25, 4, 0.1, threads=k, buffers=buffers)
        assert f == fresh[0] and np.array_equal(g, fresh[1])


@pytest.mark.parametrize("size", [1, 7, 64, 10_000])
def test_chunks_cut_at_sequence_boundaries_by_tokens_alone(size):
    rng = np.random.default_rng(3)
    seq = random_split(rng, 2000, 12, 3, 10)
    bounds = passes.chunk_bounds(seq, size)
    assert bounds[0] == 0 and bounds[-1] == seq.n_sequences
    assert np.all(np.diff(bounds) > 0)  # every sequence in exactly one chunk
    tokens = np.diff(seq.offsets[bounds])
    target = -(-seq.n_tokens // size)  # chunks of about size tokens
    assert len(tokens) <= target
    assert tokens.max() <= seq.n_tokens / target + 12  # the nearest boundary (T <= 12)
    if size >= 64:
        assert len(tokens) == target


def test_lbfgs_fits_the_same_weights_on_one_two_and_three_threads(monkeypatch):
    """The threads really run here, however many cores the machine has."""
    monkeypatch.setattr("crfsdca.runtime.threads.usable_cores", lambda: 8)
    X, y = small_corpus(n=400, seed=1)
    for seq_y in y[::7]:  # some noise: not separable
        seq_y[0] = "V" if seq_y[0] == "C" else "C"
    fits = [CRF(algorithm="lbfgs", c1=0.0, c2=0.05, max_iterations=40, threads=k).fit(X, y)
            for k in (1, 2, 3)]
    assert sum(len(s) for s in y) > 2 * passes.CHUNK_TOKENS  # several chunks
    assert all(np.array_equal(f.model_.weights, fits[0].model_.weights) for f in fits[1:])
