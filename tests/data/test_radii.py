"""Squared radii R_i: equal to a direct ||F(x,y_i) - F(x,y')||^2, never above the exact max."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.data.radii import constant_labels, squared_radii
from crfsdca.data.sequences import make_sequences


def build(seqs, attrs):
    """Sequences from per-sequence label lists and per-token attribute lists (sorted unique)."""
    lengths = [len(y) for y in seqs]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    labels = [k for y in seqs for k in y]
    flat = [sorted(set(a)) for seq_attrs in attrs for a in seq_attrs]
    indptr = np.concatenate([[0], np.cumsum([len(a) for a in flat])])
    indices = [i for a in flat for i in a]
    return make_sequences(offsets, labels, indptr, indices)


def joint_features(attr_lists, y, A, K):
    """F(x, y) as a dense vector: emission (A x K), bias (K x 3), transition (K x K)."""
    E = np.zeros((A, K))
    B = np.zeros((K, 3))
    W = np.zeros((K, K))
    for t, attrs in enumerate(attr_lists):
        for a in set(attrs):
            E[a, y[t]] += 1
        B[y[t], 0] += 1
    B[y[0], 1] += 1
    B[y[-1], 2] += 1
    for t in range(len(y) - 1):
        W[y[t], y[t + 1]] += 1
    return np.concatenate([E.ravel(), B.ravel(), W.ravel()])


def test_constant_label_rule():
    seq = build([[0, 1, 0], [0, 1, 1, 2], [2, 2, 1, 1, 0, 0], [1]], [[[]] * 3, [[]] * 4,
                                                                    [[]] * 6, [[]]])
    # absent label (smallest id); all present -> least frequent; tie -> smallest id; absent 0
    assert constant_labels(seq, 3).tolist() == [2, 0, 0, 0]


def test_hand_computed_radius():
    # one sequence, labels (0, 1), K = 2, attribute 0 at both tokens, attribute 1 at token 2.
    # c = least frequent with ties -> 0; y' = (0, 0).
    seq = build([[0, 1]], [[[0], [0, 1]]])
    # emission: F(y) rows a0=(1,1), a1=(0,1); F(y') a0=(2,0), a1=(1,0): diff^2 = 1+1+1+1 = 4
    # bias all: (1,1) vs (2,0): 2; first: same label 0: 0; last: 1 vs 0: 2
    # transition: (0,1) once vs (0,0) once: 2.  Total 4 + 2 + 0 + 2 + 2 = 10.
    assert squared_radii(seq, 2, 2).tolist() == [10.0]


@st.composite
def tiny_splits(draw):
    K = draw(st.integers(1, 3))
    A = draw(st.integers(1, 4))
    n = draw(st.integers(1, 4))
    seqs, attrs = [], []
    for _ in range(n):
        T = draw(st.integers(1, 4))
        seqs.append(draw(st.lists(st.integers(0, K - 1), min_size=T, max_size=T)))
        attrs.append(draw(st.lists(st.lists(st.integers(0, A - 1), max_size=3),
                                   min_size=T, max_size=T)))
    return K, A, seqs, attrs


@settings(max_examples=150, deadline=None)
@given(tiny_splits())
def test_radius_equals_direct_and_bounded_by_exact_max(case):
    K, A, seqs, attrs = case
    R = squared_radii(build(seqs, attrs), K, A)
    assert R.shape == (len(seqs),) and R.dtype == np.float64
    for i, (y, x) in enumerate(zip(seqs, attrs, strict=True)):
        f_true = joint_features(x, y, A, K)
        counts = np.bincount(y, minlength=K)
        c = int(np.argmin(counts))
        direct = np.sum((f_true - joint_features(x, [c] * len(y), A, K)) ** 2)
        assert R[i] == direct
        exact = max(np.sum((f_true - joint_features(x, list(yy), A, K)) ** 2)
                    for yy in itertools.product(range(K), repeat=len(y)))
        assert R[i] <= exact
        if K > 1:
            assert R[i] > 0  # y' differs from y_i


def test_attribute_repeated_in_a_sequence_adds_up():
    # attribute 0 at three tokens labeled 0, K = 2: F(y) row (3, 0), F(y') with c = 1: (0, 3)
    seq = build([[0, 0, 0]], [[[0], [0], [0]]])
    R = squared_radii(seq, 2, 1)[0]
    emission = 3**2 + 3**2
    bias = (3**2 + 3**2) + 2 + 2
    transition = 2**2 + 2**2
    assert R == emission + bias + transition
