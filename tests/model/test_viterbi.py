"""The vectorized Viterbi (``oracle.viterbi``) decodes as the one it replaced: the same
path and the same score, bit for bit, ties included (the smallest label wins), and the
best labeling of brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.model.oracle import viterbi


def old_viterbi(scores, T, K, W):
    """The Viterbi of ``oracle.py`` before it was vectorized, loop for loop: for every
    label l, the previous labels k in increasing order, replacing the best only when
    strictly greater. ``W[k * K + l]`` the transition weights."""
    delta = [0.0] * (2 * K)
    back = [0] * (T * K)
    path = [0] * T
    for k in range(K):
        delta[k] = scores[k]
    cur = 0
    for t in range(1, T):
        nxt = K - cur
        for l in range(K):
            best = -math.inf
            arg = 0
            for k in range(K):
                v = delta[cur + k] + W[k * K + l]
                if v > best:
                    best = v
                    arg = k
            delta[nxt + l] = best + scores[t * K + l]
            back[t * K + l] = arg
        cur = nxt
    best = -math.inf
    arg = 0
    for k in range(K):
        if delta[cur + k] > best:
            best = delta[cur + k]
            arg = k
    path[T - 1] = arg
    for t in range(T - 1, 0, -1):
        arg = back[t * K + arg]
        path[t - 1] = arg
    return best, path


def decode(scores, T, K, W, n_attr=0):
    """``oracle.viterbi`` on unary scores and transition weights (in a weight vector of
    ``n_attr`` attributes; buffers of the sizes the callers pass, dirty)."""
    w = np.full(n_attr * K + 3 * K + K * K, np.nan)
    w[n_attr * K + 3 * K:] = W
    delta = np.full(2 * K, np.nan)
    back = np.full(T * K, -7, dtype=np.int32)
    path = np.full(T, -7, dtype=np.int32)
    score = viterbi(np.asarray(scores, dtype=np.float64), T, K, w, n_attr, delta, back, path)
    return score, path.tolist()


def same_float(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                 math.copysign(1, b))


@st.composite
def chains(draw, values, max_K=12, max_T=20):
    K = draw(st.integers(1, max_K))
    T = draw(st.integers(1, max_T))
    scores = draw(st.lists(values, min_size=T * K, max_size=T * K))
    W = draw(st.lists(values, min_size=K * K, max_size=K * K))
    return T, K, scores, W


SMALL_INTEGERS = st.integers(-2, 2).map(float)  # many ties
FLOATS = st.floats(-1e3, 1e3, allow_nan=False, width=64)
EXTREMES = st.sampled_from([0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e308,
                            -1e308])


@settings(max_examples=400, deadline=None)
@given(chains(st.one_of(SMALL_INTEGERS, FLOATS)), st.integers(0, 3))
def test_same_path_and_score_as_the_old_viterbi(chain, n_attr):
    T, K, scores, W = chain
    score, path = decode(scores, T, K, W, n_attr)
    old_score, old_path = old_viterbi(scores, T, K, W)
    assert path == old_path
    assert same_float(score, old_score)


@settings(max_examples=300, deadline=None)
@given(chains(SMALL_INTEGERS))
def test_ties_go_as_before(chain):
    T, K, scores, W = chain
    score, path = decode(scores, T, K, W)
    old_score, old_path = old_viterbi(scores, T, K, W)
    assert path == old_path
    assert same_float(score, old_score)


@settings(max_examples=300, deadline=None)
@given(chains(EXTREMES, max_K=5, max_T=6))
def test_infinities_and_nans_go_as_before(chain):
    T, K, scores, W = chain
    score, path = decode(scores, T, K, W)
    old_score, old_path = old_viterbi(scores, T, K, W)
    assert path == old_path
    assert same_float(score, old_score)


@settings(max_examples=300, deadline=None)
@given(chains(SMALL_INTEGERS, max_K=4, max_T=6))
def test_best_labeling_by_enumeration(chain):
    """Integer scores, so sums are exact and ties are real: the path is an optimal
    labeling, and among the optimal ones the smallest label at the last token, then at
    the one before... (each back-pointer takes the smallest best previous label)."""
    T, K, scores, W = chain
    score, path = decode(scores, T, K, W)

    def total(y):
        return (sum(scores[t * K + y[t]] for t in range(T))
                + sum(W[y[t] * K + y[t + 1]] for t in range(T - 1)))

    labelings = list(itertools.product(range(K), repeat=T))
    best = max(total(y) for y in labelings)
    first = min((y for y in labelings if total(y) == best), key=lambda y: y[::-1])
    assert score == best
    assert path == list(first)


def test_one_token_and_one_label():
    assert decode([3.0], 1, 1, [0.5]) == (3.0, [0])
    assert decode([1.0, 2.0, 2.0], 1, 3, [0.0] * 9) == (2.0, [1])
    assert decode([1.0, 1.0, 1.0], 3, 1, [-1.0]) == (1.0, [0, 0, 0])
